/* slurm_jobs.c: the Slurm job steps root tells preemptd about (JOB), and which step a connecting process runs in.
 * Issue 43 (cluster integration: a job's processes scheduled as that job); EffiSha §6.4 (priority limits per user). */
#include "preemptd.h"

#include <errno.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

void preemptd_jobs_init(preemptd_context *ctx) {
  for (uint32_t i = 0; i < PREEMPTD_MAX_JOBS; i++) {
    memset(&ctx->jobs[i], 0, sizeof ctx->jobs[i]);
    ctx->jobs[i].pidfd = -1;
  }
}

static void job_forget(preemptd_job *job) {
  if (job->pidfd >= 0)
    close(job->pidfd);
  memset(job, 0, sizeof *job);
  job->pidfd = -1;
}

void preemptd_jobs_free(preemptd_context *ctx) {
  for (uint32_t i = 0; i < PREEMPTD_MAX_JOBS; i++)
    if (ctx->jobs[i].in_use)
      job_forget(&ctx->jobs[i]);
}

/* An entry whose slurmstepd has exited is stale: its pid may belong to anyone now. Freed when it is looked at. */
static bool job_live(preemptd_job *job) {
  if (!job->in_use)
    return false;
  if (preemptd_pidfd_alive(job->pidfd))
    return true;
  job_forget(job);
  return false;
}

static preemptd_job *job_find(preemptd_context *ctx, uint32_t job_id, uint32_t step_id) {
  for (uint32_t i = 0; i < PREEMPTD_MAX_JOBS; i++)
    if (ctx->jobs[i].in_use && ctx->jobs[i].job_id == job_id && ctx->jobs[i].step_id == step_id)
      return &ctx->jobs[i];
  return NULL;
}

static preemptd_job *job_slot(preemptd_context *ctx) {
  for (uint32_t i = 0; i < PREEMPTD_MAX_JOBS; i++)
    if (!job_live(&ctx->jobs[i]))
      return &ctx->jobs[i];
  return NULL;
}

preempt_daemon_status preemptd_job_message(preemptd_context *ctx, preemptd_client *client, const preempt_msg_job *m,
                                           uint32_t request_id) {
  char text[PREEMPT_DAEMON_TEXT_BYTES];
  /* Only root (slurmstepd) speaks for a job: a user who could name its own step's priority would have none. */
  if (!preemptd_uid_trusted(ctx, client->uid)) {
    preemptd_log_client(ctx, client, "job refused pid=%d uid=%u: not root or the daemon's user", (int)client->pid,
                        (unsigned)client->uid);
    return preemptd_send_status(client->fd, request_id, PREEMPT_DAEMON_NOT_PERMITTED,
                                "JOB is for root or the daemon's user (the Slurm plugin in slurmstepd)");
  }
  preemptd_job *job = job_find(ctx, m->job_id, m->step_id);
  if (m->flags & PREEMPT_JOB_END) {
    if (job)
      job_forget(job);
    preemptd_log(ctx, "job end job=%u step=%u%s", m->job_id, m->step_id, job ? "" : " (not known)");
    return preemptd_send_status(client->fd, request_id, PREEMPT_DAEMON_OK, "");
  }
  int pidfd = (int)syscall(SYS_pidfd_open, (pid_t)m->pid, 0);
  if (pidfd < 0) {
    snprintf(text, sizeof text, "JOB %u.%u: cannot follow pid %u: %s", m->job_id, m->step_id, m->pid,
             strerror(errno));
    return preemptd_send_status(client->fd, request_id, PREEMPT_DAEMON_SYSTEM, text);
  }
  if (!job)
    job = job_slot(ctx);
  if (!job) {
    close(pidfd);
    snprintf(text, sizeof text, "JOB %u.%u: %d job steps known already", m->job_id, m->step_id, PREEMPTD_MAX_JOBS);
    return preemptd_send_status(client->fd, request_id, PREEMPT_DAEMON_FULL, text);
  }
  if (job->in_use)
    job_forget(job);
  job->in_use = true;
  job->job_id = m->job_id;
  job->step_id = m->step_id;
  job->uid = (uid_t)m->uid;
  job->pid = (pid_t)m->pid;
  job->pidfd = pidfd;
  job->priority_set = (m->flags & PREEMPT_JOB_PRIORITY) != 0;
  job->priority = m->priority;
  job->mem_limit_bytes = m->mem_limit_bytes;
  char priority[16] = "-nice";
  if (job->priority_set)
    snprintf(priority, sizeof priority, "%d", job->priority);
  preemptd_log(ctx, "job job=%u step=%u uid=%u pid=%d priority=%s mem_limit=%llu", job->job_id, job->step_id,
               (unsigned)job->uid, (int)job->pid, priority, (unsigned long long)job->mem_limit_bytes);
  return preemptd_send_status(client->fd, request_id, PREEMPT_DAEMON_OK, "");
}

