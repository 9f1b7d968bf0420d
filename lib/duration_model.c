/* duration_model.c: ridge regression of kernel duration on launch features, and mean measured eviction cost.
 * FLEP §4.2 and §5.1. */
#include "preempt/duration_model.h"

#include <string.h>

/* No libm: lib/ objects are linked into targets that do not pass -lm. */
static double magnitude(double v) { return v < 0 ? -v : v; }
static int isfinite_value(double v) { return v == v && v - v == 0; }

/* Features span ten orders of magnitude (blocks vs input bytes); fixed scales
 * keep the normal equations well conditioned and make one lambda mean the same
 * for every feature. The values are typical magnitudes, not limits. */
static const double feature_scale[PREEMPT_DURATION_FEATURES] = {1.0, 1e3, 1e2, 1e4, 1e6};

static void feature_vector(const preempt_kernel_features *features, double x[PREEMPT_DURATION_FEATURES]) {
  x[0] = 1.0;
  x[1] = features->grid_blocks / feature_scale[1];
  x[2] = features->block_threads / feature_scale[2];
  x[3] = features->shared_bytes / feature_scale[3];
  x[4] = features->input_bytes / feature_scale[4];
}

static int features_valid(const preempt_kernel_features *features) {
  return features && isfinite_value(features->grid_blocks) && isfinite_value(features->block_threads) &&
         isfinite_value(features->shared_bytes) && isfinite_value(features->input_bytes) && features->grid_blocks >= 0 &&
         features->block_threads >= 0 && features->shared_bytes >= 0 && features->input_bytes >= 0;
}

preempt_sched_status preempt_duration_model_init(preempt_duration_model *model, double l2_penalty) {
  if (!model || !(l2_penalty >= 0) || !isfinite_value(l2_penalty))
    return PREEMPT_SCHED_INVALID_ARGUMENT;
  memset(model, 0, sizeof *model);
  model->l2_penalty = l2_penalty;
  return PREEMPT_SCHED_OK;
}

preempt_sched_status preempt_duration_model_add(preempt_duration_model *model, const preempt_kernel_features *features,
                                                preempt_usec measured) {
  if (!model || !features_valid(features) || !(measured >= 0) || !isfinite_value(measured))
    return PREEMPT_SCHED_INVALID_ARGUMENT;
  double x[PREEMPT_DURATION_FEATURES];
  feature_vector(features, x);
  for (int r = 0; r < PREEMPT_DURATION_FEATURES; r++) {
    for (int c = 0; c < PREEMPT_DURATION_FEATURES; c++)
      model->gram[r][c] += x[r] * x[c];
    model->moment[r] += x[r] * measured;
  }
  model->samples++;
  return PREEMPT_SCHED_OK;
}

preempt_sched_status preempt_duration_model_coefficients(const preempt_duration_model *model,
                                                         double coefficients[PREEMPT_DURATION_FEATURES]) {
  enum { N = PREEMPT_DURATION_FEATURES };
  if (!model || !coefficients)
    return PREEMPT_SCHED_INVALID_ARGUMENT;
  if (model->samples == 0)
    return PREEMPT_SCHED_NO_DATA;
  double a[N][N + 1];
  double trace = 0;
  for (int r = 0; r < N; r++)
    trace += model->gram[r][r];
  for (int r = 0; r < N; r++) {
    for (int c = 0; c < N; c++)
      a[r][c] = model->gram[r][c];
    a[r][N] = model->moment[r];
    /* A feature that never varied (every launch had the same block size) leaves
     * the system singular; a vanishing ridge term picks the minimum-norm answer,
     * which puts that constant into the unpenalised intercept. */
    if (r > 0)
      a[r][r] += model->l2_penalty + 1e-12 * trace;
  }
  for (int col = 0; col < N; col++) {
    int pivot = col;
    for (int r = col + 1; r < N; r++)
      if (magnitude(a[r][col]) > magnitude(a[pivot][col]))
        pivot = r;
    if (magnitude(a[pivot][col]) < 1e-300)
      return PREEMPT_SCHED_NO_DATA;
    if (pivot != col)
      for (int c = 0; c <= N; c++) {
        double t = a[col][c];
        a[col][c] = a[pivot][c];
        a[pivot][c] = t;
      }
    for (int r = 0; r < N; r++) {
      if (r == col)
        continue;
      double factor = a[r][col] / a[col][col];
      for (int c = col; c <= N; c++)
        a[r][c] -= factor * a[col][c];
    }
  }
  for (int r = 0; r < N; r++)
    coefficients[r] = a[r][N] / a[r][r] / feature_scale[r];
  return PREEMPT_SCHED_OK;
}

preempt_sched_status preempt_duration_model_predict(const preempt_duration_model *model,
                                                    const preempt_kernel_features *features, preempt_usec *predicted) {
  if (!model || !features_valid(features) || !predicted)
    return PREEMPT_SCHED_INVALID_ARGUMENT;
  double coefficients[PREEMPT_DURATION_FEATURES];
  preempt_sched_status status = preempt_duration_model_coefficients(model, coefficients);
  if (status != PREEMPT_SCHED_OK)
    return status;
  double value = coefficients[0] + coefficients[1] * features->grid_blocks + coefficients[2] * features->block_threads +
                 coefficients[3] * features->shared_bytes + coefficients[4] * features->input_bytes;
  *predicted = value > 0 ? value : 0; /* a line fitted elsewhere can go negative on a tiny launch */
  return PREEMPT_SCHED_OK;
}

void preempt_eviction_cost_init(preempt_eviction_cost_model *model) {
  if (model)
    memset(model, 0, sizeof *model);
}

preempt_sched_status preempt_eviction_cost_add(preempt_eviction_cost_model *model, preempt_usec measured,
                                               uint32_t sms_evicted, uint32_t sms_held) {
  if (!model || !(measured >= 0) || !isfinite_value(measured) || sms_evicted == 0 || sms_evicted > sms_held)
    return PREEMPT_SCHED_INVALID_ARGUMENT;
  model->sum_cost_per_sm_fraction += measured * sms_held / sms_evicted;
  model->samples++;
  return PREEMPT_SCHED_OK;
}

preempt_sched_status preempt_eviction_cost_estimate(const preempt_eviction_cost_model *model, uint32_t sms_evicted,
                                                    uint32_t sms_held, preempt_usec *estimate) {
  if (!model || !estimate || sms_evicted == 0 || sms_evicted > sms_held)
    return PREEMPT_SCHED_INVALID_ARGUMENT;
  if (model->samples == 0)
    return PREEMPT_SCHED_NO_DATA;
  *estimate = model->sum_cost_per_sm_fraction / model->samples * sms_evicted / sms_held;
  return PREEMPT_SCHED_OK;
}
