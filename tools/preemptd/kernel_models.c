/* kernel_models.c: one GPU's table of kernel models (duration, eviction cost), one model per (user, kernel name).
 * FLEP §4.2 (per-kernel duration models trained online, mean measured eviction cost); EffiSha §6.4 (one user's
 * clients must not change how another user's kernels are scheduled). */
#include "preemptd.h"

#include <stdlib.h>
#include <string.h>

preempt_daemon_status preemptd_models_init(preemptd_model_table *table) {
  memset(table, 0, sizeof *table);
  table->models = calloc(PREEMPTD_MODELS_PER_GPU, sizeof *table->models);
  return table->models ? PREEMPT_DAEMON_OK : PREEMPT_DAEMON_SYSTEM;
}

void preemptd_models_free(preemptd_model_table *table) {
  free(table->models);
  memset(table, 0, sizeof *table);
}

/* The model a new one replaces in a full table: the least recently used of the user holding the most models, the
 * asking user's own when it holds as many as anyone. So one user's models are replaced by another user's new one
 * only while it holds more than that user: a client that invents kernel names by the hundred evicts its own user's
 * models, never pushes another user below an equal share of the table (and back to the cautious defaults). The users
 * are counted here rather than kept up to date on every change: this runs only when a full table meets a new
 * (user, kernel), and costs at most models x users comparisons (256 x 256, tens of µs, with 256 users of one model
 * each; a few thousand with a few users). */
static preemptd_kernel_model *victim(preemptd_model_table *table, uid_t asking) {
  uid_t users[PREEMPTD_MODELS_PER_GPU];
  uint32_t counts[PREEMPTD_MODELS_PER_GPU], owner[PREEMPTD_MODELS_PER_GPU];
  uint32_t user_count = 0, most = 0, asking_count = 0;
  for (uint32_t i = 0; i < table->count; i++) {
    uint32_t u = 0;
    while (u < user_count && users[u] != table->models[i].uid)
      u++;
    if (u == user_count) {
      users[user_count] = table->models[i].uid;
      counts[user_count++] = 0;
    }
    owner[i] = u;
    if (++counts[u] > most)
      most = counts[u];
    if (users[u] == asking)
      asking_count = counts[u];
  }
  bool own = asking_count == most;
  preemptd_kernel_model *oldest = NULL;
  for (uint32_t i = 0; i < table->count; i++) {
    preemptd_kernel_model *model = &table->models[i];
    bool candidate = own ? model->uid == asking : counts[owner[i]] == most;
    if (candidate && (!oldest || model->last_used < oldest->last_used))
      oldest = model;
  }
  return oldest;
}

/* The model of a user's kernel; with `create`, a new one when there is none (see victim() for a full table). */
static preemptd_kernel_model *model_for(preemptd_model_table *table, uid_t uid, uint64_t key, bool create) {
  for (uint32_t i = 0; i < table->count; i++)
    if (table->models[i].key == key && table->models[i].uid == uid) {
      table->models[i].last_used = ++table->clock;
      return &table->models[i];
    }
  if (!create)
    return NULL;
  preemptd_kernel_model *model =
      table->count < PREEMPTD_MODELS_PER_GPU ? &table->models[table->count++] : victim(table, uid);
  memset(model, 0, sizeof *model);
  model->uid = uid;
  model->key = key;
  model->last_used = ++table->clock;
  if (preempt_duration_model_init(&model->duration, PREEMPTD_DURATION_L2) != PREEMPT_SCHED_OK)
    return NULL;
  preempt_eviction_cost_init(&model->eviction);
  return model;
}

preempt_daemon_status preemptd_predict(preemptd_model_table *table, uid_t uid, uint64_t key,
                                       const preempt_kernel_features *features, double *duration_us,
                                       double *eviction_cost_us) {
  *duration_us = PREEMPTD_UNKNOWN_DURATION_US;
  *eviction_cost_us = PREEMPTD_DEFAULT_EVICTION_COST_US;
  preemptd_kernel_model *model = model_for(table, uid, key, false);
  if (!model)
    return PREEMPT_DAEMON_OK;
  preempt_usec predicted = 0;
  preempt_sched_status status = preempt_duration_model_predict(&model->duration, features, &predicted);
  if (status == PREEMPT_SCHED_OK)
    *duration_us = predicted;
  else if (status != PREEMPT_SCHED_NO_DATA)
    return PREEMPT_DAEMON_MALFORMED; /* features the model refuses (negative, not finite) */
  /* The whole kernel's cost: what HPF and FFS compare against (they scale it for partial evictions). */
  preempt_usec cost = 0;
  if (preempt_eviction_cost_estimate(&model->eviction, 1, 1, &cost) == PREEMPT_SCHED_OK)
    *eviction_cost_us = cost;
  return PREEMPT_DAEMON_OK;
}

preempt_daemon_status preemptd_learn_duration(preemptd_model_table *table, uid_t uid, uint64_t key,
                                              const preempt_kernel_features *features, double ran_us) {
  preemptd_kernel_model *model = model_for(table, uid, key, true);
  if (!model)
    return PREEMPT_DAEMON_SYSTEM;
  return preempt_duration_model_add(&model->duration, features, ran_us) == PREEMPT_SCHED_OK ? PREEMPT_DAEMON_OK
                                                                                            : PREEMPT_DAEMON_MALFORMED;
}

preempt_daemon_status preemptd_learn_eviction(preemptd_model_table *table, uid_t uid, uint64_t key, double cost_us,
                                              uint32_t sms_evicted, uint32_t sms_held) {
  preemptd_kernel_model *model = model_for(table, uid, key, true);
  if (!model)
    return PREEMPT_DAEMON_SYSTEM;
  return preempt_eviction_cost_add(&model->eviction, cost_us, sms_evicted, sms_held) == PREEMPT_SCHED_OK
             ? PREEMPT_DAEMON_OK
             : PREEMPT_DAEMON_MALFORMED;
}
