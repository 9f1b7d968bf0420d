/* stub_scan.c: turns what clients wrote into their stub pages into scheduler events (arrival, eviction done, completion).
 * EffiSha §6.1 (the stub states and who moves them); FLEP §4.2 (each finished launch and eviction trains the models). */
#include "preemptd.h"

#include <string.h>

/* How many passes one wake-up makes at most: a pass that changes stubs may make more work (a command
 * lost to a completion); more than this means a client is racing the daemon, and the next ring or the
 * 100 ms rescan picks the rest up. */
#define SCAN_PASSES 8

/* Moves the client makes between two scans are not all seen one by one: FREE -> PREP -> READY shows as
 * FREE -> READY, and TORUN -> RUNNING -> DONE as TORUN -> DONE. Anything else is the header's table. */
static bool client_could_reach(uint32_t from, uint32_t to) {
  if (preempt_stub_move_allowed(from, to, 0))
    return true;
  return (from == PREEMPT_STUB_FREE && to == PREEMPT_STUB_READY) ||
         (from == PREEMPT_STUB_FREE && to == PREEMPT_STUB_RUNNING) || /* started on a lease */
         (from == PREEMPT_STUB_TORUN && to == PREEMPT_STUB_DONE);
}

/* SMs the kernel holds that are not draining an eviction. */
static uint32_t working_sms(const preempt_sched_state *sched, uint32_t kernel_id) {
  uint32_t count = 0;
  for (uint32_t sm = 0; sm < sched->gpu.sm_count; sm++)
    count += sched->gpu.sm_owner[sm] == kernel_id && !sched->gpu.sm_draining[sm];
  return count;
}

static void features_of(const preempt_stub *copy, preempt_kernel_features *features) {
  features->grid_blocks = (double)copy->grid[0] * copy->grid[1] * copy->grid[2];
  features->block_threads = (double)copy->block[0] * copy->block[1] * copy->block[2];
  features->shared_bytes = (double)copy->shared_bytes;
  features->input_bytes = (double)copy->input_bytes;
}

/* The FFS weight a launch gets (FLEP §5.2.2 W_i): what its stub asks for (0 reads as 1), clamped to the client's
 * limit, PREEMPT_WEIGHT_MAX for root and 1 for anyone else: a user other than root cannot raise its share of
 * the GPU above the default, as with priorities (EffiSha §6.4). preempt_stub_validate already refused > MAX. */
static uint32_t granted_weight(const preemptd_client *client, uint32_t asked) {
  uint32_t limit = client->uid == 0 ? PREEMPT_WEIGHT_MAX : 1;
  uint32_t weight = asked ? asked : 1;
  return weight < limit ? weight : limit;
}

/* A new launch's stub, as copied: MALFORMED (with `why`) naming the first bad field. */
static preempt_daemon_status check_stub(const preemptd_client *client, uint32_t index, const preempt_stub *copy,
                                        char *why, size_t why_bytes) {
  const char *bad = NULL;
  if (preempt_stub_validate(copy, client->gpu_count, &bad) == PREEMPT_DAEMON_OK)
    return PREEMPT_DAEMON_OK;
  snprintf(why, why_bytes, "stub %u: bad launch field %s", index, bad ? bad : "?");
  return PREEMPT_DAEMON_MALFORMED;
}

/* A checked new launch into the scheduler. FULL leaves the stub as it is for a later scan (the table frees as
 * kernels end). `started`: its client started it on a lease (PREP -> RUNNING) and the GPU is idle: the scheduler
 * takes it as running on every SM before the policy hears of it (leases.c). */
