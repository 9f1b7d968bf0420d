/* mem_intercept_hip.c: HIP's device-memory allocation and release calls, admitted against the GPU's ledger.
 * schedGPU §4 (pre-allocation, post-free) for AMD GPUs: the CUDA wrappers' counterpart (mem_intercept_cuda.c).
 *
 * Built into libpreempt_runtime_hip.a as preempt_<name>, where the host pass routes a HIP program's calls
 * (passes/AllocationRewrite.cpp). There is no AMD GPU here: this is compiled, never run (docs/memory.md). */
#include <hip/hip_runtime_api.h>
#include <string.h>

#include "gpu.h"
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
  unsigned int flags;
  size_t *pitch, width, height;
  hipPitchedPtr *pitched;
  hipExtent extent;
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

static int call_hip_malloc_async(void *call, uint64_t *address, uint64_t *actual_bytes) {
  hip_call *c = call;
  (void)actual_bytes;
  hipError_t status = hipMallocAsync(c->pointer, c->bytes, c->stream);
  *address = address_of(status, status == hipSuccess ? *c->pointer : NULL);
  return status;
}

hipError_t preempt_hipMallocAsync(void **pointer, size_t bytes, hipStream_t stream) {
  if (!pointer || bytes == 0 || hip_capturing(stream))
    return hipMallocAsync(pointer, bytes, stream);
  hip_call call = {.pointer = pointer, .bytes = bytes, .stream = stream};
  return (hipError_t)preempt_mem_allocate(&hip_gpu, bytes, call_hip_malloc_async, &call);
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

preempt_status preempt_mem_budget(size_t bytes) { return preempt_mem_budget_with(&hip_gpu, bytes); }

preempt_status preempt_mem_get_info(preempt_mem_info *info) { return preempt_mem_get_info_with(&hip_gpu, info); }
