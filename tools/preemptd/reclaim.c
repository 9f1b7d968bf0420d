/* reclaim.c: the end of a client, dead (socket closed) or broken (it broke the stub protocol): its kernels leave the GPU.
 * EffiSha §6.1 (a stub's owner gone: the scheduler must not wait on it); FLEP §3 (the scheduler outlives any program). */
#include "preemptd.h"

#include <string.h>
#include <sys/socket.h>

preempt_daemon_status preemptd_reclaim(preemptd_context *ctx, preemptd_client *client, const char *why) {
  if (!client->registered)
    return PREEMPT_DAEMON_OK;
  /* First, so that no decision taken below writes into this client's page. */
  client->registered = false;
  bool affected[PREEMPTD_MAX_GPUS] = {false};
  uint32_t last_kernel[PREEMPTD_MAX_GPUS] = {0};
  uint32_t reclaimed = 0;
  preempt_daemon_status result = PREEMPT_DAEMON_OK;
  /* Every kernel completes before any policy runs: a policy run in between could hand the GPU to
   * another of this client's kernels, which nobody would ever launch. */
  for (uint32_t index = 0; index < PREEMPT_STUBS_PER_CLIENT; index++) {
    preemptd_stub_record *record = &client->stubs[index];
    if (record->kernel_id == 0)
      continue;
    uint32_t gpu = record->gpu;
    preempt_daemon_status status = preemptd_gpu_advance(ctx, gpu);
    if (status == PREEMPT_DAEMON_OK &&
        preempt_sched_complete(ctx->gpus[gpu].sched, record->kernel_id) != PREEMPT_SCHED_OK)
      status = PREEMPT_DAEMON_SYSTEM;
    if (status != PREEMPT_DAEMON_OK)
      result = status;
    preemptd_log(ctx, "reclaimed client=%u stub=%u kernel=%u state=%s", client->id, index, record->kernel_id,
                 preempt_stub_state_name(record->seen));
    affected[gpu] = true;
    last_kernel[gpu] = record->kernel_id;
    reclaimed++;
    memset(record, 0, sizeof *record);
  }
  preemptd_log(ctx, "reclaim client=%u pid=%d kernels=%u: %s", client->id, (int)client->pid, reclaimed, why);
  /* Their SMs are free now (a kernel mid-eviction included: its draining SMs go with it). */
  for (uint32_t gpu = 0; gpu < ctx->gpu_count; gpu++) {
    if (!affected[gpu])
      continue;
    preempt_daemon_status status = preemptd_gpu_advance(ctx, gpu);
    if (status == PREEMPT_DAEMON_OK)
      status = preemptd_gpu_decide(ctx, gpu, PREEMPT_EVENT_COMPLETION, last_kernel[gpu]);
    if (status != PREEMPT_DAEMON_OK)
      result = status;
  }
  preemptd_page_release(client->page);
  client->page = NULL;
  return result;
}

preempt_daemon_status preemptd_client_broken(preemptd_context *ctx, preemptd_client *client, const char *why) {
  preemptd_log(ctx, "broken client=%u pid=%d: %s", client->id, (int)client->pid, why);
  preempt_daemon_status status = preemptd_reclaim(ctx, client, why);
  client->broken = true;
  /* Tell it why (best effort), then hang up. Only the socket thread closes fds (it polls them), so the
   * scheduler thread shuts the connection down and the socket thread sees the hang-up and frees the slot. */
  char text[PREEMPT_DAEMON_TEXT_BYTES];
  snprintf(text, sizeof text, "disconnected: %s", why);
  (void)preemptd_send_status(client->fd, 0, PREEMPT_DAEMON_MALFORMED, text); /* the client may be gone */
  shutdown(client->fd, SHUT_RDWR);
  return status;
}
