/* launch.c: preempt_launch_kernel, which runs a converted kernel as a persistent grid sized by occupancy.
 * FLEP §4.1 (persistent CTAs fill the GPU, tasks come from a counter), EffiSha §6 (launch through the runtime). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "preempt/task_grid.h"
#include "runtime.h"

/* Launches in flight per device before a launch waits for the oldest. */
#define PREEMPT_CONTROL_POOL_CAPACITY 1024
#define PREEMPT_KERNEL_DESC_VERSION 1u

static preempt_kernel_state *kernel_state(preempt_runtime *runtime, preempt_kernel_desc *desc) {
  if (desc->runtime_state)
    return desc->runtime_state;
  preempt_kernel_state *state = calloc(1, sizeof *state);
  if (!state)
    return NULL;
  state->desc = desc;
  state->next = runtime->kernels;
  runtime->kernels = state;
  desc->runtime_state = state;
  return state;
}

static int device_state(preempt_runtime *runtime, int device, preempt_device_state **out) {
  preempt_device_state *state = &runtime->devices[device];
  if (!state->initialized) {
    int status = runtime->gpu->sm_count(device, &state->sm_count);
    if (status != 0)
      return preempt_report_gpu(runtime->gpu, status, "reading the SM count", NULL);
    status = preempt_control_pool_init(&state->control_pool, runtime->gpu, PREEMPT_CONTROL_POOL_CAPACITY);
    if (status == -1) {
      preempt_report("out of host memory for the control-block pool");
      return runtime->gpu->out_of_memory;
    }
    if (status != 0)
      return preempt_report_gpu(runtime->gpu, status, "allocating the control-block pool", NULL);
    state->initialized = 1;
  }
  *out = state;
  return 0;
}

/* Finds out once per device whether the plugin converted this kernel. */
static int resolve_kernel(preempt_runtime *runtime, preempt_kernel_state *kernel, int device) {
  if (kernel->on_device[device].resolved)
    return 0;
  const preempt_kernel_desc *desc = kernel->desc;
  char marker_name[4096];
  int length = snprintf(marker_name, sizeof marker_name, "%s%s", PREEMPT_KERNEL_MARKER_PREFIX, desc->name);
  if (length < 0 || (size_t)length >= sizeof marker_name) {
    preempt_report("kernel name too long: '%.64s...'", desc->name);
    return runtime->gpu->invalid_value;
  }
  uint32_t abi_version = 0;
  int status = runtime->gpu->kernel_marker(desc->host_stub, marker_name, &abi_version);
  if (status != 0)
    return preempt_report_gpu(runtime->gpu, status, "looking up the preempt marker", desc->name);
  if (abi_version != 0 && abi_version != PREEMPT_KERNEL_ABI_VERSION) {
    preempt_report("kernel '%s' was converted for kernel ABI %u but this runtime speaks %u: rebuild it with the "
                   "matching libpreempt.so",
                   desc->name, abi_version, PREEMPT_KERNEL_ABI_VERSION);
    return runtime->gpu->not_supported;
  }
  kernel->on_device[device].converted = abi_version != 0;
  kernel->on_device[device].resolved = 1;
  return 0;
}

static int persistent_launch(preempt_runtime *runtime, preempt_kernel_state *kernel, int device,
                             preempt_grid_dims grid, preempt_dim3 block, void **args, size_t shared_bytes,
                             void *stream) {
  const preempt_gpu_ops *gpu = runtime->gpu;
  const preempt_kernel_desc *desc = kernel->desc;
  uint64_t task_count = preempt_grid_task_count(grid);
  if (task_count > PREEMPT_MAX_TASKS) {
    preempt_report("kernel '%s': grid of %llu blocks exceeds the %u a preemptible launch supports", desc->name,
                   (unsigned long long)task_count, PREEMPT_MAX_TASKS);
    return gpu->invalid_configuration;
  }
  if (desc->param_count > PREEMPT_MAX_KERNEL_PARAMS - PREEMPT_KERNEL_EXTRA_PARAMS) {
    preempt_report("kernel '%s' has %u parameters, more than the %u supported", desc->name, desc->param_count,
                   PREEMPT_MAX_KERNEL_PARAMS - PREEMPT_KERNEL_EXTRA_PARAMS);
    return gpu->invalid_value;
  }
  preempt_device_state *device_info = NULL;
  int status = device_state(runtime, device, &device_info);
  if (status != 0)
    return status;

  uint32_t block_threads = block.x * block.y * block.z;
  preempt_kernel_on_device *on_device = &kernel->on_device[device];
  if (on_device->cached_block_threads != block_threads || on_device->cached_shared_bytes != shared_bytes) {
    status = gpu->occupancy(desc->host_stub, block_threads, shared_bytes, &on_device->ctas_per_sm);
    if (status != 0)
      return preempt_report_gpu(gpu, status, "querying occupancy", desc->name);
    on_device->cached_block_threads = block_threads;
    on_device->cached_shared_bytes = shared_bytes;
  }
  /* Occupancy 0 means the block cannot run at all: launch one CTA anyway so
   * the GPU API reports its own error for this configuration. */
  uint32_t ctas = preempt_persistent_cta_count(on_device->ctas_per_sm, device_info->sm_count, task_count);
  if (ctas == 0)
    ctas = 1;

  uint32_t slot;
  status = preempt_control_pool_acquire(&device_info->control_pool, gpu, &slot);
  if (status != 0)
    return preempt_report_gpu(gpu, status, "waiting for a free control block", desc->name);
  void **extended_args = malloc((desc->param_count + PREEMPT_KERNEL_EXTRA_PARAMS) * sizeof *extended_args);
  if (!extended_args) {
    preempt_report("out of host memory launching kernel '%s'", desc->name);
    return gpu->out_of_memory;
  }
  if (desc->param_count)
    memcpy(extended_args, args, desc->param_count * sizeof *extended_args);
  /* The launch parameters of control_block.h, after the kernel's own. */
  void *control = &device_info->control_pool.device_blocks[slot];
  unsigned int task_count_param = (unsigned int)task_count;
  unsigned int grid_param[3] = {grid.x, grid.y, grid.z};
  extended_args[desc->param_count] = &control;
  extended_args[desc->param_count + 1] = &task_count_param;
  extended_args[desc->param_count + 2] = &grid_param[0];
  extended_args[desc->param_count + 3] = &grid_param[1];
  extended_args[desc->param_count + 4] = &grid_param[2];
  preempt_dim3 persistent_grid = {ctas, 1, 1};
  status = gpu->launch(desc->host_stub, persistent_grid, block, extended_args, shared_bytes, stream);
  free(extended_args);
  if (status != 0)
    return preempt_report_gpu(gpu, status, "launching the persistent grid", desc->name);
  status = preempt_control_pool_mark_in_flight(&device_info->control_pool, gpu, slot, stream);
  if (status != 0)
    return preempt_report_gpu(gpu, status, "recording the launch's completion", desc->name);
  on_device->last_persistent_ctas = ctas;
  on_device->launches++;
  return 0;
}

