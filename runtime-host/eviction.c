/* eviction.c: temporal and spatial eviction of running launches, resumption, and launch states.
 * FLEP §4.1 Fig. 4 (yield flag; per-SM yield through %smid), EffiSha §6.1 (kernel states). */
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

#include "runtime.h"
#include "daemon_socket.h" /* preempt_monotonic_ns */

static void full_mask(preempt_sm_mask *mask) { memset(mask->words, 0xff, sizeof mask->words); }

static uint32_t mask_popcount(const uint32_t *words) {
  uint32_t count = 0;
  for (int word = 0; word < PREEMPT_YIELD_MASK_WORDS; word++)
    count += (uint32_t)__builtin_popcount(words[word]);
  return count;
}

uint32_t preempt_held_streams(const preempt_device_state *device, void *except) {
  void *seen[64];
  uint32_t count = 0;
  for (uint32_t slot = 0; slot < device->control_pool.in_use; slot++) {
    const preempt_launch_record *record = &device->control_pool.records[slot];
    if (!record->in_flight || record->stream == except || !preempt_launch_suspended(record))
      continue;
    uint32_t known = 0;
    while (known < count && known < 64 && seen[known] != record->stream)
      known++;
    if (known == count) {
      if (count < 64)
        seen[count] = record->stream;
      count++;
    }
  }
  return count;
}

/* Writes the words of the yield mask that change, as one span in one call
 * on the urgent control stream, which runs beside the kernel: the words land
 * while it runs. The host's copy follows. */
static int write_yield_mask(const preempt_gpu_ops *gpu, preempt_device_state *device,
                            preempt_launch_record *record, const uint32_t wanted[PREEMPT_YIELD_MASK_WORDS]) {
  int first = -1, last = -1;
  for (int word = 0; word < PREEMPT_YIELD_MASK_WORDS; word++) {
    if (wanted[word] == record->yield_mask[word])
      continue;
    if (first < 0)
      first = word;
    last = word;
  }
  if (first < 0)
    return 0;
  if (!preempt_yield_mask_full(wanted))
    record->evict_request_recorded = 0; /* a later full eviction is timed afresh */
  preempt_control_block *control = record->control;
  int status = gpu->stream_write_words(device->control_stream, &control->yield_mask[first], &wanted[first],
                                       (uint32_t)(last - first + 1));
  if (status != 0)
    return status;
  memcpy(record->yield_mask, wanted, sizeof record->yield_mask);
  return 0;
}

/* A held stream (an evicted launch's, waiting for its tasks) blocks its
 * hardware queue. With one queue the relaunch waits behind it forever; on
 * the H100 with 32 queues, 16 held streams were fine and 40 hung the host
 * (bench/preemption/queue_trap.cu). Hold at most half the queues. */
int preempt_may_hold_stream(const preempt_runtime *runtime, const preempt_device_state *device, void *stream) {
  uint32_t limit = runtime->hardware_queues / 2;
  limit = limit > device->extra_resume_streams ? limit - device->extra_resume_streams : 0;
  return runtime->hardware_queues > 1 && preempt_held_streams(device, stream) < limit;
}

int preempt_lazy_loading(preempt_runtime *runtime) {
  if (runtime->lazy_loading < 0) {
    int lazy = 0;
    /* Unknown (an API without the query) counts as lazy only where the
     * query exists and failed: the refusal names the way out. */
    runtime->lazy_loading =
        runtime->gpu->module_loading_lazy ? (runtime->gpu->module_loading_lazy(&lazy) != 0 || lazy) : 0;
  }
  return runtime->lazy_loading;
}

int preempt_device_can_relaunch(const preempt_runtime *runtime, const preempt_device_state *device) {
  return !runtime->gpu->publisher_load || (device->publisher_status == 0 && device->publisher);
}

