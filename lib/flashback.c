/* flashback.c: finds, for a preemption point, the flashback point with the smallest context.
 * CTXBack §III-B, Alg. 1: each instruction between the two is re-executed or its result saved/reloaded. */
#include "preempt/flashback.h"

#include <stdlib.h>
#include <string.h>

typedef struct register_set {
  uint64_t *bits;
  size_t words;
} register_set;

static int contains(const uint64_t *bits, uint16_t reg) { return (bits[reg / 64] >> (reg % 64)) & 1u; }
static void insert(uint64_t *bits, uint16_t reg) { bits[reg / 64] |= 1ull << (reg % 64); }
static void erase(uint64_t *bits, uint16_t reg) { bits[reg / 64] &= ~(1ull << (reg % 64)); }

static const uint64_t *live_before(const preempt_fb_block *block, size_t index) {
  return index == 0 ? block->live_in : block->live_after[index - 1];
}

static uint64_t set_bytes(const preempt_fb_block *block, const uint64_t *bits, size_t words) {
  uint64_t bytes = 0;
  for (size_t word = 0; word < words; word++)
    for (uint64_t rest = bits[word]; rest; rest &= rest - 1) {
      size_t reg = word * 64 + (size_t)__builtin_ctzll(rest);
      if (reg < block->register_count)
        bytes += block->register_bytes[reg];
    }
  return bytes;
}

/* Scratch space for evaluating one candidate. */
typedef struct evaluation {
  uint64_t *invalid;     /* registers whose value at the flashback point is gone and not rebuilt */
  uint64_t *written;     /* registers written so far in [flashback, j) */
  uint64_t *overwritten; /* backward pass: written after j */
  uint64_t *saved;
  unsigned char *available; /* per instruction: its live results are still in registers at `current` */
  preempt_fb_action *actions;
} evaluation;

/* Alg. 1 for one candidate `flashback`: returns the context bytes, or
 * UINT64_MAX when the live registers at `current` cannot all be rebuilt. */
static uint64_t evaluate(const preempt_fb_block *block, size_t flashback, size_t current, size_t words,
                         evaluation *work) {
  const preempt_fb_instruction *code = block->instructions;
  memset(work->invalid, 0, words * sizeof(uint64_t));
  memset(work->written, 0, words * sizeof(uint64_t));
  memset(work->overwritten, 0, words * sizeof(uint64_t));
  memset(work->saved, 0, words * sizeof(uint64_t));

  /* Backward pass (lines 3-6): a result still in its register at `current`
   * can be saved there; only live results need it. */
  for (size_t j = current; j-- > flashback;) {
    int available = 1;
    for (size_t r = 0; r < code[j].result_count; r++) {
      uint16_t reg = code[j].results[r];
      if (contains(block->live_after[j], reg) && contains(work->overwritten, reg))
        available = 0;
    }
    work->available[j] = (unsigned char)available;
    for (size_t r = 0; r < code[j].result_count; r++)
      insert(work->overwritten, code[j].results[r]);
  }
  /* Every register written in the range lost its value at the flashback point. */
  memcpy(work->invalid, work->overwritten, words * sizeof(uint64_t));

  /* Forward pass (lines 7-13). */
  for (size_t j = flashback; j < current; j++) {
    int operands_valid = 1;
    for (size_t o = 0; o < code[j].operand_count; o++)
      if (contains(work->invalid, code[j].operands[o]))
        operands_valid = 0;
    int live_results = 0;
    for (size_t r = 0; r < code[j].result_count; r++)
      live_results |= contains(block->live_after[j], code[j].results[r]);

    if (code[j].reexecutable && operands_valid) {
      work->actions[j] = PREEMPT_FB_REEXECUTE;
      /* Operands not written since the flashback point are read from the
       * flashback point's state: unchanged at `current`, so saved there. */
      for (size_t o = 0; o < code[j].operand_count; o++)
        if (!contains(work->written, code[j].operands[o]))
          insert(work->saved, code[j].operands[o]);
      for (size_t r = 0; r < code[j].result_count; r++)
        erase(work->invalid, code[j].results[r]);
    } else if (live_results && work->available[j]) {
      work->actions[j] = PREEMPT_FB_RELOAD;
      for (size_t r = 0; r < code[j].result_count; r++) {
        uint16_t reg = code[j].results[r];
        if (contains(block->live_after[j], reg))
          insert(work->saved, reg);
        erase(work->invalid, reg);
      }
    } else {
      /* Its live results, if any, stay invalid: a later reader cannot be
       * re-executed, and a live one at `current` rules this point out. */
      work->actions[j] = PREEMPT_FB_SKIP;
    }
    for (size_t r = 0; r < code[j].result_count; r++)
      insert(work->written, code[j].results[r]);
  }

  const uint64_t *live_current = live_before(block, current);
  for (size_t word = 0; word < words; word++) {
    if (live_current[word] & work->invalid[word])
      return UINT64_MAX;
    /* Live registers the range never wrote: saved as they are. */
    work->saved[word] |= live_current[word] & ~work->written[word];
  }
  return set_bytes(block, work->saved, words);
}

