/* schedule.c: state bookkeeping shared by every scheduling policy, the simulator and the daemon.
 * EffiSha §6.1 (state transitions), FLEP §5.1 (T_e, T_w, T_r accounting). */
#include "schedule_internal.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

const char *preempt_sched_status_name(preempt_sched_status status) {
  switch (status) {
  case PREEMPT_SCHED_OK: return "ok";
  case PREEMPT_SCHED_INVALID_ARGUMENT: return "invalid argument";
  case PREEMPT_SCHED_FULL: return "table full";
  case PREEMPT_SCHED_UNKNOWN_KERNEL: return "unknown kernel";
  case PREEMPT_SCHED_UNKNOWN_POLICY: return "unknown policy";
  case PREEMPT_SCHED_BAD_DECISION: return "decision not allowed in this state";
  case PREEMPT_SCHED_NO_DATA: return "no data yet";
  case PREEMPT_SCHED_OUT_OF_MEMORY: return "out of memory";
  case PREEMPT_SCHED_UNKNOWN_PARAMETER: return "unknown parameter";
  }
  return "unknown status";
}

const char *preempt_kernel_state_name(preempt_kernel_state state) {
  static const char *const names[] = {"PREP", "READY", "TORUN", "RUNNING", "TOEVICT", "DONE"};
  return (unsigned)state < sizeof names / sizeof names[0] ? names[state] : "?";
}

const char *preempt_sched_event_name(preempt_sched_event_kind kind) {
  static const char *const names[] = {"arrival", "completion", "eviction-done", "timer"};
  return (unsigned)kind < sizeof names / sizeof names[0] ? names[kind] : "?";
}

void preempt_sm_set_clear(preempt_sm_set *set) { memset(set, 0, sizeof *set); }

void preempt_sm_set_add(preempt_sm_set *set, uint32_t sm) {
  if (sm < PREEMPT_SCHED_MAX_SMS)
    set->bits[sm / 64] |= UINT64_C(1) << (sm % 64);
}

bool preempt_sm_set_has(const preempt_sm_set *set, uint32_t sm) {
  return sm < PREEMPT_SCHED_MAX_SMS && (set->bits[sm / 64] >> (sm % 64)) & 1;
}

uint32_t preempt_sm_set_count(const preempt_sm_set *set) {
  uint32_t count = 0;
  for (unsigned word = 0; word < PREEMPT_SCHED_MAX_SMS / 64; word++)
    count += (uint32_t)__builtin_popcountll(set->bits[word]);
  return count;
}

void preempt_sched_params_default(preempt_sched_params *params) {
  memset(params, 0, sizeof *params);
  params->max_overhead = 0.10;
  params->ffs_min_epoch = 100.0;
  params->hpf_spatial = true;
  params->dprr_age_step = 1000.0;
  params->dprr_age_cap = 20;
  params->dprr_slice_unit = 500.0;
  /* FlexSched §5.4.1 samples each configuration for "a sampling time" it does not give; 2 ms is tens of tasks of
   * the kernels in its Table 2 and well above a QUOTA command's round trip through preemptd (~0.2 ms). */
  params->flexsched_period = 2000.0;
  params->flexsched_slowdown = 0.0;
  params->flexsched_fixed = -1;
}

/* A finite number that is exactly text[0, length), no leading blanks (strtod would skip them). strtod never
 * takes a unit's letters into a number ("1e5ms" stops at 'm'), so checking where it stopped is enough. */
static bool parse_number(const char *text, size_t length, double *out) {
  if (length == 0 || isspace((unsigned char)text[0]))
    return false;
  char *end = NULL;
  errno = 0;
  double value = strtod(text, &end);
  /* ERANGE: 1e999 (infinite) or an underflow; value - value != 0: NaN or an infinity spelled out. */
  if (end != text + length || errno != 0 || value != value || value - value != 0)
    return false;
  *out = value;
  return true;
}

