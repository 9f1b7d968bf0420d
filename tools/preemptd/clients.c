/* clients.c: the socket thread: connections, peer identity, REGISTER, SET_PRIORITY, LIST, SET_POLICY, hang-ups.
 * EffiSha §6.4 (priorities and who may raise them; policy switches by root or the daemon's user); FLEP §3 (registration). */
#include "preemptd.h"

#include <errno.h>
#include <poll.h>
#include <stddef.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

/* Closes a connection (under the lock): a registered client is reclaimed first. */
static void disconnect(preemptd_context *ctx, preemptd_client *client, const char *why) {
  /* The page outlives the process: what it finished before dying counts as finished. A broken page is
   * reclaimed by the scan itself. */
  if (client->registered && !client->broken && preemptd_scan_one(ctx, client) != PREEMPT_DAEMON_OK)
    preemptd_log(ctx, "last scan of client=%u was incomplete", client->id);
  if (client->registered && preemptd_reclaim(ctx, client, why) != PREEMPT_DAEMON_OK)
    preemptd_log(ctx, "reclaim of client=%u was incomplete", client->id);
  preemptd_mem_detach(ctx, client);
  if (client->id != 0 || client->broken)
    preemptd_log_client(ctx, client, "disconnect client=%u pid=%d: %s", client->id, (int)client->pid, why);
  close(client->fd);
  memset(client, 0, sizeof *client);
  client->fd = -1;
  preemptd_ring_doorbell(ctx); /* the scheduler rescans without the client */
}

/* Root or the daemon's user reports another SM count for a GPU whose count only other users gave: it is believed,
 * and the clients registered on the old count are disconnected (their SM masks meant another GPU), so the entry
 * is free to take the trusted count. */
static void overrule_client_facts(preemptd_context *ctx, preemptd_client *client, const preempt_msg_register *request) {
  if (!preemptd_uid_trusted(ctx, client->uid))
    return;
  for (uint32_t i = 0; i < request->gpu_count; i++) {
    int known = preemptd_gpu_find(ctx, request->gpus[i].uuid);
    if (known < 0 || ctx->gpus[known].sm_trusted || ctx->gpus[known].sm_count == request->gpus[i].sm_count)
      continue;
    for (uint32_t c = 0; c < PREEMPTD_MAX_CONNECTIONS; c++) {
      preemptd_client *other = &ctx->clients[c];
      if (other == client || other->fd < 0 || !other->registered)
        continue;
      for (uint32_t g = 0; g < other->gpu_count; g++)
        if (other->gpus[g] == (uint32_t)known) {
          char text[PREEMPT_DAEMON_TEXT_BYTES];
          snprintf(text, sizeof text, "disconnected: sm_count %u of gpu %d is overruled by uid %u's %u",
                   ctx->gpus[known].sm_count, known, (unsigned)client->uid, request->gpus[i].sm_count);
          (void)preemptd_send_status(other->fd, 0, PREEMPT_DAEMON_MALFORMED, text);
          disconnect(ctx, other, text);
          break;
        }
    }
  }
}

