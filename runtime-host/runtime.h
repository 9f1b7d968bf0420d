/* runtime.h: internals of the host runtime: its one context object, per-kernel state, error reporting.
 * FLEP §3-4 and EffiSha §6: the runtime keeps per kernel and per device what launches and evictions need. */
#ifndef PREEMPT_RUNTIME_H
#define PREEMPT_RUNTIME_H

#include <pthread.h>
#include <stdint.h>

#include "control_pool.h"
#include "gpu.h"
#include "preempt.h"
#include "preempt/daemon_protocol.h"
#include "preempt/launch_length.h"
#include "settings.h"

#define PREEMPT_MAX_DEVICES 64
/* Kernel parameter space is 32 KiB on current GPUs: at most 8192 4-byte parameters. */
#define PREEMPT_MAX_KERNEL_PARAMS 8192
#define PREEMPT_CONTROL_POOL_CAPACITY 1024
#define PREEMPT_RESUME_STREAMS 4

/* PREEMPT_FORM (launch.c, choose_form). */
typedef enum preempt_form {
  PREEMPT_FORM_AUTO = 0,   /* the faster of the two, measured per kernel */
  PREEMPT_FORM_PERSISTENT, /* persistent threads always */
  PREEMPT_FORM_DRAIN,      /* the drain form wherever the kernel has one */
} preempt_form;

/* PREEMPT_PROMPT: when a persistent CTA reads its yield bit (control_block.h, PREEMPT_LAUNCH_PROMPT). */
typedef enum preempt_prompt_mode {
  PREEMPT_PROMPT_AUTO, /* where evictions are expected and two tasks outlast PREEMPT_EVICT_BOUND_US (launch.c) */
  PREEMPT_PROMPT_ON,   /* in every persistent launch */
  PREEMPT_PROMPT_OFF,  /* never: read one task ahead, so an eviction waits for up to two more tasks */
} preempt_prompt_mode;

/* PREEMPT_INTASK (intask.c): where kernels with in-task yield points check them. */
typedef enum preempt_intask_mode {
  PREEMPT_INTASK_AUTO = 0, /* where measured tasks are long enough for the saved context to pay */
  PREEMPT_INTASK_ON,       /* in every launch of such a kernel */
  PREEMPT_INTASK_OFF,      /* never: evictions wait for the task boundary */
} preempt_intask_mode;

/* PREEMPT_INTASK_SHAPE (intask.c): which of a kernel's two in-task variants launches run. */
typedef enum preempt_intask_shape {
  PREEMPT_SHAPE_AUTO = 0, /* the faster per task, timed per kernel */
  PREEMPT_SHAPE_RUNTIME = 1, /* chunks of a length set at run time (the first variant); 1 and 2 as preempt.h says */
  PREEMPT_SHAPE_CHUNKS = 2,  /* constant chunks, where the pass made that variant */
} preempt_intask_shape;

