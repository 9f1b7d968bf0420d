/* gpu_table.c: one scheduler state, policy and table of kernel models (kernel_models.c) per GPU UUID.
 * FLEP §4.2 (per-kernel duration models, measured eviction cost), §5 (a policy per GPU, switchable). */
#include "preemptd.h"

#include <stdlib.h>
#include <string.h>

int preemptd_gpu_find(const preemptd_context *ctx, const uint8_t uuid[16]) {
  for (uint32_t i = 0; i < ctx->gpu_count; i++)
    if (memcmp(ctx->gpus[i].uuid, uuid, 16) == 0)
      return (int)i;
  return -1;
}

uint32_t preemptd_gpu_users(const preemptd_context *ctx, uint32_t index, const preemptd_client *except) {
  uint32_t users = 0;
  for (uint32_t c = 0; c < PREEMPTD_MAX_CONNECTIONS; c++) {
    const preemptd_client *client = &ctx->clients[c];
    if (client->fd < 0 || !client->registered || client == except)
      continue;
    for (uint32_t g = 0; g < client->gpu_count; g++)
      if (client->gpus[g] == index) {
        users++;
        break;
      }
  }
  return users;
}

/* No client names it and the scheduler holds none of its kernels: its facts may be replaced, its slot reused. */
static bool gpu_unused(const preemptd_context *ctx, uint32_t index) {
  return preemptd_gpu_users(ctx, index, NULL) == 0 && ctx->gpus[index].sched->kernel_count == 0;
}

/* Whether every connected client naming the GPU is of user `uid`. */
static bool gpu_only_of(const preemptd_context *ctx, uint32_t index, uid_t uid) {
  for (uint32_t c = 0; c < PREEMPTD_MAX_CONNECTIONS; c++) {
    const preemptd_client *client = &ctx->clients[c];
    if (client->fd < 0 || !client->registered || client->uid == uid)
      continue;
    for (uint32_t g = 0; g < client->gpu_count; g++)
      if (client->gpus[g] == index)
        return false;
  }
  return preemptd_gpu_users(ctx, index, NULL) > 0;
}

static bool named_in(const preempt_msg_gpu *gpus, uint32_t count, const uint8_t uuid[16]) {
  for (uint32_t i = 0; i < count; i++)
    if (memcmp(gpus[i].uuid, uuid, 16) == 0)
      return true;
  return false;
}

preempt_daemon_status preemptd_gpus_check(const preemptd_context *ctx, const preemptd_client *client,
                                          const preempt_msg_gpu *gpus, uint32_t count, char *why, size_t why_bytes) {
  bool trusted = preemptd_uid_trusted(ctx, client->uid);
  uint32_t new_ones = 0;
  for (uint32_t i = 0; i < count; i++) {
    if (gpus[i].sm_count == 0 || gpus[i].sm_count > PREEMPT_SCHED_MAX_SMS) {
      snprintf(why, why_bytes, "gpus[%u].sm_count %u out of range 1..%u", i, gpus[i].sm_count, PREEMPT_SCHED_MAX_SMS);
      return PREEMPT_DAEMON_MALFORMED;
    }
    bool repeated = false;
    for (uint32_t j = 0; j < i; j++)
      if (memcmp(gpus[j].uuid, gpus[i].uuid, 16) == 0) {
        if (gpus[j].sm_count != gpus[i].sm_count) {
          snprintf(why, why_bytes, "gpus[%u] and gpus[%u] name one GPU with different sm_count", j, i);
          return PREEMPT_DAEMON_MALFORMED;
        }
        repeated = true;
      }
    /* The driver's count is the truth for every client, root's included. A client under MPS with an active thread
     * percentage sees fewer SMs than %smid ranges over: its masks would be wrong, so it is refused too. */
    uint32_t driver_sms = preemptd_driver_sm_count(&ctx->driver, gpus[i].uuid);
    if (driver_sms != 0 && driver_sms != gpus[i].sm_count) {
      snprintf(why, why_bytes, "gpus[%u].sm_count %u differs from the %u the CUDA driver reports for this GPU", i,
               gpus[i].sm_count, driver_sms);
      return PREEMPT_DAEMON_MALFORMED;
    }
    int known = preemptd_gpu_find(ctx, gpus[i].uuid);
    if (known < 0) {
      new_ones += !repeated;
      continue;
    }
    const preemptd_gpu *gpu = &ctx->gpus[known];
    if (gpu->sm_count == gpus[i].sm_count)
      continue;
    /* Two reports disagree about one GPU: SM masks would mean different things. Who is believed: root or the
     * daemon's user over anyone else; among the others, the clients already scheduled on it, but only while one
     * is left (an entry nobody names takes the next report). The refusal is this client's alone. */
    if (gpu_unused(ctx, (uint32_t)known) && (!gpu->sm_trusted || trusted))
      continue;
    snprintf(why, why_bytes, "gpus[%u].sm_count %u differs from the %u %s for this GPU", i, gpus[i].sm_count,
             gpu->sm_count, gpu->sm_trusted ? "root or the daemon's user reported" : "its connected clients reported");
    return PREEMPT_DAEMON_MALFORMED;
  }
  /* Room: never-used slots, and entries nobody names any more (their slots are reused). */
  uint32_t room = PREEMPTD_MAX_GPUS - ctx->gpu_count;
  for (uint32_t g = 0; g < ctx->gpu_count; g++)
    if (gpu_unused(ctx, g) && !named_in(gpus, count, ctx->gpus[g].uuid))
      room++;
  if (new_ones > room) {
    snprintf(why, why_bytes, "too many GPUs: %u new, room for %u (connected clients name the other %u)", new_ones,
             room, PREEMPTD_MAX_GPUS - room);
    return PREEMPT_DAEMON_FULL;
  }
  if (!trusted) {
    uint32_t own = new_ones;
    for (uint32_t g = 0; g < ctx->gpu_count; g++)
      own += gpu_only_of(ctx, g, client->uid);
    if (own > PREEMPTD_GPUS_PER_UID) {
      snprintf(why, why_bytes, "too many GPUs named only by uid %u: %u, at most %u", (unsigned)client->uid, own,
               PREEMPTD_GPUS_PER_UID);
      return PREEMPT_DAEMON_FULL;
    }
  }
  return PREEMPT_DAEMON_OK;
}