static preempt_daemon_status handle_register(preemptd_context *ctx, preemptd_client *client,
                                             const preempt_msg_register *request, uint32_t request_id,
                                             bool *hang_up) {
  char text[PREEMPT_DAEMON_TEXT_BYTES];
  if (client->registered) {
    *hang_up = true;
    return preemptd_send_status(client->fd, request_id, PREEMPT_DAEMON_MALFORMED, "already registered");
  }
  overrule_client_facts(ctx, client, request);
  char why[PREEMPT_DAEMON_TEXT_BYTES];
  preempt_daemon_status status =
      preemptd_gpus_check(ctx, client, request->gpus, request->gpu_count, why, sizeof why);
  if (status != PREEMPT_DAEMON_OK) {
    *hang_up = status == PREEMPT_DAEMON_MALFORMED;
    preemptd_log_client(ctx, client, "register refused pid=%d uid=%u: %s", (int)client->pid, (unsigned)client->uid,
                        why);
    return preemptd_send_status(client->fd, request_id, status, why);
  }
  /* The nice value the process had when it connected (peer.c), not one read now under a pid it may have left. */
  if (client->nice_error) {
    snprintf(text, sizeof text, "cannot read the nice value of pid %d: %s", (int)client->pid,
             strerror(client->nice_error));
    return preemptd_send_status(client->fd, request_id, PREEMPT_DAEMON_SYSTEM, text);
  }
  int32_t granted = 0, limit = 0;
  preemptd_job_grant_priority(ctx, client, request->priority_requested != 0, request->priority, &granted, &limit);
  /* A process's memory admission and scheduling share its one connection (runtime-host/daemon_link.c): a
   * MEM_ATTACH before the REGISTER already gave it its id. */
  uint32_t id = client->id ? client->id : ctx->next_client_id + 1;
  if (id == 0)
    id = 1;
  int page_fd = -1;
  preempt_client_page *page = NULL;
  if (preemptd_page_create(id, &page_fd, &page) != PREEMPT_DAEMON_OK) {
    snprintf(text, sizeof text, "cannot create the stub page: %s", strerror(errno));
    return preemptd_send_status(client->fd, request_id, PREEMPT_DAEMON_SYSTEM, text);
  }
  uint32_t gpus[PREEMPT_DAEMON_MAX_GPUS];
  for (uint32_t i = 0; i < request->gpu_count; i++)
    if ((status = preemptd_gpu_add(ctx, client, request->gpus, request->gpu_count, i, &gpus[i])) != PREEMPT_DAEMON_OK) {
      close(page_fd);
      preemptd_page_release(page);
      return preemptd_send_status(client->fd, request_id, status, "cannot add the GPU");
    }
  if (!client->id)
    ctx->next_client_id = id;
  client->id = id;
  client->priority = granted;
  client->priority_limit = limit;
  preempt_copy_name(client->program, sizeof client->program, request->program);
  client->gpu_count = request->gpu_count;
  memcpy(client->gpus, gpus, sizeof gpus);
  client->page = page;
  memset(client->stubs, 0, sizeof client->stubs);
  for (uint32_t s = 0; s < PREEMPT_STUBS_PER_CLIENT; s++)
    client->stubs[s].running_since_us = -1;
  client->registered = true;
  preemptd_update_leases(ctx); /* before the reply: the client's first launch may already start on it */

  preempt_msg_registered reply;
  memset(&reply, 0, sizeof reply);
  preempt_msg_header_init(&reply.header, PREEMPT_MSG_REGISTERED, sizeof reply, request_id);
  reply.client_id = id;
  reply.priority = granted;
  reply.priority_limit = limit;
  reply.stub_count = PREEMPT_STUBS_PER_CLIENT;
  reply.page_bytes = sizeof(preempt_client_page);
  reply.doorbell_bytes = sizeof(preempt_doorbell_page);
  int fds[2] = {page_fd, ctx->doorbell_fd};
  status = preemptd_send_fds(client->fd, &reply, sizeof reply, fds, 2);
  close(page_fd); /* the client has its own descriptor now; the daemon keeps only the mapping */
  char job[40] = "";
  if (client->job_id)
    snprintf(job, sizeof job, " job=%u step=%u", client->job_id, client->step_id);
  preemptd_log_client(ctx, client,
                      "register client=%u pid=%d uid=%u program=%s nice=%d priority=%d limit=%d gpus=%u%s", id,
                      (int)client->pid, (unsigned)client->uid, client->program, client->nice, granted, limit,
                      client->gpu_count, job);
  if (status != PREEMPT_DAEMON_OK)
    *hang_up = true; /* it cannot use a registration it never received */
  else
    preemptd_ring_doorbell(ctx); /* the scheduler rescans with the new page in its list */
  return status;
}

static preempt_daemon_status handle_set_priority(preemptd_context *ctx, preemptd_client *client,
                                                 const preempt_msg_set_priority *request, uint32_t request_id) {
  if (!client->registered)
    return preemptd_send_status(client->fd, request_id, PREEMPT_DAEMON_NOT_REGISTERED, "register first");
  client->priority = preempt_clamp_priority(request->priority, client->priority_limit);
  preemptd_log_client(ctx, client, "priority client=%u asked=%d granted=%d limit=%d", client->id, request->priority,
                      client->priority, client->priority_limit);
  preempt_msg_priority reply;
  memset(&reply, 0, sizeof reply);
  preempt_msg_header_init(&reply.header, PREEMPT_MSG_PRIORITY, sizeof reply, request_id);
  reply.priority = client->priority;
  reply.priority_limit = client->priority_limit;
  return preemptd_send(client->fd, &reply, sizeof reply);
}