/* Microseconds: "250", "250us" or "1.5ms"; finite after the unit too ("1e308ms" is not). */
static bool parse_time(const char *text, double *out) {
  size_t length = strlen(text);
  double scale = 1.0;
  if (length > 2 && strcmp(text + length - 2, "ms") == 0) {
    length -= 2;
    scale = 1000.0;
  } else if (length > 2 && strcmp(text + length - 2, "us") == 0) {
    length -= 2;
  }
  double value = 0;
  if (!parse_number(text, length, &value) || (value * scale) - (value * scale) != 0)
    return false;
  *out = value * scale;
  return true;
}

static bool parse_integer(const char *text, long min, long max, long *out) {
  if (isspace((unsigned char)text[0]))
    return false;
  char *end = NULL;
  errno = 0;
  long value = strtol(text, &end, 10);
  if (end == text || *end || errno != 0 || value < min || value > max)
    return false;
  *out = value;
  return true;
}

preempt_sched_status preempt_sched_params_set(preempt_sched_params *params, const char *name, const char *value,
                                              const char **why) {
  const char *message = NULL;
  preempt_sched_status status = PREEMPT_SCHED_INVALID_ARGUMENT;
  double number = 0;
  long integer = 0;
  if (!params || !name || !value) {
    message = "no parameter given";
  } else if (strcmp(name, "max_overhead") == 0) {
    if (parse_number(value, strlen(value), &number) && number > 0 && number < 1) {
      params->max_overhead = number;
      status = PREEMPT_SCHED_OK;
    } else {
      message = "max_overhead must be a number between 0 and 1 (exclusive), got";
    }
  } else if (strcmp(name, "hpf_spatial") == 0) {
    if (parse_integer(value, 0, 1, &integer)) {
      params->hpf_spatial = integer != 0;
      status = PREEMPT_SCHED_OK;
    } else {
      message = "hpf_spatial must be 0 or 1, got";
    }
  } else if (strcmp(name, "dprr_age_cap") == 0) {
    if (parse_integer(value, 0, 1000, &integer)) {
      params->dprr_age_cap = (int32_t)integer;
      status = PREEMPT_SCHED_OK;
    } else {
      message = "dprr_age_cap must be an integer 0..1000, got";
    }
  } else if (strcmp(name, "flexsched_slowdown") == 0) {
    if (parse_number(value, strlen(value), &number) && number >= 0 && number < 1) {
      params->flexsched_slowdown = number;
      status = PREEMPT_SCHED_OK;
    } else {
      message = "flexsched_slowdown must be a number from 0 (inclusive) to 1 (exclusive), got";
    }
  } else if (strcmp(name, "flexsched_fixed") == 0) {
    if (parse_integer(value, -1, PREEMPT_COEXEC_MAX_CONFIGS - 1, &integer)) {
      params->flexsched_fixed = (int32_t)integer;
      status = PREEMPT_SCHED_OK;
    } else {
      message = "flexsched_fixed must be an integer -1..63, got";
    }
  } else if (strcmp(name, "ffs_min_epoch") == 0 || strcmp(name, "dprr_age_step") == 0 ||
             strcmp(name, "dprr_slice_unit") == 0 || strcmp(name, "flexsched_period") == 0) {
    if (parse_time(value, &number) && number > 0) {
      if (strcmp(name, "ffs_min_epoch") == 0)
        params->ffs_min_epoch = number;
      else if (strcmp(name, "dprr_age_step") == 0)
        params->dprr_age_step = number;
      else if (strcmp(name, "dprr_slice_unit") == 0)
        params->dprr_slice_unit = number;
      else
        params->flexsched_period = number;
      status = PREEMPT_SCHED_OK;
    } else {
      message = "expected a time greater than 0, got";
    }
  } else {
    message = "unknown parameter";
    status = PREEMPT_SCHED_UNKNOWN_PARAMETER;
  }
  if (why)
    *why = message;
  return status;
}

