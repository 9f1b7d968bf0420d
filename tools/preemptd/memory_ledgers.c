/* memory_ledgers.c: the daemon-kept ledger of each GPU's memory: MEM_ATTACH, RESERVE, RELEASE, CANCEL, QUERY, hang-ups.
 * schedGPU §3.1 (client-server: a request that does not fit waits on the server), §3.2 (the ledger), §5 (policies). */
#include "preemptd.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

static preemptd_mem_gpu *find_mem_gpu(preemptd_context *ctx, const uint8_t uuid[16]) {
  for (uint32_t index = 0; index < ctx->mem_gpu_count; index++)
    if (memcmp(ctx->mem_gpus[index].uuid, uuid, 16) == 0)
      return &ctx->mem_gpus[index];
  return NULL;
}

/* No client holds a slot in it and nothing waits: its entry may be given to another GPU. */
static bool ledger_idle(const preemptd_mem_gpu *gpu) {
  for (uint32_t index = 0; index < PREEMPT_MEM_MAX_CLIENTS; index++)
    if (gpu->ledger->clients[index].in_use)
      return false;
  return preempt_mem_ledger_waiting(gpu->ledger, PREEMPT_MEM_NO_INDEX) == 0;
}

/* A new capacity, never below what one client holds or one waiter asks (the ledger's own invariants). */
static void set_capacity(preemptd_mem_gpu *gpu, uint64_t total) {
  preempt_mem_ledger *ledger = gpu->ledger;
  for (uint32_t index = 0; index < PREEMPT_MEM_MAX_CLIENTS; index++)
    if (ledger->clients[index].in_use && ledger->clients[index].reserved_bytes > total)
      total = ledger->clients[index].reserved_bytes;
  for (uint32_t index = 0; index < PREEMPT_MEM_MAX_WAITERS; index++)
    if (ledger->waiters[index].state != PREEMPT_MEM_WAITER_FREE && ledger->waiters[index].bytes > total)
      total = ledger->waiters[index].bytes;
  ledger->capacity_bytes = total;
  if (ledger->external_bytes > total)
    ledger->external_bytes = total;
  (void)preempt_mem_ledger_serve(ledger);
}

/* A client's claim of the GPU's size, without NVML. Root's or the daemon's user's is believed; another user's can
 * only raise a capacity no trusted source gave (a size too large admits what the GPU then refuses, and the
 * allocation fails as it would without admission; one too small would hold every other user's requests back). */
static void claim_capacity(preemptd_context *ctx, preemptd_client *client, preemptd_mem_gpu *gpu, uint64_t total) {
  if (total == 0 || gpu->nvml_device || total == gpu->ledger->capacity_bytes)
    return;
  bool trusted = preemptd_uid_trusted(ctx, client->uid);
  if (!trusted && (gpu->capacity_trusted || total < gpu->ledger->capacity_bytes))
    return;
  set_capacity(gpu, total);
  gpu->capacity_trusted |= trusted;
  preemptd_log_client(ctx, client, "memory gpu=%u capacity=%llu from=%s uid=%u", (uint32_t)(gpu - ctx->mem_gpus),
                      (unsigned long long)gpu->ledger->capacity_bytes, trusted ? "trusted" : "client",
                      (unsigned)client->uid);
}

/* Memory GPU entries in whose ledger only clients of `uid` hold a slot: one unprivileged user may be the only one in
 * at most PREEMPTD_GPUS_PER_UID, so others' GPUs always find an entry. */
static uint32_t entries_only_of(const preemptd_context *ctx, uid_t uid) {
  uint32_t count = 0;
  for (uint32_t index = 0; index < ctx->mem_gpu_count; index++) {
    bool mine = false, others = false;
    for (uint32_t c = 0; c < PREEMPTD_MAX_CONNECTIONS; c++) {
      const preemptd_client *client = &ctx->clients[c];
      if (client->fd < 0 || !client->mem_attached || client->mem_slot[index] == PREEMPT_MEM_NO_INDEX)
        continue;
      mine |= client->uid == uid;
      others |= client->uid != uid;
    }
    count += mine && !others;
  }
  return count;
}

/* The ledger's entry for this GPU, added on first use: capacity from NVML when it knows the GPU, else the
 * client's reading (see claim_capacity). A full table gives the entry of a GPU nobody uses any more. NULL with
 * *result set when neither gives a size or the table is full. */
