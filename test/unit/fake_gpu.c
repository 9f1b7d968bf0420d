/* fake_gpu.c: a gpu.h backend that records calls instead of touching a GPU, for runtime unit tests.
 * Lets CI check FLEP §3's launch logic (grid sizing, control blocks, pass-through) on a machine with no GPU. */
#include <stdlib.h>
#include <string.h>

#include "fake_gpu.h"

fake_gpu_state fake_gpu;

static const char *fake_error_string(int code) { return code == FAKE_ERROR_LAUNCH ? "fake launch failure" : "fake error"; }
static int fake_current_device(int *device) { *device = 0; return 0; }
static int fake_sm_count(int device, uint32_t *count) { (void)device; *count = fake_gpu.sm_count; return 0; }
static int fake_kernel_marker(const void *stub, const char *marker_name, uint32_t *abi_version) {
  (void)stub;
  fake_gpu.marker_lookups++;
  strncpy(fake_gpu.last_marker_name, marker_name, sizeof fake_gpu.last_marker_name - 1);
  *abi_version = fake_gpu.marker_abi;
  return 0;
}
static int fake_occupancy(const void *stub, uint32_t threads, size_t shared, uint32_t *ctas_per_sm) {
  (void)stub; (void)threads; (void)shared;
  fake_gpu.occupancy_queries++;
  *ctas_per_sm = fake_gpu.ctas_per_sm;
  return 0;
}
static int fake_device_alloc(void **pointer, size_t bytes) {
  if (fake_gpu.fail_device_alloc)
    return FAKE_ERROR_OUT_OF_MEMORY;
  *pointer = calloc(1, bytes);
  return 0;
}
static int fake_free(void *pointer) { free(pointer); return 0; }
static int fake_device_zero(void *pointer, size_t bytes) {
  memset(pointer, 0, bytes);
  fake_gpu.zeroed_bytes += (int)bytes;
  return 0;
}
static int fake_event_create(void **event) { *event = calloc(1, sizeof(int)); return 0; }
static int fake_event_record(void *event, void *stream) { (void)event; (void)stream; fake_gpu.event_records++; return 0; }
static int fake_event_synchronize(void *event) { (void)event; fake_gpu.event_waits++; return 0; }
static int fake_launch(const void *stub, preempt_dim3 grid, preempt_dim3 block, void **args, size_t shared,
                       void *stream) {
  (void)stub; (void)stream;
  fake_gpu.launches++;
  fake_gpu.last_grid = grid;
  fake_gpu.last_block = block;
  fake_gpu.last_shared = shared;
  fake_gpu.last_args = args;
  for (int index = 0; args && index < 4 && index <= fake_gpu.expected_params; index++)
    fake_gpu.last_arg_values[index] = args[index];
  if (args && fake_gpu.expected_params >= 0) {
    int first = fake_gpu.expected_params;
    fake_gpu.last_control = *(preempt_control_block **)args[first];
    fake_gpu.last_task_count = *(unsigned int *)args[first + 1];
    for (int axis = 0; axis < 3; axis++)
      fake_gpu.last_original_grid[axis] = *(unsigned int *)args[first + 2 + axis];
  }
  if (block.x * block.y * block.z > 1024)
    return FAKE_ERROR_LAUNCH; /* what a real API says about an impossible block */
  return 0;
}

static const preempt_gpu_ops fake_ops = {
    .api_name = "FAKE",
    .invalid_value = FAKE_ERROR_INVALID_VALUE,
    .out_of_memory = FAKE_ERROR_OUT_OF_MEMORY,
    .invalid_configuration = FAKE_ERROR_INVALID_CONFIGURATION,
    .not_supported = FAKE_ERROR_NOT_SUPPORTED,
    .error_string = fake_error_string,
    .current_device = fake_current_device,
    .sm_count = fake_sm_count,
    .kernel_marker = fake_kernel_marker,
    .occupancy = fake_occupancy,
    .device_alloc = fake_device_alloc,
    .device_free = fake_free,
    .device_zero = fake_device_zero,
    .event_create = fake_event_create,
    .event_destroy = fake_free,
    .event_record = fake_event_record,
    .event_synchronize = fake_event_synchronize,
    .launch = fake_launch,
};

const preempt_gpu_ops *preempt_gpu_backend(void) { return &fake_ops; }
