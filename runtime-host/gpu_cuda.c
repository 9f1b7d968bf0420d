/* gpu_cuda.c: the CUDA implementation of gpu.h, on the CUDA runtime API (driver calls through entry points).
 * Supplies FLEP §3's launch primitives: occupancy, device memory, stream-ordered copies, launches. */
#include <cuda.h>
#include <cuda_runtime_api.h>

#include "gpu.h"

static const char *cuda_error_string(int code) { return cudaGetErrorString((cudaError_t)code); }

static int cuda_current_device(int *device) { return cudaGetDevice(device); }

static int cuda_sm_count(int device, uint32_t *count) {
  int value = 0;
  cudaError_t status = cudaDeviceGetAttribute(&value, cudaDevAttrMultiProcessorCount, device);
  *count = (uint32_t)value;
  return status;
}

typedef CUresult (*func_get_module_fn)(CUmodule *, CUfunction);
typedef CUresult (*module_get_global_fn)(CUdeviceptr *, size_t *, CUmodule, const char *);

/* A private non-blocking stream, so that reading a marker never waits for,
 * nor orders, the application's work. Created once per call: markers are read
 * once per kernel and device. */
static int read_marker(CUdeviceptr address, uint32_t *value) {
  cudaStream_t stream;
  cudaError_t status = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  if (status != cudaSuccess)
    return status;
  status = cudaMemcpyAsync(value, (const void *)(uintptr_t)address, sizeof *value, cudaMemcpyDeviceToHost, stream);
  if (status == cudaSuccess)
    status = cudaStreamSynchronize(stream);
  cudaError_t destroy_status = cudaStreamDestroy(stream);
  return status != cudaSuccess ? status : destroy_status;
}

static int cuda_kernel_marker(const void *host_stub, const char *marker_name, uint32_t *abi_version) {
  static func_get_module_fn func_get_module;
  static module_get_global_fn module_get_global;
  enum cudaDriverEntryPointQueryResult found;
  cudaError_t status;
  *abi_version = 0;
  if (!func_get_module) {
    status = cudaGetDriverEntryPointByVersion("cuFuncGetModule", (void **)&func_get_module, 12000,
                                              cudaEnableDefault, &found);
    if (status != cudaSuccess || found != cudaDriverEntryPointSuccess)
      return status != cudaSuccess ? status : cudaErrorSymbolNotFound;
    status = cudaGetDriverEntryPointByVersion("cuModuleGetGlobal", (void **)&module_get_global, 12000,
                                              cudaEnableDefault, &found);
    if (status != cudaSuccess || found != cudaDriverEntryPointSuccess)
      return status != cudaSuccess ? status : cudaErrorSymbolNotFound;
  }
  cudaFunction_t function;
  status = cudaGetFuncBySymbol(&function, host_stub);
  if (status != cudaSuccess)
    return status;
  CUmodule module;
  if (func_get_module(&module, (CUfunction)function) != CUDA_SUCCESS)
    return cudaErrorInvalidDeviceFunction;
  CUdeviceptr address;
  size_t bytes;
  CUresult lookup = module_get_global(&address, &bytes, module, marker_name);
  if (lookup == CUDA_ERROR_NOT_FOUND)
    return cudaSuccess; /* no marker: the plugin left this kernel as written */
  if (lookup != CUDA_SUCCESS || bytes != sizeof *abi_version)
    return cudaErrorInvalidSymbol;
  return read_marker(address, abi_version);
}

static int cuda_occupancy(const void *host_stub, uint32_t block_threads, size_t dynamic_shared_bytes,
                          uint32_t *ctas_per_sm) {
  int blocks = 0;
  cudaError_t status =
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, host_stub, (int)block_threads, dynamic_shared_bytes);
  *ctas_per_sm = blocks > 0 ? (uint32_t)blocks : 0;
  return status;
}

static int cuda_device_alloc(void **pointer, size_t bytes) { return cudaMalloc(pointer, bytes); }
static int cuda_device_free(void *pointer) { return cudaFree(pointer); }
static int cuda_device_zero(void *pointer, size_t bytes) {
  cudaError_t status = cudaMemset(pointer, 0, bytes);
  return status != cudaSuccess ? status : cudaDeviceSynchronize();
}

static int cuda_event_create(void **event) {
  return cudaEventCreateWithFlags((cudaEvent_t *)event, cudaEventDisableTiming);
}
static int cuda_event_destroy(void *event) { return cudaEventDestroy((cudaEvent_t)event); }
static int cuda_event_record(void *event, void *stream) {
  return cudaEventRecord((cudaEvent_t)event, (cudaStream_t)stream);
}
static int cuda_event_synchronize(void *event) { return cudaEventSynchronize((cudaEvent_t)event); }

static int cuda_launch(const void *host_stub, preempt_dim3 grid, preempt_dim3 block, void **args,
                       size_t dynamic_shared_bytes, void *stream) {
  dim3 cuda_grid = {grid.x, grid.y, grid.z};
  dim3 cuda_block = {block.x, block.y, block.z};
  return cudaLaunchKernel(host_stub, cuda_grid, cuda_block, args, dynamic_shared_bytes, (cudaStream_t)stream);
}

static const preempt_gpu_ops cuda_ops = {
    .api_name = "CUDA",
    .invalid_value = cudaErrorInvalidValue,
    .out_of_memory = cudaErrorMemoryAllocation,
    .invalid_configuration = cudaErrorInvalidConfiguration,
    .not_supported = cudaErrorNotSupported,
    .error_string = cuda_error_string,
    .current_device = cuda_current_device,
    .sm_count = cuda_sm_count,
    .kernel_marker = cuda_kernel_marker,
    .occupancy = cuda_occupancy,
    .device_alloc = cuda_device_alloc,
    .device_free = cuda_device_free,
    .device_zero = cuda_device_zero,
    .event_create = cuda_event_create,
    .event_destroy = cuda_event_destroy,
    .event_record = cuda_event_record,
    .event_synchronize = cuda_event_synchronize,
    .launch = cuda_launch,
};

const preempt_gpu_ops *preempt_gpu_backend(void) { return &cuda_ops; }