typedef struct preempt_kernel_on_device {
  int resolved; /* marker looked up on this device */
  int converted;
  int forms_resolved; /* parameter sizes and forms looked up (launch.c, resolve_forms) */
  size_t *param_sizes; /* of the kernel's own parameters, once converted */
  uint32_t param_count; /* how many: the device kernel's, not the host stub's LLVM arguments */
  /* The kernel as written, under its own name since ABI 9 (what the
   * program's stub registered; gpu.h's original_kernel): short and one-wave
   * launches run it (as_written.c, launch.c). */
  void *original_function;
  /* The persistent form (control_block.h, PREEMPT_PERSISTENT_KERNEL_PREFIX),
   * which every converted grid but the drain form's first wave and in-task
   * variants' runs. */
  void *persistent_function;
  uint64_t one_wave_launches; /* launches that ran it */
  /* The kernel's drain form (control_block.h), NULL if the pass kept none:
   * launches run it where launch.c's choose_form says so. */
  void *drain_function;
  uint64_t drain_launches; /* launches that ran it */
  uint64_t prompt_launches; /* persistent launches with prompt yield checks (launch.c, prompt_checks) */
  /* Each form's whole-launch time per task, from timed launches of each (0:
   * not measured yet; launch.c, choose_drain). */
  double persistent_ns_per_task, drain_ns_per_task; /* the drain form's: the mean of its samples */
  int drain_samples;
  /* The pass's in-task descriptor and variant (control_block.h): point_count
   * 0 and NULL when the kernel has none. */
  preempt_intask_desc intask;
  void *intask_function;
  /* Its twin in constant chunks (control_block.h), where the pass made one:
   * which shape runs faster depends on ptxas's register allocation (0.83x to
   * 1.06x the other on the H100's bench kernels, docs/intask.md), so launches
   * time each, PREEMPT_SHAPE_SAMPLES apiece in turn, and keep the faster per
   * task (intask.c, choose_shape). Index 0: run-time chunks, 1: constant. */
  preempt_intask_desc intask_chunks;
  void *intask_chunks_function;
  uint32_t intask_chunks_ctas_per_sm;
  double shape_ns_per_task[2]; /* the mean of each shape's samples, once all are in */
  int shape_samples[2];
  uint64_t intask_chunks_launches; /* launches that ran the constant chunks */
  uint32_t cached_block_threads; /* occupancy cache key */
  size_t cached_shared_bytes;
  uint32_t ctas_per_sm;
  uint32_t intask_ctas_per_sm; /* the in-task variant's (0: none, not asked, or the query failed) */
  uint32_t last_persistent_ctas;
  uint32_t last_check_interval;
  uint64_t launches;
  /* Launches as written (as_written.c): the unconverted copy's CTAs per SM at
   * the cached configuration, its duration per wave from timed launches, the
   * timing in flight (events, waves), and the launches that ran it because
   * they were short or inside a stream capture. */
  uint32_t original_ctas_per_sm;
  preempt_launch_length length;
  void *length_events[2];
  int length_pending; /* 1: a timing in flight; -1: a launch is recording one */
  uint64_t length_waves;
  uint64_t short_launches, capture_launches, unevictable_launches;
  int no_room_reported; /* a launch ran as written: the form held no CTA of it (launch.c), said once */
  /* The pass's PREEMPT_WARP_ROWS_PREFIX global: the forms are safe only in
   * blocks of one row or of rows of whole warps; others run as written. */
  uint32_t warp_rows;
  int warp_rows_reported;
  /* Task length, sampled on a launch (EffiSha §6.3's online sampling). The
   * first sample runs with a check before every task, whose fetches made
   * tasks of streaming kernels take 2.0-2.7x as long on the H100
   * (overhead_parts at interval 1 against 16); so a second launch is sampled at the
   * interval the first sample chose, and its estimate replaces the first. */
  double task_nanoseconds;
  int task_samples;           /* samples taken, up to PREEMPT_TASK_SAMPLES */
  int sampling;               /* a sampled launch is in flight */
  uint32_t sample_slot, sample_generation;
} preempt_kernel_on_device;

#define PREEMPT_TASK_SAMPLES 2
#define PREEMPT_DRAIN_SAMPLES 2
#define PREEMPT_SHAPE_SAMPLES 2

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
  /* Relaunched CTAs: a stream holds only relaunches that can start. Quota launches co-run, so their
   * relaunches must not queue behind each other's persistent grids: theirs go to streams 1.. (slot % 3 + 1),
   * created on first use; every other launch's to stream 0, as before co-execution. Each stream created takes
   * a hardware queue, so it counts against the held-stream limit (eviction.c). */
  void *resume_streams[PREEMPT_RESUME_STREAMS];
  uint32_t extra_resume_streams;
  void *resume_ready;   /* event: the mask clearing before a relaunch has landed */
  /* NVIDIA's relaunch publisher (gpu.h), loaded with the device state; a
   * relaunch cannot complete without it, so evictions and preemptd's held
   * launches are refused when it failed to load (publisher_status). */
  void *publisher;
  int publisher_status;
} preempt_device_state;

