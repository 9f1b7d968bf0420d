/* schedule_flexsched.c: FlexSched: two converted kernels co-run on every SM under per-SM CTA quotas, the pair's
 * configuration found online by productive profiling. FlexSched §4.2-§4.4, §5.4.1 (throughput), §5.5 (latency). */
#include "schedule_internal.h"

/* Windows a configuration waits for fresh progress samples before its missing rate is taken as 0: a kernel
 * that reports nothing (a stuck client, an old runtime) must not hold the search forever. */
#define FLEXSCHED_STALE_WINDOWS 3
/* Timer comparisons: the daemon's clock is a double in µs, and a timer fired a hair early must still count. */
#define FLEXSCHED_EPSILON_US 1e-6

typedef preempt_flexsched_data flexsched_data;

/* How many CTAs of the kernel one SM holds alone; false when it cannot be co-located at all: footprint unknown
 * (registers_per_thread 0: HIP, an older runtime), GPU limits unknown, or a CTA that fits no SM. */
static bool ctas_alone(const preempt_sched_state *state, const preempt_sched_kernel *kernel, uint32_t *ctas) {
  if (kernel->footprint.registers_per_thread == 0)
    return false;
  return preempt_coexec_ctas_alone(&state->gpu.limits, &kernel->footprint, ctas) == PREEMPT_COEXEC_OK && *ctas >= 1;
}

static bool coexecutable(const preempt_sched_state *state, const preempt_sched_kernel *kernel) {
  uint32_t ctas = 0;
  return ctas_alone(state, kernel, &ctas);
}

/* Whether A and B have a configuration space with at least one configuration (built into *space). */
static bool pairable(const preempt_sched_state *state, const preempt_sched_kernel *a, const preempt_sched_kernel *b,
                     preempt_coexec_space *space) {
  if (!coexecutable(state, a) || !coexecutable(state, b))
    return false;
  return preempt_coexec_space_build(&state->gpu.limits, &a->footprint, &b->footprint, space) == PREEMPT_COEXEC_OK &&
         space->count >= 1;
}

static bool holds_sms(const preempt_sched_kernel *kernel) {
  return kernel->state == PREEMPT_KERNEL_RUNNING || kernel->state == PREEMPT_KERNEL_TOEVICT ||
         kernel->state == PREEMPT_KERNEL_TORUN;
}

static bool window_open(const flexsched_data *data) {
  return data->phase == PREEMPT_FLEXSCHED_SETTLE || data->phase == PREEMPT_FLEXSCHED_MEASURE ||
         data->phase == PREEMPT_FLEXSCHED_ALONE_SETTLE || data->phase == PREEMPT_FLEXSCHED_ALONE_MEASURE;
}

/* A window waiting for fresh samples stretches by one period per retry (its start stays: a sample must be newer
 * than the window's start to count). */
static preempt_usec window_end(const preempt_sched_state *state) {
  return state->flexsched.window_start + state->params.flexsched_period * (1 + state->flexsched.retries);
}

/* The timer of the window under way. A window already due (an event other than TIMER came first) gets a timer
 * just after now: the caller drops timers that are not in the future, and the window must still end. */
static void ask_timer(const preempt_sched_state *state, preempt_sched_decisions *out) {
  if (!window_open(&state->flexsched))
    return;
  preempt_usec end = window_end(state);
  out->timer_at = end > state->now ? end : state->now + 1.0;
}

static void open_window(preempt_sched_state *state, preempt_flexsched_phase phase, preempt_sched_decisions *out) {
  state->flexsched.phase = phase;
  state->flexsched.window_start = state->now;
  state->flexsched.retries = 0;
  ask_timer(state, out);
}

/* Drops from the pair the kernels that left it (completed, removed, or evicted by anyone but us): FlexSched
 * re-profiles when a kernel ends. A lone survivor becomes A, the kernel running first. */
static void forget_departed(preempt_sched_state *state) {
  flexsched_data *data = &state->flexsched;
  const preempt_sched_kernel *a = preempt_sched_find(state, data->a);
  const preempt_sched_kernel *b = preempt_sched_find(state, data->b);
  /* While the batch kernels leave for a latency-sensitive A, A waits READY and is still ours. */
  bool a_waits_for_room = data->phase == PREEMPT_FLEXSCHED_EVICTING && a && a->state == PREEMPT_KERNEL_READY;
  if (!a || a->state == PREEMPT_KERNEL_DONE || (!holds_sms(a) && !a_waits_for_room))
    data->a = 0;
  if (!b || !holds_sms(b))
    data->b = 0;
  if (data->a == 0 && data->b != 0) {
    data->a = data->b;
    data->b = 0;
  }
  bool pair_phase = data->phase == PREEMPT_FLEXSCHED_SETTLE || data->phase == PREEMPT_FLEXSCHED_MEASURE ||
                    data->phase == PREEMPT_FLEXSCHED_SETTLED;
  if ((pair_phase && data->b == 0) || data->a == 0)
    data->phase = PREEMPT_FLEXSCHED_IDLE;
}

