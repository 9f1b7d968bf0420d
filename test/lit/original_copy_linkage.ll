; The kernel as written, which keeps the kernel's own name (ABI 9: the converted kernel becomes
; __preempt_persistent_<name>), and the drain form (__preempt_drain_<name>) have the kernel's own linkage; a local kernel kept alive by
; llvm.compiler.used gets its copies kept alive the same way, so that dead-code elimination after
; the pass cannot drop them.
; RUN: %opt -load-pass-plugin=%plugin -passes='preempt-persistent-threads,globaldce' -S %s -o - | %FileCheck %s

; CHECK: @llvm.compiler.used = appending global [3 x ptr] [ptr @__preempt_persistent_local_kernel, ptr @local_kernel, ptr @__preempt_drain_local_kernel]
; CHECK: define internal ptx_kernel void @__preempt_persistent_local_kernel(ptr %out, ptr noundef %preempt.control,
; CHECK: define internal ptx_kernel void @local_kernel(ptr %out) {
; CHECK-NEXT: %block = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
; CHECK: define internal ptx_kernel void @__preempt_drain_local_kernel(ptr %out, ptr noundef %preempt.control) {

target datalayout = "e-p6:32:32-i64:64-i128:128-i256:256-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

@llvm.compiler.used = appending global [1 x ptr] [ptr @local_kernel], section "llvm.metadata"

define internal ptx_kernel void @local_kernel(ptr %out) {
  %block = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  store i32 %block, ptr %out
  ret void
}

declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