static preemptd_mem_gpu *mem_gpu_for(preemptd_context *ctx, preemptd_client *client, const uint8_t uuid[16],
                                     uint64_t reading_total, uint32_t *result) {
  preemptd_mem_gpu *known = find_mem_gpu(ctx, uuid);
  if (known) {
    claim_capacity(ctx, client, known, reading_total);
    return known;
  }
  if (!preemptd_uid_trusted(ctx, client->uid) && entries_only_of(ctx, client->uid) >= PREEMPTD_GPUS_PER_UID) {
    preemptd_log_client(ctx, client, "memory gpu refused client=%u uid=%u: %d GPUs hold only its clients already",
                        client->id, (unsigned)client->uid, PREEMPTD_GPUS_PER_UID);
    *result = PREEMPT_MEM_REPLY_FULL;
    return NULL;
  }
  preemptd_mem_gpu *gpu = NULL;
  if (ctx->mem_gpu_count < PREEMPTD_MAX_GPUS)
    gpu = &ctx->mem_gpus[ctx->mem_gpu_count];
  for (uint32_t index = 0; !gpu && index < ctx->mem_gpu_count; index++)
    if (ledger_idle(&ctx->mem_gpus[index]))
      gpu = &ctx->mem_gpus[index];
  if (!gpu) {
    *result = PREEMPT_MEM_REPLY_FULL;
    return NULL;
  }
  void *device = NULL;
  uint64_t total = 0, used = 0;
  bool from_nvml = preemptd_nvml_device(&ctx->nvml, uuid, &device) == PREEMPT_DAEMON_OK &&
                   preemptd_nvml_memory(&ctx->nvml, device, &total, &used) == PREEMPT_DAEMON_OK && total > 0;
  if (!from_nvml) {
    total = reading_total;
    used = 0;
  }
  if (total == 0) {
    *result = PREEMPT_MEM_REPLY_UNKNOWN_GPU;
    return NULL;
  }
  preempt_mem_ledger *ledger = gpu->ledger ? gpu->ledger : malloc(sizeof *ledger);
  if (!ledger) {
    *result = PREEMPT_MEM_REPLY_FULL;
    return NULL;
  }
  bool reused = gpu->ledger != NULL;
  memset(gpu, 0, sizeof *gpu);
  preempt_mem_ledger_init(ledger, total, ctx->mem_policy);
  preempt_mem_ledger_set_external(ledger, used);
  uint32_t index = (uint32_t)(gpu - ctx->mem_gpus);
  if (!reused)
    ctx->mem_gpu_count++;
  memcpy(gpu->uuid, uuid, 16);
  gpu->ledger = ledger;
  gpu->nvml_device = from_nvml ? device : NULL;
  gpu->capacity_trusted = from_nvml || preemptd_uid_trusted(ctx, client->uid);
  gpu->last_reading_us = preemptd_now_us(ctx);
  preemptd_log_client(ctx, client, "memory gpu=%u capacity=%llu external=%llu policy=%s from=%s%s", index,
                      (unsigned long long)total, (unsigned long long)used, preempt_mem_policy_name(ctx->mem_policy),
                      from_nvml ? "nvml" : gpu->capacity_trusted ? "trusted" : "client",
                      reused ? " (entry of an idle GPU reused)" : "");
  return gpu;
}

/* Without NVML: the lowest recent reading of any user. A user's reading replaces its last; readings older than
 * PREEMPTD_MEM_READING_AGE_US are forgotten. So one user's reading saying the GPU is full holds other users'
 * waiters back only while no other user has read less; a reading too low only admits an allocation that fails and
 * asks again with a fresh reading (RESERVE_AFTER_OOM). */
static uint64_t lowest_recent_used(preemptd_context *ctx, preemptd_mem_gpu *gpu, uid_t uid, uint64_t used) {
  double now = preemptd_now_us(ctx);
  preemptd_mem_sample *mine = NULL, *oldest = &gpu->readings[0];
  for (uint32_t i = 0; i < PREEMPTD_MEM_READERS; i++) {
    preemptd_mem_sample *reading = &gpu->readings[i];
    if (reading->at_us > 0 && reading->uid == uid)
      mine = reading;
    if (reading->at_us < oldest->at_us)
      oldest = reading;
  }
  if (!mine)
    mine = oldest;
  *mine = (preemptd_mem_sample){uid, 0, used, now};
  uint64_t lowest = used;
  for (uint32_t i = 0; i < PREEMPTD_MEM_READERS; i++) {
    const preemptd_mem_sample *reading = &gpu->readings[i];
    if (reading->at_us > 0 && now - reading->at_us <= PREEMPTD_MEM_READING_AGE_US && reading->used_bytes < lowest)
      lowest = reading->used_bytes;
  }
  return lowest;
}

