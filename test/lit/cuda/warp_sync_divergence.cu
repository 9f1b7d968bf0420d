// A warp-synchronous operation whose lane mask is fixed, under control flow that splits a warp: as written, the
// lanes that skip it may exit (the hardware lets exited lanes go); converted, they go on to the task loop, whose
// warp-synchronous steps wait for lanes that wait for them (HeCBench jacobi hung under PREEMPT_LONG_US=0 on the
// H200: a full-mask shuffle under threadIdx.y == 0, blocks of 16 x 16). Such kernels are kept as written.
// RUN: %clang %cuda_flags --cuda-device-only -S -emit-llvm -fno-discard-value-names -Rpass=preempt -Rpass-missed=preempt %s -o %t.ll 2>&1 | %FileCheck %s --check-prefixes=REMARK,O2
// RUN: %FileCheck %s < %t.ll
// RUN: %FileCheck %s --check-prefix=ROWS < %t.ll
// RUN: not grep -E '__preempt_warprows__(Z10first_rankPf|Z10every_lanePf|Z11active_onlyPf)' %t.ll
// RUN: %clang %cuda_flags -O0 --cuda-device-only -S -Rpass=preempt -Rpass-missed=preempt %s -o /dev/null 2>&1 | %FileCheck %s --check-prefixes=REMARK,O0

// REMARK-DAG: kernel '_Z10half_warpsPfS_' left unchanged (not preemptible): it has a warp-synchronous operation with a fixed lane mask at line 49 under control flow that splits a warp
// REMARK-DAG: kernel '_Z14tail_then_shflPfi' left unchanged (not preemptible): it has a warp-synchronous operation with a fixed lane mask at line 60 under control flow that splits a warp
// REMARK-DAG: kernel '_Z13first_lane_2dPf' left unchanged (not preemptible): it has a warp-synchronous operation with a fixed lane mask at line 82 under control flow that splits a warp
// REMARK-DAG: kernel '_Z11first_warpsPf' converted to persistent-thread form
// REMARK-DAG: kernel '_Z9by_warp_iPf' converted to persistent-thread form
// O2-DAG: kernel '_Z10first_rankPf' converted to persistent-thread form
// O2-DAG: kernel '_Z9look_backPKiPi' converted to persistent-thread form
// O0-DAG: kernel '_Z9look_backPKiPi' left unchanged (not preemptible): it has a warp-synchronous operation with a fixed lane mask
// At -O0 the mask reaches the shuffle through the wrapper's parameter, which the pass takes for fixed, and the
// rank lives in memory, where the pass does not follow it.
// O0-DAG: kernel '_Z10first_rankPf' left unchanged (not preemptible): it has a warp-synchronous operation with a fixed lane mask
// O2-DAG: kernel '_Z11active_onlyPf' converted to persistent-thread form
// O0-DAG: kernel '_Z11active_onlyPf' left unchanged (not preemptible): it has a warp-synchronous operation with a fixed lane mask
// REMARK-DAG: kernel '_Z10every_lanePf' converted to persistent-thread form

// Kernels safe only because threadIdx.x is cut at warp boundaries carry a global the runtime reads: their forms
// run only in blocks of one row or of rows of whole warps (launch.c); the rank and a mask of running lanes need none.
// ROWS-DAG: @__preempt_warprows__Z11first_warpsPf = addrspace(1) constant i32 1
// ROWS-DAG: @__preempt_warprows__Z9by_warp_iPf = addrspace(1) constant i32 1
// ROWS-DAG: @__preempt_warprows__Z9look_backPKiPi = addrspace(1) constant i32 1
// O2-DAG: kernel '_Z11first_warpsPf': its converted forms run only in blocks of one row of threads or of rows of whole warps

// The refused kernel keeps its hardware block index and gets no persistent form.
// CHECK-NOT: @__preempt_persistent__Z10half_warpsPfS_
// CHECK-LABEL: define {{.*}} @_Z10half_warpsPfS_(
// CHECK: llvm.nvvm.read.ptx.sreg.ctaid.x
// CHECK-NOT: preempt.task
// CHECK: ret void

// jacobi's reduction: with 16-wide rows, threadIdx.y == 0 is half of warp 0.
__global__ void half_warps(float *out, float *in) {
  __shared__ float partial[16];
  float v = in[threadIdx.y * 16 + threadIdx.x + blockIdx.x * 256];
  if (threadIdx.x == 0)
    partial[threadIdx.y] = v;
  __syncthreads();
  if (threadIdx.y == 0) {
    v = partial[threadIdx.x];
    v += __shfl_down_sync(0xffffffff, v, 8);
    if (threadIdx.x == 0)
      out[blockIdx.x] = v;
  }
}

// A bounds check that returns, then a full-mask shuffle: a tail warp's returned lanes are named by the mask.
__global__ void tail_then_shfl(float *data, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n)
    return;
  data[i] += __shfl_xor_sync(0xffffffff, data[i], 1);
}

// One-dimensional blocks: threadIdx.x < 32 and threadIdx.x / 32 split the CTA at warp boundaries.
__global__ void first_warps(float *out) {
  float v = out[blockIdx.x * blockDim.x + threadIdx.x];
  if (threadIdx.x < 64)
    v += __shfl_down_sync(0xffffffff, v, 16);
  out[blockIdx.x * blockDim.x + threadIdx.x] = v;
}

__global__ void by_warp_i(float *out) {
  float v = out[blockIdx.x * blockDim.x + threadIdx.x];
  if (threadIdx.x / 32 == 1)
    v = __shfl_sync(0xffffffff, v, 0);
  out[blockIdx.x * blockDim.x + threadIdx.x] = v;
}

// The same compare in a kernel that reads threadIdx.y: its rows need not be whole warps.
__global__ void first_lane_2d(float *out) {
  float v = out[(blockIdx.x * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x];
  if (threadIdx.x < 32)
    v += __shfl_down_sync(0xffffffff, v, 1);
  out[(blockIdx.x * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x] = v;
}

// A mask of the lanes that run names no lane that skipped.
__global__ void active_only(float *out) {
  float v = out[blockIdx.x * blockDim.x + threadIdx.x];
  if (threadIdx.x % 3 == 0)
    v += __shfl_xor_sync(__activemask(), v, 1);
  out[blockIdx.x * blockDim.x + threadIdx.x] = v;
}

// Every lane runs it.
__global__ void every_lane(float *out) {
  float v = out[blockIdx.x * blockDim.x + threadIdx.x];
  v += __shfl_xor_sync(0xffffffff, v, 1);
  out[blockIdx.x * blockDim.x + threadIdx.x] = v;
}

// The linear rank (cooperative groups' thread_rank()) at warp granularity, whatever the block's shape.
__global__ void first_rank(float *out) {
  unsigned rank = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  float v = out[blockIdx.x * blockDim.x * blockDim.y * blockDim.z + rank];
  if (rank < 32)
    v += __shfl_down_sync(0xffffffff, v, 1);
  out[blockIdx.x * blockDim.x * blockDim.y * blockDim.z + rank] = v;
}

// CUB's decoupled look-back: the first warp loops until a vote says every lane saw its flag. The vote's result is
// the same in every lane, so the loop keeps the warp together.
__global__ void look_back(const int *flags, int *out) {
  int v = 0;
  if (threadIdx.x < 32) {
    int status;
    do
      status = flags[threadIdx.x];
    while (!__all_sync(0xffffffff, status != 0));
    v = __shfl_down_sync(0xffffffff, status, 1);
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = v;
}
