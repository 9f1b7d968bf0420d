/* mem_intercept_cuda.c: CUDA's device-memory allocation and release calls, admitted against the GPU's ledger.
 * schedGPU §4: pre-allocation before each allocation, post-free after each release, implicit mode.
 *
 * Built twice from this one file:
 *  - into libpreempt_runtime.a, as preempt_<name> (preempt_cudaMalloc, ...): the host pass routes a program's
 *    calls there (passes/AllocationRewrite.cpp); the real calls are the program's own CUDA runtime, and the
 *    driver API where the program uses it.
 *  - into libpreempt_mem.so with PREEMPT_MEM_PRELOAD, under CUDA's own names, for LD_PRELOAD into unmodified
 *    binaries (schedGPU's implicit mode): the real calls are the next definitions, dlsym(RTLD_NEXT). A binary
 *    linked with the static CUDA runtime calls cudaMalloc inside itself, where no preload reaches: only its
 *    driver-API calls are admitted (docs/memory.md). */
#define _GNU_SOURCE
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <pthread.h>
#include <string.h>

#include "mem_handle_key.h"
#include "memory.h"
#ifndef PREEMPT_MEM_PRELOAD
#include "runtime.h" /* preempt_settle_device: the launch runtime's, absent from the preload library */
#endif

#ifdef PREEMPT_MEM_PRELOAD
#define WRAPPER(name) name
#define RUNTIME_SYMBOL(name) dlsym(RTLD_NEXT, #name)
#define DRIVER_SYMBOL(name) dlsym(RTLD_NEXT, #name)
#define EXPORTED __attribute__((visibility("default")))
#else
#define WRAPPER(name) preempt_##name
#define RUNTIME_SYMBOL(name) ((void *)&name)
/* A program that calls the driver API links libcuda; the runtime library itself must not require it. */
#define DRIVER_SYMBOL(name) dlsym(RTLD_DEFAULT, #name)
#define EXPORTED
#endif

/* The per-thread default stream's spellings of the stream-ordered calls: cuda_runtime_api.h renames the calls to
 * them under CUDA_API_PER_THREAD_DEFAULT_STREAM (nvcc --default-stream per-thread) and declares them only then. */
extern cudaError_t CUDARTAPI cudaMallocAsync_ptsz(void **, size_t, cudaStream_t);
extern cudaError_t CUDARTAPI cudaMallocFromPoolAsync_ptsz(void **, size_t, cudaMemPool_t, cudaStream_t);
extern cudaError_t CUDARTAPI cudaFreeAsync_ptsz(void *, cudaStream_t);
extern cudaError_t CUDARTAPI cudaStreamIsCapturing_ptsz(cudaStream_t, enum cudaStreamCaptureStatus *);
extern cudaError_t CUDARTAPI cudaLaunchHostFunc_ptsz(cudaStream_t, cudaHostFn_t, void *);

/* The stream-ordered calls of one default-stream spelling: legacy (cudaMallocAsync, ...) or per-thread
 * (cudaMallocAsync_ptsz, ...). A wrapper asks the capture state and enqueues its give-back with the spelling of
 * the call it wraps: stream 0 is the legacy default stream to one and this thread's own to the other. */
typedef struct runtime_stream_api {
  cudaError_t (*malloc_async)(void **, size_t, cudaStream_t);
  cudaError_t (*malloc_from_pool_async)(void **, size_t, cudaMemPool_t, cudaStream_t);
  cudaError_t (*free_async)(void *, cudaStream_t);
  cudaError_t (*is_capturing)(cudaStream_t, enum cudaStreamCaptureStatus *);
  cudaError_t (*launch_host_func)(cudaStream_t, cudaHostFn_t, void *);
} runtime_stream_api;

typedef struct driver_stream_api {
  CUresult (*mem_alloc_async)(CUdeviceptr *, size_t, CUstream);
  CUresult (*mem_alloc_from_pool_async)(CUdeviceptr *, size_t, CUmemoryPool, CUstream);
  CUresult (*mem_free_async)(CUdeviceptr, CUstream);
  CUresult (*is_capturing)(CUstream, CUstreamCaptureStatus *);
  CUresult (*launch_host_func)(CUstream, CUhostFn, void *);
} driver_stream_api;

