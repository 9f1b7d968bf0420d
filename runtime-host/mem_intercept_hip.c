/* mem_intercept_hip.c: HIP's device-memory allocation and release calls, admitted against the GPU's ledger.
 * schedGPU §4 (pre-allocation, post-free) for AMD GPUs: the CUDA wrappers' counterpart (mem_intercept_cuda.c).
 *
 * Built into libpreempt_runtime_hip.a as preempt_<name>, where the host pass routes a HIP program's calls
 * (passes/AllocationRewrite.cpp). There is no AMD GPU here: this is compiled, never run (docs/memory.md). */
#include <hip/hip_runtime_api.h>
#include <string.h>

#include "gpu.h"
#include "mem_handle_key.h"
#include "memory.h"

static int hip_current_device(int *device) { return hipGetDevice(device); }

/* The launch backend's (gpu_hip.c), which this library always carries. */
static int hip_device_uuid(int device, unsigned char uuid[16]) { return preempt_gpu_backend()->device_uuid(device, uuid); }

static int hip_memory_info(uint64_t *free_bytes, uint64_t *total_bytes) {
  size_t free_now = 0, total = 0;
  hipError_t status = hipMemGetInfo(&free_now, &total);
  *free_bytes = free_now;
  *total_bytes = total;
  return status;
}

static int hip_error_pending(void) { return hipPeekAtLastError() != hipSuccess; }

static void hip_drop_last_error(void) { (void)hipGetLastError(); }

static const preempt_mem_gpu hip_gpu = {.api_name = "HIP",
                                        .out_of_memory = hipErrorOutOfMemory,
                                        .current_device = hip_current_device,
                                        .device_uuid = hip_device_uuid,
                                        .memory_info = hip_memory_info,
                                        .error_pending = hip_error_pending,
                                        .drop_last_error = hip_drop_last_error};

typedef struct {
  void **pointer;
  size_t bytes;
  hipStream_t stream;
  hipMemPool_t pool; /* hipMallocFromPoolAsync; NULL for hipMallocAsync */
  unsigned int flags;
  size_t *pitch, width, height;
  hipPitchedPtr *pitched;
  hipExtent extent;
  hipMemGenericAllocationHandle_t *handle;
  const hipMemAllocationProp *properties;
  unsigned long long create_flags;
} hip_call;

static uint64_t address_of(hipError_t status, void *pointer) {
  return status == hipSuccess ? (uint64_t)(uintptr_t)pointer : 0;
}

static int call_hip_malloc(void *call, uint64_t *address, uint64_t *actual_bytes) {
  hip_call *c = call;
  (void)actual_bytes;
  hipError_t status = hipMalloc(c->pointer, c->bytes);
  *address = address_of(status, status == hipSuccess ? *c->pointer : NULL);
  return status;
}

hipError_t preempt_hipMalloc(void **pointer, size_t bytes) {
  if (!pointer || bytes == 0)
    return hipMalloc(pointer, bytes);
  hip_call call = {.pointer = pointer, .bytes = bytes};
  return (hipError_t)preempt_mem_allocate(&hip_gpu, bytes, call_hip_malloc, &call);
}

static int hip_capturing(hipStream_t stream) {
  hipStreamCaptureStatus capture = hipStreamCaptureStatusNone;
  return hipStreamIsCapturing(stream, &capture) == hipSuccess && capture != hipStreamCaptureStatusNone;
}

static hipError_t hip_malloc_in_stream(const hip_call *c) {
  return c->pool ? hipMallocFromPoolAsync(c->pointer, c->bytes, c->pool, c->stream)
                 : hipMallocAsync(c->pointer, c->bytes, c->stream);
}

static int call_hip_malloc_in_stream(void *call, uint64_t *address, uint64_t *actual_bytes) {
  hip_call *c = call;
  (void)actual_bytes;
  hipError_t status = hip_malloc_in_stream(c);
  *address = address_of(status, status == hipSuccess ? *c->pointer : NULL);
  return status;
}

/* hipMallocAsync and hipMallocFromPoolAsync (a pool's memory counted on the current device, as in CUDA). */
static hipError_t malloc_in_stream(void **pointer, size_t bytes, hipMemPool_t pool, hipStream_t stream) {
  hip_call call = {.pointer = pointer, .bytes = bytes, .stream = stream, .pool = pool};
  if (!pointer || bytes == 0 || hip_capturing(stream))
    return hip_malloc_in_stream(&call);
  return (hipError_t)preempt_mem_allocate(&hip_gpu, bytes, call_hip_malloc_in_stream, &call);
}

hipError_t preempt_hipMallocAsync(void **pointer, size_t bytes, hipStream_t stream) {
  return malloc_in_stream(pointer, bytes, NULL, stream);
}

hipError_t preempt_hipMallocFromPoolAsync(void **pointer, size_t bytes, hipMemPool_t pool, hipStream_t stream) {
  if (!pool) /* the API's own error, not hipMallocAsync's pool-less call */
    return hipMallocFromPoolAsync(pointer, bytes, pool, stream);
  return malloc_in_stream(pointer, bytes, pool, stream);
}

static int call_hip_malloc_pitch(void *call, uint64_t *address, uint64_t *actual_bytes) {
  hip_call *c = call;
  hipError_t status = hipMallocPitch(c->pointer, c->pitch, c->width, c->height);
  *address = address_of(status, status == hipSuccess ? *c->pointer : NULL);
  if (status == hipSuccess)
    *actual_bytes = (uint64_t)*c->pitch * c->height;
  return status;
}