typedef struct preempt_stress {
  int enabled;
  int verbose; /* PREEMPT_STRESS=2: log every action */
  long period_us; /* PREEMPT_STRESS_PERIOD_US */
  int running;
  int started; /* the thread ran at least once in this process: the summary is said at exit */
  pthread_t thread;
  uint64_t evictions, spatial_evictions, drained_evictions, resumptions;
  /* Evictions not tried: the launch's stream would be one held stream too
   * many for the hardware queues (eviction.c, preempt_may_hold_stream). */
  uint64_t skipped_held_streams;
} preempt_stress;

/* One stub of the preemptd page as this process sees it (daemon_client.c). */
typedef struct preempt_daemon_stub_view {
  int owned;            /* this process moved it out of FREE and has not yet answered DONE */
  int spare;            /* owned, in PREP, with no launch: taken by a launch that failed */
  int waiting_start;    /* in PREP until the launch's start event fires (work ahead of it done) */
  int evicting;         /* a full eviction was issued: answer once no CTA is left */
  int refused;          /* the eviction was refused: answer DONE once the launch finishes */
  int device;
  uint32_t slot, generation; /* the launch record */
  uint32_t command_sequence; /* of the eviction being carried out */
  uint32_t evictions;
  uint64_t eviction_started_ns;
  uint64_t next_progress_ns; /* a quota launch's next progress sample for the daemon (daemon_client.c) */
} preempt_daemon_stub_view;

/* A thread of the runtime's (the relauncher, preemptd's agent): started on first use, stopped by
 * preempt_worker_stop. */
typedef struct preempt_worker {
  int running, stopping;
  pthread_t thread;
  pthread_cond_t wake;
} preempt_worker;

/* The client of preemptd, the per-node scheduling daemon (docs/daemon.md). */
typedef struct preempt_daemon_client {
  int started;          /* environment read, first registration tried */
  int registered;       /* page and doorbell mapped: converted launches are held for the daemon */
  int lost;             /* was registered, the daemon went away: the agent registers again */
  uint32_t epoch;       /* +1 per registration and per loss: a launch's stub belongs to one page */
  char socket_path[108];
  /* The connection last registered on (daemon_link.c; 0: none). Past a stop, while memory admission keeps it open,
   * the daemon still holds that registration there. */
  uint32_t link_generation;
  preempt_client_page *page;
  preempt_doorbell_page *doorbell;
  uint32_t client_id;
  /* Asked for (PREEMPT_PRIORITY or preempt_set_priority), granted and the limit (the daemon's answer). */
  int priority_requested, priority_from_api;
  int32_t priority, granted, limit;
  uint32_t weight; /* PREEMPT_WEIGHT, 1 unless set */
  char program[PREEMPT_DAEMON_PROGRAM_BYTES];
  uint32_t gpu_count; /* devices 0..gpu_count-1, in REGISTER's order: a stub's gpu is its device number */
  preempt_msg_gpu gpus[PREEMPT_DAEMON_MAX_GPUS];
  preempt_daemon_stub_view stubs[PREEMPT_STUBS_PER_CLIENT];
  int told_no_stub, told_held_streams, told_lost;
  int exit_hook; /* the at-exit stop of the agent is registered */
  uint64_t absent_retry_ns; /* no daemon at the first launch: when a launch looks again (0: never) */
  uint64_t busy_backoff_ns; /* the daemon answered FULL: the wait before the next attempt (doubles) */
  int told_busy;            /* that FULL was reported (once) */
  pthread_mutex_t request_lock;  /* one SET_PRIORITY round trip at a time; taken before the runtime lock */
  preempt_worker agent; /* its wake: between registration attempts */
} preempt_daemon_client;

/* PREEMPT_TIME_EVICTIONS=1: where the host time of each eviction request goes (eviction_time.c), said at exit, for
 * two kinds of request: preempt_evict calls, and converted launches on a stream of higher priority that evicted to
 * make room (priority.c, issue 42: "the eviction path measured piece by piece"). Each step is the time since the
 * previous mark; a step a request does not take stays 0; rows beyond the ring's size are counted, not kept. One
 * request is timed at a time: a long urgent launch unlocks the context to enqueue its grid, and an eviction another
 * thread makes meanwhile marks its steps into that launch's row (a preempt_evict call starts its own instead). */
