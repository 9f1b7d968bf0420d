/* fake_gpu.h: what the fake GPU backend records, for runtime unit tests.
 * See fake_gpu.c; the runtime under test is runtime-host/ (FLEP §3-4 launch, eviction, resumption). */
#ifndef PREEMPT_FAKE_GPU_H
#define PREEMPT_FAKE_GPU_H

#include <pthread.h>

#include "gpu.h"
#include "preempt/control_block.h"

enum {
  FAKE_ERROR_INVALID_VALUE = 101,
  FAKE_ERROR_OUT_OF_MEMORY = 102,
  FAKE_ERROR_INVALID_CONFIGURATION = 103,
  FAKE_ERROR_NOT_SUPPORTED = 104,
  FAKE_ERROR_LAUNCH = 105,
  FAKE_ERROR_NOT_READY = 106,
};

typedef struct fake_launch {
  preempt_dim3 grid, block;
  size_t shared;
  void *stream;
  int persistent;                 /* had the extra parameters */
  int original;                   /* launch_function: a converted kernel's unconverted copy */
  int as_written;                 /* launch (the stub's own kernel, as written since ABI 9) */
  void *function;                 /* which one (original_kernel's handle) */
  const void *host_stub;          /* launch_function: the converted kernel it takes attributes from */
  void **args;                    /* the argument array as passed */
  long long first_param;          /* the kernel's first parameter, read as 8 bytes when it has one */
  preempt_control_block *control; /* the parameters after the kernel's own */
  unsigned int task_count, grid_param[3], generation, check_interval, relaunched;
} fake_launch;

typedef struct fake_gpu_state {
  uint32_t sm_count, ctas_per_sm, marker_abi;
  preempt_intask_desc intask_desc; /* what kernels' in-task descriptors hold (all zero: none) */
  uint32_t warp_rows; /* what kernels' PREEMPT_WARP_ROWS_PREFIX globals hold (0: none) */
  int device_count;        /* 0 reads as 1 */
  int fail_device_alloc;
  int events_pending;      /* event_query answers not_ready */
  int event_queries;       /* event_query calls */
  float elapsed_ms;        /* what timed event pairs measure */
  int event_clock;         /* nonzero: timed pairs measure the difference of their times (fake_event_set_time) */
  int expected_params;     /* the kernel's own parameter count when the launch is persistent, else -1 */
  int launches, event_records, timed_event_records, event_waits, marker_lookups, occupancy_queries, streams_created;
  int mask_writes, mask_write_calls, stream_waits, set_device_calls; /* mask words written, and in how many calls */
  int current_device_calls, stream_priority_calls; /* what a launch asks of the API */
  int stream_event_waits; /* stream_wait_event calls: a relaunch ordered after the control stream */
  int fail_publisher_load; /* the relaunch publisher does not load */
  int publishes;           /* relaunch publishers enqueued */
  int launches_at_publish; /* fake_gpu.launches when the last one was */
  void *last_publish_stream, *last_publish_control;
  uint32_t last_publish_generation, last_publish_task_count;
  int events_created;
  int nonzero_mask_words; /* yield-mask words written nonzero and not cleared since */
  void *last_wait_stream, *last_wait_word;
  uint32_t last_wait_value;
  fake_launch last;
  size_t zeroed_bytes, zeroed_async_bytes;
  int device_allocs; /* successful device_alloc calls */
  char last_marker_name[256];
  /* Unconverted copies (one-wave launches): whether kernels have one, what a
   * lookup answers instead (an error code, 0: the lookup works), launches of
   * copies that fail. */
  int has_original, original_lookup_error, fail_function_launch;
  int original_lookups, function_launches; /* function_launches count in `launches` too */
  int form_lookups, param_size_reads; /* every original_kernel lookup (any form), every kernel_param_sizes call */
  char last_original_name[256];
  /* Drain forms: whether kernels have one, and how often one was looked up. */
  int has_drain, drain_lookups;
  /* What kernel_footprint answers, and copy_to_host calls. */
  uint32_t registers_per_thread, static_shared_bytes;
  int copies_to_host, device_copies;
  /* In-task variants (control_block.h): a kernel whose descriptor has points has one, unless intask_variant_missing;
   * how often one was looked up. */
  int intask_variant_missing, intask_lookups;
  /* The twin in constant chunks: present where intask_chunks_desc has points; its occupancy (0: ctas_per_sm;
   * UINT32_MAX: 0, it cannot run). */
  preempt_intask_desc intask_chunks_desc;
  uint32_t intask_chunks_ctas_per_sm;
  /* What function_occupancy answers for the variant (0: ctas_per_sm), or its error; how often it was asked. */
  uint32_t intask_ctas_per_sm;
  int intask_occupancy_error, intask_occupancy_queries;
  char last_intask_name[256];
  void *last_zeroed_async; /* where the last device_zero_async began */
  /* The last stream writes, oldest first (write_count of them, the last FAKE_WRITE_LOG kept): which stream, the first
   * word written, its value. */
  struct {
    void *stream;
    uint32_t *word;
    uint32_t value;
    int queries; /* event_query calls made before it */
  } write_log[64];
  int write_count;
  /* Launches as written: the copy's occupancy (0: ctas_per_sm); stream capture: whether streams capture (an error
   * code instead: the query fails), and the calls that relax and restore the thread's capture mode. */
  uint32_t original_ctas_per_sm;
  int capturing, capture_query_error, capture_relaxes, capture_restores;
  /* One stream of another priority than 0 (lower numbers first), for priority.c. */
  void *priority_stream;
  int priority_value;
  int events_born_pending; /* events created from now on start pending (fake_event_set_pending ends them) */
  /* Stream writes from a thread other than the one that reset the fake (the application's) that had not relaxed its
   * capture mode: under CUDA's global capture mode each would be refused and invalidate an application's capture. */
  int unrelaxed_thread_writes;
  pthread_t application_thread;
  int lazy_loading; /* what module_loading_lazy answers */
  int persistent_missing; /* converted kernels have no persistent form (a broken build) */
  /* Pinned host words (gpu.h host_words_alloc): 0, the default, answers as HIP's missing op would (the runtime holds
   * launches by relaunch); nonzero: handed out, counted, and the last block kept. */
  int host_words, host_words_allocs;
  uint32_t *last_host_words;
} fake_gpu_state;
#define FAKE_WRITE_LOG 64

