/* duration_model.h: online prediction of a kernel's duration from its launch features, and of its eviction cost.
 * FLEP §4.2 (per-kernel linear regression with an L2 penalty on grid, block, shared memory, input size; average
 * measured preemption overhead) and §5.1 (predicted duration T_e of each intercepted launch). */
#ifndef PREEMPT_DURATION_MODEL_H
#define PREEMPT_DURATION_MODEL_H

#include <stdint.h>

#include "preempt/schedule.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct preempt_kernel_features {
  double grid_blocks;     /* total blocks of the original grid */
  double block_threads;   /* threads per block */
  double shared_bytes;    /* static + dynamic shared memory per block */
  double input_bytes;     /* size of the input, as the client reports it */
} preempt_kernel_features;

#define PREEMPT_DURATION_FEATURES 5 /* intercept + the four features */

/* One per kernel (FLEP §4.2 builds a kernel-specific model). Samples are folded
 * into the normal equations, so the model is O(1) in memory and can be updated
 * after every launch (online) rather than trained once offline. */
typedef struct preempt_duration_model {
  uint64_t samples;
  double l2_penalty;   /* ridge lambda on the (scaled) feature coefficients, not the intercept */
  double gram[PREEMPT_DURATION_FEATURES][PREEMPT_DURATION_FEATURES];
  double moment[PREEMPT_DURATION_FEATURES];
} preempt_duration_model;

preempt_sched_status preempt_duration_model_init(preempt_duration_model *model, double l2_penalty);
/* Adds one measured launch (duration in microseconds, >= 0). */
preempt_sched_status preempt_duration_model_add(preempt_duration_model *model, const preempt_kernel_features *features,
                                                preempt_usec measured);
/* Coefficients (intercept first) in microseconds per unit of each feature; NO_DATA before any sample. */
preempt_sched_status preempt_duration_model_coefficients(const preempt_duration_model *model,
                                                         double coefficients[PREEMPT_DURATION_FEATURES]);
/* Predicted duration, clamped at 0; NO_DATA before any sample. */
preempt_sched_status preempt_duration_model_predict(const preempt_duration_model *model,
                                                    const preempt_kernel_features *features, preempt_usec *predicted);

/* FLEP §4.2 estimates preemption overhead as the average of measured ones
 * rather than modelling it. Kept per kernel, with the SMs each eviction freed,
 * so a spatial eviction's cost can be scaled from whole-GPU ones. */
typedef struct preempt_eviction_cost_model {
  uint64_t samples;
  double sum_cost_per_sm_fraction;  /* sum of measured cost / (SMs evicted / SMs held) */
} preempt_eviction_cost_model;

void preempt_eviction_cost_init(preempt_eviction_cost_model *model);
preempt_sched_status preempt_eviction_cost_add(preempt_eviction_cost_model *model, preempt_usec measured,
                                               uint32_t sms_evicted, uint32_t sms_held);
/* Estimated cost of evicting sms_evicted of sms_held SMs; NO_DATA before any sample. */
preempt_sched_status preempt_eviction_cost_estimate(const preempt_eviction_cost_model *model, uint32_t sms_evicted,
                                                    uint32_t sms_held, preempt_usec *estimate);

#ifdef __cplusplus
}
#endif
#endif
