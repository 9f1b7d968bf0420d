/* gpu_cuda.c: the CUDA implementation of gpu.h, on the CUDA runtime API (driver calls through entry points).
 * Supplies FLEP §3/§4's primitives: occupancy, stream memory operations for yield words, launches. */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stddef.h>
#include <string.h>

#include "gpu.h"
#include "gpu_cuda.h"
#include "preempt/control_block.h"

static const char *cuda_error_string(int code) { return cudaGetErrorString((cudaError_t)code); }

static int cuda_current_device(int *device) { return cudaGetDevice(device); }

static int cuda_set_device(int device) { return cudaSetDevice(device); }

static int cuda_device_count(int *count) { return cudaGetDeviceCount(count); }

static int cuda_sm_count(int device, uint32_t *count) {
  int value = 0;
  cudaError_t status = cudaDeviceGetAttribute(&value, cudaDevAttrMultiProcessorCount, device);
  *count = (uint32_t)value;
  return status;
}

/* The runtime API has no UUID call of its own; the properties carry it. Read
 * once per device, at registration with preemptd. */
static int cuda_device_uuid(int device, unsigned char uuid[16]) {
  struct cudaDeviceProp properties;
  cudaError_t status = cudaGetDeviceProperties(&properties, device);
  if (status == cudaSuccess)
    memcpy(uuid, properties.uuid.bytes, 16);
  return status;
}

/* Driver entry points the runtime API does not wrap. Looked up once; the
 * lookup is idempotent, so a race between threads only repeats it. */
static struct {
  CUresult (*func_get_module)(CUmodule *, CUfunction);
  CUresult (*module_get_global)(CUdeviceptr *, size_t *, CUmodule, const char *);
  CUresult (*func_get_param_info)(CUfunction, size_t, size_t *, size_t *);
  CUresult (*module_get_function)(CUfunction *, CUmodule, const char *);
  CUresult (*launch_kernel)(CUfunction, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int,
                            unsigned int, unsigned int, CUstream, void **, void **);
  CUresult (*func_get_attribute)(int *, CUfunction_attribute, CUfunction);
  CUresult (*func_set_attribute)(CUfunction, CUfunction_attribute, int);
  CUresult (*stream_batch_mem_op)(CUstream, unsigned int, CUstreamBatchMemOpParams *, unsigned int);
  CUresult (*occupancy_max_active_blocks)(int *, CUfunction, int, size_t);
  CUresult (*stream_wait_value32)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);
} driver;

int preempt_cuda_driver_entry(const char *name, void **function) {
  enum cudaDriverEntryPointQueryResult found;
  cudaError_t status = cudaGetDriverEntryPointByVersion(name, function, 12040, cudaEnableDefault, &found);
  if (status != cudaSuccess)
    return status;
  return found == cudaDriverEntryPointSuccess ? cudaSuccess : cudaErrorSymbolNotFound;
}

/* stream_wait_value32, looked up last, says the whole table is there. */
static int load_driver(void) {
  if (driver.stream_wait_value32)
    return cudaSuccess;
  int status = preempt_cuda_driver_entry("cuFuncGetModule", (void **)&driver.func_get_module);
  if (status == cudaSuccess)
    status = preempt_cuda_driver_entry("cuModuleGetGlobal", (void **)&driver.module_get_global);
  if (status == cudaSuccess)
    status = preempt_cuda_driver_entry("cuFuncGetParamInfo", (void **)&driver.func_get_param_info);
  if (status == cudaSuccess)
    status = preempt_cuda_driver_entry("cuModuleGetFunction", (void **)&driver.module_get_function);
  if (status == cudaSuccess)
    status = preempt_cuda_driver_entry("cuLaunchKernel", (void **)&driver.launch_kernel);
  if (status == cudaSuccess)
    status = preempt_cuda_driver_entry("cuFuncGetAttribute", (void **)&driver.func_get_attribute);
  if (status == cudaSuccess)
    status = preempt_cuda_driver_entry("cuFuncSetAttribute", (void **)&driver.func_set_attribute);
  if (status == cudaSuccess)
    status = preempt_cuda_driver_entry("cuStreamBatchMemOp", (void **)&driver.stream_batch_mem_op);
  if (status == cudaSuccess)
    status = preempt_cuda_driver_entry("cuOccupancyMaxActiveBlocksPerMultiprocessor",
                                       (void **)&driver.occupancy_max_active_blocks);
  if (status == cudaSuccess)
    status = preempt_cuda_driver_entry("cuStreamWaitValue32", (void **)&driver.stream_wait_value32);
  return status;
}

