// Which loops nested in loops get in-task yield points (passes/InTaskYield.cpp, shortLoops;
// issue 8): under -preempt-intask-nested=long, the default, a nested loop gets one unless one entry
// of it runs at most -preempt-intask-nested-work IR instructions per thread (4096): its constant
// bound on iterations (ScalarEvolution's maximum trip count) times its body, loops inside it counted
// alike. `all` places one in every nested loop that allows it, `off` in none. A loop of the task's
// own that short gets none at any setting (short_top, at the end).
//
// RUN: %clang %cuda_flags --cuda-device-only -S -emit-llvm -Rpass=preempt -Rpass-missed=preempt %s -o %t.ll 2>&1 | %FileCheck %s --check-prefix=REMARK
// RUN: %opt -passes=verify -disable-output %t.ll
// RUN: grep '^@__preempt_points_' %t.ll | %FileCheck %s --check-prefix=LONG
// RUN: %clang %cuda_flags --cuda-device-only -S -emit-llvm -mllvm -preempt-intask-nested=all %s -o %t.all.ll
// RUN: grep '^@__preempt_points_' %t.all.ll | %FileCheck %s --check-prefix=ALL
// RUN: %clang %cuda_flags --cuda-device-only -S -emit-llvm -mllvm -preempt-intask-nested=off %s -o %t.off.ll
// RUN: grep '^@__preempt_points_' %t.off.ll | %FileCheck %s --check-prefix=OFF
// The bound is inclusive: capped_inner's 104 instructions are short at 104, not at 103.
// RUN: %clang %cuda_flags --cuda-device-only -S -emit-llvm -mllvm -preempt-intask-nested-work=104 %s -o %t.104.ll
// RUN: grep '^@__preempt_points_' %t.104.ll | %FileCheck %s --check-prefix=WORK104
// RUN: %clang %cuda_flags --cuda-device-only -S -emit-llvm -mllvm -preempt-intask-nested-work=103 %s -o %t.103.ll
// RUN: grep '^@__preempt_points_' %t.103.ll | %FileCheck %s --check-prefix=WORK103
// The PTX assembles.
// RUN: %clang %cuda_flags --cuda-device-only -S %s -o %t.ptx
// RUN: %if ptxas %{ %ptxas -arch=sm_90 %t.ptx -o %t.cubin %}
//
// Descriptors ([ABI, points, thread bytes, CTA bytes]): the second number is the points placed.
// LONG: @__preempt_points__Z11short_innerPKfPfi = {{.*}} [i32 10, i32 1,
// LONG-NEXT: @__preempt_points__Z10long_innerPKfPfi = {{.*}} [i32 10, i32 2,
// LONG-NEXT: @__preempt_points__Z12capped_innerPKfPfii = {{.*}} [i32 10, i32 1,
// LONG-NEXT: @__preempt_points__Z10three_deepPKfPfii = {{.*}} [i32 10, i32 3,
// LONG-NOT: short_top
// ALL: @__preempt_points__Z11short_innerPKfPfi = {{.*}} [i32 10, i32 2,
// ALL-NEXT: @__preempt_points__Z10long_innerPKfPfi = {{.*}} [i32 10, i32 2,
// ALL-NEXT: @__preempt_points__Z12capped_innerPKfPfii = {{.*}} [i32 10, i32 2,
// ALL-NEXT: @__preempt_points__Z10three_deepPKfPfii = {{.*}} [i32 10, i32 3,
// ALL-NOT: short_top
// OFF: @__preempt_points__Z11short_innerPKfPfi = {{.*}} [i32 10, i32 1,
// OFF-NEXT: @__preempt_points__Z10long_innerPKfPfi = {{.*}} [i32 10, i32 1,
// OFF-NEXT: @__preempt_points__Z12capped_innerPKfPfii = {{.*}} [i32 10, i32 1,
// OFF-NEXT: @__preempt_points__Z10three_deepPKfPfii = {{.*}} [i32 10, i32 1,
// OFF-NOT: short_top
// WORK104: @__preempt_points__Z11short_innerPKfPfi = {{.*}} [i32 10, i32 2,
// WORK104: @__preempt_points__Z12capped_innerPKfPfii = {{.*}} [i32 10, i32 1,
// WORK103: @__preempt_points__Z11short_innerPKfPfi = {{.*}} [i32 10, i32 2,
// WORK103: @__preempt_points__Z12capped_innerPKfPfii = {{.*}} [i32 10, i32 2,

