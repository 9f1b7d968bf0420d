// Host side of a CUDA file: its synchronous copies go to the runtime's preempt_<name> wrappers, which wait for the
// program's preemptible launches before copying (runtime-host/sync_copies_cuda.c: a copy waiting for an evicted
// launch blocks every CUDA call of the thread that would resume it). cuda_runtime.h's template overloads of
// cudaMemcpyToSymbol and cudaMemcpyFromSymbol call the C functions, which are routed; per-thread default-stream
// builds reach the _ptds/_ptsz spellings. -mllvm -preempt-sync-copies=0 leaves every copy alone.
// RUN: %clang %cuda_flags --cuda-host-only -O0 -S -emit-llvm -Rpass=preempt %s -o %t.ll 2>%t.remarks
// RUN: %FileCheck %s < %t.ll
// RUN: %FileCheck %s --check-prefix=GONE < %t.ll
// RUN: %FileCheck %s --check-prefix=REMARK < %t.remarks
// RUN: %clang %cuda_flags --cuda-host-only -fgpu-default-stream=per-thread -DCUDA_API_PER_THREAD_DEFAULT_STREAM \
// RUN:   -O2 -S -emit-llvm %s -o - | %FileCheck %s --check-prefix=PTDS
// RUN: %clang %cuda_flags --cuda-host-only -O2 -S -emit-llvm -mllvm -preempt-sync-copies=0 %s -o - \
// RUN:   | %FileCheck %s --check-prefix=OFF

// CHECK-LABEL: define {{.*}} @_Z8copy_allPfS_P11CUstream_st(
// CHECK: call i32 @preempt_cudaMemcpy(
// CHECK: call i32 @preempt_cudaMemcpy2D(
// CHECK: call i32 @preempt_cudaMemcpyAsync(
// CHECK: call {{.*}}cudaMemcpyToSymbol
// CHECK: call {{.*}}cudaMemcpyFromSymbol
// CHECK: call i32 @preempt_cudaMemcpyToSymbol(
// CHECK: call i32 @preempt_cudaMemcpyFromSymbol(
// GONE-NOT: {{@cudaMemcpy(2D|Async|ToSymbol|FromSymbol)?\(}}
// REMARK-DAG: remark: cudaMemcpy routed to preempt_cudaMemcpy (waits for preemptible launches first)
// REMARK-DAG: remark: cudaMemcpyAsync routed to preempt_cudaMemcpyAsync (waits for preemptible launches first)
// REMARK-DAG: remark: cudaMemcpyToSymbol routed to preempt_cudaMemcpyToSymbol (waits for preemptible launches first)
// PTDS-DAG: call {{.*}}i32 @preempt_cudaMemcpy_ptds(
// PTDS-DAG: call {{.*}}i32 @preempt_cudaMemcpyAsync_ptsz(
// PTDS-DAG: call {{.*}}i32 @preempt_cudaMemcpyToSymbol_ptds(
// OFF: call {{.*}}i32 @cudaMemcpy(
// OFF-NOT: preempt_cudaMemcpy

__constant__ float table[16];
__device__ float result[16];
__global__ void k(float *data) { data[blockIdx.x] = table[blockIdx.x]; }

void copy_all(float *device, float *host, cudaStream_t stream) {
  cudaMemcpy(device, host, 64, cudaMemcpyHostToDevice);
  cudaMemcpy2D(device, 64, host, 64, 64, 1, cudaMemcpyHostToDevice);
  cudaMemcpyAsync(host, device, 64, cudaMemcpyDeviceToHost, stream);
  cudaMemcpyToSymbol(table, host, 64);    // cuda_runtime.h's template overload
  cudaMemcpyFromSymbol(host, result, 64); // likewise
  k<<<16, 1, 0, stream>>>(device);
}
