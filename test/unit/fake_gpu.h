/* fake_gpu.h: what the fake GPU backend records, for runtime unit tests.
 * See fake_gpu.c; the runtime under test is runtime-host/ (FLEP §3 launch path). */
#ifndef PREEMPT_FAKE_GPU_H
#define PREEMPT_FAKE_GPU_H

#include "gpu.h"
#include "preempt/control_block.h"

enum {
  FAKE_ERROR_INVALID_VALUE = 101,
  FAKE_ERROR_OUT_OF_MEMORY = 102,
  FAKE_ERROR_INVALID_CONFIGURATION = 103,
  FAKE_ERROR_NOT_SUPPORTED = 104,
  FAKE_ERROR_LAUNCH = 105,
};

typedef struct fake_gpu_state {
  uint32_t sm_count, ctas_per_sm, marker_abi;
  int fail_device_alloc;
  int expected_params; /* the kernel's own parameter count when the launch is persistent, else -1 */
  int launches, event_records, event_waits, marker_lookups, occupancy_queries;
  preempt_dim3 last_grid, last_block;
  size_t last_shared;
  void **last_args;          /* the array passed (may be freed after the call) */
  void *last_arg_values[4];  /* its first entries, copied during the call */
  preempt_control_block *last_control; /* the launch parameters after the kernel's own */
  unsigned int last_task_count, last_original_grid[3];
  int zeroed_bytes;
  char last_marker_name[256];
} fake_gpu_state;

extern fake_gpu_state fake_gpu;

#endif
