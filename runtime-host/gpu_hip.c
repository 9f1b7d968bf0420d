/* gpu_hip.c: the HIP implementation of gpu.h, for AMD GPUs (built against Debian's libamdhip64-dev).
 * Same launch primitives as gpu_cuda.c for FLEP §3's runtime; untested on hardware: no AMD GPU here. */
#include <hip/hip_runtime_api.h>
#include <string.h>

#include "gpu.h"

static const char *hip_error_string(int code) { return hipGetErrorString((hipError_t)code); }

static int hip_current_device(int *device) { return hipGetDevice(device); }

static int hip_set_device(int device) { return hipSetDevice(device); }

static int hip_device_count(int *count) { return hipGetDeviceCount(count); }

static int hip_sm_count(int device, uint32_t *count) {
  int value = 0;
  hipError_t status = hipDeviceGetAttribute(&value, hipDeviceAttributeMultiprocessorCount, device);
  *count = (uint32_t)value;
  return status;
}

static int hip_device_uuid(int device, unsigned char uuid[16]) {
  hipDevice_t handle;
  hipUUID value;
  hipError_t status = hipDeviceGet(&handle, device);
  if (status == hipSuccess)
    status = hipDeviceGetUuid(&value, handle);
  if (status == hipSuccess)
    memcpy(uuid, value.bytes, 16);
  return status;
}

/* HIP 5.2 has no way from a host stub to its code object (no
 * hipGetFuncBySymbol), so converted kernels cannot be told apart yet: refuse
 * rather than guess, since a wrong guess launches a kernel with the wrong
 * parameters. */
static int hip_kernel_global(const void *host_stub, const char *name, void *value, size_t bytes) {
  (void)host_stub;
  (void)name;
  memset(value, 0, bytes);
  return hipErrorNotSupported;
}

/* Same HIP 5.2 gap: no way from a stub to its parameter sizes. */
static int hip_kernel_param_sizes(const void *host_stub, uint32_t capacity, size_t *sizes, uint32_t *count) {
  (void)host_stub;
  (void)capacity;
  (void)sizes;
  *count = 0;
  return hipErrorNotSupported;
}

static int hip_occupancy(const void *host_stub, uint32_t block_threads, size_t dynamic_shared_bytes,
                         uint32_t *ctas_per_sm) {
  int blocks = 0;
  hipError_t status =
      hipOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, host_stub, (int)block_threads, dynamic_shared_bytes);
  *ctas_per_sm = blocks > 0 ? (uint32_t)blocks : 0;
  return status;
}

/* Co-execution's footprints follow NVIDIA's occupancy rules (coexec.h); AMD's
 * (wavefronts of 64, VGPR and LDS granules per architecture) are not modelled:
 * its kernels report no footprint and preemptd never co-locates them. */
static int hip_sm_limits(int device, preempt_sm_limits *limits) {
  (void)device;
  memset(limits, 0, sizeof *limits);
  return hipErrorNotSupported;
}

static int hip_kernel_footprint(const void *host_stub, void *function, uint32_t *registers_per_thread,
                                uint32_t *static_shared_bytes) {
  (void)host_stub;
  (void)function;
  *registers_per_thread = *static_shared_bytes = 0;
  return hipErrorNotSupported;
}

static int hip_copy_device_async(void *device_destination, const void *device_source, size_t bytes, void *stream) {
  return hipMemcpyAsync(device_destination, device_source, bytes, hipMemcpyDeviceToDevice, (hipStream_t)stream);
}

static int hip_copy_to_host(void *host, const void *device_pointer, size_t bytes, void *stream) {
  hipError_t status = hipMemcpyAsync(host, device_pointer, bytes, hipMemcpyDeviceToHost, (hipStream_t)stream);
  if (status == hipSuccess)
    status = hipStreamSynchronize((hipStream_t)stream);
  return status;
}

static int hip_device_alloc(void **pointer, size_t bytes) { return hipMalloc(pointer, bytes); }
static int hip_device_free(void *pointer) { return hipFree(pointer); }
static int hip_device_zero(void *pointer, size_t bytes) {
  hipError_t status = hipMemset(pointer, 0, bytes);
  return status != hipSuccess ? status : hipDeviceSynchronize();
}

static int hip_device_zero_async(void *pointer, size_t bytes, void *stream) {
  return hipMemsetAsync(pointer, 0, bytes, (hipStream_t)stream);
}

static int hip_stream_create(void **stream, int urgent) {
  int least = 0, greatest = 0;
  hipError_t status = hipDeviceGetStreamPriorityRange(&least, &greatest);
  if (status != hipSuccess)
    return status;
  return hipStreamCreateWithPriority((hipStream_t *)stream, hipStreamNonBlocking, urgent ? greatest : least);
}
static int hip_stream_destroy(void *stream) { return hipStreamDestroy((hipStream_t)stream); }
static int hip_stream_write_words(void *stream, uint32_t *device_words, const uint32_t *values, uint32_t count) {
  for (uint32_t index = 0; index < count; index++) {
    hipError_t status = hipStreamWriteValue32((hipStream_t)stream, device_words + index, values[index], 0);
    if (status != hipSuccess)
      return status;
  }
  return hipSuccess;
}
static int hip_stream_wait_u32(void *stream, void *device_word, uint32_t value) {
  return hipStreamWaitValue32((hipStream_t)stream, device_word, value, hipStreamWaitValueEq, 0xffffffffu);
}
static int hip_stream_wait_event(void *stream, void *event) {
  return hipStreamWaitEvent((hipStream_t)stream, (hipEvent_t)event, 0);
}

