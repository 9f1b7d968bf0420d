; A module that defines an allocation API or one of preempt's wrappers is an allocation layer
; (a mock, an interposer, the runtime itself) and is left exactly as it was. In an application
; module, a wrapper already declared with the right type is reused, one declared otherwise
; keeps its API unrouted, and an API only taken by address is routed all the same.
; RUN: %opt -load-pass-plugin=%plugin -passes=preempt-alloc-rewrite -pass-remarks=preempt \
; RUN:   -pass-remarks-missed=preempt -S < %s -o %t.ll 2>%t.remarks
; RUN: %FileCheck %s < %t.ll
; RUN: %FileCheck %s --check-prefix=REMARK < %t.remarks
;
; RUN: %opt -passes=verify -S < %S/Inputs/alloc_defines_api.ll -o %t.api.ll
; RUN: %opt -load-pass-plugin=%plugin -passes=preempt-alloc-rewrite -pass-remarks-missed=preempt \
; RUN:   -S < %S/Inputs/alloc_defines_api.ll 2>%t.api.remarks | diff - %t.api.ll
; RUN: %FileCheck %s --check-prefix=API < %t.api.ll
; RUN: %FileCheck %s --check-prefix=API-REMARK < %t.api.remarks
;
; RUN: %opt -passes=verify -S < %S/Inputs/alloc_defines_wrapper.ll -o %t.wrapper.ll
; RUN: %opt -load-pass-plugin=%plugin -passes=preempt-alloc-rewrite -pass-remarks-missed=preempt \
; RUN:   -S < %S/Inputs/alloc_defines_wrapper.ll 2>%t.wrapper.remarks | diff - %t.wrapper.ll
; RUN: %FileCheck %s --check-prefix=WRAPPER < %t.wrapper.ll
; RUN: %FileCheck %s --check-prefix=WRAPPER-REMARK < %t.wrapper.remarks

; CHECK: @managed_allocator = global ptr @preempt_hipMallocManaged
; CHECK-LABEL: define i32 @app(
; CHECK-NEXT: call i32 @preempt_cuMemFree_v2(i64 0)
; CHECK-NEXT: call i32 @preempt_cuMemFree_v2(i64 1)
; CHECK-NEXT: call i32 @hipMalloc(ptr %p, i64 64)
; CHECK-NOT: declare {{.*}} @cuMemFree_v2(
; CHECK: declare i32 @preempt_cuMemFree_v2(i64)
; CHECK-NOT: declare {{.*}} @preempt_cuMemFree_v2(
; CHECK: declare i32 @hipMalloc(ptr, i64)
; CHECK: declare void @preempt_hipMalloc(ptr)
; CHECK: declare i32 @preempt_hipMallocManaged(ptr, i64, i32)
; CHECK-NOT: @hipMallocManaged

; REMARK-DAG: remark: <unknown>:0:0: cuMemFree_v2 routed to preempt_cuMemFree_v2 (memory admission)
; REMARK-DAG: remark: <unknown>:0:0: hipMallocManaged routed to preempt_hipMallocManaged (memory admission)
; REMARK-DAG: remark: <unknown>:0:0: hipMalloc is not routed: this module declares preempt_hipMalloc as something other than a function of the same type

; API: define i32 @cudaMalloc(
; API: call i32 @cudaMalloc(ptr %p, i64 64)
; API: call i32 @cudaFree(ptr null)
; API-NOT: preempt_
; API-REMARK: remark: <unknown>:0:0: this module defines cudaMalloc: its allocation calls are not routed to the preempt runtime
; API-REMARK-NOT: routed to preempt_

; WRAPPER: call i32 @cudaMalloc(ptr %p, i64 %size)
; WRAPPER-REMARK: remark: <unknown>:0:0: this module defines preempt_cudaMalloc: its allocation calls are not routed to the preempt runtime

target triple = "x86_64-unknown-linux-gnu"

@managed_allocator = global ptr @hipMallocManaged

define i32 @app(ptr %p) {
  %1 = call i32 @cuMemFree_v2(i64 0)
  %2 = call i32 @preempt_cuMemFree_v2(i64 1)
  %3 = call i32 @hipMalloc(ptr %p, i64 64)
  call void @preempt_hipMalloc(ptr %p)
  ret i32 %1
}

declare i32 @cuMemFree_v2(i64)
declare i32 @preempt_cuMemFree_v2(i64)
declare i32 @hipMalloc(ptr, i64)
declare void @preempt_hipMalloc(ptr)
declare i32 @hipMallocManaged(ptr, i64, i32)
