/* intask.c: which launches check their in-task yield points, their context rings, and the eviction word.
 * Issue 8 (docs/intask.md): CTXBack's contexts saved in software, at EffiSha §6.3's adaptive check period. */
#include <stddef.h>
#include <string.h>

#include "runtime.h"

/* The most an in-task variant may cost per task, against the persistent
 * form's, for PREEMPT_INTASK=auto to run it: latency is bought with
 * throughput only where it is cheap. The H200 ran preempt_bench's long kernel
 * (an ALU loop) 1.22x slower in its variant (gpu_check at b252bc4), and
 * EffiSha's mix under preemptd 1.23x slower standalone; the H100's intask
 * bench kernels cost 1.02-1.04x. */
#define INTASK_MAX_COST 1.05
/* How fast CTAs write their contexts, for "the context pays for itself": a
 * low estimate of the H100's write bandwidth (bytes per ns). */
#define INTASK_SAVE_BYTES_PER_NS 1000.0

/* Bytes of one saved context of this kernel at this block size. */
static uint64_t record_bytes(const preempt_intask_desc *desc, uint32_t block_threads) {
  uint64_t bytes = PREEMPT_INTASK_HEADER_BYTES + ((uint64_t)desc->cta_bytes + 15) / 16 * 16 +
                   (uint64_t)desc->thread_bytes * block_threads;
  return (bytes + 15) / 16 * 16;
}

/* Whether the constant-chunk twin can run this launch's configuration (choose_shape times it only then). */
static int twin_usable(const preempt_runtime *runtime, const preempt_kernel_on_device *on_device) {
  return on_device->intask_chunks_function && runtime->settings.intask_shape != PREEMPT_SHAPE_RUNTIME &&
         on_device->intask_chunks_ctas_per_sm != 0 &&
         !(runtime->settings.intask == PREEMPT_INTASK_AUTO &&
           on_device->intask_chunks_ctas_per_sm < on_device->ctas_per_sm);
}

/* Whether `shape` (0: run-time chunks, 1: the twin) may run this launch: both under PREEMPT_INTASK_SHAPE=auto
 * where the twin can, else the one asked for (the first where the twin cannot). */
static int shape_may_run(const preempt_runtime *runtime, const preempt_kernel_on_device *on_device, int shape) {
  if (!twin_usable(runtime, on_device))
    return shape == 0;
  if (runtime->settings.intask_shape == PREEMPT_SHAPE_AUTO)
    return 1;
  return shape == (runtime->settings.intask_shape == PREEMPT_SHAPE_CHUNKS);
}

/* The variant's cost per task against the persistent form's, over the shapes that may run, once each has its
 * samples; 0 until then (its launches are the trial). */
static double variant_cost(const preempt_runtime *runtime, const preempt_kernel_on_device *on_device) {
  if (on_device->persistent_ns_per_task <= 0)
    return 0;
  double best = 0;
  for (int shape = 0; shape < 2; shape++) {
    if (!shape_may_run(runtime, on_device, shape))
      continue;
    if (on_device->shape_samples[shape] < PREEMPT_SHAPE_SAMPLES)
      return 0;
    if (best == 0 || on_device->shape_ns_per_task[shape] < best)
      best = on_device->shape_ns_per_task[shape];
  }
  return best / on_device->persistent_ns_per_task;
}

int preempt_intask_wanted(const preempt_runtime *runtime, const preempt_kernel_on_device *on_device,
                          uint32_t block_threads, uint32_t ctas) {
  if (on_device->intask.point_count == 0 || runtime->settings.intask == PREEMPT_INTASK_OFF)
    return 0;
  if (runtime->settings.intask == PREEMPT_INTASK_ON)
    return 1;
  /* auto: only where evictions are expected (preemptd schedules the
   * launch, PREEMPT_STRESS, PREEMPT_EVICT_READY=1, an eviction asked): the
   * variant cost 1.02-1.04x at the 10 us period on the H100
   * (bench/results/2026-11-24-intask-entry-poll-period-h100.md), a cost a
   * process that never evicts would pay for nothing. And only where a
   * task-boundary eviction would outlast the latency bound
   * (PREEMPT_EVICT_BOUND_US; 0: none, so no variant for latency), and
   * saving every CTA's context costs well under one task (as the check
   * period does). */
  double bound_ns = runtime->settings.evict_bound_us * 1e3;
  if (!preempt_evictions_expected(runtime) || bound_ns <= 0)
    return 0;
  /* The grid is sized for the persistent form: a variant that holds fewer
   * CTAs per SM (launch.c says so) would cost the whole launch occupancy. */
  if (on_device->intask_ctas_per_sm < on_device->ctas_per_sm)
    return 0;
  /* The persistent form's own samples first: its time per task is what
   * the variant's cost is weighed against. */
  if (on_device->task_samples < PREEMPT_TASK_SAMPLES)
    return 0;
  double save_ns = (double)record_bytes(&on_device->intask, block_threads) * ctas / INTASK_SAVE_BYTES_PER_NS;
  double task_ns = on_device->task_nanoseconds;
  if (task_ns <= bound_ns || task_ns < 4 * save_ns)
    return 0;
  /* Then a trial: the variant's launches are timed (choose_shape) until its
   * cost is known, and it runs on only where that cost is small. */
  double cost = variant_cost(runtime, on_device);
  return cost == 0 || cost <= INTASK_MAX_COST;
}