/* The step whose slurmstepd is `pid` or one of its ancestors, for a process of `uid`; NULL: none. The ancestors are
 * read by number, then each match's pidfd is checked alive: a live slurmstepd's pid was not reused in between. */
static preemptd_job *job_of(preemptd_context *ctx, pid_t pid, uid_t uid) {
  /* A node without Slurm steps (most registrations) reads no /proc at all. */
  bool any = false;
  for (uint32_t i = 0; i < PREEMPTD_MAX_JOBS && !any; i++)
    any = ctx->jobs[i].in_use;
  if (!any)
    return NULL;
  for (int depth = 0; depth < PREEMPTD_JOB_ANCESTORS && pid > 1; depth++) {
    for (uint32_t i = 0; i < PREEMPTD_MAX_JOBS; i++) {
      preemptd_job *job = &ctx->jobs[i];
      /* Another user's process under a step (a setuid helper, say) is not that job's. */
      if (job->in_use && job->pid == pid && job->uid == uid && job_live(job))
        return job;
    }
    pid_t parent = 0;
    if (preemptd_read_ppid(pid, &parent) != PREEMPT_DAEMON_OK)
      return NULL;
    pid = parent;
  }
  return NULL;
}

void preemptd_job_grant_priority(preemptd_context *ctx, preemptd_client *client, bool requested, int32_t request,
                                 int32_t *granted, int32_t *limit) {
  /* A connection that both REGISTERs and MEM_ATTACHes keeps its first lookup: one step for both grants. */
  if (client->job_id == 0) {
    const preemptd_job *job = job_of(ctx, client->pid, client->uid);
    if (job) {
      client->job_id = job->job_id;
      client->step_id = job->step_id;
      client->job_mem_limit_bytes = job->mem_limit_bytes;
      client->job_priority_set = job->priority_set;
      client->job_priority = job->priority;
    }
  }
  if (!client->job_priority_set) {
    preempt_grant_priority(client->uid, client->nice, requested, request, granted, limit);
    return;
  }
  /* Slurm's grant replaces -nice as default and limit; root keeps the right to go higher, as everywhere. */
  *limit = client->uid == 0 ? PREEMPT_PRIORITY_MAX : client->job_priority;
  *granted = preempt_clamp_priority(requested ? request : client->job_priority, *limit);
}

uint64_t preemptd_job_held_bytes(const preemptd_context *ctx, uint32_t job_id) {
  uint64_t held = 0;
  for (uint32_t c = 0; c < PREEMPTD_MAX_CONNECTIONS; c++) {
    const preemptd_client *client = &ctx->clients[c];
    if (client->fd < 0 || !client->mem_attached || client->job_id != job_id)
      continue;
    for (uint32_t g = 0; g < ctx->mem_gpu_count; g++) {
      uint32_t slot = client->mem_slot[g];
      if (slot != PREEMPT_MEM_NO_INDEX && ctx->mem_gpus[g].ledger)
        held += ctx->mem_gpus[g].ledger->clients[slot].reserved_bytes;
    }
  }
  return held;
}