preempt_sched_status preempt_sched_policy_by_name(const char *name, const preempt_sched_policy **out) {
  static const preempt_sched_policy *const all[] = {&preempt_policy_fifo, &preempt_policy_hpf, &preempt_policy_ffs,
                                                    &preempt_policy_piv, &preempt_policy_dprr,
                                                    &preempt_policy_flexsched};
  if (!name || !out)
    return PREEMPT_SCHED_INVALID_ARGUMENT;
  for (unsigned i = 0; i < sizeof all / sizeof all[0]; i++)
    if (strcmp(all[i]->name, name) == 0) {
      *out = all[i];
      return PREEMPT_SCHED_OK;
    }
  return PREEMPT_SCHED_UNKNOWN_POLICY;
}

preempt_sched_status preempt_sched_state_init(preempt_sched_state *state, uint32_t sm_count,
                                              const preempt_sched_params *params) {
  if (!state || sm_count == 0 || sm_count > PREEMPT_SCHED_MAX_SMS)
    return PREEMPT_SCHED_INVALID_ARGUMENT;
  memset(state, 0, sizeof *state);
  state->gpu.sm_count = sm_count;
  if (params)
    state->params = *params;
  else
    preempt_sched_params_default(&state->params);
  return PREEMPT_SCHED_OK;
}

preempt_sched_kernel *preempt_sched_find(preempt_sched_state *state, uint32_t kernel_id) {
  if (!state || kernel_id == 0)
    return NULL;
  for (uint32_t i = 0; i < state->kernel_count; i++)
    if (state->kernels[i].id == kernel_id)
      return &state->kernels[i];
  return NULL;
}

preempt_sched_status preempt_sched_add_kernel(preempt_sched_state *state, const preempt_sched_kernel *kernel) {
  if (!state || !kernel || kernel->id == 0 || kernel->predicted < 0 || kernel->eviction_cost < 0)
    return PREEMPT_SCHED_INVALID_ARGUMENT;
  if (preempt_sched_find(state, kernel->id))
    return PREEMPT_SCHED_INVALID_ARGUMENT;
  if (state->kernel_count == PREEMPT_SCHED_MAX_KERNELS)
    return PREEMPT_SCHED_FULL;
  preempt_sched_kernel *added = &state->kernels[state->kernel_count++];
  memset(added, 0, sizeof *added);
  added->id = kernel->id;
  added->client_id = kernel->client_id;
  added->priority = kernel->priority;
  added->weight = kernel->weight ? kernel->weight : 1;
  added->predicted = kernel->predicted;
  added->remaining = kernel->predicted;
  added->eviction_cost = kernel->eviction_cost;
  added->sms_needed = kernel->sms_needed;
  added->footprint = kernel->footprint;
  added->task_count = kernel->task_count;
  added->arrival = state->now;
  added->state = PREEMPT_KERNEL_READY;
  added->policy.dprr_active_since = -1;
  return PREEMPT_SCHED_OK;
}

uint32_t preempt_sched_sms_wanted(const preempt_sched_state *state, const preempt_sched_kernel *kernel) {
  uint32_t wanted = kernel->sms_needed;
  if (wanted == 0 || wanted > state->gpu.sm_count)
    wanted = state->gpu.sm_count;
  return wanted;
}

void preempt_sched_free_sms(const preempt_sched_state *state, preempt_sm_set *out) {
  preempt_sm_set_clear(out);
  for (uint32_t sm = 0; sm < state->gpu.sm_count; sm++)
    if (state->gpu.sm_owner[sm] == 0)
      preempt_sm_set_add(out, sm);
}

preempt_sched_status preempt_sched_advance(preempt_sched_state *state, preempt_usec now) {
  if (!state || now < state->now)
    return PREEMPT_SCHED_INVALID_ARGUMENT;
  preempt_usec elapsed = now - state->now;
  for (uint32_t i = 0; i < state->kernel_count; i++) {
    preempt_sched_kernel *kernel = &state->kernels[i];
    uint32_t held = preempt_sm_set_count(&kernel->sms);
    if (held > 0) {
      kernel->remaining -= elapsed * held / preempt_sched_sms_wanted(state, kernel);
      if (kernel->remaining < 0)
        kernel->remaining = 0; /* a prediction that was too short: it stays "about to finish" */
    } else if (kernel->state == PREEMPT_KERNEL_READY || kernel->state == PREEMPT_KERNEL_TORUN) {
      kernel->waited += elapsed;
    }
  }
  state->now = now;
  return PREEMPT_SCHED_OK;
}

