/* control_pool.h: per-launch control blocks in device memory and what the host keeps about each launch.
 * FLEP §4.1 / EffiSha §5.2: each launch has its own task counter and yield words; a block is reused after. */
#ifndef PREEMPT_CONTROL_POOL_H
#define PREEMPT_CONTROL_POOL_H

#include <stddef.h>
#include <stdint.h>

#include "gpu.h"
#include "preempt.h" /* preempt_launch_state */
#include "preempt/control_block.h"

/* Everything needed to relaunch CTAs of a launch and to know where it is. */
/* A context ring for in-task preemption (intask.c): device memory, its size,
 * and the layout (records, bytes each) its bytes were zeroed for. */
typedef struct preempt_intask_ring {
  void *contexts;
  size_t bytes;
  uint32_t capacity, record_bytes;
} preempt_intask_ring;

typedef struct preempt_launch_record {
  uint32_t generation;   /* of the launch now using the block; 0 before first use */
  int in_flight;         /* launched and not yet seen finished */
  int launching;         /* being enqueued, with the context unlocked */
  int unordered;         /* the stream wait failed: evicting would break stream order */
  const preempt_kernel_desc *desc;
  void *stream;          /* the application's */
  preempt_dim3 block;
  size_t shared_bytes;
  uint32_t ctas_per_sm, full_ctas;
  /* The launch parameters, in the kernel's order: its own values (copied:
   * the caller's pointers die with the call), then control_block.h's. */
  unsigned char *values;
  size_t values_capacity;
  void **params;
  size_t params_capacity;
  void *control;
  uint32_t task_count, grid[3], check_interval;
  uint32_t relaunched; /* the kernel's last parameter: 0 for the first wave, 1 for relaunches */
  uint32_t yield_mask[PREEMPT_YIELD_MASK_WORDS]; /* as last written */
  int resumed;           /* CTAs were relaunched on the resume stream */
  /* Resumed, relaunch not enqueued yet: it waits until the launch has
   * started, so that the resume stream never holds a relaunch that cannot
   * run (one waiting on another launch's relaunch would deadlock). */
  int relaunch_pending;
  uint32_t relaunch_ctas;
  void *wave_done_event; /* after the first wave, on the application's stream */
  /* Timed, around the first wave of a launch that samples the task length
   * only: a timed event record costs the stream about 1.4 us on the H100
   * (an untimed one nothing measurable; bench/preemption/overhead_parts.cu). */
  void *sample_start_event, *sample_end_event;
  void *done_event;      /* after the wait for done_generation: every task finished */
  void *resume_event;    /* after the last relaunch and its publisher */
  /* Right after the last relaunch's grid, before its publisher: when the
   * relaunch's CTAs are all gone. EVICTED waits for this one, not for the
   * publisher kernel behind it, whose launch would add to every eviction's
   * latency as the host sees it. */
  void *relaunch_done_event;
  /* PREEMPT_TIME_EVICTIONS=1 only (eviction_time.c; else NULL): timed, on the
   * control stream right after the words of the eviction that made the mask
   * full; wave_done_event and relaunch_done_event are then timed too. */
  void *evict_request_event;
  int evict_request_recorded; /* since the launch's last resume */
  /* Before the first wave, on the application's stream: the work queued
   * ahead of the launch is done. Relaunches wait for it (they run on another
   * stream). */
  void *ready_event;
  /* A held launch's task-length sample (launch.c): its first relaunch is its
   * whole grid, timed from relaunch_start_event to resume_event, valid while
   * it is its only relaunch and no eviction came in between. */
  int time_first_relaunch;
  uint32_t relaunches;
  void *relaunch_start_event;
  /* Its stream's priority at launch (lower numbers first; 0 where the API has none), and, evicted for a
   * launch on a higher-priority stream (priority.c), the event after that launch: the relaunch thread resumes
   * the launch once it has completed (eviction.c, preempt_resume_after): resume_after 1 while that launch is
   * being enqueued, 2 once the event is recorded. The event is made on first use. */
  int stream_priority;
  int resume_after;
  void *resume_after_event;
  /* Scheduled by preemptd (daemon_client.c): its stub + 1, else 0. */
  uint32_t daemon_stub;
  /* The daemon keeps it off some or all SMs (held before its first run, or
   * evicted by the daemon): only the daemon's commands resume it. */
  int daemon_evicted;
  /* Held for preemptd and never started: no yield word was written on the
   * device (they are all zero there), whatever yield_mask says. Its first
   * run takes every SM: where its CTAs land is the hardware's choice. */
  int held_unstarted;
  /* Held in its own stream behind a wait on its go word (the pool's go_words): its grid is enqueued there, and
   * its first run is a store of its generation to that word, not a relaunch on another stream. */
  int go_held;
  /* The pending relaunch must wait for yield-word clears on the control stream. */
  int relaunch_after_clear;
  int prompt;  /* prompt yield checks (PREEMPT_LAUNCH_PROMPT): its first wave's and every relaunch's */
  /* The first wave ran the drain form (control_block.h): the application's
   * grid, gated at block entry; the stream waits for drain_hold = 0. */
  int drained;
  int drain_held; /* an eviction wrote drain_hold = 1 (once per launch) */
  /* The control block's bitmap of undone blocks (device memory, `undone`
   * there too), its size, and whether an evicted drained launch may have
   * left bits set: cleared on the application's stream before the block's
   * next drained launch. */
  void *undone;
  size_t undone_bytes;
  int undone_dirty;
  int undone_moved; /* a new bitmap whose address the control block does not hold yet */
  /* CTAs per SM its grids may keep (quota.c; control_block.h's cta_quota):
   * 0 for a launch that never had a quota. Its relaunches carry
   * PREEMPT_LAUNCH_QUOTA. */
  uint32_t cta_quota;
  /* Every SM's yield bit is set on the device (not in yield_mask, which
   * holds evictions only) so that CTAs above a lowered quota leave; cleared
   * once every SM is within the quota. */
  int quota_shrinking;
  /* Put under a quota while its first wave ran: the shrink's bits stay until that wave has ended. */
  int quota_first_wave;
  /* A raised quota (quota.c): every CTA was sent away, and the next relaunch, behind the grid they leave on its
   * stream, first puts quota_next into cta_quota and clears the bits (pending: not enqueued yet). Then
   * quota_refresh_event marks where those writes land; changes made before it must wait for it. */
  int quota_refresh;
  void *quota_refresh_event;
  /* In-task preemption (intask.c): this launch's in-task points check
   * (enabled); an eviction asked its CTAs to save contexts, so every later
   * relaunch must resume them (evicted); the device's intask_evict is 1
   * (evict_set). */
  int intask_enabled, intask_evicted, intask_evict_set;
  void *intask_function; /* the kernel's in-task variant, which this launch's grids run (enabled only) */
  void *persistent_function; /* the kernel's persistent form (control_block.h, PREEMPT_PERSISTENT_KERNEL_PREFIX) */
  int intask_chunks;     /* that variant is the one in constant chunks */
  int shape_sample;      /* timed for the choice between the two (intask.c) */
  /* The context ring this record holds (device memory), its size, and the
   * layout its bytes were zeroed for. Between launches a ring moves to the
   * record that needs one (intask.c): rings follow the launches in flight,
   * not the pool's slots. */
  preempt_intask_ring intask_ring;
  /* What the control block says: its ring, that ring's layout, and the
   * period, as last written there. */
  void *intask_control_contexts;
  uint32_t intask_capacity, intask_record_bytes, intask_period_ns;
} preempt_launch_record;

