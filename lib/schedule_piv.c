/* schedule_piv.c: priority-based immediate eviction: static priority only, a higher-priority arrival evicts at once.
 * EffiSha §7 ("piv"). */
#include "schedule_internal.h"

static preempt_sched_status piv_decide(preempt_sched_state *state, const preempt_sched_event *event,
                                       preempt_sched_decisions *out) {
  if (!state || !event || !out)
    return PREEMPT_SCHED_INVALID_ARGUMENT;
  uint32_t order[PREEMPT_SCHED_MAX_KERNELS];
  uint32_t count = preempt_sched_ready_in_order(state, preempt_sched_by_priority_then_arrival, order);
  preempt_sm_set claimed;
  preempt_sm_set_clear(&claimed);
  uint32_t first_unplaced = 0;
  preempt_sched_status status = preempt_sched_start_in_order(state, order, count, &claimed, out, &first_unplaced);
  if (status != PREEMPT_SCHED_OK || event->kind != PREEMPT_EVENT_ARRIVAL || first_unplaced == count)
    return status;
  /* Only an arrival evicts ("if a new coming kernel has a higher priority than a
   * currently running kernel"), and only when the newcomer is the head of the
   * queue: otherwise it would wait for a kernel ahead of it anyway. */
  const preempt_sched_kernel *arrived = preempt_sched_find(state, event->kernel_id);
  if (!arrived || arrived->id != state->kernels[order[first_unplaced]].id)
    return PREEMPT_SCHED_OK;
  preempt_sm_set free;
  preempt_sched_free_sms(state, &free);
  uint32_t soon = preempt_sm_set_count(&free) - preempt_sm_set_count(&claimed) + preempt_sched_draining_count(state);
  uint32_t wanted = preempt_sched_sms_wanted(state, arrived);
  /* EffiSha evicts whole kernels (its §6.2 flag is per kernel): lowest priority first until the newcomer fits. */
  while (soon < wanted) {
    preempt_sched_kernel *victim = NULL;
    for (uint32_t i = 0; i < state->kernel_count; i++) {
      preempt_sched_kernel *kernel = &state->kernels[i];
      if (kernel->state != PREEMPT_KERNEL_RUNNING || kernel->priority >= arrived->priority ||
          preempt_sched_working_sms(state, kernel) == 0)
        continue;
      bool already = false;
      for (uint32_t d = 0; d < out->count; d++)
        already |= out->items[d].action == PREEMPT_ACTION_EVICT && out->items[d].kernel_id == kernel->id;
      if (!already && (!victim || kernel->priority < victim->priority))
        victim = kernel;
    }
    if (!victim)
      break;
    soon += preempt_sched_working_sms(state, victim);
    status = preempt_sched_push(out, PREEMPT_ACTION_EVICT, victim->id, NULL);
    if (status != PREEMPT_SCHED_OK)
      return status;
  }
  return PREEMPT_SCHED_OK;
}

const preempt_sched_policy preempt_policy_piv = {"piv", piv_decide};
