/* shutdown.c: preempt_shutdown: the runtime's threads stopped, launches preemptd holds resumed, every device's
 * streams, events and control blocks freed, kernels forgotten; the next launch starts afresh. FLEP §3 (one runtime per process). */
#include <stdlib.h>
#include <string.h>

#include "runtime.h"

preempt_status preempt_shutdown(void) {
  preempt_stress_stop(preempt_runtime_context());
  preempt_runtime *runtime = preempt_runtime_lock();
  /* First, while the relaunch thread still runs: launches preemptd holds
   * are resumed (they run unscheduled) before the connection closes. */
  runtime = preempt_daemon_stop(runtime);
  runtime = preempt_worker_stop(runtime, &runtime->relauncher);
  for (int device = 0; device < PREEMPT_MAX_DEVICES; device++) {
    preempt_device_state *state = &runtime->devices[device];
    state->sm_count = 0; /* read again: set before the pool, by launches as written too */
    if (!state->initialized)
      continue;
    preempt_control_pool_destroy(&state->control_pool, runtime->gpu);
    runtime->gpu->event_destroy(state->resume_ready);
    runtime->gpu->stream_destroy(state->control_stream);
    for (int index = 0; index < PREEMPT_RESUME_STREAMS; index++)
      if (state->resume_streams[index])
        runtime->gpu->stream_destroy(state->resume_streams[index]);
    memset(state->resume_streams, 0, sizeof state->resume_streams);
    state->extra_resume_streams = 0;
    state->initialized = 0;
  }
  while (runtime->kernels) {
    preempt_kernel_state *kernel = runtime->kernels;
    runtime->kernels = kernel->next;
    kernel->desc->runtime_state = NULL;
    for (int device = 0; device < PREEMPT_MAX_DEVICES; device++) {
      free(kernel->on_device[device].param_sizes);
      for (int index = 0; index < 2; index++)
        if (kernel->on_device[device].length_events[index])
          runtime->gpu->event_destroy(kernel->on_device[device].length_events[index]);
    }
    free(kernel);
  }
  preempt_runtime_unconfigure(runtime);
  preempt_runtime_unlock(runtime);
  return PREEMPT_OK;
}
