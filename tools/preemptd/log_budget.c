/* log_budget.c: lines a client causes in the decision log, rate-limited per user (a token bucket per uid).
 * FLEP §3 (one daemon for every user of the node): one user's flood of requests or garbage must not fill the disk. */
#include "preemptd.h"

#include <stdarg.h>
#include <string.h>

/* The budget of `uid`: its entry, else a free one, else the one idle longest (a user who floods stays busy, so
 * it keeps its own, nearly empty, entry). */
static preemptd_log_budget *budget_of(preemptd_context *ctx, uid_t uid, double now) {
  preemptd_log_budget *idlest = &ctx->log_budgets[0];
  for (uint32_t i = 0; i < PREEMPTD_LOG_USERS; i++) {
    preemptd_log_budget *budget = &ctx->log_budgets[i];
    if (budget->in_use && budget->uid == uid)
      return budget;
    if (!budget->in_use || (idlest->in_use && budget->refilled_us < idlest->refilled_us))
      idlest = budget;
  }
  memset(idlest, 0, sizeof *idlest);
  idlest->in_use = true;
  idlest->uid = uid;
  idlest->tokens = PREEMPTD_LOG_BURST;
  idlest->refilled_us = now;
  return idlest;
}

static void log_for_uid(preemptd_context *ctx, uid_t uid, const char *format, va_list args) {
  if (!ctx->log)
    return;
  char line[1024];
  vsnprintf(line, sizeof line, format, args);
  if (preemptd_uid_trusted(ctx, uid)) {
    preemptd_log(ctx, "%s", line);
    return;
  }
  double now = preemptd_monotonic_us();
  preemptd_log_budget *budget = budget_of(ctx, uid, now);
  budget->tokens += (now - budget->refilled_us) / 1e6 * PREEMPTD_LOG_LINES_PER_S;
  if (budget->tokens > PREEMPTD_LOG_BURST)
    budget->tokens = PREEMPTD_LOG_BURST;
  budget->refilled_us = now;
  if (budget->tokens < 1.0) {
    budget->suppressed++;
    return;
  }
  budget->tokens -= 1.0;
  if (budget->suppressed)
    preemptd_log(ctx, "%s (and %llu earlier lines of uid %u not logged: over %.0f lines/s)", line,
                 (unsigned long long)budget->suppressed, (unsigned)uid, PREEMPTD_LOG_LINES_PER_S);
  else
    preemptd_log(ctx, "%s", line);
  budget->suppressed = 0;
}

void preemptd_log_client(preemptd_context *ctx, preemptd_client *client, const char *format, ...) {
  va_list args;
  va_start(args, format);
  log_for_uid(ctx, client->uid, format, args);
  va_end(args);
}

void preemptd_log_uid(preemptd_context *ctx, uid_t uid, const char *format, ...) {
  va_list args;
  va_start(args, format);
  log_for_uid(ctx, uid, format, args);
  va_end(args);
}