preempt_sched_status preempt_sched_push(preempt_sched_decisions *out, preempt_sched_action action,
                                        uint32_t kernel_id, const preempt_sm_set *sms_or_null_for_all) {
  if (!out)
    return PREEMPT_SCHED_INVALID_ARGUMENT;
  if (out->count == PREEMPT_SCHED_MAX_DECISIONS)
    return PREEMPT_SCHED_FULL;
  preempt_sched_decision *decision = &out->items[out->count++];
  memset(decision, 0, sizeof *decision);
  decision->action = action;
  decision->kernel_id = kernel_id;
  decision->all_sms = sms_or_null_for_all == NULL;
  if (sms_or_null_for_all)
    decision->sms = *sms_or_null_for_all;
  return PREEMPT_SCHED_OK;
}

preempt_sched_status preempt_sched_push_quota(preempt_sched_decisions *out, uint32_t kernel_id, uint32_t quota) {
  if (!out || quota == 0)
    return PREEMPT_SCHED_INVALID_ARGUMENT;
  preempt_sched_status status = preempt_sched_push(out, PREEMPT_ACTION_QUOTA, kernel_id, NULL);
  if (status == PREEMPT_SCHED_OK)
    out->items[out->count - 1].quota = quota;
  return status;
}

/* The kernel holds this SM beside another quota kernel that owns it. */
static bool shares_sm(const preempt_sched_state *state, const preempt_sched_kernel *kernel, uint32_t sm) {
  return preempt_sm_set_has(&kernel->sms, sm) && state->gpu.sm_owner[sm] != kernel->id;
}

/* The owner of `sm` leaves it: another kernel still holding it (a co-located quota kernel) becomes the owner, so
 * that 0 keeps meaning "nobody here"; draining then follows the new owner. */
static void hand_over_sm(preempt_sched_state *state, uint32_t leaving_id, uint32_t sm) {
  state->gpu.sm_owner[sm] = 0;
  state->gpu.sm_draining[sm] = false;
  for (uint32_t i = 0; i < state->kernel_count; i++) {
    const preempt_sched_kernel *other = &state->kernels[i];
    if (other->id == leaving_id || other->state == PREEMPT_KERNEL_DONE || !preempt_sm_set_has(&other->sms, sm))
      continue;
    state->gpu.sm_owner[sm] = other->id;
    state->gpu.sm_draining[sm] = other->state == PREEMPT_KERNEL_TOEVICT;
    return;
  }
}

/* FlexSched §4.2: every SM, at most `quota` CTAs of the kernel on each. The SMs are shared with the other quota
 * kernels (each holds them all), so only an SM held by a kernel without a quota, or draining, refuses it. */
static preempt_sched_status apply_quota(preempt_sched_state *state, preempt_sched_kernel *kernel,
                                        const preempt_sched_decision *decision) {
  if (decision->quota == 0 || (kernel->state != PREEMPT_KERNEL_READY && kernel->state != PREEMPT_KERNEL_RUNNING))
    return PREEMPT_SCHED_BAD_DECISION;
  for (uint32_t sm = 0; sm < state->gpu.sm_count; sm++) {
    uint32_t owner = state->gpu.sm_owner[sm];
    if (owner == 0 || owner == kernel->id)
      continue;
    const preempt_sched_kernel *holder = preempt_sched_find(state, owner);
    if (!holder || holder->cta_quota == 0 || state->gpu.sm_draining[sm])
      return PREEMPT_SCHED_BAD_DECISION;
  }
  /* A running kernel without a quota that held only some SMs gets the rest too: the quota is per SM, on all. */
  for (uint32_t sm = 0; sm < state->gpu.sm_count; sm++) {
    if (state->gpu.sm_owner[sm] == 0)
      state->gpu.sm_owner[sm] = kernel->id;
    preempt_sm_set_add(&kernel->sms, sm);
  }
  kernel->cta_quota = decision->quota;
  kernel->state = PREEMPT_KERNEL_RUNNING;
  return PREEMPT_SCHED_OK;
}