enum {
  PREEMPT_EVICT_STEP_LOCK,       /* waiting for the runtime's lock */
  PREEMPT_EVICT_STEP_BEFORE,     /* an urgent launch's own checks, from the lock to its priority rule */
  PREEMPT_EVICT_STEP_IN_THE_WAY, /* the priority rule: the stream's priority, the launches in the way */
  PREEMPT_EVICT_STEP_FINISHED,   /* "finished?": the launch's events */
  PREEMPT_EVICT_STEP_WORDS,      /* the request's words (drain hold, quota, in-task, yield mask) */
  PREEMPT_EVICT_STEP_TIMING,     /* the eviction's timing event */
  PREEMPT_EVICT_STEP_LAUNCH,     /* the urgent launch itself */
  PREEMPT_EVICT_STEP_AFTER,      /* the evicted launches' resumption after it (events) */
  PREEMPT_EVICT_STEP_REST,       /* the rest, to the lock's release */
  PREEMPT_EVICT_STEP_COUNT
};
enum { PREEMPT_STEPS_EVICT, PREEMPT_STEPS_URGENT, PREEMPT_STEPS_SERIES };
#define PREEMPT_EVICT_STEP_ROWS 1024
typedef struct preempt_evict_steps {
  uint32_t rows; /* requests timed (the ring keeps the first PREEMPT_EVICT_STEP_ROWS) */
  float us[PREEMPT_EVICT_STEP_ROWS][PREEMPT_EVICT_STEP_COUNT + 1]; /* the steps, then the whole request */
} preempt_evict_steps;
typedef struct preempt_evict_timing {
  int active;        /* the series of the request being timed, plus 1 (0: none) */
  uint64_t begin_ns; /* its entry */
  uint64_t mark_ns;  /* its previous mark */
  float row[PREEMPT_EVICT_STEP_COUNT];
  int exit_hook; /* said at exit */
  preempt_evict_steps series[PREEMPT_STEPS_SERIES];
} preempt_evict_timing;

/* The runtime's one context object. */
typedef struct preempt_runtime {
  pthread_mutex_t lock;
  int lock_waiters; /* threads blocked on the lock: an unlocking thread yields to them */
  int time_locks;   /* PREEMPT_TIME_EVICTIONS=1: the lock notes when it was taken and how long it was waited for */
  uint64_t lock_taken_ns, lock_waited_ns;
  const preempt_gpu_ops *gpu;
  int configured;                /* environment read */
  preempt_settings settings;     /* as read at configure (settings.c); the fields below derive from it */
  uint32_t check_interval_env;   /* PREEMPT_CHECK_INTERVAL, 0 if unset */
  double check_period_ns;        /* PREEMPT_CHECK_PERIOD_US */
  uint32_t intask_period_ns;       /* PREEMPT_INTASK_PERIOD_US: the time between in-task checks */
  uint32_t hardware_queues;      /* CUDA_DEVICE_MAX_CONNECTIONS as CUDA will see it */
  const char *hardware_queues_from; /* where that number comes from, for messages */
  int lazy_loading;              /* CUDA loads modules lazily: 1, 0, or -1 not asked yet (eviction.c) */
  double long_launch_ns;         /* PREEMPT_LONG_US: shorter launches run as written (as_written.c); 0: none */
  int evictions_asked;           /* an eviction was asked in this process (eviction.c): preempt_evictions_expected */
  int visible_devices;           /* 0 until asked, -1 when the count could not be read (preempt_current_device) */
  int max_stream_priority;       /* the greatest (least urgent) priority any converted launch ran at (priority.c) */
  preempt_kernel_state *kernels;
  preempt_device_state devices[PREEMPT_MAX_DEVICES];
  preempt_stress stress;
  preempt_evict_timing evict_timing;
  /* Enqueues relaunches as their launches start (eviction.c). */
  preempt_worker relauncher;
  preempt_daemon_client daemon;
} preempt_runtime;