hipError_t preempt_hipMallocPitch(void **pointer, size_t *pitch, size_t width, size_t height) {
  uint64_t estimate = preempt_mem_pitched_estimate(width, height);
  if (!pointer || !pitch || estimate == 0)
    return hipMallocPitch(pointer, pitch, width, height);
  hip_call call = {.pointer = pointer, .pitch = pitch, .width = width, .height = height};
  return (hipError_t)preempt_mem_allocate(&hip_gpu, estimate, call_hip_malloc_pitch, &call);
}

static int call_hip_malloc_3d(void *call, uint64_t *address, uint64_t *actual_bytes) {
  hip_call *c = call;
  hipError_t status = hipMalloc3D(c->pitched, c->extent);
  *address = address_of(status, status == hipSuccess ? c->pitched->ptr : NULL);
  if (status == hipSuccess)
    *actual_bytes = (uint64_t)c->pitched->pitch * c->extent.height * c->extent.depth;
  return status;
}

hipError_t preempt_hipMalloc3D(hipPitchedPtr *pitched, hipExtent extent) {
  uint64_t estimate = preempt_mem_pitched_estimate(extent.width, (uint64_t)extent.height * extent.depth);
  if (!pitched || estimate == 0)
    return hipMalloc3D(pitched, extent);
  hip_call call = {.pitched = pitched, .extent = extent};
  return (hipError_t)preempt_mem_allocate(&hip_gpu, estimate, call_hip_malloc_3d, &call);
}

static int call_hip_malloc_managed(void *call, uint64_t *address, uint64_t *actual_bytes) {
  hip_call *c = call;
  (void)actual_bytes;
  hipError_t status = hipMallocManaged(c->pointer, c->bytes, c->flags);
  *address = address_of(status, status == hipSuccess ? *c->pointer : NULL);
  return status;
}

/* Counted on the current device by its whole size, as the CUDA wrapper does. */
hipError_t preempt_hipMallocManaged(void **pointer, size_t bytes, unsigned int flags) {
  if (!pointer || bytes == 0)
    return hipMallocManaged(pointer, bytes, flags);
  hip_call call = {.pointer = pointer, .bytes = bytes, .flags = flags};
  return (hipError_t)preempt_mem_allocate(&hip_gpu, bytes, call_hip_malloc_managed, &call);
}

hipError_t preempt_hipFree(void *pointer) {
  hipError_t status = hipFree(pointer);
  if (status == hipSuccess && pointer)
    preempt_mem_freed((uint64_t)(uintptr_t)pointer);
  return status;
}

static void give_back_in_stream(void *allocation) { preempt_mem_give_back_taken(allocation); }

hipError_t preempt_hipFreeAsync(void *pointer, hipStream_t stream) {
  int capturing = hip_capturing(stream);
  hipError_t status = hipFreeAsync(pointer, stream);
  if (status != hipSuccess || !pointer || capturing)
    return status;
  preempt_mem_allocation *freed = preempt_mem_take((uint64_t)(uintptr_t)pointer);
  if (freed && hipLaunchHostFunc(stream, give_back_in_stream, freed) != hipSuccess)
    preempt_mem_give_back_taken(freed); /* no host function in the stream: given back now rather than leaked */
  return status;
}

/* Virtual memory management, as the CUDA wrappers do it: the physical allocation is admitted at its size and keyed
 * by its handle, tagged apart from addresses (mem_handle_key.h). */
static int call_hip_mem_create(void *call, uint64_t *key, uint64_t *actual_bytes) {
  hip_call *c = call;
  hipError_t status = hipMemCreate(c->handle, c->bytes, c->properties, c->create_flags);
  *key = 0;
  if (status == hipSuccess && preempt_mem_handle_key((uint64_t)(uintptr_t)*c->handle, key) != 0) {
    *actual_bytes = 0; /* given back at once, never recorded */
    preempt_mem_say_unkeyable_handle("hipMemCreate", (uint64_t)(uintptr_t)*c->handle);
  }
  return status;
}

hipError_t preempt_hipMemCreate(hipMemGenericAllocationHandle_t *handle, size_t bytes,
                                const hipMemAllocationProp *properties, unsigned long long flags) {
  int device = -1;
  if (!handle || bytes == 0 || !properties || properties->location.type != hipMemLocationTypeDevice ||
      hip_current_device(&device) != hipSuccess || properties->location.id != device)
    return hipMemCreate(handle, bytes, properties, flags);
  hip_call call = {.handle = handle, .bytes = bytes, .properties = properties, .create_flags = flags};
  return (hipError_t)preempt_mem_allocate(&hip_gpu, bytes, call_hip_mem_create, &call);
}

hipError_t preempt_hipMemRelease(hipMemGenericAllocationHandle_t handle) {
  hipError_t status = hipMemRelease(handle);
  uint64_t key;
  if (status == hipSuccess && preempt_mem_handle_key((uint64_t)(uintptr_t)handle, &key) == 0)
    preempt_mem_freed(key);
  return status;
}

preempt_status preempt_mem_budget(size_t bytes) { return preempt_mem_budget_with(&hip_gpu, bytes); }

preempt_status preempt_mem_get_info(preempt_mem_info *info) { return preempt_mem_get_info_with(&hip_gpu, info); }
