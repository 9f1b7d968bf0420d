/* runtime.h: internals of the host runtime: its one context object, per-kernel state, error reporting.
 * FLEP §3-4 and EffiSha §6: the runtime keeps per kernel and per device what launches and evictions need. */
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
#define PREEMPT_CONTROL_POOL_CAPACITY 1024

typedef struct preempt_kernel_on_device {
  int resolved; /* marker looked up on this device */
  int converted;
  size_t *param_sizes; /* of the kernel's own parameters, once converted */
  uint32_t cached_block_threads; /* occupancy cache key */
  size_t cached_shared_bytes;
  uint32_t ctas_per_sm;
  uint32_t last_persistent_ctas;
  uint32_t last_check_interval;
  uint64_t launches;
  /* Task length, sampled on a launch (EffiSha §6.3's online sampling). */
  double task_nanoseconds;
  int sampling;               /* a sampled launch is in flight */
  uint32_t sample_slot, sample_generation;
} preempt_kernel_on_device;

typedef struct preempt_kernel_state {
  struct preempt_kernel_state *next; /* every state, for preempt_shutdown */
  preempt_kernel_desc *desc;
  uint32_t check_interval_override; /* 0: adaptive */
  preempt_kernel_on_device on_device[PREEMPT_MAX_DEVICES];
} preempt_kernel_state;

typedef struct preempt_device_state {
  int initialized;
  uint32_t sm_count;
  preempt_control_pool control_pool;
  void *control_stream; /* urgent: carries yield-mask writes while kernels run */
  void *resume_stream;  /* relaunched CTAs; holds only relaunches that can start */
  void *resume_ready;   /* event: the mask clearing before a relaunch has landed */
} preempt_device_state;

typedef struct preempt_stress {
  int enabled;
  int verbose; /* PREEMPT_STRESS=2: log every action */
  int running;
  pthread_t thread;
  uint64_t evictions, spatial_evictions, resumptions;
} preempt_stress;

/* The runtime's one context object. */
typedef struct preempt_runtime {
  pthread_mutex_t lock;
  int lock_waiters; /* threads blocked on the lock: an unlocking thread yields to them */
  const preempt_gpu_ops *gpu;
  int configured;                /* environment read */
  uint32_t check_interval_env;   /* PREEMPT_CHECK_INTERVAL, 0 if unset */
  double check_period_ns;        /* PREEMPT_CHECK_PERIOD_US */
  uint32_t hardware_queues;      /* CUDA_DEVICE_MAX_CONNECTIONS as CUDA will see it */
  preempt_kernel_state *kernels;
  preempt_device_state devices[PREEMPT_MAX_DEVICES];
  preempt_stress stress;
  /* Enqueues relaunches as their launches start (eviction.c). */
  struct {
    int running, stopping;
    pthread_t thread;
    pthread_cond_t wake;
  } relauncher;
} preempt_runtime;

/* Locks the context and returns it. */
preempt_runtime *preempt_runtime_lock(void);
void preempt_runtime_unlock(preempt_runtime *runtime);

/* Records (and prints, unless PREEMPT_QUIET=1) an error of the GPU API.
 * Returns `code` so callers can `return preempt_report_gpu(...)`. */
int preempt_report_gpu(const preempt_gpu_ops *gpu, int code, const char *what, const char *kernel_name);
/* Records a runtime error that has no GPU API code. */
void preempt_report(const char *format, ...) __attribute__((format(printf, 1, 2)));

/* Sets up the device's control blocks and streams on first use. */
int preempt_device_state_get(preempt_runtime *runtime, int device, preempt_device_state **out);

/* Enqueues the relaunches whose launch has started; returns how many still
 * wait. Context locked. */
uint32_t preempt_enqueue_ready_relaunches(preempt_runtime *runtime);

/* Calls `visit` on every launch record of every device in use. Context locked. */
typedef void (*preempt_record_visitor)(preempt_runtime *runtime, preempt_device_state *device, uint32_t slot,
                                       preempt_launch_record *record, void *context);
void preempt_for_each_record(preempt_runtime *runtime, preempt_record_visitor visit, void *context);

/* Launch ids: device, control-block slot and generation. */
preempt_launch_id preempt_launch_id_make(int device, uint32_t slot, uint32_t generation);
/* The record of a launch that is still the one using its control block, or NULL. */
preempt_launch_record *preempt_launch_lookup(preempt_runtime *runtime, preempt_launch_id launch,
                                             preempt_device_state **device_out);

/* Eviction and resumption of one launch, with the context locked. */
preempt_status preempt_evict_record(preempt_runtime *runtime, preempt_device_state *device,
                                    preempt_launch_record *record, const preempt_sm_mask *sms);
preempt_status preempt_resume_record(preempt_runtime *runtime, preempt_device_state *device,
                                     preempt_launch_record *record);

/* Starts the random eviction thread if PREEMPT_STRESS=1 (once). */
void preempt_stress_start_if_requested(preempt_runtime *runtime);
void preempt_stress_stop(preempt_runtime *runtime);

#endif