/* The handle original_kernel gives for a kernel's copy. */
extern int fake_original_function;
/* The handle original_kernel gives for a kernel's drain form. */
extern int fake_drain_function;
/* The handle original_kernel gives for a kernel's in-task variant. */
extern int fake_intask_function;
extern int fake_intask_chunks_function;
/* The handle original_kernel gives for a kernel's persistent form (absent: persistent_missing). */
extern int fake_persistent_function;

extern fake_gpu_state fake_gpu;

/* Shuts the runtime down (so the next launch starts afresh) and resets the fake to a 132-SM GPU that holds
 * 8 CTAs per SM, whose kernels carry a marker of `marker_abi` (0: not converted) and have no unconverted
 * copy (has_original = 0: as built by an older plugin, so every converted launch is persistent). */
void fake_gpu_reset(uint32_t marker_abi);
/* A kernel descriptor as the host pass emits it, for a stub address and a name. */
preempt_kernel_desc fake_kernel_desc(const void *stub, const char *name, uint32_t params);

/* The runtime's record of a launch in flight (runtime.h), for its events; NULL once its block was reused. */
struct preempt_launch_record *fake_launch_record(preempt_launch_id launch);

/* Each device's UUID: bytes 0xfa 0xce, the device number, then 13 bytes of 0x5a. */
void fake_device_uuid(int device, unsigned char uuid[16]);
/* One event's own state, on top of events_pending: a pending event answers
 * not_ready until it is set done again (the test plays the GPU's part). */
void fake_event_set_pending(void *event, int pending);
/* When the GPU reached an event, in microseconds, for fake_gpu.event_clock. */
void fake_event_set_time(void *event, double time_us);
/* The stream an event was last recorded on (NULL: never), and whether it was created timed. */
void *fake_event_stream(void *event);
int fake_event_timed(void *event);

#endif
