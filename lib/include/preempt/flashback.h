/* flashback.h: CTXBack's flashback-point search over one basic block, as plain data.
 * CTXBack §III-A/B, Alg. 1 (relaxed condition: re-execute or save/reload). Reverting (Alg. 2), OSRB and
 * CS-Defer are not here yet. */
#ifndef PREEMPT_FLASHBACK_H
#define PREEMPT_FLASHBACK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One machine instruction, by the registers it reads and writes. */
typedef struct preempt_fb_instruction {
  const uint16_t *results;
  size_t result_count;
  const uint16_t *operands;
  size_t operand_count;
  /* Computing its results again from its operands is allowed: no side
   * effect, no memory read that later code may have changed. */
  int reexecutable;
  /* No flashback point may lie before it: a barrier, an atomic, a store
   * that makes the region non-idempotent, a call. */
  int barrier;
} preempt_fb_instruction;

/* A basic block (the instructions of one idempotent region of it). */
typedef struct preempt_fb_block {
  const preempt_fb_instruction *instructions;
  size_t count;
  size_t register_count;        /* register ids are < register_count */
  const uint32_t *register_bytes; /* context bytes each register costs (per warp or wavefront) */
  /* live_after[j]: the registers live just after instruction j, as a bitset
   * of (register_count + 63) / 64 words; live_after[j - 1] is the live-in set
   * of instruction j. */
  const uint64_t *const *live_after;
  const uint64_t *live_in;      /* live-in set of instruction 0 */
} preempt_fb_block;

typedef enum preempt_fb_action {
  PREEMPT_FB_SKIP = 0,      /* its results are not needed again */
  PREEMPT_FB_REEXECUTE = 1, /* computed again during resumption */
  PREEMPT_FB_RELOAD = 2,    /* results saved at preemption, loaded at resumption */
} preempt_fb_action;

/* The best flashback point for a preemption just before instruction `current`. */
typedef struct preempt_fb_plan {
  size_t flashback;         /* the flashback point: resumption rebuilds state from here */
  size_t jump_target;       /* [jump_target, current) runs again as the original code */
  uint64_t *saved;          /* bitset: registers saved at preemption (caller-provided storage) */
  preempt_fb_action *actions; /* per instruction of [flashback, jump_target); caller storage of `count` */
  uint64_t context_bytes;   /* of `saved` */
  uint64_t live_bytes;      /* every register live at `current`: the plain-swap baseline */
} preempt_fb_plan;

/* Searches flashback points in [current - window, current] (never before a
 * barrier) and keeps the one with the smallest context, the latest on ties.
 * Returns 0, or -1 for bad arguments or no memory. `current` may be
 * `count` (the end of the block). */
int preempt_fb_plan_preemption(const preempt_fb_block *block, size_t current, size_t window, preempt_fb_plan *plan);

#ifdef __cplusplus
}
#endif
#endif
