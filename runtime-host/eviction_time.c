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
 * preempt_evict's own call took up to 78 us at p99 on the H200; an urgent launch made room for itself in 60-78 us
 * (bench/results/2026-11-30-h200-priority-probe/): which step, said at exit. */
static int by_value(const void *a, const void *b) {
  float x = *(const float *)a, y = *(const float *)b;
  return (x > y) - (x < y);
}

static const char *const step_names[PREEMPT_EVICT_STEP_COUNT + 1] = {
    "lock", "launch checks", "in the way?", "finished?", "words", "timing event", "launch", "after launch", "rest",
    "whole"};
/* What each series says, in the order its steps are taken (-1 ends a list; the whole request comes last). */
static const int series_steps[PREEMPT_STEPS_SERIES][PREEMPT_EVICT_STEP_COUNT + 2] = {
    [PREEMPT_STEPS_EVICT] = {PREEMPT_EVICT_STEP_LOCK, PREEMPT_EVICT_STEP_FINISHED, PREEMPT_EVICT_STEP_WORDS,
                             PREEMPT_EVICT_STEP_TIMING, PREEMPT_EVICT_STEP_REST, PREEMPT_EVICT_STEP_COUNT, -1},
    [PREEMPT_STEPS_URGENT] = {PREEMPT_EVICT_STEP_LOCK, PREEMPT_EVICT_STEP_BEFORE, PREEMPT_EVICT_STEP_IN_THE_WAY,
                              PREEMPT_EVICT_STEP_WORDS, PREEMPT_EVICT_STEP_TIMING, PREEMPT_EVICT_STEP_FINISHED,
                              PREEMPT_EVICT_STEP_LAUNCH, PREEMPT_EVICT_STEP_AFTER, PREEMPT_EVICT_STEP_REST,
                              PREEMPT_EVICT_STEP_COUNT, -1},
};
static const char *const series_lead[PREEMPT_STEPS_SERIES] = {
    [PREEMPT_STEPS_EVICT] = "preempt: eviction requests: %u preempt_evict calls timed, host us median (p99):",
    [PREEMPT_STEPS_URGENT] = "preempt: urgent launches: %u launches that evicted for their stream's priority timed, "
                             "host us median (p99):",
};

static void say_series(const preempt_evict_steps *steps, int series) {
  uint32_t kept = steps->rows < PREEMPT_EVICT_STEP_ROWS ? steps->rows : PREEMPT_EVICT_STEP_ROWS;
  if (!kept)
    return;
  char line[1024];
  int used = snprintf(line, sizeof line, series_lead[series], steps->rows);
  static float column[PREEMPT_EVICT_STEP_ROWS];
  for (int index = 0; series_steps[series][index] >= 0 && used < (int)sizeof line; index++) {
    int step = series_steps[series][index];
    for (uint32_t row = 0; row < kept; row++)
      column[row] = steps->us[row][step];
    qsort(column, kept, sizeof column[0], by_value);
    used += snprintf(line + used, sizeof line - (size_t)used, "%s %s %.1f (%.1f)", index ? "," : "",
                     step_names[step], column[kept / 2], column[(kept * 99) / 100]);
  }
  fprintf(stderr, "%s\n", line);
}

static void say_steps_at_exit(void) {
  preempt_runtime *runtime = preempt_runtime_lock();
  for (int series = 0; series < PREEMPT_STEPS_SERIES; series++)
    say_series(&runtime->evict_timing.series[series], series);
  preempt_runtime_unlock(runtime);
}

void preempt_evict_steps_begin(preempt_runtime *runtime, int series, uint64_t lock_asked_ns, int first_step) {
  preempt_evict_timing *timing = &runtime->evict_timing;
  if (!runtime->settings.time_evictions)
    return;
  timing->active = series + 1;
  memset(timing->row, 0, sizeof timing->row);
  timing->begin_ns = lock_asked_ns;
  timing->row[PREEMPT_EVICT_STEP_LOCK] = (float)(runtime->lock_taken_ns - lock_asked_ns) / 1000.0f;
  timing->mark_ns = runtime->lock_taken_ns;
  preempt_evict_step_mark(runtime, first_step);
  if (!timing->exit_hook)
    timing->exit_hook = atexit(say_steps_at_exit) == 0;
}

void preempt_evict_step_mark(preempt_runtime *runtime, int step) {
  preempt_evict_timing *timing = &runtime->evict_timing;
  if (!timing->active)
    return;
  uint64_t now = preempt_monotonic_ns();
  timing->row[step] += (float)(now - timing->mark_ns) / 1000.0f;
  timing->mark_ns = now;
}

void preempt_evict_steps_end(preempt_runtime *runtime) {
  preempt_evict_timing *timing = &runtime->evict_timing;
  if (!timing->active)
    return;
  preempt_evict_step_mark(runtime, PREEMPT_EVICT_STEP_REST);
  preempt_evict_steps *steps = &timing->series[timing->active - 1];
  timing->active = 0;
  if (steps->rows < PREEMPT_EVICT_STEP_ROWS) {
    memcpy(steps->us[steps->rows], timing->row, sizeof timing->row);
    steps->us[steps->rows][PREEMPT_EVICT_STEP_COUNT] = (float)(timing->mark_ns - timing->begin_ns) / 1000.0f;
  }
  steps->rows++;
}

void preempt_evict_steps_drop(preempt_runtime *runtime) { runtime->evict_timing.active = 0; }
