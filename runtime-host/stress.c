/* stress.c: PREEMPT_STRESS=1 evicts and resumes every running launch at random moments, for testing.
 * Exercises FLEP §4.1's temporal and spatial preemption under unmodified programs (bench/gpu_check.sh). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "runtime.h"

static void sleep_microseconds(long microseconds) {
  struct timespec pause = {microseconds / 1000000, (microseconds % 1000000) * 1000};
  nanosleep(&pause, NULL);
}

/* xorshift: reproducible per process, no shared state with rand(). */
static uint64_t next_random(uint64_t *state) {
  *state ^= *state << 13;
  *state ^= *state >> 7;
  *state ^= *state << 17;
  return *state;
}

struct stress_round {
  int resume;
  uint64_t *random;
};

/* Evicts (from all SMs, or from a random half of them) or resumes one launch in flight. */
static void act_on_launch(preempt_runtime *runtime, preempt_device_state *device, uint32_t slot,
                          preempt_launch_record *record, void *context) {
  struct stress_round *round = context;
  /* preemptd schedules its launches itself: random moves would fight it. */
  if (!record->in_flight || record->daemon_stub)
    return;
  if (round->resume) {
    if (preempt_launch_suspended(record) && preempt_resume_record(runtime, device, record) == PREEMPT_OK) {
      runtime->stress.resumptions++;
      if (runtime->stress.verbose)
        fprintf(stderr, "preempt: stress: resumed slot %u generation %u\n", slot, record->generation);
    }
    return;
  }
  /* A launch whose stream the runtime may not hold (CUDA's 8 queues hold 4)
   * is passed by, counted rather than refused with a message each round. */
  if (!preempt_launch_suspended(record) && !preempt_may_hold_stream(runtime, device, record->stream)) {
    runtime->stress.skipped_held_streams++;
    return;
  }
  /* preempt_evict_record writes its words before it asks whether the launch has finished; a finished launch
   * is not worth those writes and the resumption that undoes them (and is marked finished, priority.c). */
  if (preempt_launch_record_idle(record, runtime->gpu))
    return;
  int spatial = next_random(round->random) & 1;
  preempt_sm_mask mask = {{0}};
  for (uint32_t sm = 0; spatial && sm < device->sm_count && sm < 32 * PREEMPT_SM_MASK_WORDS; sm++)
    if (next_random(round->random) & 1)
      mask.words[sm / 32] |= 1u << (sm % 32);
  if (preempt_evict_record(runtime, device, record, spatial ? &mask : NULL) == PREEMPT_OK) {
    runtime->stress.evictions++;
    runtime->stress.spatial_evictions += spatial;
    runtime->stress.drained_evictions += record->drained;
    if (runtime->stress.verbose)
      fprintf(stderr, "preempt: stress: evicted slot %u generation %u (%s)\n", slot, record->generation,
              spatial ? "spatial" : "temporal");
  }
}

static void act_on_launches(preempt_runtime *runtime, int resume, uint64_t *random) {
  struct stress_round round = {resume, random};
  preempt_for_each_record(runtime, act_on_launch, &round);
}

static void *stress_loop(void *argument) {
  preempt_runtime *runtime = argument;
  uint64_t random = 0x9e3779b97f4a7c15ull;
  (void)preempt_relax_thread_capture(runtime->gpu, "stress"); /* reported; its calls then run as before */
  /* Read once: the thread runs unlocked between rounds. The default, 2000, waits 0.2-2 ms before evicting and
   * 0.05-0.5 ms before resuming. */
  preempt_runtime *locked = preempt_runtime_lock();
  long period = locked->stress.period_us;
  preempt_runtime_unlock(locked);
  for (;;) {
    sleep_microseconds(period / 10 + (long)(next_random(&random) % (uint64_t)(period - period / 10)));
    locked = preempt_runtime_lock();
    int running = locked->stress.running;
    if (running)
      act_on_launches(locked, 0, &random);
    preempt_runtime_unlock(locked);
    if (!running)
      break;
    sleep_microseconds(period / 40 + (long)(next_random(&random) % (uint64_t)(period / 4 - period / 40)));
    locked = preempt_runtime_lock();
    act_on_launches(locked, 1, &random); /* always resume: the application may be waiting */
    preempt_runtime_unlock(locked);
  }
  return runtime;
}

static void stop_at_exit(void) {
  preempt_runtime *runtime = preempt_runtime_lock();
  int started = runtime->stress.started;
  preempt_runtime_unlock(runtime);
  if (!started)
    return;
  preempt_stress_stop(runtime); /* a no-op if preempt_shutdown (or cudaDeviceReset) stopped it already */
  /* Launches that ran the unconverted copy had nothing to evict: said, so
   * that a run with few evictions tells why (bench/report_suite.py). */
  unsigned long long one_wave = 0, short_launches = 0, captured = 0;
  runtime = preempt_runtime_lock();
  for (const preempt_kernel_state *kernel = runtime->kernels; kernel; kernel = kernel->next)
    for (int device = 0; device < PREEMPT_MAX_DEVICES; device++) {
      one_wave += kernel->on_device[device].one_wave_launches;
      short_launches += kernel->on_device[device].short_launches;
      captured += kernel->on_device[device].capture_launches;
    }
  preempt_runtime_unlock(runtime);
  fprintf(stderr,
          "preempt: stress: %llu evictions (%llu spatial, %llu of drained launches), %llu resumptions, %llu one-wave "
          "launches run as written, %llu short launches run as written (PREEMPT_LONG_US), %llu captured launches "
          "run as written, %llu evictions not tried (held-stream limit, %u hardware queues: %s)\n",
          (unsigned long long)runtime->stress.evictions, (unsigned long long)runtime->stress.spatial_evictions,
          (unsigned long long)runtime->stress.drained_evictions,
          (unsigned long long)runtime->stress.resumptions, one_wave, short_launches, captured,
          (unsigned long long)runtime->stress.skipped_held_streams, runtime->hardware_queues,
          runtime->hardware_queues_from);
}

void preempt_stress_start_if_requested(preempt_runtime *runtime) {
  if (!runtime->stress.enabled || runtime->stress.running)
    return;
  runtime->stress.running = 1;
  if (pthread_create(&runtime->stress.thread, NULL, stress_loop, runtime) != 0) {
    runtime->stress.running = 0;
    runtime->stress.enabled = 0;
    preempt_report("PREEMPT_STRESS=1: could not start the eviction thread");
    return;
  }
  /* Once per process: a thread stopped by preempt_shutdown and started again by a later launch still says its
   * counts once, at exit. */
  if (!runtime->stress.started)
    atexit(stop_at_exit);
  runtime->stress.started = 1;
}

/* Called without the lock held: the thread takes it. */
void preempt_stress_stop(preempt_runtime *runtime) {
  runtime = preempt_runtime_lock();
  int was_running = runtime->stress.running;
  runtime->stress.running = 0;
  preempt_runtime_unlock(runtime);
  if (!was_running)
    return;
  pthread_join(runtime->stress.thread, NULL);
  /* Whatever the last round evicted is resumed, so nothing waits forever. */
  uint64_t random = 1;
  runtime = preempt_runtime_lock();
  act_on_launches(runtime, 1, &random);
  preempt_runtime_unlock(runtime);
}
