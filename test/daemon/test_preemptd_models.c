/* test_preemptd_models.c: unit test of preemptd's kernel_models.c: one model per (user, kernel) on a GPU, and which
 * model a full table replaces. FLEP §4.2 (duration and eviction-cost models); EffiSha §6.4 (users kept apart). */
#include <string.h>

#include "../unit/check.h"
#include "preemptd.h"

enum { ROOT = 0, NOBODY = 65534, ALICE = 1000, BOB = 2000, CAROL = 3000 };

static const preempt_kernel_features features = {64, 256, 0, 1 << 20};

/* Rounded to whole µs: the ridge solution of one sample is that sample up to rounding. */
static uint64_t predicted(preemptd_model_table *table, uid_t uid, uint64_t key) {
  double duration = -1, cost = -1;
  CHECK(preemptd_predict(table, uid, key, &features, &duration, &cost) == PREEMPT_DAEMON_OK);
  return (uint64_t)(duration + 0.5);
}

static uint64_t cost(preemptd_model_table *table, uid_t uid, uint64_t key) {
  double duration = -1, estimate = -1;
  CHECK(preemptd_predict(table, uid, key, &features, &duration, &estimate) == PREEMPT_DAEMON_OK);
  return (uint64_t)(estimate + 0.5);
}

static uint32_t held_by(const preemptd_model_table *table, uid_t uid) {
  uint32_t count = 0;
  for (uint32_t i = 0; i < table->count; i++)
    count += table->models[i].uid == uid;
  return count;
}

/* Each user's clients train only that user's model of a kernel name; a user with none gets the defaults. */
static void test_users_apart(void) {
  preemptd_model_table table;
  CHECK(preemptd_models_init(&table) == PREEMPT_DAEMON_OK);
  uint64_t key = preempt_kernel_key("shared_name");
  CHECK(preemptd_learn_duration(&table, ROOT, key, &features, 200) == PREEMPT_DAEMON_OK);
  CHECK(preemptd_learn_duration(&table, NOBODY, key, &features, 5e6) == PREEMPT_DAEMON_OK);
  CHECK(preemptd_learn_duration(&table, NOBODY, key, &features, 5e6) == PREEMPT_DAEMON_OK);
  CHECK(preemptd_learn_eviction(&table, NOBODY, key, 9e6, 8, 8) == PREEMPT_DAEMON_OK);
  CHECK_EQ_U64(predicted(&table, ROOT, key), 200);
  CHECK_EQ_U64(cost(&table, ROOT, key), PREEMPTD_DEFAULT_EVICTION_COST_US);
  CHECK_EQ_U64(predicted(&table, NOBODY, key), 5e6);
  CHECK_EQ_U64(cost(&table, NOBODY, key), 9e6);
  CHECK_EQ_U64(predicted(&table, ALICE, key), PREEMPTD_UNKNOWN_DURATION_US);
  CHECK_EQ_U64(cost(&table, ALICE, key), PREEMPTD_DEFAULT_EVICTION_COST_US);
  /* A prediction creates no model: only learning does. */
  CHECK_EQ_U64(table.count, 2);
  /* Features the ridge model refuses are the client's error. */
  preempt_kernel_features negative = features;
  negative.input_bytes = -1;
  double duration = 0, estimate = 0;
  CHECK(preemptd_predict(&table, ROOT, key, &negative, &duration, &estimate) == PREEMPT_DAEMON_MALFORMED);
  preemptd_models_free(&table);
  CHECK(table.models == NULL && table.count == 0);
}