/* Whether this process expects evictions (context.c): preemptd schedules it, PREEMPT_STRESS, PREEMPT_EVICT_READY=1,
 * or an eviction was asked. From then on `auto` weighs eviction latency (PREEMPT_EVICT_BOUND_US) as well as time. */
int preempt_evictions_expected(const preempt_runtime *runtime);
/* Stops `worker` if it runs (context.c): asks it to stop, then waits for it with the context unlocked. Context
 * locked; returns it locked again. */
preempt_runtime *preempt_worker_stop(preempt_runtime *runtime, preempt_worker *worker);
/* Locks the context and returns it. */
preempt_runtime *preempt_runtime_lock(void);
void preempt_runtime_unlock(preempt_runtime *runtime);
/* The context, unlocked: for preempt_shutdown's thread joins only (shutdown.c). */
preempt_runtime *preempt_runtime_context(void);
/* Context locked: the next lock reads the settings again and starts afresh (preempt_shutdown). */
void preempt_runtime_unconfigure(preempt_runtime *runtime);
/* The device's SM count, read once (no other device state is set up). Context locked. */
int preempt_device_sm_count(preempt_runtime *runtime, int device, uint32_t *count);
/* The device the calling thread's launches go to (gpu.h's current_device), asked of CUDA only where more than one
 * device is visible. Context locked. */
int preempt_current_device(preempt_runtime *runtime, int *device);

/* Records (and prints, unless PREEMPT_QUIET=1) an error of the GPU API.
 * Returns `code` so callers can `return preempt_report_gpu(...)`. */
int preempt_report_gpu(const preempt_gpu_ops *gpu, int code, const char *what, const char *kernel_name);

/* Called first by each of the runtime's own threads (daemon agent, relauncher, stress): their CUDA calls are never
 * part of an application's stream capture, so their capture mode is relaxed for the thread's life. 0, or the API's
 * code (reported; the thread goes on, as it did before). */
int preempt_relax_thread_capture(const preempt_gpu_ops *gpu, const char *thread);
/* Records a runtime error that has no GPU API code. */
void preempt_report(const char *format, ...) __attribute__((format(printf, 1, 2)));

/* Sets up the device's control blocks and streams on first use. */
int preempt_device_state_get(preempt_runtime *runtime, int device, preempt_device_state **out);

/* Enqueues the relaunches whose launch has started; returns how many still
 * wait. Context locked. */
uint32_t preempt_enqueue_ready_relaunches(preempt_runtime *runtime);
/* An evicted launch resumes once the work enqueued on `stream` so far has completed (the relaunch thread
 * watches an event recorded there); an eviction through the API cancels it. Context locked; the GPU API's
 * code. */
int preempt_resume_after(preempt_runtime *runtime, preempt_launch_record *record, void *stream);
/* Stream priorities kept (priority.c), context locked: before a converted kernel's launch on `stream`,
 * persistent launches of lower-priority streams on the device leave one SM for each of its `blocks` (every SM
 * from a wave's worth on); how many launches were evicted. After the launch (only where some were), they resume once it ends, or at
 * once where it failed (`launched` 0). */
int preempt_priority_make_room(preempt_runtime *runtime, int device, void *stream, uint64_t blocks);
void preempt_priority_after_launch(preempt_runtime *runtime, int device, void *stream, int launched);

/* Calls `visit` on every launch record of every device in use. Context locked. */
typedef void (*preempt_record_visitor)(preempt_runtime *runtime, preempt_device_state *device, uint32_t slot,
                                       preempt_launch_record *record, void *context);
void preempt_for_each_record(preempt_runtime *runtime, preempt_record_visitor visit, void *context);

