/* context.c: the runtime's one context object, its lock, error reporting and shutdown.
 * FLEP §3: one runtime per process holds per-device and per-kernel state. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime.h"

static preempt_runtime runtime_context = {.lock = PTHREAD_MUTEX_INITIALIZER};
static _Thread_local char last_error[512];

preempt_runtime *preempt_runtime_lock(void) {
  pthread_mutex_lock(&runtime_context.lock);
  if (!runtime_context.gpu)
    runtime_context.gpu = preempt_gpu_backend();
  return &runtime_context;
}

void preempt_runtime_unlock(preempt_runtime *runtime) { pthread_mutex_unlock(&runtime->lock); }

static void publish_error(void) {
  const char *quiet = getenv("PREEMPT_QUIET");
  if (!quiet || strcmp(quiet, "1") != 0)
    fprintf(stderr, "%s\n", last_error);
}

void preempt_report(const char *format, ...) {
  va_list arguments;
  int prefix = snprintf(last_error, sizeof last_error, "preempt: ");
  va_start(arguments, format);
  vsnprintf(last_error + prefix, sizeof last_error - (size_t)prefix, format, arguments);
  va_end(arguments);
  publish_error();
}

int preempt_report_gpu(const preempt_gpu_ops *gpu, int code, const char *what, const char *kernel_name) {
  snprintf(last_error, sizeof last_error, "preempt: %s failed%s%s%s: %s error %d: %s", what,
           kernel_name ? " for kernel '" : "", kernel_name ? kernel_name : "", kernel_name ? "'" : "",
           gpu->api_name, code, gpu->error_string(code));
  publish_error();
  return code;
}

const char *preempt_last_error(void) { return last_error; }

preempt_status preempt_shutdown(void) {
  preempt_runtime *runtime = preempt_runtime_lock();
  for (int device = 0; device < PREEMPT_MAX_DEVICES; device++) {
    preempt_device_state *state = &runtime->devices[device];
    if (!state->initialized)
      continue;
    preempt_control_pool_destroy(&state->control_pool, runtime->gpu);
    state->initialized = 0;
  }
  while (runtime->kernels) {
    preempt_kernel_state *kernel = runtime->kernels;
    runtime->kernels = kernel->next;
    kernel->desc->runtime_state = NULL;
    free(kernel);
  }
  preempt_runtime_unlock(runtime);
  return PREEMPT_OK;
}
