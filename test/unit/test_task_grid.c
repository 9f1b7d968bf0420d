/* test_task_grid.c: unit tests of lib/task_grid.c, the block-task arithmetic (FLEP §4.1).
 * Every task of a grid must map to a distinct block, x fastest, and the persistent grid must fit the GPU. */
#include <stdlib.h>

#include "check.h"
#include "preempt/task_grid.h"

static void every_task_maps_to_a_distinct_block(preempt_grid_dims grid) {
  uint64_t count = preempt_grid_task_count(grid);
  unsigned char *seen = calloc(count, 1);
  for (uint32_t task = 0; task < count; task++) {
    preempt_grid_dims block = preempt_task_block_index(task, grid);
    CHECK(block.x < grid.x && block.y < grid.y && block.z < grid.z);
    uint64_t linear = block.x + (uint64_t)grid.x * (block.y + (uint64_t)grid.y * block.z);
    CHECK_EQ_U64(linear, task); /* x fastest, the hardware's dispatch order */
    CHECK(!seen[linear]);
    seen[linear] = 1;
  }
  free(seen);
}

int main(void) {
  CHECK_EQ_U64(preempt_grid_task_count((preempt_grid_dims){7, 5, 3}), 105);
  CHECK_EQ_U64(preempt_grid_task_count((preempt_grid_dims){0, 5, 3}), 0);
  CHECK_EQ_U64(preempt_grid_task_count((preempt_grid_dims){2147483647u, 65535, 65535}),
               2147483647ull * 65535 * 65535);

  every_task_maps_to_a_distinct_block((preempt_grid_dims){1000, 1, 1});
  every_task_maps_to_a_distinct_block((preempt_grid_dims){13, 17, 1});
  every_task_maps_to_a_distinct_block((preempt_grid_dims){5, 7, 11});
  every_task_maps_to_a_distinct_block((preempt_grid_dims){1, 1, 64});

  preempt_grid_dims last = preempt_task_block_index(5 * 7 * 11 - 1, (preempt_grid_dims){5, 7, 11});
  CHECK(last.x == 4 && last.y == 6 && last.z == 10);

  CHECK_EQ_U64(preempt_persistent_cta_count(8, 132, 1u << 20), 8 * 132); /* fill every SM */
  CHECK_EQ_U64(preempt_persistent_cta_count(8, 132, 100), 100);          /* never more CTAs than tasks */
  CHECK_EQ_U64(preempt_persistent_cta_count(0, 132, 100), 0);            /* block cannot run at all */
  CHECK_EQ_U64(preempt_persistent_cta_count(8, 132, 0), 0);
  CHECK_DONE("test_task_grid");
}