static preempt_sched_status apply_run(preempt_sched_state *state, preempt_sched_kernel *kernel,
                                      const preempt_sched_decision *decision) {
  if (kernel->state != PREEMPT_KERNEL_READY && kernel->state != PREEMPT_KERNEL_RUNNING)
    return PREEMPT_SCHED_BAD_DECISION;
  /* RUN means full occupancy on its SMs: a kernel under a quota shares every SM already and has none to add. */
  if (kernel->cta_quota != 0)
    return PREEMPT_SCHED_BAD_DECISION;
  preempt_sm_set target;
  if (decision->all_sms) {
    preempt_sm_set_clear(&target);
    for (uint32_t sm = 0; sm < state->gpu.sm_count; sm++)
      preempt_sm_set_add(&target, sm);
  } else {
    target = decision->sms;
  }
  if (preempt_sm_set_count(&target) == 0)
    return PREEMPT_SCHED_BAD_DECISION;
  for (uint32_t sm = 0; sm < PREEMPT_SCHED_MAX_SMS; sm++) {
    if (!preempt_sm_set_has(&target, sm))
      continue;
    if (sm >= state->gpu.sm_count || state->gpu.sm_owner[sm] != 0)
      return PREEMPT_SCHED_BAD_DECISION;
  }
  for (uint32_t sm = 0; sm < state->gpu.sm_count; sm++)
    if (preempt_sm_set_has(&target, sm)) {
      state->gpu.sm_owner[sm] = kernel->id;
      preempt_sm_set_add(&kernel->sms, sm);
    }
  /* TORUN is the daemon's wait for the client's launch; with no client in between it is momentary. */
  kernel->state = PREEMPT_KERNEL_RUNNING;
  return PREEMPT_SCHED_OK;
}

/* A quota kernel leaves every SM at once: its SMs are shared, and a partial eviction would have to say which of
 * the co-located kernels' CTAs go. SMs it owns drain (nothing else is placed there until they are free); SMs it
 * shares stay the owner's, and the kernel's TOEVICT state says it drains there too. */
static preempt_sched_status evict_quota_kernel(preempt_sched_state *state, preempt_sched_kernel *kernel,
                                               const preempt_sched_decision *decision) {
  if (!decision->all_sms)
    return PREEMPT_SCHED_BAD_DECISION;
  for (uint32_t sm = 0; sm < state->gpu.sm_count; sm++)
    if (state->gpu.sm_owner[sm] == kernel->id)
      state->gpu.sm_draining[sm] = true;
  kernel->state = PREEMPT_KERNEL_TOEVICT;
  return PREEMPT_SCHED_OK;
}

static preempt_sched_status apply_evict(preempt_sched_state *state, preempt_sched_kernel *kernel,
                                        const preempt_sched_decision *decision) {
  if (kernel->state != PREEMPT_KERNEL_RUNNING)
    return PREEMPT_SCHED_BAD_DECISION;
  if (kernel->cta_quota != 0)
    return evict_quota_kernel(state, kernel, decision);
  uint32_t marked = 0, still_working = 0;
  for (uint32_t sm = 0; sm < state->gpu.sm_count; sm++) {
    if (!preempt_sm_set_has(&kernel->sms, sm))
      continue;
    bool evict_this = decision->all_sms || preempt_sm_set_has(&decision->sms, sm);
    if (evict_this && !state->gpu.sm_draining[sm]) {
      state->gpu.sm_draining[sm] = true;
      marked++;
    }
    if (!state->gpu.sm_draining[sm])
      still_working++;
  }
  if (!decision->all_sms) {
    for (uint32_t sm = 0; sm < PREEMPT_SCHED_MAX_SMS; sm++)
      if (preempt_sm_set_has(&decision->sms, sm) && !preempt_sm_set_has(&kernel->sms, sm))
        return PREEMPT_SCHED_BAD_DECISION; /* names an SM the kernel does not hold */
  }
  if (marked == 0)
    return PREEMPT_SCHED_BAD_DECISION;
  if (still_working == 0) {
    kernel->state = PREEMPT_KERNEL_TOEVICT;
    /* Time-slicing: the next client's context gets the GPU while these CTAs leave in their own slices, so the SMs
     * are free now; preempt_sched_eviction_done then only makes the kernel READY. */
    if (state->gpu.time_slicing) {
      for (uint32_t sm = 0; sm < state->gpu.sm_count; sm++)
        if (state->gpu.sm_owner[sm] == kernel->id)
          hand_over_sm(state, kernel->id, sm);
      preempt_sm_set_clear(&kernel->sms);
    }
  }
  return PREEMPT_SCHED_OK;
}

