/* connection_limits.c: who may take a connection slot, FULL answered to the refused request, and the deadline of a
 * connection that never registers. FLEP §3: one daemon per node, so no user's idle sockets may lock others out. */
#include "preemptd.h"

#include <errno.h>
#include <math.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

bool preemptd_connection_allowed(const preemptd_context *ctx, uid_t uid, char *why, size_t why_bytes) {
  uint32_t total = 0, of_uid = 0, unprivileged = 0;
  for (uint32_t i = 0; i < PREEMPTD_MAX_CONNECTIONS; i++) {
    const preemptd_client *client = &ctx->clients[i];
    if (client->fd < 0)
      continue;
    total++;
    of_uid += client->uid == uid;
    unprivileged += !preemptd_uid_trusted(ctx, client->uid);
  }
  if (total >= PREEMPTD_MAX_CONNECTIONS) {
    snprintf(why, why_bytes, "too many connections: all %d are taken; try again later", PREEMPTD_MAX_CONNECTIONS);
    return false;
  }
  if (preemptd_uid_trusted(ctx, uid))
    return true;
  if (of_uid >= PREEMPTD_MAX_CONNECTIONS_PER_UID) {
    snprintf(why, why_bytes, "too many connections: uid %u holds %u, the most one user may; try again later",
             (unsigned)uid, of_uid);
    return false;
  }
  if (unprivileged >= PREEMPTD_MAX_CONNECTIONS - PREEMPTD_RESERVED_CONNECTIONS) {
    snprintf(why, why_bytes, "too many connections: the last %d are kept for root; try again later",
             PREEMPTD_RESERVED_CONNECTIONS);
    return false;
  }
  return true;
}

static void refusal_close(preemptd_refusal *refusal) {
  close(refusal->fd);
  refusal->fd = -1;
}

void preemptd_refusal_add(preemptd_context *ctx, int fd, uid_t uid, const char *why) {
  uint32_t of_uid = 0;
  for (uint32_t i = 0; i < PREEMPTD_MAX_REFUSING; i++)
    of_uid += ctx->refusing[i].fd >= 0 && ctx->refusing[i].uid == uid;
  for (uint32_t i = 0; i < PREEMPTD_MAX_REFUSING && (of_uid < PREEMPTD_REFUSING_PER_UID ||
                                                     preemptd_uid_trusted(ctx, uid)); i++) {
    preemptd_refusal *refusal = &ctx->refusing[i];
    if (refusal->fd >= 0)
      continue;
    refusal->fd = fd;
    refusal->uid = uid;
    refusal->deadline_us = preemptd_monotonic_us() + PREEMPTD_REFUSAL_WAIT_US;
    snprintf(refusal->why, sizeof refusal->why, "%s", why);
    /* Its request may be queued already: answered at once. */
    preemptd_refusal_serve(ctx, i);
    return;
  }
  /* Too many refusals in flight (of this user, or in all) to wait for each request: answered without its id (the
   * runtime takes any FULL). */
  (void)preemptd_send_status(fd, 0, PREEMPT_DAEMON_FULL, why);
  close(fd);
}

void preemptd_refusal_serve(preemptd_context *ctx, uint32_t index) {
  preemptd_refusal *refusal = &ctx->refusing[index];
  uint64_t buffer[PREEMPT_DAEMON_MAX_MESSAGE / 8];
  int fd_count = 0, message_flags = 0;
  ssize_t got = preempt_receive_packet(refusal->fd, buffer, sizeof buffer, MSG_DONTWAIT, NULL, 0, &fd_count,
                                       &message_flags);
  if (got < 0 && (errno == EAGAIN || errno == EINTR))
    return;
  /* Only the header's id is taken from whatever it sent: the answer is FULL whatever it asked. */
  if (got >= (ssize_t)sizeof(preempt_msg_header)) {
    preempt_msg_header header;
    memcpy(&header, buffer, sizeof header);
    (void)preemptd_send_status(refusal->fd, header.request_id, PREEMPT_DAEMON_FULL, refusal->why);
  }
  refusal_close(refusal);
}

int preemptd_connection_deadlines(preemptd_context *ctx,
                                  void (*close_client)(preemptd_context *, preemptd_client *, const char *)) {
  double now = preemptd_monotonic_us(), next = INFINITY;
  for (uint32_t i = 0; i < PREEMPTD_MAX_REFUSING; i++) {
    preemptd_refusal *refusal = &ctx->refusing[i];
    if (refusal->fd < 0)
      continue;
    if (now >= refusal->deadline_us)
      refusal_close(refusal);
    else
      next = fmin(next, refusal->deadline_us);
  }
  if (ctx->unregistered_timeout_us > 0) {
    pthread_mutex_lock(&ctx->lock);
    for (uint32_t i = 0; i < PREEMPTD_MAX_CONNECTIONS; i++) {
      preemptd_client *client = &ctx->clients[i];
      if (client->fd < 0 || client->registered || client->mem_attached)
        continue;
      double deadline = client->connected_us + ctx->unregistered_timeout_us;
      if (now < deadline) {
        next = fmin(next, deadline);
        continue;
      }
      preemptd_log_client(ctx, client, "connection pid=%d uid=%u closed: did not register within %.0f ms",
                          (int)client->pid, (unsigned)client->uid, ctx->unregistered_timeout_us / 1e3);
      close_client(ctx, client, "did not register in time");
    }
    pthread_mutex_unlock(&ctx->lock);
  }
  if (isinf(next))
    return -1;
  return (int)ceil((next - now) / 1e3) + 1;
}