/* Launch ids: device, control-block slot and generation. */
preempt_launch_id preempt_launch_id_make(int device, uint32_t slot, uint32_t generation);
/* The record of a launch that is still the one using its control block, or NULL. */
preempt_launch_record *preempt_launch_lookup(preempt_runtime *runtime, preempt_launch_id launch,
                                             preempt_device_state **device_out);

/* In-task preemption (intask.c, docs/intask.md). Context locked. */
/* Whether a launch of this kernel, at this block size and CTA count, checks its in-task points: under auto where
 * evictions are expected, tasks outlast the bound and the variant's measured cost per task is within 1.05x the
 * persistent form's (its first launches are the trial that measures it). */
int preempt_intask_wanted(const preempt_runtime *runtime, const preempt_kernel_on_device *on_device,
                          uint32_t block_threads, uint32_t ctas);
/* The in-task shape a kernel's launches run once chosen (forced by PREEMPT_INTASK_SHAPE, or both timed), or
 * PREEMPT_SHAPE_AUTO: not chosen yet, or the kernel has one shape. */
preempt_intask_shape preempt_intask_chosen_shape(const preempt_runtime *runtime,
                                                 const preempt_kernel_on_device *on_device);
/* Before a persistent launch's first wave, on its stream: decides, and writes the period and context ring.
 * `*shape_timed`: the launch should be timed for the choice of shape (record->intask_chunks says which it runs). */
int preempt_intask_prepare(preempt_runtime *runtime, preempt_device_state *device,
                           const preempt_kernel_on_device *on_device, preempt_launch_record *record, void *stream,
                           int *shape_timed);
/* Around evictions and resumptions, on the control stream: the eviction word. Return the GPU API's code. */
/* `every_sm`: the eviction leaves every SM's yield bit set (only those stop CTAs inside tasks). */
int preempt_intask_before_evict(const preempt_gpu_ops *gpu, preempt_device_state *device,
                                preempt_launch_record *record, int every_sm);
int preempt_intask_before_resume(const preempt_gpu_ops *gpu, preempt_device_state *device,
                                 preempt_launch_record *record);
/* Launches a grid of the launch: its in-task variant when it has one (a first
 * wave whose variant fails to launch runs the persistent form instead). */
int preempt_intask_launch(const preempt_gpu_ops *gpu, preempt_launch_record *record, preempt_dim3 grid, void *stream,
                          int first_wave);
/* What a relaunch's `relaunched` parameter carries beyond its kind: its epoch and PREEMPT_RELAUNCH_RESUMES. */
uint32_t preempt_intask_relaunch_flags(const preempt_launch_record *record);

/* Eviction and resumption of one launch, with the context locked. */
preempt_status preempt_evict_record(preempt_runtime *runtime, preempt_device_state *device,
                                    preempt_launch_record *record, const preempt_sm_mask *sms);
preempt_status preempt_resume_record(preempt_runtime *runtime, preempt_device_state *device,
                                     preempt_launch_record *record);
/* Resumes only the SMs in `sms` (NULL: all) of those the launch was evicted from. */
preempt_status preempt_resume_record_sms(preempt_runtime *runtime, preempt_device_state *device,
                                         preempt_launch_record *record, const preempt_sm_mask *sms);
/* Relaunches up to `ctas` more CTAs of a launch, on the resume stream once
 * it has started (after the control stream's writes when the record says
 * relaunch_after_clear). Context locked. */
preempt_status preempt_relaunch_more(preempt_runtime *runtime, preempt_device_state *device,
                                     preempt_launch_record *record, uint32_t ctas);
/* CTA quotas, context locked (quota_change.c): sets one (evicting and relaunching a
 * launch that had none), reads a launch's progress (and ends a finished shrink). */
preempt_status preempt_quota_record(preempt_runtime *runtime, preempt_device_state *device,
                                    preempt_launch_record *record, uint32_t quota);
preempt_status preempt_progress_record(preempt_runtime *runtime, preempt_device_state *device,
                                       preempt_launch_record *record, preempt_progress *progress);