preempt_sched_status preempt_sched_apply(preempt_sched_state *state, const preempt_sched_decision *decision) {
  if (!state || !decision)
    return PREEMPT_SCHED_INVALID_ARGUMENT;
  if (decision->action == PREEMPT_ACTION_NOTHING)
    return PREEMPT_SCHED_OK;
  preempt_sched_kernel *kernel = preempt_sched_find(state, decision->kernel_id);
  if (!kernel)
    return PREEMPT_SCHED_UNKNOWN_KERNEL;
  switch (decision->action) {
  case PREEMPT_ACTION_RUN: return apply_run(state, kernel, decision);
  case PREEMPT_ACTION_EVICT: return apply_evict(state, kernel, decision);
  case PREEMPT_ACTION_QUOTA: return apply_quota(state, kernel, decision);
  default: return PREEMPT_SCHED_INVALID_ARGUMENT;
  }
}

preempt_sched_status preempt_sched_eviction_done(preempt_sched_state *state, uint32_t kernel_id) {
  preempt_sched_kernel *kernel = preempt_sched_find(state, kernel_id);
  if (!kernel)
    return PREEMPT_SCHED_UNKNOWN_KERNEL;
  bool released = false;
  for (uint32_t sm = 0; sm < state->gpu.sm_count; sm++) {
    bool owned_draining = state->gpu.sm_owner[sm] == kernel_id && state->gpu.sm_draining[sm];
    /* A quota kernel's full eviction also leaves the SMs it shared with their owner. */
    bool shared_left = kernel->state == PREEMPT_KERNEL_TOEVICT && shares_sm(state, kernel, sm);
    if (!owned_draining && !shared_left)
      continue;
    if (owned_draining)
      hand_over_sm(state, kernel_id, sm);
    kernel->sms.bits[sm / 64] &= ~(UINT64_C(1) << (sm % 64));
    released = true;
  }
  /* Time-slicing released a full eviction's SMs when it was decided (apply_evict); whatever the GPU's mode is
   * now, a kernel leaving every SM that holds none is that case. */
  bool released_at_decision = kernel->state == PREEMPT_KERNEL_TOEVICT && preempt_sm_set_count(&kernel->sms) == 0;
  if (!released && !released_at_decision)
    return PREEMPT_SCHED_BAD_DECISION;
  kernel->evictions++;
  if (preempt_sm_set_count(&kernel->sms) == 0) {
    kernel->state = PREEMPT_KERNEL_READY;
    kernel->cta_quota = 0; /* evicted: the next decision about it says how it runs again */
  }
  return PREEMPT_SCHED_OK;
}

preempt_sched_status preempt_sched_complete(preempt_sched_state *state, uint32_t kernel_id) {
  preempt_sched_kernel *kernel = preempt_sched_find(state, kernel_id);
  if (!kernel)
    return PREEMPT_SCHED_UNKNOWN_KERNEL;
  for (uint32_t sm = 0; sm < state->gpu.sm_count; sm++)
    if (state->gpu.sm_owner[sm] == kernel_id)
      hand_over_sm(state, kernel_id, sm);
  preempt_sm_set_clear(&kernel->sms);
  kernel->cta_quota = 0;
  kernel->remaining = 0;
  kernel->state = PREEMPT_KERNEL_DONE;
  return PREEMPT_SCHED_OK;
}

