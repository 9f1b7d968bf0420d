/* test_schedule_policies.c: decisions of FIFO, HPF, PIV, DPRR and FFS on small hand-built GPU states.
 * FLEP §5.2 and Fig. 6 (HPF, FFS), §6.4 (spatial); EffiSha §7 (PIV, DPRR). */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "preempt/schedule.h"

static preempt_sched_state state;

static void fresh(uint32_t sm_count) {
  preempt_sched_params params;
  preempt_sched_params_default(&params);
  CHECK(preempt_sched_state_init(&state, sm_count, &params) == PREEMPT_SCHED_OK);
}

static void arrive(uint32_t id, int32_t priority, double predicted, double cost, uint32_t sms) {
  preempt_sched_kernel kernel;
  memset(&kernel, 0, sizeof kernel);
  kernel.id = id;
  kernel.client_id = id;
  kernel.priority = priority;
  kernel.weight = 1;
  kernel.predicted = predicted;
  kernel.eviction_cost = cost;
  kernel.sms_needed = sms;
  CHECK(preempt_sched_add_kernel(&state, &kernel) == PREEMPT_SCHED_OK);
}

/* Calls the policy and applies what it decided, as the simulator and the daemon do. */
static preempt_sched_decisions decide(const preempt_sched_policy *policy, preempt_sched_event_kind kind, uint32_t id) {
  preempt_sched_decisions out;
  memset(&out, 0, sizeof out);
  preempt_sched_event event = {kind, id};
  CHECK(policy->decide(&state, &event, &out) == PREEMPT_SCHED_OK);
  for (uint32_t d = 0; d < out.count; d++)
    CHECK(preempt_sched_apply(&state, &out.items[d]) == PREEMPT_SCHED_OK);
  return out;
}

static void expect(const preempt_sched_decisions *out, uint32_t index, preempt_sched_action action, uint32_t id,
                   bool all_sms, uint32_t sm_count_in_set) {
  CHECK(index < out->count);
  if (index >= out->count)
    return;
  CHECK_EQ_U64(out->items[index].action, action);
  CHECK_EQ_U64(out->items[index].kernel_id, id);
  CHECK_EQ_U64(out->items[index].all_sms, all_sms);
  if (!all_sms)
    CHECK_EQ_U64(preempt_sm_set_count(&out->items[index].sms), sm_count_in_set);
}

static void test_fifo_never_preempts(void) {
  fresh(4);
  arrive(1, 0, 1000, 10, 0);
  preempt_sched_decisions out = decide(&preempt_policy_fifo, PREEMPT_EVENT_ARRIVAL, 1);
  CHECK_EQ_U64(out.count, 1);
  expect(&out, 0, PREEMPT_ACTION_RUN, 1, true, 0);
  /* A far more urgent kernel still waits: the baseline has no preemption. */
  state.now = 10;
  arrive(2, 99, 10, 10, 0);
  out = decide(&preempt_policy_fifo, PREEMPT_EVENT_ARRIVAL, 2);
  CHECK_EQ_U64(out.count, 0);
  /* Head-of-line: kernel 3 (1 SM) cannot pass kernel 2 even once SMs free up partly. */
  CHECK(preempt_sched_complete(&state, 1) == PREEMPT_SCHED_OK);
  out = decide(&preempt_policy_fifo, PREEMPT_EVENT_COMPLETION, 1);
  CHECK_EQ_U64(out.count, 1);
  expect(&out, 0, PREEMPT_ACTION_RUN, 2, true, 0);
}