void preemptd_uuid_hex(const uint8_t uuid[16], char text[33]) {
  for (int i = 0; i < 16; i++)
    snprintf(text + 2 * i, 3, "%02x", uuid[i]);
}

/* The SM limits of a REGISTER entry (the decoder checked them: all zero, or a plausible SM). */
static preempt_sm_limits limits_of(const preempt_msg_gpu *reported) {
  preempt_sm_limits limits = {reported->max_threads, reported->max_ctas,      reported->registers,
                              reported->register_unit, reported->shared_bytes, reported->shared_unit,
                              reported->shared_reserved, reported->warp_size};
  return limits;
}

static bool limits_known(const preempt_sm_limits *limits) { return limits->max_threads != 0; }

/* FlexSched's configuration space (§4.3) is built from one GPU's limits. The first client to report them sets
 * them; a client reporting others (a different runtime, or a lie) cannot change what other clients' kernels are
 * co-located by, so they are kept, and the disagreement is logged once per GPU. A GPU first reported with
 * unknown limits (all zero) takes the first known ones. */
static void merge_limits(preemptd_context *ctx, uint32_t index, const preempt_msg_gpu *reported) {
  preemptd_gpu *gpu = &ctx->gpus[index];
  preempt_sm_limits limits = limits_of(reported);
  preempt_sm_limits *kept = &gpu->sched->gpu.limits;
  if (!limits_known(&limits) || memcmp(kept, &limits, sizeof limits) == 0)
    return;
  if (!limits_known(kept)) {
    *kept = limits;
    preemptd_log(ctx, "gpu %u limits threads=%u ctas=%u registers=%u/%u shared=%u/%u+%u warp=%u", index,
                 limits.max_threads, limits.max_ctas, limits.registers, limits.register_unit, limits.shared_bytes,
                 limits.shared_unit, limits.shared_reserved, limits.warp_size);
    return;
  }
  if (!gpu->limits_conflict_logged)
    preemptd_log(ctx, "gpu %u limits differ from the first client's: kept the first", index);
  gpu->limits_conflict_logged = true;
}

/* A fresh scheduler state and model table for `gpu`: a new entry, or one whose facts are replaced. */
static preempt_daemon_status gpu_init(preemptd_context *ctx, preemptd_gpu *gpu, const preempt_msg_gpu *reported) {
  memset(gpu, 0, sizeof *gpu);
  gpu->sched = malloc(sizeof *gpu->sched);
  bool models = preemptd_models_init(&gpu->models) == PREEMPT_DAEMON_OK;
  if (!gpu->sched || !models ||
      preempt_sched_state_init(gpu->sched, reported->sm_count, &ctx->params) != PREEMPT_SCHED_OK) {
    free(gpu->sched);
    preemptd_models_free(&gpu->models);
    memset(gpu, 0, sizeof *gpu);
    return PREEMPT_DAEMON_SYSTEM;
  }
  /* The new GPU's clock starts now, not at 0: advance refuses to move backwards later. */
  gpu->sched->now = preemptd_now_us(ctx);
  memcpy(gpu->uuid, reported->uuid, 16);
  gpu->sm_count = reported->sm_count;
  gpu->policy = ctx->default_policy;
  return PREEMPT_DAEMON_OK;
}