/* The real functions, looked up once. */
static struct {
  cudaError_t (*cudaMalloc)(void **, size_t);
  cudaError_t (*cudaFree)(void *);
  cudaError_t (*cudaDeviceReset)(void);
  runtime_stream_api runtime_legacy, runtime_per_thread;
  cudaError_t (*cudaMallocPitch)(void **, size_t *, size_t, size_t);
  cudaError_t (*cudaMalloc3D)(struct cudaPitchedPtr *, struct cudaExtent);
  cudaError_t (*cudaMallocManaged)(void **, size_t, unsigned int);
  cudaError_t (*cudaGetDevice)(int *);
  cudaError_t (*cudaGetDeviceProperties)(struct cudaDeviceProp *, int);
  cudaError_t (*cudaMemGetInfo)(size_t *, size_t *);
  cudaError_t (*cudaPeekAtLastError)(void);
  cudaError_t (*cudaGetLastError)(void);
  CUresult (*cuMemAlloc_v2)(CUdeviceptr *, size_t);
  CUresult (*cuMemAllocPitch_v2)(CUdeviceptr *, size_t *, size_t, size_t, unsigned int);
  CUresult (*cuMemAllocManaged)(CUdeviceptr *, size_t, unsigned int);
  CUresult (*cuMemFree_v2)(CUdeviceptr);
  driver_stream_api driver_legacy, driver_per_thread;
  CUresult (*cuMemCreate)(CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *, unsigned long long);
  CUresult (*cuMemRelease)(CUmemGenericAllocationHandle);
  CUresult (*cuCtxGetDevice)(CUdevice *);
  CUresult (*cuDeviceGetUuid)(CUuuid *, CUdevice);
  CUresult (*cuMemGetInfo_v2)(size_t *, size_t *);
} real;

static pthread_once_t real_once = PTHREAD_ONCE_INIT;

static void load_real(void) {
  real.cudaMalloc = RUNTIME_SYMBOL(cudaMalloc);
  real.cudaFree = RUNTIME_SYMBOL(cudaFree);
  real.cudaDeviceReset = RUNTIME_SYMBOL(cudaDeviceReset);
  real.runtime_legacy = (runtime_stream_api){
      .malloc_async = RUNTIME_SYMBOL(cudaMallocAsync), .malloc_from_pool_async = RUNTIME_SYMBOL(cudaMallocFromPoolAsync),
      .free_async = RUNTIME_SYMBOL(cudaFreeAsync), .is_capturing = RUNTIME_SYMBOL(cudaStreamIsCapturing),
      .launch_host_func = RUNTIME_SYMBOL(cudaLaunchHostFunc)};
  real.runtime_per_thread = (runtime_stream_api){
      .malloc_async = RUNTIME_SYMBOL(cudaMallocAsync_ptsz),
      .malloc_from_pool_async = RUNTIME_SYMBOL(cudaMallocFromPoolAsync_ptsz),
      .free_async = RUNTIME_SYMBOL(cudaFreeAsync_ptsz), .is_capturing = RUNTIME_SYMBOL(cudaStreamIsCapturing_ptsz),
      .launch_host_func = RUNTIME_SYMBOL(cudaLaunchHostFunc_ptsz)};
  real.cudaMallocPitch = RUNTIME_SYMBOL(cudaMallocPitch);
  real.cudaMalloc3D = RUNTIME_SYMBOL(cudaMalloc3D);
  real.cudaMallocManaged = RUNTIME_SYMBOL(cudaMallocManaged);
  real.cudaGetDevice = RUNTIME_SYMBOL(cudaGetDevice);
  real.cudaGetDeviceProperties = RUNTIME_SYMBOL(cudaGetDeviceProperties);
  real.cudaMemGetInfo = RUNTIME_SYMBOL(cudaMemGetInfo);
  real.cudaPeekAtLastError = RUNTIME_SYMBOL(cudaPeekAtLastError);
  real.cudaGetLastError = RUNTIME_SYMBOL(cudaGetLastError);
  real.cuMemAlloc_v2 = DRIVER_SYMBOL(cuMemAlloc_v2);
  real.cuMemAllocPitch_v2 = DRIVER_SYMBOL(cuMemAllocPitch_v2);
  real.cuMemAllocManaged = DRIVER_SYMBOL(cuMemAllocManaged);
  real.cuMemFree_v2 = DRIVER_SYMBOL(cuMemFree_v2);
  real.driver_legacy = (driver_stream_api){
      .mem_alloc_async = DRIVER_SYMBOL(cuMemAllocAsync), .mem_alloc_from_pool_async = DRIVER_SYMBOL(cuMemAllocFromPoolAsync),
      .mem_free_async = DRIVER_SYMBOL(cuMemFreeAsync), .is_capturing = DRIVER_SYMBOL(cuStreamIsCapturing),
      .launch_host_func = DRIVER_SYMBOL(cuLaunchHostFunc)};
  real.driver_per_thread = (driver_stream_api){
      .mem_alloc_async = DRIVER_SYMBOL(cuMemAllocAsync_ptsz),
      .mem_alloc_from_pool_async = DRIVER_SYMBOL(cuMemAllocFromPoolAsync_ptsz),
      .mem_free_async = DRIVER_SYMBOL(cuMemFreeAsync_ptsz), .is_capturing = DRIVER_SYMBOL(cuStreamIsCapturing_ptsz),
      .launch_host_func = DRIVER_SYMBOL(cuLaunchHostFunc_ptsz)};
  real.cuMemCreate = DRIVER_SYMBOL(cuMemCreate);
  real.cuMemRelease = DRIVER_SYMBOL(cuMemRelease);
  real.cuCtxGetDevice = DRIVER_SYMBOL(cuCtxGetDevice);
  real.cuDeviceGetUuid = DRIVER_SYMBOL(cuDeviceGetUuid);
  real.cuMemGetInfo_v2 = DRIVER_SYMBOL(cuMemGetInfo_v2);
}