int preempt_relaunch_obstacle(preempt_runtime *runtime, const preempt_device_state *device,
                              const preempt_launch_record *record, int holds_stream, char *why, size_t why_bytes) {
  const preempt_gpu_ops *gpu = runtime->gpu;
  if (!preempt_device_can_relaunch(runtime, device)) {
    snprintf(why, why_bytes, "the relaunch publisher failed to load on this device (%s error %d), so a relaunch "
             "could never complete", gpu->api_name, device->publisher_status);
    return 1;
  }
  if (!holds_stream)
    return 0;
  if (preempt_lazy_loading(runtime)) {
    snprintf(why, why_bytes, "CUDA loads this process's modules lazily, and a launch of a kernel not yet loaded "
             "would wait behind the held stream, for ever if the same thread is to resume it: set "
             "PREEMPT_EVICT_READY=1 (or CUDA_MODULE_LOADING=EAGER) before the program starts");
    return 1;
  }
  if (record->unordered) {
    snprintf(why, why_bytes, "its stream could not be ordered after it");
    return 1;
  }
  if (!preempt_may_hold_stream(runtime, device, record->stream)) {
    snprintf(why, why_bytes, "%u streams already held by evicted launches, and %u hardware queues (%s): more "
             "would deadlock", preempt_held_streams(device, record->stream), runtime->hardware_queues,
             runtime->hardware_queues_from);
    return 1;
  }
  return 0;
}

static preempt_status say_refused(const preempt_launch_record *record, const char *what, const char *why) {
  preempt_report("%s refused for kernel '%s': %s", what, record->desc->name, why);
  return PREEMPT_ERROR_UNSUPPORTED;
}

preempt_status preempt_refuse_relaunch(preempt_runtime *runtime, preempt_device_state *device,
                                      preempt_launch_record *record, const char *what, int holds_stream) {
  char why[384];
  if (!preempt_relaunch_obstacle(runtime, device, record, holds_stream, why, sizeof why))
    return PREEMPT_OK;
  return say_refused(record, what, why);
}

/* The request's words go out before "finished?" is asked: that test is two event queries, 2-9 us each after
 * a sleep, as an urgent request's thread has just slept (bench/results/2026-11-29-h200-evict-call-probe/), and
 * the launch's CTAs can start leaving only once the words land (EffiSha §5: the request's latency is the
 * scheduler's to keep short). A launch found finished after its words went out is resumed at once, the same
 * path a launch takes that finishes while an eviction's words are on their way: what was written is undone,
 * ordered before its control block's next launch (the block stays taken until the resumption's event). */
preempt_status preempt_evict_record(preempt_runtime *runtime, preempt_device_state *device,
                                    preempt_launch_record *record, const preempt_sm_mask *sms) {
  const preempt_gpu_ops *gpu = runtime->gpu;
  runtime->evictions_asked = 1; /* from now on auto weighs the drain form's eviction latency (launch.c) */
  if (!record->in_flight)
    return PREEMPT_ERROR_FINISHED;
  char why[384];
  if (preempt_relaunch_obstacle(runtime, device, record, 1, why, sizeof why))
    return preempt_launch_finished(record, gpu) ? PREEMPT_ERROR_FINISHED : say_refused(record, "eviction", why);
  preempt_sm_mask requested;
  if (sms)
    requested = *sms;
  else
    full_mask(&requested);
  /* A drained launch's stream must hold before any block can skip: the
   * hold lands first on the control stream, and a block skips only once it
   * sees a yield bit written after it (stream writes carry a memory barrier
   * unless told otherwise). Once per launch: its publisher clears it. */
  if (record->drained && !record->drain_held) {
    preempt_control_block *control = record->control;
    uint32_t hold = 1;
    int status = gpu->stream_write_words(device->control_stream, &control->drain_hold, &hold, 1);
    if (status != 0) {
      preempt_report_gpu(gpu, status, "holding the drained launch's stream", record->desc->name);
      return PREEMPT_ERROR_GPU;
    }
    record->drain_held = 1;
    record->undone_dirty = 1;
  }
  /* A quota launch's CTAs leave on a yield bit only above the quota: 0 first. */
  int status = preempt_quota_before_evict(gpu, device, record);
  if (status != 0) {
    preempt_report_gpu(gpu, status, "lowering the launch's CTA quota to 0", record->desc->name);
    return PREEMPT_ERROR_GPU;
  }
  uint32_t wanted[PREEMPT_YIELD_MASK_WORDS];
  for (int word = 0; word < PREEMPT_YIELD_MASK_WORDS; word++)
    wanted[word] = record->yield_mask[word] | requested.words[word];
  const int full = preempt_yield_mask_full(wanted);
  /* A full eviction also stops CTAs inside their tasks (intask.c). */
  status = preempt_intask_before_evict(gpu, device, record, full);
  if (status != 0) {
    preempt_report_gpu(gpu, status, "asking the launch's CTAs to save their in-task contexts", record->desc->name);
    return PREEMPT_ERROR_GPU;
  }
  const int becomes_full = full && !preempt_yield_mask_full(record->yield_mask);
  status = write_yield_mask(gpu, device, record, wanted);
  if (status != 0) {
    preempt_report_gpu(gpu, status, "writing the yield mask", record->desc->name);
    return PREEMPT_ERROR_GPU;
  }
  preempt_evict_step_mark(runtime, PREEMPT_EVICT_STEP_WORDS);
  if (becomes_full && (status = preempt_eviction_time_start(gpu, device, record)) != 0) {
    preempt_report_gpu(gpu, status, "marking the eviction's start (PREEMPT_TIME_EVICTIONS)", record->desc->name);
    return PREEMPT_ERROR_GPU;
  }
  preempt_evict_step_mark(runtime, PREEMPT_EVICT_STEP_TIMING);
  int finished = preempt_launch_finished(record, gpu);
  preempt_evict_step_mark(runtime, PREEMPT_EVICT_STEP_FINISHED);
  if (finished) {
    preempt_status undone = preempt_resume_record(runtime, device, record);
    return undone == PREEMPT_OK ? PREEMPT_ERROR_FINISHED : undone;
  }
  record->time_first_relaunch = 0; /* CTAs leave early: their timing says nothing about tasks */
  return PREEMPT_OK;
}

