/* control_pool.c: the ring of control blocks and launch records; a block is reused once its launch is over.
 * FLEP §4.1: each launch's task counter must be its own until every CTA of it has left. */
#include "control_pool.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* Every event of a record, and when it is timed: one list for creating and
 * destroying them alike. Timed only where a launch is sampled (a timed record
 * costs the stream ~1.4 us on the H100, control_pool.h), or, with
 * PREEMPT_TIME_EVICTIONS=1, where an eviction's GPU time starts or ends
 * (eviction_time.c). */
enum event_timing {
  UNTIMED,
  TIMED,
  TIMED_WHEN_TIMING_EVICTIONS,
  ONLY_WHEN_TIMING_EVICTIONS, /* timed; not created otherwise */
};
static const struct {
  size_t offset;
  enum event_timing timing;
} record_events[] = {
    {offsetof(preempt_launch_record, wave_done_event), TIMED_WHEN_TIMING_EVICTIONS},
    {offsetof(preempt_launch_record, done_event), UNTIMED},
    {offsetof(preempt_launch_record, resume_event), TIMED}, /* ends a held launch's sample */
    {offsetof(preempt_launch_record, relaunch_done_event), TIMED_WHEN_TIMING_EVICTIONS},
    {offsetof(preempt_launch_record, ready_event), UNTIMED},
    {offsetof(preempt_launch_record, relaunch_start_event), TIMED}, /* starts a held launch's sample */
    {offsetof(preempt_launch_record, sample_start_event), TIMED},   /* a first wave's sample */
    {offsetof(preempt_launch_record, sample_end_event), TIMED},
    {offsetof(preempt_launch_record, quota_refresh_event), UNTIMED},
    {offsetof(preempt_launch_record, evict_request_event), ONLY_WHEN_TIMING_EVICTIONS},
};
#define RECORD_EVENTS (sizeof record_events / sizeof record_events[0])

static void **record_event(preempt_launch_record *record, size_t index) {
  return (void **)((char *)record + record_events[index].offset);
}

static void destroy_events(preempt_launch_record *record, const preempt_gpu_ops *gpu) {
  for (size_t index = 0; index < RECORD_EVENTS; index++) {
    void **event = record_event(record, index);
    if (*event) {
      gpu->event_destroy(*event);
      *event = NULL;
    }
  }
  if (record->resume_after_event) { /* made on first use (eviction.c) */
    gpu->event_destroy(record->resume_after_event);
    record->resume_after_event = NULL;
  }
}

/* All or none: a slot is known to have its events by its first one. */
static int create_events(preempt_launch_record *record, const preempt_gpu_ops *gpu, int time_evictions) {
  int status = 0;
  for (size_t index = 0; status == 0 && index < RECORD_EVENTS; index++) {
    enum event_timing timing = record_events[index].timing;
    if (timing == ONLY_WHEN_TIMING_EVICTIONS && !time_evictions)
      continue;
    status = gpu->event_create(record_event(record, index), timing == TIMED || (timing != UNTIMED && time_evictions));
  }
  if (status != 0)
    destroy_events(record, gpu);
  return status;
}

int preempt_control_pool_init(preempt_control_pool *pool, const preempt_gpu_ops *gpu, uint32_t capacity,
                              int time_evictions) {
  memset(pool, 0, sizeof *pool);
  pool->time_evictions = time_evictions;
  size_t bytes = (size_t)capacity * sizeof(preempt_control_block);
  int status = gpu->device_alloc((void **)&pool->device_blocks, bytes);
  if (status == 0)
    status = gpu->device_zero(pool->device_blocks, bytes);
  pool->records = calloc(capacity, sizeof *pool->records);
  if (status == 0 && !pool->records)
    status = -1;
  pool->capacity = capacity;
  pool->in_use = capacity < PREEMPT_POOL_FIRST_SLOTS ? capacity : PREEMPT_POOL_FIRST_SLOTS;
  for (uint32_t slot = 0; status == 0 && slot < capacity; slot++)
    pool->records[slot].control = &pool->device_blocks[slot];
  if (status != 0)
    preempt_control_pool_destroy(pool, gpu);
  return status;
}

void preempt_control_pool_destroy(preempt_control_pool *pool, const preempt_gpu_ops *gpu) {
  for (uint32_t slot = 0; pool->records && slot < pool->capacity; slot++) {
    preempt_launch_record *record = &pool->records[slot];
    if (record->in_flight && !preempt_launch_suspended(record)) {
      gpu->event_synchronize(record->done_event);
      if (record->resumed)
        gpu->event_synchronize(record->resume_event);
    }
    destroy_events(record, gpu);
    free(record->values);
    free(record->params);
    if (record->undone)
      gpu->device_free(record->undone);
    if (record->intask_ring.contexts)
      gpu->device_free(record->intask_ring.contexts);
  }
  for (uint32_t index = 0; index < pool->retired_count; index++)
    gpu->device_free(pool->retired_buffers[index]);
  free(pool->retired_buffers);
  if (pool->device_blocks)
    gpu->device_free(pool->device_blocks);
  if (pool->go_words)
    gpu->host_words_free(pool->go_words);
  free(pool->records);
  memset(pool, 0, sizeof *pool);
}

