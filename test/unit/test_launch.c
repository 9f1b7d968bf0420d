/* test_launch.c: unit tests of the host runtime's launch path (runtime-host/launch.c) over a fake GPU.
 * FLEP §4.1: converted kernels run as persistent grids with a fresh control block; others run as written. */
#include <string.h>

#include "check.h"
#include "fake_gpu.h"
#include "preempt.h"

static int stub_a, stub_b;

static preempt_kernel_desc make_desc(const void *stub, const char *name, uint32_t params) {
  preempt_kernel_desc desc = {.desc_version = 1, .gpu_api = 1, .param_count = params,
                              .kernel_abi = PREEMPT_KERNEL_ABI_VERSION, .host_stub = stub, .name = name};
  return desc;
}

static void reset_fake(uint32_t marker_abi) {
  preempt_shutdown();
  memset(&fake_gpu, 0, sizeof fake_gpu);
  fake_gpu.sm_count = 132;
  fake_gpu.ctas_per_sm = 8;
  fake_gpu.marker_abi = marker_abi;
  fake_gpu.expected_params = -1;
}

int main(void) {
  /* A converted kernel: persistent grid sized by occupancy, control block appended and staged. */
  reset_fake(PREEMPT_KERNEL_ABI_VERSION);
  {
    preempt_kernel_desc desc = make_desc(&stub_a, "_Z3addPfS_S_i", 2);
    float *a = NULL;
    int n = 5;
    void *args[] = {&a, &n};
    fake_gpu.expected_params = 2;
    CHECK_EQ_U64(preempt_launch_kernel(&desc, (preempt_dim3){4096, 3, 2}, (preempt_dim3){256, 1, 1}, args, 64, NULL), 0);
    CHECK_EQ_U64(fake_gpu.launches, 1);
    CHECK(strcmp(fake_gpu.last_marker_name, "__preempt_kernel__Z3addPfS_S_i") == 0);
    CHECK_EQ_U64(fake_gpu.last_grid.x, 8 * 132);
    CHECK(fake_gpu.last_grid.y == 1 && fake_gpu.last_grid.z == 1);
    CHECK_EQ_U64(fake_gpu.last_block.x, 256);
    CHECK_EQ_U64(fake_gpu.last_shared, 64);
    CHECK(fake_gpu.last_arg_values[0] == &a && fake_gpu.last_arg_values[1] == &n);
    CHECK(fake_gpu.last_control != NULL);
    CHECK_EQ_U64(fake_gpu.last_control->task_counter, 0); /* the pool starts zeroed */
    CHECK(fake_gpu.zeroed_bytes >= (int)sizeof(preempt_control_block));
    CHECK_EQ_U64(fake_gpu.last_task_count, 4096 * 3 * 2);
    CHECK(fake_gpu.last_original_grid[0] == 4096 && fake_gpu.last_original_grid[1] == 3 &&
          fake_gpu.last_original_grid[2] == 2);
    CHECK_EQ_U64(fake_gpu.event_records, 1);

    /* Small grid: never more CTAs than tasks; the marker is looked up once,
     * occupancy once per launch configuration. */
    CHECK_EQ_U64(preempt_launch_kernel(&desc, (preempt_dim3){10, 1, 1}, (preempt_dim3){256, 1, 1}, args, 64, NULL), 0);
    CHECK_EQ_U64(fake_gpu.last_grid.x, 10);
    CHECK_EQ_U64(fake_gpu.marker_lookups, 1);
    CHECK_EQ_U64(fake_gpu.occupancy_queries, 1);
    preempt_kernel_info info;
    CHECK_EQ_U64(preempt_get_kernel_info(&desc, &info), PREEMPT_OK);
    CHECK(info.converted == 1 && info.launches == 2 && info.last_persistent_ctas == 10 && info.sm_count == 132);

    /* Each launch gets its own control block until the pool wraps around;
     * then a slot is reused only after waiting for its launch. */
    preempt_control_block *first = fake_gpu.last_control;
    for (int launch = 0; launch < 1100; launch++)
      preempt_launch_kernel(&desc, (preempt_dim3){10, 1, 1}, (preempt_dim3){256, 1, 1}, args, 64, NULL);
    CHECK(fake_gpu.last_control != first);
    CHECK(fake_gpu.event_waits >= 1100 + 2 - 1024);

    /* An empty grid goes to the API unchanged, so that it reports its own error. */
    int launches_before = fake_gpu.launches;
    fake_gpu.expected_params = -1;
    preempt_launch_kernel(&desc, (preempt_dim3){0, 1, 1}, (preempt_dim3){256, 1, 1}, args, 0, NULL);
    CHECK_EQ_U64(fake_gpu.launches, launches_before + 1);
    CHECK(fake_gpu.last_args == args && fake_gpu.last_grid.x == 0);

    /* More tasks than the 32-bit task counter allows: a clear error, no launch. */
    launches_before = fake_gpu.launches;
    CHECK_EQ_U64(preempt_launch_kernel(&desc, (preempt_dim3){2147483647u, 65535, 1}, (preempt_dim3){32, 1, 1}, args,
                                       0, NULL), FAKE_ERROR_INVALID_CONFIGURATION);
    CHECK_EQ_U64(fake_gpu.launches, launches_before);
    CHECK(strstr(preempt_last_error(), "exceeds") != NULL);

    /* An impossible block (occupancy 0): the API's own error comes back. */
    fake_gpu.ctas_per_sm = 0;
    CHECK_EQ_U64(preempt_launch_kernel(&desc, (preempt_dim3){64, 1, 1}, (preempt_dim3){2048, 1, 1}, args, 0, NULL),
                 FAKE_ERROR_LAUNCH);
    CHECK(strstr(preempt_last_error(), "fake launch failure") != NULL);
  }

  /* A kernel the plugin refused: launched exactly as written. */
  reset_fake(0);
  {
    preempt_kernel_desc desc = make_desc(&stub_b, "_Z7refusedv", 0);
    CHECK_EQ_U64(preempt_launch_kernel(&desc, (preempt_dim3){77, 2, 1}, (preempt_dim3){64, 1, 1}, NULL, 0, NULL), 0);
    CHECK(fake_gpu.last_grid.x == 77 && fake_gpu.last_grid.y == 2);
    CHECK_EQ_U64(fake_gpu.event_records, 0); /* no control block taken */
    preempt_kernel_info info;
    CHECK_EQ_U64(preempt_get_kernel_info(&desc, &info), PREEMPT_OK);
    CHECK_EQ_U64(info.converted, 0);
  }

  /* A kernel converted for another kernel ABI: refused with a clear error. */
  reset_fake(PREEMPT_KERNEL_ABI_VERSION + 1);
  {
    preempt_kernel_desc desc = make_desc(&stub_a, "_Z3oldv", 0);
    CHECK_EQ_U64(preempt_launch_kernel(&desc, (preempt_dim3){1, 1, 1}, (preempt_dim3){1, 1, 1}, NULL, 0, NULL),
                 FAKE_ERROR_NOT_SUPPORTED);
    CHECK_EQ_U64(fake_gpu.launches, 0);
    CHECK(strstr(preempt_last_error(), "kernel ABI") != NULL);
  }

  /* Bad descriptors and GPU memory exhaustion: errors, no launch, no crash. */
  reset_fake(PREEMPT_KERNEL_ABI_VERSION);
  {
    CHECK_EQ_U64(preempt_launch_kernel(NULL, (preempt_dim3){1, 1, 1}, (preempt_dim3){1, 1, 1}, NULL, 0, NULL),
                 FAKE_ERROR_INVALID_VALUE);
    preempt_kernel_desc wrong = make_desc(&stub_a, "_Z1kv", 0);
    wrong.desc_version = 99;
    CHECK_EQ_U64(preempt_launch_kernel(&wrong, (preempt_dim3){1, 1, 1}, (preempt_dim3){1, 1, 1}, NULL, 0, NULL),
                 FAKE_ERROR_INVALID_VALUE);
    fake_gpu.fail_device_alloc = 1;
    preempt_kernel_desc desc = make_desc(&stub_a, "_Z1kv", 0);
    CHECK_EQ_U64(preempt_launch_kernel(&desc, (preempt_dim3){8, 1, 1}, (preempt_dim3){32, 1, 1}, NULL, 0, NULL),
                 FAKE_ERROR_OUT_OF_MEMORY);
    CHECK(strstr(preempt_last_error(), "control-block pool") != NULL);
    CHECK_EQ_U64(fake_gpu.launches, 0);
    fake_gpu.fail_device_alloc = 0; /* recovers once memory is back */
    CHECK_EQ_U64(preempt_launch_kernel(&desc, (preempt_dim3){8, 1, 1}, (preempt_dim3){32, 1, 1}, NULL, 0, NULL), 0);
    CHECK_EQ_U64(fake_gpu.launches, 1);
    CHECK(preempt_get_kernel_info(NULL, NULL) == PREEMPT_ERROR_INVALID_ARGUMENT);
  }
  preempt_shutdown();
  CHECK_DONE("test_launch");
}