/* Enqueues one relaunch: after the mask clearing (control stream) and on the
 * resume stream, which it never blocks since its launch has started. A held
 * launch's first run cleared nothing: no ordering, two API calls fewer on
 * preemptd's critical path (each costs ~10 us there, measured on the H100
 * while the application thread waits in a synchronize). */
static int enqueue_relaunch(const preempt_gpu_ops *gpu, preempt_device_state *device, preempt_launch_record *record) {
  uint32_t index = 0;
  if (record->cta_quota)
    index = 1 + (uint32_t)(record - device->control_pool.records) % (PREEMPT_RESUME_STREAMS - 1);
  if (!device->resume_streams[index]) {
    int created = gpu->stream_create(&device->resume_streams[index], 0);
    if (created != 0)
      return preempt_report_gpu(gpu, created, "creating a relaunch stream for a quota launch", record->desc->name);
    device->extra_resume_streams++;
  }
  void *resume_stream = device->resume_streams[index];
  int status = 0;
  if (record->relaunch_after_clear) {
    status = gpu->event_record(device->resume_ready, device->control_stream);
    if (status == 0)
      status = gpu->stream_wait_event(resume_stream, device->resume_ready);
  }
  if (status == 0)
    status = preempt_quota_before_relaunch(gpu, record, resume_stream);
  preempt_dim3 grid = {record->relaunch_ctas, 1, 1};
  if (status == 0 && record->time_first_relaunch && record->relaunches == 0)
    status = gpu->event_record(record->relaunch_start_event, resume_stream);
  /* The kernel's last parameter, read by the launch call: a drained
   * launch's relaunches run only the blocks its gate turned away. */
  record->relaunched = (record->drained ? PREEMPT_RELAUNCH_UNDONE : 1) | (record->cta_quota ? PREEMPT_LAUNCH_QUOTA : 0) |
                       (record->prompt ? PREEMPT_LAUNCH_PROMPT : 0) | preempt_intask_relaunch_flags(record);
  /* Batches of one task id: next_undone_task (task_loop.cu) skips ahead one
   * id at a time, and a batch is a run of consecutive ids. */
  if (record->drained)
    record->check_interval = 1;
  if (status == 0)
    status = preempt_intask_launch(gpu, record, grid, resume_stream, 0);
  if (status != 0)
    return preempt_report_gpu(gpu, status, "relaunching CTAs", record->desc->name);
  if ((status = gpu->event_record(record->relaunch_done_event, resume_stream)) != 0)
    return preempt_report_gpu(gpu, status, "recording the relaunch's end", record->desc->name);
  /* Behind the relaunch on its stream: counts its tasks once its writes are
   * all visible, and publishes completion (control_block.h). */
  if (gpu->publish_relaunch &&
      (status = gpu->publish_relaunch(device->publisher, resume_stream, record->control, record->generation,
                                      record->task_count)) != 0)
    return preempt_report_gpu(gpu, status, "enqueueing the relaunch publisher (the launch cannot complete)",
                              record->desc->name);
  record->resumed = 1;
  record->relaunch_pending = 0;
  record->relaunch_after_clear = 0;
  record->relaunches++;
  status = gpu->event_record(record->resume_event, resume_stream);
  if (status != 0)
    return preempt_report_gpu(gpu, status, "recording the relaunch", record->desc->name);
  return 0;
}

