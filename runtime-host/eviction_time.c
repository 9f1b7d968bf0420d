/* eviction_time.c: an eviction's duration on the GPU's own clock (PREEMPT_TIME_EVICTIONS=1), without the host's part.
 * Issue 8's latency goal (docs/intask.md, "Eviction latency on the GPU"): from the eviction's words landing to the last CTA gone. */
#include "runtime.h"

int preempt_eviction_time_start(const preempt_gpu_ops *gpu, preempt_device_state *device,
                                preempt_launch_record *record) {
  if (!record->evict_request_event)
    return 0; /* not timing evictions */
  int status = gpu->event_record(record->evict_request_event, device->control_stream);
  record->evict_request_recorded = status == 0;
  return status;
}

/* Milliseconds from the request to `end`, 0 where the grid had ended before it. */
static int since_request(const preempt_gpu_ops *gpu, const preempt_launch_record *record, void *end, float *ms) {
  int status = gpu->event_elapsed_ms(record->evict_request_event, end, ms);
  if (status == 0 && *ms < 0)
    *ms = 0;
  return status;
}

preempt_status preempt_get_eviction_time(preempt_launch_id launch, double *gpu_microseconds) {
  if (!gpu_microseconds)
    return PREEMPT_ERROR_INVALID_ARGUMENT;
  preempt_runtime *runtime = preempt_runtime_lock();
  const preempt_gpu_ops *gpu = runtime->gpu;
  preempt_device_state *device;
  preempt_launch_record *record = preempt_launch_lookup(runtime, launch, &device);
  preempt_status result = PREEMPT_OK;
  if (!record) {
    result = launch ? PREEMPT_ERROR_FINISHED : PREEMPT_ERROR_INVALID_ARGUMENT;
  } else if (!record->evict_request_event) {
    preempt_report("eviction times need PREEMPT_TIME_EVICTIONS=1 in the environment (timed events cost each "
                   "launch about 1.4 us)");
    result = PREEMPT_ERROR_UNSUPPORTED;
  } else if (!record->evict_request_recorded) {
    /* Not evicted from every SM by this process since it last ran, or never again. */
    int done = preempt_record_state(gpu, record) == PREEMPT_LAUNCH_DONE;
    result = done ? PREEMPT_ERROR_FINISHED : PREEMPT_ERROR_NOT_READY;
  } else if (!preempt_record_all_gone(gpu, record) || gpu->event_query(record->evict_request_event) != 0) {
    result = PREEMPT_ERROR_NOT_READY;
  } else {
    /* Every CTA is gone once the first wave and the latest relaunch (if any: relaunches end in order on their
     * stream) have ended. The CTAs may have finished every task on their way out: the time holds all the same. */
    float wave_ms = 0, relaunch_ms = 0;
    int status = since_request(gpu, record, record->wave_done_event, &wave_ms);
    if (status == 0 && record->resumed)
      status = since_request(gpu, record, record->relaunch_done_event, &relaunch_ms);
    if (status != 0) {
      preempt_report_gpu(gpu, status, "reading the eviction's time", record->desc->name);
      result = PREEMPT_ERROR_GPU;
    } else {
      *gpu_microseconds = 1000.0 * (wave_ms > relaunch_ms ? wave_ms : relaunch_ms);
    }
  }
  preempt_runtime_unlock(runtime);
  return result;
}
