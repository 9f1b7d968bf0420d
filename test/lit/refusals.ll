; Each kernel here has one thing the pass cannot prove safe; each is refused with a remark
; naming it and left exactly as it was (no control parameter, no marker, no task loop).
; RUN: %opt -load-pass-plugin=%plugin -passes=preempt-persistent-threads -pass-remarks-missed=preempt -S %s -o %t.ll 2>&1 | %FileCheck %s --check-prefix=REMARK
; RUN: %FileCheck %s < %t.ll

; REMARK-DAG: kernel 'clock_wait' left unchanged (not preemptible): it reads a clock
; REMARK-DAG: kernel 'indirect' left unchanged (not preemptible): it makes an indirect call
; REMARK-DAG: kernel 'external' left unchanged (not preemptible): it calls external function 'cudaLaunchDeviceV2'
; REMARK-DAG: kernel 'dynamic_alloca' left unchanged (not preemptible): it has a dynamic stack allocation
; REMARK-DAG: kernel 'asm_exit' left unchanged (not preemptible): it has inline assembly
; REMARK-DAG: kernel 'cluster' left unchanged (not preemptible): it uses thread-block clusters
; REMARK-DAG: kernel 'envreg' left unchanged (not preemptible): it reads the grid-sync workspace
; REMARK-DAG: kernel 'returns_value' left unchanged (not preemptible): it does not return void
; REMARK-DAG: kernel 'nested_exit' left unchanged (not preemptible): it ends threads with exit (in 'leave')

; CHECK-NOT: __preempt_kernel_
; CHECK-NOT: preempt.task
; CHECK-NOT: preempt.control

target datalayout = "e-p6:32:32-i64:64-i128:128-i256:256-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

define ptx_kernel void @clock_wait(ptr %out) {
  %t = call i32 @llvm.nvvm.read.ptx.sreg.clock()
  %b = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %s = add i32 %t, %b
  store i32 %s, ptr %out
  ret void
}

define ptx_kernel void @indirect(ptr %fn) {
  call void %fn()
  ret void
}

declare i32 @cudaLaunchDeviceV2(ptr, ptr)
define ptx_kernel void @external(ptr %p) {
  %r = call i32 @cudaLaunchDeviceV2(ptr %p, ptr null)
  ret void
}

define ptx_kernel void @dynamic_alloca(i32 %n, ptr %out) {
  %buffer = alloca i32, i32 %n
  store i32 1, ptr %buffer
  %v = load i32, ptr %buffer
  store i32 %v, ptr %out
  ret void
}

define ptx_kernel void @asm_exit() {
  call void asm sideeffect "exit;", ""()
  ret void
}

define ptx_kernel void @cluster(ptr %out) {
  %c = call i32 @llvm.nvvm.read.ptx.sreg.cluster.ctarank()
  store i32 %c, ptr %out
  ret void
}

define ptx_kernel void @envreg(ptr %out) {
  %w = call i32 @llvm.nvvm.read.ptx.sreg.envreg1()
  store i32 %w, ptr %out
  ret void
}

define ptx_kernel i32 @returns_value() {
  ret i32 0
}

define internal void @leave() {
  call void @llvm.nvvm.exit()
  ret void
}
define ptx_kernel void @nested_exit() {
  call void @leave()
  ret void
}

declare i32 @llvm.nvvm.read.ptx.sreg.clock()
declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.cluster.ctarank()
declare i32 @llvm.nvvm.read.ptx.sreg.envreg1()
declare void @llvm.nvvm.exit()
