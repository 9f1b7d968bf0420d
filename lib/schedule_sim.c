/* schedule_sim.c: discrete-event simulation of a policy over simulated kernels, with ANTT, STP and GPU shares.
 * FLEP §6.3.1 (ANTT, STP), §6.3.3 (GPU share), §6.4 (spatial co-runs); EffiSha §8.5 (NTT). */
#include "preempt/schedule_sim.h"

#include <stdlib.h>
#include <string.h>

/* Work below this is rounding, not work: a kernel with less left is finished. */
#define SIM_EPSILON 1e-6
/* A policy that keeps asking for timers without progress would loop forever. */
#define SIM_MAX_STEPS 1000000

void preempt_sim_kernel_default(preempt_sim_kernel *kernel) {
  memset(kernel, 0, sizeof *kernel);
  kernel->weight = 1;
  kernel->cost_estimate = -1;
}

void preempt_sim_result_free(preempt_sim_result *result) {
  if (!result)
    return;
  free(result->trace);
  result->trace = NULL;
  result->trace_count = result->trace_capacity = 0;
}

static preempt_sched_status record(preempt_sim_result *result, preempt_usec time, const preempt_sched_event *event,
                                   const preempt_sched_decision *decision) {
  if (result->trace_count == result->trace_capacity) {
    uint32_t capacity = result->trace_capacity ? result->trace_capacity * 2 : 64;
    preempt_sim_trace_entry *grown = realloc(result->trace, capacity * sizeof *grown);
    if (!grown)
      return PREEMPT_SCHED_OUT_OF_MEMORY;
    result->trace = grown;
    result->trace_capacity = capacity;
  }
  preempt_sim_trace_entry *entry = &result->trace[result->trace_count++];
  memset(entry, 0, sizeof *entry);
  entry->time = time;
  entry->event = *event;
  if (decision)
    entry->decision = *decision;
  return PREEMPT_SCHED_OK;
}

typedef struct sim_kernel_run {
  preempt_usec work_left;       /* true standalone time still to do */
  preempt_usec drain_end;       /* < 0: no eviction draining */
  uint32_t held_at_eviction;
  bool arrived;
} sim_kernel_run;

static preempt_sched_status validate(const preempt_sim_config *config, const preempt_sim_kernel *kernels,
                                     uint32_t kernel_count) {
  if (!config || !config->policy || (!kernels && kernel_count) || config->sm_count == 0 ||
      config->sm_count > PREEMPT_SCHED_MAX_SMS || kernel_count > PREEMPT_SCHED_MAX_KERNELS || config->until < 0)
    return PREEMPT_SCHED_INVALID_ARGUMENT;
  for (uint32_t i = 0; i < kernel_count; i++)
    if (kernels[i].duration <= 0 || kernels[i].arrival < 0 || kernels[i].evict_latency < 0 ||
        kernels[i].resume_cost < 0)
      return PREEMPT_SCHED_INVALID_ARGUMENT;
  return PREEMPT_SCHED_OK;
}

