/* schedule_hpf.c: highest priority first, shortest remaining time within a priority, with spatial eviction.
 * FLEP §5.2.1 and Fig. 6 (HPF), §6.4 (evict only the SMs the waiting kernel needs). */
#include "schedule_internal.h"

/* FLEP keeps one queue per priority, each sorted by T_r; walking them highest
 * first is the same as one order on (priority desc, T_r asc). Arrival breaks
 * ties so that equal kernels keep launch order. */
static int by_priority_then_remaining(const preempt_sched_state *state, const preempt_sched_kernel *a,
                                      const preempt_sched_kernel *b) {
  (void)state;
  if (a->priority != b->priority)
    return a->priority > b->priority ? -1 : 1;
  if (a->remaining != b->remaining)
    return a->remaining < b->remaining ? -1 : 1;
  if (a->arrival != b->arrival)
    return a->arrival < b->arrival ? -1 : 1;
  return a->id < b->id ? -1 : a->id > b->id;
}

/* Fig. 6: a lower-priority running kernel is always preempted; an equal-priority
 * one only when its remaining time exceeds the waiting kernel's plus the
 * preemption overhead (lines 22-34), since the overhead delays every kernel. */
static bool may_preempt(const preempt_sched_kernel *running, const preempt_sched_kernel *waiting) {
  if (running->priority < waiting->priority)
    return true;
  if (running->priority > waiting->priority)
    return false;
  return running->remaining > waiting->remaining + running->eviction_cost;
}

/* Victims are taken cheapest-to-lose first: lowest priority, then longest remaining. */
static int victim_order(const preempt_sched_kernel *a, const preempt_sched_kernel *b) {
  if (a->priority != b->priority)
    return a->priority < b->priority ? -1 : 1;
  if (a->remaining != b->remaining)
    return a->remaining > b->remaining ? -1 : 1;
  return a->id > b->id ? -1 : a->id < b->id;
}

static preempt_sched_status evict_for(preempt_sched_state *state, const preempt_sched_kernel *waiting,
                                      uint32_t needed, preempt_sched_decisions *out) {
  uint32_t victims[PREEMPT_SCHED_MAX_KERNELS], victim_count = 0, obtainable = 0;
  for (uint32_t i = 0; i < state->kernel_count; i++) {
    const preempt_sched_kernel *kernel = &state->kernels[i];
    if (kernel->state != PREEMPT_KERNEL_RUNNING || preempt_sched_working_sms(state, kernel) == 0 ||
        !may_preempt(kernel, waiting))
      continue;
    uint32_t at = victim_count++;
    while (at > 0 && victim_order(kernel, &state->kernels[victims[at - 1]]) < 0) {
      victims[at] = victims[at - 1];
      at--;
    }
    victims[at] = i;
  }
  for (uint32_t v = 0; v < victim_count; v++)
    obtainable += preempt_sched_working_sms(state, &state->kernels[victims[v]]);
  /* Partial evictions that still leave the kernel unplaceable would cost without helping. */
  if (obtainable < needed)
    return PREEMPT_SCHED_OK;
  for (uint32_t v = 0; v < victim_count && needed > 0; v++) {
    const preempt_sched_kernel *victim = &state->kernels[victims[v]];
    uint32_t working = preempt_sched_working_sms(state, victim);
    uint32_t take = working < needed ? working : needed;
    needed -= take;
    /* Eviction cost is estimated per kernel for all its SMs (FLEP §4.2); evicting
     * part of them is charged in proportion, which FLEP §6.4 measured as 31% less
     * overhead on average. Ties go spatial: the rest of the victim keeps running. */
    preempt_usec wanted = preempt_sched_sms_wanted(state, victim);
    preempt_usec temporal_cost = victim->eviction_cost * working / wanted;
    preempt_usec spatial_cost = victim->eviction_cost * take / wanted;
    preempt_sched_status status;
    if (state->params.hpf_spatial && take < working && spatial_cost <= temporal_cost) {
      preempt_sm_set sms;
      preempt_sm_set_clear(&sms);
      uint32_t picked = 0;
      /* The highest-numbered SMs: the waiting kernel is then placed on them, and
       * the victim keeps a contiguous low range (easier to read in traces). */
      for (uint32_t sm = state->gpu.sm_count; sm-- > 0 && picked < take;)
        if (state->gpu.sm_owner[sm] == victim->id && !state->gpu.sm_draining[sm]) {
          preempt_sm_set_add(&sms, sm);
          picked++;
        }
      status = preempt_sched_push(out, PREEMPT_ACTION_EVICT, victim->id, &sms);
    } else {
      status = preempt_sched_push(out, PREEMPT_ACTION_EVICT, victim->id, NULL);
    }
    if (status != PREEMPT_SCHED_OK)
      return status;
  }
  return PREEMPT_SCHED_OK;
}