static preempt_daemon_status handle_set_policy(preemptd_context *ctx, preemptd_client *client,
                                               const preempt_msg_set_policy *request, uint32_t request_id) {
  /* EffiSha §6.4 leaves the policy to the administrator: root, or whoever runs the daemon. */
  if (client->uid != 0 && client->uid != ctx->euid) {
    preemptd_log_client(ctx, client, "policy switch refused uid=%u", (unsigned)client->uid);
    return preemptd_send_status(client->fd, request_id, PREEMPT_DAEMON_NOT_PERMITTED,
                                "only root or the daemon's user may switch policies");
  }
  const preempt_sched_policy *policy = NULL;
  if (preempt_sched_policy_by_name(request->policy, &policy) != PREEMPT_SCHED_OK)
    return preemptd_send_status(client->fd, request_id, PREEMPT_DAEMON_UNKNOWN_POLICY,
                                "policies: fifo, hpf, ffs, piv, dprr, flexsched");
  static const uint8_t every_gpu[16] = {0};
  preempt_daemon_status status = PREEMPT_DAEMON_OK;
  if (memcmp(request->uuid, every_gpu, 16) == 0) {
    ctx->default_policy = policy; /* GPUs registered later get it too */
    for (uint32_t gpu = 0; gpu < ctx->gpu_count; gpu++)
      if (preemptd_gpu_set_policy(ctx, gpu, policy) != PREEMPT_DAEMON_OK)
        status = PREEMPT_DAEMON_SYSTEM;
    preemptd_log(ctx, "policy default -> %s", policy->name);
  } else {
    int gpu = preemptd_gpu_find(ctx, request->uuid);
    if (gpu < 0)
      return preemptd_send_status(client->fd, request_id, PREEMPT_DAEMON_UNKNOWN_GPU, "no client reported that GPU");
    status = preemptd_gpu_set_policy(ctx, (uint32_t)gpu, policy);
  }
  /* The switch happened either way; SYSTEM says a decision right after it failed (the log has it). */
  return preemptd_send_status(client->fd, request_id, status, status == PREEMPT_DAEMON_OK ? "ok" : "switched; see log");
}

/* One packet from a connection, under the lock. *hang_up when the connection must close. */
static void handle_packet(preemptd_context *ctx, preemptd_client *client, const void *bytes, size_t length,
                          bool truncated, bool *hang_up) {
  preempt_msg message;
  const char *field = "longer than any message";
  preempt_daemon_status status =
      truncated ? PREEMPT_DAEMON_MALFORMED : preempt_msg_decode_why(bytes, length, &message, &field);
  if (status != PREEMPT_DAEMON_OK) {
    /* What the decoder found wrong, so that whoever wrote the client can tell which field. */
    const char *text = field ? field : preempt_daemon_status_name(status);
    preemptd_log_client(ctx, client, "malformed message from pid=%d uid=%u client=%u (%zu bytes): %s", (int)client->pid,
                        (unsigned)client->uid, client->id, length, text);
    /* The id of a header that got that far, so the sender can match the refusal to its request. */
    uint32_t request_id = 0;
    if (length >= sizeof(preempt_msg_header))
      memcpy(&request_id, (const char *)bytes + offsetof(preempt_msg_header, request_id), sizeof request_id);
    (void)preemptd_send_status(client->fd, request_id, status, text); /* closing anyway */
    *hang_up = true;
    return;
  }
  switch (message.type) {
  case PREEMPT_MSG_REGISTER:
    status = handle_register(ctx, client, &message.body.register_request, message.request_id, hang_up);
    break;
  case PREEMPT_MSG_SET_PRIORITY:
    status = handle_set_priority(ctx, client, &message.body.set_priority, message.request_id);
    break;
  case PREEMPT_MSG_SET_POLICY:
    status = handle_set_policy(ctx, client, &message.body.set_policy, message.request_id);
    break;
  case PREEMPT_MSG_JOB:
    status = preemptd_job_message(ctx, client, &message.body.job, message.request_id);
    break;
  case PREEMPT_MSG_MEM_ATTACH:
    status = preemptd_mem_attach(ctx, client, &message.body.mem_attach, message.request_id);
    break;
  case PREEMPT_MSG_MEM_RESERVE:
    status = preemptd_mem_reserve(ctx, client, &message.body.mem_reserve, message.request_id);
    break;
  case PREEMPT_MSG_MEM_RELEASE:
    status = preemptd_mem_release(ctx, client, &message.body.mem_release, hang_up);
    break;
  case PREEMPT_MSG_MEM_CANCEL:
    status = preemptd_mem_cancel(ctx, client, &message.body.mem_cancel);
    break;
  case PREEMPT_MSG_MEM_QUERY:
    status = preemptd_mem_query(ctx, client, &message.body.mem_query, message.request_id);
    break;
  case PREEMPT_MSG_MEM_READING:
    status = preemptd_mem_reading(ctx, client, &message.body.mem_reading);
    break;
  case PREEMPT_MSG_LIST: {
    /* Static-free: the reply buffer lives on this thread's stack (64 KB, 8-byte aligned). */
    uint64_t buffer[PREEMPT_DAEMON_MAX_MESSAGE / 8];
    size_t bytes_out = 0;
    status = preemptd_build_listing(ctx, message.request_id, buffer, sizeof buffer, &bytes_out);
    status = status == PREEMPT_DAEMON_OK ? preemptd_send(client->fd, buffer, bytes_out)
                                         : preemptd_send_status(client->fd, message.request_id, status, NULL);
    break;
  }
  default:
    /* A reply type sent to the daemon: well-formed bytes, but not a request. */
    preemptd_log_client(ctx, client, "malformed message from pid=%d: type %u is not a request", (int)client->pid,
                        (unsigned)message.type);
    (void)preemptd_send_status(client->fd, message.request_id, PREEMPT_DAEMON_MALFORMED, "not a request");
    *hang_up = true;
    return;
  }
  /* Every handler returns whether its reply went out: a peer that cannot take one (its queue is full,
   * it does not read) is of no use connected. */
  if (status != PREEMPT_DAEMON_OK)
    *hang_up = true;
}