static int cuda_function(const void *host_stub, CUfunction *function) {
  int status = load_driver();
  if (status != cudaSuccess)
    return status;
  return cudaGetFuncBySymbol((cudaFunction_t *)function, host_stub);
}

/* The module the runtime loaded for a kernel's stub: where its marker and
 * its unconverted copy live. */
static int cuda_module(const void *host_stub, CUmodule *module) {
  CUfunction function;
  int status = cuda_function(host_stub, &function);
  if (status != cudaSuccess)
    return status;
  return driver.func_get_module(module, function) == CUDA_SUCCESS ? cudaSuccess : cudaErrorInvalidDeviceFunction;
}

/* A private non-blocking stream, so that reading a marker never waits for,
 * nor orders, the application's work. Markers are read once per kernel and
 * device. */
static int read_marker(CUdeviceptr address, void *value, size_t bytes) {
  cudaStream_t stream;
  cudaError_t status = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  if (status != cudaSuccess)
    return status;
  status = cudaMemcpyAsync(value, (const void *)(uintptr_t)address, bytes, cudaMemcpyDeviceToHost, stream);
  if (status == cudaSuccess)
    status = cudaStreamSynchronize(stream);
  cudaError_t destroy_status = cudaStreamDestroy(stream);
  return status != cudaSuccess ? status : destroy_status;
}

static int cuda_kernel_global(const void *host_stub, const char *name, void *value, size_t bytes) {
  memset(value, 0, bytes);
  CUmodule module;
  int status = cuda_module(host_stub, &module);
  if (status != cudaSuccess)
    return status;
  CUdeviceptr address;
  size_t found_bytes;
  CUresult lookup = driver.module_get_global(&address, &found_bytes, module, name);
  if (lookup == CUDA_ERROR_NOT_FOUND)
    return cudaSuccess; /* none: the plugin left this kernel as written, or placed no in-task points */
  if (lookup != CUDA_SUCCESS || found_bytes != bytes)
    return cudaErrorInvalidSymbol;
  return read_marker(address, value, bytes);
}

static int cuda_kernel_param_sizes(const void *host_stub, uint32_t capacity, size_t *sizes, uint32_t *count) {
  CUfunction function;
  *count = 0;
  int status = cuda_function(host_stub, &function);
  if (status != cudaSuccess)
    return status;
  /* The stub's kernel is the kernel as written (ABI 9): its parameters end
   * where the query first fails. */
  for (uint32_t index = 0;; index++) {
    size_t offset, size;
    if (driver.func_get_param_info(function, index, &offset, &size) != CUDA_SUCCESS)
      return cudaSuccess;
    if (sizes && index < capacity)
      sizes[index] = size;
    *count = index + 1;
  }
}

static int cuda_occupancy(const void *host_stub, uint32_t block_threads, size_t dynamic_shared_bytes,
                          uint32_t *ctas_per_sm) {
  int blocks = 0;
  cudaError_t status =
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, host_stub, (int)block_threads, dynamic_shared_bytes);
  *ctas_per_sm = blocks > 0 ? (uint32_t)blocks : 0;
  return status;
}

/* The allocation units are not attributes: 256 registers per warp and 128
 * bytes of shared memory on every architecture since Volta (the occupancy
 * calculator's tables). */