/* QUOTA decisions taking the pair to configuration `index`: the kernel that loses CTAs first, so that the CTAs
 * it gives up make room for those the other one gains (FlexSched §5.4.1 evicts a BSU, then launches one). */
static preempt_sched_status push_configuration(preempt_sched_state *state, uint32_t index,
                                               preempt_sched_decisions *out) {
  flexsched_data *data = &state->flexsched;
  preempt_sched_kernel *kernels[2] = {preempt_sched_find(state, data->a), preempt_sched_find(state, data->b)};
  uint32_t quotas[2] = {data->space.configs[index].ctas_a, data->space.configs[index].ctas_b};
  data->config = index;
  for (int increases = 0; increases < 2; increases++)
    for (int which = 0; which < 2; which++) {
      const preempt_sched_kernel *kernel = kernels[which];
      bool running = kernel->state == PREEMPT_KERNEL_RUNNING;
      uint32_t current = running ? kernel->cta_quota : 0;
      if (running && current == quotas[which])
        continue;
      bool decrease = running && quotas[which] < current;
      if (decrease == (increases == 0)) {
        preempt_sched_status status = preempt_sched_push_quota(out, kernel->id, quotas[which]);
        if (status != PREEMPT_SCHED_OK)
          return status;
      }
    }
  return PREEMPT_SCHED_OK;
}

/* Applies a search step: a configuration to measure (settle window first) or the one kept. */
static preempt_sched_status apply_step(preempt_sched_state *state, preempt_coexec_step step,
                                       preempt_sched_decisions *out) {
  flexsched_data *data = &state->flexsched;
  if (step.index >= data->space.count)
    return PREEMPT_SCHED_INVALID_ARGUMENT;
  preempt_sched_status status = push_configuration(state, step.index, out);
  if (status != PREEMPT_SCHED_OK)
    return status;
  data->retries = 0;
  data->start_at_a = data->start_at_b = 0;
  if (step.kind == PREEMPT_COEXEC_SETTLED) {
    data->phase = PREEMPT_FLEXSCHED_SETTLED;
    data->settled_serial++;
    return PREEMPT_SCHED_OK;
  }
  open_window(state, PREEMPT_FLEXSCHED_SETTLE, out);
  return PREEMPT_SCHED_OK;
}

/* Latency mode's first step (§5.5 needs TER alone to set the floor): A alone on every SM at its full occupancy,
 * one settle window and one measurement window. */
static preempt_sched_status start_alone(preempt_sched_state *state, preempt_sched_kernel *a,
                                        preempt_sched_decisions *out) {
  flexsched_data *data = &state->flexsched;
  uint32_t alone = 0;
  if (!ctas_alone(state, a, &alone))
    return PREEMPT_SCHED_INVALID_ARGUMENT; /* callers only pass co-locatable kernels */
  if (a->state != PREEMPT_KERNEL_RUNNING || a->cta_quota != alone) {
    preempt_sched_status status = preempt_sched_push_quota(out, a->id, alone);
    if (status != PREEMPT_SCHED_OK)
      return status;
  }
  data->a = a->id;
  data->b = 0;
  data->retries = 0;
  data->start_at_a = 0;
  open_window(state, PREEMPT_FLEXSCHED_ALONE_SETTLE, out);
  return PREEMPT_SCHED_OK;
}

/* Starts co-running A (running with `quota_a` CTAs per SM, or waiting: its alone quota) and B, whose space
 * `space` is. Throughput mode (§5.4.1) starts the search at A's current CTAs (Fig. 6: the kernel that stays
 * keeps its CTAs, the newcomer fills the room); latency mode (§5.5) first needs A's rate alone. */
