/* decisions.c: runs a GPU's policy on one event, applies the decisions and writes them into the stubs.
 * FLEP §5 (the scheduler's decisions), §6.4 (spatial: SM masks); EffiSha §6.1 (READY->TORUN, RUNNING->TOEVICT). */
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
  if (preempt_sm_set_count(&draining) == 0)
    return PREEMPT_DAEMON_OK; /* nothing left to evict (the kernel already gave them up) */
  bool all = kernel->state == PREEMPT_KERNEL_TOEVICT;
  record->last_command_all = all;
  record->evicting_sms = draining;
  record->evict_sms = preempt_sm_set_count(&draining);
  record->evict_held = preempt_sm_set_count(&kernel->sms);
  if (issue(ctx, client, index, PREEMPT_STUB_RUNNING, PREEMPT_STUB_TOEVICT, all, &draining)) {
    client->evictions++;
    gpu->evictions++;
    char sms[128];
    preemptd_format_sms(&draining, all, sms, sizeof sms);
    preemptd_log(ctx, "command client=%u stub=%u kernel=%u TOEVICT sms=%s", client->id, index, kernel->id, sms);
  }
  return PREEMPT_DAEMON_OK;
}

static preempt_daemon_status issue_run(preemptd_context *ctx, preemptd_client *client, uint32_t index, uint32_t from,
                                       bool all, const preempt_sm_set *sms) {
  preemptd_stub_record *record = &client->stubs[index];
  if (issue(ctx, client, index, from, PREEMPT_STUB_TORUN, all, sms)) {
    if (from == PREEMPT_STUB_READY)
      record->torun_us = preemptd_now_us(ctx);
    char text[128];
    preemptd_format_sms(sms, all, text, sizeof text);
    preemptd_log(ctx, "command client=%u stub=%u kernel=%u TORUN sms=%s", client->id, index, record->kernel_id, text);
  }
  return PREEMPT_DAEMON_OK;
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
    return issue_run(ctx, client, index, PREEMPT_STUB_RUNNING, false, &record->pending_run_sms);
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
  if (decision->action == PREEMPT_ACTION_RUN) {
    if (record->seen == PREEMPT_STUB_READY)
      return issue_run(ctx, client, (uint32_t)index, PREEMPT_STUB_READY, decision->all_sms, &decision->sms);
    if (record->seen == PREEMPT_STUB_RUNNING) /* SMs back after a partial eviction */
      return issue_run(ctx, client, (uint32_t)index, PREEMPT_STUB_RUNNING, decision->all_sms, &decision->sms);
    /* TORUN or TOEVICT: the client has not carried out the last command; this one waits for it. */
    record->pending_run = true;
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

preempt_daemon_status preemptd_gpu_decide(preemptd_context *ctx, uint32_t gpu_index, preempt_sched_event_kind kind,
                                          uint32_t kernel_id) {
  preemptd_gpu *gpu = &ctx->gpus[gpu_index];
  preempt_sched_event event = {kind, kernel_id};
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
  preempt_daemon_status result = PREEMPT_DAEMON_OK;
  for (uint32_t d = 0; d < decisions.count; d++) {
    const preempt_sched_decision *decision = &decisions.items[d];
    if (decision->action == PREEMPT_ACTION_NOTHING)
      continue;
    char sms[128];
    preemptd_format_sms(&decision->sms, decision->all_sms, sms, sizeof sms);
    const char *action = decision->action == PREEMPT_ACTION_RUN ? "run" : "evict";
    status = preempt_sched_apply(gpu->sched, decision);
    if (status != PREEMPT_SCHED_OK) {
      /* A policy bug, not a client's: refuse the decision and keep scheduling the rest. */
      preemptd_log(ctx, "decision refused gpu=%u %s kernel=%u sms=%s: %s", gpu_index, action, decision->kernel_id, sms,
                   preempt_sched_status_name(status));
      result = PREEMPT_DAEMON_SYSTEM;
      continue;
    }
    gpu->decisions++;
    preemptd_log(ctx, "decide gpu=%u policy=%s event=%s/%u: %s kernel=%u sms=%s", gpu_index, gpu->policy->name,
                 preempt_sched_event_name(kind), kernel_id, action, decision->kernel_id, sms);
    if (write_decision(ctx, gpu_index, decision) != PREEMPT_DAEMON_OK) {
      preemptd_log(ctx, "decision for kernel=%u has no stub", decision->kernel_id);
      result = PREEMPT_DAEMON_SYSTEM;
    }
  }
  drop_done(gpu);
  return result;
}