/* A kernel launches on a stream of the calling thread's current device, and
 * the caller (the relaunch thread, preemptd's agent, the application on
 * another device) may have another one: switch for the relaunch and back. */
static int enqueue_relaunch_on_device(preempt_runtime *runtime, preempt_device_state *device,
                                      preempt_launch_record *record) {
  const preempt_gpu_ops *gpu = runtime->gpu;
  int index = (int)(device - runtime->devices), current = index;
  int status = gpu->current_device(&current);
  if (status == 0 && current != index)
    status = gpu->set_device(index);
  if (status != 0)
    return preempt_report_gpu(gpu, status, "selecting the launch's device for a relaunch", record->desc->name);
  status = enqueue_relaunch(gpu, device, record);
  if (current != index)
    gpu->set_device(current);
  return status;
}

static void enqueue_if_ready(preempt_runtime *runtime, preempt_device_state *device, uint32_t slot,
                             preempt_launch_record *record, void *waiting) {
  (void)slot;
  if (!record->relaunch_pending)
    return;
  /* The launch's start event: the work queued ahead of it is done. A
   * drained launch's relaunch waits for its whole first wave instead: a
   * block may still be about to set its bit in the bitmap, which the
   * relaunch reads once (task_loop.cu, next_undone_task). So does a launch
   * asked for in-task contexts: a grid resumes only contexts whose grids
   * have ended (control_block.h, PREEMPT_RELAUNCH_RESUMES); earlier
   * relaunches end before it on its own stream. */
  void *started = record->drained || record->intask_evicted ? record->wave_done_event : record->ready_event;
  if (runtime->gpu->event_query(started) != 0 || enqueue_relaunch_on_device(runtime, device, record) != 0)
    ++*(uint32_t *)waiting;
}

uint32_t preempt_enqueue_ready_relaunches(preempt_runtime *runtime) {
  uint32_t waiting = 0;
  preempt_for_each_record(runtime, enqueue_if_ready, &waiting);
  return waiting;
}

static int wake_relauncher(preempt_runtime *runtime);

/* Launches evicted until other work completes (preempt_resume_after): resumed once it has. */
static void resume_if_after(preempt_runtime *runtime, preempt_device_state *device, uint32_t slot,
                            preempt_launch_record *record, void *waiting) {
  (void)slot;
  /* 1: evicted for a launch not enqueued yet (its caller may have unlocked the context meanwhile); 2: watched. */
  if (record->resume_after != 2)
    return;
  if (!record->in_flight || runtime->gpu->event_query(record->resume_after_event) == 0) {
    record->resume_after = 0;
    if (record->in_flight && preempt_launch_suspended(record) &&
        preempt_resume_record(runtime, device, record) != PREEMPT_OK)
      preempt_report("resuming kernel '%s' after the higher-priority launch it made room for failed: it stays "
                     "evicted until the program resumes it", record->desc->name);
    return;
  }
  ++*(uint32_t *)waiting;
}

int preempt_resume_after(preempt_runtime *runtime, preempt_launch_record *record, void *stream) {
  const preempt_gpu_ops *gpu = runtime->gpu;
  int status = record->resume_after_event ? 0 : gpu->event_create(&record->resume_after_event, 0);
  if (status == 0)
    status = gpu->event_record(record->resume_after_event, stream);
  if (status != 0)
    return preempt_report_gpu(gpu, status, "marking where an evicted launch may resume", record->desc->name);
  record->resume_after = 2;
  return wake_relauncher(runtime);
}

static void *relauncher_loop(void *argument) {
  prctl(PR_SET_TIMERSLACK, 1000UL); /* its 20 us pauses, not 70 */
  preempt_runtime *runtime = preempt_runtime_lock();
  (void)argument;
  (void)preempt_relax_thread_capture(runtime->gpu, "relauncher"); /* reported; its calls then run as before */
  while (!runtime->relauncher.stopping) {
    uint32_t waiting = 0;
    preempt_for_each_record(runtime, resume_if_after, &waiting);
    if (preempt_enqueue_ready_relaunches(runtime) + waiting == 0) {
      pthread_cond_wait(&runtime->relauncher.wake, &runtime->lock);
      continue;
    }
    preempt_runtime_unlock(runtime);
    struct timespec pause = {0, 20000};
    nanosleep(&pause, NULL);
    runtime = preempt_runtime_lock();
  }
  preempt_runtime_unlock(runtime);
  return NULL;
}