static preempt_daemon_status admit(preemptd_context *ctx, preemptd_client *client, uint32_t index,
                                   const preempt_stub *copy, bool started, char *why, size_t why_bytes) {
  preemptd_stub_record *record = &client->stubs[index];
  uint32_t gpu_index = client->gpus[copy->gpu];
  preemptd_gpu *gpu = &ctx->gpus[gpu_index];
  if (gpu->sched->kernel_count == PREEMPT_SCHED_MAX_KERNELS) {
    if (!record->deferred_logged)
      preemptd_log(ctx, "arrival deferred client=%u stub=%u: gpu=%u has %u kernels", client->id, index, gpu_index,
                   gpu->sched->kernel_count);
    record->deferred_logged = true;
    return PREEMPT_DAEMON_FULL;
  }
  preempt_kernel_features features;
  features_of(copy, &features);
  double predicted = 0, cost = 0;
  /* The user's own model: another user's clients cannot make this launch look long or short (docs/daemon.md). */
  if (preemptd_predict(&gpu->models, client->uid, copy->kernel_key, &features, &predicted, &cost) !=
      PREEMPT_DAEMON_OK) {
    snprintf(why, why_bytes, "stub %u: launch features out of range", index);
    return PREEMPT_DAEMON_MALFORMED;
  }
  preempt_sched_kernel kernel;
  memset(&kernel, 0, sizeof kernel);
  if (++ctx->next_kernel_id == 0)
    ctx->next_kernel_id = 1;
  kernel.id = ctx->next_kernel_id;
  kernel.client_id = client->id;
  /* The stub's priority is the client's to write; the limit is the daemon's (EffiSha §6.4). */
  kernel.priority = preempt_clamp_priority(copy->priority, client->priority_limit);
  kernel.weight = granted_weight(client, copy->weight);
  kernel.predicted = predicted;
  kernel.eviction_cost = cost;
  uint64_t sms = ((uint64_t)copy->persistent_ctas + copy->ctas_per_sm - 1) / copy->ctas_per_sm;
  kernel.sms_needed = sms > UINT32_MAX ? UINT32_MAX : (uint32_t)sms; /* >= sm_count: the whole GPU */
  /* FlexSched §4.3's inputs; registers_per_thread 0 (unknown) keeps the kernel from ever being co-located.
   * preempt_stub_validate bounded the sum of the shared sizes by 16 MiB, so it fits 32 bits. */
  kernel.footprint.threads = copy->block[0] * copy->block[1] * copy->block[2];
  kernel.footprint.registers_per_thread = copy->registers_per_thread;
  kernel.footprint.shared_bytes = (uint32_t)(copy->static_shared_bytes + copy->shared_bytes);
  kernel.task_count = copy->task_count;
  preempt_daemon_status status = preemptd_gpu_advance(ctx, gpu_index);
  if (status != PREEMPT_DAEMON_OK || preempt_sched_add_kernel(gpu->sched, &kernel) != PREEMPT_SCHED_OK)
    return PREEMPT_DAEMON_SYSTEM;
  if (started) {
    preempt_sched_decision run = {PREEMPT_ACTION_RUN, kernel.id, true, {{0}}, 0};
    if (preempt_sched_apply(gpu->sched, &run) != PREEMPT_SCHED_OK)
      return PREEMPT_DAEMON_SYSTEM;
  }
  memset(record, 0, sizeof *record);
  record->seen = started ? PREEMPT_STUB_RUNNING : PREEMPT_STUB_READY;
  record->kernel_id = kernel.id;
  record->gpu = gpu_index;
  record->command_sequence = copy->command_sequence; /* continue the stub's numbering */
  record->kernel_key = copy->kernel_key;
  record->features = features;
  memcpy(record->name, copy->name, sizeof record->name);
  record->priority = kernel.priority;
  record->weight = kernel.weight;
  record->predicted_us = predicted;
  record->running_since_us = started ? preemptd_now_us(ctx) : -1;
  record->ready_since_us = started ? 0 : preemptd_now_us(ctx);
  client->launches++;
  client->usage[gpu_index].launches++;
  /* weight: granted; weight_asked only when the clamp changed it. */
  char asked[32] = "";
  if (kernel.weight != (copy->weight ? copy->weight : 1))
    snprintf(asked, sizeof asked, " weight_asked=%u", copy->weight);
  /* The footprint only when the launch has one: the version 3 line stays as it was for the others. */
  char footprint[96] = "";
  if (copy->registers_per_thread != 0)
    snprintf(footprint, sizeof footprint, " threads=%u registers=%u shared=%u tasks=%u", kernel.footprint.threads,
             kernel.footprint.registers_per_thread, kernel.footprint.shared_bytes, kernel.task_count);
  preemptd_log(ctx, "arrival client=%u stub=%u kernel=%u name=%s gpu=%u priority=%d predicted_us=%.0f cost_us=%.0f "
               "sms_needed=%u weight=%u%s%s%s",
               client->id, index, kernel.id, record->name, gpu_index, kernel.priority, predicted, cost,
               kernel.sms_needed, kernel.weight, asked, footprint, started ? " started=lease" : "");
  return preemptd_gpu_decide(ctx, gpu_index, PREEMPT_EVENT_ARRIVAL, kernel.id);
}

