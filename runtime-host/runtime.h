/* runtime.h: internals of the host runtime: its one context object, per-kernel state, error reporting.
 * FLEP §3: the runtime keeps what it learns per kernel and per device between launches. */
#ifndef PREEMPT_RUNTIME_H
#define PREEMPT_RUNTIME_H

#include <pthread.h>
#include <stdint.h>

#include "control_pool.h"
#include "gpu.h"
#include "preempt.h"

#define PREEMPT_MAX_DEVICES 64
/* Kernel parameter space is 32 KiB on current GPUs: at most 8192 4-byte parameters. */
#define PREEMPT_MAX_KERNEL_PARAMS 8192

typedef struct preempt_kernel_on_device {
  int resolved; /* marker looked up on this device */
  int converted;
  uint32_t cached_block_threads; /* occupancy cache key */
  size_t cached_shared_bytes;
  uint32_t ctas_per_sm;
  uint32_t last_persistent_ctas;
  uint64_t launches;
} preempt_kernel_on_device;

typedef struct preempt_kernel_state {
  struct preempt_kernel_state *next; /* every state, for preempt_shutdown */
  preempt_kernel_desc *desc;
  preempt_kernel_on_device on_device[PREEMPT_MAX_DEVICES];
} preempt_kernel_state;

typedef struct preempt_device_state {
  int initialized;
  uint32_t sm_count;
  preempt_control_pool control_pool;
} preempt_device_state;

/* The runtime's one context object. */
typedef struct preempt_runtime {
  pthread_mutex_t lock;
  const preempt_gpu_ops *gpu;
  preempt_kernel_state *kernels;
  preempt_device_state devices[PREEMPT_MAX_DEVICES];
} preempt_runtime;

/* Locks the context and returns it. */
preempt_runtime *preempt_runtime_lock(void);
void preempt_runtime_unlock(preempt_runtime *runtime);

/* Records (and prints, unless PREEMPT_QUIET=1) an error of the GPU API.
 * Returns `code` so callers can `return preempt_report_gpu(...)`. */
int preempt_report_gpu(const preempt_gpu_ops *gpu, int code, const char *what, const char *kernel_name);
/* Records a runtime error that has no GPU API code. */
void preempt_report(const char *format, ...) __attribute__((format(printf, 1, 2)));

#endif
