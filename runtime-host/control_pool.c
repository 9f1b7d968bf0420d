/* control_pool.c: recycles per-launch control blocks; a slot is reused only after its launch has finished.
 * FLEP §4.1: the task counter must be zero when a launch starts; the kernel's last CTA re-zeroes it. */
#include "control_pool.h"

#include <stdlib.h>
#include <string.h>

int preempt_control_pool_init(preempt_control_pool *pool, const preempt_gpu_ops *gpu, uint32_t capacity) {
  memset(pool, 0, sizeof *pool);
  size_t bytes = (size_t)capacity * sizeof(preempt_control_block);
  int status = gpu->device_alloc((void **)&pool->device_blocks, bytes);
  if (status == 0)
    status = gpu->device_zero(pool->device_blocks, bytes);
  pool->done_events = calloc(capacity, sizeof *pool->done_events);
  pool->in_flight = calloc(capacity, 1);
  if (status == 0 && (!pool->done_events || !pool->in_flight))
    status = -1; /* host out of memory; the caller reports it */
  for (uint32_t slot = 0; status == 0 && slot < capacity; slot++)
    status = gpu->event_create(&pool->done_events[slot]);
  pool->capacity = capacity;
  if (status != 0)
    preempt_control_pool_destroy(pool, gpu);
  return status;
}

void preempt_control_pool_destroy(preempt_control_pool *pool, const preempt_gpu_ops *gpu) {
  for (uint32_t slot = 0; pool->done_events && slot < pool->capacity; slot++) {
    if (pool->done_events[slot]) {
      if (pool->in_flight[slot])
        gpu->event_synchronize(pool->done_events[slot]);
      gpu->event_destroy(pool->done_events[slot]);
    }
  }
  if (pool->device_blocks)
    gpu->device_free(pool->device_blocks);
  free(pool->done_events);
  free(pool->in_flight);
  memset(pool, 0, sizeof *pool);
}

int preempt_control_pool_acquire(preempt_control_pool *pool, const preempt_gpu_ops *gpu, uint32_t *slot) {
  uint32_t chosen = pool->next_slot;
  if (pool->in_flight[chosen]) {
    int status = gpu->event_synchronize(pool->done_events[chosen]);
    if (status != 0)
      return status;
    pool->in_flight[chosen] = 0;
  }
  pool->next_slot = (chosen + 1) % pool->capacity;
  *slot = chosen;
  return 0;
}

int preempt_control_pool_mark_in_flight(preempt_control_pool *pool, const preempt_gpu_ops *gpu, uint32_t slot,
                                        void *stream) {
  int status = gpu->event_record(pool->done_events[slot], stream);
  if (status == 0)
    pool->in_flight[slot] = 1;
  return status;
}
