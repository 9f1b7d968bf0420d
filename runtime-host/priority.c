/* priority.c: CUDA's stream priorities kept for converted launches: a launch on a higher-priority stream gets
 * just enough SMs from lower-priority persistent grids, which resume when it ends. FLEP §5 (priority-based
 * preemption) and §4.3 (spatial: evict only the SMs the urgent kernel needs). */
#include <limits.h>

#include "runtime.h"

/* Drained grids are the application's own, dispatched by the hardware, which already favours the
 * higher-priority stream at every block boundary; a persistent grid holds its SMs until it ends, so a kernel of
 * a higher-priority stream would wait for the whole launch (the H200, preempt_bench at 5b4fd17: 14.7 ms against
 * 83 us drained). */
/* A finished launch found here is marked so (preempt_launch_record_idle): records stay in flight until something
 * looks, and each costs "finished?" (two event queries, 2-9 us each from a thread that has just woken) on every
 * urgent launch until then, 250-430 us in all on the H200 (bench/results/2026-11-30-h200-priority-probe/). */
static int in_the_way(const preempt_runtime *runtime, preempt_launch_record *record, void *stream, int urgent) {
  return record->in_flight && !record->drained && !record->daemon_stub && !record->resume_after &&
         record->stream != stream && record->stream_priority > urgent && !preempt_launch_suspended(record) &&
         !preempt_launch_record_idle(record, runtime->gpu);
}

int preempt_priority_make_room(preempt_runtime *runtime, int device_index, void *stream, uint64_t blocks) {
  const preempt_gpu_ops *gpu = runtime->gpu;
  preempt_device_state *device = &runtime->devices[device_index];
  int urgent;
  /* Nothing converted ever ran at a priority below this stream's: the usual case costs one query, and none
   * before the first converted launch (every launch run as written). */
  if (!gpu->stream_priority || !device->initialized || runtime->max_stream_priority == INT_MIN)
    return 0;
  /* PREEMPT_TIME_EVICTIONS=1: the launch's steps from its lock, kept if it evicts (launch.c ends them). */
  preempt_evict_steps_begin(runtime, PREEMPT_STEPS_URGENT, runtime->lock_taken_ns - runtime->lock_waited_ns,
                            PREEMPT_EVICT_STEP_BEFORE);
  if (gpu->stream_priority(stream, &urgent) != 0 || urgent >= runtime->max_stream_priority) {
    preempt_evict_steps_drop(runtime);
    return 0;
  }
  /* One SM per block, up to every SM: the spread the hardware gives the kernel on an idle GPU, and the SMs it
   * would take by itself from a grid of ordinary blocks as they end. Not packed at its occupancy (FLEP §4.3's
   * "just enough SMs"): 8 blocks sharing an SM run slower than 8 on their own SMs, which the urgent kernel would
   * pay for in turnaround (preempt_bench's (d) packed, (e) spread). */
  preempt_sm_mask room = {{0}};
  const preempt_sm_mask *sms = NULL;
  uint64_t needed = blocks;
  if (needed < device->sm_count) {
    for (uint64_t sm = 0; sm < needed; sm++)
      room.words[sm / 32] |= 1u << (sm % 32);
    sms = &room;
  }
  int evicted = 0;
  for (uint32_t slot = 0; slot < device->control_pool.in_use; slot++) {
    preempt_launch_record *record = &device->control_pool.records[slot];
    /* An eviction that would be refused is not tried: the program asked for none, so the refusal is not its
     * error to read on every urgent launch. The grid runs on, as CUDA would run it. */
    char why[384];
    int passed_by = !in_the_way(runtime, record, stream, urgent) ||
                    preempt_relaunch_obstacle(runtime, device, record, 1, why, sizeof why);
    preempt_evict_step_mark(runtime, PREEMPT_EVICT_STEP_IN_THE_WAY);
    if (passed_by)
      continue;
    if (preempt_evict_record(runtime, device, record, sms) == PREEMPT_OK) {
      record->resume_after = 1; /* its event comes with the launch (preempt_priority_after_launch) */
      evicted++;
    }
  }
  if (!evicted)
    preempt_evict_steps_drop(runtime);
  return evicted;
}

/* Every launch that made room resumes after the latest higher-priority launch (one event each: urgent work on
 * two streams at once resumes it after the later one's, not both); at once where that launch failed, or where no
 * event could mark its end, rather than stay evicted for good. */
void preempt_priority_after_launch(preempt_runtime *runtime, int device_index, void *stream, int launched) {
  preempt_device_state *device = &runtime->devices[device_index];
  for (uint32_t slot = 0; slot < device->control_pool.in_use; slot++) {
    preempt_launch_record *record = &device->control_pool.records[slot];
    if (!record->in_flight || !record->resume_after)
      continue;
    if (launched && preempt_resume_after(runtime, record, stream) == 0)
      continue;
    record->resume_after = 0;
    preempt_resume_record(runtime, device, record);
  }
}
