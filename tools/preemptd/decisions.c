/* decisions.c: runs a GPU's policy on one event, applies the decisions and writes them into the stubs.
 * FLEP §5 (the scheduler's decisions), §6.4 (spatial: SM masks); EffiSha §6.1 (READY->TORUN, RUNNING->TOEVICT);
 * FlexSched §4.2 (CTA quotas), §4.4 (progress samples: TER). */
#include "preemptd.h"

#include <string.h>

preempt_daemon_status preemptd_gpu_advance(preemptd_context *ctx, uint32_t gpu) {
  preempt_sched_state *sched = ctx->gpus[gpu].sched;
  double now = preemptd_now_us(ctx);
  /* Monotonic, but two threads read it before taking the lock in different orders: never go back. */
  if (now < sched->now)
    now = sched->now;
  return preempt_sched_advance(sched, now) == PREEMPT_SCHED_OK ? PREEMPT_DAEMON_OK : PREEMPT_DAEMON_SYSTEM;
}

preemptd_client *preemptd_client_by_id(preemptd_context *ctx, uint32_t client_id) {
  for (uint32_t i = 0; i < PREEMPTD_MAX_CONNECTIONS; i++)
    if (ctx->clients[i].fd >= 0 && ctx->clients[i].registered && ctx->clients[i].id == client_id)
      return &ctx->clients[i];
  return NULL;
}

/* The stub that holds a scheduler kernel, or -1. */
static int stub_of(const preemptd_client *client, uint32_t kernel_id) {
  for (int i = 0; i < PREEMPT_STUBS_PER_CLIENT; i++)
    if (client->stubs[i].kernel_id == kernel_id)
      return i;
  return -1;
}

static void sms_of(const preempt_sched_state *sched, uint32_t kernel_id, bool draining_only, preempt_sm_set *out) {
  preempt_sm_set_clear(out);
  for (uint32_t sm = 0; sm < sched->gpu.sm_count; sm++)
    if (sched->gpu.sm_owner[sm] == kernel_id && (!draining_only || sched->gpu.sm_draining[sm]))
      preempt_sm_set_add(out, sm);
}

/* Writes a command and moves the stub `from` -> `to` with a compare-and-swap: the client may have moved
 * it meanwhile (RUNNING -> DONE). Returns whether the command is in the stub. The command fields are
 * written first; the CAS (release) publishes them to the client's acquire load of the state. */