static void test_hpf_higher_priority_preempts(void) {
  fresh(4);
  arrive(1, 0, 1000, 10, 0);
  decide(&preempt_policy_hpf, PREEMPT_EVENT_ARRIVAL, 1);
  arrive(2, 5, 100, 10, 0); /* needs every SM: temporal eviction */
  preempt_sched_decisions out = decide(&preempt_policy_hpf, PREEMPT_EVENT_ARRIVAL, 2);
  CHECK_EQ_U64(out.count, 1);
  expect(&out, 0, PREEMPT_ACTION_EVICT, 1, true, 0);
  CHECK_EQ_U64(preempt_sched_find(&state, 1)->state, PREEMPT_KERNEL_TOEVICT);
  /* While kernel 1 drains, another event must not evict again or run anything. */
  arrive(3, 1, 50, 10, 0);
  out = decide(&preempt_policy_hpf, PREEMPT_EVENT_ARRIVAL, 3);
  CHECK_EQ_U64(out.count, 0);
  CHECK(preempt_sched_eviction_done(&state, 1) == PREEMPT_SCHED_OK);
  out = decide(&preempt_policy_hpf, PREEMPT_EVENT_EVICTION_DONE, 1);
  CHECK_EQ_U64(out.count, 1);
  expect(&out, 0, PREEMPT_ACTION_RUN, 2, true, 0);
  /* Kernel 2 done: priority 1 (kernel 3) goes before priority 0 (kernel 1). */
  CHECK(preempt_sched_complete(&state, 2) == PREEMPT_SCHED_OK);
  out = decide(&preempt_policy_hpf, PREEMPT_EVENT_COMPLETION, 2);
  CHECK_EQ_U64(out.count, 1);
  expect(&out, 0, PREEMPT_ACTION_RUN, 3, true, 0);
  /* A lower-priority arrival never preempts. */
  arrive(4, 0, 1, 0, 0);
  out = decide(&preempt_policy_hpf, PREEMPT_EVENT_ARRIVAL, 4);
  CHECK_EQ_U64(out.count, 0);
}

static void test_hpf_spatial(void) {
  /* Kernel 2 fits on 1 of the 4 SMs: evicting that one costs 1/4 of kernel 1's
   * whole-GPU eviction cost, so HPF evicts only SM 3 (the highest kernel 1 holds). */
  fresh(4);
  arrive(1, 0, 1000, 40, 0);
  decide(&preempt_policy_hpf, PREEMPT_EVENT_ARRIVAL, 1);
  arrive(2, 5, 100, 10, 1);
  preempt_sched_decisions out = decide(&preempt_policy_hpf, PREEMPT_EVENT_ARRIVAL, 2);
  CHECK_EQ_U64(out.count, 1);
  expect(&out, 0, PREEMPT_ACTION_EVICT, 1, false, 1);
  CHECK(preempt_sm_set_has(&out.items[0].sms, 3));
  CHECK_EQ_U64(preempt_sched_find(&state, 1)->state, PREEMPT_KERNEL_RUNNING); /* 3 SMs keep working */
  CHECK(preempt_sched_eviction_done(&state, 1) == PREEMPT_SCHED_OK);
  out = decide(&preempt_policy_hpf, PREEMPT_EVENT_EVICTION_DONE, 1);
  CHECK_EQ_U64(out.count, 1);
  expect(&out, 0, PREEMPT_ACTION_RUN, 2, false, 1);
  CHECK(preempt_sm_set_has(&out.items[0].sms, 3));

  /* The same with spatial eviction turned off: every SM. */
  fresh(4);
  state.params.hpf_spatial = false;
  arrive(1, 0, 1000, 40, 0);
  decide(&preempt_policy_hpf, PREEMPT_EVENT_ARRIVAL, 1);
  arrive(2, 5, 100, 10, 1);
  out = decide(&preempt_policy_hpf, PREEMPT_EVENT_ARRIVAL, 2);
  CHECK_EQ_U64(out.count, 1);
  expect(&out, 0, PREEMPT_ACTION_EVICT, 1, true, 0);

  /* Idle SMs are used before anything is evicted: kernel 1 holds 2 of 4. */
  fresh(4);
  arrive(1, 0, 1000, 40, 2);
  decide(&preempt_policy_hpf, PREEMPT_EVENT_ARRIVAL, 1);
  arrive(2, 5, 100, 10, 2);
  out = decide(&preempt_policy_hpf, PREEMPT_EVENT_ARRIVAL, 2);
  CHECK_EQ_U64(out.count, 1);
  expect(&out, 0, PREEMPT_ACTION_RUN, 2, false, 2);
}

