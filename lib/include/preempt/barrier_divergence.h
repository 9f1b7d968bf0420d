/* barrier_divergence.h: does any CTA barrier sit under thread-divergent control flow?
 * Safety rule for persistent-thread conversion (FLEP §4.1; docs/persistent-threads.md "Refusals"). */
#ifndef PREEMPT_BARRIER_DIVERGENCE_H
#define PREEMPT_BARRIER_DIVERGENCE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PREEMPT_NO_BLOCK UINT32_MAX

/* A control-flow graph as plain data. Block 0 is the entry. */
typedef struct preempt_cfg_block {
  const uint32_t *successors;
  size_t successor_count;
  /* Immediate post-dominator, PREEMPT_NO_BLOCK when only the virtual exit
   * post-dominates (several returns, or paths that never rejoin). */
  uint32_t post_dominator;
  int has_divergent_branch; /* threads of one CTA may take different successors */
  int has_barrier;          /* a CTA-wide barrier, directly or in a callee */
} preempt_cfg_block;

/* Returns the index of a barrier block reachable from a divergent branch
 * before the branch reconverges (its immediate post-dominator), or
 * PREEMPT_NO_BLOCK when every barrier is reached by all threads or none.
 * In the original kernel such a barrier may be met by a subset of threads (the
 * others have exited, which bar.sync tolerates); once a `return` becomes "end
 * of task" those threads wait at a different barrier and the CTA hangs.
 * `divergent_branch_out`, if not NULL, receives the offending branch block. */
uint32_t preempt_find_divergent_barrier(const preempt_cfg_block *blocks, size_t block_count,
                                        uint32_t *divergent_branch_out);

#ifdef __cplusplus
}
#endif
#endif