typedef struct preempt_control_pool {
  preempt_control_block *device_blocks; /* capacity blocks in device memory, zeroed once */
  preempt_launch_record *records;
  uint32_t capacity;
  /* Slots handed out so far, a prefix of the capacity that doubles when all
   * of it is busy; their events exist, the others' not yet. A slot beyond it
   * has never held a launch: scans of launches stop here rather than read
   * all 1,024 records of 448 bytes each (the slow urgent launch this was
   * first blamed for had another cause: priority.c, in_the_way). */
  uint32_t in_use;
  uint32_t next_slot;
  int time_evictions; /* PREEMPT_TIME_EVICTIONS=1: records' eviction events are timed (control_pool.c) */
  /* Bitmaps and context rings outgrown by a larger launch, freed with the
   * pool: a free now may wait for the whole device, evicted launches' held
   * streams too. */
  void **retired_buffers;
  uint32_t retired_count, retired_capacity;
  /* One word per slot in pinned host memory (gpu.h host_words_alloc), made at the first launch preemptd holds: a
   * held launch's stream waits for its word to read the launch's generation (launch.c). */
  uint32_t *go_words;
  void *go_words_device;
  int go_words_status; /* 0 until asked; then 0 (made) or why not (the API's code, -1: it has none) */
} preempt_control_pool;

