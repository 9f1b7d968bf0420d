/* task_grid.h: arithmetic of block-tasks over an original grid and the persistent grid that runs them.
 * FLEP §4.1 (persistent threads, task = original block) and EffiSha §5.1 (block-task decomposition). */
#ifndef PREEMPT_TASK_GRID_H
#define PREEMPT_TASK_GRID_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct preempt_grid_dims {
  uint32_t x, y, z;
} preempt_grid_dims;

/* The task counter is 32-bit on the device (one atomic add per task); every
 * persistent CTA makes one fetch past the end, so the last task id plus the CTA
 * count must still fit. */
#define PREEMPT_MAX_TASKS (UINT32_MAX - (1u << 24))

/* Number of block-tasks in a grid, or 0 when a dimension is 0 (invalid launch). */
uint64_t preempt_grid_task_count(preempt_grid_dims grid);

/* Block index of task `task_id`, x fastest: the order the hardware dispatches
 * blocks, which keeps inter-block producer/consumer patterns in issue order. */
preempt_grid_dims preempt_task_block_index(uint32_t task_id, preempt_grid_dims grid);

/* Persistent CTAs to launch: enough to fill every SM at the kernel's occupancy,
 * never more than there are tasks. Returns 0 when the kernel cannot run at all
 * (occupancy 0) or there is no task. */
uint32_t preempt_persistent_cta_count(uint32_t ctas_per_sm, uint32_t sm_count, uint64_t task_count);

#ifdef __cplusplus
}
#endif
#endif
