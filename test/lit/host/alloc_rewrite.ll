; Every use of a declared device-memory allocation or release API (call, invoke, function
; pointer in code or in a global) goes to preempt_<name> with the same type and attributes;
; other APIs, device modules, and everything under -preempt-memory-admission=false are left alone.
; RUN: %opt -load-pass-plugin=%plugin -passes=preempt-alloc-rewrite -pass-remarks=preempt \
; RUN:   -pass-remarks-output=%t.yaml -S < %s -o %t.ll 2>%t.remarks
; RUN: %FileCheck %s < %t.ll
; RUN: %FileCheck %s --check-prefix=REMARK < %t.remarks
; RUN: grep -c "routed to" %t.remarks | %FileCheck %s --check-prefix=COUNT
; RUN: %FileCheck %s --check-prefix=YAML < %t.yaml
; Idempotent: a second run finds nothing left to route.
; RUN: %opt -load-pass-plugin=%plugin -passes=preempt-alloc-rewrite -S < %t.ll | diff - %t.ll
; RUN: %FileCheck %s --check-prefix=GONE < %t.ll
; Left exactly as it was: with the option off, and in device modules.
; RUN: %opt -passes=verify -S < %s -o %t.plain.ll
; RUN: %opt -load-pass-plugin=%plugin -passes=preempt-alloc-rewrite -preempt-memory-admission=false -S < %s \
; RUN:   | diff - %t.plain.ll
; RUN: %opt -passes=verify -mtriple=nvptx64-nvidia-cuda -S < %s -o %t.nvptx.ll
; RUN: %opt -load-pass-plugin=%plugin -passes=preempt-alloc-rewrite -mtriple=nvptx64-nvidia-cuda -S < %s \
; RUN:   | diff - %t.nvptx.ll
; RUN: %opt -passes=verify -mtriple=amdgcn-amd-amdhsa -S < %s -o %t.amdgcn.ll
; RUN: %opt -load-pass-plugin=%plugin -passes=preempt-alloc-rewrite -mtriple=amdgcn-amd-amdhsa -S < %s \
; RUN:   | diff - %t.amdgcn.ll
; RUN: %FileCheck %s --check-prefix=PLAIN < %t.plain.ll
; RUN: %FileCheck %s --check-prefixes=NVPTX,PLAIN < %t.nvptx.ll
; RUN: %FileCheck %s --check-prefixes=AMDGCN,PLAIN < %t.amdgcn.ll

; CHECK: @alloc_table = global [3 x ptr] [ptr @preempt_hipMalloc, ptr @preempt_cuMemFree_v2, ptr @cudaMallocHost]

