// Every converted kernel keeps the kernel as written under its own name (ABI 9, control_block.h), and the converted
// kernel becomes __preempt_persistent_<name>: the runtime launches the kernel as written for short and one-wave
// launches (runtime-host/as_written.c, launch.c), and every launch preempt does not route runs it too. It is a
// kernel (ptx_kernel, a .entry in the PTX) with the original parameters, launch bounds and body, calling the
// original device function rather than the clone that reads the task context, with no preempt helper and no
// marker of its own. A refused kernel gets no copy, and the PTX with both entries assembles.
// RUN: %clang %cuda_flags --cuda-device-only -S -emit-llvm -fno-discard-value-names -Rpass=preempt -Rpass-missed=preempt %s -o %t.ll 2>&1 | %FileCheck %s --check-prefix=REMARK
// RUN: %FileCheck %s < %t.ll
// RUN: %FileCheck %s --check-prefix=ONCE < %t.ll
// RUN: %clang %cuda_flags --cuda-device-only -S %s -o %t.ptx
// RUN: %if ptxas %{ %ptxas -arch=sm_90 %t.ptx -o %t.cubin %}
// RUN: %FileCheck %s --check-prefix=PTX < %t.ptx

// Nothing is said about the copy or the persistent form's name.
// REMARK-NOT: __preempt_original_
// REMARK-NOT: __preempt_persistent_
// REMARK-DAG: kernel '_Z7refusedPj' left unchanged (not preemptible): it reads a clock
// REMARK-DAG: kernel '_Z5scalePfjf' converted to persistent-thread form
// REMARK-NOT: __preempt_original_

// CHECK-LABEL: define {{.*}} ptx_kernel void @__preempt_persistent__Z5scalePfjf(ptr {{[^,]*}}%data, i32 {{[^,]*}}%n, float {{[^,]*}}%factor, ptr noundef %preempt.control,
// CHECK: call {{.*}} @_Z10row_offsetv.preempt()
// CHECK-LABEL: define {{.*}} ptx_kernel void @_Z7refusedPj(
// The copy: the kernel as written, from its signature to its last instruction, under the kernel's name.
// CHECK-LABEL: define {{.*}} ptx_kernel void @_Z5scalePfjf(ptr {{[^,]*}}%data, i32 {{[^,]*}}%n, float {{[^,]*}}%factor)
// CHECK-SAME: #[[COPY:[0-9]+]]
// CHECK-NOT: preempt
// CHECK: call {{.*}} @_Z10row_offsetv()
// CHECK-NOT: preempt
// CHECK: call {{.*}} @llvm.nvvm.read.ptx.sreg.ctaid.x()
// CHECK-NOT: preempt
// CHECK: ret void
// CHECK-NEXT: }
// CHECK: attributes #[[COPY]] = {{{.*}} "nvvm.maxntid"="128" "nvvm.minctasm"="4"

// One copy, of the converted kernel only, one persistent form, and the one marker under the kernel's name.
// ONCE-COUNT-1: define {{.*}}@_Z5scalePfjf(
// ONCE-NOT: define {{.*}}@_Z5scalePfjf(
// ONCE-NOT: @__preempt_kernel___preempt_
// ONCE-NOT: define {{.*}}@__preempt_original_
// ONCE-NOT: @__preempt_persistent__Z7refusedPj

// PTX-NOT: __preempt_persistent__Z7refusedPj
// PTX: .visible .entry __preempt_persistent__Z5scalePfjf(
// PTX: .visible .entry _Z5scalePfjf(
// PTX-NEXT: .param .u64 .ptr .align 1 _Z5scalePfjf_param_0,
// PTX-NEXT: .param .u32 _Z5scalePfjf_param_1,
// PTX-NEXT: .param .f32 _Z5scalePfjf_param_2
// PTX-NEXT: )
// PTX-NEXT: .maxntid 128
// PTX-NEXT: .minnctapersm 4
// PTX-NOT: __preempt_task_ctx
// PTX: %ctaid.x
// PTX: ret;
// PTX-NOT: __preempt_original__Z7refusedPj

__device__ __noinline__ unsigned row_offset() { return blockIdx.y * gridDim.x; }

__global__ void __launch_bounds__(128, 4) scale(float *data, unsigned n, float factor) {
  unsigned i = (row_offset() + blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n)
    data[i] *= factor;
}

__global__ void refused(unsigned *out) { out[blockIdx.x] = (unsigned)clock(); }
