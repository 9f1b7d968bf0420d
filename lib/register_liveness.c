/* register_liveness.c: round-robin backward dataflow for live registers (the textbook equations, bitset form).
 * CTXBack §III-A needs each instruction's live registers; NVPTX MIR has virtual registers and no LiveIntervals. */
#include "preempt/register_liveness.h"

#include <string.h>

size_t preempt_liveness_words(size_t register_count) { return (register_count + 63) / 64; }

int preempt_liveness_solve(const preempt_liveness_block *blocks, size_t block_count, size_t register_count,
                           uint64_t *live_in, uint64_t *live_out) {
  size_t words = preempt_liveness_words(register_count);
  if (block_count && (!blocks || !live_in || !live_out))
    return -1;
  for (size_t b = 0; b < block_count; ++b) {
    if ((words && (!blocks[b].uses || !blocks[b].defs)) || (blocks[b].successor_count && !blocks[b].successors))
      return -1;
    for (size_t s = 0; s < blocks[b].successor_count; ++s)
      if (blocks[b].successors[s] >= block_count)
        return -1;
  }
  if (words == 0)
    return 0;
  memset(live_in, 0, block_count * words * sizeof(uint64_t));
  memset(live_out, 0, block_count * words * sizeof(uint64_t));
  /* Sets only grow, so this ends; visiting blocks last-to-first makes
   * straight-line code converge in one sweep. */
  for (int changed = 1; changed;) {
    changed = 0;
    for (size_t i = block_count; i-- > 0;) {
      const preempt_liveness_block *block = &blocks[i];
      uint64_t *out = live_out + i * words, *in = live_in + i * words;
      for (size_t s = 0; s < block->successor_count; ++s) {
        const uint64_t *succ_in = live_in + block->successors[s] * words;
        for (size_t w = 0; w < words; ++w)
          out[w] |= succ_in[w];
      }
      for (size_t w = 0; w < words; ++w) {
        uint64_t next = block->uses[w] | (out[w] & ~block->defs[w]);
        if (next != in[w]) {
          in[w] = next;
          changed = 1;
        }
      }
    }
  }
  return 0;
}

void preempt_liveness_step_backward(uint64_t *live, const uint32_t *defs, size_t def_count, const uint32_t *uses,
                                    size_t use_count) {
  for (size_t i = 0; i < def_count; ++i)
    live[defs[i] / 64] &= ~(UINT64_C(1) << (defs[i] % 64));
  for (size_t i = 0; i < use_count; ++i)
    live[uses[i] / 64] |= UINT64_C(1) << (uses[i] % 64);
}