; CHECK-LABEL: define i32 @runtime_api(
; CHECK: call i32 @preempt_cudaMalloc(ptr %p, i64 256)
; CHECK: call i32 @preempt_cudaMallocAsync(ptr %p, i64 256, ptr null)
; CHECK: call i32 @preempt_cudaMallocPitch(ptr %p, ptr %pitch, i64 64, i64 4)
; CHECK: call i32 @preempt_cudaMalloc3D(ptr %pp, ptr byval(%struct.cudaExtent) align 8 %extent)
; CHECK: call i32 @preempt_cudaMallocManaged(ptr %p, i64 256, i32 1)
; CHECK: call i32 @cudaMemcpy(ptr %buf, ptr %buf, i64 256, i32 3)
; CHECK: call i32 @cudaMallocHost(ptr %p, i64 256)
; CHECK: call i32 @preempt_cudaMallocAsync_ptsz(ptr %p, i64 256, ptr null)
; CHECK: call i32 @preempt_cudaMallocFromPoolAsync(ptr %p, i64 256, ptr %pool, ptr null)
; CHECK: call i32 @preempt_cudaMallocFromPoolAsync_ptsz(ptr %p, i64 256, ptr %pool, ptr null)
; CHECK: call i32 @preempt_cudaFreeAsync_ptsz(ptr %buf, ptr null)
; CHECK: call i32 @preempt_cudaFreeAsync(ptr %buf, ptr null)
; CHECK: call i32 @preempt_cudaFree(ptr %buf)

; CHECK-LABEL: define i32 @driver_api(
; CHECK: call i32 @preempt_cuMemAlloc_v2(ptr %d, i64 256)
; CHECK: call i32 @preempt_cuMemAllocPitch_v2(ptr %d, ptr %pitch, i64 64, i64 4, i32 16)
; CHECK: call i32 @preempt_cuMemAllocAsync(ptr %d, i64 256, ptr null)
; CHECK: call i32 @preempt_cuMemAllocManaged(ptr %d, i64 256, i32 1)
; CHECK: call i32 @cuMemAlloc(ptr %d, i32 256)
; CHECK: call i32 @preempt_cuMemAllocAsync_ptsz(ptr %d, i64 256, ptr null)
; CHECK: call i32 @preempt_cuMemAllocFromPoolAsync(ptr %d, i64 256, ptr %pool, ptr null)
; CHECK: call i32 @preempt_cuMemAllocFromPoolAsync_ptsz(ptr %d, i64 256, ptr %pool, ptr null)
; CHECK: call i32 @preempt_cuMemFreeAsync_ptsz(i64 %v, ptr null)
; CHECK: call i32 @preempt_cuMemCreate(ptr %h, i64 2097152, ptr %prop, i64 0)
; CHECK: call i32 @cuMemMap(i64 %v, i64 2097152, i64 0, i64 %handle, i64 0)
; CHECK: call i32 @preempt_cuMemRelease(i64 %handle)
; CHECK: call i32 @preempt_cuMemFreeAsync(i64 %v, ptr null)
; CHECK: call i32 @preempt_cuMemFree_v2(i64 %v)

; CHECK-LABEL: define i32 @hip_api(
; CHECK: call i32 @preempt_hipMalloc(ptr %p, i64 256)
; CHECK: call i32 @preempt_hipMallocAsync(ptr %p, i64 256, ptr null)
; CHECK: call i32 @preempt_hipMallocPitch(ptr %p, ptr %pitch, i64 64, i64 4)
; CHECK: call i32 @preempt_hipMalloc3D(ptr %pp, ptr byval(%struct.hipExtent) align 8 %extent)
; CHECK: call i32 @preempt_hipMallocManaged(ptr %p, i64 256, i32 1)
; CHECK: call i32 @preempt_hipMallocFromPoolAsync(ptr %p, i64 256, ptr %pool, ptr null)
; CHECK: call i32 @preempt_hipMemCreate(ptr %h, i64 2097152, ptr %prop, i64 0)
; CHECK: call i32 @preempt_hipMemRelease(ptr %handle)
; CHECK: call i32 @preempt_hipFreeAsync(ptr %buf, ptr null)
; CHECK: call i32 @preempt_hipFree(ptr %buf)

; CHECK-LABEL: define void @pointers(
; CHECK: store ptr @preempt_cudaFree, ptr %slot
; CHECK: call i32 %fn(ptr null)

; CHECK-LABEL: define i32 @invokes(
; CHECK: invoke i32 @preempt_cudaMalloc(ptr %p, i64 16)
; CHECK-NEXT: to label %ok unwind label %lpad

; The wrappers keep the originals' types and attributes (byval extents).
; CHECK-DAG: declare i32 @preempt_cudaMalloc(ptr noundef, i64 noundef) [[NOUNWIND:#[0-9]+]]
; CHECK-DAG: declare i32 @preempt_cudaMalloc3D(ptr noundef, ptr noundef byval(%struct.cudaExtent) align 8)
; CHECK-DAG: declare i32 @preempt_hipMalloc3D(ptr noundef, ptr noundef byval(%struct.hipExtent) align 8)
; CHECK-DAG: declare i32 @preempt_cuMemFree_v2(i64 noundef)
; CHECK-DAG: attributes [[NOUNWIND]] = { nounwind }

; The originals are gone, in calls, globals and declarations alike.
; GONE-NOT: {{@(cudaMalloc|cudaFree|cudaMallocAsync|cudaFreeAsync|cudaMallocPitch|cudaMalloc3D|cudaMallocManaged)[^_A-Za-z0-9]}}
; GONE-NOT: {{@(cudaMallocFromPoolAsync|cudaMallocAsync_ptsz|cudaFreeAsync_ptsz|cudaMallocFromPoolAsync_ptsz)[^_A-Za-z0-9]}}
; GONE-NOT: {{@(cuMemAlloc_v2|cuMemAllocPitch_v2|cuMemAllocAsync|cuMemAllocManaged|cuMemFree_v2|cuMemFreeAsync)[^_A-Za-z0-9]}}
; GONE-NOT: {{@(cuMemAllocFromPoolAsync|cuMemAllocAsync_ptsz|cuMemAllocFromPoolAsync_ptsz|cuMemFreeAsync_ptsz)[^_A-Za-z0-9]}}
; GONE-NOT: {{@(cuMemCreate|cuMemRelease)[^_A-Za-z0-9]}}
; GONE-NOT: {{@(hipMalloc|hipFree|hipMallocAsync|hipFreeAsync|hipMallocPitch|hipMalloc3D|hipMallocManaged)[^_A-Za-z0-9]}}
; GONE-NOT: {{@(hipMallocFromPoolAsync|hipMemCreate|hipMemRelease)[^_A-Za-z0-9]}}

; REMARK-DAG: remark: {{.*}}cudaMalloc routed to preempt_cudaMalloc (memory admission)
; REMARK-DAG: remark: {{.*}}cudaFree routed to preempt_cudaFree (memory admission)
; REMARK-DAG: remark: {{.*}}cudaMallocAsync routed to preempt_cudaMallocAsync (memory admission)
; REMARK-DAG: remark: {{.*}}cudaFreeAsync routed to preempt_cudaFreeAsync (memory admission)
; REMARK-DAG: remark: {{.*}}cudaMallocPitch routed to preempt_cudaMallocPitch (memory admission)
; REMARK-DAG: remark: {{.*}}cudaMalloc3D routed to preempt_cudaMalloc3D (memory admission)
; REMARK-DAG: remark: {{.*}}cudaMallocManaged routed to preempt_cudaMallocManaged (memory admission)
; REMARK-DAG: remark: {{.*}}cudaMallocFromPoolAsync routed to preempt_cudaMallocFromPoolAsync (memory admission)
; REMARK-DAG: remark: {{.*}}cudaMallocAsync_ptsz routed to preempt_cudaMallocAsync_ptsz (memory admission)
; REMARK-DAG: remark: {{.*}}cudaFreeAsync_ptsz routed to preempt_cudaFreeAsync_ptsz (memory admission)
; REMARK-DAG: remark: {{.*}}cudaMallocFromPoolAsync_ptsz routed to preempt_cudaMallocFromPoolAsync_ptsz (memory admission)
; REMARK-DAG: remark: {{.*}}cuMemAlloc_v2 routed to preempt_cuMemAlloc_v2 (memory admission)
; REMARK-DAG: remark: {{.*}}cuMemAllocPitch_v2 routed to preempt_cuMemAllocPitch_v2 (memory admission)
; REMARK-DAG: remark: {{.*}}cuMemAllocAsync routed to preempt_cuMemAllocAsync (memory admission)
; REMARK-DAG: remark: {{.*}}cuMemAllocManaged routed to preempt_cuMemAllocManaged (memory admission)
; REMARK-DAG: remark: {{.*}}cuMemFree_v2 routed to preempt_cuMemFree_v2 (memory admission)
; REMARK-DAG: remark: {{.*}}cuMemFreeAsync routed to preempt_cuMemFreeAsync (memory admission)
; REMARK-DAG: remark: {{.*}}cuMemAllocFromPoolAsync routed to preempt_cuMemAllocFromPoolAsync (memory admission)
; REMARK-DAG: remark: {{.*}}cuMemAllocAsync_ptsz routed to preempt_cuMemAllocAsync_ptsz (memory admission)
; REMARK-DAG: remark: {{.*}}cuMemAllocFromPoolAsync_ptsz routed to preempt_cuMemAllocFromPoolAsync_ptsz (memory admission)
; REMARK-DAG: remark: {{.*}}cuMemFreeAsync_ptsz routed to preempt_cuMemFreeAsync_ptsz (memory admission)
; REMARK-DAG: remark: {{.*}}cuMemCreate routed to preempt_cuMemCreate (memory admission)
; REMARK-DAG: remark: {{.*}}cuMemRelease routed to preempt_cuMemRelease (memory admission)
; REMARK-DAG: remark: {{.*}}hipMalloc routed to preempt_hipMalloc (memory admission)
; REMARK-DAG: remark: {{.*}}hipFree routed to preempt_hipFree (memory admission)
; REMARK-DAG: remark: {{.*}}hipMallocAsync routed to preempt_hipMallocAsync (memory admission)
; REMARK-DAG: remark: {{.*}}hipFreeAsync routed to preempt_hipFreeAsync (memory admission)
; REMARK-DAG: remark: {{.*}}hipMallocPitch routed to preempt_hipMallocPitch (memory admission)
; REMARK-DAG: remark: {{.*}}hipMalloc3D routed to preempt_hipMalloc3D (memory admission)
; REMARK-DAG: remark: {{.*}}hipMallocManaged routed to preempt_hipMallocManaged (memory admission)
; REMARK-DAG: remark: {{.*}}hipMallocFromPoolAsync routed to preempt_hipMallocFromPoolAsync (memory admission)
; REMARK-DAG: remark: {{.*}}hipMemCreate routed to preempt_hipMemCreate (memory admission)
; REMARK-DAG: remark: {{.*}}hipMemRelease routed to preempt_hipMemRelease (memory admission)
; REMARK-NOT: cudaMemcpy
; REMARK-NOT: cudaMallocHost
; REMARK-NOT: cuMemMap
; COUNT: {{^}}33{{$}}

; The remark points at the first call in the module (cudaMalloc: runtime_api, not invokes).
; YAML: --- !Passed
; YAML-NEXT: Pass: preempt
; YAML-NEXT: Name: AllocationRouted
; YAML-NEXT: Function: runtime_api
; YAML-NEXT: Args:
; YAML-NEXT: - Function: cudaMalloc

; The unchanged modules the diffs compare with do call the originals (on the triples named).
; NVPTX: target triple = "nvptx64-nvidia-cuda"
; AMDGCN: target triple = "amdgcn-amd-amdhsa"
; PLAIN: @alloc_table = global [3 x ptr] [ptr @hipMalloc, ptr @cuMemFree_v2, ptr @cudaMallocHost]
; PLAIN: call i32 @cudaMalloc(ptr %p, i64 256)
; PLAIN-NOT: preempt_

target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

%struct.cudaExtent = type { i64, i64, i64 }
%struct.hipExtent = type { i64, i64, i64 }

; Only taken by address: routed all the same.
@alloc_table = global [3 x ptr] [ptr @hipMalloc, ptr @cuMemFree_v2, ptr @cudaMallocHost]

define i32 @runtime_api(ptr %p, ptr %pitch, ptr %pp, ptr %extent, ptr %buf, ptr %pool) {
  %1 = call i32 @cudaMalloc(ptr %p, i64 256)
  %2 = call i32 @cudaMallocAsync(ptr %p, i64 256, ptr null)
  %3 = call i32 @cudaMallocPitch(ptr %p, ptr %pitch, i64 64, i64 4)
  %4 = call i32 @cudaMalloc3D(ptr %pp, ptr byval(%struct.cudaExtent) align 8 %extent)
  %5 = call i32 @cudaMallocManaged(ptr %p, i64 256, i32 1)
  %6 = call i32 @cudaMemcpy(ptr %buf, ptr %buf, i64 256, i32 3)
  %7 = call i32 @cudaMallocHost(ptr %p, i64 256)
  %8 = call i32 @cudaMallocAsync_ptsz(ptr %p, i64 256, ptr null)
  %9 = call i32 @cudaMallocFromPoolAsync(ptr %p, i64 256, ptr %pool, ptr null)
  %10 = call i32 @cudaMallocFromPoolAsync_ptsz(ptr %p, i64 256, ptr %pool, ptr null)
  %11 = call i32 @cudaFreeAsync_ptsz(ptr %buf, ptr null)
  %12 = call i32 @cudaFreeAsync(ptr %buf, ptr null)
  %13 = call i32 @cudaFree(ptr %buf)
  ret i32 %13
}

define i32 @driver_api(ptr %d, ptr %pitch, i64 %v, ptr %pool, ptr %h, ptr %prop, i64 %handle) {
  %1 = call i32 @cuMemAlloc_v2(ptr %d, i64 256)
  %2 = call i32 @cuMemAllocPitch_v2(ptr %d, ptr %pitch, i64 64, i64 4, i32 16)
  %3 = call i32 @cuMemAllocAsync(ptr %d, i64 256, ptr null)
  %4 = call i32 @cuMemAllocManaged(ptr %d, i64 256, i32 1)
  ; The pre-_v2 entry point with 32-bit sizes: not routed.
  %5 = call i32 @cuMemAlloc(ptr %d, i32 256)
  %6 = call i32 @cuMemAllocAsync_ptsz(ptr %d, i64 256, ptr null)
  %7 = call i32 @cuMemAllocFromPoolAsync(ptr %d, i64 256, ptr %pool, ptr null)
  %8 = call i32 @cuMemAllocFromPoolAsync_ptsz(ptr %d, i64 256, ptr %pool, ptr null)
  %9 = call i32 @cuMemFreeAsync_ptsz(i64 %v, ptr null)
  ; Virtual memory management: the physical allocation is admitted; mapping it takes no memory, not routed.
  %10 = call i32 @cuMemCreate(ptr %h, i64 2097152, ptr %prop, i64 0)
  %11 = call i32 @cuMemMap(i64 %v, i64 2097152, i64 0, i64 %handle, i64 0)
  %12 = call i32 @cuMemRelease(i64 %handle)
  %13 = call i32 @cuMemFreeAsync(i64 %v, ptr null)
  %14 = call i32 @cuMemFree_v2(i64 %v)
  ret i32 %14
}

define i32 @hip_api(ptr %p, ptr %pitch, ptr %pp, ptr %extent, ptr %buf, ptr %pool, ptr %h, ptr %prop, ptr %handle) {
  %1 = call i32 @hipMalloc(ptr %p, i64 256)
  %2 = call i32 @hipMallocAsync(ptr %p, i64 256, ptr null)
  %3 = call i32 @hipMallocPitch(ptr %p, ptr %pitch, i64 64, i64 4)
  %4 = call i32 @hipMalloc3D(ptr %pp, ptr byval(%struct.hipExtent) align 8 %extent)
  %5 = call i32 @hipMallocManaged(ptr %p, i64 256, i32 1)
  %6 = call i32 @hipMallocFromPoolAsync(ptr %p, i64 256, ptr %pool, ptr null)
  %7 = call i32 @hipMemCreate(ptr %h, i64 2097152, ptr %prop, i64 0)
  %8 = call i32 @hipMemRelease(ptr %handle)
  %9 = call i32 @hipFreeAsync(ptr %buf, ptr null)
  %10 = call i32 @hipFree(ptr %buf)
  ret i32 %10
}

define void @pointers(ptr %slot) {
  store ptr @cudaFree, ptr %slot
  %fn = load ptr, ptr %slot
  %1 = call i32 %fn(ptr null)
  ret void
}

define i32 @invokes(ptr %p) personality ptr @__gxx_personality_v0 {
  %r = invoke i32 @cudaMalloc(ptr %p, i64 16)
          to label %ok unwind label %lpad
ok:
  ret i32 %r
lpad:
  %lp = landingpad { ptr, i32 } cleanup
  resume { ptr, i32 } %lp
}

declare i32 @cudaMalloc(ptr noundef, i64 noundef) nounwind
declare i32 @cudaFree(ptr noundef)
declare i32 @cudaMallocAsync(ptr noundef, i64 noundef, ptr noundef)
declare i32 @cudaFreeAsync(ptr noundef, ptr noundef)
declare i32 @cudaMallocPitch(ptr noundef, ptr noundef, i64 noundef, i64 noundef)
declare i32 @cudaMalloc3D(ptr noundef, ptr noundef byval(%struct.cudaExtent) align 8)
declare i32 @cudaMallocManaged(ptr noundef, i64 noundef, i32 noundef)
declare i32 @cuMemAlloc_v2(ptr noundef, i64 noundef)
declare i32 @cuMemAllocPitch_v2(ptr noundef, ptr noundef, i64 noundef, i64 noundef, i32 noundef)
declare i32 @cuMemAllocAsync(ptr noundef, i64 noundef, ptr noundef)
declare i32 @cuMemAllocManaged(ptr noundef, i64 noundef, i32 noundef)
declare i32 @cuMemFree_v2(i64 noundef)
declare i32 @cuMemFreeAsync(i64 noundef, ptr noundef)
declare i32 @hipMalloc(ptr noundef, i64 noundef)
declare i32 @hipFree(ptr noundef)
declare i32 @hipMallocAsync(ptr noundef, i64 noundef, ptr noundef)
declare i32 @hipFreeAsync(ptr noundef, ptr noundef)
declare i32 @hipMallocPitch(ptr noundef, ptr noundef, i64 noundef, i64 noundef)
declare i32 @hipMalloc3D(ptr noundef, ptr noundef byval(%struct.hipExtent) align 8)
declare i32 @hipMallocManaged(ptr noundef, i64 noundef, i32 noundef)
declare i32 @cudaMemcpy(ptr, ptr, i64, i32)
declare i32 @cudaMallocHost(ptr, i64)
declare i32 @cudaMallocAsync_ptsz(ptr, i64, ptr)
declare i32 @cudaMallocFromPoolAsync(ptr, i64, ptr, ptr)
declare i32 @cudaMallocFromPoolAsync_ptsz(ptr, i64, ptr, ptr)
declare i32 @cudaFreeAsync_ptsz(ptr, ptr)
declare i32 @cuMemAlloc(ptr, i32)
declare i32 @cuMemAllocAsync_ptsz(ptr, i64, ptr)
declare i32 @cuMemAllocFromPoolAsync(ptr, i64, ptr, ptr)
declare i32 @cuMemAllocFromPoolAsync_ptsz(ptr, i64, ptr, ptr)
declare i32 @cuMemFreeAsync_ptsz(i64, ptr)
declare i32 @cuMemCreate(ptr, i64, ptr, i64)
declare i32 @cuMemMap(i64, i64, i64, i64, i64)
declare i32 @cuMemRelease(i64)
declare i32 @hipMallocFromPoolAsync(ptr, i64, ptr, ptr)
declare i32 @hipMemCreate(ptr, i64, ptr, i64)
declare i32 @hipMemRelease(ptr)
declare i32 @__gxx_personality_v0(...)