static int cuda_sm_limits(int device, preempt_sm_limits *limits) {
  static const struct {
    enum cudaDeviceAttr attribute;
    size_t offset;
  } reads[] = {
      {cudaDevAttrMaxThreadsPerMultiProcessor, offsetof(preempt_sm_limits, max_threads)},
      {cudaDevAttrMaxBlocksPerMultiprocessor, offsetof(preempt_sm_limits, max_ctas)},
      {cudaDevAttrMaxRegistersPerMultiprocessor, offsetof(preempt_sm_limits, registers)},
      {cudaDevAttrMaxSharedMemoryPerMultiprocessor, offsetof(preempt_sm_limits, shared_bytes)},
      {cudaDevAttrReservedSharedMemoryPerBlock, offsetof(preempt_sm_limits, shared_reserved)},
      {cudaDevAttrWarpSize, offsetof(preempt_sm_limits, warp_size)},
  };
  memset(limits, 0, sizeof *limits);
  for (size_t index = 0; index < sizeof reads / sizeof reads[0]; index++) {
    int value = 0;
    cudaError_t status = cudaDeviceGetAttribute(&value, reads[index].attribute, device);
    if (status != cudaSuccess)
      return status;
    *(uint32_t *)((char *)limits + reads[index].offset) = value > 0 ? (uint32_t)value : 0;
  }
  limits->register_unit = 256;
  limits->shared_unit = 128;
  return 0;
}

static int cuda_kernel_footprint(const void *host_stub, void *function, uint32_t *registers_per_thread,
                                 uint32_t *static_shared_bytes) {
  if (function) {
    int registers = 0, shared = 0;
    int status = load_driver();
    if (status != cudaSuccess)
      return status;
    if (driver.func_get_attribute(&registers, CU_FUNC_ATTRIBUTE_NUM_REGS, (CUfunction)function) != CUDA_SUCCESS ||
        driver.func_get_attribute(&shared, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, (CUfunction)function) != CUDA_SUCCESS)
      return cudaErrorInvalidDeviceFunction;
    *registers_per_thread = registers > 0 ? (uint32_t)registers : 0;
    *static_shared_bytes = shared > 0 ? (uint32_t)shared : 0;
    return cudaSuccess;
  }
  struct cudaFuncAttributes attributes;
  cudaError_t status = cudaFuncGetAttributes(&attributes, host_stub);
  if (status != cudaSuccess)
    return status;
  *registers_per_thread = attributes.numRegs > 0 ? (uint32_t)attributes.numRegs : 0;
  *static_shared_bytes = (uint32_t)attributes.sharedSizeBytes;
  return 0;
}

static int cuda_copy_device_async(void *device_destination, const void *device_source, size_t bytes, void *stream) {
  return cudaMemcpyAsync(device_destination, device_source, bytes, cudaMemcpyDeviceToDevice, (cudaStream_t)stream);
}

static int cuda_copy_to_host(void *host, const void *device_pointer, size_t bytes, void *stream) {
  cudaError_t status = cudaMemcpyAsync(host, device_pointer, bytes, cudaMemcpyDeviceToHost, (cudaStream_t)stream);
  if (status == cudaSuccess)
    status = cudaStreamSynchronize((cudaStream_t)stream);
  return status;
}

static int cuda_device_alloc(void **pointer, size_t bytes) { return cudaMalloc(pointer, bytes); }
static int cuda_device_free(void *pointer) { return cudaFree(pointer); }
static int cuda_device_zero(void *pointer, size_t bytes) {
  cudaError_t status = cudaMemset(pointer, 0, bytes);
  return status != cudaSuccess ? status : cudaDeviceSynchronize();
}

static int cuda_device_zero_async(void *pointer, size_t bytes, void *stream) {
  return cudaMemsetAsync(pointer, 0, bytes, (cudaStream_t)stream);
}

static int cuda_stream_create(void **stream, int urgent) {
  int least = 0, greatest = 0;
  cudaError_t status = cudaDeviceGetStreamPriorityRange(&least, &greatest);
  if (status != cudaSuccess)
    return status;
  return cudaStreamCreateWithPriority((cudaStream_t *)stream, cudaStreamNonBlocking, urgent ? greatest : least);
}
static int cuda_stream_destroy(void *stream) { return cudaStreamDestroy((cudaStream_t)stream); }

/* One batch of writes: evicting from every SM writes the whole yield mask,
 * and each API call on the way adds to the eviction's latency. */
