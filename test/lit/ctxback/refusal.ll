; A kernel the model does not support (it writes a trap temporary, which the routines need) is skipped with
; a missed remark, and its code is exactly what llc writes without the plugin, even with OSRB on.
; RUN: rm -rf %t && mkdir -p %t
; RUN: %llc -mtriple=amdgcn-amd-amdhsa -mcpu=gfx906 -O2 %s -o %t/plain.s 2>/dev/null
; RUN: %llc -mtriple=amdgcn-amd-amdhsa -mcpu=gfx906 -O2 -load %plugin -preempt-ctxback -preempt-ctxback-osrb \
; RUN:   -preempt-ctxback-output=%t/refused -pass-remarks-missed=preempt %s -o %t/ctxback.s 2>&1 | %FileCheck %s
; RUN: diff %t/plain.s %t/ctxback.s
; RUN: %FileCheck %s --check-prefix=TSV < %t/refused.ctxback.tsv

; CHECK: remark: {{.*}}ctxback: kernel uses_ttmp: not analysed: the kernel uses trap temporary ttmp4, which the routines need

; Header only: no kernel row.
; TSV: # preempt-ctxback-stats 1
; TSV-NEXT: kernel target points
; TSV-NOT: uses_ttmp

target triple = "amdgcn-amd-amdhsa"

define amdgpu_kernel void @uses_ttmp(ptr addrspace(1) %a, i32 %n) {
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %p = getelementptr inbounds i32, ptr addrspace(1) %a, i32 %tid
  %x = load i32, ptr addrspace(1) %p
  %y = add i32 %x, %n
  call void asm sideeffect "s_mov_b32 ttmp4, 0", "~{ttmp4}"()
  store i32 %y, ptr addrspace(1) %p
  ret void
}

declare i32 @llvm.amdgcn.workitem.id.x()