static preempt_sched_status start_pair(preempt_sched_state *state, preempt_sched_kernel *a, uint32_t quota_a,
                                       preempt_sched_kernel *b, const preempt_coexec_space *space,
                                       preempt_sched_decisions *out) {
  flexsched_data *data = &state->flexsched;
  bool latency = state->params.flexsched_slowdown > 0 && a->priority != b->priority;
  if (latency && data->alone_kernel != a->id)
    return start_alone(state, a, out);
  data->a = a->id;
  data->b = b->id;
  data->space = *space;
  data->latency = latency;
  data->fixed = state->params.flexsched_fixed >= 0;
  preempt_coexec_step first;
  preempt_coexec_status searched =
      latency ? preempt_coexec_search_start(&data->search, PREEMPT_COEXEC_LATENCY, space->count, space->count - 1,
                                            state->params.flexsched_slowdown * data->alone_rate_a, &first)
              : preempt_coexec_search_start(&data->search, PREEMPT_COEXEC_THROUGHPUT, space->count,
                                            preempt_coexec_space_index_for_a(space, quota_a), 0, &first);
  if (searched != PREEMPT_COEXEC_OK)
    return PREEMPT_SCHED_INVALID_ARGUMENT;
  if (data->fixed) {
    /* Brute force over the space (flexsched_fixed=0, 1, ...): one configuration, measured once for the log. */
    uint32_t fixed = (uint32_t)state->params.flexsched_fixed;
    first.kind = PREEMPT_COEXEC_MEASURE;
    first.index = fixed < space->count ? fixed : space->count - 1;
  }
  return apply_step(state, first, out);
}

/* Tasks per µs of one kernel over the window, or false when its sample is missing or not newer than the window's
 * start (the client has not reported since) or runs backwards (a client's bug or lie: never a negative rate). */
static bool window_rate(const flexsched_data *data, const preempt_sched_kernel *kernel, uint64_t start_tasks,
                        preempt_usec start_at, double *rate) {
  if (!kernel || start_at <= 0 || kernel->progress_at <= data->window_start || kernel->progress_at <= start_at ||
      kernel->progress_tasks < start_tasks)
    return false;
  *rate = (double)(kernel->progress_tasks - start_tasks) / (kernel->progress_at - start_at);
  return true;
}

/* A window starts from each kernel's latest sample; one without any sample yet starts at its first. */
static void take_start_samples(flexsched_data *data, const preempt_sched_kernel *a, const preempt_sched_kernel *b,
                               bool only_missing) {
  if (a && (!only_missing || data->start_at_a <= 0)) {
    data->start_tasks_a = a->progress_tasks;
    data->start_at_a = a->progress_at;
  }
  if (b && (!only_missing || data->start_at_b <= 0)) {
    data->start_tasks_b = b->progress_tasks;
    data->start_at_b = b->progress_at;
  }
}

/* The rates of the configuration just measured go to the search (or, fixed, are only recorded). */
static preempt_sched_status end_measurement(preempt_sched_state *state, preempt_sched_decisions *out) {
  flexsched_data *data = &state->flexsched;
  const preempt_sched_kernel *a = preempt_sched_find(state, data->a), *b = preempt_sched_find(state, data->b);
  preempt_coexec_rates rates = {0, 0};
  bool fresh_a = window_rate(data, a, data->start_tasks_a, data->start_at_a, &rates.a);
  bool fresh_b = window_rate(data, b, data->start_tasks_b, data->start_at_b, &rates.b);
  if ((!fresh_a || !fresh_b) && data->retries < FLEXSCHED_STALE_WINDOWS) {
    data->retries++;
    take_start_samples(data, a, b, true);
    ask_timer(state, out); /* the window stretches: rates are per sample time, not per window */
    return PREEMPT_SCHED_OK;
  }
  preempt_flexsched_measurement *last = &data->last;
  last->a = data->a;
  last->b = data->b;
  last->config = data->config;
  last->ctas = data->space.configs[data->config];
  last->rates = rates;
  last->stale_a = !fresh_a;
  last->stale_b = !fresh_b;
  last->weighted_speedup =
      data->fixed || data->search.measured == 0 ? 1.0 : preempt_coexec_weighted_speedup(&rates, &data->search.best_rates);
  data->measurement_serial++;
  preempt_coexec_step next = {PREEMPT_COEXEC_SETTLED, data->config};
  if (!data->fixed && preempt_coexec_search_feed(&data->search, &rates, &next) != PREEMPT_COEXEC_OK)
    return PREEMPT_SCHED_INVALID_ARGUMENT; /* rates here are finite and >= 0: the search cannot refuse them */
  return apply_step(state, next, out);
}

static preempt_sched_status place(preempt_sched_state *state, preempt_sched_decisions *out);