static int hip_event_create(void **event, int timed) {
  return hipEventCreateWithFlags((hipEvent_t *)event, timed ? hipEventDefault : hipEventDisableTiming);
}
static int hip_event_destroy(void *event) { return hipEventDestroy((hipEvent_t)event); }
static int hip_event_record(void *event, void *stream) { return hipEventRecord((hipEvent_t)event, (hipStream_t)stream); }
static int hip_event_query(void *event) { return hipEventQuery((hipEvent_t)event); }
static int hip_event_synchronize(void *event) { return hipEventSynchronize((hipEvent_t)event); }
static int hip_event_elapsed_ms(void *start, void *end, float *milliseconds) {
  return hipEventElapsedTime(milliseconds, (hipEvent_t)start, (hipEvent_t)end);
}

static int hip_launch(const void *host_stub, preempt_dim3 grid, preempt_dim3 block, void **args,
                      size_t dynamic_shared_bytes, void *stream) {
  dim3 hip_grid = {grid.x, grid.y, grid.z};
  dim3 hip_block = {block.x, block.y, block.z};
  return hipLaunchKernel(host_stub, hip_grid, hip_block, args, dynamic_shared_bytes, (hipStream_t)stream);
}

/* The same HIP 5.2 gap: no way from a stub to the module holding the
 * kernel's unconverted copy, so one-wave launches keep the persistent form. */
static int hip_original_kernel(const void *host_stub, const char *name, void **function) {
  (void)host_stub;
  (void)name;
  *function = NULL;
  return hipErrorNotSupported;
}

/* Ready for when the copy can be found (hipModuleGetFunction on the stub's module). */
static int hip_launch_function(const void *host_stub, void *function, preempt_dim3 grid, preempt_dim3 block,
                               void **args, size_t dynamic_shared_bytes, void *stream) {
  (void)host_stub;
  if (dynamic_shared_bytes > UINT32_MAX)
    return hipErrorInvalidValue;
  return hipModuleLaunchKernel((hipFunction_t)function, grid.x, grid.y, grid.z, block.x, block.y, block.z,
                               (unsigned int)dynamic_shared_bytes, (hipStream_t)stream, args, NULL);
}

static int hip_function_occupancy(const void *host_stub, void *function, uint32_t block_threads,
                                  size_t dynamic_shared_bytes, uint32_t *ctas_per_sm) {
  (void)host_stub;
  int blocks = 0;
  hipError_t status = hipModuleOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, (hipFunction_t)function,
                                                                         (int)block_threads, dynamic_shared_bytes);
  *ctas_per_sm = blocks > 0 ? (uint32_t)blocks : 0;
  return status;
}

static const preempt_gpu_ops hip_ops = {
    .api_name = "HIP",
    .invalid_value = hipErrorInvalidValue,
    .out_of_memory = hipErrorOutOfMemory,
    .invalid_configuration = hipErrorInvalidConfiguration,
    .not_supported = hipErrorNotSupported,
    .not_ready = hipErrorNotReady,
    .error_string = hip_error_string,
    .current_device = hip_current_device,
    .set_device = hip_set_device,
    .device_count = hip_device_count,
    .sm_count = hip_sm_count,
    .device_uuid = hip_device_uuid,
    .kernel_global = hip_kernel_global,
    .kernel_param_sizes = hip_kernel_param_sizes,
    .occupancy = hip_occupancy,
    .sm_limits = hip_sm_limits,
    .kernel_footprint = hip_kernel_footprint,
    .copy_device_async = hip_copy_device_async,
    .copy_to_host = hip_copy_to_host,
    .device_alloc = hip_device_alloc,
    .device_free = hip_device_free,
    .device_zero = hip_device_zero,
    .device_zero_async = hip_device_zero_async,
    .stream_create = hip_stream_create,
    .stream_destroy = hip_stream_destroy,
    .stream_write_words = hip_stream_write_words,
    .stream_wait_u32 = hip_stream_wait_u32,
    .stream_wait_event = hip_stream_wait_event,
    .event_create = hip_event_create,
    .event_destroy = hip_event_destroy,
    .event_record = hip_event_record,
    .event_query = hip_event_query,
    .event_synchronize = hip_event_synchronize,
    .event_elapsed_ms = hip_event_elapsed_ms,
    .launch = hip_launch,
    .original_kernel = hip_original_kernel,
    .launch_function = hip_launch_function,
    .function_occupancy = hip_function_occupancy,
};

const preempt_gpu_ops *preempt_gpu_backend(void) { return &hip_ops; }
