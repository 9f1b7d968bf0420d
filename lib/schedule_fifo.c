/* schedule_fifo.c: first come, first served without preemption; the baseline every other policy is measured against.
 * FLEP §6.1 and EffiSha §8.1 compare with the unmodified GPU, which runs kernels to completion in launch order. */
#include "schedule_internal.h"

static int by_arrival(const preempt_sched_state *state, const preempt_sched_kernel *a, const preempt_sched_kernel *b) {
  (void)state;
  if (a->arrival != b->arrival)
    return a->arrival < b->arrival ? -1 : 1;
  return a->id < b->id ? -1 : a->id > b->id;
}

static preempt_sched_status fifo_decide(preempt_sched_state *state, const preempt_sched_event *event,
                                        preempt_sched_decisions *out) {
  if (!state || !event || !out)
    return PREEMPT_SCHED_INVALID_ARGUMENT;
  uint32_t order[PREEMPT_SCHED_MAX_KERNELS];
  uint32_t count = preempt_sched_ready_in_order(state, by_arrival, order);
  preempt_sm_set claimed;
  preempt_sm_set_clear(&claimed);
  /* Head-of-line blocking is the point of the baseline: a kernel that fits in
   * idle SMs still waits behind an earlier one that does not. */
  return preempt_sched_start_in_order(state, order, count, &claimed, out, NULL);
}

const preempt_sched_policy preempt_policy_fifo = {"fifo", fifo_decide};
