// HIP host side, at -O0 and -O2: hipMalloc and friends go to the runtime's preempt_<name>
// wrappers, also through a template overload like hip_runtime_api.h's (an internal function
// calling the C API, kept at -O0); hipExtent keeps being passed byval. Pools' and virtual
// memory management's physical allocations too; mapping them (hipMemMap) takes no memory.
// RUN: %clang -x hip --cuda-host-only -nogpuinc -O0 -S -emit-llvm -fpass-plugin=%plugin -Rpass=preempt %s -o %t.O0.ll 2>%t.O0.remarks
// RUN: %FileCheck %s --check-prefixes=CHECK,O0 < %t.O0.ll
// RUN: %FileCheck %s --check-prefix=GONE < %t.O0.ll
// RUN: %FileCheck %s --check-prefix=REMARK < %t.O0.remarks
// RUN: %clang -x hip --cuda-host-only -nogpuinc -O2 -S -emit-llvm -fpass-plugin=%plugin -Rpass=preempt %s -o %t.O2.ll 2>%t.O2.remarks
// RUN: %FileCheck %s --check-prefixes=CHECK,O2 < %t.O2.ll
// RUN: %FileCheck %s --check-prefix=GONE < %t.O2.ll
// RUN: %FileCheck %s --check-prefix=REMARK < %t.O2.remarks
// RUN: %clang -x hip --cuda-host-only -nogpuinc -O2 -S -emit-llvm -fpass-plugin=%plugin -mllvm -preempt-memory-admission=false %s -o %t.off.ll
// RUN: %FileCheck %s --check-prefix=OFF < %t.off.ll
// RUN: %FileCheck %s --check-prefix=OFF-GONE < %t.off.ll

// CHECK-LABEL: define {{.*}} @_Z9alloc_all{{[A-Za-z0-9_]*}}(
// O0: call {{.*}} @_ZL9hipMallocIfEiPPT_m(
// O2: call {{.*}} @preempt_hipMalloc(
// CHECK: call i32 @preempt_hipMallocAsync(
// CHECK: call i32 @preempt_hipMallocPitch(
// CHECK: call i32 @preempt_hipMalloc3D(ptr {{.*}}, ptr {{.*}}byval(%struct.hipExtent) align 8
// CHECK: call i32 @preempt_hipMallocManaged(
// CHECK: call i32 @hipHostMalloc(
// CHECK: call i32 @preempt_hipMallocFromPoolAsync(
// CHECK: call i32 @preempt_hipMemCreate(
// CHECK: call i32 @hipMemMap(
// CHECK: call i32 @preempt_hipMemRelease(
// CHECK: call i32 @preempt_hipFreeAsync(
// CHECK: call i32 @preempt_hipFree(
// O0: define internal {{.*}} @_ZL9hipMallocIfEiPPT_m(
// O0: call i32 @preempt_hipMalloc(
// CHECK: declare i32 @preempt_hipMalloc3D(ptr noundef, ptr noundef byval(%struct.hipExtent) align 8)

// GONE-NOT: {{@(hipMalloc|hipFree|hipMallocAsync|hipFreeAsync|hipMallocPitch|hipMalloc3D|hipMallocManaged)[^_A-Za-z0-9]}}
// GONE-NOT: {{@(hipMallocFromPoolAsync|hipMemCreate|hipMemRelease)[^_A-Za-z0-9]}}

// REMARK-DAG: remark: hipMalloc routed to preempt_hipMalloc (memory admission)
// REMARK-DAG: remark: hipFree routed to preempt_hipFree (memory admission)
// REMARK-DAG: remark: hipMallocAsync routed to preempt_hipMallocAsync (memory admission)
// REMARK-DAG: remark: hipFreeAsync routed to preempt_hipFreeAsync (memory admission)
// REMARK-DAG: remark: hipMallocPitch routed to preempt_hipMallocPitch (memory admission)
// REMARK-DAG: remark: hipMalloc3D routed to preempt_hipMalloc3D (memory admission)
// REMARK-DAG: remark: hipMallocManaged routed to preempt_hipMallocManaged (memory admission)
// REMARK-DAG: remark: hipMallocFromPoolAsync routed to preempt_hipMallocFromPoolAsync (memory admission)
// REMARK-DAG: remark: hipMemCreate routed to preempt_hipMemCreate (memory admission)
// REMARK-DAG: remark: hipMemRelease routed to preempt_hipMemRelease (memory admission)
// REMARK-NOT: hipMemMap

// OFF: call {{.*}} @hipMalloc(
// OFF: call i32 @hipMalloc3D(
// OFF: call i32 @hipMemCreate(
// OFF-GONE-NOT: @preempt_hip

// What hip_runtime_api.h declares for these calls (no HIP headers needed).
typedef __SIZE_TYPE__ size_t;
typedef int hipError_t;
typedef struct ihipStream_t *hipStream_t;
typedef struct ihipMemPoolHandle_t *hipMemPool_t;
typedef struct ihipMemGenericAllocationHandle *hipMemGenericAllocationHandle_t;
struct hipMemAllocationProp;
struct hipExtent {
  size_t width, height, depth;
};
struct hipPitchedPtr {
  void *ptr;
  size_t pitch, xsize, ysize;
};
extern "C" hipError_t hipMalloc(void **ptr, size_t size);
extern "C" hipError_t hipFree(void *ptr);
extern "C" hipError_t hipMallocAsync(void **ptr, size_t size, hipStream_t stream);
extern "C" hipError_t hipFreeAsync(void *ptr, hipStream_t stream);
extern "C" hipError_t hipMallocPitch(void **ptr, size_t *pitch, size_t width, size_t height);
extern "C" hipError_t hipMalloc3D(hipPitchedPtr *pitchedDevPtr, hipExtent extent);
extern "C" hipError_t hipMallocManaged(void **ptr, size_t size, unsigned flags = 1);
extern "C" hipError_t hipHostMalloc(void **ptr, size_t size, unsigned flags);
extern "C" hipError_t hipMallocFromPoolAsync(void **ptr, size_t size, hipMemPool_t pool, hipStream_t stream);
extern "C" hipError_t hipMemCreate(hipMemGenericAllocationHandle_t *handle, size_t size,
                                   const hipMemAllocationProp *prop, unsigned long long flags);
extern "C" hipError_t hipMemMap(void *ptr, size_t size, size_t offset, hipMemGenericAllocationHandle_t handle,
                                unsigned long long flags);
extern "C" hipError_t hipMemRelease(hipMemGenericAllocationHandle_t handle);
template <class T> static inline hipError_t hipMalloc(T **devPtr, size_t size) {
  return hipMalloc((void **)devPtr, size);
}

float *alloc_all(size_t n, hipMemPool_t pool, const hipMemAllocationProp *prop) {
  float *p, *host;
  hipMemGenericAllocationHandle_t handle;
  size_t pitch;
  hipPitchedPtr pitched;
  hipMalloc(&p, n);
  hipMallocAsync((void **)&p, n, 0);
  hipMallocPitch((void **)&p, &pitch, n, 4);
  hipMalloc3D(&pitched, hipExtent{n, 2, 3});
  hipMallocManaged((void **)&p, n);
  hipHostMalloc((void **)&host, n, 0); // pinned host memory: not routed
  hipMallocFromPoolAsync((void **)&p, n, pool, 0);
  hipMemCreate(&handle, n, prop, 0);
  hipMemMap(p, n, 0, handle, 0);
  hipMemRelease(handle);
  hipFreeAsync(p, 0);
  hipFree(p);
  return host;
}
