/* listing.c: the LISTING reply: GPUs with their policies, clients, and every kernel with its state, times and weight.
 * FLEP §5.1 (T_e, T_w per kernel), §5.2.2 (FFS weights) and EffiSha §6.1 (states) as preemptctl shows them. */
#include "preemptd.h"


#include <string.h>

preempt_daemon_status preemptd_build_listing(preemptd_context *ctx, uint32_t request_id, void *buffer,
                                             size_t capacity, size_t *length) {
  uint32_t clients = 0, kernels = 0;
  for (uint32_t i = 0; i < PREEMPTD_MAX_CONNECTIONS; i++) {
    const preemptd_client *client = &ctx->clients[i];
    if (client->fd < 0 || !client->registered)
      continue;
    clients++;
    for (uint32_t s = 0; s < PREEMPT_STUBS_PER_CLIENT; s++)
      kernels += client->stubs[s].kernel_id != 0;
  }
  /* 256 connections fit PREEMPT_LISTING_MAX_CLIENTS; kernels may not (256 x 64): the first 256 are shown. */
  if (clients > PREEMPT_LISTING_MAX_CLIENTS)
    clients = PREEMPT_LISTING_MAX_CLIENTS;
  if (kernels > PREEMPT_LISTING_MAX_KERNELS)
    kernels = PREEMPT_LISTING_MAX_KERNELS;
  size_t bytes = sizeof(preempt_msg_listing) + ctx->gpu_count * sizeof(preempt_listing_gpu) +
                 clients * sizeof(preempt_listing_client) + kernels * sizeof(preempt_listing_kernel);
  if (bytes > capacity)
    return PREEMPT_DAEMON_BUFFER_TOO_SMALL;
  memset(buffer, 0, bytes); /* reserved fields and string padding are zero on the wire */
  preempt_msg_listing *listing = buffer;
  preempt_msg_header_init(&listing->header, PREEMPT_MSG_LISTING, (uint32_t)bytes, request_id);
  listing->gpu_count = ctx->gpu_count;
  listing->client_count = clients;
  listing->kernel_count = kernels;
  listing->sharing = preemptd_time_slicing(ctx, true) ? PREEMPT_SHARING_TIMESLICE : PREEMPT_SHARING_MPS;
  double now = preemptd_now_us(ctx);
  listing->uptime_us = (uint64_t)now;
  preempt_listing_gpu *gpus = (preempt_listing_gpu *)(listing + 1);
  for (uint32_t g = 0; g < ctx->gpu_count; g++) {
    const preemptd_gpu *gpu = &ctx->gpus[g];
    memcpy(gpus[g].uuid, gpu->uuid, 16);
    gpus[g].sm_count = gpu->sm_count;
    for (uint32_t k = 0; k < gpu->sched->kernel_count; k++)
      gpus[g].kernels += gpu->sched->kernels[k].state != PREEMPT_KERNEL_DONE;
    gpus[g].decisions = gpu->decisions;
    gpus[g].evictions = gpu->evictions;
    preempt_copy_name(gpus[g].policy, sizeof gpus[g].policy, gpu->policy->name);
  }
  preempt_listing_client *client_out = (preempt_listing_client *)(gpus + ctx->gpu_count);
  preempt_listing_kernel *kernel_out = (preempt_listing_kernel *)(client_out + clients);
  uint32_t c = 0, k = 0;
  for (uint32_t i = 0; i < PREEMPTD_MAX_CONNECTIONS && c < clients; i++) {
    const preemptd_client *client = &ctx->clients[i];
    if (client->fd < 0 || !client->registered)
      continue;
    preempt_listing_client *entry = &client_out[c++];
    entry->client_id = client->id;
    entry->pid = (uint32_t)client->pid;
    entry->uid = (uint32_t)client->uid;
    entry->priority = client->priority;
    entry->priority_limit = client->priority_limit;
    entry->lease = client->lease;
    entry->launches = client->launches;
    entry->evictions = client->evictions;
    preempt_copy_name(entry->program, sizeof entry->program, client->program);
    entry->job_id = client->job_id;
    entry->step_id = client->step_id;
    for (uint32_t s = 0; s < PREEMPT_STUBS_PER_CLIENT && k < kernels; s++) {
      const preemptd_stub_record *record = &client->stubs[s];
      if (record->kernel_id == 0)
        continue;
      const preempt_sched_kernel *kernel = preempt_sched_find(ctx->gpus[record->gpu].sched, record->kernel_id);
      preempt_listing_kernel *out = &kernel_out[k++];
      out->client_id = client->id;
      out->stub = s;
      out->gpu = record->gpu;
      out->state = record->seen;
      out->priority = record->priority;
      /* The weight granted at arrival (what FFS gives the kernel, clamped, never 0), not the stub's: the client may
       * rewrite its stub at any time, and a user other than root asking 2 gets 1. */
      out->weight = record->weight;
      out->evictions = record->evictions;
      /* FlexSched's CTAs per SM, as the scheduler holds it now (0: no quota, or no longer scheduled). */
      out->quota = kernel ? kernel->cta_quota : 0;
      /* T_w: the scheduler's own number (what its policy decided with), plus the wait since the GPU's
       * last event, which the scheduler only adds at the next one. */
      const preempt_sched_state *sched = ctx->gpus[record->gpu].sched;
      out->waited_us = kernel ? kernel->waited : 0;
      if (kernel && kernel->state == PREEMPT_KERNEL_READY && now > sched->now)
        out->waited_us += now - sched->now;
      double ran = record->ran_us;
      if (record->running_since_us >= 0 && now > record->running_since_us)
        ran += now - record->running_since_us;
      out->ran_us = ran;
      out->predicted_us = record->predicted_us;
      memcpy(out->name, record->name, sizeof out->name);
    }
  }
  *length = bytes;
  return PREEMPT_DAEMON_OK;
}
