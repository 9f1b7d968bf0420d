/* test_duration_model.c: the duration model recovers known linear coefficients; eviction cost averages measurements.
 * FLEP §4.2 (linear regression on grid, CTA size, shared memory, input size; mean measured preemption overhead). */
#include "check.h"
#include "preempt/duration_model.h"

static double magnitude_of(double v) { return v < 0 ? -v : v; }

static int near(double actual, double expected, double tolerance) {
  double diff = actual - expected;
  return diff <= tolerance && diff >= -tolerance;
}

/* The synthetic kernel: 50 us launch floor, 0.02 us per block, 0.3 us per
 * thread of block size, 0.001 us per shared byte, 0.0005 us per input byte. */
static double truth(const preempt_kernel_features *f) {
  return 50 + 0.02 * f->grid_blocks + 0.3 * f->block_threads + 0.001 * f->shared_bytes + 0.0005 * f->input_bytes;
}

static void test_exact_recovery(void) {
  preempt_duration_model model;
  CHECK(preempt_duration_model_init(&model, 0) == PREEMPT_SCHED_OK);
  preempt_kernel_features f = {100, 128, 0, 1000};
  preempt_usec predicted = -1;
  CHECK(preempt_duration_model_predict(&model, &f, &predicted) == PREEMPT_SCHED_NO_DATA);
  /* 40 launches with features varying independently (coprime strides), as FLEP's 100 random inputs do. */
  for (int i = 0; i < 40; i++) {
    preempt_kernel_features sample = {100.0 + 37 * (i % 7) * 100, 64.0 * (1 + i % 4), 1024.0 * (i % 5),
                                      1e6 * (1 + (i * 3) % 11)};
    CHECK(preempt_duration_model_add(&model, &sample, truth(&sample)) == PREEMPT_SCHED_OK);
  }
  double coefficients[PREEMPT_DURATION_FEATURES];
  CHECK(preempt_duration_model_coefficients(&model, coefficients) == PREEMPT_SCHED_OK);
  CHECK(near(coefficients[0], 50, 1e-3));
  CHECK(near(coefficients[1], 0.02, 1e-7));
  CHECK(near(coefficients[2], 0.3, 1e-6));
  CHECK(near(coefficients[3], 0.001, 1e-8));
  CHECK(near(coefficients[4], 0.0005, 1e-10));
  /* An unseen launch: 50 + 0.02*5000 + 0.3*256 + 0.001*2048 + 0.0005*4e6 = 50+100+76.8+2.048+2000 = 2228.848. */
  preempt_kernel_features unseen = {5000, 256, 2048, 4e6};
  CHECK(preempt_duration_model_predict(&model, &unseen, &predicted) == PREEMPT_SCHED_OK);
  CHECK(near(predicted, 2228.848, 1e-3));
}

static void test_constant_feature_and_noise(void) {
  /* Block size never varies (256) and input is the only driver, with +-10 us
   * alternating noise: the fit must still predict within the noise, the
   * constant folding into the intercept rather than making the system singular. */
  preempt_duration_model model;
  CHECK(preempt_duration_model_init(&model, 1e-3) == PREEMPT_SCHED_OK);
  for (int i = 0; i < 20; i++) {
    preempt_kernel_features sample = {1000, 256, 0, 1e6 * (i + 1)};
    double noise = (i % 2) ? 10 : -10;
    CHECK(preempt_duration_model_add(&model, &sample, 100 + 0.001 * sample.input_bytes + noise) == PREEMPT_SCHED_OK);
  }
  preempt_kernel_features probe = {1000, 256, 0, 10.5e6};
  preempt_usec predicted = 0;
  CHECK(preempt_duration_model_predict(&model, &probe, &predicted) == PREEMPT_SCHED_OK);
  CHECK(near(predicted, 100 + 10500, 11)); /* 10600 +- the noise amplitude */
  /* Predictions never go negative even far outside the data. */
  preempt_kernel_features tiny = {1000, 256, 0, 0};
  preempt_duration_model steep;
  preempt_duration_model_init(&steep, 0);
  for (int i = 1; i <= 3; i++) {
    preempt_kernel_features s = {1000, 256, 0, 1e6 * i};
    preempt_duration_model_add(&steep, &s, -500 + 0.001 * s.input_bytes); /* would predict -500 at 0 */
  }
  CHECK(preempt_duration_model_predict(&steep, &tiny, &predicted) == PREEMPT_SCHED_OK);
  CHECK(predicted == 0);
}

