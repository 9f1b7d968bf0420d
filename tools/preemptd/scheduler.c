/* scheduler.c: the scheduler thread: sleeps on the doorbell futex, scans the stub pages, fires the policies' timers.
 * FLEP §3 (the scheduler reacts to launches and completions), §5.2.2 (FFS epochs) and EffiSha §7 (DPRR slices) need timers. */
#include "preemptd.h"

#include <errno.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

/* TIMER events whose time has come. */
static preempt_daemon_status fire_timers(preemptd_context *ctx) {
  preempt_daemon_status result = PREEMPT_DAEMON_OK;
  double now = preemptd_now_us(ctx);
  for (uint32_t gpu = 0; gpu < ctx->gpu_count; gpu++) {
    preemptd_gpu *g = &ctx->gpus[gpu];
    if (g->timer_at <= 0 || g->timer_at > now)
      continue;
    g->timer_at = 0;
    preempt_daemon_status status = preemptd_gpu_advance(ctx, gpu);
    if (status == PREEMPT_DAEMON_OK)
      status = preemptd_gpu_decide(ctx, gpu, PREEMPT_EVENT_TIMER, 0);
    if (status != PREEMPT_DAEMON_OK)
      result = status;
  }
  return result;
}

/* How long to sleep: until the earliest timer, at most PREEMPTD_IDLE_WAIT_NS, 0 when a scan is owed. */
static int64_t wait_ns(const preemptd_context *ctx) {
  if (ctx->rescan)
    return 0;
  int64_t wait = PREEMPTD_IDLE_WAIT_NS;
  double now = preemptd_now_us(ctx);
  for (uint32_t gpu = 0; gpu < ctx->gpu_count; gpu++) {
    double at = ctx->gpus[gpu].timer_at;
    if (at <= 0)
      continue;
    /* Rounded up: waking a microsecond early would find the timer not due and sleep again for nothing. */
    int64_t until = at <= now ? 0 : (int64_t)((at - now) * 1e3) + 1000;
    if (until < wait)
      wait = until;
  }
  return wait;
}

int64_t preemptd_scheduler_step(preemptd_context *ctx) {
  if (preemptd_scan_all(ctx) != PREEMPT_DAEMON_OK)
    preemptd_log(ctx, "scan: some events could not be handled (see above)");
  if (fire_timers(ctx) != PREEMPT_DAEMON_OK)
    preemptd_log(ctx, "timers: some events could not be handled (see above)");
  preemptd_update_leases(ctx); /* after every decision of this round: who is alone with work now */
  preemptd_mem_poll(ctx); /* waits of at most PREEMPTD_IDLE_WAIT_NS keep its 100 ms readings going */
  return wait_ns(ctx);
}

void *preemptd_scheduler_thread(void *context) {
  preemptd_context *ctx = context;
  /* Policy timers (FFS epochs, DPRR slices) to the microsecond, not the default 50 us timer slack. */
  prctl(PR_SET_TIMERSLACK, 1000UL);
  for (;;) {
    /* Read before the scan: a ring during the scan changes the word, and the wait below returns at once. */
    uint32_t bell = __atomic_load_n(&ctx->doorbell->doorbell, __ATOMIC_ACQUIRE);
    pthread_mutex_lock(&ctx->lock);
    if (ctx->stopping) {
      pthread_mutex_unlock(&ctx->lock);
      return NULL;
    }
    int64_t timeout = preemptd_scheduler_step(ctx);
    pthread_mutex_unlock(&ctx->lock);
    if (timeout == 0)
      continue;
    if (preempt_futex_wait(&ctx->doorbell->doorbell, bell, timeout) < 0) {
      /* Cannot happen with a valid mapped word; logged, and a short sleep keeps it from spinning. */
      pthread_mutex_lock(&ctx->lock);
      preemptd_log(ctx, "futex wait failed: %s", strerror(errno));
      pthread_mutex_unlock(&ctx->lock);
      struct timespec pause = {0, 10000000};
      nanosleep(&pause, NULL);
    }
  }
}