/* Writes words [first, first + count) of the host image `image` of the
 * control block to the device's, on `stream`. */
static int write_control_words(const preempt_gpu_ops *gpu, void *stream, preempt_control_block *control,
                               const preempt_control_block *image, size_t offset, size_t bytes) {
  return gpu->stream_write_words(stream, (uint32_t *)((unsigned char *)control + offset),
                                 (const uint32_t *)((const unsigned char *)image + offset), (uint32_t)(bytes / 4));
}

static int ring_has_layout(const preempt_intask_ring *ring, uint64_t capacity, uint64_t bytes_each) {
  return ring->capacity == capacity && ring->record_bytes == bytes_each;
}

/* Gives `record` a context ring of at least `needed` bytes, zeroed for this
 * layout, where its own is smaller or of another layout. A record keeps its
 * ring between launches, and the pool hands its slots out in turn: with a ring
 * kept per slot, each of a kernel's first 64 launches allocated a ring and
 * zeroed it on the stream ahead of its grid, and 64 rings stayed allocated.
 * A record whose launch is over (not in flight, not being launched, no
 * relaunch to come) hands its ring over instead, one of this layout first,
 * which needs no zeroing; the two records swap rings. Only when none has one
 * big enough is a larger one allocated. Kernels of different layouts launched
 * in turn may then share one ring, zeroed at each change (a memset on the
 * stream) rather than each keep one. */
static int take_ring(preempt_device_state *device, const preempt_gpu_ops *gpu, preempt_launch_record *record,
                     size_t needed, uint64_t capacity, uint64_t bytes_each, void *stream) {
  preempt_control_pool *pool = &device->control_pool;
  preempt_intask_ring *ring = &record->intask_ring;
  preempt_launch_record *donor = NULL;
  for (uint32_t slot = 0; slot < pool->in_use; slot++) {
    preempt_launch_record *other = &pool->records[slot];
    if (other == record || !other->intask_ring.contexts || other->intask_ring.bytes < needed ||
        other->relaunch_pending || !preempt_launch_record_idle(other, gpu))
      continue;
    int same_layout = ring_has_layout(&other->intask_ring, capacity, bytes_each);
    if (!donor || same_layout)
      donor = other;
    if (same_layout)
      break;
  }
  int status = 0;
  if (donor && (ring->bytes < needed || ring_has_layout(&donor->intask_ring, capacity, bytes_each))) {
    preempt_intask_ring own = *ring;
    *ring = donor->intask_ring;
    donor->intask_ring = own;
  } else if (ring->bytes < needed) {
    status = preempt_control_pool_grow_buffer(pool, gpu, &ring->contexts, &ring->bytes, needed, 1u << 20);
    if (status == 0)
      ring->capacity = ring->record_bytes = 0; /* fresh memory */
  }
  /* Stale bytes of another layout could look like a record's tag. A ring of
   * this layout, used by this or another control block before, is not zeroed
   * again: a resumed grid claims only records in [head, tail) of its own
   * control block, each written by a grid of its launch that has ended
   * (claim_context). */
  if (status == 0 && !ring_has_layout(ring, capacity, bytes_each) &&
      (status = gpu->device_zero_async(ring->contexts, ring->bytes, stream)) == 0) {
    ring->capacity = (uint32_t)capacity;
    ring->record_bytes = (uint32_t)bytes_each;
  }
  return status;
}

/* Which of the kernel's in-task variants a launch runs (1: the one in
 * constant chunks), and whether it is timed for the choice. Under
 * PREEMPT_INTASK_SHAPE=auto the two shapes are timed in turn, one launch at
 * a time (a launch that is evicted, or ends after another sample began, is
 * not counted: launch.c), until each has PREEMPT_SHAPE_SAMPLES; then the
 * faster per task runs. A twin that cannot run at the launch's block size
 * never does, even when PREEMPT_INTASK_SHAPE=chunks asks for it; under
 * PREEMPT_INTASK=auto it also needs the occupancy the grid was sized for,
 * as the first variant does (preempt_intask_wanted). */
