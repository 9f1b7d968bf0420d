/* quota_change.c: setting a running launch's per-SM CTA quota (API, preemptd), and the progress it reports.
 * FlexSched §4.2 (BSUs: k CTAs of a kernel on every SM, placed by the CTAs themselves) and Eq. 2 (TaskCont). */
#include <string.h>

#include "runtime.h"

/* Every SM's yield bit: in a quota launch, "leave if your SM holds more than
 * the quota" (control_block.h). Every id, not only the first sm_count: SM ids
 * need not be dense. */
static int set_shrink_bits(const preempt_gpu_ops *gpu, preempt_device_state *device, preempt_launch_record *record) {
  preempt_control_block *control = record->control;
  uint32_t all[PREEMPT_YIELD_MASK_WORDS];
  memset(all, 0xff, sizeof all);
  return gpu->stream_write_words(device->control_stream, control->yield_mask, all, PREEMPT_YIELD_MASK_WORDS);
}

/* Sets every bit (the quota written before says who leaves) and marks the shrink. */
static preempt_status send_away(const preempt_gpu_ops *gpu, preempt_device_state *device,
                                preempt_launch_record *record, const char *what) {
  int status = set_shrink_bits(gpu, device, record);
  if (status != 0) {
    preempt_report_gpu(gpu, status, what, record->desc->name);
    return PREEMPT_ERROR_GPU;
  }
  record->quota_shrinking = 1;
  return PREEMPT_OK;
}

/* The same, then a grid at the kernel's occupancy once the writes on the control stream have landed; where the
 * hardware places more CTAs than the quota, the excess leaves at once. */
static preempt_status send_away_and_refill(preempt_runtime *runtime, preempt_device_state *device,
                                           preempt_launch_record *record, const char *what) {
  preempt_status status = send_away(runtime->gpu, device, record, what);
  if (status != PREEMPT_OK)
    return status;
  record->relaunch_after_clear = 1;
  return preempt_relaunch_more(runtime, device, record, record->full_ctas);
}

preempt_status preempt_quota_record(preempt_runtime *runtime, preempt_device_state *device,
                                    preempt_launch_record *record, uint32_t quota) {
  const preempt_gpu_ops *gpu = runtime->gpu;
  if (quota == 0)
    return PREEMPT_ERROR_INVALID_ARGUMENT;
  if (!record->in_flight || preempt_launch_finished(record, gpu))
    return PREEMPT_ERROR_FINISHED;
  if (record->drained) {
    preempt_report("quota refused for kernel '%s': this launch runs the drain form, whose blocks are the "
                   "application's own grid", record->desc->name);
    return PREEMPT_ERROR_UNSUPPORTED;
  }
  /* A launch held in its own stream (launch.c) starts as launched, without a quota: released first, it is then
   * moved under the quota as a running launch is. */
  if (record->held_unstarted && record->go_held) {
    preempt_status released = preempt_resume_record(runtime, device, record);
    if (released != PREEMPT_OK)
      return released;
  }
  /* A running launch without a quota: its CTAs never counted themselves. Every yield bit sends them away at
   * their next check and stays set until they are all gone (the first wave's end), while the relaunch below
   * counts its own CTAs, which the bits send away only above the quota. Evicting and resuming instead would
   * clear the bits within microseconds, before most CTAs had looked. */
  int converting = !record->cta_quota && !record->held_unstarted && !preempt_launch_suspended(record);
  preempt_status refused = preempt_refuse_relaunch(runtime, device, record, "quota", converting);
  if (refused != PREEMPT_OK)
    return refused;
  if (converting) {
    int status = preempt_quota_write(gpu, device, record, quota, quota);
    if (status != 0) {
      preempt_report_gpu(gpu, status, "moving a running launch under a CTA quota", record->desc->name);
      return PREEMPT_ERROR_GPU;
    }
    record->cta_quota = quota;
    record->quota_first_wave = 1;
    return send_away_and_refill(runtime, device, record, "moving a running launch under a CTA quota");
  }
  uint32_t before = record->cta_quota;
  if (quota == before && !preempt_launch_suspended(record))
    return PREEMPT_OK;
  int status = preempt_quota_after_refresh(gpu, device, record);
  /* A raise sends every CTA away and refills (below): quota_next only, for now. */
  int raise = quota > before && !preempt_launch_suspended(record);
  if (status == 0)
    status = preempt_quota_write(gpu, device, record, raise ? 0 : quota, quota);
  if (status != 0) {
    preempt_report_gpu(gpu, status, "writing a launch's CTA quota", record->desc->name);
    return PREEMPT_ERROR_GPU;
  }
  record->cta_quota = quota;
  if (preempt_launch_suspended(record)) {
    /* A held launch's first run is ordered after nothing else on the control
     * stream: after the quota, here. */
    if (record->held_unstarted)
      record->relaunch_after_clear = 1;
    return preempt_resume_record(runtime, device, record);
  }
  if (quota < before)
    return send_away(gpu, device, record, "asking CTAs above a lowered quota to leave");
  /* A raise. More CTAs beside the running grid would need a grid of the same launch running beside another on
   * a second stream, and the relaunch publisher of one would publish counts of the other's CTAs before their
   * writes are known to be visible (control_block.h). So every CTA leaves (quota 0, every bit: within a batch),
   * and one new grid, behind the old one on its stream, restores the bits and quota_next first. */
  record->quota_refresh = 1;
  return send_away_and_refill(runtime, device, record, "sending a launch's CTAs away for a raised quota");
}