/* The quota's words (quota.c): written (cta_quota and quota_next, one call), ordered after a raise's writes,
 * and what eviction.c writes around evictions and resumptions of quota launches. They return the GPU API's
 * code. */
int preempt_quota_write(const preempt_gpu_ops *gpu, preempt_device_state *device, preempt_launch_record *record,
                        uint32_t quota_now, uint32_t quota_next);
int preempt_quota_after_refresh(const preempt_gpu_ops *gpu, preempt_device_state *device,
                                preempt_launch_record *record);
int preempt_quota_end_shrink(const preempt_gpu_ops *gpu, preempt_device_state *device, preempt_launch_record *record);
int preempt_quota_before_evict(const preempt_gpu_ops *gpu, preempt_device_state *device,
                               preempt_launch_record *record);
int preempt_quota_before_resume(const preempt_gpu_ops *gpu, preempt_device_state *device,
                                preempt_launch_record *record);
/* A relaunch about to be enqueued on `resume_stream`: a raise's writes first (quota.c). */
int preempt_quota_before_relaunch(const preempt_gpu_ops *gpu, preempt_launch_record *record, void *resume_stream);
/* PREEMPT_TIME_EVICTIONS=1 (eviction_time.c): marks on the control stream where the eviction that made the launch's
 * mask full has written its words; nothing without the variable. Returns the GPU API's code. Context locked. */
int preempt_eviction_time_start(const preempt_gpu_ops *gpu, preempt_device_state *device,
                                preempt_launch_record *record);
/* PREEMPT_TIME_EVICTIONS=1 (eviction_time.c): times an eviction request's steps, of `series`. begin once the
 * request is known, context locked: `lock_asked_ns` is when the lock was asked for, the rest since the lock was
 * taken counts as `first_step`; mark after each step (a no-op unless a request is timed, so the eviction paths of
 * the stress thread and preemptd pay one test); end before the unlock, or drop a request that evicted nothing. */
void preempt_evict_steps_begin(preempt_runtime *runtime, int series, uint64_t lock_asked_ns, int first_step);
void preempt_evict_step_mark(preempt_runtime *runtime, int step);
void preempt_evict_steps_end(preempt_runtime *runtime);
void preempt_evict_steps_drop(preempt_runtime *runtime);
/* Distinct application streams, other than `except`, held by launches that
 * are evicted and not resumed (docs/preemption.md, "The hardware-queue trap"). */
uint32_t preempt_held_streams(const preempt_device_state *device, void *except);
/* Whether a launch may not be sent away and relaunched, and why (into `why`): the relaunch publisher did not
 * load; and when `holds_stream` (the launch's stream will wait on CTAs that are gone), modules load lazily, its
 * stream could not be ordered after it, or one more held stream risks the hardware-queue trap. 1 or 0; says
 * nothing. Context locked. */
int preempt_relaunch_obstacle(preempt_runtime *runtime, const preempt_device_state *device,
                              const preempt_launch_record *record, int holds_stream, char *why, size_t why_bytes);
/* The same, said (`what`: "eviction", "quota") and returned as UNSUPPORTED, or OK. Context locked. */
preempt_status preempt_refuse_relaunch(preempt_runtime *runtime, preempt_device_state *device,
                                      preempt_launch_record *record, const char *what, int holds_stream);
/* Whether CUDA loads modules lazily in this process (asked once): holding a stream is then refused. */
int preempt_lazy_loading(preempt_runtime *runtime);
/* Whether a relaunch on this device can complete (gpu.h's publisher). */
int preempt_device_can_relaunch(const preempt_runtime *runtime, const preempt_device_state *device);
/* Whether one more stream other than `stream` may be held on the device. */
int preempt_may_hold_stream(const preempt_runtime *runtime, const preempt_device_state *device, void *stream);

/* preemptd's client (daemon_client.c), context locked. */
/* Registers on first use; whether converted launches are held for the daemon now. */
int preempt_daemon_active(preempt_runtime *runtime);
/* Takes a stub for a launch that will be held, or returns -1: run it at once,
 * unscheduled (the device is beyond those registered, no stub is free, or one
 * more held stream would risk the hardware-queue trap; the last two said once). */