preempt_sched_status preempt_sched_remove_kernel(preempt_sched_state *state, uint32_t kernel_id) {
  preempt_sched_kernel *kernel = preempt_sched_find(state, kernel_id);
  if (!kernel)
    return PREEMPT_SCHED_UNKNOWN_KERNEL;
  /* Only DONE: a kernel in any other state holds SMs or waits for them, and removing it would leave
   * sm_owner naming a kernel that no longer exists. */
  if (kernel->state != PREEMPT_KERNEL_DONE)
    return PREEMPT_SCHED_BAD_DECISION;
  /* Order kept: policies break ties by table order (preempt_sched_ready_in_order is stable). */
  uint32_t index = (uint32_t)(kernel - state->kernels);
  memmove(kernel, kernel + 1, (state->kernel_count - index - 1) * sizeof *kernel);
  state->kernel_count--;
  return PREEMPT_SCHED_OK;
}

/* --- helpers for the policy files (schedule_internal.h) --- */

int preempt_sched_by_priority_then_arrival(const preempt_sched_state *state, const preempt_sched_kernel *a,
                                           const preempt_sched_kernel *b) {
  (void)state;
  if (a->priority != b->priority)
    return a->priority > b->priority ? -1 : 1;
  if (a->arrival != b->arrival)
    return a->arrival < b->arrival ? -1 : 1;
  return a->id < b->id ? -1 : a->id > b->id;
}

uint32_t preempt_sched_ready_in_order(const preempt_sched_state *state, preempt_sched_order_fn order,
                                      uint32_t indices[PREEMPT_SCHED_MAX_KERNELS]) {
  uint32_t count = 0;
  for (uint32_t i = 0; i < state->kernel_count; i++) {
    if (state->kernels[i].state != PREEMPT_KERNEL_READY)
      continue;
    /* Insertion sort: at most a few hundred kernels, and stable for equal keys. */
    uint32_t at = count++;
    while (at > 0 && order(state, &state->kernels[i], &state->kernels[indices[at - 1]]) < 0) {
      indices[at] = indices[at - 1];
      at--;
    }
    indices[at] = i;
  }
  return count;
}

preempt_sched_status preempt_sched_start_in_order(preempt_sched_state *state, const uint32_t *order,
                                                  uint32_t count, preempt_sm_set *claimed,
                                                  preempt_sched_decisions *out, uint32_t *first_unplaced) {
  uint32_t position = 0;
  for (; position < count; position++) {
    const preempt_sched_kernel *kernel = &state->kernels[order[position]];
    if (preempt_sched_other_client_holds(state, kernel->client_id, out))
      break;
    uint32_t wanted = preempt_sched_sms_wanted(state, kernel);
    preempt_sm_set free, chosen;
    preempt_sched_free_sms(state, &free);
    preempt_sm_set_clear(&chosen);
    uint32_t found = 0;
    for (uint32_t sm = 0; sm < state->gpu.sm_count && found < wanted; sm++)
      if (preempt_sm_set_has(&free, sm) && !preempt_sm_set_has(claimed, sm)) {
        preempt_sm_set_add(&chosen, sm);
        found++;
      }
    if (found < wanted)
      break;
    preempt_sched_status status =
        preempt_sched_push(out, PREEMPT_ACTION_RUN, kernel->id, wanted == state->gpu.sm_count ? NULL : &chosen);
    if (status != PREEMPT_SCHED_OK)
      return status;
    for (unsigned word = 0; word < PREEMPT_SCHED_MAX_SMS / 64; word++)
      claimed->bits[word] |= chosen.bits[word];
  }
  if (first_unplaced)
    *first_unplaced = position;
  if (position < count)
    return PREEMPT_SCHED_OK;
  /* Nobody waits: a kernel that lost SMs to a spatial eviction gets idle ones
   * back (the runtime's resume refills evicted SMs, docs/preemption.md). */
  for (uint32_t i = 0; i < state->kernel_count; i++) {
    const preempt_sched_kernel *kernel = &state->kernels[i];
    if (kernel->state != PREEMPT_KERNEL_RUNNING)
      continue;
    uint32_t held = preempt_sm_set_count(&kernel->sms), wanted = preempt_sched_sms_wanted(state, kernel);
    bool draining = false;
    for (uint32_t sm = 0; sm < state->gpu.sm_count; sm++)
      draining |= state->gpu.sm_owner[sm] == kernel->id && state->gpu.sm_draining[sm];
    if (held >= wanted || draining)
      continue;
    preempt_sm_set free, chosen;
    preempt_sched_free_sms(state, &free);
    preempt_sm_set_clear(&chosen);
    for (uint32_t sm = 0; sm < state->gpu.sm_count && held < wanted; sm++)
      if (preempt_sm_set_has(&free, sm) && !preempt_sm_set_has(claimed, sm)) {
        preempt_sm_set_add(&chosen, sm);
        preempt_sm_set_add(claimed, sm);
        held++;
      }
    if (preempt_sm_set_count(&chosen) == 0)
      continue;
    preempt_sched_status status = preempt_sched_push(out, PREEMPT_ACTION_RUN, kernel->id, &chosen);
    if (status != PREEMPT_SCHED_OK)
      return status;
  }
  return PREEMPT_SCHED_OK;
}