static void test_hpf_equal_priority_shortest_remaining(void) {
  /* Fig. 6 lines 22-34: preempt an equal-priority kernel only when its T_r
   * exceeds the waiting kernel's T_r plus the preemption overhead. Kernel 1 has
   * T_r 1000 and cost 100; a newcomer with T_r 500 wins (1000 > 600)... */
  fresh(4);
  arrive(1, 0, 1000, 100, 0);
  decide(&preempt_policy_hpf, PREEMPT_EVENT_ARRIVAL, 1);
  arrive(2, 0, 500, 100, 0);
  preempt_sched_decisions out = decide(&preempt_policy_hpf, PREEMPT_EVENT_ARRIVAL, 2);
  CHECK_EQ_U64(out.count, 1);
  expect(&out, 0, PREEMPT_ACTION_EVICT, 1, true, 0);
  /* ...one with T_r 950 does not (1000 > 1050 is false). */
  fresh(4);
  arrive(1, 0, 1000, 100, 0);
  decide(&preempt_policy_hpf, PREEMPT_EVENT_ARRIVAL, 1);
  arrive(2, 0, 950, 100, 0);
  out = decide(&preempt_policy_hpf, PREEMPT_EVENT_ARRIVAL, 2);
  CHECK_EQ_U64(out.count, 0);
  /* After kernel 1 ran 600 us its T_r is 400: still not worth it. */
  CHECK(preempt_sched_advance(&state, 600) == PREEMPT_SCHED_OK);
  CHECK(preempt_sched_find(&state, 1)->remaining > 399.9 && preempt_sched_find(&state, 1)->remaining < 400.1);
  CHECK(preempt_sched_find(&state, 2)->waited > 599.9);
  out = decide(&preempt_policy_hpf, PREEMPT_EVENT_TIMER, 0);
  CHECK_EQ_U64(out.count, 0);
}

static void test_piv(void) {
  fresh(4);
  arrive(1, 1, 1000, 10, 0);
  decide(&preempt_policy_piv, PREEMPT_EVENT_ARRIVAL, 1);
  /* Equal priority: unlike HPF, PIV never looks at remaining time. */
  arrive(2, 1, 1, 0, 0);
  preempt_sched_decisions out = decide(&preempt_policy_piv, PREEMPT_EVENT_ARRIVAL, 2);
  CHECK_EQ_U64(out.count, 0);
  /* Higher priority: immediate eviction, whole GPU even for a 1-SM kernel. */
  arrive(3, 3, 100, 10, 1);
  out = decide(&preempt_policy_piv, PREEMPT_EVENT_ARRIVAL, 3);
  CHECK_EQ_U64(out.count, 1);
  expect(&out, 0, PREEMPT_ACTION_EVICT, 1, true, 0);
  CHECK(preempt_sched_eviction_done(&state, 1) == PREEMPT_SCHED_OK);
  /* Kernel 3 takes SM 0; kernels 1 and 2 (priority 1) need the whole GPU and wait. */
  out = decide(&preempt_policy_piv, PREEMPT_EVENT_EVICTION_DONE, 1);
  CHECK_EQ_U64(out.count, 1);
  expect(&out, 0, PREEMPT_ACTION_RUN, 3, false, 1);
  CHECK(preempt_sched_complete(&state, 3) == PREEMPT_SCHED_OK);
  /* Equal priorities keep arrival order: kernel 1 (arrived at 0) before kernel 2. */
  out = decide(&preempt_policy_piv, PREEMPT_EVENT_COMPLETION, 3);
  CHECK_EQ_U64(out.count, 1);
  expect(&out, 0, PREEMPT_ACTION_RUN, 1, true, 0);
}