/* One user alone: its least recently used model goes; one used since stays. */
static void test_one_user_lru(void) {
  preemptd_model_table table;
  CHECK(preemptd_models_init(&table) == PREEMPT_DAEMON_OK);
  for (uint64_t key = 1; key <= PREEMPTD_MODELS_PER_GPU; key++)
    CHECK(preemptd_learn_duration(&table, ALICE, key, &features, (double)key) == PREEMPT_DAEMON_OK);
  CHECK_EQ_U64(table.count, PREEMPTD_MODELS_PER_GPU);
  CHECK_EQ_U64(predicted(&table, ALICE, 1), 1); /* used: now the most recent */
  CHECK(preemptd_learn_duration(&table, ALICE, 1000, &features, 1000) == PREEMPT_DAEMON_OK);
  CHECK_EQ_U64(table.count, PREEMPTD_MODELS_PER_GPU);
  CHECK_EQ_U64(predicted(&table, ALICE, 1), 1);
  CHECK_EQ_U64(predicted(&table, ALICE, 2), PREEMPTD_UNKNOWN_DURATION_US); /* the oldest, replaced */
  CHECK_EQ_U64(predicted(&table, ALICE, 3), 3);
  CHECK_EQ_U64(predicted(&table, ALICE, 1000), 1000);
  preemptd_models_free(&table);
}

/* A user inventing kernel names by the thousand replaces its own models once it holds the most, never another
 * user's below that user's share; users arriving later take models from whoever holds the most. */
static void test_flood(void) {
  preemptd_model_table table;
  CHECK(preemptd_models_init(&table) == PREEMPT_DAEMON_OK);
  for (uint64_t key = 1; key <= 16; key++)
    CHECK(preemptd_learn_duration(&table, ALICE, key, &features, 300) == PREEMPT_DAEMON_OK);
  for (uint64_t key = 1; key <= 5000; key++)
    CHECK(preemptd_learn_duration(&table, BOB, key, &features, 1) == PREEMPT_DAEMON_OK);
  CHECK_EQ_U64(held_by(&table, ALICE), 16);
  CHECK_EQ_U64(held_by(&table, BOB), PREEMPTD_MODELS_PER_GPU - 16);
  for (uint64_t key = 1; key <= 16; key++)
    CHECK_EQ_U64(predicted(&table, ALICE, key), 300);
  /* Bob's newest names are the ones kept. */
  CHECK_EQ_U64(predicted(&table, BOB, 5000), 1);
  CHECK_EQ_U64(predicted(&table, BOB, 5000 - (PREEMPTD_MODELS_PER_GPU - 16)), PREEMPTD_UNKNOWN_DURATION_US);
  /* Carol's 100 new models come from Bob, the biggest holder; Alice keeps all 16. */
  for (uint64_t key = 1; key <= 100; key++)
    CHECK(preemptd_learn_duration(&table, CAROL, key, &features, 7) == PREEMPT_DAEMON_OK);
  CHECK_EQ_U64(held_by(&table, ALICE), 16);
  CHECK_EQ_U64(held_by(&table, CAROL), 100);
  CHECK_EQ_U64(held_by(&table, BOB), PREEMPTD_MODELS_PER_GPU - 116);
  /* Alice now floods too: the three end with equal shares (256 = 86 + 85 + 85), and stay there. */
  for (uint64_t key = 100; key < 1100; key++)
    CHECK(preemptd_learn_duration(&table, ALICE, key, &features, 300) == PREEMPT_DAEMON_OK);
  uint32_t alice = held_by(&table, ALICE), bob = held_by(&table, BOB), carol = held_by(&table, CAROL);
  CHECK_EQ_U64(alice + bob + carol, PREEMPTD_MODELS_PER_GPU);
  CHECK(alice >= 85 && alice <= 86 && bob >= 85 && bob <= 86 && carol >= 85 && carol <= 86);
  /* Each user lost its least recently used models: Carol's last 85 names are still known. */
  CHECK_EQ_U64(predicted(&table, CAROL, 100), 7);
  CHECK_EQ_U64(predicted(&table, CAROL, 100 - carol + 1), 7);
  CHECK_EQ_U64(predicted(&table, CAROL, 100 - carol), PREEMPTD_UNKNOWN_DURATION_US);
  preemptd_models_free(&table);
}

int main(void) {
  test_users_apart();
  test_one_user_lru();
  test_flood();
  CHECK_DONE("test_preemptd_models");
}
