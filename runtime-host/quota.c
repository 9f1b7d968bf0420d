/* quota.c: a CTA quota's words in the control block, as evictions, resumes and relaunches keep them.
 * FlexSched §4.2 (BSUs: k CTAs of a kernel on every SM, placed by the CTAs themselves); setting one: quota_change.c. */
#include "runtime.h"

/* cta_quota and quota_next, adjacent: one call. */
int preempt_quota_write(const preempt_gpu_ops *gpu, preempt_device_state *device, preempt_launch_record *record,
                        uint32_t quota_now, uint32_t quota_next) {
  preempt_control_block *control = record->control;
  uint32_t words[2] = {quota_now, quota_next};
  return gpu->stream_write_words(device->control_stream, &control->cta_quota, words, 2);
}

/* A raise's writes are still on their way (on the launch's relaunch stream, behind the grid whose CTAs are
 * leaving): control-stream writes made now must land after them, or the raise would undo them. The wait lasts
 * one batch of that grid's tasks at most. */
int preempt_quota_after_refresh(const preempt_gpu_ops *gpu, preempt_device_state *device,
                                preempt_launch_record *record) {
  if (!record->quota_refresh_event || gpu->event_query(record->quota_refresh_event) == 0)
    return 0;
  return gpu->stream_wait_event(device->control_stream, record->quota_refresh_event);
}

int preempt_quota_before_relaunch(const preempt_gpu_ops *gpu, preempt_launch_record *record, void *resume_stream) {
  if (!record->quota_refresh)
    return 0;
  preempt_control_block *control = record->control;
  int status = 0;
  if (record->quota_first_wave)
    status = gpu->stream_wait_event(resume_stream, record->wave_done_event);
  if (status == 0)
    status = gpu->copy_device_async(&control->cta_quota, &control->quota_next, sizeof control->cta_quota,
                                    resume_stream);
  if (status == 0)
    status = gpu->stream_write_words(resume_stream, control->yield_mask, record->yield_mask, PREEMPT_YIELD_MASK_WORDS);
  if (status == 0)
    status = gpu->event_record(record->quota_refresh_event, resume_stream);
  if (status == 0)
    record->quota_refresh = record->quota_shrinking = record->quota_first_wave = 0;
  return status;
}

int preempt_quota_end_shrink(const preempt_gpu_ops *gpu, preempt_device_state *device, preempt_launch_record *record) {
  if (!record->quota_shrinking || record->quota_refresh)
    return 0;
  /* A first wave from before the quota still runs: its CTAs count nowhere and leave only on a bit. */
  if (record->quota_first_wave && gpu->event_query(record->wave_done_event) != 0)
    return 0;
  record->quota_first_wave = 0;
  preempt_control_block *control = record->control;
  int status = gpu->stream_write_words(device->control_stream, control->yield_mask, record->yield_mask,
                                       PREEMPT_YIELD_MASK_WORDS);
  if (status == 0)
    record->quota_shrinking = 0;
  return status;
}

int preempt_quota_before_evict(const preempt_gpu_ops *gpu, preempt_device_state *device,
                               preempt_launch_record *record) {
  if (!record->cta_quota)
    return 0;
  int status = preempt_quota_after_refresh(gpu, device, record);
  /* Bits left from a shrink would turn a partial eviction into a full one. */
  if (status == 0)
    status = preempt_quota_end_shrink(gpu, device, record);
  return status ? status : preempt_quota_write(gpu, device, record, 0, record->cta_quota);
}

int preempt_quota_before_resume(const preempt_gpu_ops *gpu, preempt_device_state *device,
                                preempt_launch_record *record) {
  return record->cta_quota ? preempt_quota_write(gpu, device, record, record->cta_quota, record->cta_quota) : 0;
}