int preempt_launch_kernel(preempt_kernel_desc *desc, preempt_dim3 grid, preempt_dim3 block, void **args,
                          size_t dynamic_shared_bytes, void *stream) {
  preempt_runtime *runtime = preempt_runtime_lock();
  const preempt_gpu_ops *gpu = runtime->gpu;
  int status = 0;
  if (!desc || desc->desc_version != PREEMPT_KERNEL_DESC_VERSION || !desc->host_stub || !desc->name) {
    preempt_report("launch with an invalid kernel descriptor (built by another libpreempt.so version?)");
    status = gpu->invalid_value;
    goto done;
  }
  int device;
  status = gpu->current_device(&device);
  if (status != 0) {
    preempt_report_gpu(gpu, status, "finding the current device", desc->name);
    goto done;
  }
  if (device < 0 || device >= PREEMPT_MAX_DEVICES) {
    preempt_report("device %d is beyond the %d the runtime supports", device, PREEMPT_MAX_DEVICES);
    status = gpu->invalid_value;
    goto done;
  }
  preempt_kernel_state *kernel = kernel_state(runtime, desc);
  if (!kernel) {
    preempt_report("out of host memory launching kernel '%s'", desc->name);
    status = gpu->out_of_memory;
    goto done;
  }
  status = resolve_kernel(runtime, kernel, device);
  if (status != 0)
    goto done;
  preempt_grid_dims original = {grid.x, grid.y, grid.z};
  /* An unconverted kernel, or an empty grid that the API must reject itself:
   * the launch goes through exactly as written. */
  if (!kernel->on_device[device].converted || preempt_grid_task_count(original) == 0) {
    status = gpu->launch(desc->host_stub, grid, block, args, dynamic_shared_bytes, stream);
    if (status == 0)
      kernel->on_device[device].launches++;
    goto done;
  }
  status = persistent_launch(runtime, kernel, device, original, block, args, dynamic_shared_bytes, stream);
done:
  preempt_runtime_unlock(runtime);
  return status;
}

preempt_status preempt_get_kernel_info(preempt_kernel_desc *desc, preempt_kernel_info *info) {
  if (!desc || !info)
    return PREEMPT_ERROR_INVALID_ARGUMENT;
  preempt_runtime *runtime = preempt_runtime_lock();
  preempt_status result = PREEMPT_OK;
  int device;
  preempt_kernel_state *kernel = desc->runtime_state;
  if (runtime->gpu->current_device(&device) != 0 || device < 0 || device >= PREEMPT_MAX_DEVICES) {
    result = PREEMPT_ERROR_GPU;
  } else if (!kernel || !kernel->on_device[device].resolved) {
    result = PREEMPT_ERROR_INVALID_ARGUMENT; /* never launched on this device */
  } else {
    memset(info, 0, sizeof *info);
    info->converted = kernel->on_device[device].converted;
    info->ctas_per_sm = kernel->on_device[device].ctas_per_sm;
    info->sm_count = runtime->devices[device].sm_count;
    info->last_persistent_ctas = kernel->on_device[device].last_persistent_ctas;
    info->launches = kernel->on_device[device].launches;
  }
  preempt_runtime_unlock(runtime);
  return result;
}
