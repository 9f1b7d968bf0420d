/* task_grid.c: block-task arithmetic shared by the host runtime and its tests.
 * FLEP §4.1, EffiSha §5.1: an original grid becomes a list of tasks pulled from a counter. */
#include "preempt/task_grid.h"

uint64_t preempt_grid_task_count(preempt_grid_dims grid) {
  return (uint64_t)grid.x * grid.y * grid.z;
}

preempt_grid_dims preempt_task_block_index(uint32_t task_id, preempt_grid_dims grid) {
  preempt_grid_dims block;
  uint32_t plane = task_id / grid.x;
  block.x = task_id - plane * grid.x;
  block.z = plane / grid.y;
  block.y = plane - block.z * grid.y;
  return block;
}

uint32_t preempt_persistent_cta_count(uint32_t ctas_per_sm, uint32_t sm_count, uint64_t task_count) {
  uint64_t resident = (uint64_t)ctas_per_sm * sm_count;
  uint64_t ctas = resident < task_count ? resident : task_count;
  return (uint32_t)(ctas > UINT32_MAX ? UINT32_MAX : ctas);
}