// The inner loop runs 16 iterations of 13 instructions (counted in the IR: its two phis, the
// multiply, the index's add, multiply and add, the zext, the address, the load, the add, the
// counter's add, its compare and the branch): 208. `#pragma unroll 1` keeps both loops loops.
// REMARK-DAG: remark: in-task yield point at loop at line [[@LINE+5]] of kernel '_Z11short_innerPKfPfi'
// REMARK-DAG: remark: loop at line [[@LINE+6]] of kernel '_Z11short_innerPKfPfi' gets no in-task yield point: it is nested in another loop and one entry runs at most 208 instructions (16 iterations); the point of the loop around it comes soon after
__global__ void short_inner(const float *in, float *out, int rows) {
  float acc = 0.0f;
#pragma unroll 1
  for (int r = 0; r < rows; r++) {
#pragma unroll 1
    for (int c = 0; c < 16; c++)
      acc = acc * 0.5f + in[(r * 16 + c) * blockDim.x + threadIdx.x];
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}

// A constant bound, but 100000 iterations: far over the bound, so a point.
// REMARK-DAG: remark: in-task yield point at loop at line [[@LINE+5]] of kernel '_Z10long_innerPKfPfi'
// REMARK-DAG: remark: in-task yield point at loop at line [[@LINE+6]] of kernel '_Z10long_innerPKfPfi'
__global__ void long_inner(const float *in, float *out, int rows) {
  float acc = 0.0f;
#pragma unroll 1
  for (int r = 0; r < rows; r++) {
#pragma unroll 1
    for (int c = 0; c < 100000; c++)
      acc = acc * 0.5f + in[(r + c) * blockDim.x + threadIdx.x];
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}

// The trip count is min(cols, 8): not a constant, but ScalarEvolution's maximum is 8, so 8 x 13.
// REMARK-DAG: remark: loop at line [[@LINE+6]] of kernel '_Z12capped_innerPKfPfii' gets no in-task yield point: it is nested in another loop and one entry runs at most 104 instructions (8 iterations)
__global__ void capped_inner(const float *in, float *out, int rows, int cols) {
  float acc = 0.0f;
#pragma unroll 1
  for (int r = 0; r < rows; r++) {
#pragma unroll 1
    for (int c = 0; c < cols && c < 8; c++)
      acc = acc * 0.5f + in[(r * 8 + c) * blockDim.x + threadIdx.x];
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}

// The middle loop runs 4 iterations, but the loop inside it has no bound: its entries may be long,
// so it gets a point too (three in all).
// REMARK-DAG: remark: in-task yield point at loop at line [[@LINE+6]] of kernel '_Z10three_deepPKfPfii'
// REMARK-DAG: remark: in-task yield point at loop at line [[@LINE+7]] of kernel '_Z10three_deepPKfPfii'
// REMARK-DAG: remark: in-task yield point at loop at line [[@LINE+7]] of kernel '_Z10three_deepPKfPfii'
__global__ void three_deep(const float *in, float *out, int rows, int cols) {
  float acc = 0.0f;
#pragma unroll 1
  for (int r = 0; r < rows; r++) {
#pragma unroll 1
    for (int m = 0; m < 4; m++)
      for (int c = 0; c < cols; c++)
        acc = acc * 0.5f + in[((r * 4 + m) * cols + c) * blockDim.x + threadIdx.x];
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}

// The task's own loop, min(cols, 16) iterations: once per task, 16 x 12 = 192 instructions (short_inner's
// 13 less the index's add: `c * blockDim.x + threadIdx.x` has no row term), no point at any setting;
// the kernel gets no in-task variant (no descriptor above).
// REMARK-DAG: remark: loop at line [[@LINE+5]] of kernel '_Z9short_topPKfPfi' gets no in-task yield point: it runs once per task, at most 192 instructions (16 iterations); the task's end or its next point comes soon after
// REMARK-DAG: remark: kernel '_Z9short_topPKfPfi' converted to persistent-thread form
__global__ void short_top(const float *in, float *out, int cols) {
  float acc = 0.0f;
#pragma unroll 1
  for (int c = 0; c < cols && c < 16; c++)
    acc = acc * 0.5f + in[c * blockDim.x + threadIdx.x];
  out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}
