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

preempt_daemon_status preemptd_gpus_check(const preemptd_context *ctx, const preempt_msg_gpu *gpus, uint32_t count,
                                          const char **why) {
  uint32_t new_ones = 0;
  for (uint32_t i = 0; i < count; i++) {
    if (gpus[i].sm_count == 0 || gpus[i].sm_count > PREEMPT_SCHED_MAX_SMS) {
      *why = "sm_count out of range";
      return PREEMPT_DAEMON_MALFORMED;
    }
    int known = preemptd_gpu_find(ctx, gpus[i].uuid);
    if (known >= 0 && ctx->gpus[known].sm_count != gpus[i].sm_count) {
      /* Two clients disagree about one GPU: one of them lies, and SM masks would mean different things. */
      *why = "sm_count differs from an earlier client's for this GPU";
      return PREEMPT_DAEMON_MALFORMED;
    }
    bool repeated = false;
    for (uint32_t j = 0; j < i; j++)
      if (memcmp(gpus[j].uuid, gpus[i].uuid, 16) == 0) {
        if (gpus[j].sm_count != gpus[i].sm_count) {
          *why = "one GPU reported twice with different sm_count";
          return PREEMPT_DAEMON_MALFORMED;
        }
        repeated = true;
      }
    if (known < 0 && !repeated)
      new_ones++;
  }
  if (ctx->gpu_count + new_ones > PREEMPTD_MAX_GPUS) {
    *why = "too many GPUs";
    return PREEMPT_DAEMON_FULL;
  }
  return PREEMPT_DAEMON_OK;
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

preempt_daemon_status preemptd_gpu_add(preemptd_context *ctx, const preempt_msg_gpu *reported, uint32_t *index) {
  int known = preemptd_gpu_find(ctx, reported->uuid);
  if (known >= 0) {
    *index = (uint32_t)known;
    merge_limits(ctx, *index, reported);
    return PREEMPT_DAEMON_OK;
  }
  if (ctx->gpu_count == PREEMPTD_MAX_GPUS)
    return PREEMPT_DAEMON_FULL;
  preemptd_gpu *gpu = &ctx->gpus[ctx->gpu_count];
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
  *index = ctx->gpu_count++;
  char uuid[33];
  for (int i = 0; i < 16; i++)
    snprintf(uuid + 2 * i, 3, "%02x", reported->uuid[i]);
  preemptd_log(ctx, "gpu %u uuid=%s sms=%u policy=%s", *index, uuid, gpu->sm_count, gpu->policy->name);
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