/* PREP -> READY: a new launch. */
static preempt_daemon_status arrival(preemptd_context *ctx, preemptd_client *client, uint32_t index,
                                     const preempt_stub *copy, char *why, size_t why_bytes) {
  preempt_daemon_status status = check_stub(client, index, copy, why, why_bytes);
  return status == PREEMPT_DAEMON_OK ? admit(ctx, client, index, copy, false, why, why_bytes) : status;
}

/* DONE -> FREE once the daemon has accounted for the launch: the stub is the client's again. A CAS, so a client
 * that already scribbled on it is not overwritten; the next scan judges what it wrote. */
static void free_stub(preemptd_client *client, uint32_t index) {
  preemptd_stub_record *record = &client->stubs[index];
  memset(record, 0, sizeof *record);
  record->seen = PREEMPT_STUB_FREE;
  record->running_since_us = -1;
  uint32_t expected = PREEMPT_STUB_DONE;
  if (__atomic_compare_exchange_n(&client->page->stubs[index].state, &expected, PREEMPT_STUB_FREE, false,
                                  __ATOMIC_RELEASE, __ATOMIC_RELAXED))
    preempt_futex_ring(&client->page->client_wake); /* a launch may be waiting for a free stub */
}

/* PREP -> RUNNING: the client started the launch itself on a lease. Taken as a running arrival while the lease
 * still holds and the GPU is idle; otherwise (another client's launch came first and the lease was withdrawn
 * after the client read it) it is told to leave every SM at once, outside the scheduler, and arrives as a held
 * launch once it is READY (leases.c, docs/daemon.md "Leases"). */
static preempt_daemon_status scan_stub(preemptd_context *ctx, preemptd_client *client, uint32_t index, bool *changed,
                                       char *why, size_t why_bytes);

/* The client's own launches that finished (DONE) but are still counted on the GPU: a launch that follows its
 * predecessor at once can take a lower stub than the predecessor's DONE one, and the scan, in stub order, would
 * otherwise find the GPU busy with a kernel that already ended and evict the new launch from every SM. */
static preempt_daemon_status complete_own_done(preemptd_context *ctx, preemptd_client *client, uint32_t except,
                                               char *why, size_t why_bytes) {
  for (uint32_t other = 0; other < PREEMPT_STUBS_PER_CLIENT; other++) {
    uint32_t state = __atomic_load_n(&client->page->stubs[other].state, __ATOMIC_ACQUIRE);
    if (other == except || state != PREEMPT_STUB_DONE || client->stubs[other].seen == PREEMPT_STUB_DONE)
      continue;
    bool moved = false;
    preempt_daemon_status status = scan_stub(ctx, client, other, &moved, why, why_bytes);
    if (status == PREEMPT_DAEMON_MALFORMED)
      return status;
  }
  return PREEMPT_DAEMON_OK;
}

static preempt_daemon_status lease_start(preemptd_context *ctx, preemptd_client *client, uint32_t index,
                                         const preempt_stub *copy, char *why, size_t why_bytes) {
  preempt_daemon_status status = check_stub(client, index, copy, why, why_bytes);
  if (status != PREEMPT_DAEMON_OK)
    return status;
  uint32_t gpu_index = client->gpus[copy->gpu];
  preemptd_gpu *gpu = &ctx->gpus[gpu_index];
  if (preemptd_client_leased(client, copy->gpu) &&
      (status = complete_own_done(ctx, client, index, why, why_bytes)) != PREEMPT_DAEMON_OK)
    return status;
  preempt_sm_set idle;
  preempt_sched_free_sms(gpu->sched, &idle);
  if (preemptd_client_leased(client, copy->gpu) && preempt_sm_set_count(&idle) == gpu->sched->gpu.sm_count &&
      gpu->sched->kernel_count < PREEMPT_SCHED_MAX_KERNELS)
    return admit(ctx, client, index, copy, true, why, why_bytes);
  preemptd_stub_record *record = &client->stubs[index];
  memset(record, 0, sizeof *record);
  record->seen = PREEMPT_STUB_RUNNING;
  record->gpu = gpu_index;
  record->command_sequence = copy->command_sequence;
  record->running_since_us = -1;
  record->unscheduled = true;
  preemptd_log(ctx, "lease-start refused client=%u stub=%u gpu=%u: %s; evicting it", client->id, index, gpu_index,
               preemptd_client_leased(client, copy->gpu) ? "the GPU is busy" : "no lease");
  /* A lost command means it moved on (DONE): the next pass frees it. */
  (void)preemptd_issue_evict_all(ctx, client, index);
  return PREEMPT_DAEMON_OK;
}