/* Context locked. */
static int wake_relauncher(preempt_runtime *runtime) {
  if (!runtime->relauncher.running) {
    if (pthread_create(&runtime->relauncher.thread, NULL, relauncher_loop, NULL) != 0) {
      preempt_report("could not start the relaunch thread");
      return -1;
    }
    runtime->relauncher.running = 1;
  }
  pthread_cond_signal(&runtime->relauncher.wake);
  return 0;
}

preempt_status preempt_resume_record_sms(preempt_runtime *runtime, preempt_device_state *device,
                                         preempt_launch_record *record, const preempt_sm_mask *sms) {
  const preempt_gpu_ops *gpu = runtime->gpu;
  if (!preempt_launch_suspended(record))
    return record->in_flight ? PREEMPT_OK : PREEMPT_ERROR_FINISHED;
  /* A held launch's first run: every SM, and nothing to clear on the device.
   * Yield bits for SMs the scheduler did not name would only send away the
   * CTAs the hardware happens to place there. */
  int unstarted = record->held_unstarted;
  if (unstarted)
    sms = NULL;
  uint32_t cleared[PREEMPT_YIELD_MASK_WORDS];
  for (int word = 0; word < PREEMPT_YIELD_MASK_WORDS; word++)
    cleared[word] = record->yield_mask[word] & (sms ? sms->words[word] : 0xffffffffu);
  uint32_t resumed_sms = mask_popcount(cleared);
  if (resumed_sms == 0)
    return PREEMPT_OK; /* none of those SMs was evicted */
  /* Refill what is given back: every SM after a temporal eviction, else the
   * SMs at the kernel's occupancy. CTAs that find no task left (or land on an
   * SM still evicted) just leave, so an estimate on the high side costs little. */
  uint32_t ctas = record->full_ctas;
  if (!preempt_yield_mask_full(cleared) && (uint64_t)resumed_sms * record->ctas_per_sm < ctas)
    ctas = resumed_sms * record->ctas_per_sm;
  if (ctas == 0)
    ctas = 1;

  uint32_t left[PREEMPT_YIELD_MASK_WORDS];
  for (int word = 0; word < PREEMPT_YIELD_MASK_WORDS; word++)
    left[word] = record->yield_mask[word] & ~cleared[word];
  if (unstarted && record->go_held) {
    /* Its grid waits in its own stream for this store (launch.c): no relaunch, nothing to clear. */
    memcpy(record->yield_mask, left, sizeof left);
    record->held_unstarted = 0;
    record->go_held = 0;
    preempt_go_word_release(&device->control_pool, record);
    return PREEMPT_OK;
  }
  if (unstarted) {
    /* Nothing on the device to clear: it never saw the mask. */
    memcpy(record->yield_mask, left, sizeof left);
  } else {
    int status = preempt_quota_before_resume(gpu, device, record);
    if (status != 0) {
      preempt_report_gpu(gpu, status, "restoring the launch's CTA quota", record->desc->name);
      return PREEMPT_ERROR_GPU;
    }
    status = preempt_intask_before_resume(gpu, device, record);
    if (status != 0) {
      preempt_report_gpu(gpu, status, "clearing the in-task eviction word", record->desc->name);
      return PREEMPT_ERROR_GPU;
    }
    status = write_yield_mask(gpu, device, record, left);
    if (status != 0) {
      preempt_report_gpu(gpu, status, "clearing the yield mask", record->desc->name);
      return PREEMPT_ERROR_GPU;
    }
    record->relaunch_after_clear = 1;
  }
  record->held_unstarted = 0;
  return preempt_relaunch_more(runtime, device, record, ctas);
}

preempt_status preempt_relaunch_more(preempt_runtime *runtime, preempt_device_state *device,
                                     preempt_launch_record *record, uint32_t ctas) {
  (void)device;
  if (!record->relaunch_pending || ctas > record->relaunch_ctas)
    record->relaunch_ctas = ctas;
  record->relaunch_pending = 1;
  /* Enqueued now if the launch has started, else by the relaunch thread
   * when it does: the application may be blocked in a synchronize. */
  if (preempt_enqueue_ready_relaunches(runtime) > 0 && wake_relauncher(runtime) != 0)
    return PREEMPT_ERROR_GPU;
  return PREEMPT_OK;
}

preempt_status preempt_resume_record(preempt_runtime *runtime, preempt_device_state *device,
                                     preempt_launch_record *record) {
  return preempt_resume_record_sms(runtime, device, record, NULL);
}