int preempt_fb_plan_preemption(const preempt_fb_block *block, size_t current, size_t window, preempt_fb_plan *plan) {
  if (!block || !plan || !plan->saved || !plan->actions || current > block->count || block->register_count == 0 ||
      block->register_count > UINT16_MAX + 1u || !block->register_bytes || !block->live_in ||
      (block->count > 0 && (!block->instructions || !block->live_after)))
    return -1;
  size_t words = (block->register_count + 63) / 64;
  for (size_t j = 0; j < block->count; j++) {
    for (size_t r = 0; r < block->instructions[j].result_count; r++)
      if (block->instructions[j].results[r] >= block->register_count)
        return -1;
    for (size_t o = 0; o < block->instructions[j].operand_count; o++)
      if (block->instructions[j].operands[o] >= block->register_count)
        return -1;
  }

  evaluation work;
  work.invalid = calloc(words, sizeof(uint64_t));
  work.written = calloc(words, sizeof(uint64_t));
  work.overwritten = calloc(words, sizeof(uint64_t));
  work.saved = calloc(words, sizeof(uint64_t));
  work.available = calloc(block->count + 1, 1);
  work.actions = calloc(block->count + 1, sizeof *work.actions);
  int status = -1;
  if (!work.invalid || !work.written || !work.overwritten || !work.saved || !work.available || !work.actions)
    goto done;

  /* Candidates: back to the window's start, never across a barrier. */
  size_t earliest = current > window ? current - window : 0;
  for (size_t j = current; j-- > earliest;)
    if (block->instructions[j].barrier) {
      earliest = j + 1;
      break;
    }

  plan->live_bytes = set_bytes(block, live_before(block, current), words);
  plan->context_bytes = UINT64_MAX;
  for (size_t flashback = current + 1; flashback-- > earliest;) {
    uint64_t bytes = evaluate(block, flashback, current, words, &work);
    if (bytes >= plan->context_bytes) /* strictly smaller only: the latest point wins ties */
      continue;
    plan->context_bytes = bytes;
    plan->flashback = flashback;
    memcpy(plan->saved, work.saved, words * sizeof(uint64_t));
    memcpy(plan->actions + flashback, work.actions + flashback, (current - flashback) * sizeof *work.actions);
    /* The tail of re-executed instructions runs again as the original code. */
    size_t jump = current;
    while (jump > flashback && work.actions[jump - 1] == PREEMPT_FB_REEXECUTE)
      jump--;
    plan->jump_target = jump;
  }
  status = 0; /* flashback = current always qualifies: save everything live */
done:
  free(work.invalid);
  free(work.written);
  free(work.overwritten);
  free(work.saved);
  free(work.available);
  free(work.actions);
  return status;
}