static void ensure_real(void) { pthread_once(&real_once, load_real); }

/* ---- what admission asks of each API */

static int runtime_current_device(int *device) {
  if (!real.cudaGetDevice)
    return -1;
  return real.cudaGetDevice(device);
}

static int runtime_device_uuid(int device, unsigned char uuid[16]) {
  struct cudaDeviceProp properties;
  if (!real.cudaGetDeviceProperties)
    return -1;
  cudaError_t status = real.cudaGetDeviceProperties(&properties, device);
  if (status == cudaSuccess)
    memcpy(uuid, properties.uuid.bytes, 16);
  return status;
}

static int runtime_memory_info(uint64_t *free_bytes, uint64_t *total_bytes) {
  size_t free_now = 0, total = 0;
  if (!real.cudaMemGetInfo)
    return -1;
  cudaError_t status = real.cudaMemGetInfo(&free_now, &total);
  *free_bytes = free_now;
  *total_bytes = total;
  return status;
}

static int driver_current_device(int *device) {
  CUdevice handle;
  if (!real.cuCtxGetDevice || real.cuCtxGetDevice(&handle) != CUDA_SUCCESS)
    return -1;
  *device = (int)handle;
  return 0;
}

static int driver_device_uuid(int device, unsigned char uuid[16]) {
  CUuuid value;
  if (!real.cuDeviceGetUuid || real.cuDeviceGetUuid(&value, (CUdevice)device) != CUDA_SUCCESS)
    return -1;
  memcpy(uuid, value.bytes, 16);
  return 0;
}

static int driver_memory_info(uint64_t *free_bytes, uint64_t *total_bytes) {
  size_t free_now = 0, total = 0;
  if (!real.cuMemGetInfo_v2 || real.cuMemGetInfo_v2(&free_now, &total) != CUDA_SUCCESS)
    return -1;
  *free_bytes = free_now;
  *total_bytes = total;
  return 0;
}

static int runtime_error_pending(void) { return real.cudaPeekAtLastError && real.cudaPeekAtLastError() != cudaSuccess; }

static void runtime_drop_last_error(void) {
  if (real.cudaGetLastError)
    real.cudaGetLastError();
}

static const preempt_mem_gpu runtime_gpu = {.api_name = "CUDA runtime",
                                            .out_of_memory = cudaErrorMemoryAllocation,
                                            .current_device = runtime_current_device,
                                            .device_uuid = runtime_device_uuid,
                                            .memory_info = runtime_memory_info,
                                            .error_pending = runtime_error_pending,
                                            .drop_last_error = runtime_drop_last_error};

static const preempt_mem_gpu driver_gpu = {.api_name = "CUDA driver",
                                           .out_of_memory = CUDA_ERROR_OUT_OF_MEMORY,
                                           .current_device = driver_current_device,
                                           .device_uuid = driver_device_uuid,
                                           .memory_info = driver_memory_info};