static void test_dprr(void) {
  fresh(4);
  /* Priority 3: slice (3 + 1) / 2 ms = 2000 us, so the policy asks for a timer at 2000. */
  arrive(1, 3, 10000, 10, 0);
  preempt_sched_decisions out = decide(&preempt_policy_dprr, PREEMPT_EVENT_ARRIVAL, 1);
  expect(&out, 0, PREEMPT_ACTION_RUN, 1, true, 0);
  CHECK(out.timer_at > 1999.9 && out.timer_at < 2000.1);
  /* Kernels 2 (priority 0, arrives at 0) and 3 (priority 2, arrives at 1500) wait. */
  arrive(2, 0, 10000, 10, 0);
  decide(&preempt_policy_dprr, PREEMPT_EVENT_ARRIVAL, 2);
  preempt_sched_advance(&state, 1500);
  arrive(3, 2, 10000, 10, 0);
  out = decide(&preempt_policy_dprr, PREEMPT_EVENT_ARRIVAL, 3);
  CHECK_EQ_U64(out.count, 0); /* no preemption on arrival in DPRR */
  /* At 2000 the quota expires with others waiting: evicted to the inactive queue. */
  preempt_sched_advance(&state, 2000);
  out = decide(&preempt_policy_dprr, PREEMPT_EVENT_TIMER, 0);
  CHECK_EQ_U64(out.count, 1);
  expect(&out, 0, PREEMPT_ACTION_EVICT, 1, true, 0);
  CHECK_EQ_U64(preempt_sched_find(&state, 1)->policy.dprr_queue, 1);
  /* At 3100: kernel 2 waited 3.1 ms -> 0 + 3 = 3; kernel 3 waited 1.6 ms -> 2 + 1 = 3.
   * Tie on dynamic priority: earlier arrival (kernel 2) first. At 2900 kernel 2
   * would have had 2 < 3 and lost: ageing is what lets priority 0 go first. */
  preempt_sched_advance(&state, 3100);
  CHECK(preempt_sched_eviction_done(&state, 1) == PREEMPT_SCHED_OK);
  out = decide(&preempt_policy_dprr, PREEMPT_EVENT_EVICTION_DONE, 1);
  CHECK_EQ_U64(out.count, 1);
  expect(&out, 0, PREEMPT_ACTION_RUN, 2, true, 0);
  /* Priority 0: slice 0.5 ms. */
  CHECK(out.timer_at > 3599.9 && out.timer_at < 3600.1);
  /* 3600: kernel 2 expires; kernel 3 (active) is next, kernel 1 is inactive. */
  preempt_sched_advance(&state, 3600);
  out = decide(&preempt_policy_dprr, PREEMPT_EVENT_TIMER, 0);
  expect(&out, 0, PREEMPT_ACTION_EVICT, 2, true, 0);
  CHECK(preempt_sched_eviction_done(&state, 2) == PREEMPT_SCHED_OK);
  out = decide(&preempt_policy_dprr, PREEMPT_EVENT_EVICTION_DONE, 2);
  expect(&out, 0, PREEMPT_ACTION_RUN, 3, true, 0);
  /* Kernel 3 finishes: the active queue is empty, the queues swap; kernel 1
   * (priority 3) beats kernel 2 (priority 0), both reset to static priority. */
  CHECK(preempt_sched_complete(&state, 3) == PREEMPT_SCHED_OK);
  out = decide(&preempt_policy_dprr, PREEMPT_EVENT_COMPLETION, 3);
  CHECK_EQ_U64(out.count, 1);
  expect(&out, 0, PREEMPT_ACTION_RUN, 1, true, 0);
  CHECK_EQ_U64(preempt_sched_find(&state, 2)->policy.dprr_queue, 0);
}