int preempt_control_pool_go_words(preempt_control_pool *pool, const preempt_gpu_ops *gpu) {
  if (pool->go_words)
    return 0;
  if (pool->go_words_status)
    return pool->go_words_status; /* asked once: held launches then start as relaunches */
  pool->go_words_status = gpu->host_words_alloc && gpu->host_words_free
                               ? gpu->host_words_alloc(&pool->go_words, &pool->go_words_device, pool->capacity)
                               : -1;
  return pool->go_words_status;
}

static uint32_t slot_of(const preempt_control_pool *pool, const preempt_launch_record *record) {
  return (uint32_t)(record - pool->records);
}

void *preempt_go_word_device(const preempt_control_pool *pool, const preempt_launch_record *record) {
  return (uint32_t *)pool->go_words_device + slot_of(pool, record);
}

/* A plain store the GPU's wait reads over the bus: no stream, so no hardware queue that could sit behind the
 * held stream itself (docs/preemption.md, "The hardware-queue trap"). */
void preempt_go_word_release(preempt_control_pool *pool, const preempt_launch_record *record) {
  __atomic_store_n(&pool->go_words[slot_of(pool, record)], record->generation, __ATOMIC_RELEASE);
}

int preempt_launch_finished(const preempt_launch_record *record, const preempt_gpu_ops *gpu) {
  if (record->relaunch_pending || gpu->event_query(record->done_event) != 0)
    return 0;
  return !record->resumed || gpu->event_query(record->resume_event) == 0;
}

int preempt_yield_mask_full(const uint32_t *words) {
  for (int word = 0; word < PREEMPT_YIELD_MASK_WORDS; word++)
    if (words[word] != 0xffffffffu)
      return 0;
  return 1;
}

int preempt_launch_suspended(const preempt_launch_record *record) {
  for (int word = 0; word < PREEMPT_YIELD_MASK_WORDS; word++)
    if (record->yield_mask[word])
      return 1;
  return 0;
}

/* A slot's events are created when it is first handed out. */
static int take(preempt_control_pool *pool, const preempt_gpu_ops *gpu, uint32_t candidate, uint32_t *slot) {
  preempt_launch_record *record = &pool->records[candidate];
  if (!record->wave_done_event) {
    int status = create_events(record, gpu, pool->time_evictions);
    if (status != 0)
      return status;
  }
  pool->next_slot = (candidate + 1) % pool->in_use;
  *slot = candidate;
  return 0;
}

int preempt_launch_record_idle(preempt_launch_record *record, const preempt_gpu_ops *gpu) {
  if (record->launching)
    return 0;
  if (record->in_flight && !preempt_launch_suspended(record) && preempt_launch_finished(record, gpu))
    record->in_flight = 0;
  return !record->in_flight;
}

int preempt_control_pool_acquire(preempt_control_pool *pool, const preempt_gpu_ops *gpu, uint32_t *slot) {
  for (uint32_t offset = 0; offset < pool->in_use; offset++) {
    uint32_t candidate = (pool->next_slot + offset) % pool->in_use;
    if (preempt_launch_record_idle(&pool->records[candidate], gpu))
      return take(pool, gpu, candidate, slot);
  }
  /* Every slot of the ring is busy: grow it (doubling) before waiting. A
   * program with few launches in flight keeps a small ring, and so few
   * events: under MPS every client's events come from one server, and 11
   * processes holding 5 x 1024 events each could not even allocate memory
   * on the H100. */
  if (pool->in_use < pool->capacity) {
    uint32_t first_new = pool->in_use;
    pool->in_use = pool->in_use * 2 < pool->capacity ? pool->in_use * 2 : pool->capacity;
    return take(pool, gpu, first_new, slot);
  }
  /* Every block is in use: wait for the oldest launch that can finish. */
  for (uint32_t offset = 0; offset < pool->capacity; offset++) {
    uint32_t candidate = (pool->next_slot + offset) % pool->capacity;
    preempt_launch_record *record = &pool->records[candidate];
    if (record->launching || record->relaunch_pending || preempt_launch_suspended(record))
      continue;
    int status = gpu->event_synchronize(record->done_event);
    if (status == 0 && record->resumed)
      status = gpu->event_synchronize(record->resume_event);
    if (status != 0)
      return status;
    record->in_flight = 0;
    return take(pool, gpu, candidate, slot);
  }
  return gpu->not_ready;
}