bool preempt_sched_other_client_holds(const preempt_sched_state *state, uint32_t client_id,
                                      const preempt_sched_decisions *out) {
  if (!state->gpu.time_slicing)
    return false;
  for (uint32_t i = 0; i < state->kernel_count; i++) {
    const preempt_sched_kernel *other = &state->kernels[i];
    if (other->client_id != client_id && other->state != PREEMPT_KERNEL_DONE && preempt_sm_set_count(&other->sms) > 0)
      return true;
  }
  /* Kernels this decision already starts hold SMs too once it is applied. */
  if (out)
    for (uint32_t d = 0; d < out->count; d++) {
      const preempt_sched_kernel *started = NULL;
      for (uint32_t i = 0; i < state->kernel_count && !started; i++)
        if (state->kernels[i].id == out->items[d].kernel_id)
          started = &state->kernels[i];
      if (out->items[d].action == PREEMPT_ACTION_RUN && started && started->client_id != client_id)
        return true;
    }
  return false;
}

uint32_t preempt_sched_draining_count(const preempt_sched_state *state) {
  uint32_t count = 0;
  for (uint32_t sm = 0; sm < state->gpu.sm_count; sm++)
    count += state->gpu.sm_owner[sm] != 0 && state->gpu.sm_draining[sm];
  return count;
}

uint32_t preempt_sched_working_sms(const preempt_sched_state *state, const preempt_sched_kernel *kernel) {
  uint32_t count = 0;
  for (uint32_t sm = 0; sm < state->gpu.sm_count; sm++)
    count += state->gpu.sm_owner[sm] == kernel->id && !state->gpu.sm_draining[sm];
  return count;
}

bool preempt_sched_any_ready_other_than(const preempt_sched_state *state, uint32_t except_id) {
  for (uint32_t i = 0; i < state->kernel_count; i++)
    if (state->kernels[i].state == PREEMPT_KERNEL_READY && state->kernels[i].id != except_id)
      return true;
  return false;
}

preempt_sched_kernel *preempt_sched_next_expired(preempt_sched_state *state, uint32_t *index) {
  for (; *index < state->kernel_count; (*index)++) {
    preempt_sched_kernel *kernel = &state->kernels[*index];
    if (kernel->state == PREEMPT_KERNEL_RUNNING && kernel->policy.slice_end > 0 &&
        kernel->policy.slice_end <= state->now + 1e-6)
      return kernel;
  }
  return NULL;
}

preempt_sched_status preempt_sched_evict_if_others_wait(preempt_sched_state *state, preempt_sched_kernel *kernel,
                                                        preempt_sched_decisions *out, bool *evicted) {
  *evicted = preempt_sched_any_ready_other_than(state, kernel->id);
  return *evicted ? preempt_sched_push(out, PREEMPT_ACTION_EVICT, kernel->id, NULL) : PREEMPT_SCHED_OK;
}
