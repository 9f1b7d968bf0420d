/* test_schedule_policies.c: decisions of FIFO, HPF, PIV, DPRR, FFS and flexsched on small hand-built GPU states.
 * FLEP §5.2 and Fig. 6 (HPF, FFS), §6.4 (spatial); EffiSha §7 (PIV, DPRR); FlexSched §4.3-§4.4, §5.4.1, §5.5. */
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
  static const char slowdown[] = "flexsched_slowdown must be a number from 0 (inclusive) to 1 (exclusive), got";
  static const char fixed[] = "flexsched_fixed must be an integer -1..63, got";
  preempt_sched_params expected;

  /* The defaults are the papers' values (FLEP §6.3.3, §6.4; EffiSha §7). */
  expected = params_default();
  CHECK(expected.max_overhead == 0.10 && expected.ffs_min_epoch == 100.0 && expected.hpf_spatial);
  CHECK(expected.dprr_age_step == 1000.0 && expected.dprr_age_cap == 20 && expected.dprr_slice_unit == 500.0);
  /* flexsched: 2 ms windows, throughput mode, searching. */
  CHECK(expected.flexsched_period == 2000.0 && expected.flexsched_slowdown == 0.0 && expected.flexsched_fixed == -1);

  /* flexsched_slowdown: [0, 1): 0 is throughput mode, anything else the latency floor's fraction (FlexSched §5.5). */
  expected = params_default();
  expected.flexsched_slowdown = 0.5;
  param_ok("flexsched_slowdown", "0.5", expected);
  expected.flexsched_slowdown = 0;
  param_ok("flexsched_slowdown", "0", expected);
  expected.flexsched_slowdown = 0.999;
  param_ok("flexsched_slowdown", "0.999", expected);
  const char *bad_slowdowns[] = {"1", "-0.1", "1.5", "", " 0.5", "0.5x", "0.5ms", "nan", "inf", "abc"};
  for (unsigned i = 0; i < sizeof bad_slowdowns / sizeof bad_slowdowns[0]; i++)
    param_bad("flexsched_slowdown", bad_slowdowns[i], PREEMPT_SCHED_INVALID_ARGUMENT, slowdown);

  /* flexsched_fixed: -1 (search) or a configuration index 0..63 (PREEMPT_COEXEC_MAX_CONFIGS - 1). */
  expected = params_default();
  expected.flexsched_fixed = 0;
  param_ok("flexsched_fixed", "0", expected);
  expected.flexsched_fixed = 63;
  param_ok("flexsched_fixed", "63", expected);
  expected.flexsched_fixed = -1;
  param_ok("flexsched_fixed", "-1", expected);
  const char *bad_fixed[] = {"64", "-2", "", "1.5", "x", " 1", "1 ", "99999999999999999999"};
  for (unsigned i = 0; i < sizeof bad_fixed / sizeof bad_fixed[0]; i++)
    param_bad("flexsched_fixed", bad_fixed[i], PREEMPT_SCHED_INVALID_ARGUMENT, fixed);

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

  /* Times: microseconds, "us", or "ms"; greater than 0 and finite, for each of the four. */
  const char *times[] = {"ffs_min_epoch", "dprr_age_step", "dprr_slice_unit", "flexsched_period"};
  for (unsigned t = 0; t < 4; t++) {
    const struct {
      const char *text;
      double us;
    } good[] = {{"250", 250}, {"250us", 250}, {"1.5ms", 1500}, {"2ms", 2000}, {"0.001", 0.001}, {"1e3", 1000}};
    for (unsigned i = 0; i < sizeof good / sizeof good[0]; i++) {
      expected = params_default();
      double *field = t == 0   ? &expected.ffs_min_epoch
                      : t == 1 ? &expected.dprr_age_step
                      : t == 2 ? &expected.dprr_slice_unit
                               : &expected.flexsched_period;
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

/* ---------------------------------------------------------------- flexsched (FlexSched §4.2-§4.4, §5.4.1, §5.5) */

/* An H100 SM (coexec.h's figures). Kernels of 256 threads and 32 registers per thread, no shared memory, hold 8 CTAs
 * alone, and two of them share an SM as FlexSched §4.3's example space: configuration i is (i + 1, 7 - i), i 0..6. */
static void fresh_h100(uint32_t sm_count) {
  fresh(sm_count);
  preempt_sm_limits limits = {2048, 32, 65536, 256, 233472, 128, 1024, 32};
  state.gpu.limits = limits;
}

static void arrive_converted(uint32_t id, int32_t priority, uint32_t registers, uint32_t shared_bytes) {
  preempt_sched_kernel kernel;
  memset(&kernel, 0, sizeof kernel);
  kernel.id = id;
  kernel.client_id = id;
  kernel.priority = priority;
  kernel.weight = 1;
  kernel.predicted = 1e6;
  kernel.eviction_cost = 100;
  kernel.footprint.threads = 256;
  kernel.footprint.registers_per_thread = registers; /* 0: footprint unknown */
  kernel.footprint.shared_bytes = shared_bytes;
  kernel.task_count = registers ? 1000000 : 0;
  CHECK(preempt_sched_add_kernel(&state, &kernel) == PREEMPT_SCHED_OK);
}

static uint32_t quota_of(uint32_t id) {
  const preempt_sched_kernel *kernel = preempt_sched_find(&state, id);
  return kernel && kernel->state == PREEMPT_KERNEL_RUNNING ? kernel->cta_quota : 0;
}

static void expect_quota(const preempt_sched_decisions *out, uint32_t index, uint32_t id, uint32_t quota) {
  CHECK(index < out->count);
  if (index >= out->count)
    return;
  CHECK_EQ_U64(out->items[index].action, PREEMPT_ACTION_QUOTA);
  CHECK_EQ_U64(out->items[index].kernel_id, id);
  CHECK_EQ_U64(out->items[index].quota, quota);
}

/* The test's GPU: every running kernel takes tasks at the rate its table gives for the quotas in force, and reports
 * (tasks, time) samples as the client runtime would, unless it is silent. */
typedef double (*rate_table)(uint32_t kernel_id);
static rate_table rates_now;
static double tasks_taken[8];
static bool silent[8];

static void progress_to(preempt_usec until) {
  for (uint32_t id = 1; id < 8; id++) {
    preempt_sched_kernel *kernel = preempt_sched_find(&state, id);
    if (!kernel || kernel->state != PREEMPT_KERNEL_RUNNING)
      continue;
    tasks_taken[id] += rates_now(id) * (until - state.now);
    if (!silent[id]) {
      kernel->progress_tasks = (uint64_t)(tasks_taken[id] + 0.5);
      kernel->progress_at = until;
    }
  }
  CHECK(preempt_sched_advance(&state, until) == PREEMPT_SCHED_OK);
}

static void flexsched_reset(rate_table table) {
  rates_now = table;
  memset(tasks_taken, 0, sizeof tasks_taken);
  memset(silent, 0, sizeof silent);
}

/* The policy's timer fires: the kernels ran until then. */
static preempt_sched_decisions fire(const preempt_sched_decisions *previous) {
  CHECK(previous->timer_at > state.now);
  progress_to(previous->timer_at);
  return decide(&preempt_policy_flexsched, PREEMPT_EVENT_TIMER, 0);
}

/* Throughput: A's rate by its CTAs per SM, B's by its own (a synthetic table; 8 is alone). */
static double throughput_table(uint32_t id) {
  static const double a_rate[9] = {0, 1.0, 2.0, 3.0, 4.0, 6.0, 6.5, 7.0, 8.0};
  static const double b_rate[9] = {0, 1.0, 2.0, 3.0, 3.2, 3.3, 3.4, 3.5, 8.0};
  uint32_t quota = quota_of(id);
  return id == 1 ? a_rate[quota] : b_rate[quota];
}

/* FlexSched §5.4.1 on the table above. Kernel 1 runs alone with 8 CTAs per SM; kernel 2 arrives: the search starts
 * at the configuration with the most CTAs of A not above 8, (7,1) = index 6, the last, so it walks toward fewer CTAs
 * of A. WS_TER of each step over the previous best, by hand:
 *   (6,2) over (7,1): (6.5/7 + 2/1) / 2 = 1.46   better, go on
 *   (5,3) over (6,2): (6/6.5 + 3/2) / 2 = 1.21   better, go on
 *   (4,4) over (5,3): (4/6 + 3.2/3) / 2 = 0.87   worse: settle on (5,3), index 4, after 4 measurements. */
static void test_flexsched_throughput(void) {
  fresh_h100(4);
  flexsched_reset(throughput_table);
  arrive_converted(1, 0, 32, 0);
  preempt_sched_decisions out = decide(&preempt_policy_flexsched, PREEMPT_EVENT_ARRIVAL, 1);
  CHECK_EQ_U64(out.count, 1);
  expect_quota(&out, 0, 1, 8); /* alone: its full occupancy */
  CHECK(out.timer_at == 0);
  progress_to(100);
  arrive_converted(2, 0, 32, 0);
  out = decide(&preempt_policy_flexsched, PREEMPT_EVENT_ARRIVAL, 2);
  /* Decreases first: A gives up a CTA per SM before B takes one. */
  CHECK_EQ_U64(out.count, 2);
  expect_quota(&out, 0, 1, 7);
  expect_quota(&out, 1, 2, 1);
  CHECK(out.timer_at == 2100);
  CHECK_EQ_U64(state.flexsched.space.count, 7);
  CHECK_EQ_U64(state.flexsched.a, 1);
  CHECK_EQ_U64(state.flexsched.b, 2);
  /* Both hold every SM; the first one there owns them. */
  CHECK_EQ_U64(preempt_sm_set_count(&preempt_sched_find(&state, 2)->sms), 4);
  CHECK_EQ_U64(state.gpu.sm_owner[3], 1);

  out = fire(&out); /* settle window over: the measurement starts */
  CHECK_EQ_U64(out.count, 0);
  CHECK(out.timer_at == 4100 && state.flexsched.phase == PREEMPT_FLEXSCHED_MEASURE);
  out = fire(&out);
  CHECK_EQ_U64(state.flexsched.measurement_serial, 1);
  CHECK_EQ_U64(state.flexsched.last.config, 6);
  CHECK(state.flexsched.last.rates.a == 7.0 && state.flexsched.last.rates.b == 1.0);
  CHECK(state.flexsched.last.weighted_speedup == 1.0);
  CHECK_EQ_U64(out.count, 2);
  expect_quota(&out, 0, 1, 6);
  expect_quota(&out, 1, 2, 2);

  /* A third kernel arriving mid-search waits: at most two co-run, and the search goes on (its timer kept). */
  preempt_usec timer = out.timer_at;
  progress_to(5000);
  arrive_converted(3, 0, 32, 0);
  preempt_sched_decisions arrival = decide(&preempt_policy_flexsched, PREEMPT_EVENT_ARRIVAL, 3);
  CHECK_EQ_U64(arrival.count, 0);
  CHECK(arrival.timer_at == timer);

  out = fire(&arrival);
  out = fire(&out);
  CHECK_EQ_U64(state.flexsched.last.config, 5);
  CHECK(state.flexsched.last.weighted_speedup > 1.46 && state.flexsched.last.weighted_speedup < 1.47);
  expect_quota(&out, 0, 1, 5);
  expect_quota(&out, 1, 2, 3);
  out = fire(&out);
  out = fire(&out);
  expect_quota(&out, 0, 1, 4);
  expect_quota(&out, 1, 2, 4);
  out = fire(&out);
  out = fire(&out);
  /* (4,4) was worse: back to (5,3), B's decrease first; no timer any more. */
  CHECK_EQ_U64(state.flexsched.measurement_serial, 4);
  CHECK(state.flexsched.last.weighted_speedup < 0.87 && state.flexsched.last.weighted_speedup > 0.86);
  CHECK_EQ_U64(out.count, 2);
  expect_quota(&out, 0, 2, 3);
  expect_quota(&out, 1, 1, 5);
  CHECK(out.timer_at == 0);
  CHECK_EQ_U64(state.flexsched.phase, PREEMPT_FLEXSCHED_SETTLED);
  CHECK_EQ_U64(state.flexsched.config, 4);
  CHECK_EQ_U64(state.flexsched.settled_serial, 1);
  CHECK_EQ_U64(state.flexsched.search.measured, 4);
  CHECK_EQ_U64(preempt_sched_find(&state, 3)->state, PREEMPT_KERNEL_READY);

  /* B completes: kernel 3 joins A, and the search restarts where A is, (5,3) = index 4 (FlexSched Fig. 6). */
  progress_to(20000);
  CHECK(preempt_sched_complete(&state, 2) == PREEMPT_SCHED_OK);
  out = decide(&preempt_policy_flexsched, PREEMPT_EVENT_COMPLETION, 2);
  CHECK_EQ_U64(out.count, 1);
  expect_quota(&out, 0, 3, 3); /* A keeps its 5 CTAs */
  CHECK(out.timer_at == 22000);
  CHECK_EQ_U64(state.flexsched.a, 1);
  CHECK_EQ_U64(state.flexsched.b, 3);
  CHECK_EQ_U64(state.flexsched.search.start, 4);
  CHECK_EQ_U64(state.flexsched.phase, PREEMPT_FLEXSCHED_SETTLE);
  /* The SMs kernel 2 shared were never its own: kernel 1 still owns them. */
  CHECK_EQ_U64(state.gpu.sm_owner[0], 1);

  /* A completes mid-search: kernel 3 runs on alone, back at its full occupancy; nothing to measure. */
  progress_to(21000);
  CHECK(preempt_sched_complete(&state, 1) == PREEMPT_SCHED_OK);
  CHECK_EQ_U64(state.gpu.sm_owner[0], 3); /* ownership passed to the kernel still there */
  out = decide(&preempt_policy_flexsched, PREEMPT_EVENT_COMPLETION, 1);
  CHECK_EQ_U64(out.count, 1);
  expect_quota(&out, 0, 3, 8);
  CHECK(out.timer_at == 0);
  CHECK_EQ_U64(state.flexsched.a, 3);
  CHECK_EQ_U64(state.flexsched.b, 0);
  CHECK_EQ_U64(state.flexsched.phase, PREEMPT_FLEXSCHED_IDLE);
  CHECK(preempt_sched_complete(&state, 3) == PREEMPT_SCHED_OK);
  out = decide(&preempt_policy_flexsched, PREEMPT_EVENT_COMPLETION, 3);
  CHECK_EQ_U64(out.count, 0);
  for (uint32_t sm = 0; sm < 4; sm++)
    CHECK_EQ_U64(state.gpu.sm_owner[sm], 0);
}

/* Latency: kernel 2 (latency-sensitive, higher priority) by its CTAs per SM; the batch kernel 1 by its own. */
static double latency_table(uint32_t id) {
  static const double ls_rate[9] = {0, 1.0, 2.0, 3.0, 3.9, 5.0, 7.0, 7.5, 8.0};
  uint32_t quota = quota_of(id);
  return id == 2 ? ls_rate[quota] : 1.0 * quota;
}

/* FlexSched §5.5 with slowdown 0.5: the batch kernel leaves every SM, kernel 2 runs alone (R = 8 tasks/µs), then
 * the pair's latency search starts at the most CTAs of A, (7,1), and gives B CTAs while TER_a >= 4:
 * (7,1) 7.5, (6,2) 7.0, (5,3) 5.0 keep it; (4,4) 3.9 does not: settle on (5,3), index 4. */
static void test_flexsched_latency(void) {
  fresh_h100(4);
  flexsched_reset(latency_table);
  CHECK(preempt_sched_params_set(&state.params, "flexsched_slowdown", "0.5", NULL) == PREEMPT_SCHED_OK);
  arrive_converted(1, 0, 32, 0);
  preempt_sched_decisions out = decide(&preempt_policy_flexsched, PREEMPT_EVENT_ARRIVAL, 1);
  expect_quota(&out, 0, 1, 8);
  progress_to(100);
  arrive_converted(2, 5, 32, 0);
  out = decide(&preempt_policy_flexsched, PREEMPT_EVENT_ARRIVAL, 2);
  CHECK_EQ_U64(out.count, 1);
  expect(&out, 0, PREEMPT_ACTION_EVICT, 1, true, 0);
  CHECK_EQ_U64(preempt_sched_find(&state, 1)->state, PREEMPT_KERNEL_TOEVICT);
  CHECK_EQ_U64(state.flexsched.phase, PREEMPT_FLEXSCHED_EVICTING);
  /* While the batch kernel drains, nothing else happens. */
  out = decide(&preempt_policy_flexsched, PREEMPT_EVENT_TIMER, 0);
  CHECK_EQ_U64(out.count, 0);
  progress_to(150);
  CHECK(preempt_sched_eviction_done(&state, 1) == PREEMPT_SCHED_OK);
  CHECK_EQ_U64(preempt_sched_find(&state, 1)->cta_quota, 0);
  out = decide(&preempt_policy_flexsched, PREEMPT_EVENT_EVICTION_DONE, 1);
  CHECK_EQ_U64(out.count, 1);
  expect_quota(&out, 0, 2, 8); /* alone, to measure R */
  CHECK(out.timer_at == 2150);
  CHECK_EQ_U64(state.flexsched.phase, PREEMPT_FLEXSCHED_ALONE_SETTLE);
  out = fire(&out);
  CHECK_EQ_U64(out.count, 0);
  CHECK_EQ_U64(state.flexsched.phase, PREEMPT_FLEXSCHED_ALONE_MEASURE);
  out = fire(&out);
  CHECK_EQ_U64(state.flexsched.alone_serial, 1);
  CHECK(state.flexsched.alone_rate_a == 8.0);
  CHECK_EQ_U64(state.flexsched.alone_kernel, 2);
  /* Paired again: A is the latency-sensitive kernel 2, the search LATENCY with min_rate_a = 0.5 * 8. */
  CHECK_EQ_U64(out.count, 2);
  expect_quota(&out, 0, 2, 7);
  expect_quota(&out, 1, 1, 1);
  CHECK_EQ_U64(state.flexsched.a, 2);
  CHECK_EQ_U64(state.flexsched.b, 1);
  CHECK(state.flexsched.latency && state.flexsched.search.mode == PREEMPT_COEXEC_LATENCY);
  CHECK(state.flexsched.search.min_rate_a == 4.0);
  out = fire(&out);
  out = fire(&out);
  CHECK(state.flexsched.last.rates.a == 7.5);
  expect_quota(&out, 0, 2, 6);
  expect_quota(&out, 1, 1, 2);
  out = fire(&out);
  out = fire(&out);
  expect_quota(&out, 0, 2, 5);
  expect_quota(&out, 1, 1, 3);
  out = fire(&out);
  out = fire(&out);
  expect_quota(&out, 0, 2, 4);
  expect_quota(&out, 1, 1, 4);
  out = fire(&out);
  out = fire(&out);
  CHECK(state.flexsched.last.rates.a == 3.9);
  CHECK_EQ_U64(out.count, 2);
  expect_quota(&out, 0, 1, 3);
  expect_quota(&out, 1, 2, 5);
  CHECK_EQ_U64(state.flexsched.phase, PREEMPT_FLEXSCHED_SETTLED);
  CHECK_EQ_U64(state.flexsched.config, 4);
  CHECK(out.timer_at == 0);

  /* Equal priorities are throughput mode even with a slowdown set. */
  fresh_h100(4);
  flexsched_reset(throughput_table);
  CHECK(preempt_sched_params_set(&state.params, "flexsched_slowdown", "0.5", NULL) == PREEMPT_SCHED_OK);
  arrive_converted(1, 0, 32, 0);
  decide(&preempt_policy_flexsched, PREEMPT_EVENT_ARRIVAL, 1);
  arrive_converted(2, 0, 32, 0);
  out = decide(&preempt_policy_flexsched, PREEMPT_EVENT_ARRIVAL, 2);
  expect_quota(&out, 0, 1, 7);
  expect_quota(&out, 1, 2, 1);
  CHECK(!state.flexsched.latency && state.flexsched.search.mode == PREEMPT_COEXEC_THROUGHPUT);
}

/* Kernels whose footprint or GPU limits are unknown, or that cannot share an SM, run one at a time. */
static void test_flexsched_alone(void) {
  fresh_h100(4);
  flexsched_reset(throughput_table);
  arrive_converted(1, 0, 0, 0); /* footprint unknown: the whole GPU, no quota */
  preempt_sched_decisions out = decide(&preempt_policy_flexsched, PREEMPT_EVENT_ARRIVAL, 1);
  CHECK_EQ_U64(out.count, 1);
  expect(&out, 0, PREEMPT_ACTION_RUN, 1, true, 0);
  arrive_converted(2, 0, 32, 0);
  out = decide(&preempt_policy_flexsched, PREEMPT_EVENT_ARRIVAL, 2);
  CHECK_EQ_U64(out.count, 0);
  CHECK(preempt_sched_complete(&state, 1) == PREEMPT_SCHED_OK);
  out = decide(&preempt_policy_flexsched, PREEMPT_EVENT_COMPLETION, 1);
  CHECK_EQ_U64(out.count, 1);
  expect_quota(&out, 0, 2, 8);
  arrive_converted(3, 0, 0, 0); /* cannot join kernel 2: waits for it */
  out = decide(&preempt_policy_flexsched, PREEMPT_EVENT_ARRIVAL, 3);
  CHECK_EQ_U64(out.count, 0);
  CHECK(preempt_sched_complete(&state, 2) == PREEMPT_SCHED_OK);
  out = decide(&preempt_policy_flexsched, PREEMPT_EVENT_COMPLETION, 2);
  CHECK_EQ_U64(out.count, 1);
  expect(&out, 0, PREEMPT_ACTION_RUN, 3, true, 0);

  /* GPU limits unknown (a HIP client registered it): every kernel alone, in arrival order. */
  fresh(4);
  arrive_converted(1, 0, 32, 0);
  arrive_converted(2, 0, 32, 0);
  out = decide(&preempt_policy_flexsched, PREEMPT_EVENT_ARRIVAL, 2);
  CHECK_EQ_U64(out.count, 1);
  expect(&out, 0, PREEMPT_ACTION_RUN, 1, true, 0);
  CHECK(preempt_sched_complete(&state, 1) == PREEMPT_SCHED_OK);
  out = decide(&preempt_policy_flexsched, PREEMPT_EVENT_COMPLETION, 1);
  expect(&out, 0, PREEMPT_ACTION_RUN, 2, true, 0);

  /* No configuration: 120000 bytes of shared memory each, one CTA per SM alone, and two never fit one SM. */
  fresh_h100(4);
  arrive_converted(1, 0, 32, 120000);
  out = decide(&preempt_policy_flexsched, PREEMPT_EVENT_ARRIVAL, 1);
  expect_quota(&out, 0, 1, 1);
  arrive_converted(2, 0, 32, 120000);
  out = decide(&preempt_policy_flexsched, PREEMPT_EVENT_ARRIVAL, 2);
  CHECK_EQ_U64(out.count, 0);
  CHECK(preempt_sched_complete(&state, 1) == PREEMPT_SCHED_OK);
  out = decide(&preempt_policy_flexsched, PREEMPT_EVENT_COMPLETION, 1);
  CHECK_EQ_U64(out.count, 1);
  expect_quota(&out, 0, 2, 1);

  /* Two waiting at once pair at once: the first at its full occupancy's configuration, (7,1). */
  fresh_h100(4);
  arrive_converted(1, 0, 32, 0);
  arrive_converted(2, 0, 32, 0);
  out = decide(&preempt_policy_flexsched, PREEMPT_EVENT_ARRIVAL, 2);
  CHECK_EQ_U64(out.count, 2);
  expect_quota(&out, 0, 1, 7);
  expect_quota(&out, 1, 2, 1);
}

/* flexsched_fixed=N: the pair goes straight to configuration N (clamped to the last), is measured once for the
 * log, and stays there. */
static void test_flexsched_fixed(void) {
  fresh_h100(4);
  flexsched_reset(throughput_table);
  CHECK(preempt_sched_params_set(&state.params, "flexsched_fixed", "2", NULL) == PREEMPT_SCHED_OK);
  arrive_converted(1, 0, 32, 0);
  decide(&preempt_policy_flexsched, PREEMPT_EVENT_ARRIVAL, 1);
  arrive_converted(2, 0, 32, 0);
  preempt_sched_decisions out = decide(&preempt_policy_flexsched, PREEMPT_EVENT_ARRIVAL, 2);
  CHECK_EQ_U64(out.count, 2);
  expect_quota(&out, 0, 1, 3);
  expect_quota(&out, 1, 2, 5);
  out = fire(&out);
  out = fire(&out);
  CHECK_EQ_U64(out.count, 0);
  CHECK(out.timer_at == 0);
  CHECK_EQ_U64(state.flexsched.measurement_serial, 1);
  CHECK_EQ_U64(state.flexsched.last.config, 2);
  CHECK(state.flexsched.last.rates.a == 3.0 && state.flexsched.last.rates.b == 3.3);
  CHECK_EQ_U64(state.flexsched.phase, PREEMPT_FLEXSCHED_SETTLED);
  CHECK(state.flexsched.fixed);

  fresh_h100(4);
  CHECK(preempt_sched_params_set(&state.params, "flexsched_fixed", "63", NULL) == PREEMPT_SCHED_OK);
  arrive_converted(1, 0, 32, 0);
  decide(&preempt_policy_flexsched, PREEMPT_EVENT_ARRIVAL, 1);
  arrive_converted(2, 0, 32, 0);
  out = decide(&preempt_policy_flexsched, PREEMPT_EVENT_ARRIVAL, 2);
  expect_quota(&out, 0, 1, 7);
  expect_quota(&out, 1, 2, 1);
  CHECK_EQ_U64(state.flexsched.config, 6);
}

/* A kernel that reports no progress: the window waits one period at a time, three times, then takes its rate as
 * 0 and says so (stale_b) rather than stall the search. */
static void test_flexsched_stale(void) {
  fresh_h100(4);
  flexsched_reset(throughput_table);
  silent[2] = true;
  arrive_converted(1, 0, 32, 0);
  decide(&preempt_policy_flexsched, PREEMPT_EVENT_ARRIVAL, 1);
  progress_to(100);
  arrive_converted(2, 0, 32, 0);
  preempt_sched_decisions out = decide(&preempt_policy_flexsched, PREEMPT_EVENT_ARRIVAL, 2);
  out = fire(&out); /* 2100: settled */
  const preempt_usec expected_timers[] = {6100, 8100, 10100};
  for (unsigned retry = 0; retry < 3; retry++) {
    out = fire(&out);
    CHECK_EQ_U64(out.count, 0);
    CHECK(out.timer_at == expected_timers[retry]);
    CHECK_EQ_U64(state.flexsched.measurement_serial, 0);
  }
  /* An event other than TIMER meanwhile keeps the stretched window's timer. */
  preempt_sched_decisions other = decide(&preempt_policy_flexsched, PREEMPT_EVENT_EVICTION_DONE, 1);
  CHECK(other.timer_at == 10100);
  out = fire(&out);
  CHECK_EQ_U64(state.flexsched.measurement_serial, 1);
  CHECK(state.flexsched.last.stale_b && !state.flexsched.last.stale_a);
  CHECK(state.flexsched.last.rates.a == 7.0 && state.flexsched.last.rates.b == 0.0);
  expect_quota(&out, 0, 1, 6);
  expect_quota(&out, 1, 2, 2);
}

/* QUOTA decisions: every SM, shared with other quota kernels; what the state refuses. */
static void test_quota_decisions(void) {
  fresh_h100(4);
  arrive_converted(1, 0, 32, 0);
  arrive_converted(2, 0, 32, 0);
  preempt_sched_decisions out;
  memset(&out, 0, sizeof out);
  CHECK(preempt_sched_push_quota(&out, 1, 0) == PREEMPT_SCHED_INVALID_ARGUMENT);
  CHECK(preempt_sched_push_quota(&out, 1, 3) == PREEMPT_SCHED_OK);
  CHECK(preempt_sched_push_quota(&out, 2, 5) == PREEMPT_SCHED_OK);
  CHECK(out.items[0].action == PREEMPT_ACTION_QUOTA && out.items[0].all_sms && out.items[0].quota == 3);
  for (uint32_t d = 0; d < out.count; d++)
    CHECK(preempt_sched_apply(&state, &out.items[d]) == PREEMPT_SCHED_OK);
  preempt_sched_kernel *one = preempt_sched_find(&state, 1), *two = preempt_sched_find(&state, 2);
  CHECK(one->state == PREEMPT_KERNEL_RUNNING && two->state == PREEMPT_KERNEL_RUNNING);
  CHECK_EQ_U64(one->cta_quota, 3);
  CHECK_EQ_U64(preempt_sm_set_count(&two->sms), 4);
  CHECK_EQ_U64(state.gpu.sm_owner[2], 1);
  /* A RUNNING kernel's new quota. */
  preempt_sched_decision decision = out.items[0];
  decision.quota = 4;
  CHECK(preempt_sched_apply(&state, &decision) == PREEMPT_SCHED_OK && one->cta_quota == 4);
  decision.quota = 0;
  CHECK(preempt_sched_apply(&state, &decision) == PREEMPT_SCHED_BAD_DECISION);
  /* RUN is full occupancy on some SMs: nothing a quota kernel can be given. A partial eviction names no CTAs. */
  preempt_sched_decision run = {PREEMPT_ACTION_RUN, 1, true, {{0}}, 0};
  CHECK(preempt_sched_apply(&state, &run) == PREEMPT_SCHED_BAD_DECISION);
  preempt_sched_decision evict = {PREEMPT_ACTION_EVICT, 2, false, {{0}}, 0};
  preempt_sm_set_add(&evict.sms, 1);
  CHECK(preempt_sched_apply(&state, &evict) == PREEMPT_SCHED_BAD_DECISION);
  /* Kernel 2 shares SMs it does not own: its full eviction drains nothing of kernel 1's, and frees them all. */
  evict.all_sms = true;
  CHECK(preempt_sched_apply(&state, &evict) == PREEMPT_SCHED_OK);
  CHECK(two->state == PREEMPT_KERNEL_TOEVICT && !state.gpu.sm_draining[1]);
  decision.kernel_id = 2;
  decision.quota = 2;
  CHECK(preempt_sched_apply(&state, &decision) == PREEMPT_SCHED_BAD_DECISION); /* TOEVICT */
  CHECK(preempt_sched_eviction_done(&state, 2) == PREEMPT_SCHED_OK);
  CHECK(two->state == PREEMPT_KERNEL_READY && two->cta_quota == 0 && preempt_sm_set_count(&two->sms) == 0);
  CHECK_EQ_U64(state.gpu.sm_owner[1], 1);
  /* Back beside kernel 1, then kernel 1 (the owner) leaves: kernel 2 owns the SMs and keeps running there. */
  CHECK(preempt_sched_apply(&state, &decision) == PREEMPT_SCHED_OK);
  preempt_sched_decision evict_one = {PREEMPT_ACTION_EVICT, 1, true, {{0}}, 0};
  CHECK(preempt_sched_apply(&state, &evict_one) == PREEMPT_SCHED_OK);
  CHECK(state.gpu.sm_draining[0]);
  CHECK(preempt_sched_eviction_done(&state, 1) == PREEMPT_SCHED_OK);
  CHECK_EQ_U64(state.gpu.sm_owner[0], 2);
  CHECK(!state.gpu.sm_draining[0] && two->state == PREEMPT_KERNEL_RUNNING);
  /* DONE is refused; so is a quota kernel beside a kernel without one. */
  CHECK(preempt_sched_complete(&state, 2) == PREEMPT_SCHED_OK);
  CHECK(preempt_sched_apply(&state, &decision) == PREEMPT_SCHED_BAD_DECISION);
  CHECK_EQ_U64(state.gpu.sm_owner[0], 0);
  arrive_converted(3, 0, 32, 0);
  preempt_sched_decision run_three = {PREEMPT_ACTION_RUN, 3, false, {{0}}, 0};
  preempt_sm_set_add(&run_three.sms, 0);
  CHECK(preempt_sched_apply(&state, &run_three) == PREEMPT_SCHED_OK);
  decision.kernel_id = 1;
  CHECK(preempt_sched_apply(&state, &decision) == PREEMPT_SCHED_BAD_DECISION);
  CHECK(strcmp(preempt_policy_flexsched.name, "flexsched") == 0);
  const preempt_sched_policy *found = NULL;
  CHECK(preempt_sched_policy_by_name("flexsched", &found) == PREEMPT_SCHED_OK && found == &preempt_policy_flexsched);
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
  test_quota_decisions();
  test_flexsched_throughput();
  test_flexsched_latency();
  test_flexsched_alone();
  test_flexsched_fixed();
  test_flexsched_stale();
  CHECK_DONE("test_schedule_policies");
}
