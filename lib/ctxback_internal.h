/* ctxback_internal.h: helpers shared by lib/'s CTXBack files (bitsets, reverting rules, plan building).
 * CTXBack §III-C (which instructions invert), §IV-A (the routines a plan lists). Not installed. */
#ifndef PREEMPT_CTXBACK_INTERNAL_H
#define PREEMPT_CTXBACK_INTERNAL_H

#include "preempt/ctxback.h"

static inline int ctx_contains(const uint64_t *bits, uint16_t reg) { return (bits[reg / 64] >> (reg % 64)) & 1u; }
static inline void ctx_insert(uint64_t *bits, uint16_t reg) { bits[reg / 64] |= 1ull << (reg % 64); }

/* The first register of `set` at or after `from`, or `register_count`: walks
 * set bits only, so a pass over a live set costs what is live, not every
 * register of the function (NVPTX has thousands). */
static inline size_t ctx_next_register(const uint64_t *set, size_t register_count, size_t from) {
  while (from < register_count) {
    uint64_t word = set[from / 64] >> (from % 64);
    if (word)
      return from + (size_t)__builtin_ctzll(word) < register_count ? from + (size_t)__builtin_ctzll(word)
                                                                    : register_count;
    from = (from / 64 + 1) * 64;
  }
  return register_count;
}

#define CTX_FOR_EACH_REGISTER(reg, set, register_count)                                                      \
  for (size_t reg = ctx_next_register((set), (register_count), 0); reg < (register_count);                  \
       reg = ctx_next_register((set), (register_count), reg + 1))

static inline const uint64_t *ctx_live_before(const preempt_ctx_block *block, size_t index) {
  return index == 0 ? block->live_in : block->live_after[index - 1];
}

static inline uint64_t ctx_mask(unsigned bits) { return bits >= 64 ? ~0ull : (1ull << bits) - 1; }

/* The value width of instruction `index`'s main result. */
uint8_t ctx_result_bits(const preempt_ctx_block *block, size_t index);

/* A copy keeps its source's value (same width only: a narrowing copy is
 * a new value). */
int ctx_is_copy(const preempt_ctx_block *block, size_t index);

/* Alg. 2 line 1: the operation is exactly invertible on the register it
 * shares between results[0] and one operand. Returns 1 and the operand index
 * of that register, or 0. */
int ctx_revertible(const preempt_ctx_block *block, size_t index, size_t *shared_operand);

/* The arithmetic's second input: the immediate, or operand 1. `operand_values`
 * are the values of the instruction's operands. */
uint64_t ctx_second_input(const preempt_ctx_instruction *instruction, const uint64_t *operand_values);

/* The multiplicative inverse of an odd number modulo 2^64 (Newton's method). */
uint64_t ctx_odd_inverse(uint64_t odd);

/* Growable step list of a plan under construction. */
typedef struct ctx_steps {
  preempt_ctx_step *steps;
  size_t count;
  size_t capacity;
} ctx_steps;

int ctx_steps_push(ctx_steps *list, preempt_ctx_step step);

/* Moves the step lists into `plan` (which owns them afterwards) and fills in
 * the counts and estimated costs. */
void ctx_plan_adopt(const preempt_ctx_block *block, const preempt_ctx_cost_model *costs, ctx_steps *preempt,
                    ctx_steps *resume, preempt_ctx_plan *plan);

/* Appends saves of every register live before `point` and their loads. */
int ctx_plan_swap_live(const preempt_ctx_block *block, size_t point, ctx_steps *preempt, ctx_steps *resume);

#endif