/* After anything that changed what the ledger holds: the peak a client's reading is compared with. The level
 * before this change was held until now, so it counts as recent as now. */
static void note_used(preemptd_context *ctx, preemptd_mem_gpu *gpu) {
  double now = preemptd_now_us(ctx);
  uint64_t used = preempt_mem_ledger_used_bytes(gpu->ledger);
  if (gpu->last_used_bytes >= gpu->peak_used_bytes || now - gpu->peak_since_us > PREEMPTD_MEM_READING_AGE_US)
    gpu->peak_used_bytes = gpu->last_used_bytes;
  if (used >= gpu->peak_used_bytes)
    gpu->peak_used_bytes = used;
  gpu->peak_since_us = now;
  gpu->last_used_bytes = used;
}

/* The most the ledger held over the last PREEMPTD_MEM_READING_AGE_US, what it holds now included. */
static uint64_t recent_peak(preemptd_context *ctx, const preemptd_mem_gpu *gpu) {
  uint64_t used = preempt_mem_ledger_used_bytes(gpu->ledger);
  bool recent = preemptd_now_us(ctx) - gpu->peak_since_us <= PREEMPTD_MEM_READING_AGE_US;
  return recent && gpu->peak_used_bytes > used ? gpu->peak_used_bytes : used;
}

static uint32_t mem_gpu_index(const preemptd_context *ctx, const preemptd_mem_gpu *gpu) {
  return (uint32_t)(gpu - ctx->mem_gpus);
}

/* What the GPU says is used, less what the ledger accounts for, is used outside it. Readings race with frees
 * in flight (a client frees on the GPU before its RELEASE arrives), which can only make external look smaller
 * for a moment: an allocation that then fails comes back with RESERVE_AFTER_OOM and a fresh reading. */
static void learn_external(preemptd_context *ctx, preemptd_mem_gpu *gpu, const preemptd_client *client,
                           uint64_t reading_total, uint64_t reading_used) {
  uint64_t total = reading_total, used = reading_used;
  if (gpu->nvml_device && preemptd_nvml_memory(&ctx->nvml, gpu->nvml_device, &total, &used) != PREEMPT_DAEMON_OK)
    return;
  if (total == 0)
    return; /* no reading */
  if (!gpu->nvml_device && client)
    used = lowest_recent_used(ctx, gpu, client->uid, used);
  uint64_t accounted = preempt_mem_ledger_used_bytes(gpu->ledger);
  /* NVML is read now, under the lock; a client's reading is older (see peak_used_bytes). Too small an external
   * costs an allocation that fails and asks again (RESERVE_AFTER_OOM); too large, waiters held back. */
  if (!gpu->nvml_device)
    accounted = recent_peak(ctx, gpu);
  uint64_t external = used > accounted ? used - accounted : 0;
  if (external > gpu->ledger->capacity_bytes)
    external = gpu->ledger->capacity_bytes;
  preempt_mem_ledger_set_external(gpu->ledger, external);
  gpu->last_reading_us = preemptd_now_us(ctx);
}