/* The ridge penalty shrinks a slope by the closed form, not by a fixed amount (issue 44: with lambda 0 and 1e-3 only,
 * removing the penalty passed every test; preemptd runs 1.0). Two launches, 0 and 1000 blocks (the grid feature's
 * scale is 1e3, so scaled x = 0 and 1), taking 0 and 2 us: the penalised normal equations
 * [[2, 1], [1, 1 + lambda]] (b0, b1) = (2, 2) give b1 = 1 / (0.5 + lambda) and b0 = (2 - b1) / 2; the intercept is
 * never penalised. */
static void test_ridge_shrinks_by_closed_form(void) {
  const double lambdas[] = {0, 0.25, 1.0, 4.0};
  for (unsigned i = 0; i < sizeof lambdas / sizeof lambdas[0]; i++) {
    preempt_duration_model model;
    CHECK(preempt_duration_model_init(&model, lambdas[i]) == PREEMPT_SCHED_OK);
    preempt_kernel_features none = {0, 0, 0, 0}, thousand = {1000, 0, 0, 0};
    CHECK(preempt_duration_model_add(&model, &none, 0) == PREEMPT_SCHED_OK);
    CHECK(preempt_duration_model_add(&model, &thousand, 2) == PREEMPT_SCHED_OK);
    double coefficients[PREEMPT_DURATION_FEATURES];
    CHECK(preempt_duration_model_coefficients(&model, coefficients) == PREEMPT_SCHED_OK);
    double slope = 1.0 / (0.5 + lambdas[i]);
    CHECK(near(coefficients[1] * 1e3, slope, 1e-9));
    CHECK(near(coefficients[0], (2 - slope) / 2, 1e-9));
    preempt_usec predicted = 0;
    CHECK(preempt_duration_model_predict(&model, &thousand, &predicted) == PREEMPT_SCHED_OK);
    CHECK(near(predicted, (2 - slope) / 2 + slope, 1e-9));
  }
}

/* The same on every feature, at preemptd's lambda (1.0) and above: twelve noisy launches whose four features all vary.
 * The ridge fit is the b where the gradient of |X b - y|^2 + lambda * (b1^2 + b2^2 + b3^2 + b4^2), on features
 * scaled as the header says (grid / 1e3, block / 1e2, shared / 1e4, input / 1e6), is 0; halved, that is
 *   sum_i x_ir (x_i . b - y_i) + lambda * b_r = 0  for r = 1..4,  and  sum_i (x_i . b - y_i) = 0  (intercept free).
 * The test evaluates these sums itself from the samples, no solve: least squares (no penalty) leaves lambda * b_r
 * there, a penalised intercept leaves lambda * b0, a penalty on some features only leaves the others'. */
