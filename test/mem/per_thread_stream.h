/* per_thread_stream.h: mem_client's stream-ordered allocations as a program built for the per-thread default stream
 * makes them (schedGPU §4: each allocation API admitted; per_thread_stream.c says how the spellings are chosen). */
#ifndef PREEMPT_TEST_PER_THREAD_STREAM_H
#define PREEMPT_TEST_PER_THREAD_STREAM_H

#include <cuda.h>
#include <cuda_runtime_api.h>

/* On the per-thread default stream (stream 0), through the _ptsz entry points. */
cudaError_t per_thread_malloc_async(void **pointer, size_t bytes);
cudaError_t per_thread_malloc_from_pool_async(void **pointer, size_t bytes, cudaMemPool_t pool);
cudaError_t per_thread_free_async(void *pointer);
CUresult per_thread_mem_alloc_async(CUdeviceptr *pointer, size_t bytes);
CUresult per_thread_mem_alloc_from_pool_async(CUdeviceptr *pointer, size_t bytes, CUmemoryPool pool);
CUresult per_thread_mem_free_async(CUdeviceptr pointer);

#endif
