/* control_pool.h: a ring of per-launch control blocks in device memory, reused once their launch is done.
 * FLEP §4.1 / EffiSha §5.2: each launch needs its own task counter, zero when the kernel starts. */
#ifndef PREEMPT_CONTROL_POOL_H
#define PREEMPT_CONTROL_POOL_H

#include <stdint.h>

#include "gpu.h"
#include "preempt/control_block.h"

typedef struct preempt_control_pool {
  preempt_control_block *device_blocks; /* capacity blocks in device memory, zeroed once */
  void **done_events;                    /* recorded after the launch that used the slot */
  uint8_t *in_flight;
  uint32_t capacity;
  uint32_t next_slot;
} preempt_control_pool;

/* All return the GPU API's code (0 = success). */
int preempt_control_pool_init(preempt_control_pool *pool, const preempt_gpu_ops *gpu, uint32_t capacity);
void preempt_control_pool_destroy(preempt_control_pool *pool, const preempt_gpu_ops *gpu);

/* Takes the next slot, waiting for its previous launch to finish if it is
 * still running (only when `capacity` launches are in flight). The kernel
 * leaves its block zeroed when it finishes (runtime-dev/task_loop.cu). */
int preempt_control_pool_acquire(preempt_control_pool *pool, const preempt_gpu_ops *gpu, uint32_t *slot);

/* Marks the slot busy until the work queued so far on `stream` is done. */
int preempt_control_pool_mark_in_flight(preempt_control_pool *pool, const preempt_gpu_ops *gpu, uint32_t slot,
                                        void *stream);

#endif