/* A launch started on a withdrawn lease, sent away: READY (it left, and now waits like any held launch) or DONE
 * (it finished first). */
static preempt_daemon_status unscheduled_moved(preemptd_context *ctx, preemptd_client *client, uint32_t index,
                                               const preempt_stub *copy, char *why, size_t why_bytes) {
  preemptd_stub_record *record = &client->stubs[index];
  if (copy->state == PREEMPT_STUB_READY) {
    preempt_daemon_status status = arrival(ctx, client, index, copy, why, why_bytes);
    if (status == PREEMPT_DAEMON_FULL)
      record->seen = PREEMPT_STUB_TOEVICT; /* retried at a later scan, still unscheduled */
    return status;
  }
  if (copy->state == PREEMPT_STUB_DONE) {
    preemptd_log(ctx, "completion client=%u stub=%u unscheduled", client->id, index);
    free_stub(client, index);
    return PREEMPT_DAEMON_OK;
  }
  snprintf(why, why_bytes, "stub %u: kept running after an eviction from every SM", index);
  return PREEMPT_DAEMON_MALFORMED;
}

static void stop_running_clock(preemptd_context *ctx, preemptd_client *client, preemptd_stub_record *record) {
  double now = preemptd_now_us(ctx), ran = 0;
  if (record->running_since_us >= 0)
    ran = now - record->running_since_us;
  else if (record->seen == PREEMPT_STUB_TORUN)
    ran = now - record->torun_us; /* RUNNING was never seen: it ran since the command */
  record->ran_us += ran;
  client->usage[record->gpu].run_us += ran;
  record->running_since_us = -1;
}

/* TOEVICT -> READY (every SM given up) or TOEVICT -> RUNNING (a partial eviction carried out). */
static preempt_daemon_status eviction_done(preemptd_context *ctx, preemptd_client *client, uint32_t index,
                                           const preempt_stub *copy, char *why, size_t why_bytes) {
  preemptd_stub_record *record = &client->stubs[index];
  preemptd_gpu *gpu = &ctx->gpus[record->gpu];
  bool full = copy->state == PREEMPT_STUB_READY;
  if (!full && record->last_command_all) {
    /* Told to leave every SM, it says it still runs: its SMs would be handed to others while in use. */
    snprintf(why, why_bytes, "stub %u: kept running after an eviction from every SM", index);
    return PREEMPT_DAEMON_MALFORMED;
  }
  preempt_daemon_status status = preemptd_gpu_advance(ctx, record->gpu);
  if (status != PREEMPT_DAEMON_OK)
    return status;
  preempt_sched_kernel *kernel = preempt_sched_find(gpu->sched, record->kernel_id);
  if (!kernel)
    return PREEMPT_DAEMON_SYSTEM;
  if (full && working_sms(gpu->sched, kernel->id) > 0) {
    /* Asked for some SMs, it gave up all: the scheduler follows what happened. */
    preempt_sched_decision all = {PREEMPT_ACTION_EVICT, kernel->id, true, {{0}}, 0};
    if (preempt_sched_apply(gpu->sched, &all) != PREEMPT_SCHED_OK)
      return PREEMPT_DAEMON_SYSTEM;
    record->evict_sms = record->evict_held = preempt_sm_set_count(&kernel->sms);
    record->evicting_sms = kernel->sms;
  }
  /* preempt_sched_eviction_done frees every draining SM of the kernel; SMs a later eviction marked while
   * this one was outstanding have not been named to the client yet (that command waits for RUNNING): they
   * are held back, still draining, so they are neither freed nor given to anyone before the client leaves
   * them. */
  preempt_sm_set held_back;
  preempt_sm_set_clear(&held_back);
  for (uint32_t sm = 0; sm < gpu->sched->gpu.sm_count; sm++)
    if (gpu->sched->gpu.sm_owner[sm] == kernel->id && gpu->sched->gpu.sm_draining[sm] &&
        !preempt_sm_set_has(&record->evicting_sms, sm)) {
      preempt_sm_set_add(&held_back, sm);
      gpu->sched->gpu.sm_draining[sm] = false;
    }
  preempt_sched_status done = preempt_sched_eviction_done(gpu->sched, kernel->id);
  for (uint32_t sm = 0; sm < gpu->sched->gpu.sm_count; sm++)
    if (preempt_sm_set_has(&held_back, sm))
      gpu->sched->gpu.sm_draining[sm] = true;
  if (done != PREEMPT_SCHED_OK)
    return PREEMPT_DAEMON_SYSTEM;
  preempt_sm_set_clear(&record->evicting_sms);
  record->evictions++;
  double evict_us = -1;
  /* The metrics' latency: the daemon's command to the acknowledgement it sees, partial evictions included. */
  if (record->evict_issued_us > 0) {
    preempt_metrics_observe(&client->usage[record->gpu].eviction_latency,
                            (preemptd_now_us(ctx) - record->evict_issued_us) / 1e6);
    record->evict_issued_us = 0;
  }
  if (full) {
    stop_running_clock(ctx, client, record);
    record->ready_since_us = preemptd_now_us(ctx); /* held until the policy runs it again */
    /* The client's measurement of request to no CTA left: FLEP §4.2's overhead samples. */
    if (copy->last_eviction_ns > 0 && copy->last_eviction_ns <= PREEMPTD_MAX_EVICTION_NS && record->evict_sms > 0 &&
        record->evict_sms <= record->evict_held) {
      evict_us = (double)copy->last_eviction_ns / 1e3;
      if (preemptd_learn_eviction(&gpu->models, client->uid, record->kernel_key, evict_us, record->evict_sms,
                                  record->evict_held) != PREEMPT_DAEMON_OK)
        preemptd_log(ctx, "eviction sample dropped kernel=%u", record->kernel_id);
    }
  }
  record->seen = copy->state;
  preemptd_log(ctx, "eviction-done client=%u stub=%u kernel=%u %s evict_us=%.1f", client->id, index, record->kernel_id,
               full ? "full" : "partial", evict_us);
  uint32_t kernel_id = record->kernel_id;
  if (!full && (status = preemptd_flush_pending(ctx, client, index)) != PREEMPT_DAEMON_OK)
    return status;
  return preemptd_gpu_decide(ctx, record->gpu, PREEMPT_EVENT_EVICTION_DONE, kernel_id);
}