static void fill_reply(const preemptd_context *ctx, const preemptd_mem_gpu *gpu, uint32_t slot,
                       preempt_msg_mem_reply *reply, uint32_t request_id, uint32_t result) {
  memset(reply, 0, sizeof *reply);
  preempt_msg_header_init(&reply->header, PREEMPT_MSG_MEM_REPLY, sizeof *reply, request_id);
  reply->result = result;
  preempt_copy_name(reply->policy, sizeof reply->policy, preempt_mem_policy_name(ctx->mem_policy));
  if (!gpu)
    return;
  const preempt_mem_ledger *ledger = gpu->ledger;
  for (uint32_t index = 0; index < PREEMPT_MEM_MAX_CLIENTS; index++)
    reply->clients += ledger->clients[index].in_use;
  reply->waiting = preempt_mem_ledger_waiting(ledger, PREEMPT_MEM_NO_INDEX);
  reply->readings_from_nvml = gpu->nvml_device != NULL;
  reply->capacity_bytes = ledger->capacity_bytes;
  reply->external_bytes = ledger->external_bytes;
  reply->reserved_bytes = preempt_mem_ledger_used_bytes(ledger);
  reply->held_bytes = slot == PREEMPT_MEM_NO_INDEX ? 0 : ledger->clients[slot].reserved_bytes;
  reply->dead_clients = ledger->dead_clients;
  preempt_copy_name(reply->policy, sizeof reply->policy, preempt_mem_policy_name((preempt_mem_policy)ledger->policy));
}

static preempt_daemon_status send_reply(preemptd_context *ctx, preemptd_client *client, const preemptd_mem_gpu *gpu,
                                        uint32_t request_id, uint32_t result) {
  preempt_msg_mem_reply reply;
  uint32_t slot = gpu ? client->mem_slot[mem_gpu_index(ctx, gpu)] : PREEMPT_MEM_NO_INDEX;
  fill_reply(ctx, gpu, slot, &reply, request_id, result);
  return preemptd_send(client->fd, &reply, sizeof reply);
}

/* Every waiting RESERVE the ledger has granted since: its client takes the bytes and is told. A client that
 * cannot take the reply is of no use connected: it is shut down, and its hang-up gives the bytes back. */
static void deliver_grants(preemptd_context *ctx, preemptd_mem_gpu *gpu) {
  uint32_t gpu_index = mem_gpu_index(ctx, gpu);
  note_used(ctx, gpu); /* every path that changes the ledger ends here */
  for (uint32_t index = 0; index < PREEMPTD_MAX_CONNECTIONS; index++) {
    preemptd_client *client = &ctx->clients[index];
    if (client->fd < 0 || !client->mem_attached || client->broken || !client->mem_waiting ||
        client->mem_wait_gpu != gpu_index)
      continue;
    uint32_t slot = client->mem_slot[gpu_index];
    if (gpu->ledger->waiters[client->mem_wait_entry].state != PREEMPT_MEM_WAITER_GRANTED)
      continue;
    preempt_mem_ledger_take(gpu->ledger, slot, client->mem_wait_entry);
    client->mem_waiting = false;
    /* Only a grant that waited is logged: a flushed line per allocation would lengthen every round trip. */
    if (client->mem_wait_logged)
      preemptd_log_client(ctx, client, "memory grant client=%u gpu=%u bytes=%llu waited_us=%.0f", client->id,
                          gpu_index, (unsigned long long)client->mem_wait_bytes,
                          preemptd_now_us(ctx) - client->mem_wait_since_us);
    if (send_reply(ctx, client, gpu, client->mem_wait_request_id, PREEMPT_MEM_REPLY_GRANTED) != PREEMPT_DAEMON_OK) {
      preemptd_log_client(ctx, client, "memory client=%u pid=%d cannot take its grant: disconnecting", client->id,
                          (int)client->pid);
      client->broken = true;
      shutdown(client->fd, SHUT_RDWR);
    }
  }
}

