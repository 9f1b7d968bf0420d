// Shared memory with barriers (a tree reduction) and a uniform early exit: both converted.
// The body's own barriers stay; the task loop adds one between tasks, which also publishes each new batch.
// RUN: %clang %cuda_flags --cuda-device-only -S -emit-llvm -fno-discard-value-names -Rpass=preempt -Rpass-missed=preempt %s -o %t.ll 2>&1 | %FileCheck %s --check-prefix=REMARK
// RUN: %FileCheck %s < %t.ll
// RUN: %clang %cuda_flags --cuda-device-only -S %s -o %t.ptx
// RUN: %if ptxas %{ %ptxas -arch=sm_90 %t.ptx -o %t.cubin %}
// At -O0 values sit in allocas; the uniformity check still sees through them.
// RUN: %clang %cuda_flags -O0 --cuda-device-only -S -Rpass=preempt -Rpass-missed=preempt %s -o %t.O0.ptx 2>&1 | %FileCheck %s --check-prefix=REMARK
// RUN: %if ptxas %{ %ptxas -arch=sm_90 %t.O0.ptx -o %t.O0.cubin %}

// REMARK-DAG: kernel '_Z9reduce256PKfPf' converted to persistent-thread form
// REMARK-DAG: kernel '_Z12uniform_exitPfj' converted to persistent-thread form
// REMARK-NOT: left unchanged

// Thread 0 publishes a batch (its barrier also ends the last task); inside a
// batch every thread steps the block index itself behind one barrier, with no
// work of thread 0's before it; no barrier at the task's end (the GPU suite's
// reduction, transpose and stencil run this shape).
// CHECK-LABEL: define {{.*}} @__preempt_persistent__Z9reduce256PKfPf(
// CHECK: preempt.task:
// CHECK: br i1 %preempt.batch.done, label %preempt.batch, label %preempt.batch.step
// CHECK: preempt.batch:
// CHECK: barrier.cta.sync
// CHECK: preempt.batch.step:
// CHECK-NEXT: call void @llvm.nvvm.barrier.cta.sync.aligned.all(i32 0)
// CHECK-NOT: load
// CHECK: preempt.task.start:
// CHECK: preempt.body:
// CHECK: barrier.cta.sync
// CHECK: preempt.task.end:
// CHECK-NOT: barrier.cta.sync
// CHECK: br label %preempt.task

__global__ void reduce256(const float *in, float *out) {
  __shared__ float partial[256];
  unsigned tid = threadIdx.x;
  partial[tid] = in[blockIdx.x * 256 + tid];
  __syncthreads();
  for (unsigned stride = 128; stride > 0; stride >>= 1) {
    if (tid < stride)
      partial[tid] += partial[tid + stride];
    __syncthreads();
  }
  if (tid == 0)
    out[blockIdx.x] = partial[0];
}

// The exit depends on blockIdx only: the whole CTA leaves together.
__global__ void uniform_exit(float *data, unsigned limit) {
  __shared__ float tile[128];
  if (blockIdx.x >= limit)
    return;
  tile[threadIdx.x] = data[blockIdx.x * 128 + threadIdx.x];
  __syncthreads();
  data[blockIdx.x * 128 + threadIdx.x] = tile[127 - threadIdx.x];
}