static void test_ffs(void) {
  /* Weights 2 and 1, eviction cost 100 each, max_overhead 10%:
   * T = (100 + 100) / (0.10 * (2 + 1)) = 666.67 us; kernel 1's epoch is 2T = 1333.33. */
  fresh(4);
  arrive(1, 0, 100000, 100, 0);
  state.kernels[0].weight = 2;
  preempt_sched_decisions out = decide(&preempt_policy_ffs, PREEMPT_EVENT_ARRIVAL, 1);
  expect(&out, 0, PREEMPT_ACTION_RUN, 1, true, 0);
  arrive(2, 0, 100000, 100, 0);
  out = decide(&preempt_policy_ffs, PREEMPT_EVENT_ARRIVAL, 2);
  CHECK_EQ_U64(out.count, 0);
  /* Kernel 1 started when it was alone (T = 100 / (0.1 * 2) = 500, epoch 1000):
   * the epoch is fixed at dispatch, so its timer is at 1000. */
  CHECK(out.timer_at > 999.9 && out.timer_at < 1000.1);
  preempt_sched_advance(&state, 1000);
  out = decide(&preempt_policy_ffs, PREEMPT_EVENT_TIMER, 0);
  CHECK_EQ_U64(out.count, 1);
  expect(&out, 0, PREEMPT_ACTION_EVICT, 1, true, 0);
  preempt_sched_advance(&state, 1100);
  CHECK(preempt_sched_eviction_done(&state, 1) == PREEMPT_SCHED_OK);
  out = decide(&preempt_policy_ffs, PREEMPT_EVENT_EVICTION_DONE, 1);
  expect(&out, 0, PREEMPT_ACTION_RUN, 2, true, 0);
  CHECK(out.timer_at > 1766.6 && out.timer_at < 1766.7); /* 1100 + T * 1 */
  /* A larger max_overhead means shorter epochs: 20% halves T. */
  preempt_sched_advance(&state, 1200);
  state.params.max_overhead = 0.20;
  preempt_sched_find(&state, 2)->policy.slice_end = 1200; /* force the epoch end now */
  out = decide(&preempt_policy_ffs, PREEMPT_EVENT_TIMER, 0);
  expect(&out, 0, PREEMPT_ACTION_EVICT, 2, true, 0);
  CHECK(preempt_sched_eviction_done(&state, 2) == PREEMPT_SCHED_OK);
  out = decide(&preempt_policy_ffs, PREEMPT_EVENT_EVICTION_DONE, 2);
  expect(&out, 0, PREEMPT_ACTION_RUN, 1, true, 0);
  CHECK(out.timer_at > 1200 + 666.6 && out.timer_at < 1200 + 666.7); /* T = 333.33, weight 2 */
  /* max_overhead outside (0, 1) is refused. */
  state.params.max_overhead = 0;
  preempt_sched_event tick = {PREEMPT_EVENT_TIMER, 0};
  CHECK(preempt_policy_ffs.decide(&state, &tick, &out) == PREEMPT_SCHED_INVALID_ARGUMENT);
}

static void test_errors(void) {
  const preempt_sched_policy *policy = NULL;
  CHECK(preempt_sched_policy_by_name("hpf", &policy) == PREEMPT_SCHED_OK && policy == &preempt_policy_hpf);
  CHECK(preempt_sched_policy_by_name("sjf", &policy) == PREEMPT_SCHED_UNKNOWN_POLICY);
  CHECK(preempt_sched_state_init(&state, 0, NULL) == PREEMPT_SCHED_INVALID_ARGUMENT);
  CHECK(preempt_sched_state_init(&state, PREEMPT_SCHED_MAX_SMS + 1, NULL) == PREEMPT_SCHED_INVALID_ARGUMENT);
  fresh(2);
  arrive(1, 0, 10, 1, 0);
  preempt_sched_kernel duplicate = state.kernels[0];
  CHECK(preempt_sched_add_kernel(&state, &duplicate) == PREEMPT_SCHED_INVALID_ARGUMENT);
  /* Evicting a kernel that is not running, or running on a busy SM, is refused. */
  preempt_sched_decision evict = {PREEMPT_ACTION_EVICT, 1, true, {{0}}};
  CHECK(preempt_sched_apply(&state, &evict) == PREEMPT_SCHED_BAD_DECISION);
  preempt_sched_decision run = {PREEMPT_ACTION_RUN, 1, true, {{0}}};
  CHECK(preempt_sched_apply(&state, &run) == PREEMPT_SCHED_OK);
  arrive(2, 0, 10, 1, 1);
  preempt_sched_decision run_busy = {PREEMPT_ACTION_RUN, 2, true, {{0}}};
  CHECK(preempt_sched_apply(&state, &run_busy) == PREEMPT_SCHED_BAD_DECISION);
  preempt_sched_decision unknown = {PREEMPT_ACTION_RUN, 77, true, {{0}}};
  CHECK(preempt_sched_apply(&state, &unknown) == PREEMPT_SCHED_UNKNOWN_KERNEL);
  CHECK(preempt_sched_eviction_done(&state, 1) == PREEMPT_SCHED_BAD_DECISION); /* nothing draining */
  CHECK(preempt_sched_advance(&state, -1) == PREEMPT_SCHED_INVALID_ARGUMENT);
}