preempt_daemon_status preemptd_mem_attach(preemptd_context *ctx, preemptd_client *client,
                                          const preempt_msg_mem_attach *request, uint32_t request_id) {
  if (client->mem_attached)
    return preemptd_send_status(client->fd, request_id, PREEMPT_DAEMON_MALFORMED, "already attached");
  if (client->nice_error) {
    char text[PREEMPT_DAEMON_TEXT_BYTES];
    snprintf(text, sizeof text, "cannot read the nice value of pid %d: %s", (int)client->pid,
             strerror(client->nice_error));
    return preemptd_send_status(client->fd, request_id, PREEMPT_DAEMON_SYSTEM, text);
  }
  int32_t granted = 0, limit = 0;
  preemptd_job_grant_priority(ctx, client, request->priority_requested != 0, request->priority, &granted, &limit);
  if (client->id == 0) {
    client->id = ctx->next_client_id + 1 ? ctx->next_client_id + 1 : 1;
    ctx->next_client_id = client->id;
  }
  client->mem_attached = true;
  client->mem_priority = granted;
  client->mem_priority_limit = limit;
  client->mem_waiting = false;
  for (uint32_t gpu = 0; gpu < PREEMPTD_MAX_GPUS; gpu++)
    client->mem_slot[gpu] = PREEMPT_MEM_NO_INDEX;
  if (!client->program[0])
    preempt_copy_name(client->program, sizeof client->program, request->program);
  preempt_msg_mem_attached reply;
  memset(&reply, 0, sizeof reply);
  preempt_msg_header_init(&reply.header, PREEMPT_MSG_MEM_ATTACHED, sizeof reply, request_id);
  reply.client_id = client->id;
  reply.priority = granted;
  reply.priority_limit = limit;
  reply.flags = ctx->nvml.library ? 0 : PREEMPT_MEM_DAEMON_WANTS_READINGS;
  preemptd_log_client(ctx, client, "memory attach client=%u pid=%d uid=%u program=%s priority=%d limit=%d job=%u",
                      client->id, (int)client->pid, (unsigned)client->uid, request->program, granted, limit,
                      client->job_id);
  return preemptd_send(client->fd, &reply, sizeof reply);
}

/* The client's slot in this GPU's ledger, taken on its first request there. */
static uint32_t slot_for(preemptd_context *ctx, preemptd_client *client, preemptd_mem_gpu *gpu) {
  uint32_t gpu_index = mem_gpu_index(ctx, gpu);
  if (client->mem_slot[gpu_index] == PREEMPT_MEM_NO_INDEX) {
    uint32_t slot;
    if (preempt_mem_ledger_attach(gpu->ledger, (uint32_t)client->pid, client->mem_priority, client->id, &slot) !=
        PREEMPT_MEM_OK)
      return PREEMPT_MEM_NO_INDEX;
    client->mem_slot[gpu_index] = slot;
  }
  return client->mem_slot[gpu_index];
}

preempt_daemon_status preemptd_mem_reserve(preemptd_context *ctx, preemptd_client *client,
                                           const preempt_msg_mem_reserve *request, uint32_t request_id) {
  if (!client->mem_attached)
    return preemptd_send_status(client->fd, request_id, PREEMPT_DAEMON_NOT_REGISTERED, "MEM_ATTACH first");
  uint32_t result = PREEMPT_MEM_REPLY_GRANTED;
  preemptd_mem_gpu *gpu = mem_gpu_for(ctx, client, request->uuid, request->device_total_bytes, &result);
  if (!gpu)
    return send_reply(ctx, client, NULL, request_id, result);
  /* One request waits per client: the runtime sends one at a time, and a client cannot fill the shared queue. */
  uint32_t slot = client->mem_waiting ? PREEMPT_MEM_NO_INDEX : slot_for(ctx, client, gpu);
  if (slot == PREEMPT_MEM_NO_INDEX)
    return send_reply(ctx, client, gpu, request_id, PREEMPT_MEM_REPLY_FULL);
  preempt_mem_ledger *ledger = gpu->ledger;
  if (request->flags & PREEMPT_MEM_RESERVE_NOW) {
    /* Memory the client has allocated already; never more than the GPU has, so a lie cannot wedge the ledger
     * beyond what allocating the whole GPU would. */
    if (request->bytes > ledger->capacity_bytes - ledger->clients[slot].reserved_bytes)
      return send_reply(ctx, client, gpu, request_id, PREEMPT_MEM_REPLY_NEVER_FITS);
    preempt_mem_ledger_restore(ledger, slot, request->bytes);
    note_used(ctx, gpu);
    return send_reply(ctx, client, gpu, request_id, PREEMPT_MEM_REPLY_GRANTED);
  }
  /* The job's limit (Slurm's --gpu-mem) counts every process of the job on this node, every GPU. Memory already
   * allocated (RESERVE_NOW, above) is recorded whatever the limit: refusing it would not free it. */
  if (client->job_mem_limit_bytes) {
    uint64_t held = preemptd_job_held_bytes(ctx, client->job_id);
    if (held > client->job_mem_limit_bytes || request->bytes > client->job_mem_limit_bytes - held) {
      preemptd_log_client(ctx, client, "memory over limit client=%u job=%u bytes=%llu held=%llu limit=%llu", client->id,
                          client->job_id, (unsigned long long)request->bytes, (unsigned long long)held,
                          (unsigned long long)client->job_mem_limit_bytes);
      return send_reply(ctx, client, gpu, request_id, PREEMPT_MEM_REPLY_OVER_LIMIT);
    }
  }
  if (request->flags & PREEMPT_MEM_RESERVE_AFTER_OOM)
    learn_external(ctx, gpu, client, request->device_total_bytes, request->device_used_bytes);
  uint32_t entry;
  preempt_mem_result queued = preempt_mem_ledger_request(ledger, slot, request->bytes, &entry);
  if (queued == PREEMPT_MEM_NEVER_FITS)
    return send_reply(ctx, client, gpu, request_id, PREEMPT_MEM_REPLY_NEVER_FITS);
  if (queued != PREEMPT_MEM_OK)
    return send_reply(ctx, client, gpu, request_id, PREEMPT_MEM_REPLY_FULL);
  if (ledger->waiters[entry].state == PREEMPT_MEM_WAITER_WAITING && !(request->flags & PREEMPT_MEM_RESERVE_AFTER_OOM)) {
    /* Not granted by the ledger as it stood: maybe memory counted outside it was freed since the last look. */
    learn_external(ctx, gpu, client, request->device_total_bytes, request->device_used_bytes);
  }
  uint32_t gpu_index = mem_gpu_index(ctx, gpu);
  client->mem_waiting = true;
  client->mem_wait_gpu = gpu_index;
  client->mem_wait_entry = entry;
  client->mem_wait_request_id = request_id;
  client->mem_wait_bytes = request->bytes;
  client->mem_wait_since_us = preemptd_now_us(ctx);
  client->mem_wait_logged = ledger->waiters[entry].state == PREEMPT_MEM_WAITER_WAITING;
  if (client->mem_wait_logged)
    preemptd_log_client(ctx, client, "memory wait client=%u gpu=%u bytes=%llu reserved=%llu external=%llu",
                        client->id, gpu_index, (unsigned long long)request->bytes,
                        (unsigned long long)preempt_mem_ledger_used_bytes(ledger),
                        (unsigned long long)ledger->external_bytes);
  /* Granted at once, or others granted by the external reading: each told now. */
  deliver_grants(ctx, gpu);
  return PREEMPT_DAEMON_OK;
}