/* A stream-ordered free gives its memory back when the stream reaches it, not when it is enqueued. */
static void CUDART_CB give_back_in_stream(void *allocation) { preempt_mem_give_back_taken(allocation); }

/* ---- the CUDA runtime API */

typedef struct {
  void **pointer;
  size_t bytes;
  cudaStream_t stream;
  const runtime_stream_api *api;
  int from_pool;
  cudaMemPool_t pool;
  unsigned int flags;
  size_t *pitch, width, height;
  struct cudaPitchedPtr *pitched;
  struct cudaExtent extent;
} runtime_call;

static int call_cuda_malloc(void *call, uint64_t *address, uint64_t *actual_bytes) {
  runtime_call *c = call;
  (void)actual_bytes;
  cudaError_t status = real.cudaMalloc(c->pointer, c->bytes);
  *address = status == cudaSuccess ? (uint64_t)(uintptr_t)*c->pointer : 0;
  return status;
}

EXPORTED cudaError_t WRAPPER(cudaMalloc)(void **pointer, size_t bytes) {
  ensure_real();
  if (!pointer || bytes == 0)
    return real.cudaMalloc(pointer, bytes);
  runtime_call call = {.pointer = pointer, .bytes = bytes};
  return (cudaError_t)preempt_mem_allocate(&runtime_gpu, bytes, call_cuda_malloc, &call);
}

static cudaError_t runtime_malloc_in_stream(const runtime_call *c) {
  return c->from_pool ? c->api->malloc_from_pool_async(c->pointer, c->bytes, c->pool, c->stream)
                      : c->api->malloc_async(c->pointer, c->bytes, c->stream);
}

static int call_cuda_malloc_in_stream(void *call, uint64_t *address, uint64_t *actual_bytes) {
  runtime_call *c = call;
  (void)actual_bytes;
  cudaError_t status = runtime_malloc_in_stream(c);
  *address = status == cudaSuccess ? (uint64_t)(uintptr_t)*c->pointer : 0;
  return status;
}

static int runtime_capturing(const runtime_stream_api *api, cudaStream_t stream) {
  enum cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  return api->is_capturing && api->is_capturing(stream, &capture) == cudaSuccess &&
         capture != cudaStreamCaptureStatusNone;
}

/* cudaMallocAsync and cudaMallocFromPoolAsync, in either spelling. A pool's memory is counted on the current
 * device, as every runtime allocation is (a pool of another device is counted there too: docs/memory.md). */
static cudaError_t malloc_in_stream(const runtime_stream_api *api, void **pointer, size_t bytes, int from_pool,
                                    cudaMemPool_t pool, cudaStream_t stream) {
  ensure_real();
  runtime_call call = {.pointer = pointer, .bytes = bytes, .stream = stream, .api = api, .from_pool = from_pool,
                       .pool = pool};
  if (from_pool ? !api->malloc_from_pool_async : !api->malloc_async)
    return cudaErrorInitializationError; /* the program's CUDA runtime lacks it: nothing to wrap */
  /* Captured into a graph, the allocation happens at each launch of the graph, not here: not admitted. */
  if (!pointer || bytes == 0 || runtime_capturing(api, stream))
    return runtime_malloc_in_stream(&call);
  return (cudaError_t)preempt_mem_allocate(&runtime_gpu, bytes, call_cuda_malloc_in_stream, &call);
}

EXPORTED cudaError_t WRAPPER(cudaMallocAsync)(void **pointer, size_t bytes, cudaStream_t stream) {
  return malloc_in_stream(&real.runtime_legacy, pointer, bytes, 0, NULL, stream);
}

EXPORTED cudaError_t WRAPPER(cudaMallocAsync_ptsz)(void **pointer, size_t bytes, cudaStream_t stream) {
  return malloc_in_stream(&real.runtime_per_thread, pointer, bytes, 0, NULL, stream);
}

EXPORTED cudaError_t WRAPPER(cudaMallocFromPoolAsync)(void **pointer, size_t bytes, cudaMemPool_t pool,
                                                      cudaStream_t stream) {
  return malloc_in_stream(&real.runtime_legacy, pointer, bytes, 1, pool, stream);
}

EXPORTED cudaError_t WRAPPER(cudaMallocFromPoolAsync_ptsz)(void **pointer, size_t bytes, cudaMemPool_t pool,
                                                           cudaStream_t stream) {
  return malloc_in_stream(&real.runtime_per_thread, pointer, bytes, 1, pool, stream);
}