static int cuda_stream_write_words(void *stream, uint32_t *device_words, const uint32_t *values, uint32_t count) {
  int status = load_driver();
  if (status != cudaSuccess)
    return status;
  CUstreamBatchMemOpParams writes[PREEMPT_YIELD_MASK_WORDS];
  if (count == 0 || count > PREEMPT_YIELD_MASK_WORDS)
    return cudaErrorInvalidValue;
  memset(writes, 0, sizeof writes);
  for (uint32_t index = 0; index < count; index++) {
    writes[index].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_32;
    writes[index].writeValue.address = (CUdeviceptr)(uintptr_t)(device_words + index);
    writes[index].writeValue.value = values[index];
    writes[index].writeValue.flags = CU_STREAM_WRITE_VALUE_DEFAULT;
  }
  /* The driver's own code, not a catch-all: CUresult and cudaError_t share their numbers for what can happen here
   * (a sticky 700 from a faulted kernel read as "not supported" once hid a fault in the corpus). */
  return (int)driver.stream_batch_mem_op((CUstream)stream, count, writes, 0);
}

static int cuda_stream_wait_u32(void *stream, void *device_word, uint32_t value) {
  int status = load_driver();
  if (status != cudaSuccess)
    return status;
  /* No FLUSH flag: it concerns writes from remote (peer) devices and the
   * H100 refuses it (CAN_FLUSH_REMOTE_WRITES = 0). done_generation is
   * published once the results are visible (control_block.h). */
  return (int)driver.stream_wait_value32((CUstream)stream, (CUdeviceptr)(uintptr_t)device_word, value,
                                         CU_STREAM_WAIT_VALUE_EQ);
}

static int cuda_stream_wait_event(void *stream, void *event) {
  return cudaStreamWaitEvent((cudaStream_t)stream, (cudaEvent_t)event, 0);
}

static int cuda_event_create(void **event, int timed) {
  return cudaEventCreateWithFlags((cudaEvent_t *)event, timed ? cudaEventDefault : cudaEventDisableTiming);
}
static int cuda_event_destroy(void *event) { return cudaEventDestroy((cudaEvent_t)event); }
static int cuda_event_record(void *event, void *stream) {
  return cudaEventRecord((cudaEvent_t)event, (cudaStream_t)stream);
}
static int cuda_event_query(void *event) { return cudaEventQuery((cudaEvent_t)event); }
static int cuda_event_synchronize(void *event) { return cudaEventSynchronize((cudaEvent_t)event); }
static int cuda_event_elapsed_ms(void *start, void *end, float *milliseconds) {
  return cudaEventElapsedTime(milliseconds, (cudaEvent_t)start, (cudaEvent_t)end);
}

static int cuda_launch(const void *host_stub, preempt_dim3 grid, preempt_dim3 block, void **args,
                       size_t dynamic_shared_bytes, void *stream) {
  dim3 cuda_grid = {grid.x, grid.y, grid.z};
  dim3 cuda_block = {block.x, block.y, block.z};
  return cudaLaunchKernel(host_stub, cuda_grid, cuda_block, args, dynamic_shared_bytes, (cudaStream_t)stream);
}

/* The copy lives in the converted kernel's module: the module the runtime
 * loaded for the stub (as for the marker), searched by name. Once per kernel
 * and device. */
static int cuda_original_kernel(const void *host_stub, const char *name, void **function) {
  *function = NULL;
  CUmodule module;
  int status = cuda_module(host_stub, &module);
  if (status != cudaSuccess)
    return status;
  CUfunction copy;
  CUresult lookup = driver.module_get_function(&copy, module, name);
  if (lookup == CUDA_ERROR_NOT_FOUND)
    return cudaSuccess; /* built by a plugin without copies: launches stay persistent */
  if (lookup != CUDA_SUCCESS)
    return cudaErrorInvalidDeviceFunction;
  *function = copy;
  return cudaSuccess;
}

/* The runtime API launches only what the program registered, and the copy is
 * not registered: the driver launches it. The runtime API binds its context
 * to a thread lazily, so on a thread whose first CUDA call this is there is
 * no current context yet (CUDA_ERROR_INVALID_CONTEXT): the caller then
 * launches the persistent form, whose runtime calls bind it. Any failure
 * only says to do that, so a CUresult need not be translated.
 * A function takes, without cudaFuncSetAttribute, at most 48 KiB of shared
 * memory in all, static and dynamic. A form has static shared memory the
 * kernel as written has not (the persistent form's task context), so a
 * launch the kernel as written takes as is (HeCBench bincount: 48 KiB of
 * dynamic shared memory) can exceed the form's limit: the form's own limit
 * is raised to the launch's, or to what the application allowed its kernel
 * (the stub's function) if more. Fails where the form's static shared memory
 * and the launch's exceed what the device allows a block: the form cannot
 * run that launch. */