static bool issue(preemptd_context *ctx, preemptd_client *client, uint32_t index, uint32_t from, uint32_t to,
                  bool all, const preempt_sm_set *sms) {
  preemptd_stub_record *record = &client->stubs[index];
  preempt_stub *stub = &client->page->stubs[index];
  stub->command_all = all ? 1 : 0;
  for (unsigned word = 0; word < PREEMPT_DAEMON_SM_MASK_WORDS; word++) {
    uint64_t bits = sms ? sms->bits[word / 2] : 0;
    stub->command_mask[word] = (uint32_t)(word % 2 ? bits >> 32 : bits);
  }
  /* From the daemon's record, not the page: a client cannot make the daemon skip or repeat a number. */
  stub->command_sequence = ++record->command_sequence;
  uint32_t expected = from;
  if (!__atomic_compare_exchange_n(&stub->state, &expected, to, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
    /* DONE: the completion is handled by the next scan pass; anything else is a protocol breach that
     * the same pass reports. Either way scan again before sleeping. */
    ctx->rescan = true;
    preemptd_log(ctx, "command lost client=%u stub=%u: %s, expected %s", client->id, index,
                 preempt_stub_state_name(expected), preempt_stub_state_name(from));
    return false;
  }
  record->seen = to;
  preempt_futex_ring(&client->page->client_wake);
  return true;
}

/* RUNNING -> TOEVICT for the SMs the scheduler marked draining; every SM when it kept none working. */
static preempt_daemon_status issue_evict(preemptd_context *ctx, preemptd_gpu *gpu, preemptd_client *client,
                                         uint32_t index) {
  preemptd_stub_record *record = &client->stubs[index];
  preempt_sched_kernel *kernel = preempt_sched_find(gpu->sched, record->kernel_id);
  if (!kernel)
    return PREEMPT_DAEMON_SYSTEM;
  preempt_sm_set draining;
  sms_of(gpu->sched, kernel->id, true, &draining);
  bool all = kernel->state == PREEMPT_KERNEL_TOEVICT;
  /* Leaving every SM with none held: time-slicing gave its SMs away when the eviction was decided (schedule.c),
   * and the client must still be told. */
  bool released = all && preempt_sm_set_count(&kernel->sms) == 0;
  if (preempt_sm_set_count(&draining) == 0 && !(kernel->cta_quota != 0 && all) && !released)
    return PREEMPT_DAEMON_OK; /* nothing left to evict (the kernel already gave them up) */
  /* A kernel under a CTA quota shares every SM with another and owns only some (or none) of them: it leaves them
   * all (the scheduler allows it no partial eviction). */
  if (kernel->cta_quota != 0 && all)
    draining = kernel->sms;
  record->last_command_all = all;
  record->evicting_sms = draining;
  record->evict_sms = preempt_sm_set_count(&draining);
  record->evict_held = preempt_sm_set_count(&kernel->sms);
  if (released) /* a full eviction: the eviction-cost model takes it as every SM of every SM */
    record->evict_sms = record->evict_held = gpu->sched->gpu.sm_count;
  if (issue(ctx, client, index, PREEMPT_STUB_RUNNING, PREEMPT_STUB_TOEVICT, all, &draining)) {
    client->evictions++;
    client->usage[record->gpu].evictions++;
    record->evict_issued_us = preemptd_now_us(ctx);
    gpu->evictions++;
    char sms[128];
    preemptd_format_sms(&draining, all, sms, sizeof sms);
    preemptd_log(ctx, "command client=%u stub=%u kernel=%u TOEVICT sms=%s", client->id, index, kernel->id, sms);
  }
  return PREEMPT_DAEMON_OK;
}

/* TORUN: run on `sms` (every SM when `all`) at full occupancy (quota 0), or on every SM with at most `quota`
 * CTAs per SM (FlexSched §4.2). On a RUNNING stub it refills SMs or changes the quota. */
static preempt_daemon_status issue_run(preemptd_context *ctx, preemptd_client *client, uint32_t index, uint32_t from,
                                       bool all, const preempt_sm_set *sms, uint32_t quota) {
  preemptd_stub_record *record = &client->stubs[index];
  /* Before issue()'s compare-and-swap, which publishes it with the other command fields. */
  client->page->stubs[index].command_quota = quota;
  if (issue(ctx, client, index, from, PREEMPT_STUB_TORUN, all, sms)) {
    if (from == PREEMPT_STUB_READY) {
      record->torun_us = preemptd_now_us(ctx);
      if (record->ready_since_us > 0)
        client->usage[record->gpu].wait_us += record->torun_us - record->ready_since_us;
      record->ready_since_us = 0;
    }
    char text[128];
    preemptd_format_sms(sms, all, text, sizeof text);
    char quota_text[32] = "";
    if (quota != 0)
      snprintf(quota_text, sizeof quota_text, " quota=%u", quota);
    preemptd_log(ctx, "command client=%u stub=%u kernel=%u TORUN sms=%s%s", client->id, index, record->kernel_id, text,
                 quota_text);
  }
  return PREEMPT_DAEMON_OK;
}

bool preemptd_issue_evict_all(preemptd_context *ctx, preemptd_client *client, uint32_t index) {
  client->stubs[index].last_command_all = true;
  return issue(ctx, client, index, PREEMPT_STUB_RUNNING, PREEMPT_STUB_TOEVICT, true, NULL);
}

preempt_daemon_status preemptd_flush_pending(preemptd_context *ctx, preemptd_client *client, uint32_t index) {
  preemptd_stub_record *record = &client->stubs[index];
  if (record->seen != PREEMPT_STUB_RUNNING || record->kernel_id == 0)
    return PREEMPT_DAEMON_OK;
  if (record->pending_evict) {
    record->pending_evict = false;
    return issue_evict(ctx, &ctx->gpus[record->gpu], client, index);
  }
  if (record->pending_run) {
    record->pending_run = false;
    uint32_t quota = record->pending_quota;
    record->pending_quota = 0;
    preempt_sm_set sms = record->pending_run_sms;
    preempt_sm_set_clear(&record->pending_run_sms);
    return issue_run(ctx, client, index, PREEMPT_STUB_RUNNING, quota != 0, &sms, quota);
  }
  return PREEMPT_DAEMON_OK;
}

/* Puts one applied decision into its stub, now or (when the stub is between commands) once it is RUNNING. */
static preempt_daemon_status write_decision(preemptd_context *ctx, uint32_t gpu_index,
                                            const preempt_sched_decision *decision) {
  preemptd_gpu *gpu = &ctx->gpus[gpu_index];
  preempt_sched_kernel *kernel = preempt_sched_find(gpu->sched, decision->kernel_id);
  preemptd_client *client = kernel ? preemptd_client_by_id(ctx, kernel->client_id) : NULL;
  int index = client ? stub_of(client, kernel->id) : -1;
  if (index < 0)
    return PREEMPT_DAEMON_SYSTEM; /* a decision for a kernel nobody holds: the caller logs it */
  preemptd_stub_record *record = &client->stubs[index];
  if (decision->action == PREEMPT_ACTION_QUOTA) {
    /* Every SM, command_all, at most `quota` CTAs on each: a launch (READY) or a new quota (RUNNING). */
    if (record->seen == PREEMPT_STUB_READY || record->seen == PREEMPT_STUB_RUNNING)
      return issue_run(ctx, client, (uint32_t)index, record->seen, true, NULL, decision->quota);
    /* TORUN: the client has not launched yet; the newest quota is the one it gets once it has. */
    record->pending_run = true;
    record->pending_quota = decision->quota;
    return PREEMPT_DAEMON_OK;
  }
  if (decision->action == PREEMPT_ACTION_RUN) {
    if (record->seen == PREEMPT_STUB_READY)
      return issue_run(ctx, client, (uint32_t)index, PREEMPT_STUB_READY, decision->all_sms, &decision->sms, 0);
    if (record->seen == PREEMPT_STUB_RUNNING) /* SMs back after a partial eviction */
      return issue_run(ctx, client, (uint32_t)index, PREEMPT_STUB_RUNNING, decision->all_sms, &decision->sms, 0);
    /* TORUN or TOEVICT: the client has not carried out the last command; this one waits for it. */
    record->pending_run = true;
    record->pending_quota = 0;
    for (unsigned word = 0; word < PREEMPT_SCHED_MAX_SMS / 64; word++)
      record->pending_run_sms.bits[word] |= decision->sms.bits[word];
    return PREEMPT_DAEMON_OK;
  }
  if (decision->action == PREEMPT_ACTION_EVICT) {
    if (record->seen == PREEMPT_STUB_RUNNING)
      return issue_evict(ctx, gpu, client, (uint32_t)index);
    /* TORUN: the kernel is not launched yet; evicting it starts as soon as it is (the scheduler
     * already counts its SMs as draining, so nothing else is placed there meanwhile). */
    record->pending_evict = true;
    return PREEMPT_DAEMON_OK;
  }
  return PREEMPT_DAEMON_OK;
}

/* DONE kernels hold no SMs and no stub any more; the table is fixed-size, so they leave it. */
static void drop_done(preemptd_gpu *gpu) {
  for (uint32_t i = gpu->sched->kernel_count; i-- > 0;)
    if (gpu->sched->kernels[i].state == PREEMPT_KERNEL_DONE)
      preempt_sched_remove_kernel(gpu->sched, gpu->sched->kernels[i].id); /* DONE: cannot fail */
}

/* FlexSched §4.4's TER samples: each running kernel's latest (tasks, time) pair from its stub, into the scheduler.
 * The page is the client's: progress_ns, progress_tasks, progress_ns again, and a sample whose time changed in
 * between (the client was writing it) is dropped, as is one from the future, one older than the last, or one
 * whose task count went back. Only the kernel's own pair is skewed by a client that lies (docs/daemon.md). */
static void refresh_progress(preemptd_context *ctx, uint32_t gpu_index) {
  preempt_sched_state *sched = ctx->gpus[gpu_index].sched;
  double now = preemptd_now_us(ctx);
  for (uint32_t c = 0; c < PREEMPTD_MAX_CONNECTIONS; c++) {
    preemptd_client *client = &ctx->clients[c];
    if (client->fd < 0 || !client->registered || client->broken || !client->page)
      continue;
    for (uint32_t s = 0; s < PREEMPT_STUBS_PER_CLIENT; s++) {
      preemptd_stub_record *record = &client->stubs[s];
      if (record->kernel_id == 0 || record->gpu != gpu_index || record->seen != PREEMPT_STUB_RUNNING)
        continue;
      preempt_sched_kernel *kernel = preempt_sched_find(sched, record->kernel_id);
      if (!kernel)
        continue;
      preempt_stub *stub = &client->page->stubs[s];
      uint64_t before = __atomic_load_n(&stub->progress_ns, __ATOMIC_ACQUIRE);
      uint64_t tasks = __atomic_load_n(&stub->progress_tasks, __ATOMIC_ACQUIRE);
      uint64_t after = __atomic_load_n(&stub->progress_ns, __ATOMIC_ACQUIRE);
      if (before == 0 || before != after || before == record->progress_ns)
        continue;
      /* CLOCK_MONOTONIC ns to the scheduler's clock (µs since the daemon started). */
      double at = (double)before / 1e3 - ctx->start_us;
      if (at <= 0 || at > now || at < kernel->progress_at || tasks < kernel->progress_tasks)
        continue;
      record->progress_ns = before;
      kernel->progress_tasks = tasks;
      kernel->progress_at = at;
    }
  }
}

static const char *action_name(preempt_sched_action action) {
  switch (action) {
  case PREEMPT_ACTION_RUN: return "run";
  case PREEMPT_ACTION_EVICT: return "evict";
  case PREEMPT_ACTION_QUOTA: return "quota";
  default: return "nothing";
  }
}

/* flexsched's results, as the benchmark scripts parse them (docs/daemon.md, "flexsched"): every configuration
 * measured, A's alone rate (latency mode), and the configuration a search settled on. The policy only counts
 * them; the daemon logs each once. */
static void log_flexsched(preemptd_context *ctx, uint32_t gpu_index) {
  preemptd_gpu *gpu = &ctx->gpus[gpu_index];
  const preempt_flexsched_data *data = &gpu->sched->flexsched;
  const preempt_flexsched_measurement *last = &data->last;
  if (data->alone_serial != gpu->flexsched_alones_logged) {
    gpu->flexsched_alones_logged = data->alone_serial;
    preemptd_log(ctx, "flexsched alone gpu=%u a=%u ctas=%u rate_a=%.6f min_rate_a=%.6f%s", gpu_index, last->a,
                 last->ctas.ctas_a, last->rates.a, gpu->sched->params.flexsched_slowdown * last->rates.a,
                 last->stale_a ? " stale=a" : "");
  }
  if (data->measurement_serial != gpu->flexsched_measurements_logged) {
    gpu->flexsched_measurements_logged = data->measurement_serial;
    const char *stale = last->stale_a && last->stale_b ? " stale=a,b" : last->stale_a ? " stale=a"
                        : last->stale_b                ? " stale=b"
                                                       : "";
    preemptd_log(ctx, "flexsched gpu=%u a=%u b=%u config=%u ctas=(%u,%u) rate_a=%.6f rate_b=%.6f ws=%.4f%s", gpu_index,
                 last->a, last->b, last->config, last->ctas.ctas_a, last->ctas.ctas_b, last->rates.a, last->rates.b,
                 last->weighted_speedup, stale);
  }
  if (data->settled_serial != gpu->flexsched_settles_logged) {
    gpu->flexsched_settles_logged = data->settled_serial;
    const preempt_coexec_config *chosen = &data->space.configs[data->config < data->space.count ? data->config : 0];
    preemptd_log(ctx, "flexsched settled gpu=%u a=%u b=%u config=%u ctas=(%u,%u) mode=%s configs=%u measured=%u",
                 gpu_index, data->a, data->b, data->config, chosen->ctas_a, chosen->ctas_b,
                 data->fixed ? "fixed" : data->latency ? "latency" : "throughput", data->space.count,
                 data->search.measured);
  }
}

preempt_daemon_status preemptd_gpu_decide(preemptd_context *ctx, uint32_t gpu_index, preempt_sched_event_kind kind,
                                          uint32_t kernel_id) {
  preemptd_gpu *gpu = &ctx->gpus[gpu_index];
  preempt_sched_event event = {kind, kernel_id};
  /* Progress samples are read for TIMER events only: the policies that use them (flexsched) end their
   * measurement windows on timers, and every other event stays as cheap as before. */
  if (kind == PREEMPT_EVENT_TIMER)
    refresh_progress(ctx, gpu_index);
  gpu->sched->gpu.time_slicing = preemptd_time_slicing(ctx, false);
  preempt_sched_decisions decisions;
  memset(&decisions, 0, sizeof decisions);
  preempt_sched_status status = gpu->policy->decide(gpu->sched, &event, &decisions);
  if (status != PREEMPT_SCHED_OK) {
    preemptd_log(ctx, "policy %s failed on gpu=%u: %s", gpu->policy->name, gpu_index,
                 preempt_sched_status_name(status));
    drop_done(gpu);
    return PREEMPT_DAEMON_SYSTEM;
  }
  gpu->timer_at = decisions.timer_at > gpu->sched->now ? decisions.timer_at : 0;
  log_flexsched(ctx, gpu_index);
  preempt_daemon_status result = PREEMPT_DAEMON_OK;
  for (uint32_t d = 0; d < decisions.count; d++) {
    const preempt_sched_decision *decision = &decisions.items[d];
    if (decision->action == PREEMPT_ACTION_NOTHING)
      continue;
    char sms[128];
    preemptd_format_sms(&decision->sms, decision->all_sms, sms, sizeof sms);
    const char *action = action_name(decision->action);
    char quota[32] = "";
    if (decision->action == PREEMPT_ACTION_QUOTA)
      snprintf(quota, sizeof quota, " quota=%u", decision->quota);
    status = preempt_sched_apply(gpu->sched, decision);
    if (status != PREEMPT_SCHED_OK) {
      /* A policy bug, not a client's: refuse the decision and keep scheduling the rest. */
      preemptd_log(ctx, "decision refused gpu=%u %s kernel=%u sms=%s%s: %s", gpu_index, action, decision->kernel_id, sms,
                   quota, preempt_sched_status_name(status));
      result = PREEMPT_DAEMON_SYSTEM;
      continue;
    }
    gpu->decisions++;
    preemptd_log(ctx, "decide gpu=%u policy=%s event=%s/%u: %s kernel=%u sms=%s%s", gpu_index, gpu->policy->name,
                 preempt_sched_event_name(kind), kernel_id, action, decision->kernel_id, sms, quota);
    if (write_decision(ctx, gpu_index, decision) != PREEMPT_DAEMON_OK) {
      preemptd_log(ctx, "decision for kernel=%u has no stub", decision->kernel_id);
      result = PREEMPT_DAEMON_SYSTEM;
    }
  }
  drop_done(gpu);
  return result;
}
