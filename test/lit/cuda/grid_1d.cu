// A 1D vector add: converted; its block index now comes from the task context, the
// kernel gains the control-block parameter and a task loop, and the PTX assembles.
// RUN: %clang %cuda_flags --cuda-device-only -S -emit-llvm -fno-discard-value-names -Rpass=preempt %s -o %t.ll 2>&1 | %FileCheck %s --check-prefix=REMARK
// RUN: %FileCheck %s --check-prefix=IR < %t.ll
// RUN: %clang %cuda_flags --cuda-device-only -S %s -o %t.ptx
// RUN: %if ptxas %{ %ptxas -arch=sm_90 %t.ptx -o %t.cubin %}
// RUN: %FileCheck %s --check-prefix=PTX < %t.ptx

// REMARK: remark: kernel '_Z3addPKfS0_Pfi' converted to persistent-thread form

// IR: @__preempt_kernel__Z3addPKfS0_Pfi = addrspace(1) constant i32 1
// IR-LABEL: define {{.*}} ptx_kernel void @_Z3addPKfS0_Pfi(ptr {{.*}}, ptr {{.*}}, ptr {{.*}}, i32 {{.*}}, ptr noundef %preempt.control)
// IR: preempt.task:
// IR: atomicrmw add ptr %preempt.control, i32 1 monotonic
// IR: call void @llvm.nvvm.barrier.cta.sync.aligned.all(i32 0)
// IR: preempt.body:
// IR-NOT: llvm.nvvm.read.ptx.sreg.ctaid
// IR: preempt.task.end:
// IR-NEXT: call void @llvm.nvvm.barrier.cta.sync.aligned.all(i32 0)
// IR-NEXT: br label %preempt.task
// IR: preempt.exit:
// IR-NEXT: ret void

// PTX: .visible .global .align 4 .u32 __preempt_kernel__Z3addPKfS0_Pfi = 1;
// PTX: .entry _Z3addPKfS0_Pfi(
// PTX-NOT: %ctaid.x
// PTX: atom.global.add.u32
// PTX-NOT: %ctaid.x

__global__ void add(const float *a, const float *b, float *c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    c[i] = a[i] + b[i];
}
