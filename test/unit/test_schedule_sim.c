/* test_schedule_sim.c: the simulator's clock, eviction latency, resume cost and metrics on hand-computed runs.
 * FLEP §6.3.1 (NTT, ANTT, STP), §6.3.3 (GPU share), §6.4 (spatial co-run). */
#include <string.h>

#include "check.h"
#include "preempt/schedule_sim.h"

static int near(double actual, double expected) {
  double diff = actual - expected;
  return diff <= 1e-6 && diff >= -1e-6;
}

static preempt_sim_config config_for(const preempt_sched_policy *policy, uint32_t sms) {
  preempt_sim_config config;
  memset(&config, 0, sizeof config);
  config.sm_count = sms;
  config.policy = policy;
  preempt_sched_params_default(&config.params);
  return config;
}

/* Long low-priority A (10000 us) from 0; short high-priority B (500 us) at 100;
 * A's eviction takes 50 us and costs 20 us of redo on resume. */
static void two_kernels(preempt_sim_kernel k[2]) {
  preempt_sim_kernel_default(&k[0]);
  strcpy(k[0].name, "A");
  k[0].client_id = 1;
  k[0].duration = 10000;
  k[0].evict_latency = 50;
  k[0].resume_cost = 20;
  preempt_sim_kernel_default(&k[1]);
  strcpy(k[1].name, "B");
  k[1].client_id = 2;
  k[1].priority = 1;
  k[1].arrival = 100;
  k[1].duration = 500;
  k[1].evict_latency = 10;
}

static void test_hpf_two_kernels(void) {
  preempt_sim_kernel k[2];
  two_kernels(k);
  preempt_sim_config config = config_for(&preempt_policy_hpf, 4);
  preempt_sim_result result;
  CHECK(preempt_sim_run(&config, k, 2, &result) == PREEMPT_SCHED_OK);
  /* 0 run A; 100 evict A; 150 A's SMs free, run B; 650 B done, run A; A did 150
   * (draining SMs still work) of 10000, +20 resume: 9870 left, done at 10520. */
  CHECK_EQ_U64(result.trace_count, 5);
  if (result.trace_count == 5) {
    CHECK(near(result.trace[1].time, 100) && result.trace[1].decision.action == PREEMPT_ACTION_EVICT);
    CHECK(near(result.trace[2].time, 150) && result.trace[2].event.kind == PREEMPT_EVENT_EVICTION_DONE &&
          result.trace[2].decision.kernel_id == 2);
    CHECK(near(result.trace[3].time, 650) && result.trace[3].decision.kernel_id == 1);
    CHECK(near(result.trace[4].time, 10520) && result.trace[4].event.kind == PREEMPT_EVENT_COMPLETION);
  }
  CHECK(near(result.kernels[1].turnaround, 550));
  CHECK(near(result.kernels[1].ntt, 1.1));
  CHECK(near(result.kernels[0].ntt, 1.052));
  CHECK(near(result.antt, (1.1 + 1.052) / 2));
  CHECK(near(result.stp, 1 / 1.1 + 1 / 1.052));
  CHECK_EQ_U64(result.kernels[0].evictions, 1);
  preempt_sim_result_free(&result);

  /* FIFO: B waits for A: turnaround 10500 - 100 = 10400, NTT 20.8. */
  config = config_for(&preempt_policy_fifo, 4);
  CHECK(preempt_sim_run(&config, k, 2, &result) == PREEMPT_SCHED_OK);
  CHECK(near(result.kernels[1].ntt, 20.8));
  CHECK(near(result.kernels[0].ntt, 1.0));
  CHECK_EQ_U64(result.kernels[0].evictions, 0);
  preempt_sim_result_free(&result);
}

static void test_spatial_rate(void) {
  /* A needs all 4 SMs; B needs 1. HPF evicts SM 3 at 100; it is free at 150;
   * B runs 150..650 on it. A runs at 3/4 speed from 150 to 650 (375 us of work)
   * and its resume cost is 20 * 1/4 = 5: left at 650 is 10000 - 150 - 375 + 5 =
   * 9480; once B is done nobody waits, so A gets SM 3 back (a RUN of a running
   * kernel on the idle SM) and ends at 650 + 9480 = 10130. */
  preempt_sim_kernel k[2];
  two_kernels(k);
  k[1].sms_needed = 1;
  preempt_sim_config config = config_for(&preempt_policy_hpf, 4);
  preempt_sim_result result;
  CHECK(preempt_sim_run(&config, k, 2, &result) == PREEMPT_SCHED_OK);
  CHECK(near(result.kernels[1].finish, 650));
  CHECK(near(result.kernels[0].finish, 10130));
  CHECK(result.trace_count >= 4 && result.trace[3].decision.action == PREEMPT_ACTION_RUN &&
        result.trace[3].decision.kernel_id == 1 && !result.trace[3].decision.all_sms &&
        preempt_sm_set_count(&result.trace[3].decision.sms) == 1);
  preempt_sim_result_free(&result);
}

static void test_ffs_share(void) {
  /* Two endless kernels (1 s each) with weights 2:1 under FFS, stopped at 100 ms:
   * the shares approach 2/3 and 1/3 (the drain of each eviction counts for the
   * evicted kernel, and the first epoch is sized for a lone kernel). */
  preempt_sim_kernel k[2];
  for (int i = 0; i < 2; i++) {
    preempt_sim_kernel_default(&k[i]);
    k[i].client_id = (uint32_t)i + 1;
    k[i].duration = 1e6;
    k[i].evict_latency = 50;
    k[i].resume_cost = 50;
  }
  k[0].weight = 2;
  preempt_sim_config config = config_for(&preempt_policy_ffs, 4);
  config.until = 100000;
  preempt_sim_result result;
  CHECK(preempt_sim_run(&config, k, 2, &result) == PREEMPT_SCHED_OK);
  CHECK_EQ_U64(result.client_count, 2);
  CHECK(result.clients[0].gpu_share > 0.64 && result.clients[0].gpu_share < 0.69);
  CHECK(result.clients[1].gpu_share > 0.31 && result.clients[1].gpu_share < 0.36);
  CHECK_EQ_U64(result.finished, 0);
  preempt_sim_result_free(&result);
}

static void test_rejects_bad_input(void) {
  preempt_sim_kernel k[2];
  two_kernels(k);
  k[1].duration = 0;
  preempt_sim_config config = config_for(&preempt_policy_hpf, 4);
  preempt_sim_result result;
  CHECK(preempt_sim_run(&config, k, 2, &result) == PREEMPT_SCHED_INVALID_ARGUMENT);
  config.sm_count = 0;
  two_kernels(k);
  CHECK(preempt_sim_run(&config, k, 2, &result) == PREEMPT_SCHED_INVALID_ARGUMENT);
  CHECK(preempt_sim_run(NULL, k, 2, &result) == PREEMPT_SCHED_INVALID_ARGUMENT);
}

int main(void) {
  test_hpf_two_kernels();
  test_spatial_rate();
  test_ffs_share();
  test_rejects_bad_input();
  CHECK_DONE("test_schedule_sim");
}