int preempt_daemon_hold(preempt_runtime *runtime, int device_index, preempt_device_state *device, void *stream,
                        preempt_dim3 block, uint32_t ctas_per_sm, uint32_t *epoch);
/* After the launch was recorded without its grid: fills the stub, which goes
 * READY once the launch's start event fires; or, `started` on a lease, after
 * its grid was launched: RUNNING at once. Returns -1 if the daemon went
 * away meanwhile: the caller runs the launch unscheduled. */
int preempt_daemon_publish(preempt_runtime *runtime, int stub, uint32_t epoch, int device_index, uint32_t slot,
                           preempt_launch_record *record, int started);
/* Whether preemptd decides this process's launches on the device: registered (at the first call, as
 * preempt_daemon_active) and without a lease there. On a lease (no other process has work on the GPU,
 * daemon_protocol.h) launches start at once: short ones as written, long ones published RUNNING, still evictable
 * (docs/daemon.md, "Leases"). */
int preempt_daemon_schedules(preempt_runtime *runtime, int device_index);
/* Whether a launch holding `except_stub` may start on the device's lease: the lease is held and no other published
 * launch of this process is unfinished there (the daemon would send this one away). */
int preempt_daemon_may_start(const preempt_runtime *runtime, int device_index, int except_stub);
/* The launch that took `stub` failed before it was held: the stub stays this process's for the next one. */
void preempt_daemon_unhold(preempt_runtime *runtime, int stub, uint32_t epoch);
/* Stops the agent thread (the lock is released while it is joined), runs
 * every launch the daemon holds, and disconnects. Returns the context locked. */
preempt_runtime *preempt_daemon_stop(preempt_runtime *runtime);

/* Launches as written (as_written.c), context locked. A converted kernel's
 * launch inside a stream capture runs its unconverted copy, which the graph
 * captures as the program wrote it; the API's code, an error said. */
int preempt_capture_launch(preempt_runtime *runtime, preempt_kernel_state *kernel, int device, preempt_dim3 grid,
                           preempt_dim3 block, void **args, size_t shared_bytes, void *stream);
/* A launch not predicted long (PREEMPT_LONG_US) runs the kernel as written
 * through the program's own call (the stub's kernel since ABI 9), timed now
 * and then: returns the API's code. -1: the caller runs the converted form
 * (the launch is long, runs under preemptd, or PREEMPT_LONG_US=0). */
/* Whether nothing in this process can evict (as_written.c): every launch then runs as written. */
int preempt_cannot_evict(preempt_runtime *runtime);
/* Context locked; returns with it unlocked. */
int preempt_unevictable_launch(preempt_runtime *runtime, preempt_kernel_state *kernel, int device, preempt_dim3 grid,
                               preempt_dim3 block, void **args, size_t shared_bytes, void *stream);
int preempt_short_launch(preempt_runtime *runtime, preempt_kernel_state *kernel, int device, uint32_t sm_count,
                         preempt_dim3 grid, preempt_dim3 block, void **args, size_t shared_bytes, void *stream);
/* Whether `stream` is capturing into a graph (0 where the API cannot tell). */
int preempt_stream_capturing(const preempt_gpu_ops *gpu, void *stream);

/* Starts the random eviction thread if PREEMPT_STRESS=1 (once). */
void preempt_stress_start_if_requested(preempt_runtime *runtime);
void preempt_stress_stop(preempt_runtime *runtime);

/* launch.c: converted launches enqueued so far, atomically; read by the synchronous-copy wrappers. */
extern uint64_t preempt_tracked_launches __attribute__((visibility("hidden")));
/* sync_copies_cuda.c: waits for the device, in a call that leaves other threads' CUDA calls free, when converted
 * launches were enqueued since it last did; before any call that waits for the device while holding the driver.
 * A cudaError_t (int here: this header is CUDA-free). */
int preempt_settle_device(void) __attribute__((visibility("hidden")));

#endif
