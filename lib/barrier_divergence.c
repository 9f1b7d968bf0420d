/* barrier_divergence.c: finds barriers under divergent control flow in a plain CFG.
 * Used by the persistent-thread pass to refuse kernels whose early exits skip barriers (FLEP §4.1). */
#include "preempt/barrier_divergence.h"

#include <stdlib.h>
#include <string.h>

/* Walks the region of `branch`: every block reachable from its successors
 * without passing its reconvergence point. */
static uint32_t barrier_in_region(const preempt_cfg_block *blocks, size_t block_count, uint32_t branch,
                                  uint8_t *visited, uint32_t *worklist) {
  uint32_t reconverge = blocks[branch].post_dominator;
  size_t worklist_size = 0;
  memset(visited, 0, block_count);
  for (size_t s = 0; s < blocks[branch].successor_count; s++) {
    uint32_t next = blocks[branch].successors[s];
    if (next != reconverge && next < block_count && !visited[next]) {
      visited[next] = 1;
      worklist[worklist_size++] = next;
    }
  }
  while (worklist_size > 0) {
    uint32_t current = worklist[--worklist_size];
    if (blocks[current].has_barrier)
      return current;
    for (size_t s = 0; s < blocks[current].successor_count; s++) {
      uint32_t next = blocks[current].successors[s];
      if (next != reconverge && next < block_count && !visited[next]) {
        visited[next] = 1;
        worklist[worklist_size++] = next;
      }
    }
  }
  return PREEMPT_NO_BLOCK;
}

uint32_t preempt_find_divergent_barrier(const preempt_cfg_block *blocks, size_t block_count,
                                        uint32_t *divergent_branch_out) {
  uint32_t found = PREEMPT_NO_BLOCK;
  if (block_count == 0)
    return found;
  uint8_t *visited = malloc(block_count);
  uint32_t *worklist = malloc(block_count * sizeof *worklist);
  if (!visited || !worklist) {
    /* Cannot prove anything without memory: report the entry as unsafe so the
     * caller refuses the kernel rather than converting it blindly. */
    free(visited);
    free(worklist);
    if (divergent_branch_out)
      *divergent_branch_out = 0;
    return 0;
  }
  for (uint32_t branch = 0; branch < block_count && found == PREEMPT_NO_BLOCK; branch++) {
    if (!blocks[branch].has_divergent_branch)
      continue;
    found = barrier_in_region(blocks, block_count, branch, visited, worklist);
    if (found != PREEMPT_NO_BLOCK && divergent_branch_out)
      *divergent_branch_out = branch;
  }
  free(visited);
  free(worklist);
  return found;
}
