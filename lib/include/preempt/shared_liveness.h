/* shared_liveness.h: is a shared variable's content read again after a yield point, or overwritten first?
 * The "live shared memory saved where needed" of issue 8 (CTXBack §III-A's liveness, for a CTA's shared memory). */
#ifndef PREEMPT_SHARED_LIVENESS_H
#define PREEMPT_SHARED_LIVENESS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What a block does first to one shared variable, in instruction order. */
typedef enum preempt_shared_event {
  PREEMPT_SHARED_NOTHING = 0, /* neither: what follows the block decides */
  PREEMPT_SHARED_READ,        /* some thread may read it (a load, an atomic, an unknown call) */
  PREEMPT_SHARED_KILLED,      /* before any read, the CTA writes all of it and meets at a barrier (or a new
                                 task begins, whose block's shared memory starts undefined) */
} preempt_shared_event;

/* A control-flow graph as plain data, seen for one shared variable. */
typedef struct preempt_shared_block {
  const uint32_t *successors;
  size_t successor_count;
  preempt_shared_event first;
} preempt_shared_block;

/* *live = 1 when a path from the start of block `start` reaches a read of
 * the variable before a block that kills it, else 0: then whatever the
 * variable holds at `start` is never read, and a context saved there need
 * not hold it. Paths follow the CFG (every thread's own path is one of them);
 * a barrier meets all of the CTA's threads, so after a KILLED block every
 * thread reads what the CTA wrote. Returns 0, or -1 (and *live = 1) on a
 * successor out of range or no memory. */
int preempt_shared_live_from(const preempt_shared_block *blocks, size_t block_count, uint32_t start, int *live);

/* One thread's store: `bytes` bytes at byte `offset` of the variable. */
typedef struct preempt_shared_write {
  uint64_t offset;
  uint64_t bytes;
} preempt_shared_write;

/* *covered = 1 when the writes together cover bytes [0, size), else 0.
 * Sorts `writes` by offset. Returns 0, or -1 (and *covered = 0) on a NULL
 * array with a nonzero count. */
int preempt_shared_covered(preempt_shared_write *writes, size_t write_count, uint64_t size, int *covered);

#ifdef __cplusplus
}
#endif
#endif
