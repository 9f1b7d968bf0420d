/* context.c: the runtime's one context object: its lock, configuration, devices, launch ids and errors.
 * FLEP §3: one runtime per process holds per-device and per-kernel state. */
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon_socket.h" /* preempt_monotonic_ns */
#include "preempt/mps_detect.h"
#include "runtime.h"

static preempt_runtime runtime_context = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .relauncher = {.wake = PTHREAD_COND_INITIALIZER},
    .daemon = {.request_lock = PTHREAD_MUTEX_INITIALIZER, .agent = {.wake = PTHREAD_COND_INITIALIZER}}};

/* The hardware-queue trap (docs/preemption.md): an application stream held
 * by the wait for done_generation blocks every stream mapped to the same
 * hardware queue. CUDA maps streams onto CUDA_DEVICE_MAX_CONNECTIONS queues
 * (8 unless set, without MPS), and the runtime holds at most half of them
 * (eviction.c). Measured on the H100: with 1 connection a resume deadlocks,
 * with 8 or 32 it did not. Asking for 32 costs every process 0.6 s at start
 * on the H200 (0.32 -> 0.94 s, bench/results/2026-11-28-h200-stream-slots-probe/)
 * and, under MPS, the clients of a server share one pool of connections: on
 * the H200 with preemptd, 3 of 8 processes asking 32 started, 15 of 32 asking
 * 8, and all 32 (48 of 64, MPS's client limit) leaving CUDA's choice
 * (bench/results/2026-11-28-h200-node-be7e1b9/). So the runtime asks for no
 * queues unless PREEMPT_EVICT_READY=1 (for programs that evict their own
 * launches through the API and may hold many streams: 32 queues). Under MPS
 * CUDA's own choice is taken as 2 queues (128 connections in the pool, 48
 * clients), so at most one stream is held (eviction.c). Lazy module loading
 * blocked a launch of a not-yet-loaded kernel while a stream was held (the
 * H100, driver 580): a process that will evict (PREEMPT_STRESS, a preemptd
 * socket, PREEMPT_EVICT_READY=1) loads every module at start (no cost
 * measured at start on the H200 for the programs tried);
 * PREEMPT_EVICT_READY=0 asks for neither. Values the user set are kept.
 * Evicting without eager loading is refused (eviction.c). */
typedef enum eviction_outlook {
  EVICTIONS_NONE = 0,
  EVICTIONS_FEW_STREAMS, /* eager loading only */
  EVICTIONS_MANY_STREAMS, /* and 32 hardware queues */
} eviction_outlook;

/* Settings read again at the next configure: after preempt_shutdown, for programs and tests that change the
 * environment between runs. */
static int settings_stale;

void preempt_runtime_unconfigure(preempt_runtime *runtime) {
  runtime->configured = 0;
  runtime->evictions_asked = 0;
  settings_stale = 1;
}

static void report_complaints(const preempt_settings *settings) {
  for (unsigned index = 0; index < settings->complaint_count; index++)
    preempt_report("%s", settings->complaints[index]);
}

static eviction_outlook evictions_expected(const preempt_settings *settings) {
  if (settings->evict_ready == 1)
    return EVICTIONS_MANY_STREAMS;
  if (settings->evict_ready == 0)
    return EVICTIONS_NONE;
  int evicts = settings->stress != 0;
  if (!evicts && settings->daemon)
    evicts = access(settings->daemon_socket, F_OK) == 0;
  return evicts ? EVICTIONS_FEW_STREAMS : EVICTIONS_NONE;
}

__attribute__((constructor)) static void prepare_for_eviction(void) {
  preempt_settings settings;
  int fresh;
  preempt_settings_load(0, &settings, &fresh);
  if (fresh)
    report_complaints(&settings);
  eviction_outlook outlook = evictions_expected(&settings);
  if (outlook == EVICTIONS_MANY_STREAMS)
    setenv("CUDA_DEVICE_MAX_CONNECTIONS", "32", 0);
  if (outlook != EVICTIONS_NONE)
    setenv("CUDA_MODULE_LOADING", "EAGER", 0);
}
static _Thread_local char last_error[512];