preempt_daemon_status preemptd_mem_release(preemptd_context *ctx, preemptd_client *client,
                                           const preempt_msg_mem_release *request, bool *hang_up) {
  if (!client->mem_attached) {
    *hang_up = true;
    return preemptd_send_status(client->fd, request->header.request_id, PREEMPT_DAEMON_NOT_REGISTERED,
                                "MEM_ATTACH first");
  }
  preemptd_mem_gpu *gpu = find_mem_gpu(ctx, request->uuid);
  uint32_t slot = gpu ? client->mem_slot[mem_gpu_index(ctx, gpu)] : PREEMPT_MEM_NO_INDEX;
  /* Giving back what it does not hold is a broken client: it would free memory that is another's. */
  if (slot == PREEMPT_MEM_NO_INDEX || preempt_mem_ledger_release(gpu->ledger, slot, request->bytes) != PREEMPT_MEM_OK) {
    preemptd_log_client(ctx, client, "memory release refused client=%u pid=%d bytes=%llu: more than it holds",
                        client->id, (int)client->pid, (unsigned long long)request->bytes);
    *hang_up = true;
    return preemptd_send_status(client->fd, request->header.request_id, PREEMPT_DAEMON_MALFORMED,
                                "MEM_RELEASE of more than the client holds");
  }
  deliver_grants(ctx, gpu);
  return PREEMPT_DAEMON_OK;
}

preempt_daemon_status preemptd_mem_cancel(preemptd_context *ctx, preemptd_client *client,
                                          const preempt_msg_mem_cancel *request) {
  /* Nothing waits under that id (already answered, or never sent): the client reads the answer it was sent. */
  if (!client->mem_attached || !client->mem_waiting || client->mem_wait_request_id != request->reserve_request_id)
    return PREEMPT_DAEMON_OK;
  preemptd_mem_gpu *gpu = &ctx->mem_gpus[client->mem_wait_gpu];
  preempt_mem_ledger_cancel(gpu->ledger, client->mem_slot[client->mem_wait_gpu], client->mem_wait_entry);
  client->mem_waiting = false;
  preemptd_log_client(ctx, client, "memory cancel client=%u gpu=%u bytes=%llu", client->id, client->mem_wait_gpu,
                      (unsigned long long)client->mem_wait_bytes);
  preempt_daemon_status status = send_reply(ctx, client, gpu, request->reserve_request_id, PREEMPT_MEM_REPLY_CANCELLED);
  deliver_grants(ctx, gpu); /* a FIFO head that leaves lets those behind it go */
  return status;
}

