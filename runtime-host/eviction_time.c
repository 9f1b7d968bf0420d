/* eviction_time.c: an eviction's duration on the GPU's own clock, and its request's host steps (PREEMPT_TIME_EVICTIONS=1).
 * Issue 8's latency goal (docs/intask.md, "Eviction latency on the GPU"): from the eviction's words landing to the last CTA gone. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime.h"
#include "daemon_socket.h" /* preempt_monotonic_ns */

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

/* The host's part of an eviction request, step by step (PREEMPT_TIME_EVICTIONS=1): the driver calls an urgent
 * request makes cost 2-7 us each after a sleep, 21 at p99 (bench/results/2026-11-29-h200-evict-call-probe/), and
 * preempt_evict's own call took up to 78 us at p99 on the H200: which step, said at exit. */
static int by_value(const void *a, const void *b) {
  float x = *(const float *)a, y = *(const float *)b;
  return (x > y) - (x < y);
}

static void say_steps_at_exit(void) {
  static const char *names[PREEMPT_EVICT_STEP_COUNT + 1] = {"lock", "finished?", "words", "timing event", "rest",
                                                             "whole call"};
  preempt_runtime *runtime = preempt_runtime_lock();
  const preempt_evict_steps *steps = &runtime->evict_steps;
  uint32_t kept = steps->rows < PREEMPT_EVICT_STEP_ROWS ? steps->rows : PREEMPT_EVICT_STEP_ROWS;
  char line[768];
  int used = snprintf(line, sizeof line, "preempt: eviction requests: %u preempt_evict calls timed, host us median "
                      "(p99):", steps->rows);
  static float column[PREEMPT_EVICT_STEP_ROWS];
  for (int step = 0; kept && step <= PREEMPT_EVICT_STEP_COUNT && used < (int)sizeof line; step++) {
    for (uint32_t row = 0; row < kept; row++)
      column[row] = steps->us[row][step];
    qsort(column, kept, sizeof column[0], by_value);
    used += snprintf(line + used, sizeof line - (size_t)used, "%s %s %.1f (%.1f)", step ? "," : "", names[step],
                     column[kept / 2], column[(kept * 99) / 100]);
  }
  preempt_runtime_unlock(runtime);
  if (kept)
    fprintf(stderr, "%s\n", line);
}

void preempt_evict_steps_begin(preempt_runtime *runtime, uint64_t entry_ns) {
  preempt_evict_steps *steps = &runtime->evict_steps;
  if (!runtime->settings.time_evictions)
    return;
  steps->active = 1;
  steps->begin_ns = steps->mark_ns = entry_ns;
  memset(steps->row, 0, sizeof steps->row);
  if (!steps->exit_hook)
    steps->exit_hook = atexit(say_steps_at_exit) == 0;
}

void preempt_evict_step_mark(preempt_runtime *runtime, int step) {
  preempt_evict_steps *steps = &runtime->evict_steps;
  if (!steps->active)
    return;
  uint64_t now = preempt_monotonic_ns();
  steps->row[step] += (float)(now - steps->mark_ns) / 1000.0f;
  steps->mark_ns = now;
}

void preempt_evict_steps_end(preempt_runtime *runtime) {
  preempt_evict_steps *steps = &runtime->evict_steps;
  if (!steps->active)
    return;
  preempt_evict_step_mark(runtime, PREEMPT_EVICT_STEP_REST);
  steps->active = 0;
  if (steps->rows < PREEMPT_EVICT_STEP_ROWS) {
    memcpy(steps->us[steps->rows], steps->row, sizeof steps->row);
    steps->us[steps->rows][PREEMPT_EVICT_STEP_COUNT] = (float)(steps->mark_ns - steps->begin_ns) / 1000.0f;
  }
  steps->rows++;
}