static int take_dynamic_shared_limit(const void *host_stub, void *function, size_t dynamic_shared_bytes) {
  /* Without dynamic shared memory nothing is asked of the driver. */
  if (dynamic_shared_bytes == 0)
    return cudaSuccess;
  if (dynamic_shared_bytes > INT32_MAX)
    return cudaErrorInvalidValue;
  int limit = 0;
  if (driver.func_get_attribute(&limit, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (CUfunction)function) !=
      CUDA_SUCCESS)
    return cudaErrorInvalidValue;
  if (dynamic_shared_bytes <= (size_t)limit)
    return cudaSuccess;
  int wanted = (int)dynamic_shared_bytes, allowed = 0;
  CUfunction written;
  if (cuda_function(host_stub, &written) == cudaSuccess &&
      driver.func_get_attribute(&allowed, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, written) == CUDA_SUCCESS &&
      allowed > wanted &&
      driver.func_set_attribute((CUfunction)function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, allowed) ==
          CUDA_SUCCESS)
    return cudaSuccess;
  if (driver.func_set_attribute((CUfunction)function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, wanted) !=
      CUDA_SUCCESS)
    return cudaErrorInvalidValue;
  return cudaSuccess;
}

/* A form's limit was raised by its occupancy query, which launch.c makes
 * before any launch of a configuration (kernel_occupancy, cached), and
 * limits only grow: a launch asks the driver nothing more unless it needs
 * more than the default 48 KiB, which only the copy (never queried, the
 * same static shared memory as the kernel as written) can. */
#define DEFAULT_DYNAMIC_SHARED_LIMIT (48u * 1024u)

static int cuda_launch_function(const void *host_stub, void *function, preempt_dim3 grid, preempt_dim3 block,
                                void **args, size_t dynamic_shared_bytes, void *stream) {
  int status = dynamic_shared_bytes > DEFAULT_DYNAMIC_SHARED_LIMIT
                   ? take_dynamic_shared_limit(host_stub, function, dynamic_shared_bytes)
                   : cudaSuccess;
  if (status != cudaSuccess)
    return status;
  CUresult result = driver.launch_kernel((CUfunction)function, grid.x, grid.y, grid.z, block.x, block.y, block.z,
                                         (unsigned int)dynamic_shared_bytes, (CUstream)stream, args, NULL);
  /* The driver's own code (CUresult and cudaError_t agree on the launch
   * errors), not 719 for every refusal: a launch the driver refuses is not a
   * fault of the kernel. */
  return result == CUDA_SUCCESS ? cudaSuccess : (int)result;
}

/* Called after the converted kernel's own occupancy query (runtime API), which
 * binds the thread's context. */
static int cuda_function_occupancy(const void *host_stub, void *function, uint32_t block_threads,
                                   size_t dynamic_shared_bytes, uint32_t *ctas_per_sm) {
  *ctas_per_sm = 0;
  /* A form that cannot take this much dynamic shared memory beside its own
   * holds no CTA at all: occupancy 0, and launch.c runs the launch as written. */
  if (take_dynamic_shared_limit(host_stub, function, dynamic_shared_bytes) != cudaSuccess)
    return cudaSuccess;
  int blocks = 0;
  if (driver.occupancy_max_active_blocks(&blocks, (CUfunction)function, (int)block_threads, dynamic_shared_bytes) !=
      CUDA_SUCCESS)
    return cudaErrorInvalidValue;
  *ctas_per_sm = blocks > 0 ? (uint32_t)blocks : 0;
  return cudaSuccess;
}

static int cuda_stream_capturing(void *stream, int *capturing) {
  enum cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  cudaError_t status = cudaStreamIsCapturing((cudaStream_t)stream, &capture);
  *capturing = capture != cudaStreamCaptureStatusNone;
  return status;
}