/* -> DONE: the launch finished. Its running time trains the duration model of the kernel for the client's user. */
static preempt_daemon_status completion(preemptd_context *ctx, preemptd_client *client, uint32_t index) {
  preemptd_stub_record *record = &client->stubs[index];
  uint32_t gpu_index = record->gpu, kernel_id = record->kernel_id;
  preemptd_gpu *gpu = &ctx->gpus[gpu_index];
  preempt_daemon_status status = preemptd_gpu_advance(ctx, gpu_index);
  if (status != PREEMPT_DAEMON_OK)
    return status;
  stop_running_clock(ctx, client, record);
  if (record->ran_us > 0 &&
      preemptd_learn_duration(&gpu->models, client->uid, record->kernel_key, &record->features, record->ran_us) !=
          PREEMPT_DAEMON_OK)
    preemptd_log(ctx, "duration sample dropped kernel=%u", kernel_id);
  if (preempt_sched_complete(gpu->sched, kernel_id) != PREEMPT_SCHED_OK)
    return PREEMPT_DAEMON_SYSTEM;
  preemptd_log(ctx, "completion client=%u stub=%u kernel=%u name=%s ran_us=%.0f evictions=%u", client->id, index,
               kernel_id, record->name, record->ran_us, record->evictions);
  free_stub(client, index);
  return preemptd_gpu_decide(ctx, gpu_index, PREEMPT_EVENT_COMPLETION, kernel_id);
}

