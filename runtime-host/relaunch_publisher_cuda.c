/* relaunch_publisher_cuda.c: the runtime's one kernel, which counts a finished relaunch's tasks and publishes completion.
 * EffiSha §6 (the runtime keeps stream order across evictions); control_block.h says why it lives outside the kernels. */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stddef.h>

#include "gpu_cuda.h"
#include "preempt/control_block.h"
#include "relaunch_publisher_ptx.h"

/* Its PTX hard-codes these offsets and the tag layout (generation << 32). */
_Static_assert(offsetof(preempt_control_block, task_word) == 0, "publisher PTX: task_word at 0");
_Static_assert(offsetof(preempt_control_block, done_word) == 16, "publisher PTX: done_word at 16");
_Static_assert(offsetof(preempt_control_block, relaunch_word) == 32, "publisher PTX: relaunch_word at 32");
_Static_assert(offsetof(preempt_control_block, done_generation) == 48, "publisher PTX: done_generation at 48");
_Static_assert(offsetof(preempt_control_block, drain_hold) == 52, "publisher PTX: drain_hold at 52");
_Static_assert(PREEMPT_CONTROL_LANES == 2, "publisher PTX: lane = generation & 1");

static struct {
  CUresult (*module_load_data)(CUmodule *, const void *);
  CUresult (*module_get_function)(CUfunction *, CUmodule, const char *);
  CUresult (*launch_kernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                            CUstream, void **, void **);
} publisher_driver;

int preempt_cuda_publisher_load(void **publisher) {
  *publisher = NULL;
  int status = preempt_cuda_driver_entry("cuModuleLoadData", (void **)&publisher_driver.module_load_data);
  if (status == cudaSuccess)
    status = preempt_cuda_driver_entry("cuModuleGetFunction", (void **)&publisher_driver.module_get_function);
  if (status == cudaSuccess)
    status = preempt_cuda_driver_entry("cuLaunchKernel", (void **)&publisher_driver.launch_kernel);
  if (status != cudaSuccess)
    return status;
  /* Into the current device's primary context, which the runtime API made
   * current (the caller has allocated on this device already). */
  CUmodule module;
  if (publisher_driver.module_load_data(&module, publisher_ptx) != CUDA_SUCCESS)
    return cudaErrorInvalidPtx;
  CUfunction function;
  if (publisher_driver.module_get_function(&function, module, "preempt_publish_relaunch") != CUDA_SUCCESS)
    return cudaErrorInvalidDeviceFunction;
  *publisher = function;
  return cudaSuccess;
}

int preempt_cuda_publish_relaunch(void *publisher, void *stream, void *control, uint32_t generation,
                                  uint32_t task_count) {
  void *args[] = {&control, &generation, &task_count};
  CUresult result =
      publisher_driver.launch_kernel((CUfunction)publisher, 1, 1, 1, 1, 1, 1, 0, (CUstream)stream, args, NULL);
  return result == CUDA_SUCCESS ? cudaSuccess : cudaErrorLaunchFailure;
}
