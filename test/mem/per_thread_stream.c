/* per_thread_stream.c: mem_client's stream-ordered allocations built as under nvcc --default-stream per-thread.
 * schedGPU §4 (every allocation API admitted): the headers, not this file, pick the _ptsz entry points. */
/* nvcc --default-stream per-thread defines this; cuda_runtime_api.h and cuda.h then rename cudaMallocAsync,
 * cuMemAllocAsync, ... to their _ptsz spellings, which is what the wrappers must catch. */
#define CUDA_API_PER_THREAD_DEFAULT_STREAM
#include "per_thread_stream.h"

#if !defined(__CUDART_API_PER_THREAD_DEFAULT_STREAM) || !defined(__CUDA_API_PER_THREAD_DEFAULT_STREAM)
#error "the CUDA headers did not switch to the per-thread default stream's spellings"
#endif

cudaError_t per_thread_malloc_async(void **pointer, size_t bytes) { return cudaMallocAsync(pointer, bytes, 0); }

cudaError_t per_thread_malloc_from_pool_async(void **pointer, size_t bytes, cudaMemPool_t pool) {
  return cudaMallocFromPoolAsync(pointer, bytes, pool, 0);
}

cudaError_t per_thread_free_async(void *pointer) { return cudaFreeAsync(pointer, 0); }

CUresult per_thread_mem_alloc_async(CUdeviceptr *pointer, size_t bytes) { return cuMemAllocAsync(pointer, bytes, 0); }

CUresult per_thread_mem_alloc_from_pool_async(CUdeviceptr *pointer, size_t bytes, CUmemoryPool pool) {
  return cuMemAllocFromPoolAsync(pointer, bytes, pool, 0);
}

CUresult per_thread_mem_free_async(CUdeviceptr pointer) { return cuMemFreeAsync(pointer, 0); }