/* Latency mode: A's rate alone is R; then the best waiting kernel pairs with it under TER_a >= slowdown * R. */
static preempt_sched_status end_alone_measurement(preempt_sched_state *state, preempt_sched_decisions *out) {
  flexsched_data *data = &state->flexsched;
  const preempt_sched_kernel *a = preempt_sched_find(state, data->a);
  double rate = 0;
  bool fresh = window_rate(data, a, data->start_tasks_a, data->start_at_a, &rate);
  if (!fresh && data->retries < FLEXSCHED_STALE_WINDOWS) {
    data->retries++;
    take_start_samples(data, a, NULL, true);
    ask_timer(state, out);
    return PREEMPT_SCHED_OK;
  }
  data->alone_kernel = data->a;
  data->alone_rate_a = rate;
  preempt_flexsched_measurement *last = &data->last;
  last->a = data->a;
  last->b = 0;
  last->config = 0;
  last->ctas.ctas_a = a ? a->cta_quota : 0;
  last->ctas.ctas_b = 0;
  last->rates.a = rate;
  last->rates.b = 0;
  last->weighted_speedup = 1.0;
  last->stale_a = !fresh;
  last->stale_b = false;
  data->alone_serial++;
  data->phase = PREEMPT_FLEXSCHED_IDLE;
  return place(state, out);
}

/* The TIMER that ends a settle or measurement window. */
static preempt_sched_status end_window(preempt_sched_state *state, preempt_sched_decisions *out) {
  flexsched_data *data = &state->flexsched;
  const preempt_sched_kernel *a = preempt_sched_find(state, data->a), *b = preempt_sched_find(state, data->b);
  switch (data->phase) {
  case PREEMPT_FLEXSCHED_SETTLE:
    take_start_samples(data, a, b, false);
    open_window(state, PREEMPT_FLEXSCHED_MEASURE, out);
    return PREEMPT_SCHED_OK;
  case PREEMPT_FLEXSCHED_ALONE_SETTLE:
    take_start_samples(data, a, NULL, false);
    open_window(state, PREEMPT_FLEXSCHED_ALONE_MEASURE, out);
    return PREEMPT_SCHED_OK;
  case PREEMPT_FLEXSCHED_MEASURE: return end_measurement(state, out);
  case PREEMPT_FLEXSCHED_ALONE_MEASURE: return end_alone_measurement(state, out);
  default: return PREEMPT_SCHED_OK;
  }
}

/* Kernels holding SMs now, and whether any of them drains an eviction. */
static uint32_t running_kernels(preempt_sched_state *state, preempt_sched_kernel **running, bool *draining) {
  uint32_t count = 0;
  *draining = false;
  for (uint32_t i = 0; i < state->kernel_count; i++) {
    preempt_sched_kernel *kernel = &state->kernels[i];
    if (!holds_sms(kernel))
      continue;
    running[count++] = kernel;
    *draining |= kernel->state == PREEMPT_KERNEL_TOEVICT;
  }
  for (uint32_t sm = 0; sm < state->gpu.sm_count; sm++)
    *draining |= state->gpu.sm_owner[sm] != 0 && state->gpu.sm_draining[sm];
  return count;
}

/* §5.5: a latency-sensitive kernel (higher priority than everything running) does not wait for the batch
 * kernels to end: they leave every SM, it runs alone to measure its rate, then the batch kernel co-runs beside it
 * again under the latency search. Only in latency mode, and only for a kernel that can be co-located. */
static preempt_sched_status preempt_for_latency(preempt_sched_state *state, preempt_sched_kernel *const *running,
                                                uint32_t running_count, preempt_sched_decisions *out, bool *acted) {
  *acted = false;
  if (state->params.flexsched_slowdown <= 0 || running_count == 0)
    return PREEMPT_SCHED_OK;
  uint32_t order[PREEMPT_SCHED_MAX_KERNELS];
  if (preempt_sched_ready_in_order(state, preempt_sched_by_priority_then_arrival, order) == 0)
    return PREEMPT_SCHED_OK;
  preempt_sched_kernel *waiting = &state->kernels[order[0]];
  if (!coexecutable(state, waiting))
    return PREEMPT_SCHED_OK;
  for (uint32_t r = 0; r < running_count; r++)
    if (running[r]->priority >= waiting->priority)
      return PREEMPT_SCHED_OK;
  for (uint32_t r = 0; r < running_count; r++) {
    preempt_sched_status status = preempt_sched_push(out, PREEMPT_ACTION_EVICT, running[r]->id, NULL);
    if (status != PREEMPT_SCHED_OK)
      return status;
  }
  flexsched_data *data = &state->flexsched;
  data->a = waiting->id;
  data->b = 0;
  data->phase = PREEMPT_FLEXSCHED_EVICTING;
  *acted = true;
  return PREEMPT_SCHED_OK;
}