static void configure(preempt_runtime *runtime) {
  runtime->configured = 1;
  int fresh;
  preempt_settings_load(settings_stale, &runtime->settings, &fresh);
  settings_stale = 0;
  if (fresh)
    report_complaints(&runtime->settings);
  const preempt_settings *settings = &runtime->settings;
  runtime->check_interval_env = (uint32_t)settings->check_interval;
  runtime->check_period_ns = settings->check_period_us * 1000.0;
  /* In-task yield points (intask.c). */
  runtime->intask_period_ns = (uint32_t)(settings->intask_period_us * 1000);
  /* Which launches of a converted kernel are long enough to run a
   * preemptible form (as_written.c): those predicted to run this long or
   * longer; 0 converts every launch (as before 2026-11-28). The default,
   * 500 us, is about twice a temporal eviction's turnaround measured on the
   * H200: a shorter launch ends about as soon as it could be evicted. */
  runtime->long_launch_ns = settings->long_us * 1e3;
  runtime->lazy_loading = -1; /* asked at the first eviction (eviction.c) */
  runtime->visible_devices = 0;  /* asked at the first launch (preempt_current_device) */
  runtime->max_stream_priority = INT_MIN; /* no converted launch yet (priority.c) */
  const char *connections = getenv("CUDA_DEVICE_MAX_CONNECTIONS"); /* CUDA's setting, as CUDA reads it */
  int mps = !connections && preempt_mps_running();
  runtime->hardware_queues = connections ? (uint32_t)strtoul(connections, NULL, 10) : mps ? PREEMPT_MPS_DEFAULT_QUEUES : 8;
  runtime->hardware_queues_from = connections ? "CUDA_DEVICE_MAX_CONNECTIONS"
                                  : mps       ? "CUDA_DEVICE_MAX_CONNECTIONS unset under MPS: a client's share of the "
                                                "server's pool"
                                              : "CUDA's default";
  runtime->stress.enabled = settings->stress != 0;
  runtime->stress.verbose = settings->stress == 2;
  runtime->stress.period_us = (long)settings->stress_period_us;
  __atomic_store_n(&runtime->time_locks, settings->time_evictions, __ATOMIC_RELAXED);
}

preempt_runtime *preempt_runtime_context(void) { return &runtime_context; }

preempt_runtime *preempt_worker_stop(preempt_runtime *runtime, preempt_worker *worker) {
  if (!worker->running)
    return runtime;
  worker->stopping = 1;
  pthread_cond_signal(&worker->wake);
  preempt_runtime_unlock(runtime);
  pthread_join(worker->thread, NULL);
  runtime = preempt_runtime_lock(); /* the one context: `worker` still points into it */
  worker->running = worker->stopping = 0;
  return runtime;
}

int preempt_evictions_expected(const preempt_runtime *runtime) {
  return runtime->daemon.registered || runtime->stress.enabled || runtime->settings.evict_ready == 1 ||
         runtime->evictions_asked;
}

/* Under PREEMPT_TIME_EVICTIONS=1 the lock notes when it was taken, and for how long it was waited for (an urgent
 * launch's first step, eviction_time.c); otherwise it reads no clock. */
preempt_runtime *preempt_runtime_lock(void) {
  uint64_t asked_ns = 0;
  if (pthread_mutex_trylock(&runtime_context.lock) != 0) {
    if (__atomic_load_n(&runtime_context.time_locks, __ATOMIC_RELAXED))
      asked_ns = preempt_monotonic_ns();
    __atomic_add_fetch(&runtime_context.lock_waiters, 1, __ATOMIC_RELAXED);
    pthread_mutex_lock(&runtime_context.lock);
    __atomic_sub_fetch(&runtime_context.lock_waiters, 1, __ATOMIC_RELAXED);
  }
  if (!runtime_context.gpu)
    runtime_context.gpu = preempt_gpu_backend();
  if (!runtime_context.configured)
    configure(&runtime_context);
  if (runtime_context.time_locks) {
    runtime_context.lock_taken_ns = preempt_monotonic_ns();
    runtime_context.lock_waited_ns = asked_ns ? runtime_context.lock_taken_ns - asked_ns : 0;
  }
  return &runtime_context;
}

/* Mutexes are not fair: a thread launching in a tight loop would take the
 * lock back before a blocked evict, resume or the stress thread gets it. */
void preempt_runtime_unlock(preempt_runtime *runtime) {
  pthread_mutex_unlock(&runtime->lock);
  if (__atomic_load_n(&runtime->lock_waiters, __ATOMIC_RELAXED))
    sched_yield();
}