/* All return the GPU API's code (0 = success; -1: host out of memory). */
#define PREEMPT_POOL_FIRST_SLOTS 64u

int preempt_control_pool_init(preempt_control_pool *pool, const preempt_gpu_ops *gpu, uint32_t capacity,
                              int time_evictions);
void preempt_control_pool_destroy(preempt_control_pool *pool, const preempt_gpu_ops *gpu);

/* Whether a record's launch has finished: every task done and every CTA gone. */
int preempt_launch_finished(const preempt_launch_record *record, const preempt_gpu_ops *gpu);

/* Whether a record's launch is evicted and was not resumed: its block cannot
 * be reused until the application resumes it. */
int preempt_launch_suspended(const preempt_launch_record *record);

/* Every SM's bit set in a yield mask (PREEMPT_YIELD_MASK_WORDS words). */
int preempt_yield_mask_full(const uint32_t *words);
/* Where a launch is (preempt_query's answer for a record). Context locked. */
preempt_launch_state preempt_record_state(const preempt_gpu_ops *gpu, const preempt_launch_record *record);
/* Evicted from every SM and every CTA of it gone (whether or not its tasks are all done). */
int preempt_record_all_gone(const preempt_gpu_ops *gpu, const preempt_launch_record *record);

/* The pool's go words, made on first use: 0, the GPU API's code, or -1 where the API has no such memory. */
int preempt_control_pool_go_words(preempt_control_pool *pool, const preempt_gpu_ops *gpu);
/* The address a stream waits on for `record`'s go word, and the release of that wait (its generation stored). */
void *preempt_go_word_device(const preempt_control_pool *pool, const preempt_launch_record *record);
void preempt_go_word_release(preempt_control_pool *pool, const preempt_launch_record *record);

/* Whether a record is free for a new launch: not being launched, and its
 * last launch seen finished (not suspended); records the finish it sees. */
int preempt_launch_record_idle(preempt_launch_record *record, const preempt_gpu_ops *gpu);

/* Takes a block whose last launch has finished, waiting for the oldest one
 * still running when all are busy. Fails with `not_ready` when every block
 * belongs to an evicted launch that was never resumed. */
int preempt_control_pool_acquire(preempt_control_pool *pool, const preempt_gpu_ops *gpu, uint32_t *slot);

/* The drain form's bitmap of undone blocks (control_block.h), in two steps:
 * with the context locked, makes the record's bitmap hold `task_count` bits
 * (a new one, when it grows); then, unlocked, since enqueueing may block,
 * enqueues on the launch's stream what makes it all zero and points the
 * control block at it when the launch runs. Both return the API's code. */
int preempt_launch_record_grow_undone(preempt_control_pool *pool, const preempt_gpu_ops *gpu,
                                      preempt_launch_record *record, uint32_t task_count);
/* Replaces *buffer (device memory, *bytes long) by one of at least `needed`
 * bytes (doubling, from first_bytes), retiring the old one until the pool is
 * destroyed. Contents are not copied. */
int preempt_control_pool_grow_buffer(preempt_control_pool *pool, const preempt_gpu_ops *gpu, void **buffer,
                                     size_t *bytes, size_t needed, size_t first_bytes);
int preempt_launch_record_reset_undone(const preempt_gpu_ops *gpu, preempt_launch_record *record, void *stream);

/* Makes room for `param_count` parameters of the given sizes, plus the
 * control_block.h ones, in the slot's record, and points them at its copies. */
int preempt_launch_record_store_params(preempt_launch_record *record, uint32_t param_count, const size_t *sizes,
                                       void *const *args);

#endif