/* Time-slicing (gpu.time_slicing): the waiting kernel runs only once no other client holds the GPU, so every
 * kernel of another client leaves, from every SM, or none does (one it may not preempt keeps the GPU: evicting the
 * rest would gain nothing). A full eviction's SMs are free once applied (schedule.c, apply_evict), so the waiting
 * kernel starts in the same decision, not after the victims' CTAs are gone: those leave in their own contexts'
 * time slices, and waiting for them cost the urgent kernel the eviction and a round trip (H200: 649 us of FLEP's
 * pair against 1253 without a daemon, half of it before the short kernel was even told to run). */
static preempt_sched_status evict_every_other_client(preempt_sched_state *state, const preempt_sched_kernel *waiting,
                                                     const preempt_sm_set *claimed, preempt_sched_decisions *out) {
  uint32_t victims[PREEMPT_SCHED_MAX_KERNELS], victim_count = 0;
  for (uint32_t i = 0; i < state->kernel_count; i++) {
    const preempt_sched_kernel *kernel = &state->kernels[i];
    if (kernel->client_id == waiting->client_id || kernel->state == PREEMPT_KERNEL_DONE ||
        preempt_sm_set_count(&kernel->sms) == 0)
      continue;
    /* Draining under a quota (its SMs are not free until it is gone), or not to be preempted by this one. */
    if (kernel->state != PREEMPT_KERNEL_RUNNING || kernel->cta_quota != 0 || !may_preempt(kernel, waiting))
      return PREEMPT_SCHED_OK;
    victims[victim_count++] = kernel->id;
  }
  for (uint32_t v = 0; v < victim_count; v++) {
    preempt_sched_status status = preempt_sched_push(out, PREEMPT_ACTION_EVICT, victims[v], NULL);
    if (status != PREEMPT_SCHED_OK)
      return status;
  }
  /* Free once the evictions are applied: idle SMs and the victims'; the waiting client's own kernels keep theirs. */
  uint32_t wanted = preempt_sched_sms_wanted(state, waiting), found = 0;
  preempt_sm_set chosen;
  preempt_sm_set_clear(&chosen);
  for (uint32_t sm = 0; sm < state->gpu.sm_count && found < wanted; sm++) {
    uint32_t owner = state->gpu.sm_owner[sm];
    bool freed = owner == 0;
    for (uint32_t v = 0; v < victim_count && !freed; v++)
      freed = owner == victims[v];
    if (freed && !preempt_sm_set_has(claimed, sm)) {
      preempt_sm_set_add(&chosen, sm);
      found++;
    }
  }
  if (found < wanted)
    return PREEMPT_SCHED_OK; /* its own client's kernels hold the rest: it starts when they end */
  return preempt_sched_push(out, PREEMPT_ACTION_RUN, waiting->id, wanted == state->gpu.sm_count ? NULL : &chosen);
}

static preempt_sched_status hpf_decide(preempt_sched_state *state, const preempt_sched_event *event,
                                       preempt_sched_decisions *out) {
  if (!state || !event || !out)
    return PREEMPT_SCHED_INVALID_ARGUMENT;
  uint32_t order[PREEMPT_SCHED_MAX_KERNELS];
  uint32_t count = preempt_sched_ready_in_order(state, by_priority_then_remaining, order);
  preempt_sm_set claimed;
  preempt_sm_set_clear(&claimed);
  uint32_t first_unplaced = 0;
  preempt_sched_status status = preempt_sched_start_in_order(state, order, count, &claimed, out, &first_unplaced);
  if (status != PREEMPT_SCHED_OK || first_unplaced == count)
    return status;
  /* Fig. 6 re-decides on every arrival and completion; doing it on every event
   * (eviction finished, timer) gives the same decisions because a running
   * kernel's T_r only shrinks. Only the best unplaced kernel may preempt:
   * later ones would jump the queue (FLEP §5.2.1 serves queues strictly). */
  const preempt_sched_kernel *waiting = &state->kernels[order[first_unplaced]];
  if (state->gpu.time_slicing)
    return evict_every_other_client(state, waiting, &claimed, out);
  preempt_sm_set free;
  preempt_sched_free_sms(state, &free);
  uint32_t free_count = preempt_sm_set_count(&free) - preempt_sm_set_count(&claimed);
  uint32_t soon = free_count + preempt_sched_draining_count(state);
  uint32_t wanted = preempt_sched_sms_wanted(state, waiting);
  if (soon >= wanted)
    return PREEMPT_SCHED_OK; /* an eviction already under way will make room */
  return evict_for(state, waiting, wanted - soon, out);
}

const preempt_sched_policy preempt_policy_hpf = {"hpf", hpf_decide};
