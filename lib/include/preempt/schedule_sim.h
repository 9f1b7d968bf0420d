/* schedule_sim.h: a discrete-event simulator that runs a scheduling policy over simulated kernels on a virtual clock.
 * FLEP §6.3 (co-run scenarios, ANTT and STP of §6.3.1, GPU share of §6.3.3) and EffiSha §8.5 (NTT, STP). */
#ifndef PREEMPT_SCHEDULE_SIM_H
#define PREEMPT_SCHEDULE_SIM_H

#include <stdbool.h>
#include <stdint.h>

#include "preempt/schedule.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A simulated launch. Kernel i gets scheduler id i + 1. */
typedef struct preempt_sim_kernel {
  char name[32];
  uint32_t client_id;
  int32_t priority;
  uint32_t weight;
  preempt_usec arrival;
  preempt_usec duration;        /* true standalone time on sms_needed SMs */
  preempt_usec predicted;       /* what the scheduler is told (T_e); <= 0: exactly duration */
  preempt_usec evict_latency;   /* request to SMs free: the in-flight block-task finishing */
  preempt_usec resume_cost;     /* work added by a full eviction (relaunch, refill); scaled for partial ones */
  preempt_usec cost_estimate;   /* eviction cost the scheduler assumes before measuring; < 0: latency + resume */
  uint32_t sms_needed;          /* 0 or >= the GPU's SMs: the whole GPU */
} preempt_sim_kernel;

void preempt_sim_kernel_default(preempt_sim_kernel *kernel);

typedef struct preempt_sim_config {
  uint32_t sm_count;
  bool time_slicing;            /* clients' contexts time-slice (no MPS): preempt_sched_gpu.time_slicing */
  preempt_sched_params params;
  const preempt_sched_policy *policy;
  preempt_usec until;           /* stop the clock here; 0: when every kernel is done */
} preempt_sim_config;

typedef struct preempt_sim_trace_entry {
  preempt_usec time;
  preempt_sched_event event;
  preempt_sched_decision decision; /* PREEMPT_ACTION_NOTHING when the event changed nothing */
} preempt_sim_trace_entry;

typedef struct preempt_sim_kernel_result {
  bool finished;
  preempt_usec finish;
  preempt_usec turnaround;      /* finish - arrival */
  double ntt;                   /* turnaround / standalone duration (EffiSha §8.5) */
  uint32_t evictions;
  preempt_usec sm_time;         /* SM-microseconds held */
} preempt_sim_kernel_result;

typedef struct preempt_sim_client_result {
  uint32_t client_id;
  preempt_usec sm_time;
  double gpu_share;             /* its SM time over all clients' SM time */
} preempt_sim_client_result;

typedef struct preempt_sim_result {
  preempt_sim_trace_entry *trace; /* malloc'd; preempt_sim_result_free releases it */
  uint32_t trace_count;
  uint32_t trace_capacity;
  uint32_t kernel_count;
  preempt_sim_kernel_result kernels[PREEMPT_SCHED_MAX_KERNELS];
  uint32_t client_count;
  preempt_sim_client_result clients[PREEMPT_SCHED_MAX_KERNELS];
  uint32_t finished;
  double antt;                  /* mean NTT over finished kernels (FLEP §6.3.1, Eyerman & Eeckhout) */
  double stp;                   /* sum of 1/NTT over finished kernels */
  preempt_usec end_time;
} preempt_sim_result;

/* Runs the kernels under config->policy. Fails with the policy's error, or
 * BAD_DECISION when the policy asks for something impossible (a bug it reports
 * rather than hides). The result is filled even on failure, up to that point. */
preempt_sched_status preempt_sim_run(const preempt_sim_config *config, const preempt_sim_kernel *kernels,
                                     uint32_t kernel_count, preempt_sim_result *result);
void preempt_sim_result_free(preempt_sim_result *result);

#ifdef __cplusplus
}
#endif
#endif
