/* shared_liveness.c: reaching a read of a shared variable before its overwrite, and whether stores cover it.
 * Issue 8's "live shared memory saved where needed"; the search is CTXBack §III-A's liveness over blocks. */
#include "preempt/shared_liveness.h"

#include <stdlib.h>

int preempt_shared_live_from(const preempt_shared_block *blocks, size_t block_count, uint32_t start, int *live) {
  *live = 1;
  if (start >= block_count)
    return -1;
  uint8_t *seen = calloc(block_count, 1);
  uint32_t *worklist = malloc(block_count * sizeof *worklist);
  if (!seen || !worklist) {
    free(seen);
    free(worklist);
    return -1;
  }
  int status = 0, read_reached = 0;
  size_t pending = 0;
  seen[start] = 1;
  worklist[pending++] = start;
  while (pending > 0 && !read_reached && status == 0) {
    const preempt_shared_block *block = &blocks[worklist[--pending]];
    if (block->first == PREEMPT_SHARED_READ) {
      read_reached = 1;
      break;
    }
    if (block->first == PREEMPT_SHARED_KILLED)
      continue;
    for (size_t s = 0; s < block->successor_count; s++) {
      uint32_t next = block->successors[s];
      if (next >= block_count) {
        status = -1;
        break;
      }
      if (!seen[next]) {
        seen[next] = 1;
        worklist[pending++] = next;
      }
    }
  }
  free(seen);
  free(worklist);
  if (status == 0)
    *live = read_reached;
  return status;
}

static int by_offset(const void *left, const void *right) {
  const preempt_shared_write *a = left, *b = right;
  return (a->offset > b->offset) - (a->offset < b->offset);
}

int preempt_shared_covered(preempt_shared_write *writes, size_t write_count, uint64_t size, int *covered) {
  *covered = 0;
  if (!writes && write_count > 0)
    return -1;
  if (write_count > 0)
    qsort(writes, write_count, sizeof *writes, by_offset);
  /* Everything below `reached` is written; a gap before the next write's
   * offset is a byte nobody writes. */
  uint64_t reached = 0;
  for (size_t w = 0; w < write_count && reached < size; w++) {
    if (writes[w].offset > reached)
      return 0;
    uint64_t end = writes[w].bytes > UINT64_MAX - writes[w].offset ? UINT64_MAX : writes[w].offset + writes[w].bytes;
    if (end > reached)
      reached = end;
  }
  *covered = reached >= size;
  return 0;
}
