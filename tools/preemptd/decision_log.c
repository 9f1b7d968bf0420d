/* decision_log.c: the daemon's clock and its decision log, one line per event or decision.
 * FLEP §5.1 (the scheduler's notion of time for T_e, T_w, T_r); the log is how tests check every decision. */
#include "preemptd.h"

#include <stdarg.h>
#include <time.h>

double preemptd_monotonic_us(void) {
  struct timespec now;
  /* CLOCK_MONOTONIC cannot fail with a valid pointer; a wall clock would jump with NTP. */
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (double)now.tv_sec * 1e6 + (double)now.tv_nsec / 1e3;
}

double preemptd_now_us(const preemptd_context *ctx) { return preemptd_monotonic_us() - ctx->start_us; }

/* Logging never fails the caller: a full disk must not stop scheduling, so write errors are dropped. */
void preemptd_log(preemptd_context *ctx, const char *format, ...) {
  if (!ctx->log)
    return;
  /* Absolute CLOCK_MONOTONIC seconds: comparable with a client's own clock_gettime in tests. */
  double now = preemptd_monotonic_us() / 1e6;
  fprintf(ctx->log, "%.6f ", now);
  va_list args;
  va_start(args, format);
  vfprintf(ctx->log, format, args);
  va_end(args);
  fputc('\n', ctx->log);
  fflush(ctx->log);
}

void preemptd_format_sms(const preempt_sm_set *sms, bool all, char *text, size_t text_bytes) {
  if (text_bytes == 0)
    return;
  text[0] = '\0';
  if (all) {
    snprintf(text, text_bytes, "all");
    return;
  }
  size_t used = 0;
  for (uint32_t sm = 0; sm < PREEMPT_SCHED_MAX_SMS; sm++) {
    if (!preempt_sm_set_has(sms, sm) || (sm > 0 && preempt_sm_set_has(sms, sm - 1)))
      continue;
    uint32_t last = sm;
    while (last + 1 < PREEMPT_SCHED_MAX_SMS && preempt_sm_set_has(sms, last + 1))
      last++;
    int wrote = last == sm ? snprintf(text + used, text_bytes - used, "%s%u", used ? "," : "", sm)
                           : snprintf(text + used, text_bytes - used, "%s%u-%u", used ? "," : "", sm, last);
    if (wrote < 0 || (size_t)wrote >= text_bytes - used)
      return; /* truncated: a log line, not data */
    used += (size_t)wrote;
  }
  if (used == 0)
    snprintf(text, text_bytes, "none");
}