static void publish_error(void) {
  preempt_settings settings; /* read at load (prepare_for_eviction), which said the complaints */
  preempt_settings_load(0, &settings, NULL);
  if (!settings.quiet)
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

/* In CUDA's global capture mode, a "potentially unsafe" call from any other thread is refused and invalidates the
 * capture: a relaunch or yield-mask write of ours, on our own streams, landing while an application thread captured
 * made graphMemoryNodes' next cudaMallocAsync fail with 901 (corpus, stress + in-task). Relaxed, a runtime thread's
 * calls neither are refused nor touch the capture; the capturing thread's own rules are unchanged. */
int preempt_relax_thread_capture(const preempt_gpu_ops *gpu, const char *thread) {
  int saved = 0;
  if (!gpu->capture_mode_relax)
    return 0;
  int status = gpu->capture_mode_relax(&saved);
  if (status != 0) {
    char what[96];
    snprintf(what, sizeof what, "relaxing the %s thread's stream-capture mode", thread);
    preempt_report_gpu(gpu, status, what, NULL);
  }
  return status;
}

const char *preempt_last_error(void) { return last_error; }

int preempt_device_sm_count(preempt_runtime *runtime, int device, uint32_t *count) {
  preempt_device_state *state = &runtime->devices[device];
  if (state->sm_count == 0) {
    int status = runtime->gpu->sm_count(device, &state->sm_count);
    if (status != 0) {
      state->sm_count = 0;
      return preempt_report_gpu(runtime->gpu, status, "reading the SM count", NULL);
    }
  }
  *count = state->sm_count;
  return 0;
}

/* With one device visible (a node's GPU given to a job, every MIG slice) the current device is 0 whatever the
 * thread has done, so a launch needs no driver call to know it: cudaGetDevice was a measurable part of what the
 * runtime added to a launch it runs as written (bench/preemption/as_written_cost.cu, issue 39). */
int preempt_current_device(preempt_runtime *runtime, int *device) {
  const preempt_gpu_ops *gpu = runtime->gpu;
  if (runtime->visible_devices == 0) {
    int count = 0;
    runtime->visible_devices = gpu->device_count && gpu->device_count(&count) == 0 && count > 0 ? count : -1;
  }
  if (runtime->visible_devices == 1) {
    *device = 0;
    return 0;
  }
  return gpu->current_device(device);
}

int preempt_device_state_get(preempt_runtime *runtime, int device, preempt_device_state **out) {
  preempt_device_state *state = &runtime->devices[device];
  const preempt_gpu_ops *gpu = runtime->gpu;
  if (!state->initialized) {
    uint32_t sm_count;
    int status = preempt_device_sm_count(runtime, device, &sm_count);
    if (status != 0)
      return status;
    status = preempt_control_pool_init(&state->control_pool, gpu, PREEMPT_CONTROL_POOL_CAPACITY,
                                       runtime->settings.time_evictions);
    if (status == -1) {
      preempt_report("out of host memory for the control-block pool");
      return gpu->out_of_memory;
    }
    if (status != 0)
      return preempt_report_gpu(gpu, status, "allocating the control-block pool", NULL);
    status = gpu->stream_create(&state->control_stream, 1);
    /* The others are created by the first quota launch that needs one (eviction.c). */
    if (status == 0)
      status = gpu->stream_create(&state->resume_streams[0], 0);
    if (status == 0)
      status = gpu->event_create(&state->resume_ready, 0);
    if (status != 0) {
      preempt_control_pool_destroy(&state->control_pool, gpu);
      return preempt_report_gpu(gpu, status, "creating the runtime's streams", NULL);
    }
    if (gpu->publisher_load && (state->publisher_status = gpu->publisher_load(&state->publisher)) != 0)
      preempt_report_gpu(gpu, state->publisher_status, "loading the relaunch publisher (evictions are refused)",
                         NULL);
    state->initialized = 1;
  }
  *out = state;
  return 0;
}

void preempt_for_each_record(preempt_runtime *runtime, preempt_record_visitor visit, void *context) {
  for (int device_index = 0; device_index < PREEMPT_MAX_DEVICES; device_index++) {
    preempt_device_state *device = &runtime->devices[device_index];
    if (!device->initialized)
      continue;
    for (uint32_t slot = 0; slot < device->control_pool.in_use; slot++)
      visit(runtime, device, slot, &device->control_pool.records[slot], context);
  }
}

preempt_launch_id preempt_launch_id_make(int device, uint32_t slot, uint32_t generation) {
  return ((uint64_t)(device + 1) << 56) | ((uint64_t)slot << 32) | generation;
}

preempt_launch_record *preempt_launch_lookup(preempt_runtime *runtime, preempt_launch_id launch,
                                             preempt_device_state **device_out) {
  int device = (int)(launch >> 56) - 1;
  uint32_t slot = (uint32_t)(launch >> 32) & 0xffffff;
  uint32_t generation = (uint32_t)launch;
  if (device < 0 || device >= PREEMPT_MAX_DEVICES || !runtime->devices[device].initialized)
    return NULL;
  preempt_device_state *state = &runtime->devices[device];
  if (slot >= state->control_pool.capacity)
    return NULL;
  preempt_launch_record *record = &state->control_pool.records[slot];
  if (record->generation != generation || generation == 0)
    return NULL;
  *device_out = state;
  return record;
}