/* A long-lived caller (the daemon) drops finished kernels so the fixed-size table never fills. */
static void test_remove_kernel(void) {
  fresh(4);
  arrive(1, 0, 100, 1, 0);
  arrive(2, 0, 100, 1, 0);
  arrive(3, 0, 100, 1, 0);
  preempt_sched_decisions out = decide(&preempt_policy_fifo, PREEMPT_EVENT_ARRIVAL, 1);
  expect(&out, 0, PREEMPT_ACTION_RUN, 1, true, 0);
  /* Not DONE: it holds every SM, so removing it would leave the SMs owned by nobody known. */
  CHECK(preempt_sched_remove_kernel(&state, 1) == PREEMPT_SCHED_BAD_DECISION);
  CHECK(preempt_sched_remove_kernel(&state, 2) == PREEMPT_SCHED_BAD_DECISION); /* READY */
  CHECK(preempt_sched_remove_kernel(&state, 9) == PREEMPT_SCHED_UNKNOWN_KERNEL);
  CHECK(preempt_sched_complete(&state, 1) == PREEMPT_SCHED_OK);
  CHECK(preempt_sched_remove_kernel(&state, 1) == PREEMPT_SCHED_OK);
  CHECK_EQ_U64(state.kernel_count, 2);
  CHECK(preempt_sched_find(&state, 1) == NULL);
  /* The others keep their order, so FIFO still starts 2 before 3. */
  CHECK_EQ_U64(state.kernels[0].id, 2);
  CHECK_EQ_U64(state.kernels[1].id, 3);
  out = decide(&preempt_policy_fifo, PREEMPT_EVENT_COMPLETION, 1);
  expect(&out, 0, PREEMPT_ACTION_RUN, 2, true, 0);
  /* Removing frees the slot: the table takes PREEMPT_SCHED_MAX_KERNELS arrivals again. */
  fresh(1);
  for (uint32_t id = 1; id <= PREEMPT_SCHED_MAX_KERNELS; id++)
    arrive(id, 0, 10, 1, 0);
  preempt_sched_kernel extra = state.kernels[0];
  extra.id = 1000;
  CHECK(preempt_sched_add_kernel(&state, &extra) == PREEMPT_SCHED_FULL);
  CHECK(preempt_sched_complete(&state, 7) == PREEMPT_SCHED_OK);
  CHECK(preempt_sched_remove_kernel(&state, 7) == PREEMPT_SCHED_OK);
  CHECK(preempt_sched_add_kernel(&state, &extra) == PREEMPT_SCHED_OK);
  CHECK(preempt_sched_find(&state, 1000) == &state.kernels[PREEMPT_SCHED_MAX_KERNELS - 1]);
}

/* preempt_sched_params_set: what preempt-sim's "param NAME=VALUE" and preemptd's --param accept. */
static preempt_sched_params params_default(void) {
  preempt_sched_params params;
  preempt_sched_params_default(&params);
  return params;
}

/* Accepted, and only the named field changed. */
static void param_ok(const char *name, const char *value, preempt_sched_params expected) {
  preempt_sched_params params = params_default();
  const char *why = "unset";
  preempt_sched_status status = preempt_sched_params_set(&params, name, value, &why);
  if (status != PREEMPT_SCHED_OK || why != NULL || memcmp(&params, &expected, sizeof params) != 0) {
    fprintf(stderr, "param %s=%s: status %d, why %s\n", name, value, (int)status, why ? why : "(null)");
    CHECK(!"param accepted as expected");
  }
}

/* Refused with this status and message; the parameters untouched. */
static void param_bad(const char *name, const char *value, preempt_sched_status expected_status,
                      const char *expected_why) {
  preempt_sched_params params = params_default(), before = params;
  const char *why = NULL;
  preempt_sched_status status = preempt_sched_params_set(&params, name, value, &why);
  if (status != expected_status || !why || strcmp(why, expected_why) != 0 ||
      memcmp(&params, &before, sizeof params) != 0) {
    fprintf(stderr, "param %s=%s: status %d, why %s\n", name ? name : "(null)", value ? value : "(null)",
            (int)status, why ? why : "(null)");
    CHECK(!"param refused as expected");
  }
}

