/* test_task_grid.c: unit tests of lib/task_grid.c, the block-task arithmetic (FLEP §4.1).
 * Every task of a grid must map to a distinct block, x fastest, and the persistent grid must fit the GPU. */
#include <stdlib.h>

#include "check.h"
#include "preempt/batch_tickets.h"
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

/* Tickets taken in order until the first empty batch name every task exactly
 * once, in batches of at most `interval` tasks `stride` apart; every later
 * ticket is empty too (a CTA stops at its first empty one). The CTAs of one
 * round run neighbouring tasks: a round's tasks lie in a window of
 * stride * its batch size. */
static void tickets_cover_every_task_once(unsigned task_count, unsigned stride, unsigned interval) {
  unsigned char *seen = calloc(task_count ? task_count : 1, 1);
  unsigned ticket = 0, covered = 0;
  for (;; ticket++) {
    preempt_ticket_batch batch = preempt_ticket_batch_of(ticket, task_count, stride, interval);
    if (batch.count == 0)
      break;
    CHECK(batch.count <= interval);
    unsigned round_first = preempt_ticket_batch_of(ticket - ticket % stride, task_count, stride, interval).first;
    CHECK(batch.first >= round_first && batch.first - round_first < stride);
    for (unsigned step = 0; step < batch.count; step++) {
      unsigned long long task = batch.first + (unsigned long long)step * stride;
      CHECK(task < task_count);
      if (task >= task_count)
        break;
      CHECK(!seen[task]);
      seen[task] = 1;
      covered++;
    }
  }
  CHECK_EQ_U64(covered, task_count);
  for (unsigned later = ticket; later < ticket + 3 * stride; later++)
    CHECK_EQ_U64(preempt_ticket_batch_of(later, task_count, stride, interval).count, 0);
  /* One ticket per batch: far fewer fetches than tasks when the interval allows. */
  if (interval >= 16 && task_count >= 64ull * stride * interval)
    CHECK(ticket * 8ull < task_count);
  free(seen);
}

int main(void) {
  unsigned task_counts[] = {1, 2, 7, 100, 1056, 1057, 4096, 33791, 131072, 131405, 524288};
  unsigned strides[] = {1, 3, 132, 1056};
  unsigned intervals[] = {1, 2, 16, 17, 64, 1024};
  for (size_t t = 0; t < sizeof task_counts / sizeof *task_counts; t++)
    for (size_t s = 0; s < sizeof strides / sizeof *strides; s++)
      for (size_t i = 0; i < sizeof intervals / sizeof *intervals; i++)
        tickets_cover_every_task_once(task_counts[t], strides[s], intervals[i]);
  /* Full rounds first: ticket 1057 of 1056-wide rounds of 16 is lane 1 of round 1. */
  preempt_ticket_batch batch = preempt_ticket_batch_of(1057, 131072, 1056, 16);
  CHECK_EQ_U64(batch.first, 1056 * 16 + 1);
  CHECK_EQ_U64(batch.count, 16);

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
