// The drain form (passes/DrainForm.cpp): each converted kernel keeps a copy taking the control
// block after its own parameters, gated at block entry. Where the kernel's first barrier is on
// every path and nothing before it writes global memory, that barrier becomes the OR-barrier
// (no barrier added); otherwise one is added at entry, and the remark says why. A kernel whose
// blocks may wait for each other gets no drain form. The PTX assembles.
// RUN: %clang %cuda_flags --cuda-device-only -S -emit-llvm -fno-discard-value-names -Rpass=preempt -Rpass-missed=preempt %s -o %t.ll 2>&1 | %FileCheck %s --check-prefix=REMARK
// RUN: %FileCheck %s < %t.ll
// RUN: %clang %cuda_flags --cuda-device-only -S %s -o %t.ptx
// RUN: %if ptxas %{ %ptxas -arch=sm_90 %t.ptx -o %t.cubin %}

// REMARK-DAG: kernel '_Z9transposePKjPji': drain form kept, its gate fused with its first barrier
// REMARK-DAG: kernel '_Z5scalePfi': drain form kept, its gate a barrier added at entry (it has no barrier)
// REMARK-DAG: kernel '_Z11store_firstPKfPfS1_': drain form kept, its gate a barrier added at entry (it writes memory outside the block before its first barrier)
// REMARK-DAG: kernel '_Z10early_exitPKfPfi': drain form kept, its gate a barrier added at entry (a path from entry ends before any barrier)
// REMARK-DAG: kernel '_Z10loop_firstPjj': drain form kept, its gate a barrier added at entry (a loop runs before its first barrier)
// REMARK-DAG: kernel '_Z9wait_flagPVjPj': no drain form (launches stay persistent): it reads memory other blocks may write while it runs
// REMARK-DAG: kernel '_Z6ticketPjS_': no drain form (launches stay persistent): it uses the result of an atomic

// The fused gate: thread 0 alone reads its SM's word of the yield mask (control block offset 64)
// at entry; the kernel's one __syncthreads is now the OR of that bit, and a yielding block's
// thread 0 sets the block's bit (x fastest) in the bitmap the control block points to (offset 56).
// CHECK-LABEL: define {{.*}}ptx_kernel void @__preempt_drain__Z9transposePKjPji(ptr {{.*}}%in, ptr {{.*}}%out, i32 {{.*}}%n, ptr noundef %preempt.control)
// CHECK: %preempt.first.thread = icmp eq i32
// CHECK: call i32 @llvm.nvvm.read.ptx.sreg.smid()
// CHECK: br i1 %preempt.first.thread, label %preempt.drain.read, label %preempt.drain.gate
// CHECK: preempt.drain.read:
// CHECK: getelementptr i8, ptr %preempt.control, i64 64
// CHECK: load atomic i32, ptr %{{.*}} syncscope("device") monotonic
// CHECK: %preempt.block.yields = call i1 @llvm.nvvm.barrier.cta.red.or.aligned.all(i32 0, i1 %preempt.yields)
// The branch takes the OR through redux.sync over the whole warp: on the barrier's own result ptxas
// kept nothing of the body on its uniform datapath (DrainForm.cpp).
// CHECK-NEXT: [[WIDE:%.*]] = zext i1 %preempt.block.yields to i32
// CHECK-NEXT: [[REDUCED:%.*]] = call i32 @llvm.nvvm.redux.sync.umax(i32 [[WIDE]], i32 -1)
// CHECK-NEXT: %preempt.block.yields.uniform = trunc i32 [[REDUCED]] to i1
// CHECK-NEXT: br i1 %preempt.block.yields.uniform, label %preempt.drain.leave, label %preempt.drain.run
// CHECK-NOT: llvm.nvvm.barrier.cta.sync
// CHECK: preempt.drain.record:
// CHECK: getelementptr i8, ptr %preempt.control, i64 56
// CHECK: atomicrmw or ptr %{{.*}} syncscope("device") monotonic
// CHECK: ret void
// CHECK: }

// The entry gate, for a kernel without barriers: the OR-barrier right after the read.
// CHECK-LABEL: define {{.*}}ptx_kernel void @__preempt_drain__Z5scalePfi(ptr {{.*}}%data, i32 {{.*}}%n, ptr noundef %preempt.control)
// CHECK: preempt.drain.gate:
// CHECK-NEXT: %preempt.yield.seen = phi i32
// CHECK: call i1 @llvm.nvvm.barrier.cta.red.or.aligned.all(i32 0,
// CHECK: }

// No copy for the kernels that wait on other blocks.
// CHECK-NOT: @__preempt_drain__Z9wait_flagPVjPj(
// CHECK-NOT: @__preempt_drain__Z6ticketPjS_(

#define TILE 32

__global__ void transpose(const unsigned *in, unsigned *out, int n) {
  __shared__ unsigned tile[TILE][TILE + 1];
  int x = blockIdx.x * TILE + threadIdx.x, y = blockIdx.y * TILE + threadIdx.y;
  if (x < n && y < n)
    tile[threadIdx.y][threadIdx.x] = in[y * n + x];
  __syncthreads();
  x = blockIdx.y * TILE + threadIdx.x;
  y = blockIdx.x * TILE + threadIdx.y;
  if (x < n && y < n)
    out[y * n + x] = tile[threadIdx.x][threadIdx.y];
}

__global__ void scale(float *data, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    data[i] *= 2.0f;
}

__global__ void store_first(const float *in, float *out, float *side) {
  __shared__ float staged[256];
  side[blockIdx.x] = 1.0f;
  staged[threadIdx.x] = in[blockIdx.x * 256 + threadIdx.x];
  __syncthreads();
  out[blockIdx.x * 256 + threadIdx.x] = staged[255 - threadIdx.x];
}

__global__ void early_exit(const float *in, float *out, int n) {
  __shared__ float staged[256];
  if (blockIdx.x >= n)
    return;
  staged[threadIdx.x] = in[blockIdx.x * 256 + threadIdx.x];
  __syncthreads();
  out[blockIdx.x * 256 + threadIdx.x] = staged[255 - threadIdx.x];
}

// A block's whole work before its barrier (bench_kernels.cuh's long_kernel): a gate fused with that barrier
// would decide only after the work, so it goes at entry.
__global__ void loop_first(unsigned *out, unsigned iterations) {
  __shared__ unsigned partial[256];
  unsigned value = blockIdx.x + threadIdx.x;
  for (unsigned i = 0; i < iterations; i++)
    value = value * 1664525u + 1013904223u;
  partial[threadIdx.x] = value;
  __syncthreads();
  if (threadIdx.x == 0)
    out[blockIdx.x] = partial[255];
}

// Block b waits for block b - 1's flag: a skipped block would leave its successor spinning.
__global__ void wait_flag(volatile unsigned *flags, unsigned *out) {
  if (threadIdx.x == 0) {
    if (blockIdx.x > 0)
      while (flags[blockIdx.x - 1] == 0) {
      }
    out[blockIdx.x] = blockIdx.x;
    flags[blockIdx.x] = 1;
  }
}

__global__ void ticket(unsigned *counter, unsigned *out) {
  if (threadIdx.x == 0)
    out[atomicAdd(counter, 1u)] = blockIdx.x;
}
