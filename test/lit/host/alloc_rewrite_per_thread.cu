// A CUDA file built for the per-thread default stream: the stream-ordered allocations reach the
// runtime as their _ptsz entry points (cuda_runtime.h's pool overload of cudaMallocAsync
// included, an internal function calling cudaMallocFromPoolAsync_ptsz) and are routed to
// those entry points' own wrappers, at -O0 and -O2; the launch is still routed.
// clang-22's CUDA mode does not define CUDA_API_PER_THREAD_DEFAULT_STREAM for
// -fgpu-default-stream=per-thread (nvcc's --default-stream per-thread does), so the build
// names it too; the last RUN line shows the flag alone leaves the legacy spellings.
// RUN: %clang %cuda_flags --cuda-host-only -fgpu-default-stream=per-thread -DCUDA_API_PER_THREAD_DEFAULT_STREAM \
// RUN:   -O0 -S -emit-llvm -Rpass=preempt %s -o %t.O0.ll 2>%t.O0.remarks
// RUN: %FileCheck %s --check-prefixes=CHECK,O0 < %t.O0.ll
// RUN: %FileCheck %s --check-prefix=GONE < %t.O0.ll
// RUN: %FileCheck %s --check-prefix=LAUNCH < %t.O0.ll
// RUN: %FileCheck %s --check-prefix=REMARK < %t.O0.remarks
// RUN: %clang %cuda_flags --cuda-host-only -fgpu-default-stream=per-thread -DCUDA_API_PER_THREAD_DEFAULT_STREAM \
// RUN:   -O2 -S -emit-llvm -Rpass=preempt %s -o %t.O2.ll 2>%t.O2.remarks
// RUN: %FileCheck %s --check-prefixes=CHECK,O2 < %t.O2.ll
// RUN: %FileCheck %s --check-prefix=GONE < %t.O2.ll
// RUN: %FileCheck %s --check-prefix=LAUNCH < %t.O2.ll
// RUN: %FileCheck %s --check-prefix=REMARK < %t.O2.remarks
// RUN: %clang %cuda_flags --cuda-host-only -fgpu-default-stream=per-thread -O0 -S -emit-llvm %s -o - \
// RUN:   | %FileCheck %s --check-prefix=LEGACY

// CHECK-LABEL: define {{.*}} @_Z9alloc_allP11CUstream_stP18CUmemPoolHandle_st(
// CHECK: call i32 @preempt_cudaMallocAsync_ptsz(
// O0: call {{.*}} @_ZL20cudaMallocAsync_ptszPPvmP18CUmemPoolHandle_stP11CUstream_st(
// O2: call {{.*}} @preempt_cudaMallocFromPoolAsync_ptsz(
// CHECK: call i32 @preempt_cudaMallocFromPoolAsync_ptsz(
// CHECK: call i32 @preempt_cuMemAllocAsync_ptsz(
// CHECK: call i32 @preempt_cuMemAllocFromPoolAsync_ptsz(
// CHECK: call i32 @preempt_cuMemFreeAsync_ptsz(
// CHECK: call i32 @preempt_cudaFreeAsync_ptsz(
// O0: define internal {{.*}} @_ZL20cudaMallocAsync_ptszPPvmP18CUmemPoolHandle_stP11CUstream_st(
// O0: call i32 @preempt_cudaMallocFromPoolAsync_ptsz(

// LAUNCH: call {{.*}} @preempt_launch_kernel(

// GONE-NOT: {{@(cudaMallocAsync|cudaFreeAsync|cudaMallocFromPoolAsync|cuMemAllocAsync|cuMemAllocFromPoolAsync|cuMemFreeAsync)(_ptsz)?[^_A-Za-z0-9]}}

// REMARK-DAG: remark: cudaMallocAsync_ptsz routed to preempt_cudaMallocAsync_ptsz (memory admission)
// REMARK-DAG: remark: cudaMallocFromPoolAsync_ptsz routed to preempt_cudaMallocFromPoolAsync_ptsz (memory admission)
// REMARK-DAG: remark: cudaFreeAsync_ptsz routed to preempt_cudaFreeAsync_ptsz (memory admission)
// REMARK-DAG: remark: cuMemAllocAsync_ptsz routed to preempt_cuMemAllocAsync_ptsz (memory admission)
// REMARK-DAG: remark: cuMemAllocFromPoolAsync_ptsz routed to preempt_cuMemAllocFromPoolAsync_ptsz (memory admission)
// REMARK-DAG: remark: cuMemFreeAsync_ptsz routed to preempt_cuMemFreeAsync_ptsz (memory admission)

// LEGACY: call i32 @preempt_cudaMallocAsync(
// LEGACY-NOT: _ptsz

#include <cuda.h>

__global__ void k(float *data) { data[blockIdx.x] = 1; }

void alloc_all(cudaStream_t stream, cudaMemPool_t pool) {
  void *p;
  CUdeviceptr d;
  cudaMallocAsync(&p, 64, stream);
  cudaMallocAsync(&p, 64, pool, stream); // cuda_runtime.h's overload: cudaMallocFromPoolAsync
  cudaMallocFromPoolAsync(&p, 64, pool, stream);
  cuMemAllocAsync(&d, 64, 0);
  cuMemAllocFromPoolAsync(&d, 64, (CUmemoryPool)pool, 0);
  cuMemFreeAsync(d, 0);
  cudaFreeAsync(p, stream);
  k<<<1, 32, 0, stream>>>((float *)p);
}
