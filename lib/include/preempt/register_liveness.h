/* register_liveness.h: backward liveness of virtual registers over a function's control-flow graph, as plain data.
 * CTXBack §III-A (a preemption point's context is its live registers); used for NVPTX, where no allocator ran. */
#ifndef PREEMPT_REGISTER_LIVENESS_H
#define PREEMPT_REGISTER_LIVENESS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Sets are bitsets of preempt_liveness_words(register_count) words. */
size_t preempt_liveness_words(size_t register_count);

/* One block: its successors (block indices), the registers it reads before
 * writing them (upward-exposed uses) and the registers it writes. */
typedef struct preempt_liveness_block {
  const size_t *successors;
  size_t successor_count;
  const uint64_t *uses;
  const uint64_t *defs;
} preempt_liveness_block;

/* Least fixed point of live_out[b] = U live_in[s] over successors s and
 * live_in[b] = uses[b] | (live_out[b] & ~defs[b]). live_in and live_out are
 * block_count * words words each, written here. 0, or -1 on bad input (a
 * successor out of range, a NULL set). */
int preempt_liveness_solve(const preempt_liveness_block *blocks, size_t block_count, size_t register_count,
                           uint64_t *live_in, uint64_t *live_out);

/* Steps a live set backwards over one instruction: live = (live - defs) | uses. */
void preempt_liveness_step_backward(uint64_t *live, const uint32_t *defs, size_t def_count, const uint32_t *uses,
                                    size_t use_count);

#ifdef __cplusplus
}
#endif
#endif
