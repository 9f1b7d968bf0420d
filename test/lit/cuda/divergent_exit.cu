// A thread-divergent return before a barrier: converting would make early threads wait at
// the task barrier while the others wait in the body, so the kernel is refused and kept as is.
// RUN: %clang %cuda_flags --cuda-device-only -S -emit-llvm -fno-discard-value-names -Rpass=preempt -Rpass-missed=preempt %s -o %t.ll 2>&1 | %FileCheck %s --check-prefix=REMARK
// RUN: %FileCheck %s < %t.ll
// RUN: %clang %cuda_flags -O0 --cuda-device-only -S -Rpass=preempt -Rpass-missed=preempt %s -o /dev/null 2>&1 | %FileCheck %s --check-prefix=REMARK

// REMARK: kernel '_Z14divergent_exitPfi' left unchanged (not preemptible): it reaches a barrier under thread-divergent control flow
// REMARK: kernel '_Z13exit_no_syncsPfi' converted to persistent-thread form

// The refused kernel keeps its signature and its hardware block index.
// CHECK-NOT: @__preempt_kernel__Z14divergent_exitPfi
// CHECK-LABEL: define {{.*}} @_Z14divergent_exitPfi(ptr {{[^,]*}}, i32 noundef %n)
// CHECK: llvm.nvvm.read.ptx.sreg.ctaid.x
// CHECK-NOT: preempt.task
// CHECK-LABEL: define {{.*}} @__preempt_persistent__Z13exit_no_syncsPfi(ptr {{[^,]*}}, i32 noundef %n, ptr noundef %preempt.control, i32 noundef %preempt.task.count, i32 noundef %preempt.grid.x, i32 noundef %preempt.grid.y, i32 noundef %preempt.grid.z, i32 noundef %preempt.generation, i32 noundef %preempt.check.interval, i32 noundef %preempt.relaunched)

__global__ void divergent_exit(float *data, int n) {
  __shared__ float tile[256];
  int i = blockIdx.x * 256 + threadIdx.x;
  if (i >= n)
    return;
  tile[threadIdx.x] = data[i];
  __syncthreads();
  data[i] = tile[255 - threadIdx.x];
}

// The same divergent exit with no barrier after it is safe.
__global__ void exit_no_syncs(float *data, int n) {
  int i = blockIdx.x * 256 + threadIdx.x;
  if (i >= n)
    return;
  data[i] *= 2.0f;
}
