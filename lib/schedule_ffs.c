/* schedule_ffs.c: fairness first: weighted round robin whose epoch length keeps eviction cost under max_overhead.
 * FLEP §5.2.2 (FFS) and §6.3.3 (2:1 weights, max_overhead 10%). */
#include "schedule_internal.h"

/* FLEP §5.2.2: the smallest T with sum(O_i) / (T * sum(W_i)) <= max_overhead,
 * over the kernels sharing the GPU now. A round gives kernel i T*W_i, so a round
 * lasts T*sum(W_i) and pays at most one eviction per kernel: sum(O_i). */
static preempt_usec epoch_unit(const preempt_sched_state *state) {
  preempt_usec cost = 0, weights = 0;
  for (uint32_t i = 0; i < state->kernel_count; i++) {
    const preempt_sched_kernel *kernel = &state->kernels[i];
    if (kernel->state == PREEMPT_KERNEL_DONE)
      continue;
    cost += kernel->eviction_cost;
    weights += kernel->weight;
  }
  preempt_usec unit = 0;
  if (weights > 0 && state->params.max_overhead > 0)
    unit = cost / (state->params.max_overhead * weights);
  /* Eviction cost near zero would make T near zero: switching every microsecond
   * is not free in reality (launch latency), so T has a floor. */
  return unit > state->params.ffs_min_epoch ? unit : state->params.ffs_min_epoch;
}

/* Round-robin order: the stamp is taken on joining the queue (arrival, or
 * eviction at the end of an epoch), so the queue is first come, first served
 * and an evicted kernel goes behind everyone already waiting. */
static int by_turn(const preempt_sched_state *state, const preempt_sched_kernel *a, const preempt_sched_kernel *b) {
  (void)state;
  if (a->policy.round_turn != b->policy.round_turn)
    return a->policy.round_turn < b->policy.round_turn ? -1 : 1;
  if (a->arrival != b->arrival)
    return a->arrival < b->arrival ? -1 : 1;
  return a->id < b->id ? -1 : a->id > b->id;
}

static preempt_sched_status ffs_decide(preempt_sched_state *state, const preempt_sched_event *event,
                                       preempt_sched_decisions *out) {
  if (!state || !event || !out)
    return PREEMPT_SCHED_INVALID_ARGUMENT;
  if (state->params.max_overhead <= 0 || state->params.max_overhead >= 1)
    return PREEMPT_SCHED_INVALID_ARGUMENT;
  preempt_sched_kernel *subject = preempt_sched_find(state, event->kernel_id);
  if (event->kind == PREEMPT_EVENT_ARRIVAL && subject)
    subject->policy.round_turn = ++state->policy_turn_counter;
  preempt_usec unit = epoch_unit(state);
  preempt_sched_status status;
  preempt_sched_kernel *kernel;
  for (uint32_t i = 0; (kernel = preempt_sched_next_expired(state, &i)) != NULL; i++) {
    bool evicted;
    if ((status = preempt_sched_evict_if_others_wait(state, kernel, out, &evicted)) != PREEMPT_SCHED_OK)
      return status;
    if (evicted) {
      kernel->policy.slice_end = 0;
      kernel->policy.round_turn = ++state->policy_turn_counter;
    } else {
      kernel->policy.slice_end = state->now + unit * kernel->weight; /* alone: nothing to share with */
    }
  }
  uint32_t order[PREEMPT_SCHED_MAX_KERNELS];
  uint32_t count = preempt_sched_ready_in_order(state, by_turn, order);
  preempt_sm_set claimed;
  preempt_sm_set_clear(&claimed);
  uint32_t before = out->count;
  status = preempt_sched_start_in_order(state, order, count, &claimed, out, NULL);
  if (status != PREEMPT_SCHED_OK)
    return status;
  for (uint32_t d = before; d < out->count; d++) {
    preempt_sched_kernel *started = preempt_sched_find(state, out->items[d].kernel_id);
    started->policy.slice_end = state->now + unit * started->weight;
  }
  preempt_usec timer_at = 0;
  for (uint32_t i = 0; i < state->kernel_count; i++) {
    preempt_usec end = state->kernels[i].policy.slice_end;
    if (state->kernels[i].state != PREEMPT_KERNEL_DONE && end > state->now && (timer_at == 0 || end < timer_at))
      timer_at = end;
  }
  out->timer_at = timer_at;
  return PREEMPT_SCHED_OK;
}

const preempt_sched_policy preempt_policy_ffs = {"ffs", ffs_decide};