preempt_status preempt_evict(preempt_launch_id launch, const preempt_sm_mask *sms) {
  uint64_t entry_ns = preempt_monotonic_ns();
  preempt_runtime *runtime = preempt_runtime_lock();
  preempt_evict_steps_begin(runtime, PREEMPT_STEPS_EVICT, entry_ns, PREEMPT_EVICT_STEP_LOCK);
  preempt_device_state *device;
  preempt_launch_record *record = preempt_launch_lookup(runtime, launch, &device);
  if (record)
    record->resume_after = 0; /* the program's own eviction: resumed when the program says */
  preempt_status result = record ? preempt_evict_record(runtime, device, record, sms) : PREEMPT_ERROR_FINISHED;
  /* No launch: in a process that cannot evict every launch ran as written
   * (as_written.c), which the caller should hear with the way out. */
  if (!record && launch == 0 && preempt_lazy_loading(runtime))
    preempt_report("preempt_evict: no launch to evict: CUDA loads this process's modules lazily, so every launch runs "
                   "as written and none can be evicted; set PREEMPT_EVICT_READY=1 before the program starts");
  preempt_evict_steps_end(runtime);
  preempt_runtime_unlock(runtime);
  return result;
}

preempt_status preempt_resume(preempt_launch_id launch) {
  preempt_runtime *runtime = preempt_runtime_lock();
  preempt_device_state *device;
  preempt_launch_record *record = preempt_launch_lookup(runtime, launch, &device);
  preempt_status result = PREEMPT_ERROR_FINISHED;
  if (record && record->daemon_evicted)
    result = PREEMPT_OK; /* preemptd holds it: it runs when the daemon says so */
  else if (record)
    result = preempt_resume_record(runtime, device, record);
  preempt_runtime_unlock(runtime);
  return result;
}

preempt_status preempt_query(preempt_launch_id launch, preempt_launch_state *state) {
  if (!state)
    return PREEMPT_ERROR_INVALID_ARGUMENT;
  preempt_runtime *runtime = preempt_runtime_lock();
  preempt_device_state *device;
  preempt_launch_record *record = preempt_launch_lookup(runtime, launch, &device);
  preempt_status result = PREEMPT_OK;
  if (!record) {
    /* Its control block went to a newer launch: it had finished. */
    *state = PREEMPT_LAUNCH_DONE;
    result = launch ? PREEMPT_OK : PREEMPT_ERROR_INVALID_ARGUMENT;
  } else {
    *state = preempt_record_state(runtime->gpu, record);
  }
  preempt_runtime_unlock(runtime);
  return result;
}

/* Evicts (or resumes) every unfinished launch on `stream`, on the current device. */
static preempt_status for_each_launch_on_stream(void *stream, const preempt_sm_mask *sms, int resume) {
  preempt_runtime *runtime = preempt_runtime_lock();
  const preempt_gpu_ops *gpu = runtime->gpu;
  preempt_status result = PREEMPT_OK;
  int device_index;
  if (gpu->current_device(&device_index) != 0 || device_index < 0 || device_index >= PREEMPT_MAX_DEVICES) {
    result = PREEMPT_ERROR_GPU;
  } else if (runtime->devices[device_index].initialized) {
    preempt_device_state *device = &runtime->devices[device_index];
    for (uint32_t slot = 0; slot < device->control_pool.in_use && result == PREEMPT_OK; slot++) {
      preempt_launch_record *record = &device->control_pool.records[slot];
      /* preemptd's holds are its own to lift: it runs them when it decides. */
      if (!record->in_flight || record->stream != stream || (resume && record->daemon_evicted))
        continue;
      /* Finished and not evicted: nothing to send away, and no words to write (preempt_evict_record writes first). */
      if (!resume && preempt_launch_record_idle(record, gpu))
        continue;
      preempt_status status = resume ? preempt_resume_record(runtime, device, record)
                                     : preempt_evict_record(runtime, device, record, sms);
      if (status != PREEMPT_ERROR_FINISHED)
        result = status;
    }
  }
  preempt_runtime_unlock(runtime);
  return result;
}

preempt_status preempt_evict_stream(void *stream, const preempt_sm_mask *sms) {
  return for_each_launch_on_stream(stream, sms, 0);
}

preempt_status preempt_resume_stream(void *stream) { return for_each_launch_on_stream(stream, NULL, 1); }
