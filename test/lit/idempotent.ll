; Running the pass on a module it already converted leaves converted kernels alone (no
; second control parameter, no second loop) and says so, and leaves the unconverted copies
; and drain forms alone; a module without kernels is untouched.
; RUN: %opt -load-pass-plugin=%plugin -passes=preempt-persistent-threads -S %s -o %t.once.ll
; RUN: %opt -load-pass-plugin=%plugin -passes=preempt-persistent-threads -pass-remarks-missed=preempt -S %t.once.ll -o %t.twice.ll 2>&1 | %FileCheck %s --check-prefix=REMARK
; RUN: %FileCheck %s < %t.twice.ll
; RUN: %FileCheck %s --check-prefix=COPY < %t.twice.ll
; RUN: %opt -load-pass-plugin=%plugin -passes=preempt-persistent-threads -S %S/Inputs/no_kernels.ll -o - | %FileCheck %s --check-prefix=NOKERNELS

; REMARK: kernel 'scale' left unchanged (not preemptible): it is already in persistent-thread form
; CHECK: define ptx_kernel void @__preempt_persistent_scale(ptr %data, ptr noundef %preempt.control, i32 noundef %preempt.task.count, i32 noundef %preempt.grid.x, i32 noundef %preempt.grid.y, i32 noundef %preempt.grid.z, i32 noundef %preempt.generation, i32 noundef %preempt.check.interval, i32 noundef %preempt.relaunched)
; CHECK-COUNT-1: preempt.task:
; CHECK-NOT: preempt.task1:
; The unconverted copy and the drain form kept by the first run are neither converted nor copied
; again by the second.
; REMARK-NOT: __preempt_persistent_
; REMARK-NOT: __preempt_drain_
; COPY-NOT: @__preempt_kernel___preempt_
; COPY: define ptx_kernel void @scale(ptr %data)
; COPY-NOT: preempt.control
; COPY: define ptx_kernel void @__preempt_drain_scale(ptr %data, ptr noundef %preempt.control)
; COPY-NOT: __preempt_original_
; COPY-NOT: __preempt_persistent_
; COPY-NOT: __preempt_drain_
; NOKERNELS: define void @helper(ptr %p)
; NOKERNELS-NOT: preempt

target datalayout = "e-p6:32:32-i64:64-i128:128-i256:256-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

define ptx_kernel void @scale(ptr %data) {
  %block = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %index = zext i32 %block to i64
  %slot = getelementptr float, ptr %data, i64 %index
  %value = load float, ptr %slot
  %doubled = fmul float %value, 2.0
  store float %doubled, ptr %slot
  ret void
}

declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