static int call_cuda_malloc_pitch(void *call, uint64_t *address, uint64_t *actual_bytes) {
  runtime_call *c = call;
  cudaError_t status = real.cudaMallocPitch(c->pointer, c->pitch, c->width, c->height);
  *address = status == cudaSuccess ? (uint64_t)(uintptr_t)*c->pointer : 0;
  if (status == cudaSuccess)
    *actual_bytes = (uint64_t)*c->pitch * c->height;
  return status;
}

EXPORTED cudaError_t WRAPPER(cudaMallocPitch)(void **pointer, size_t *pitch, size_t width, size_t height) {
  ensure_real();
  uint64_t estimate = preempt_mem_pitched_estimate(width, height);
  if (!pointer || !pitch || estimate == 0)
    return real.cudaMallocPitch(pointer, pitch, width, height);
  runtime_call call = {.pointer = pointer, .pitch = pitch, .width = width, .height = height};
  return (cudaError_t)preempt_mem_allocate(&runtime_gpu, estimate, call_cuda_malloc_pitch, &call);
}

static int call_cuda_malloc_3d(void *call, uint64_t *address, uint64_t *actual_bytes) {
  runtime_call *c = call;
  cudaError_t status = real.cudaMalloc3D(c->pitched, c->extent);
  *address = status == cudaSuccess ? (uint64_t)(uintptr_t)c->pitched->ptr : 0;
  if (status == cudaSuccess)
    *actual_bytes = (uint64_t)c->pitched->pitch * c->extent.height * c->extent.depth;
  return status;
}

EXPORTED cudaError_t WRAPPER(cudaMalloc3D)(struct cudaPitchedPtr *pitched, struct cudaExtent extent) {
  ensure_real();
  uint64_t estimate = preempt_mem_pitched_estimate(extent.width, (uint64_t)extent.height * extent.depth);
  if (!pitched || estimate == 0)
    return real.cudaMalloc3D(pitched, extent);
  runtime_call call = {.pitched = pitched, .extent = extent};
  return (cudaError_t)preempt_mem_allocate(&runtime_gpu, estimate, call_cuda_malloc_3d, &call);
}

static int call_cuda_malloc_managed(void *call, uint64_t *address, uint64_t *actual_bytes) {
  runtime_call *c = call;
  (void)actual_bytes;
  cudaError_t status = real.cudaMallocManaged(c->pointer, c->bytes, c->flags);
  *address = status == cudaSuccess ? (uint64_t)(uintptr_t)*c->pointer : 0;
  return status;
}

/* Managed memory may live on the host too; it is counted on the current device by its whole size, as if
 * resident: the GPU can be asked to hold all of it. */
EXPORTED cudaError_t WRAPPER(cudaMallocManaged)(void **pointer, size_t bytes, unsigned int flags) {
  ensure_real();
  if (!pointer || bytes == 0)
    return real.cudaMallocManaged(pointer, bytes, flags);
  runtime_call call = {.pointer = pointer, .bytes = bytes, .flags = flags};
  return (cudaError_t)preempt_mem_allocate(&runtime_gpu, bytes, call_cuda_malloc_managed, &call);
}

/* cudaFree and cuMemFree wait for the device while holding the driver, as synchronous copies do: an evicted launch
 * could then never be resumed (sync_copies_cuda.c). The preload library has no launches to wait for. */
#ifdef PREEMPT_MEM_PRELOAD
#define SETTLE_BEFORE_FREE() 0
#else
#define SETTLE_BEFORE_FREE() preempt_settle_device()
#endif

EXPORTED cudaError_t WRAPPER(cudaFree)(void *pointer) {
  ensure_real();
  cudaError_t settled = SETTLE_BEFORE_FREE();
  if (settled != cudaSuccess)
    return settled;
  cudaError_t status = real.cudaFree(pointer);
  if (status == cudaSuccess && pointer)
    preempt_mem_freed((uint64_t)(uintptr_t)pointer);
  return status;
}

/* cudaDeviceReset frees every allocation of the process on the current device: the ledger is told first, or it
 * would go on counting that memory (and make later allocations wait for memory nobody holds). A reset that fails
 * has still been told: the ledger then counts less than is held, which the next look at the GPU's used memory
 * (learn_external) corrects. */