/* One stub: *changed when it moved. MALFORMED (with `why`) when the client broke the protocol. */
static preempt_daemon_status scan_stub(preemptd_context *ctx, preemptd_client *client, uint32_t index, bool *changed,
                                       char *why, size_t why_bytes) {
  preemptd_stub_record *record = &client->stubs[index];
  preempt_stub *shared = &client->page->stubs[index];
  uint32_t state = __atomic_load_n(&shared->state, __ATOMIC_ACQUIRE);
  if (state == record->seen)
    return PREEMPT_DAEMON_OK;
  if (state > PREEMPT_STUB_DONE) {
    snprintf(why, why_bytes, "stub %u: invalid state %u", index, state);
    return PREEMPT_DAEMON_MALFORMED;
  }
  if (!client_could_reach(record->seen, state)) {
    snprintf(why, why_bytes, "stub %u: illegal move %s -> %s", index, preempt_stub_state_name(record->seen),
             preempt_stub_state_name(state));
    return PREEMPT_DAEMON_MALFORMED;
  }
  /* The copy is what is checked and used: the client may keep writing the page. The acquire load above
   * orders this copy after the client's writes that preceded its state store. */
  preempt_stub copy;
  memcpy(&copy, shared, sizeof copy);
  copy.state = state;
  *changed = true;
  switch (state) {
  case PREEMPT_STUB_PREP:
    record->seen = PREEMPT_STUB_PREP;
    return PREEMPT_DAEMON_OK;
  case PREEMPT_STUB_READY: {
    if (record->unscheduled)
      return unscheduled_moved(ctx, client, index, &copy, why, why_bytes);
    if (record->seen == PREEMPT_STUB_TOEVICT)
      return eviction_done(ctx, client, index, &copy, why, why_bytes);
    preempt_daemon_status status = arrival(ctx, client, index, &copy, why, why_bytes);
    if (status == PREEMPT_DAEMON_FULL)
      *changed = false; /* nothing moved: retried at the next wake, not in a tight loop now */
    return status;
  }
  case PREEMPT_STUB_RUNNING:
    if (record->unscheduled)
      return unscheduled_moved(ctx, client, index, &copy, why, why_bytes);
    if (record->seen == PREEMPT_STUB_FREE || record->seen == PREEMPT_STUB_PREP)
      return lease_start(ctx, client, index, &copy, why, why_bytes);
    if (record->seen == PREEMPT_STUB_TOEVICT)
      return eviction_done(ctx, client, index, &copy, why, why_bytes);
    record->seen = PREEMPT_STUB_RUNNING; /* TORUN carried out: launched or resumed */
    /* A TORUN on a running stub (SMs given back after a partial eviction, a new quota) does not start a new period:
     * the kernel ran all along, and restarting the clock here lost that time from its model's sample, LIST and the
     * metrics' run seconds, which went down. */
    if (record->running_since_us < 0)
      record->running_since_us = preemptd_now_us(ctx);
    preemptd_log(ctx, "running client=%u stub=%u kernel=%u", client->id, index, record->kernel_id);
    return preemptd_flush_pending(ctx, client, index);
  case PREEMPT_STUB_DONE:
    if (record->unscheduled)
      return unscheduled_moved(ctx, client, index, &copy, why, why_bytes);
    return completion(ctx, client, index);
  default:
    return PREEMPT_DAEMON_OK; /* unreachable: client_could_reach admits no other state */
  }
}

static preempt_daemon_status scan_client(preemptd_context *ctx, preemptd_client *client, bool *changed) {
  char why[PREEMPT_DAEMON_TEXT_BYTES];
  for (uint32_t index = 0; index < PREEMPT_STUBS_PER_CLIENT && client->registered; index++) {
    why[0] = '\0';
    bool moved = false;
    preempt_daemon_status status = scan_stub(ctx, client, index, &moved, why, sizeof why);
    *changed |= moved;
    if (status == PREEMPT_DAEMON_MALFORMED)
      return preemptd_client_broken(ctx, client, why);
    if (status == PREEMPT_DAEMON_SYSTEM)
      preemptd_log(ctx, "internal error on client=%u stub=%u: scheduler refused a state change", client->id, index);
    /* FULL: the arrival waits in its READY stub; other statuses are logged where they arise. */
  }
  return PREEMPT_DAEMON_OK;
}

preempt_daemon_status preemptd_scan_one(preemptd_context *ctx, preemptd_client *client) {
  bool changed = false;
  for (int pass = 0; pass < SCAN_PASSES && client->registered && !client->broken; pass++) {
    changed = false;
    preempt_daemon_status status = scan_client(ctx, client, &changed);
    if (status != PREEMPT_DAEMON_OK || !changed)
      return status;
  }
  return PREEMPT_DAEMON_OK;
}

preempt_daemon_status preemptd_scan_all(preemptd_context *ctx) {
  preempt_daemon_status result = PREEMPT_DAEMON_OK;
  for (int pass = 0; pass < SCAN_PASSES; pass++) {
    bool changed = false;
    ctx->rescan = false;
    for (uint32_t i = 0; i < PREEMPTD_MAX_CONNECTIONS; i++) {
      preemptd_client *client = &ctx->clients[i];
      if (client->fd < 0 || !client->registered || client->broken)
        continue;
      preempt_daemon_status status = scan_client(ctx, client, &changed);
      if (status != PREEMPT_DAEMON_OK)
        result = status;
    }
    if (!changed && !ctx->rescan)
      break;
  }
  return result;
}