preempt_daemon_status preemptd_mem_query(preemptd_context *ctx, preemptd_client *client,
                                         const preempt_msg_mem_query *request, uint32_t request_id) {
  if (!client->mem_attached)
    return preemptd_send_status(client->fd, request_id, PREEMPT_DAEMON_NOT_REGISTERED, "MEM_ATTACH first");
  uint32_t result = PREEMPT_MEM_REPLY_LEDGER;
  preemptd_mem_gpu *gpu = mem_gpu_for(ctx, client, request->uuid, request->device_total_bytes, &result);
  /* Without a size for it (no NVML, no reading) or room for it, the answer says so with an empty ledger. */
  if (gpu)
    (void)slot_for(ctx, client, gpu);
  return send_reply(ctx, client, gpu, request_id, gpu ? PREEMPT_MEM_REPLY_LEDGER : result);
}

preempt_daemon_status preemptd_mem_reading(preemptd_context *ctx, preemptd_client *client,
                                           const preempt_msg_mem_reading *request) {
  preemptd_mem_gpu *gpu = find_mem_gpu(ctx, request->uuid);
  /* NVML's reading, when the daemon has one, is not to be overridden by a client's. */
  if (!client->mem_attached || !gpu || gpu->nvml_device)
    return PREEMPT_DAEMON_OK;
  learn_external(ctx, gpu, client, request->device_total_bytes, request->device_used_bytes);
  deliver_grants(ctx, gpu);
  return PREEMPT_DAEMON_OK;
}

void preemptd_mem_detach(preemptd_context *ctx, preemptd_client *client) {
  if (!client->mem_attached)
    return;
  client->mem_attached = false;
  client->mem_waiting = false;
  for (uint32_t index = 0; index < ctx->mem_gpu_count; index++) {
    uint32_t slot = client->mem_slot[index];
    if (slot == PREEMPT_MEM_NO_INDEX)
      continue;
    preemptd_mem_gpu *gpu = &ctx->mem_gpus[index];
    uint64_t held = gpu->ledger->clients[slot].reserved_bytes;
    uint32_t waiting = preempt_mem_ledger_waiting(gpu->ledger, slot);
    if (held || waiting) {
      gpu->ledger->dead_clients++;
      preemptd_log_client(ctx, client, "memory reclaim client=%u pid=%d gpu=%u bytes=%llu waiting=%u", client->id,
                          (int)client->pid, index, (unsigned long long)held, waiting);
    }
    preempt_mem_ledger_detach(gpu->ledger, slot);
    client->mem_slot[index] = PREEMPT_MEM_NO_INDEX;
    deliver_grants(ctx, gpu);
  }
}

void preemptd_mem_poll(preemptd_context *ctx) {
  double now = preemptd_now_us(ctx);
  for (uint32_t index = 0; index < ctx->mem_gpu_count; index++) {
    preemptd_mem_gpu *gpu = &ctx->mem_gpus[index];
    /* The clock first: this runs at every scheduler wake-up, and a ledger's waiters take a scan to count. */
    if (!gpu->nvml_device || now - gpu->last_reading_us < PREEMPTD_MEM_POLL_US ||
        preempt_mem_ledger_waiting(gpu->ledger, PREEMPT_MEM_NO_INDEX) == 0)
      continue;
    /* Memory freed outside the ledger (another program, a client's context going away) lets waiters go. */
    learn_external(ctx, gpu, NULL, 0, 0);
    deliver_grants(ctx, gpu);
  }
}

void preemptd_mem_free(preemptd_context *ctx) {
  for (uint32_t index = 0; index < ctx->mem_gpu_count; index++) {
    free(ctx->mem_gpus[index].ledger);
    ctx->mem_gpus[index].ledger = NULL;
  }
  ctx->mem_gpu_count = 0;
  preemptd_nvml_close(&ctx->nvml);
}