/* No window under way: start what waits. Nothing runs: the first waiting kernel (with the second beside it when
 * they pair, else alone at its full occupancy; one that cannot be co-located runs alone without a quota). One
 * runs: the first waiting kernel joins it (FlexSched re-profiles on every arrival or end), or it goes back to its
 * full occupancy. Two run: the pair keeps its configuration. */
static preempt_sched_status place(preempt_sched_state *state, preempt_sched_decisions *out) {
  flexsched_data *data = &state->flexsched;
  preempt_sched_kernel *running[PREEMPT_SCHED_MAX_KERNELS];
  bool draining = false;
  uint32_t running_count = running_kernels(state, running, &draining);
  if (draining)
    return PREEMPT_SCHED_OK;
  uint32_t order[PREEMPT_SCHED_MAX_KERNELS];
  uint32_t waiting = preempt_sched_ready_in_order(state, preempt_sched_by_priority_then_arrival, order);
  preempt_coexec_space space;
  uint32_t alone = 0;
  if (running_count == 0) {
    data->phase = PREEMPT_FLEXSCHED_IDLE;
    data->a = data->b = 0;
    if (waiting == 0)
      return PREEMPT_SCHED_OK;
    preempt_sched_kernel *first = &state->kernels[order[0]];
    if (!ctas_alone(state, first, &alone)) /* never co-located: the whole GPU, one at a time */
      return preempt_sched_push(out, PREEMPT_ACTION_RUN, first->id, NULL);
    if (waiting >= 2 && pairable(state, first, &state->kernels[order[1]], &space))
      return start_pair(state, first, alone, &state->kernels[order[1]], &space, out);
    data->a = first->id;
    return preempt_sched_push_quota(out, first->id, alone);
  }
  if (running_count >= 2)
    return PREEMPT_SCHED_OK;
  preempt_sched_kernel *only = running[0];
  /* A kernel running without a quota (one that cannot be co-located, or one another policy started) keeps the
   * GPU to itself until it ends. */
  if (only->cta_quota == 0 || !ctas_alone(state, only, &alone))
    return PREEMPT_SCHED_OK;
  data->a = only->id;
  data->b = 0;
  data->phase = PREEMPT_FLEXSCHED_IDLE;
  if (waiting > 0 && pairable(state, only, &state->kernels[order[0]], &space))
    return start_pair(state, only, only->cta_quota, &state->kernels[order[0]], &space, out);
  return only->cta_quota == alone ? PREEMPT_SCHED_OK : preempt_sched_push_quota(out, only->id, alone);
}

static preempt_sched_status flexsched_decide(preempt_sched_state *state, const preempt_sched_event *event,
                                             preempt_sched_decisions *out) {
  if (!state || !event || !out)
    return PREEMPT_SCHED_INVALID_ARGUMENT;
  if (state->params.flexsched_period <= 0 || state->params.flexsched_slowdown < 0 ||
      state->params.flexsched_slowdown >= 1)
    return PREEMPT_SCHED_INVALID_ARGUMENT;
  flexsched_data *data = &state->flexsched;
  forget_departed(state);
  preempt_sched_kernel *running[PREEMPT_SCHED_MAX_KERNELS];
  bool draining = false;
  uint32_t running_count = running_kernels(state, running, &draining);
  if (data->phase == PREEMPT_FLEXSCHED_EVICTING) {
    if (running_count > 0)
      return PREEMPT_SCHED_OK; /* the batch kernels are still leaving */
    preempt_sched_kernel *a = preempt_sched_find(state, data->a);
    if (a && a->state == PREEMPT_KERNEL_READY)
      return start_alone(state, a, out);
    data->phase = PREEMPT_FLEXSCHED_IDLE;
  }
  if (draining) {
    /* Nothing starts beside an eviction (its SMs are not free yet); a window keeps its timer. */
    ask_timer(state, out);
    return PREEMPT_SCHED_OK;
  }
  bool acted = false;
  preempt_sched_status status = preempt_for_latency(state, running, running_count, out, &acted);
  if (status != PREEMPT_SCHED_OK || acted)
    return status;
  if (window_open(data)) {
    /* Only TIMER ends a window: the caller refreshes the progress samples before TIMER events alone. */
    if (event->kind == PREEMPT_EVENT_TIMER && state->now + FLEXSCHED_EPSILON_US >= window_end(state))
      return end_window(state, out);
    ask_timer(state, out);
    return PREEMPT_SCHED_OK;
  }
  return place(state, out);
}

const preempt_sched_policy preempt_policy_flexsched = {"flexsched", flexsched_decide};