/* Reads one packet; closes the connection on hang-up, error, or a message that asks for it. */
static void serve_connection(preemptd_context *ctx, uint32_t slot) {
  preemptd_client *client = &ctx->clients[slot];
  uint64_t buffer[PREEMPT_DAEMON_MAX_MESSAGE / 8]; /* 8-byte aligned, as preempt_msg_decode wants */
  /* Descriptors a peer sends the daemon are never used: it keeps none, so they are closed at once. */
  int fd_count = 0, message_flags = 0;
  ssize_t got = preempt_receive_packet(client->fd, buffer, sizeof buffer, MSG_DONTWAIT, NULL, 0, &fd_count,
                                       &message_flags);
  if (got < 0 && (errno == EAGAIN || errno == EINTR))
    return;
  pthread_mutex_lock(&ctx->lock);
  if (got <= 0 || client->broken) {
    /* A broken client's connection is shut down already; whatever it sent before is not served. */
    disconnect(ctx, client, got == 0 ? "connection closed" : got < 0 ? strerror(errno) : "broken");
  } else {
    bool hang_up = false;
    handle_packet(ctx, client, buffer, (size_t)got, (message_flags & MSG_TRUNC) != 0, &hang_up);
    if (hang_up)
      disconnect(ctx, client, "malformed or refused message");
  }
  pthread_mutex_unlock(&ctx->lock);
}

static void accept_connections(preemptd_context *ctx) {
  for (;;) {
    int fd = accept4(ctx->listen_fd, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0)
      return; /* EAGAIN: all taken; anything else (EMFILE, a peer gone already) is retried at the next poll */
    pid_t pid = 0;
    uid_t uid = 0;
    int nice = 0, nice_error = 0;
    if (preemptd_peer_identify(fd, &pid, &uid, &nice, &nice_error) != PREEMPT_DAEMON_OK) {
      close(fd); /* gone before it was accepted: nothing to answer, nobody to grant a priority */
      continue;
    }
    pthread_mutex_lock(&ctx->lock);
    char why[PREEMPT_DAEMON_TEXT_BYTES];
    preemptd_client *slot = NULL;
    if (preemptd_connection_allowed(ctx, uid, why, sizeof why))
      for (uint32_t i = 0; i < PREEMPTD_MAX_CONNECTIONS && !slot; i++)
        if (ctx->clients[i].fd < 0)
          slot = &ctx->clients[i];
    if (!slot) {
      preemptd_log_uid(ctx, uid, "connection refused pid=%d uid=%u: %s", (int)pid, (unsigned)uid, why);
      pthread_mutex_unlock(&ctx->lock);
      preemptd_refusal_add(ctx, fd, uid, why);
      continue;
    }
    memset(slot, 0, sizeof *slot);
    slot->fd = fd;
    slot->pid = pid;
    slot->uid = uid;
    slot->nice = nice;
    slot->nice_error = nice_error;
    slot->trusted = preemptd_uid_trusted(ctx, uid);
    slot->connected_us = preemptd_monotonic_us();
    pthread_mutex_unlock(&ctx->lock);
  }
}

