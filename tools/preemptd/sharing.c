/* sharing.c: how this node shares its GPUs between processes, MPS or time-slicing: forced by --sharing or detected.
 * FLEP §6.3 and FlexSched §2 (kernels of two processes overlap only under MPS); issue 40 (time-slicing handled). */
#include "preemptd.h"

#include "preempt/mps_detect.h"

#include <string.h>

/* MPS can be started or stopped while the daemon runs; a look (one access()) at most this often. */
#define SHARING_RECHECK_US 1e6

int preemptd_sharing_parse(const char *text, preemptd_sharing *out) {
  if (strcmp(text, "auto") == 0)
    *out = PREEMPTD_SHARING_AUTO;
  else if (strcmp(text, "mps") == 0)
    *out = PREEMPTD_SHARING_MPS;
  else if (strcmp(text, "time-slicing") == 0)
    *out = PREEMPTD_SHARING_TIME_SLICING;
  else
    return -1;
  return 0;
}

bool preemptd_time_slicing(preemptd_context *ctx, bool look_now) {
  if (ctx->sharing != PREEMPTD_SHARING_AUTO)
    return ctx->sharing == PREEMPTD_SHARING_TIME_SLICING;
  double now = preemptd_now_us(ctx);
  if (look_now || !ctx->sharing_checked || now - ctx->sharing_checked_us >= SHARING_RECHECK_US) {
    bool time_slicing = !preempt_mps_running();
    if (ctx->sharing_checked && time_slicing != ctx->sharing_detected_time_slicing)
      preemptd_log(ctx, "sharing %s", time_slicing ? "time-slicing" : "mps");
    ctx->sharing_detected_time_slicing = time_slicing;
    ctx->sharing_checked = true;
    ctx->sharing_checked_us = now;
  }
  return ctx->sharing_detected_time_slicing;
}