static void gpu_release(preemptd_gpu *gpu) {
  free(gpu->sched);
  preemptd_models_free(&gpu->models);
  memset(gpu, 0, sizeof *gpu);
}

preempt_daemon_status preemptd_gpu_add(preemptd_context *ctx, const preemptd_client *client,
                                       const preempt_msg_gpu *all, uint32_t all_count, uint32_t which,
                                       uint32_t *index) {
  const preempt_msg_gpu *reported = &all[which];
  /* preemptd_gpus_check refused a count the driver contradicts: one it knows is the driver's. */
  bool trusted = preemptd_uid_trusted(ctx, client->uid) || preemptd_driver_sm_count(&ctx->driver, reported->uuid) != 0;
  int known = preemptd_gpu_find(ctx, reported->uuid);
  if (known >= 0 && ctx->gpus[known].sm_count == reported->sm_count) {
    *index = (uint32_t)known;
    ctx->gpus[known].sm_trusted |= trusted;
    merge_limits(ctx, *index, reported);
    return PREEMPT_DAEMON_OK;
  }
  /* preemptd_gpus_check let it through: a known entry that differs is unused (its facts are replaced in place, its
   * index stays); else a never-used slot, else the first entry nobody names any more. */
  int slot = known;
  if (slot < 0 && ctx->gpu_count < PREEMPTD_MAX_GPUS)
    slot = (int)ctx->gpu_count;
  /* Not one the same REGISTER names: it would be freed here and wanted again for the next of its GPUs. */
  for (uint32_t g = 0; slot < 0 && g < ctx->gpu_count; g++)
    if (gpu_unused(ctx, g) && !named_in(all, all_count, ctx->gpus[g].uuid))
      slot = (int)g;
  if (slot < 0 || (slot < (int)ctx->gpu_count && !gpu_unused(ctx, (uint32_t)slot)))
    return PREEMPT_DAEMON_FULL;
  preemptd_gpu fresh;
  preempt_daemon_status status = gpu_init(ctx, &fresh, reported);
  if (status != PREEMPT_DAEMON_OK)
    return status;
  preemptd_gpu *gpu = &ctx->gpus[slot];
  if (slot < (int)ctx->gpu_count) {
    preemptd_log(ctx, "gpu %d freed: no client names it (was sms=%u)", slot, gpu->sm_count);
    gpu_release(gpu);
  }
  *gpu = fresh;
  gpu->sm_trusted = trusted;
  gpu->creator = client->uid;
  *index = (uint32_t)slot;
  if (slot == (int)ctx->gpu_count)
    ctx->gpu_count++;
  char uuid[33];
  preemptd_uuid_hex(reported->uuid, uuid);
  preemptd_log(ctx, "gpu %u uuid=%s sms=%u policy=%s from=%s", *index, uuid, gpu->sm_count, gpu->policy->name,
               trusted ? "trusted" : "client");
  merge_limits(ctx, *index, reported);
  return PREEMPT_DAEMON_OK;
}

void preemptd_gpus_free(preemptd_context *ctx) {
  for (uint32_t i = 0; i < ctx->gpu_count; i++) {
    free(ctx->gpus[i].sched);
    preemptd_models_free(&ctx->gpus[i].models);
  }
  ctx->gpu_count = 0;
}

preempt_daemon_status preemptd_gpu_set_policy(preemptd_context *ctx, uint32_t index, const preempt_sched_policy *policy) {
  preemptd_gpu *gpu = &ctx->gpus[index];
  const char *before = gpu->policy->name;
  gpu->policy = policy;
  /* The old policy's slices, queues and turn counter mean nothing to the new one: start them afresh,
   * as preempt_sched_add_kernel would have. */
  for (uint32_t i = 0; i < gpu->sched->kernel_count; i++) {
    memset(&gpu->sched->kernels[i].policy, 0, sizeof gpu->sched->kernels[i].policy);
    gpu->sched->kernels[i].policy.dprr_active_since = -1;
  }
  gpu->sched->policy_turn_counter = 0;
  /* flexsched's pair and search restart; its log counters restart with them. */
  memset(&gpu->sched->flexsched, 0, sizeof gpu->sched->flexsched);
  gpu->flexsched_measurements_logged = gpu->flexsched_settles_logged = gpu->flexsched_alones_logged = 0;
  gpu->timer_at = 0;
  preemptd_log(ctx, "policy gpu=%u %s -> %s", index, before, policy->name);
  /* A TIMER event makes the new policy look at the GPU now rather than at the next launch. */
  preempt_daemon_status status = preemptd_gpu_advance(ctx, index);
  return status == PREEMPT_DAEMON_OK ? preemptd_gpu_decide(ctx, index, PREEMPT_EVENT_TIMER, 0) : status;
}