/* For the deadlines (connection_limits.c), which close under the lock as a hang-up does. */
static void close_late(preemptd_context *ctx, preemptd_client *client, const char *why) {
  (void)preemptd_send_status(client->fd, 0, PREEMPT_DAEMON_FULL, "closed: no REGISTER or MEM_ATTACH in time");
  disconnect(ctx, client, why);
}

preempt_daemon_status preemptd_serve_step(preemptd_context *ctx, int max_wait_ms, bool *stop) {
  struct pollfd polled[2 + PREEMPTD_MAX_REFUSING + PREEMPTD_MAX_CONNECTIONS];
  uint32_t slot_of[2 + PREEMPTD_MAX_REFUSING + PREEMPTD_MAX_CONNECTIONS];
  *stop = false;
  int timeout_ms = preemptd_connection_deadlines(ctx, close_late);
  if (max_wait_ms >= 0 && (timeout_ms < 0 || timeout_ms > max_wait_ms))
    timeout_ms = max_wait_ms;
  nfds_t count = 0;
  polled[count++] = (struct pollfd){ctx->signal_fd, POLLIN, 0};
  polled[count++] = (struct pollfd){ctx->listen_fd, POLLIN, 0};
  nfds_t first_refusal = count;
  for (uint32_t i = 0; i < PREEMPTD_MAX_REFUSING; i++)
    if (ctx->refusing[i].fd >= 0) {
      slot_of[count] = i;
      polled[count++] = (struct pollfd){ctx->refusing[i].fd, POLLIN, 0};
    }
  nfds_t first_client = count;
  pthread_mutex_lock(&ctx->lock);
  for (uint32_t i = 0; i < PREEMPTD_MAX_CONNECTIONS; i++)
    if (ctx->clients[i].fd >= 0) {
      slot_of[count] = i;
      polled[count++] = (struct pollfd){ctx->clients[i].fd, POLLIN, 0};
    }
  pthread_mutex_unlock(&ctx->lock);
  if (poll(polled, count, timeout_ms) < 0)
    return errno == EINTR ? PREEMPT_DAEMON_OK : PREEMPT_DAEMON_SYSTEM;
  if (polled[0].revents) {
    struct signalfd_siginfo info;
    if (read(ctx->signal_fd, &info, sizeof info) == (ssize_t)sizeof info) {
      pthread_mutex_lock(&ctx->lock);
      preemptd_log(ctx, "signal %u: stopping", info.ssi_signo);
      ctx->stopping = true;
      pthread_mutex_unlock(&ctx->lock);
      preemptd_ring_doorbell(ctx); /* wakes the scheduler thread to see `stopping` */
      *stop = true;
      return PREEMPT_DAEMON_OK;
    }
  }
  for (nfds_t i = first_refusal; i < first_client; i++)
    if (polled[i].revents && ctx->refusing[slot_of[i]].fd == polled[i].fd)
      preemptd_refusal_serve(ctx, slot_of[i]);
  /* Connections first, then new ones: hang-ups seen in this poll free their slots before a connection that came
   * after them asks for one (a client that waited for others to exit must find their slots free). */
  for (nfds_t i = first_client; i < count; i++) {
    /* Only this thread closes descriptors, so the slot still holds the fd that was polled. */
    if (polled[i].revents && ctx->clients[slot_of[i]].fd == polled[i].fd)
      serve_connection(ctx, slot_of[i]);
  }
  if (polled[1].revents)
    accept_connections(ctx);
  return PREEMPT_DAEMON_OK;
}

preempt_daemon_status preemptd_serve(preemptd_context *ctx) {
  for (;;) {
    bool stop = false;
    preempt_daemon_status status = preemptd_serve_step(ctx, -1, &stop);
    if (status != PREEMPT_DAEMON_OK || stop)
      return status;
  }
}
