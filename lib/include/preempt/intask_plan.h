/* intask_plan.h: the context plan of one in-task yield point over SSA values: what a CTA saves, how it rebuilds the rest.
 * CTXBack §III-B (re-execution), §III-C (reverting), §III-D (uniform values saved once per CTA, as scalar backup). */
#ifndef PREEMPT_INTASK_PLAN_H
#define PREEMPT_INTASK_PLAN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The caller describes the values of a kernel as of one yield point: an array of
 * values, operands given as indices into the same array. Every relation must hold
 * at the yield point with the operands' current values (in strict SSA it does for
 * any value whose definition dominates the yield point: pass only those, or
 * values only reached as operands of those). */

typedef enum preempt_intask_kind {
  PREEMPT_INTASK_FREE = 0,   /* there at resumption without saving or computing: constant, kernel argument, the task's block index */
  PREEMPT_INTASK_PURE = 1,   /* a function of its operands with no side effect: can be re-executed (a thread-index read is PURE with no operands) */
  PREEMPT_INTASK_OPAQUE = 2, /* only saving gives it back: loads, phis, calls */
} preempt_intask_kind;

/* The relation between a value and its operands, used for reverting (§III-C) whatever
 * the value's kind: a value `s` with one of these operations and a known other
 * operand gives back the remaining operand exactly:
 *   s = a + b:  a = s - b,  b = s - a
 *   s = a - b:  a = s + b,  b = a - s
 *   s = a ^ b:  a = s ^ b,  b = s ^ a
 * (wrapping integer arithmetic in the width of s, a and b, which must be one width;
 * never give ADD/SUB for floating point or for an add that may trap or saturate). */
typedef enum preempt_intask_operation {
  PREEMPT_INTASK_OTHER = 0,
  PREEMPT_INTASK_ADD = 1, /* result = operand0 + operand1, wrapping integers of one width */
  PREEMPT_INTASK_SUB = 2, /* result = operand0 - operand1 */
  PREEMPT_INTASK_XOR = 3, /* result = operand0 ^ operand1 */
} preempt_intask_operation;

typedef struct preempt_intask_value {
  uint32_t bytes;            /* size of one thread's copy */
  uint8_t kind;              /* preempt_intask_kind */
  uint8_t operation;         /* preempt_intask_operation; ADD/SUB/XOR only with exactly 2 operands */
  uint8_t uniform;           /* the same in every thread of the CTA */
  uint8_t live;              /* live at the yield point: must hold its value after resumption. Only live values may be saved */
  const uint32_t *operands;  /* indices into the same array */
  uint32_t operand_count;
} preempt_intask_value;

typedef enum preempt_intask_action {
  PREEMPT_INTASK_SAVE_THREAD = 1, /* saved by every thread at `offset` of its area, loaded back at resumption */
  PREEMPT_INTASK_SAVE_CTA = 2,    /* uniform: saved once per CTA at `offset` of the CTA area */
  PREEMPT_INTASK_REEXECUTE = 3,   /* computed again from its operands */
  PREEMPT_INTASK_REVERT = 4,      /* from `source` = op(.., value, ..) and `other`, the other operand of source */
} preempt_intask_action;

typedef struct preempt_intask_step {
  uint32_t value;
  uint8_t action;
  uint32_t source, other; /* REVERT only (0 otherwise): value = inverse of source's operation, see above */
  uint32_t offset;        /* SAVE_* only: byte offset, each value aligned to min(bytes, 8) */
} preempt_intask_step;

typedef struct preempt_intask_plan {
  preempt_intask_step *steps; /* resumption order: every step's inputs come from earlier steps or FREE values; saves first */
  size_t step_count;
  uint32_t thread_bytes;      /* one thread's save area, rounded up to its largest alignment (an array of areas stays aligned) */
  uint32_t cta_bytes;         /* the CTA's save area (uniform values), rounded likewise */
  uint32_t live_thread_bytes; /* LIVE baseline: every live non-FREE value saved per thread, laid out and rounded likewise */
  uint32_t saved_count, reexecute_count, revert_count;
} preempt_intask_plan;

/* Plans the yield point: starts from every live non-FREE value saved (per CTA when
 * uniform), then, most expensive save first (a per-thread byte weighs threads_per_cta,
 * a per-CTA byte 1; ties: the save whose rebuild alone takes fewer steps, then the lower
 * index), drops each save whose value (and every other live value) can still be rebuilt
 * from FREE values, the remaining saves, re-execution of PURE values (non-live ones too)
 * and reverting. Steps hold only what rebuilds live values, each value once.
 * threads_per_cta weighs a per-thread byte against a per-CTA byte (the pass uses the kernel's
 * maximum threads per block when known, else 256). Returns 0, or -1 on malformed input
 * (operand out of range, ADD/SUB/XOR without 2 operands, zero-byte value, unknown kind or
 * operation, FREE/PURE cycles, threads_per_cta 0, a save area over 4 GiB) or out of memory;
 * on -1 *plan is empty (safe to free). */
int preempt_intask_plan_make(const preempt_intask_value *values, size_t count, uint32_t threads_per_cta,
                             preempt_intask_plan *plan);
void preempt_intask_plan_free(preempt_intask_plan *plan);
/* Independent check of a plan: saves only live non-FREE values, every live value is produced by some step or is
 * FREE, each step's inputs are available before it (FREE, or produced by an earlier step), REVERT's source really
 * has the value and `other` as its two operands with an invertible op, offsets don't overlap and fit in the sizes.
 * Also: SAVE_CTA only for uniform values, REEXECUTE only for PURE values, no value produced twice (nor a FREE one),
 * offsets aligned, the counts match the steps. 0 when the plan is sound, -1 otherwise. */
int preempt_intask_plan_check(const preempt_intask_value *values, size_t count, const preempt_intask_plan *plan);

#ifdef __cplusplus
}
#endif

#endif