EXPORTED cudaError_t WRAPPER(cudaDeviceReset)(void) {
  ensure_real();
  if (!real.cudaDeviceReset)
    return cudaErrorInitializationError;
  cudaError_t settled = SETTLE_BEFORE_FREE(); /* as cudaFree: the reset waits for the device */
  if (settled != cudaSuccess)
    return settled;
  int device;
  if (runtime_current_device(&device) == cudaSuccess)
    preempt_mem_device_reset(device);
#ifndef PREEMPT_MEM_PRELOAD
  /* The launch runtime's streams, events and control blocks die with the context, and its kernels' forms with
   * the modules: everything goes now, while the handles are valid, and the next launch starts afresh
   * (bench/preemption/device_reset.cu). Every device's, not only this one's: preempt_shutdown is the one path
   * that does it, and a reset is rare. */
  preempt_shutdown();
#endif
  return real.cudaDeviceReset();
}

static cudaError_t free_in_stream(const runtime_stream_api *api, void *pointer, cudaStream_t stream) {
  ensure_real();
  if (!api->free_async)
    return cudaErrorInitializationError;
  int capturing = runtime_capturing(api, stream);
  cudaError_t status = api->free_async(pointer, stream);
  if (status != cudaSuccess || !pointer || capturing)
    return status;
  preempt_mem_allocation *freed = preempt_mem_take((uint64_t)(uintptr_t)pointer);
  if (freed && (!api->launch_host_func || api->launch_host_func(stream, give_back_in_stream, freed) != cudaSuccess))
    give_back_in_stream(freed); /* no host function in the stream: given back now rather than leaked */
  return status;
}

EXPORTED cudaError_t WRAPPER(cudaFreeAsync)(void *pointer, cudaStream_t stream) {
  return free_in_stream(&real.runtime_legacy, pointer, stream);
}

EXPORTED cudaError_t WRAPPER(cudaFreeAsync_ptsz)(void *pointer, cudaStream_t stream) {
  return free_in_stream(&real.runtime_per_thread, pointer, stream);
}

/* ---- the CUDA driver API */

typedef struct {
  CUdeviceptr *pointer;
  size_t bytes;
  CUstream stream;
  const driver_stream_api *api;
  int from_pool;
  CUmemoryPool pool;
  unsigned int flags;
  size_t *pitch, width, height;
  unsigned int element_bytes;
  CUmemGenericAllocationHandle *handle;
  const CUmemAllocationProp *properties;
  unsigned long long create_flags;
} driver_call;

static int call_cu_mem_alloc(void *call, uint64_t *address, uint64_t *actual_bytes) {
  driver_call *c = call;
  (void)actual_bytes;
  CUresult status = real.cuMemAlloc_v2(c->pointer, c->bytes);
  *address = status == CUDA_SUCCESS ? (uint64_t)*c->pointer : 0;
  return status;
}

EXPORTED CUresult WRAPPER(cuMemAlloc_v2)(CUdeviceptr *pointer, size_t bytes) {
  ensure_real();
  if (!real.cuMemAlloc_v2)
    return CUDA_ERROR_NOT_INITIALIZED;
  if (!pointer || bytes == 0)
    return real.cuMemAlloc_v2(pointer, bytes);
  driver_call call = {.pointer = pointer, .bytes = bytes};
  return (CUresult)preempt_mem_allocate(&driver_gpu, bytes, call_cu_mem_alloc, &call);
}

static int call_cu_mem_alloc_pitch(void *call, uint64_t *address, uint64_t *actual_bytes) {
  driver_call *c = call;
  CUresult status = real.cuMemAllocPitch_v2(c->pointer, c->pitch, c->width, c->height, c->element_bytes);
  *address = status == CUDA_SUCCESS ? (uint64_t)*c->pointer : 0;
  if (status == CUDA_SUCCESS)
    *actual_bytes = (uint64_t)*c->pitch * c->height;
  return status;
}

EXPORTED CUresult WRAPPER(cuMemAllocPitch_v2)(CUdeviceptr *pointer, size_t *pitch, size_t width, size_t height,
                                              unsigned int element_bytes) {
  ensure_real();
  if (!real.cuMemAllocPitch_v2)
    return CUDA_ERROR_NOT_INITIALIZED;
  uint64_t estimate = preempt_mem_pitched_estimate(width, height);
  if (!pointer || !pitch || estimate == 0)
    return real.cuMemAllocPitch_v2(pointer, pitch, width, height, element_bytes);
  driver_call call = {.pointer = pointer, .pitch = pitch, .width = width, .height = height,
                      .element_bytes = element_bytes};
  return (CUresult)preempt_mem_allocate(&driver_gpu, estimate, call_cu_mem_alloc_pitch, &call);
}

