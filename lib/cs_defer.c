/* cs_defer.c: CS-Defer (keep running to a cheaper point) and its combination with CTXBack by latency.
 * CTXBack §II-B (CS-Defer, after Lin et al. [4]) and §IV-C (CTXBack+CS-Defer, ranked by preemption latency). */
#include <stdlib.h>
#include <string.h>

#include "ctxback_internal.h"

static uint64_t save_cycles(const preempt_ctx_block *block, size_t point, const preempt_ctx_cost_model *costs) {
  uint64_t cycles = 0;
  CTX_FOR_EACH_REGISTER(reg, ctx_live_before(block, point), block->register_count)
    cycles += block->registers[reg].kind == PREEMPT_CTX_VECTOR ? costs->vector_save : costs->scalar_save;
  return cycles;
}

int preempt_ctx_plan_cs_defer(const preempt_ctx_block *block, size_t current, const preempt_ctx_cost_model *costs,
                              preempt_ctx_plan *plan) {
  if (!plan || !costs || preempt_ctx_block_validate(block) || current > block->count)
    return -1;
  /* Deferring stops before anything that must not run with the preemption
   * pending (a barrier would wait for warps being preempted), before what
   * the preemption routine cannot copy, and before the block's last
   * instruction (the branch leaves the block). §IV-C: the
   * latency of the instructions run is their issue-to-result estimate; the
   * waits they cause in others are not known statically (§V-B). */
  size_t last = block->count ? block->count - 1 : 0;
  size_t best = current;
  uint64_t run_cycles = 0, best_cycles = save_cycles(block, current, costs);
  for (size_t point = current; point < last; point++) {
    if ((block->instructions[point].flags & PREEMPT_CTX_BARRIER) ||
        !(block->instructions[point].flags & PREEMPT_CTX_COPYABLE))
      break;
    uint32_t latency = block->instructions[point].latency;
    run_cycles += latency ? latency : costs->alu;
    uint64_t cycles = run_cycles + save_cycles(block, point + 1, costs);
    if (cycles < best_cycles) {
      best_cycles = cycles;
      best = point + 1;
    }
  }
  memset(plan, 0, sizeof *plan);
  ctx_steps preempt = {0}, resume = {0};
  int status = 0;
  for (size_t point = current; point < best && status == 0; point++)
    status = ctx_steps_push(&preempt, (preempt_ctx_step){.kind = PREEMPT_CTX_EXECUTE, .instruction = (uint32_t)point});
  if (status == 0)
    status = ctx_plan_swap_live(block, best, &preempt, &resume);
  if (status) {
    free(preempt.steps);
    free(resume.steps);
    return -1;
  }
  plan->technique = PREEMPT_CTX_CS_DEFER;
  plan->current = current;
  plan->flashback = plan->resume_at = best;
  ctx_plan_adopt(block, costs, &preempt, &resume, plan);
  return 0;
}

int preempt_ctx_plan_combined(const preempt_ctx_block *block, size_t current, size_t window,
                              const preempt_ctx_cost_model *costs, preempt_ctx_plan *plan) {
  preempt_ctx_plan deferred;
  if (preempt_ctx_plan_flashback(block, current, window, costs, plan))
    return -1;
  if (preempt_ctx_plan_cs_defer(block, current, costs, &deferred)) {
    preempt_ctx_plan_free(plan);
    return -1;
  }
  if (deferred.preempt_cycles < plan->preempt_cycles) {
    preempt_ctx_plan_free(plan);
    *plan = deferred;
  } else {
    preempt_ctx_plan_free(&deferred);
  }
  return 0;
}
