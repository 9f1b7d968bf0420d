/* context_totals.c: every preemption point of a block planned with each technique, summed for the report.
 * CTXBack §V-A, Fig. 7 (context per technique, normalized to BASELINE by preempt-report). */
#include <string.h>

#include "ctxback_internal.h"

static int check(const preempt_ctx_block *block, const preempt_ctx_plan *plan, unsigned trials, uint64_t seed,
                 preempt_ctx_totals *totals) {
  if (trials == 0)
    return 0;
  totals->checked++;
  if (preempt_ctx_verify_plan(block, plan) || preempt_ctx_check_plan(block, plan, seed, trials, NULL)) {
    totals->check_failures++;
    return -1;
  }
  return 0;
}

int preempt_ctx_analyze_block(const preempt_ctx_block *block, size_t window, const preempt_ctx_cost_model *costs,
                              unsigned check_trials, preempt_ctx_totals *totals, preempt_ctx_plan *combined) {
  if (!totals || !costs || preempt_ctx_block_validate(block))
    return -1;
  if (combined)
    memset(combined, 0, block->count * sizeof *combined);
  /* CKPT: a checkpoint can sit where the block's live context is smallest. */
  uint64_t smallest = UINT64_MAX;
  for (size_t point = 0; point < block->count; point++) {
    uint64_t bytes = preempt_ctx_live_bytes(block, point);
    if (bytes < smallest)
      smallest = bytes;
  }
  for (size_t point = 0; point < block->count; point++) {
    preempt_ctx_plan live, deferred, flashback;
    if (preempt_ctx_plan_live(block, point, costs, &live))
      return -1;
    if (preempt_ctx_plan_cs_defer(block, point, costs, &deferred)) {
      preempt_ctx_plan_free(&live);
      return -1;
    }
    if (preempt_ctx_plan_flashback(block, point, window, costs, &flashback)) {
      preempt_ctx_plan_free(&live);
      preempt_ctx_plan_free(&deferred);
      return -1;
    }
    uint64_t seed = 0x6a09e667f3bcc909ull ^ point;
    check(block, &live, check_trials, seed, totals);
    check(block, &deferred, check_trials, seed, totals);
    check(block, &flashback, check_trials, seed, totals);
    /* §IV-C: the smaller estimated preemption latency, CTXBack on ties. */
    int use_deferred = deferred.preempt_cycles < flashback.preempt_cycles;
    const preempt_ctx_plan *chosen = use_deferred ? &deferred : &flashback;
    totals->points++;
    totals->live += live.context_bytes;
    totals->ckpt += smallest;
    totals->cs_defer += deferred.context_bytes;
    totals->flashback += flashback.context_bytes;
    totals->combined += chosen->context_bytes;
    totals->flashback_cycles += flashback.preempt_cycles;
    totals->cs_defer_cycles += deferred.preempt_cycles;
    totals->combined_cycles += chosen->preempt_cycles;
    totals->reverts += chosen->revert_count;
    totals->reexecutions += chosen->reexecute_count;
    preempt_ctx_plan_free(&live);
    if (combined) {
      combined[point] = *chosen;
      preempt_ctx_plan_free(use_deferred ? &flashback : &deferred);
    } else {
      preempt_ctx_plan_free(&deferred);
      preempt_ctx_plan_free(&flashback);
    }
  }
  return 0;
}