static CUresult driver_alloc_in_stream(const driver_call *c) {
  return c->from_pool ? c->api->mem_alloc_from_pool_async(c->pointer, c->bytes, c->pool, c->stream)
                      : c->api->mem_alloc_async(c->pointer, c->bytes, c->stream);
}

static int call_cu_mem_alloc_in_stream(void *call, uint64_t *address, uint64_t *actual_bytes) {
  driver_call *c = call;
  (void)actual_bytes;
  CUresult status = driver_alloc_in_stream(c);
  *address = status == CUDA_SUCCESS ? (uint64_t)*c->pointer : 0;
  return status;
}

static int driver_capturing(const driver_stream_api *api, CUstream stream) {
  CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
  return api->is_capturing && api->is_capturing(stream, &capture) == CUDA_SUCCESS &&
         capture != CU_STREAM_CAPTURE_STATUS_NONE;
}

/* cuMemAllocAsync and cuMemAllocFromPoolAsync, in either spelling; pools as in the runtime's malloc_in_stream. */
static CUresult alloc_in_driver_stream(const driver_stream_api *api, CUdeviceptr *pointer, size_t bytes, int from_pool,
                                       CUmemoryPool pool, CUstream stream) {
  ensure_real();
  if (from_pool ? !api->mem_alloc_from_pool_async : !api->mem_alloc_async)
    return CUDA_ERROR_NOT_INITIALIZED;
  driver_call call = {.pointer = pointer, .bytes = bytes, .stream = stream, .api = api, .from_pool = from_pool,
                      .pool = pool};
  if (!pointer || bytes == 0 || driver_capturing(api, stream))
    return driver_alloc_in_stream(&call);
  return (CUresult)preempt_mem_allocate(&driver_gpu, bytes, call_cu_mem_alloc_in_stream, &call);
}

EXPORTED CUresult WRAPPER(cuMemAllocAsync)(CUdeviceptr *pointer, size_t bytes, CUstream stream) {
  return alloc_in_driver_stream(&real.driver_legacy, pointer, bytes, 0, NULL, stream);
}

EXPORTED CUresult WRAPPER(cuMemAllocAsync_ptsz)(CUdeviceptr *pointer, size_t bytes, CUstream stream) {
  return alloc_in_driver_stream(&real.driver_per_thread, pointer, bytes, 0, NULL, stream);
}

EXPORTED CUresult WRAPPER(cuMemAllocFromPoolAsync)(CUdeviceptr *pointer, size_t bytes, CUmemoryPool pool,
                                                   CUstream stream) {
  return alloc_in_driver_stream(&real.driver_legacy, pointer, bytes, 1, pool, stream);
}

EXPORTED CUresult WRAPPER(cuMemAllocFromPoolAsync_ptsz)(CUdeviceptr *pointer, size_t bytes, CUmemoryPool pool,
                                                        CUstream stream) {
  return alloc_in_driver_stream(&real.driver_per_thread, pointer, bytes, 1, pool, stream);
}

static int call_cu_mem_alloc_managed(void *call, uint64_t *address, uint64_t *actual_bytes) {
  driver_call *c = call;
  (void)actual_bytes;
  CUresult status = real.cuMemAllocManaged(c->pointer, c->bytes, c->flags);
  *address = status == CUDA_SUCCESS ? (uint64_t)*c->pointer : 0;
  return status;
}

EXPORTED CUresult WRAPPER(cuMemAllocManaged)(CUdeviceptr *pointer, size_t bytes, unsigned int flags) {
  ensure_real();
  if (!real.cuMemAllocManaged)
    return CUDA_ERROR_NOT_INITIALIZED;
  if (!pointer || bytes == 0)
    return real.cuMemAllocManaged(pointer, bytes, flags);
  driver_call call = {.pointer = pointer, .bytes = bytes, .flags = flags};
  return (CUresult)preempt_mem_allocate(&driver_gpu, bytes, call_cu_mem_alloc_managed, &call);
}

