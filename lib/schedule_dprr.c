/* schedule_dprr.c: dynamic-priority round robin with an active and an inactive queue, like Linux's O(1) scheduler.
 * EffiSha §7 ("dprr"). */
#include "schedule_internal.h"

static preempt_usec active_waited(const preempt_sched_state *state, const preempt_sched_kernel *kernel) {
  preempt_usec waited = kernel->policy.dprr_active_waited;
  if (kernel->policy.dprr_active_since >= 0)
    waited += state->now - kernel->policy.dprr_active_since;
  return waited;
}

/* "+1 for every millisecond the kernel waits in the active queue, capped at 20". */
static int32_t dynamic_priority(const preempt_sched_state *state, const preempt_sched_kernel *kernel) {
  preempt_usec step = state->params.dprr_age_step > 0 ? state->params.dprr_age_step : 1000.0;
  /* The epsilon keeps exactly 1 ms of waiting from flooring to 0 through rounding. */
  /* Whole steps waited; truncation is floor for a non-negative wait. */
  double age = (double)(int64_t)(active_waited(state, kernel) / step + 1e-9);
  if (age > state->params.dprr_age_cap)
    age = state->params.dprr_age_cap;
  return kernel->priority + (int32_t)age;
}

/* "(p + 1)/2 ms where p is the priority of the kernel": §7 does not say static or
 * dynamic; we use the static priority, as Linux's O(1) scheduler sizes time
 * slices, so that ageing buys an earlier turn but not a longer one. */
static preempt_usec slice_length(const preempt_sched_state *state, const preempt_sched_kernel *kernel) {
  preempt_usec slice = (preempt_usec)(kernel->priority + 1) * state->params.dprr_slice_unit;
  return slice > state->params.dprr_slice_unit ? slice : state->params.dprr_slice_unit;
}

static int by_dynamic_priority(const preempt_sched_state *state, const preempt_sched_kernel *a,
                               const preempt_sched_kernel *b) {
  /* Inactive-queue kernels sort after every active one; start_in_order stops before them. */
  if (a->policy.dprr_queue != b->policy.dprr_queue)
    return a->policy.dprr_queue < b->policy.dprr_queue ? -1 : 1;
  int32_t pa = dynamic_priority(state, a), pb = dynamic_priority(state, b);
  if (pa != pb)
    return pa > pb ? -1 : 1;
  if (a->arrival != b->arrival)
    return a->arrival < b->arrival ? -1 : 1;
  return a->id < b->id ? -1 : a->id > b->id;
}

static void enter_active(const preempt_sched_state *state, preempt_sched_kernel *kernel) {
  kernel->policy.dprr_queue = 0;
  kernel->policy.dprr_active_waited = 0;
  kernel->policy.dprr_active_since = state->now;
}

static preempt_sched_status dprr_decide(preempt_sched_state *state, const preempt_sched_event *event,
                                        preempt_sched_decisions *out) {
  if (!state || !event || !out)
    return PREEMPT_SCHED_INVALID_ARGUMENT;
  preempt_sched_kernel *subject = preempt_sched_find(state, event->kernel_id);
  if (event->kind == PREEMPT_EVENT_ARRIVAL && subject)
    enter_active(state, subject);
  preempt_sched_status status;

  /* Quota expired: to the inactive queue with its dynamic priority reset. A
   * kernel alone on the GPU keeps it (§7 is silent; evicting it would only cost). */
  preempt_usec timer_at = 0;
  preempt_sched_kernel *kernel;
  for (uint32_t i = 0; (kernel = preempt_sched_next_expired(state, &i)) != NULL; i++) {
    bool evicted;
    if ((status = preempt_sched_evict_if_others_wait(state, kernel, out, &evicted)) != PREEMPT_SCHED_OK)
      return status;
    if (evicted) {
      kernel->policy.dprr_queue = 1;
      kernel->policy.dprr_active_waited = 0;
      kernel->policy.dprr_active_since = -1;
      kernel->policy.slice_end = 0;
    } else {
      kernel->policy.slice_end = state->now + slice_length(state, kernel);
    }
  }

  /* "When the active queue becomes empty, the two queues switch the role". */
  bool active_waiting = false, inactive_waiting = false;
  for (uint32_t i = 0; i < state->kernel_count; i++) {
    const preempt_sched_kernel *kernel = &state->kernels[i];
    if (kernel->state == PREEMPT_KERNEL_READY) {
      active_waiting |= kernel->policy.dprr_queue == 0;
      inactive_waiting |= kernel->policy.dprr_queue == 1;
    }
  }
  if (!active_waiting && inactive_waiting)
    for (uint32_t i = 0; i < state->kernel_count; i++) {
      preempt_sched_kernel *kernel = &state->kernels[i];
      if (kernel->state != PREEMPT_KERNEL_DONE && kernel->policy.dprr_queue == 1) {
        enter_active(state, kernel);
        if (kernel->state != PREEMPT_KERNEL_READY)
          kernel->policy.dprr_active_since = -1; /* still draining: starts waiting when READY */
      }
    }
  /* A kernel whose eviction just finished starts waiting now in whichever queue it is in. */
  if (event->kind == PREEMPT_EVENT_EVICTION_DONE && subject && subject->state == PREEMPT_KERNEL_READY &&
      subject->policy.dprr_queue == 0 && subject->policy.dprr_active_since < 0)
    subject->policy.dprr_active_since = state->now;

  uint32_t order[PREEMPT_SCHED_MAX_KERNELS];
  uint32_t count = preempt_sched_ready_in_order(state, by_dynamic_priority, order);
  uint32_t active_count = 0;
  while (active_count < count && state->kernels[order[active_count]].policy.dprr_queue == 0)
    active_count++;
  preempt_sm_set claimed;
  preempt_sm_set_clear(&claimed);
  uint32_t before = out->count;
  status = preempt_sched_start_in_order(state, order, active_count, &claimed, out, NULL);
  if (status != PREEMPT_SCHED_OK)
    return status;
  for (uint32_t d = before; d < out->count; d++) {
    preempt_sched_kernel *started = preempt_sched_find(state, out->items[d].kernel_id);
    started->policy.slice_end = state->now + slice_length(state, started);
    started->policy.dprr_active_waited = active_waited(state, started);
    started->policy.dprr_active_since = -1;
  }
  for (uint32_t i = 0; i < state->kernel_count; i++) {
    const preempt_sched_kernel *kernel = &state->kernels[i];
    bool will_run = kernel->state != PREEMPT_KERNEL_DONE;
    if (will_run && kernel->policy.slice_end > state->now && (timer_at == 0 || kernel->policy.slice_end < timer_at))
      timer_at = kernel->policy.slice_end;
  }
  out->timer_at = timer_at;
  return PREEMPT_SCHED_OK;
}

const preempt_sched_policy preempt_policy_dprr = {"dprr", dprr_decide};
