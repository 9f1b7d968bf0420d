// Host side of a CUDA file, at -O0 and -O2: every device-memory allocation and release goes to
// the runtime's preempt_<name> wrapper, also those made through cuda_runtime.h's template
// overloads (internal functions that call the C API, kept as functions at -O0) and through
// cuda.h's macros (cuMemAlloc is cuMemAlloc_v2 before IR exists). The launch is still routed.
// RUN: %clang %cuda_flags --cuda-host-only -O0 -fexceptions -S -emit-llvm -Rpass=preempt %s -o %t.O0.ll 2>%t.O0.remarks
// RUN: %FileCheck %s --check-prefixes=CHECK,O0 < %t.O0.ll
// RUN: %FileCheck %s --check-prefix=GONE < %t.O0.ll
// RUN: %FileCheck %s --check-prefix=LAUNCH < %t.O0.ll
// RUN: %FileCheck %s --check-prefix=REMARK < %t.O0.remarks
// RUN: grep -c "routed to preempt_" %t.O0.remarks | %FileCheck %s --check-prefix=COUNT
// RUN: %clang %cuda_flags --cuda-host-only -O2 -fexceptions -S -emit-llvm -Rpass=preempt %s -o %t.O2.ll 2>%t.O2.remarks
// RUN: %FileCheck %s --check-prefixes=CHECK,O2 < %t.O2.ll
// RUN: %FileCheck %s --check-prefix=GONE < %t.O2.ll
// RUN: %FileCheck %s --check-prefix=LAUNCH < %t.O2.ll
// RUN: %FileCheck %s --check-prefix=REMARK < %t.O2.remarks
// RUN: grep -c "routed to preempt_" %t.O2.remarks | %FileCheck %s --check-prefix=COUNT
// RUN: %clang %cuda_flags --cuda-host-only -O0 -fexceptions -S -emit-llvm -mllvm -preempt-memory-admission=false %s -o %t.off.ll
// RUN: %FileCheck %s --check-prefix=OFF < %t.off.ll
// RUN: %FileCheck %s --check-prefix=OFF-GONE < %t.off.ll

// O0-LABEL: define {{.*}} @_Z9alloc_allm(
// O0: call {{.*}} @_ZL10cudaMallocIfE9cudaErrorPPT_m(
// O0: call {{.*}} @_ZL15cudaMallocPitchIfE9cudaErrorPPT_Pmmm(
// O0: call i32 @preempt_cudaMalloc3D(ptr {{.*}}, ptr {{.*}}byval(%struct.cudaExtent) align 8
// O0: call {{.*}} @_ZL17cudaMallocManagedIfE9cudaErrorPPT_mj(
// O0: call i32 @preempt_cuMemAlloc_v2(
// O0: call i32 @cudaMallocHost(
// O0: call i32 @preempt_cuMemFree_v2(
// O0: call i32 @preempt_cudaFree(

// O2-LABEL: define {{.*}} @_Z9alloc_allm(
// O2: call {{.*}} @preempt_cudaMalloc(
// O2: call {{.*}} @preempt_cudaMallocPitch(
// O2: call i32 @preempt_cudaMalloc3D(ptr {{.*}}, ptr {{.*}}byval(%struct.cudaExtent) align 8
// O2: call {{.*}} @preempt_cudaMallocManaged(
// O2: call i32 @preempt_cuMemAlloc_v2(
// O2: call i32 @cudaMallocHost(
// O2: call i32 @preempt_cuMemFree_v2(
// O2: call i32 @preempt_cudaFree(

// The template overloads are internal to each file; at -O0 they call the wrappers.
// O0: define internal {{.*}} @_ZL10cudaMallocIfE9cudaErrorPPT_m(
// O0: call i32 @preempt_cudaMalloc(
// O0: define internal {{.*}} @_ZL15cudaMallocPitchIfE9cudaErrorPPT_Pmmm(
// O0: call i32 @preempt_cudaMallocPitch(
// O0: define internal {{.*}} @_ZL17cudaMallocManagedIfE9cudaErrorPPT_mj(
// O0: call i32 @preempt_cudaMallocManaged(
// O2-NOT: define internal {{.*}}cudaMalloc

// CHECK-LABEL: define {{.*}} @_Z10with_guardPPv(
// CHECK: invoke {{.*}} @preempt_cudaMalloc(

// CHECK: declare i32 @preempt_cudaMalloc3D(ptr noundef, ptr noundef byval(%struct.cudaExtent) align 8)

// LAUNCH: call {{.*}} @preempt_launch_kernel(

// GONE-NOT: {{@(cudaMalloc|cudaFree|cudaMallocPitch|cudaMalloc3D|cudaMallocManaged|cuMemAlloc_v2|cuMemFree_v2)[^_A-Za-z0-9]}}

// The first call to a template's C API is in the header, at either level (inlined calls keep their location).
// REMARK-DAG: cuda_runtime.h:{{[0-9]+}}:{{[0-9]+}}: remark: cudaMalloc routed to preempt_cudaMalloc (memory admission)
// REMARK-DAG: cuda_runtime.h:{{[0-9]+}}:{{[0-9]+}}: remark: cudaMallocPitch routed to preempt_cudaMallocPitch (memory admission)
// REMARK-DAG: cuda_runtime.h:{{[0-9]+}}:{{[0-9]+}}: remark: cudaMallocManaged routed to preempt_cudaMallocManaged (memory admission)
// REMARK-DAG: remark: launch of kernel '_Z16__device_stub__kPf' routed to the preempt runtime
// COUNT: {{^}}7{{$}}

// OFF: call {{.*}} @preempt_launch_kernel(
// OFF: call i32 @cuMemAlloc_v2(
// OFF: call i32 @cudaMalloc(
// OFF-GONE-NOT: {{@preempt_(cuda|cu|hip)}}

#include <cuda.h>

__global__ void k(float *data) { data[blockIdx.x] = 1; }

struct Guard {
  ~Guard();
};

float *alloc_all(size_t n) {
  float *p, *host;
  size_t pitch;
  cudaPitchedPtr pitched;
  CUdeviceptr d;
  cudaMalloc(&p, n);
  cudaMallocPitch(&p, &pitch, n, 4);
  // REMARK-DAG: alloc_rewrite.cu:[[@LINE+1]]:{{[0-9]+}}: remark: cudaMalloc3D routed to preempt_cudaMalloc3D (memory admission)
  cudaMalloc3D(&pitched, make_cudaExtent(n, 2, 3));
  cudaMallocManaged(&p, n);
  // REMARK-DAG: alloc_rewrite.cu:[[@LINE+1]]:{{[0-9]+}}: remark: cuMemAlloc_v2 routed to preempt_cuMemAlloc_v2 (memory admission)
  cuMemAlloc(&d, n);
  cudaMallocHost((void **)&host, n); // pinned host memory: not device memory, not routed
  // REMARK-DAG: alloc_rewrite.cu:[[@LINE+1]]:{{[0-9]+}}: remark: cuMemFree_v2 routed to preempt_cuMemFree_v2 (memory admission)
  cuMemFree(d);
  // REMARK-DAG: alloc_rewrite.cu:[[@LINE+1]]:{{[0-9]+}}: remark: cudaFree routed to preempt_cudaFree (memory admission)
  cudaFree(p);
  return host;
}

void with_guard(void **p) {
  Guard guard; // the allocation becomes an invoke: it may throw past the destructor
  cudaMalloc(p, 16);
  k<<<1, 32>>>((float *)*p);
}
