/* sync_copies_cuda.c: a program's synchronous copies wait for its preemptible launches first, where waiting holds
 * no lock. FLEP §4.1 (an evicted kernel is resumed by the host), issue 39 (no program that passes as written hangs).
 *
 * Measured on the H200 (driver 580, bench/results/2026-11-28-h200-sync-copy-deadlock/): while one thread is in a
 * synchronous cudaMemcpy (pageable or pinned, either direction; cudaMemcpyAsync from pageable memory too) waiting
 * for work on the GPU, every CUDA call of every other thread of the process blocks, launches and event queries
 * included; cudaStreamSynchronize, cudaDeviceSynchronize, cudaEventSynchronize and cudaMemset do not block them.
 * An evicted or held launch needs another thread (the stress thread, preemptd's agent, the relaunch thread) to
 * call CUDA before it can finish, so a copy that waits for it deadlocks the process (simpleStreams and
 * LargeKernelParameter under PREEMPT_STRESS, with other processes on the GPU; radixSortThrust in Thrust's cudaFree,
 * which waits the same way: mem_intercept_cuda.c settles there too). The host pass routes these calls, and
 * cudaFreeHost and cudaHostUnregister, here (passes/SyncCopyRoute.cpp): when converted launches were enqueued since the last wait, the stream the copy
 * waits for is synchronized first with a call that leaves other threads free, then the copy runs with nothing
 * of the program's left to wait for. Copies that wait for nothing of the runtime's cost one atomic load. */
#include <cuda.h>
#include <cuda_runtime_api.h>

#include "runtime.h"

/* The per-thread default stream's spellings (declared by cuda_runtime_api.h only under
 * CUDA_API_PER_THREAD_DEFAULT_STREAM). */
extern cudaError_t CUDARTAPI cudaMemcpy_ptds(void *, const void *, size_t, enum cudaMemcpyKind);
extern cudaError_t CUDARTAPI cudaMemcpy2D_ptds(void *, size_t, const void *, size_t, size_t, size_t,
                                               enum cudaMemcpyKind);
extern cudaError_t CUDARTAPI cudaMemcpyToSymbol_ptds(const void *, const void *, size_t, size_t, enum cudaMemcpyKind);
extern cudaError_t CUDARTAPI cudaMemcpyFromSymbol_ptds(void *, const void *, size_t, size_t, enum cudaMemcpyKind);
extern cudaError_t CUDARTAPI cudaMemcpyAsync_ptsz(void *, const void *, size_t, enum cudaMemcpyKind, cudaStream_t);

/* preempt_tracked_launches when the device was last found idle by a wait here. */
static uint64_t settled_launches;

/* The legacy default stream's copies wait for it and for every blocking stream: the whole device is waited for
 * (a non-blocking stream's work too, which only costs time). Another stream's copy waits for that stream. */
static cudaError_t settle(cudaStream_t stream, int legacy) {
  uint64_t launched = __atomic_load_n(&preempt_tracked_launches, __ATOMIC_ACQUIRE);
  if (launched == __atomic_load_n(&settled_launches, __ATOMIC_RELAXED))
    return cudaSuccess;
  if (!legacy)
    return cudaStreamSynchronize(stream);
  cudaError_t status = cudaDeviceSynchronize();
  if (status == cudaSuccess)
    __atomic_store_n(&settled_launches, launched, __ATOMIC_RELAXED);
  return status;
}

int preempt_settle_device(void) { return settle(0, 1); }

/* A stream handle as a copy call names it: 0 (cudaStreamLegacy under the legacy spelling) is the legacy stream. */
static int is_legacy(cudaStream_t stream, int per_thread_spelling) {
  if (stream == cudaStreamLegacy)
    return 1;
  return stream == 0 && !per_thread_spelling;
}

/* Host memory CUDA did not pin: an asynchronous copy from or to it is synchronous (it waits for the stream). */
static int pageable(const void *pointer) {
  struct cudaPointerAttributes attributes;
  if (cudaPointerGetAttributes(&attributes, pointer) != cudaSuccess) {
    cudaGetLastError(); /* the query's failure is not the program's */
    return 1;
  }
  return attributes.type == cudaMemoryTypeUnregistered;
}

static int waits_like_a_sync_copy(const void *destination, const void *source, enum cudaMemcpyKind kind) {
  switch (kind) {
  case cudaMemcpyHostToDevice: return pageable(source);
  case cudaMemcpyDeviceToHost: return pageable(destination);
  case cudaMemcpyHostToHost: return 0;
  case cudaMemcpyDeviceToDevice: return 0;
  default: return pageable(source) || pageable(destination);
  }
}

/* A failed wait is the copy's own error: the copy would have met the same fault. */
#define SETTLE_OR_RETURN(stream, legacy)                                                                               \
  do {                                                                                                                 \
    cudaError_t settled_ = settle((stream), (legacy));                                                                 \
    if (settled_ != cudaSuccess)                                                                                       \
      return settled_;                                                                                                 \
  } while (0)