static void test_ridge_stationary_on_every_feature(void) {
  enum { SAMPLES = 12, N = PREEMPT_DURATION_FEATURES };
  const double scale[N] = {1, 1e3, 1e2, 1e4, 1e6};
  const double lambdas[] = {1.0, 4.0};
  for (unsigned l = 0; l < sizeof lambdas / sizeof lambdas[0]; l++) {
    preempt_duration_model model;
    CHECK(preempt_duration_model_init(&model, lambdas[l]) == PREEMPT_SCHED_OK);
    double x[SAMPLES][N], y[SAMPLES];
    for (int i = 0; i < SAMPLES; i++) {
      preempt_kernel_features f = {500.0 * (1 + i % 5), 64.0 * (1 + i % 4), 2048.0 * (i % 3), 1e6 * (1 + (i * 5) % 7)};
      y[i] = truth(&f) + ((i % 2) ? 15 : -15);
      CHECK(preempt_duration_model_add(&model, &f, y[i]) == PREEMPT_SCHED_OK);
      x[i][0] = 1;
      x[i][1] = f.grid_blocks / scale[1];
      x[i][2] = f.block_threads / scale[2];
      x[i][3] = f.shared_bytes / scale[3];
      x[i][4] = f.input_bytes / scale[4];
    }
    double coefficients[N], b[N];
    CHECK(preempt_duration_model_coefficients(&model, coefficients) == PREEMPT_SCHED_OK);
    for (int r = 0; r < N; r++)
      b[r] = coefficients[r] * scale[r];
    for (int r = 0; r < N; r++) {
      double gradient = 0, size = 0;
      for (int i = 0; i < SAMPLES; i++) {
        double fitted = 0;
        for (int c = 0; c < N; c++)
          fitted += x[i][c] * b[c];
        gradient += x[i][r] * (fitted - y[i]);
        size += magnitude_of(x[i][r] * y[i]);
      }
      double penalty = r > 0 ? lambdas[l] * b[r] : 0;
      double tolerance = 1e-9 * size;
      CHECK(near(gradient + penalty, 0, tolerance));
      /* The design discriminates: every penalised coefficient is far from 0, so dropping its penalty term (the
       * gradient then 0 on its own) is far outside the tolerance. */
      if (r > 0)
        CHECK(magnitude_of(penalty) > 1e3 * tolerance);
    }
  }
}

static void test_rejects_bad_input(void) {
  preempt_duration_model model;
  CHECK(preempt_duration_model_init(&model, -1) == PREEMPT_SCHED_INVALID_ARGUMENT);
  CHECK(preempt_duration_model_init(&model, 0) == PREEMPT_SCHED_OK);
  preempt_kernel_features negative = {-1, 1, 1, 1};
  CHECK(preempt_duration_model_add(&model, &negative, 10) == PREEMPT_SCHED_INVALID_ARGUMENT);
  preempt_kernel_features ok = {1, 1, 1, 1};
  CHECK(preempt_duration_model_add(&model, &ok, -5) == PREEMPT_SCHED_INVALID_ARGUMENT);
  double zero = 0;
  CHECK(preempt_duration_model_add(&model, &ok, 1 / zero) == PREEMPT_SCHED_INVALID_ARGUMENT);
  CHECK_EQ_U64(model.samples, 0);
}

static void test_eviction_cost(void) {
  preempt_eviction_cost_model model;
  preempt_eviction_cost_init(&model);
  preempt_usec estimate = -1;
  CHECK(preempt_eviction_cost_estimate(&model, 4, 4, &estimate) == PREEMPT_SCHED_NO_DATA);
  /* 100 us to evict all 4 SMs, 30 us to evict 1 of 4 (120 us if it had been all 4):
   * whole-GPU cost averages to 110; 2 of 4 SMs is estimated at 55. */
  CHECK(preempt_eviction_cost_add(&model, 100, 4, 4) == PREEMPT_SCHED_OK);
  CHECK(preempt_eviction_cost_add(&model, 30, 1, 4) == PREEMPT_SCHED_OK);
  CHECK(preempt_eviction_cost_estimate(&model, 4, 4, &estimate) == PREEMPT_SCHED_OK);
  CHECK(near(estimate, 110, 1e-9));
  CHECK(preempt_eviction_cost_estimate(&model, 2, 4, &estimate) == PREEMPT_SCHED_OK);
  CHECK(near(estimate, 55, 1e-9));
  CHECK(preempt_eviction_cost_add(&model, 10, 5, 4) == PREEMPT_SCHED_INVALID_ARGUMENT);
  CHECK(preempt_eviction_cost_add(&model, 10, 0, 4) == PREEMPT_SCHED_INVALID_ARGUMENT);
  CHECK(preempt_eviction_cost_estimate(&model, 0, 4, &estimate) == PREEMPT_SCHED_INVALID_ARGUMENT);
}

int main(void) {
  test_exact_recovery();
  test_constant_feature_and_noise();
  test_ridge_shrinks_by_closed_form();
  test_ridge_stationary_on_every_feature();
  test_rejects_bad_input();
  test_eviction_cost();
  CHECK_DONE("test_duration_model");
}