static int cuda_host_words_alloc(uint32_t **host, void **device_view, uint32_t count) {
  /* Portable: a held launch of any device waits on the same page. */
  cudaError_t status = cudaHostAlloc((void **)host, count * sizeof **host, cudaHostAllocMapped | cudaHostAllocPortable);
  if (status != cudaSuccess)
    return status;
  memset(*host, 0, count * sizeof **host);
  status = cudaHostGetDevicePointer(device_view, *host, 0);
  if (status != cudaSuccess) {
    cudaFreeHost(*host);
    *host = NULL;
  }
  return status;
}
static int cuda_host_words_free(uint32_t *host) { return cudaFreeHost(host); }

static int cuda_stream_priority(void *stream, int *priority) {
  return cudaStreamGetPriority((cudaStream_t)stream, priority);
}

static int cuda_capture_mode_relax(int *saved) {
  enum cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  cudaError_t status = cudaThreadExchangeStreamCaptureMode(&mode);
  *saved = (int)mode;
  return status;
}

static int cuda_capture_mode_restore(int saved) {
  enum cudaStreamCaptureMode mode = (enum cudaStreamCaptureMode)saved;
  return cudaThreadExchangeStreamCaptureMode(&mode);
}

static int cuda_module_loading_lazy(int *lazy) {
  CUresult (*get_loading_mode)(CUmoduleLoadingMode *) = NULL;
  int status = preempt_cuda_driver_entry("cuModuleGetLoadingMode", (void **)&get_loading_mode);
  if (status != cudaSuccess)
    return status;
  CUmoduleLoadingMode mode = CU_MODULE_EAGER_LOADING;
  if (get_loading_mode(&mode) != CUDA_SUCCESS)
    return cudaErrorNotSupported;
  *lazy = mode == CU_MODULE_LAZY_LOADING;
  return cudaSuccess;
}

static const preempt_gpu_ops cuda_ops = {
    .api_name = "CUDA",
    .invalid_value = cudaErrorInvalidValue,
    .out_of_memory = cudaErrorMemoryAllocation,
    .invalid_configuration = cudaErrorInvalidConfiguration,
    .not_supported = cudaErrorNotSupported,
    .not_ready = cudaErrorNotReady,
    .error_string = cuda_error_string,
    .current_device = cuda_current_device,
    .set_device = cuda_set_device,
    .device_count = cuda_device_count,
    .sm_count = cuda_sm_count,
    .device_uuid = cuda_device_uuid,
    .kernel_global = cuda_kernel_global,
    .kernel_param_sizes = cuda_kernel_param_sizes,
    .occupancy = cuda_occupancy,
    .sm_limits = cuda_sm_limits,
    .kernel_footprint = cuda_kernel_footprint,
    .copy_device_async = cuda_copy_device_async,
    .copy_to_host = cuda_copy_to_host,
    .device_alloc = cuda_device_alloc,
    .device_free = cuda_device_free,
    .device_zero = cuda_device_zero,
    .device_zero_async = cuda_device_zero_async,
    .stream_create = cuda_stream_create,
    .stream_destroy = cuda_stream_destroy,
    .stream_write_words = cuda_stream_write_words,
    .stream_wait_u32 = cuda_stream_wait_u32,
    .stream_wait_event = cuda_stream_wait_event,
    .event_create = cuda_event_create,
    .event_destroy = cuda_event_destroy,
    .event_record = cuda_event_record,
    .event_query = cuda_event_query,
    .event_synchronize = cuda_event_synchronize,
    .event_elapsed_ms = cuda_event_elapsed_ms,
    .launch = cuda_launch,
    .original_kernel = cuda_original_kernel,
    .launch_function = cuda_launch_function,
    .function_occupancy = cuda_function_occupancy,
    .publisher_load = preempt_cuda_publisher_load,
    .publish_relaunch = preempt_cuda_publish_relaunch,
    .stream_capturing = cuda_stream_capturing,
    .stream_priority = cuda_stream_priority,
    .host_words_alloc = cuda_host_words_alloc,
    .host_words_free = cuda_host_words_free,
    .capture_mode_relax = cuda_capture_mode_relax,
    .capture_mode_restore = cuda_capture_mode_restore,
    .module_loading_lazy = cuda_module_loading_lazy,
};

const preempt_gpu_ops *preempt_gpu_backend(void) { return &cuda_ops; }
