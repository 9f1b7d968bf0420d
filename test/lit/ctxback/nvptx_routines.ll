; NVPTX: the pass runs after phi-node-elimination on virtual registers (liveness from lib/register_liveness.c),
; every plan passes the checker, and the PTX routines are accepted by ptxas for sm_90.
; REQUIRES: ptxas
; RUN: rm -rf %t && mkdir -p %t && cd %t
; RUN: %llc -mtriple=nvptx64-nvidia-cuda -mcpu=sm_90 -O2 -load %plugin -preempt-ctxback -preempt-ctxback-check=8 \
; RUN:   -preempt-ctxback-dump=combined -preempt-ctxback-output=%t/nv %s -o %t/kernel.ptx 2>&1 | %FileCheck %s --check-prefix=DUMP
; RUN: %FileCheck %s < %t/nv.ctxback.tsv
; RUN: %ptxas -arch=sm_90 %t/nv.ctxback.ptx -o %t/routines.cubin
; RUN: %ptxas -arch=sm_90 %t/kernel.ptx -o %t/kernel.cubin
; RUN: %FileCheck %s --check-prefix=PTX < %t/nv.ctxback.ptx

; The loop body (bb.1) flashes back over re-executable arithmetic; registers print as the NVPTX printer does.
; DUMP: ctxback: kern bb.0 point 0 combined:
; DUMP: ctxback: kern bb.1 point {{[0-9]+}} combined: context {{[0-9]+}} bytes (live {{[0-9]+}})
; DUMP: %r{{[0-9]+}}

; CHECK: # preempt-ctxback-stats 1
; CHECK: {{^}}kern nvptx64 {{[1-9][0-9]*}} {{[1-9][0-9]*}} 0 {{.*}} {{[1-9][0-9]*}} 0{{$}}

; PTX: .version 8.0
; PTX: .target sm_90
; PTX: .visible .func __ctxback_kern_p0(.param .b64 ctx
; PTX: .visible .func {{.*}}__ctxback_kern_r0(.param .b64 ctx)
; PTX: .visible .global .align 4 .u32 __ctxback_kern_table

target triple = "nvptx64-nvidia-cuda"

define ptx_kernel void @kern(ptr addrspace(1) %a, i32 %n, i32 %m) {
entry:
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %ctaid = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %base = shl i32 %ctaid, 8
  %i = add i32 %base, %tid
  %p = getelementptr inbounds i32, ptr addrspace(1) %a, i32 %i
  %x = load i32, ptr addrspace(1) %p
  br label %loop

loop:
  %k = phi i32 [ 0, %entry ], [ %k.next, %loop ]
  %acc = phi i32 [ %x, %entry ], [ %acc.next, %loop ]
  %t = mul i32 %acc, 7
  %u = add i32 %t, %k
  %v = xor i32 %u, %m
  %w = sub i32 %v, %i
  %acc.next = xor i32 %w, -1
  %k.next = add i32 %k, 1
  %done = icmp sge i32 %k.next, %n
  br i1 %done, label %exit, label %loop

exit:
  store i32 %acc.next, ptr addrspace(1) %p
  ret void
}

declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