preempt_intask_shape preempt_intask_chosen_shape(const preempt_runtime *runtime,
                                                 const preempt_kernel_on_device *on_device) {
  if (!on_device->intask_chunks_function)
    return PREEMPT_SHAPE_AUTO;
  if (runtime->settings.intask_shape != PREEMPT_SHAPE_AUTO)
    return (preempt_intask_shape)runtime->settings.intask_shape;
  if (on_device->shape_samples[0] < PREEMPT_SHAPE_SAMPLES || on_device->shape_samples[1] < PREEMPT_SHAPE_SAMPLES)
    return PREEMPT_SHAPE_AUTO;
  return on_device->shape_ns_per_task[1] < on_device->shape_ns_per_task[0] ? PREEMPT_SHAPE_CHUNKS
                                                                           : PREEMPT_SHAPE_RUNTIME;
}

static int choose_shape(const preempt_runtime *runtime, const preempt_kernel_on_device *on_device, int *timed) {
  *timed = 0;
  /* Occupancy 0: it cannot run at this block size (its registers), or the query failed (said: launch.c). One
   * shape, the first or the one asked for: under PREEMPT_INTASK=auto it is still timed, for the variant's cost
   * (preempt_intask_wanted). */
  int only = !twin_usable(runtime, on_device) ? 0
             : runtime->settings.intask_shape == PREEMPT_SHAPE_CHUNKS ? 1
                                                                       : -1;
  if (only >= 0) {
    *timed = runtime->settings.intask == PREEMPT_INTASK_AUTO && !on_device->sampling &&
             on_device->shape_samples[only] < PREEMPT_SHAPE_SAMPLES;
    return only;
  }
  preempt_intask_shape chosen = preempt_intask_chosen_shape(runtime, on_device);
  if (chosen != PREEMPT_SHAPE_AUTO)
    return chosen == PREEMPT_SHAPE_CHUNKS;
  if (on_device->sampling)
    return 0; /* another launch is being timed: the first variant meanwhile */
  *timed = 1;
  return on_device->shape_samples[1] < on_device->shape_samples[0];
}

int preempt_intask_prepare(preempt_runtime *runtime, preempt_device_state *device,
                           const preempt_kernel_on_device *on_device, preempt_launch_record *record, void *stream,
                           int *shape_timed) {
  const preempt_gpu_ops *gpu = runtime->gpu;
  uint32_t block_threads = record->block.x * record->block.y * record->block.z;
  *shape_timed = 0;
  record->intask_evicted = 0;
  record->intask_chunks = 0;
  record->intask_enabled = preempt_intask_wanted(runtime, on_device, block_threads, record->full_ctas);
  preempt_control_block *control = record->control;
  preempt_control_block image;
  memset(&image, 0, sizeof image);
  /* The block's last launch ended while an eviction asked for contexts (it
   * finished first): this one must not find the word set. */
  if (record->intask_evict_set) {
    int status = write_control_words(gpu, stream, control, &image, offsetof(preempt_control_block, intask_evict),
                                     sizeof image.intask_evict);
    if (status != 0)
      return status;
    record->intask_evict_set = 0;
  }
  uint32_t period = record->intask_enabled ? runtime->intask_period_ns : 0;
  if (period != record->intask_period_ns) {
    image.intask_period_ns = period;
    int status = write_control_words(gpu, stream, control, &image, offsetof(preempt_control_block, intask_period_ns),
                                     sizeof image.intask_period_ns);
    if (status != 0)
      return status;
    record->intask_period_ns = period;
  }
  record->intask_function = NULL;
  if (!record->intask_enabled)
    return 0;
  int timed;
  record->intask_chunks = choose_shape(runtime, on_device, &timed);
  record->intask_function = record->intask_chunks ? on_device->intask_chunks_function : on_device->intask_function;
  const preempt_intask_desc *desc = record->intask_chunks ? &on_device->intask_chunks : &on_device->intask;
  /* Twice the CTAs the device holds at once: every grid of a launch saves at
   * most one context per CTA it ran, and those it claimed free theirs
   * (docs/intask.md). */
  uint64_t capacity = 2ull * on_device->ctas_per_sm * device->sm_count + 2;
  uint64_t bytes_each = record_bytes(desc, block_threads);
  if (capacity * bytes_each > (1ull << 34) || bytes_each > UINT32_MAX) {
    preempt_report("kernel '%s': its in-task contexts would take %llu bytes; in-task checks off for this launch",
                   record->desc->name, (unsigned long long)(capacity * bytes_each));
    record->intask_enabled = 0;
    record->intask_chunks = 0;
    record->intask_function = NULL;
    return 0;
  }
  *shape_timed = timed;
  int status = 0;
  size_t needed = (size_t)(capacity * bytes_each);
  preempt_intask_ring *ring = &record->intask_ring;
  if ((ring->bytes < needed || !ring_has_layout(ring, capacity, bytes_each)) &&
      (status = take_ring(device, gpu, record, needed, capacity, bytes_each, stream)) != 0)
    return status;
  if (record->intask_control_contexts == ring->contexts && capacity == record->intask_capacity &&
      bytes_each == record->intask_record_bytes)
    return 0;
  image.intask_capacity = (uint32_t)capacity;
  image.intask_record_bytes = (uint32_t)bytes_each;
  image.intask_contexts = ring->contexts;
  size_t first = offsetof(preempt_control_block, intask_capacity);
  size_t end = offsetof(preempt_control_block, intask_contexts) + sizeof image.intask_contexts;
  if ((status = write_control_words(gpu, stream, control, &image, first, end - first)) != 0)
    return status;
  record->intask_control_contexts = ring->contexts;
  record->intask_capacity = (uint32_t)capacity;
  record->intask_record_bytes = (uint32_t)bytes_each;
  return 0;
}