EXPORTED CUresult WRAPPER(cuMemFree_v2)(CUdeviceptr pointer) {
  ensure_real();
  if (!real.cuMemFree_v2)
    return CUDA_ERROR_NOT_INITIALIZED;
  if (SETTLE_BEFORE_FREE() != cudaSuccess)
    return CUDA_ERROR_UNKNOWN; /* the device's sticky error: cuCtxSynchronize would say which */
  CUresult status = real.cuMemFree_v2(pointer);
  if (status == CUDA_SUCCESS && pointer)
    preempt_mem_freed((uint64_t)pointer);
  return status;
}

static void CUDA_CB give_back_in_driver_stream(void *allocation) { give_back_in_stream(allocation); }

static CUresult free_in_driver_stream(const driver_stream_api *api, CUdeviceptr pointer, CUstream stream) {
  ensure_real();
  if (!api->mem_free_async)
    return CUDA_ERROR_NOT_INITIALIZED;
  int capturing = driver_capturing(api, stream);
  CUresult status = api->mem_free_async(pointer, stream);
  if (status != CUDA_SUCCESS || !pointer || capturing)
    return status;
  preempt_mem_allocation *freed = preempt_mem_take((uint64_t)pointer);
  if (freed &&
      (!api->launch_host_func || api->launch_host_func(stream, give_back_in_driver_stream, freed) != CUDA_SUCCESS))
    give_back_in_stream(freed);
  return status;
}

EXPORTED CUresult WRAPPER(cuMemFreeAsync)(CUdeviceptr pointer, CUstream stream) {
  return free_in_driver_stream(&real.driver_legacy, pointer, stream);
}

EXPORTED CUresult WRAPPER(cuMemFreeAsync_ptsz)(CUdeviceptr pointer, CUstream stream) {
  return free_in_driver_stream(&real.driver_per_thread, pointer, stream);
}

/* Virtual memory management: the physical allocation is what takes the GPU's memory (mapping it takes none), so
 * it is admitted at its size and keyed by its handle (mem_handle_key.h), not by an address. */
static int call_cu_mem_create(void *call, uint64_t *key, uint64_t *actual_bytes) {
  driver_call *c = call;
  CUresult status = real.cuMemCreate(c->handle, c->bytes, c->properties, c->create_flags);
  *key = 0;
  if (status == CUDA_SUCCESS && preempt_mem_handle_key((uint64_t)*c->handle, key) != 0) {
    /* A handle no key can tell from an address: given back at once (preempt_mem_adjust) and never recorded. */
    *actual_bytes = 0;
    preempt_mem_say_unkeyable_handle("cuMemCreate", (uint64_t)*c->handle);
  }
  return status;
}

EXPORTED CUresult WRAPPER(cuMemCreate)(CUmemGenericAllocationHandle *handle, size_t bytes,
                                       const CUmemAllocationProp *properties, unsigned long long flags) {
  ensure_real();
  if (!real.cuMemCreate)
    return CUDA_ERROR_NOT_INITIALIZED;
  /* Admission asks about the context's device: physical memory on the host, or on another device, is not admitted
   * here (docs/memory.md). */
  int device = -1;
  if (!handle || bytes == 0 || !properties || properties->location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
      driver_current_device(&device) != 0 || properties->location.id != device)
    return real.cuMemCreate(handle, bytes, properties, flags);
  driver_call call = {.handle = handle, .bytes = bytes, .properties = properties, .create_flags = flags};
  return (CUresult)preempt_mem_allocate(&driver_gpu, bytes, call_cu_mem_create, &call);
}

EXPORTED CUresult WRAPPER(cuMemRelease)(CUmemGenericAllocationHandle handle) {
  ensure_real();
  if (!real.cuMemRelease)
    return CUDA_ERROR_NOT_INITIALIZED;
  CUresult status = real.cuMemRelease(handle);
  uint64_t key;
  if (status == CUDA_SUCCESS && preempt_mem_handle_key((uint64_t)handle, &key) == 0)
    preempt_mem_freed(key);
  return status;
}

/* ---- preempt.h's memory API, on the CUDA runtime's current device */

EXPORTED preempt_status preempt_mem_budget(size_t bytes) {
  ensure_real();
  return preempt_mem_budget_with(&runtime_gpu, bytes);
}

EXPORTED preempt_status preempt_mem_get_info(preempt_mem_info *info) {
  ensure_real();
  return preempt_mem_get_info_with(&runtime_gpu, info);
}