preempt_sched_status preempt_sim_run(const preempt_sim_config *config, const preempt_sim_kernel *kernels,
                                     uint32_t kernel_count, preempt_sim_result *result) {
  if (!result)
    return PREEMPT_SCHED_INVALID_ARGUMENT;
  memset(result, 0, sizeof *result);
  preempt_sched_status status = validate(config, kernels, kernel_count);
  if (status != PREEMPT_SCHED_OK)
    return status;
  preempt_sched_state *state = malloc(sizeof *state);
  sim_kernel_run *runs = calloc(kernel_count ? kernel_count : 1, sizeof *runs);
  if (!state || !runs) {
    free(state);
    free(runs);
    return PREEMPT_SCHED_OUT_OF_MEMORY;
  }
  status = preempt_sched_state_init(state, config->sm_count, &config->params);
  state->gpu.time_slicing = config->time_slicing;
  result->kernel_count = kernel_count;
  for (uint32_t i = 0; i < kernel_count; i++) {
    runs[i].work_left = kernels[i].duration;
    runs[i].drain_end = -1;
  }
  preempt_usec timer_at = 0;
  uint32_t done = 0;
  for (uint32_t step = 0; status == PREEMPT_SCHED_OK && done < kernel_count; step++) {
    if (step == SIM_MAX_STEPS) {
      status = PREEMPT_SCHED_BAD_DECISION;
      break;
    }
    /* Earliest next event; at equal times completions go first (they free SMs),
     * then finished evictions, then arrivals, then timers. */
    enum { NONE = -1 } ;
    int kind = NONE;
    uint32_t which = 0;
    preempt_usec next = 0;
#define CONSIDER(time_, kind_, index_)                                                             \
    do {                                                                                           \
      preempt_usec t_ = (time_);                                                                   \
      if (kind == NONE || t_ < next - SIM_EPSILON || (t_ <= next + SIM_EPSILON && (int)(kind_) < kind)) { \
        kind = (int)(kind_);                                                                       \
        next = t_;                                                                                 \
        which = (index_);                                                                          \
      }                                                                                            \
    } while (0)
    for (uint32_t i = 0; i < kernel_count; i++) {
      if (!runs[i].arrived) {
        CONSIDER(kernels[i].arrival, PREEMPT_EVENT_ARRIVAL, i);
        continue;
      }
      preempt_sched_kernel *kernel = preempt_sched_find(state, i + 1);
      uint32_t held = preempt_sm_set_count(&kernel->sms);
      if (kernel->state != PREEMPT_KERNEL_DONE && held > 0) {
        preempt_usec rate = (preempt_usec)held / preempt_sched_sms_wanted(state, kernel);
        CONSIDER(state->now + runs[i].work_left / rate, PREEMPT_EVENT_COMPLETION, i);
      }
      if (runs[i].drain_end >= 0)
        CONSIDER(runs[i].drain_end, PREEMPT_EVENT_EVICTION_DONE, i);
    }
    if (timer_at > state->now - SIM_EPSILON && timer_at > 0)
      CONSIDER(timer_at, PREEMPT_EVENT_TIMER, 0);
#undef CONSIDER
    if (kind == NONE) {
      status = PREEMPT_SCHED_BAD_DECISION; /* kernels left, nothing running, nothing coming: the policy stalled */
      break;
    }
    if (next < state->now)
      next = state->now;
    if (config->until > 0 && next > config->until)
      next = config->until;
    /* Progress: held SMs, draining ones included, keep finishing block-tasks. */
    preempt_usec elapsed = next - state->now;
    for (uint32_t i = 0; i < kernel_count; i++) {
      preempt_sched_kernel *kernel = runs[i].arrived ? preempt_sched_find(state, i + 1) : NULL;
      uint32_t held = kernel ? preempt_sm_set_count(&kernel->sms) : 0;
      if (!held)
        continue;
      runs[i].work_left -= elapsed * held / preempt_sched_sms_wanted(state, kernel);
      result->kernels[i].sm_time += elapsed * held;
    }
    status = preempt_sched_advance(state, next);
    if (status != PREEMPT_SCHED_OK || (config->until > 0 && next >= config->until))
      break;

    preempt_sched_event event = {(preempt_sched_event_kind)kind, kind == PREEMPT_EVENT_TIMER ? 0 : which + 1};
    preempt_sched_kernel *subject = event.kernel_id ? preempt_sched_find(state, event.kernel_id) : NULL;
    switch (kind) {
    case PREEMPT_EVENT_ARRIVAL: {
      preempt_sched_kernel added;
      memset(&added, 0, sizeof added);
      added.id = which + 1;
      added.client_id = kernels[which].client_id;
      added.priority = kernels[which].priority;
      added.weight = kernels[which].weight;
      added.predicted = kernels[which].predicted > 0 ? kernels[which].predicted : kernels[which].duration;
      added.eviction_cost = kernels[which].cost_estimate >= 0
                                ? kernels[which].cost_estimate
                                : kernels[which].evict_latency + kernels[which].resume_cost;
      added.sms_needed = kernels[which].sms_needed;
      status = preempt_sched_add_kernel(state, &added);
      runs[which].arrived = true;
      break;
    }
    case PREEMPT_EVENT_COMPLETION:
      status = preempt_sched_complete(state, event.kernel_id);
      runs[which].drain_end = -1;
      runs[which].work_left = 0;
      result->kernels[which].finished = true;
      result->kernels[which].finish = state->now;
      done++;
      break;
    case PREEMPT_EVENT_EVICTION_DONE: {
      uint32_t held_before = preempt_sm_set_count(&subject->sms);
      status = preempt_sched_eviction_done(state, event.kernel_id);
      /* Under time-slicing a full eviction released its SMs when it was applied (held_at_eviction). */
      uint32_t released = held_before - preempt_sm_set_count(&subject->sms) + runs[which].held_at_eviction;
      runs[which].held_at_eviction = 0;
      /* Relaunching refills what was evicted: the resume cost in proportion to the SMs lost. */
      preempt_usec added_work =
          kernels[which].resume_cost * released / preempt_sched_sms_wanted(state, subject);
      runs[which].work_left += added_work;
      subject->remaining += added_work;
      runs[which].drain_end = -1;
      break;
    }
    default:
      timer_at = 0;
      break;
    }
    if (status != PREEMPT_SCHED_OK)
      break;

    preempt_sched_decisions decisions;
    memset(&decisions, 0, sizeof decisions);
    status = config->policy->decide(state, &event, &decisions);
    if (status != PREEMPT_SCHED_OK)
      break;
    timer_at = decisions.timer_at > state->now ? decisions.timer_at : 0;
    if (decisions.count == 0)
      status = record(result, state->now, &event, NULL);
    for (uint32_t d = 0; d < decisions.count && status == PREEMPT_SCHED_OK; d++) {
      const preempt_sched_decision *decision = &decisions.items[d];
      preempt_sched_kernel *target = preempt_sched_find(state, decision->kernel_id);
      uint32_t held_before = target ? preempt_sm_set_count(&target->sms) : 0;
      status = preempt_sched_apply(state, decision);
      if (status != PREEMPT_SCHED_OK)
        break;
      if (decision->action == PREEMPT_ACTION_EVICT && target)
        runs[decision->kernel_id - 1].held_at_eviction += held_before - preempt_sm_set_count(&target->sms);
      status = record(result, state->now, &event, decision);
      if (decision->action == PREEMPT_ACTION_EVICT) {
        uint32_t index = decision->kernel_id - 1;
        /* A second eviction while one drains ends with the later one: one
         * release event keeps the model simple and errs on the slow side. */
        preempt_usec end = state->now + kernels[index].evict_latency;
        if (runs[index].drain_end < end)
          runs[index].drain_end = end;
      }
    }
  }
  result->end_time = state->now;
  /* Metrics over what finished (FLEP §6.3.1: NTT = T_MP / T_SP, ANTT its mean, STP the sum of its inverses). */
  preempt_usec total_sm_time = 0;
  for (uint32_t i = 0; i < kernel_count; i++) {
    preempt_sim_kernel_result *kr = &result->kernels[i];
    preempt_sched_kernel *kernel = runs[i].arrived ? preempt_sched_find(state, i + 1) : NULL;
    kr->evictions = kernel ? kernel->evictions : 0;
    total_sm_time += kr->sm_time;
    uint32_t c = 0;
    while (c < result->client_count && result->clients[c].client_id != kernels[i].client_id)
      c++;
    if (c == result->client_count) {
      result->clients[c].client_id = kernels[i].client_id;
      result->client_count++;
    }
    result->clients[c].sm_time += kr->sm_time;
    if (!kr->finished)
      continue;
    kr->turnaround = kr->finish - kernels[i].arrival;
    kr->ntt = kr->turnaround / kernels[i].duration;
    result->finished++;
    result->antt += kr->ntt;
    result->stp += 1.0 / kr->ntt;
  }
  if (result->finished)
    result->antt /= result->finished;
  for (uint32_t c = 0; c < result->client_count; c++)
    result->clients[c].gpu_share = total_sm_time > 0 ? result->clients[c].sm_time / total_sm_time : 0;
  free(state);
  free(runs);
  return status;
}