/* Sets or clears the device's eviction word on the control stream. */
static int write_evict_word(const preempt_gpu_ops *gpu, preempt_device_state *device, preempt_launch_record *record,
                            uint32_t value) {
  preempt_control_block *control = record->control;
  int status = gpu->stream_write_words(device->control_stream, &control->intask_evict, &value, 1);
  if (status == 0)
    record->intask_evict_set = value != 0;
  return status;
}

int preempt_intask_before_evict(const preempt_gpu_ops *gpu, preempt_device_state *device,
                                preempt_launch_record *record, int every_sm) {
  /* Only a full eviction stops CTAs inside their tasks: a partial one
   * (spatial, or a quota's excess) leaves at task boundaries, so that no
   * context is saved while other CTAs of the launch run on (docs/intask.md).
   * A launch held for preemptd that has not started has no CTA to stop, and
   * its first run (eviction.c, held_unstarted) clears nothing on the device:
   * a word set now would send that run's CTAs away at their first point. */
  if (!every_sm || !record->intask_enabled || record->intask_evict_set || record->held_unstarted)
    return 0;
  int status = write_evict_word(gpu, device, record, 1);
  if (status == 0)
    record->intask_evicted = 1;
  return status;
}

int preempt_intask_before_resume(const preempt_gpu_ops *gpu, preempt_device_state *device,
                                 preempt_launch_record *record) {
  if (!record->intask_evict_set)
    return 0;
  int status = write_evict_word(gpu, device, record, 0);
  if (status != 0)
    return status;
  /* The relaunch that resumes the contexts starts its tickets afresh. */
  preempt_control_block image;
  memset(&image, 0, sizeof image);
  size_t first = offsetof(preempt_control_block, intask_claim_tickets);
  size_t end = offsetof(preempt_control_block, intask_claim_range) + sizeof image.intask_claim_range;
  return write_control_words(gpu, device->control_stream, record->control, &image, first, end - first);
}

int preempt_intask_launch(const preempt_gpu_ops *gpu, preempt_launch_record *record, preempt_dim3 grid, void *stream,
                          int first_wave) {
  if (record->intask_function) {
    int status = gpu->launch_function(record->desc->host_stub, record->intask_function, grid, record->block,
                                      record->params, record->shared_bytes, stream);
    if (status == 0 || !first_wave)
      return status;
    /* gpu.h: a copy that cannot be launched leaves the launch to the
     * persistent form, whose evictions then wait for task boundaries. */
    preempt_report_gpu(gpu, status, "launching the in-task variant (this launch runs without in-task checks)",
                       record->desc->name);
    record->intask_function = NULL;
    record->intask_enabled = 0;
    record->intask_chunks = 0;
  }
  return gpu->launch_function(record->desc->host_stub, record->persistent_function, grid, record->block,
                              record->params, record->shared_bytes, stream);
}

uint32_t preempt_intask_relaunch_flags(const preempt_launch_record *record) {
  uint32_t epoch = record->relaunches + 1;
  return (record->intask_evicted ? PREEMPT_RELAUNCH_RESUMES : 0) | (epoch << PREEMPT_RELAUNCH_EPOCH_SHIFT);
}