preempt_status preempt_progress_record(preempt_runtime *runtime, preempt_device_state *device,
                                       preempt_launch_record *record, preempt_progress *progress) {
  const preempt_gpu_ops *gpu = runtime->gpu;
  if (!record->in_flight || preempt_launch_finished(record, gpu))
    return PREEMPT_ERROR_FINISHED;
  preempt_control_block copy;
  int status = gpu->copy_to_host(&copy, record->control, sizeof copy, device->control_stream);
  if (status != 0) {
    preempt_report_gpu(gpu, status, "reading a launch's progress", record->desc->name);
    return PREEMPT_ERROR_GPU;
  }
  memset(progress, 0, sizeof *progress);
  /* Only this generation's count: the word may still carry the last launch's
   * tag until this one's first CTA installs its own (control_block.h). */
  unsigned long long task_word = copy.task_word[record->generation % PREEMPT_CONTROL_LANES];
  if ((uint32_t)(task_word >> 32) == record->generation) {
    uint32_t taken = (uint32_t)task_word;
    progress->tasks_taken = taken < record->task_count ? taken : record->task_count;
  }
  progress->task_count = record->task_count;
  progress->quota = record->cta_quota;
  if (record->cta_quota) {
    for (uint32_t sm = 0; sm < PREEMPT_MAX_SM_IDS; sm++) {
      uint32_t resident = copy.sm_resident[sm];
      progress->resident_ctas += resident;
      progress->occupied_sms += resident > 0;
      if (resident > progress->most_resident)
        progress->most_resident = resident;
    }
    /* The excess has left every SM: the bits would only make every CTA
     * recheck its SM at each batch. */
    if (record->quota_shrinking && progress->most_resident <= record->cta_quota &&
        (status = preempt_quota_end_shrink(gpu, device, record)) != 0) {
      preempt_report_gpu(gpu, status, "clearing the yield bits of a finished shrink", record->desc->name);
      return PREEMPT_ERROR_GPU;
    }
  }
  return PREEMPT_OK;
}

preempt_status preempt_set_quota(preempt_launch_id launch, uint32_t ctas_per_sm) {
  preempt_runtime *runtime = preempt_runtime_lock();
  preempt_device_state *device;
  preempt_launch_record *record = preempt_launch_lookup(runtime, launch, &device);
  preempt_status result = PREEMPT_ERROR_FINISHED;
  if (!launch) {
    result = PREEMPT_ERROR_INVALID_ARGUMENT;
  } else if (record && record->daemon_stub) {
    preempt_report("quota refused for kernel '%s': preemptd schedules this launch", record->desc->name);
    result = PREEMPT_ERROR_UNSUPPORTED;
  } else if (record) {
    result = preempt_quota_record(runtime, device, record, ctas_per_sm);
  }
  preempt_runtime_unlock(runtime);
  return result;
}

preempt_status preempt_get_progress(preempt_launch_id launch, preempt_progress *progress) {
  if (!launch || !progress)
    return PREEMPT_ERROR_INVALID_ARGUMENT;
  preempt_runtime *runtime = preempt_runtime_lock();
  preempt_device_state *device;
  preempt_launch_record *record = preempt_launch_lookup(runtime, launch, &device);
  preempt_status result = record ? preempt_progress_record(runtime, device, record, progress) : PREEMPT_ERROR_FINISHED;
  preempt_runtime_unlock(runtime);
  return result;
}