int preempt_control_pool_grow_buffer(preempt_control_pool *pool, const preempt_gpu_ops *gpu, void **buffer,
                                     size_t *bytes, size_t needed, size_t first_bytes) {
  if (pool->retired_count == pool->retired_capacity) {
    uint32_t capacity = pool->retired_capacity ? 2 * pool->retired_capacity : 8;
    void **grown = realloc(pool->retired_buffers, capacity * sizeof *grown);
    if (!grown)
      return -1;
    pool->retired_buffers = grown;
    pool->retired_capacity = capacity;
  }
  /* Doubling: few regrowths per block. */
  size_t grown_bytes = *bytes ? 2 * *bytes : first_bytes;
  while (grown_bytes < needed)
    grown_bytes *= 2;
  void *fresh = NULL;
  int status = gpu->device_alloc(&fresh, grown_bytes);
  if (status != 0)
    return status;
  if (*buffer)
    pool->retired_buffers[pool->retired_count++] = *buffer;
  *buffer = fresh;
  *bytes = grown_bytes;
  return 0;
}

int preempt_launch_record_grow_undone(preempt_control_pool *pool, const preempt_gpu_ops *gpu,
                                      preempt_launch_record *record, uint32_t task_count) {
  size_t needed = ((size_t)task_count + 31) / 32 * sizeof(uint32_t);
  if (record->undone_bytes >= needed)
    return 0;
  /* From 8 KiB (65,536 blocks). */
  int status = preempt_control_pool_grow_buffer(pool, gpu, &record->undone, &record->undone_bytes, needed, 8192);
  if (status != 0)
    return status;
  record->undone_moved = 1;
  record->undone_dirty = 1;
  return 0;
}

int preempt_launch_record_reset_undone(const preempt_gpu_ops *gpu, preempt_launch_record *record, void *stream) {
  if (record->undone_moved) {
    preempt_control_block *control = record->control;
    uint64_t address = (uint64_t)(uintptr_t)record->undone;
    uint32_t halves[2] = {(uint32_t)address, (uint32_t)(address >> 32)};
    int status = gpu->stream_write_words(stream, (uint32_t *)&control->undone, halves, 2);
    if (status != 0)
      return status;
    record->undone_moved = 0;
  }
  if (record->undone_dirty) {
    int status = gpu->device_zero_async(record->undone, record->undone_bytes, stream);
    if (status != 0)
      return status;
    record->undone_dirty = 0;
  }
  return 0;
}

int preempt_launch_record_store_params(preempt_launch_record *record, uint32_t param_count, const size_t *sizes,
                                       void *const *args) {
  size_t total = 0;
  for (uint32_t index = 0; index < param_count; index++)
    total += (sizes[index] + 15) & ~(size_t)15; /* keep every copy 16-byte aligned */
  if (total > record->values_capacity) {
    unsigned char *values = realloc(record->values, total);
    if (!values)
      return -1;
    record->values = values;
    record->values_capacity = total;
  }
  size_t params = param_count + PREEMPT_KERNEL_EXTRA_PARAMS;
  if (params > record->params_capacity) {
    void **pointers = realloc(record->params, params * sizeof *pointers);
    if (!pointers)
      return -1;
    record->params = pointers;
    record->params_capacity = params;
  }
  size_t offset = 0;
  for (uint32_t index = 0; index < param_count; index++) {
    memcpy(record->values + offset, args[index], sizes[index]);
    record->params[index] = record->values + offset;
    offset += (sizes[index] + 15) & ~(size_t)15;
  }
  void **extra = record->params + param_count;
  extra[0] = &record->control;
  extra[1] = &record->task_count;
  extra[2] = &record->grid[0];
  extra[3] = &record->grid[1];
  extra[4] = &record->grid[2];
  extra[5] = &record->generation;
  extra[6] = &record->check_interval;
  extra[7] = &record->relaunched;
  return 0;
}

preempt_launch_state preempt_record_state(const preempt_gpu_ops *gpu, const preempt_launch_record *record) {
  if (!record->in_flight || preempt_launch_finished(record, gpu))
    return PREEMPT_LAUNCH_DONE;
  if (!preempt_launch_suspended(record))
    return PREEMPT_LAUNCH_RUNNING;
  return preempt_record_all_gone(gpu, record) ? PREEMPT_LAUNCH_EVICTED : PREEMPT_LAUNCH_EVICTING;
}

int preempt_record_all_gone(const preempt_gpu_ops *gpu, const preempt_launch_record *record) {
  /* Evicted from every SM, and every CTA gone: the first wave's (none for a
   * launch preemptd held before its first run) and the relaunches'. A
   * relaunch asked for before the eviction and not enqueued yet (it waits for
   * the launch's start) still comes: its CTAs, which leave at once, or restore
   * in-task contexts and save them again, run after the host would have been
   * told EVICTED (the likely cause of one H100 eviction in 800 whose GPU time,
   * preempt_get_eviction_time, was not ready once EVICTED had been said). */
  if (record->held_unstarted)
    return !record->relaunch_pending; /* nothing of it has run: a go-held grid waits for its word (launch.c) */
  return !record->relaunch_pending && preempt_yield_mask_full(record->yield_mask) &&
         gpu->event_query(record->wave_done_event) == 0 &&
         (!record->resumed || gpu->event_query(record->relaunch_done_event) == 0);
}