cudaError_t CUDARTAPI preempt_cudaMemcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind) {
  SETTLE_OR_RETURN(0, 1);
  return cudaMemcpy(dst, src, count, kind);
}

cudaError_t CUDARTAPI preempt_cudaMemcpy_ptds(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind) {
  SETTLE_OR_RETURN(cudaStreamPerThread, 0);
  return cudaMemcpy_ptds(dst, src, count, kind);
}

cudaError_t CUDARTAPI preempt_cudaMemcpy2D(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                                           size_t height, enum cudaMemcpyKind kind) {
  SETTLE_OR_RETURN(0, 1);
  return cudaMemcpy2D(dst, dpitch, src, spitch, width, height, kind);
}

cudaError_t CUDARTAPI preempt_cudaMemcpy2D_ptds(void *dst, size_t dpitch, const void *src, size_t spitch,
                                                size_t width, size_t height, enum cudaMemcpyKind kind) {
  SETTLE_OR_RETURN(cudaStreamPerThread, 0);
  return cudaMemcpy2D_ptds(dst, dpitch, src, spitch, width, height, kind);
}

/* Releasing or unregistering pinned host memory waits for the device like cudaFree. */
cudaError_t CUDARTAPI preempt_cudaFreeHost(void *pointer) {
  SETTLE_OR_RETURN(0, 1);
  return cudaFreeHost(pointer);
}

cudaError_t CUDARTAPI preempt_cudaHostUnregister(void *pointer) {
  SETTLE_OR_RETURN(0, 1);
  return cudaHostUnregister(pointer);
}

cudaError_t CUDARTAPI preempt_cudaMemcpyToSymbol(const void *symbol, const void *src, size_t count, size_t offset,
                                                 enum cudaMemcpyKind kind) {
  SETTLE_OR_RETURN(0, 1);
  return cudaMemcpyToSymbol(symbol, src, count, offset, kind);
}

cudaError_t CUDARTAPI preempt_cudaMemcpyToSymbol_ptds(const void *symbol, const void *src, size_t count,
                                                      size_t offset, enum cudaMemcpyKind kind) {
  SETTLE_OR_RETURN(cudaStreamPerThread, 0);
  return cudaMemcpyToSymbol_ptds(symbol, src, count, offset, kind);
}

cudaError_t CUDARTAPI preempt_cudaMemcpyFromSymbol(void *dst, const void *symbol, size_t count, size_t offset,
                                                   enum cudaMemcpyKind kind) {
  SETTLE_OR_RETURN(0, 1);
  return cudaMemcpyFromSymbol(dst, symbol, count, offset, kind);
}

cudaError_t CUDARTAPI preempt_cudaMemcpyFromSymbol_ptds(void *dst, const void *symbol, size_t count, size_t offset,
                                                        enum cudaMemcpyKind kind) {
  SETTLE_OR_RETURN(cudaStreamPerThread, 0);
  return cudaMemcpyFromSymbol_ptds(dst, symbol, count, offset, kind);
}

/* An asynchronous copy waits like a synchronous one only with pageable host memory, and only then settles. */
static cudaError_t settle_async(const void *dst, const void *src, enum cudaMemcpyKind kind, cudaStream_t stream,
                                int per_thread_spelling) {
  if (__atomic_load_n(&preempt_tracked_launches, __ATOMIC_ACQUIRE) ==
          __atomic_load_n(&settled_launches, __ATOMIC_RELAXED) ||
      !waits_like_a_sync_copy(dst, src, kind))
    return cudaSuccess;
  cudaStream_t waited = stream == 0 && per_thread_spelling ? cudaStreamPerThread : stream;
  /* A copy into a capture runs when the graph does, not now: nothing to wait for, and a wait would end the
   * capture with cudaErrorStreamCaptureUnsupported (graphMemoryNodes in the corpus). */
  enum cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(waited, &capture) != cudaSuccess || capture != cudaStreamCaptureStatusNone) {
    cudaGetLastError();
    return cudaSuccess;
  }
  return settle(waited, is_legacy(stream, per_thread_spelling));
}

cudaError_t CUDARTAPI preempt_cudaMemcpyAsync(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind,
                                              cudaStream_t stream) {
  cudaError_t settled = settle_async(dst, src, kind, stream, 0);
  return settled != cudaSuccess ? settled : cudaMemcpyAsync(dst, src, count, kind, stream);
}

cudaError_t CUDARTAPI preempt_cudaMemcpyAsync_ptsz(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind,
                                                   cudaStream_t stream) {
  cudaError_t settled = settle_async(dst, src, kind, stream, 1);
  return settled != cudaSuccess ? settled : cudaMemcpyAsync_ptsz(dst, src, count, kind, stream);
}