static void test_params_set(void) {
  static const char overhead[] = "max_overhead must be a number between 0 and 1 (exclusive), got";
  static const char spatial[] = "hpf_spatial must be 0 or 1, got";
  static const char cap[] = "dprr_age_cap must be an integer 0..1000, got";
  static const char time_message[] = "expected a time greater than 0, got";
  preempt_sched_params expected;

  /* The defaults are the papers' values (FLEP §6.3.3, §6.4; EffiSha §7). */
  expected = params_default();
  CHECK(expected.max_overhead == 0.10 && expected.ffs_min_epoch == 100.0 && expected.hpf_spatial);
  CHECK(expected.dprr_age_step == 1000.0 && expected.dprr_age_cap == 20 && expected.dprr_slice_unit == 500.0);

  /* max_overhead: strictly between 0 and 1; a plain number, no unit. */
  expected = params_default();
  expected.max_overhead = 0.25;
  param_ok("max_overhead", "0.25", expected);
  param_ok("max_overhead", "2.5e-1", expected);
  expected.max_overhead = 0.999;
  param_ok("max_overhead", "0.999", expected);
  expected.max_overhead = 1e-9;
  param_ok("max_overhead", "1e-9", expected);
  const char *bad_overheads[] = {"0", "1", "-0.1", "2", "1.0", "", " 0.5", "0.5 ", "0.5x", "0.5us", "0.5ms", "nan",
                                 "inf", "1e999", "abc", "0.5.1", "1/2"};
  for (unsigned i = 0; i < sizeof bad_overheads / sizeof bad_overheads[0]; i++)
    param_bad("max_overhead", bad_overheads[i], PREEMPT_SCHED_INVALID_ARGUMENT, overhead);

  /* hpf_spatial: exactly 0 or 1. */
  expected = params_default();
  expected.hpf_spatial = false;
  param_ok("hpf_spatial", "0", expected);
  expected.hpf_spatial = true;
  param_ok("hpf_spatial", "1", expected);
  const char *bad_spatials[] = {"2", "-1", "", "true", "yes", "1x", " 1", "1 ", "0.5", "1e0", "99999999999999999999"};
  for (unsigned i = 0; i < sizeof bad_spatials / sizeof bad_spatials[0]; i++)
    param_bad("hpf_spatial", bad_spatials[i], PREEMPT_SCHED_INVALID_ARGUMENT, spatial);

  /* dprr_age_cap: an integer 0..1000. */
  expected = params_default();
  expected.dprr_age_cap = 0;
  param_ok("dprr_age_cap", "0", expected);
  expected.dprr_age_cap = 1000;
  param_ok("dprr_age_cap", "1000", expected);
  expected.dprr_age_cap = 7;
  param_ok("dprr_age_cap", "7", expected);
  const char *bad_caps[] = {"-1", "1001", "", "7.5", "7ms", "x", " 7", "7 ", "1e3", "99999999999999999999"};
  for (unsigned i = 0; i < sizeof bad_caps / sizeof bad_caps[0]; i++)
    param_bad("dprr_age_cap", bad_caps[i], PREEMPT_SCHED_INVALID_ARGUMENT, cap);

  /* Times: microseconds, "us", or "ms"; greater than 0 and finite, for each of the three. */
  const char *times[] = {"ffs_min_epoch", "dprr_age_step", "dprr_slice_unit"};
  for (unsigned t = 0; t < 3; t++) {
    const struct {
      const char *text;
      double us;
    } good[] = {{"250", 250}, {"250us", 250}, {"1.5ms", 1500}, {"2ms", 2000}, {"0.001", 0.001}, {"1e3", 1000}};
    for (unsigned i = 0; i < sizeof good / sizeof good[0]; i++) {
      expected = params_default();
      double *field = t == 0 ? &expected.ffs_min_epoch : t == 1 ? &expected.dprr_age_step : &expected.dprr_slice_unit;
      *field = good[i].us;
      param_ok(times[t], good[i].text, expected);
    }
    const char *bad[] = {"0", "0ms", "-5", "-1ms", "", "ms", "us", "5s", "5 ms", " 5", "5 ", "5usms", "5msus",
                         "5mss", "nan", "infms", "1e999", "1e308ms", "abc", "5x"};
    for (unsigned i = 0; i < sizeof bad / sizeof bad[0]; i++)
      param_bad(times[t], bad[i], PREEMPT_SCHED_INVALID_ARGUMENT, time_message);
  }

  /* Names: exact and case-sensitive; an unknown one is its own status. */
  const char *unknown[] = {"MAX_OVERHEAD", "max_overhead ", "max", "", "hpf", "spatial", "weight", "max_overhead=0.1"};
  for (unsigned i = 0; i < sizeof unknown / sizeof unknown[0]; i++)
    param_bad(unknown[i], "1", PREEMPT_SCHED_UNKNOWN_PARAMETER, "unknown parameter");
  CHECK(strcmp(preempt_sched_status_name(PREEMPT_SCHED_UNKNOWN_PARAMETER), "unknown parameter") == 0);

  /* NULL arguments; a NULL why is allowed. */
  preempt_sched_params params = params_default();
  const char *why = NULL;
  CHECK(preempt_sched_params_set(NULL, "hpf_spatial", "0", &why) == PREEMPT_SCHED_INVALID_ARGUMENT && why != NULL);
  param_bad(NULL, "0", PREEMPT_SCHED_INVALID_ARGUMENT, "no parameter given");
  param_bad("hpf_spatial", NULL, PREEMPT_SCHED_INVALID_ARGUMENT, "no parameter given");
  CHECK(preempt_sched_params_set(&params, "hpf_spatial", "0", NULL) == PREEMPT_SCHED_OK && !params.hpf_spatial);
  CHECK(preempt_sched_params_set(&params, "hpf_spatial", "7", NULL) == PREEMPT_SCHED_INVALID_ARGUMENT);

  /* Settings accumulate; a refused one leaves the others. */
  params = params_default();
  CHECK(preempt_sched_params_set(&params, "max_overhead", "0.05", NULL) == PREEMPT_SCHED_OK);
  CHECK(preempt_sched_params_set(&params, "ffs_min_epoch", "20ms", NULL) == PREEMPT_SCHED_OK);
  CHECK(preempt_sched_params_set(&params, "max_overhead", "5", NULL) == PREEMPT_SCHED_INVALID_ARGUMENT);
  CHECK(params.max_overhead == 0.05 && params.ffs_min_epoch == 20000.0 && params.hpf_spatial);

  /* What a setting does: with hpf_spatial=1 HPF evicts only the 2 SMs an urgent kernel needs (FLEP §6.4); with
   * hpf_spatial=0, as set through this function, every SM. */
  for (int spatial = 1; spatial >= 0; spatial--) {
    CHECK(preempt_sched_params_set(&params, "hpf_spatial", spatial ? "1" : "0", NULL) == PREEMPT_SCHED_OK);
    CHECK(preempt_sched_state_init(&state, 8, &params) == PREEMPT_SCHED_OK);
    arrive(1, 0, 10000, 50, 0);
    preempt_sched_decisions out = decide(&preempt_policy_hpf, PREEMPT_EVENT_ARRIVAL, 1);
    expect(&out, 0, PREEMPT_ACTION_RUN, 1, true, 0);
    state.now = 10;
    arrive(2, 5, 100, 50, 2);
    out = decide(&preempt_policy_hpf, PREEMPT_EVENT_ARRIVAL, 2);
    CHECK_EQ_U64(out.count, 1);
    expect(&out, 0, PREEMPT_ACTION_EVICT, 1, !spatial, 2);
  }
}

int main(void) {
  test_fifo_never_preempts();
  test_hpf_higher_priority_preempts();
  test_hpf_spatial();
  test_hpf_equal_priority_shortest_remaining();
  test_piv();
  test_dprr();
  test_ffs();
  test_errors();
  test_remove_kernel();
  test_params_set();
  CHECK_DONE("test_schedule_policies");
}
