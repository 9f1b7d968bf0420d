/* metrics.c: the metrics' snapshot of the daemon, copied under the lock so the HTTP thread formats it without it.
 * Issue 43 (per-client, per-job observability); FLEP §3 (the node's scheduler sees every launch and eviction). */
#include "preemptd.h"

#include <stdlib.h>
#include <string.h>

static void uuid_text(const uint8_t uuid[16], char text[33]) {
  static const char digits[] = "0123456789abcdef";
  for (int i = 0; i < 16; i++) {
    text[2 * i] = digits[uuid[i] >> 4];
    text[2 * i + 1] = digits[uuid[i] & 15];
  }
  text[32] = '\0';
}

static void who_of(const preemptd_client *client, const uint8_t uuid[16], preempt_metrics_who *who) {
  who->client_id = client->id;
  who->pid = (uint32_t)client->pid;
  who->uid = (uint32_t)client->uid;
  who->job_id = client->job_id;
  who->step_id = client->step_id;
  preempt_copy_name(who->program, sizeof who->program, client->program);
  uuid_text(uuid, who->gpu);
}

/* One client on one of its GPUs: the finished periods, and the open ones of launches running or waiting now. */
static void client_gpu(const preemptd_client *client, uint32_t gpu_index, const uint8_t uuid[16], double now,
                       preempt_metrics_client_gpu *out) {
  const preemptd_usage *usage = &client->usage[gpu_index];
  who_of(client, uuid, &out->who);
  out->priority = client->priority;
  out->launches = usage->launches;
  out->evictions = usage->evictions;
  out->eviction_latency = usage->eviction_latency;
  double run = usage->run_us, wait = usage->wait_us;
  for (uint32_t s = 0; s < PREEMPT_STUBS_PER_CLIENT; s++) {
    const preemptd_stub_record *record = &client->stubs[s];
    if (record->kernel_id == 0 || record->gpu != gpu_index)
      continue;
    if (record->running_since_us >= 0 && now > record->running_since_us)
      run += now - record->running_since_us;
    if (record->ready_since_us > 0 && now > record->ready_since_us)
      wait += now - record->ready_since_us;
  }
  out->run_seconds = run / 1e6;
  out->wait_seconds = wait / 1e6;
}

preempt_daemon_status preemptd_metrics_snapshot(preemptd_context *ctx, preempt_metrics_snapshot *out) {
  memset(out, 0, sizeof *out);
  /* Sized for the most there can be, before the lock: nothing allocates while the scheduler waits for it. */
  out->client_gpus = calloc((size_t)PREEMPTD_MAX_CONNECTIONS * PREEMPTD_MAX_GPUS, sizeof *out->client_gpus);
  out->memory = calloc((size_t)PREEMPTD_MAX_CONNECTIONS * PREEMPTD_MAX_GPUS, sizeof *out->memory);
  if (!out->client_gpus || !out->memory) {
    preemptd_metrics_release(out);
    return PREEMPT_DAEMON_SYSTEM;
  }
  pthread_mutex_lock(&ctx->lock);
  snprintf(out->sharing, sizeof out->sharing, "%s", preemptd_time_slicing(ctx, false) ? "time-slicing" : "mps");
  double now = preemptd_now_us(ctx);
  out->gpu_count = ctx->gpu_count;
  for (uint32_t g = 0; g < ctx->gpu_count; g++) {
    uuid_text(ctx->gpus[g].uuid, out->gpus[g].gpu);
    preempt_copy_name(out->gpus[g].policy, sizeof out->gpus[g].policy, ctx->gpus[g].policy->name);
    out->gpus[g].decisions = ctx->gpus[g].decisions;
    out->gpus[g].evictions = ctx->gpus[g].evictions;
  }
  for (uint32_t i = 0; i < PREEMPTD_MAX_CONNECTIONS; i++) {
    const preemptd_client *client = &ctx->clients[i];
    if (client->fd < 0)
      continue;
    if (client->registered) {
      out->clients++;
      for (uint32_t g = 0; g < client->gpu_count; g++) {
        uint32_t gpu = client->gpus[g];
        client_gpu(client, gpu, ctx->gpus[gpu].uuid, now, &out->client_gpus[out->client_gpu_count++]);
      }
    }
    if (!client->mem_attached)
      continue;
    for (uint32_t g = 0; g < ctx->mem_gpu_count; g++) {
      const preemptd_mem_gpu *gpu = &ctx->mem_gpus[g];
      uint32_t slot = client->mem_slot[g];
      bool waiting = client->mem_waiting && client->mem_wait_gpu == g;
      if ((slot == PREEMPT_MEM_NO_INDEX && !waiting) || !gpu->ledger)
        continue;
      preempt_metrics_client_memory *m = &out->memory[out->memory_count++];
      who_of(client, gpu->uuid, &m->who);
      m->reserved_bytes = slot == PREEMPT_MEM_NO_INDEX ? 0 : gpu->ledger->clients[slot].reserved_bytes;
      m->waiting_bytes = waiting ? client->mem_wait_bytes : 0;
    }
  }
  pthread_mutex_unlock(&ctx->lock);
  return PREEMPT_DAEMON_OK;
}

void preemptd_metrics_release(preempt_metrics_snapshot *snapshot) {
  free(snapshot->client_gpus);
  free(snapshot->memory);
  snapshot->client_gpus = NULL;
  snapshot->memory = NULL;
}
