/* control_block.h: the per-launch control block in device memory and the per-CTA task context.
 * Shared by runtime-dev (device helpers) and runtime-host; FLEP §4.1, EffiSha §5.2 (kernel-side state). */
#ifndef PREEMPT_CONTROL_BLOCK_H
#define PREEMPT_CONTROL_BLOCK_H

/* Bumped whenever the layout below or the kernel calling convention changes;
 * the pass writes it into each converted kernel's marker and the runtime
 * refuses to launch a kernel built for another version. */
#define PREEMPT_KERNEL_ABI_VERSION 10u /* 10: the warp-rows global (PREEMPT_WARP_ROWS_PREFIX), which a runtime \
                                          before it would not read */

/* A converted kernel takes these parameters after its own, in this order:
 * the control block, the task count, the original grid (x, y, z), the launch's
 * generation, the check interval: the most tasks a CTA takes per fetch, with
 * one yield check per fetch (FLEP §4.1's amortizing factor L), and whether
 * this grid is a relaunch (1) or the launch's first wave (0). Passing the
 * launch's values by value leaves nothing to copy before a launch or a
 * relaunch. */
#define PREEMPT_KERNEL_EXTRA_PARAMS 8

/* Control-block words the runtime may address (byte offsets, for stream
 * memory operations). */
#define PREEMPT_MAX_SM_IDS 256
#define PREEMPT_YIELD_MASK_WORDS (PREEMPT_MAX_SM_IDS / 32)

/* Lives in device memory, one per launch in flight, reused by later launches.
 * The 64-bit words carry the launch's generation in their upper half: the
 * first CTA of a new launch to find an older generation there installs its
 * own, so no reset is needed between launches, and relaunched CTAs of an
 * evicted launch (same generation) continue where the others stopped.
 * Launches alternate between two lanes of words by their generation's parity:
 * the CTA that completes a launch presets the other lane for the next
 * generation, which no CTA of this launch touches and every CTA of the
 * previous one has left (the runtime reuses a block only once its launch is
 * over), so the next launch's CTAs find their generation there and skip the
 * installation, whose contention cost 2.7-4 us per launch on the H100
 * (bench/preemption/overhead_parts.cu). */
#define PREEMPT_CONTROL_LANES 2
/* On NVIDIA, a relaunch's CTAs count their tasks in relaunch_word, and the
 * runtime's publisher kernel, enqueued after the relaunch on the same stream,
 * moves that count into done_word once the relaunch has ended (and with it
 * every write of its tasks), publishing done_generation if it completes the
 * launch. So no converted kernel needs a fence: ptxas turns an atomic whose
 * result is unused into a reduction (RED) only when no fence follows it, and
 * ATOMs instead cost float-atomic kernels 40% on the H100
 * (docs/persistent-threads.md). The first wave needs none either: the
 * application's stream waits for done_generation after the first wave's
 * kernel has ended. On AMD, relaunched CTAs fence and count in done_word. */
typedef struct preempt_control_block {
  unsigned long long task_word[PREEMPT_CONTROL_LANES];     /* generation << 32 | next task id */
  unsigned long long done_word[PREEMPT_CONTROL_LANES];     /* generation << 32 | tasks finished */
  unsigned long long relaunch_word[PREEMPT_CONTROL_LANES]; /* generation << 32 | tasks a relaunch finished */
  unsigned int done_generation;  /* = generation once every task is finished */
  /* Drain form (below): nonzero from an eviction of the launch until its
   * relaunches have finished every block; the application's stream waits
   * for 0 after a drained launch. Cleared by the relaunch publisher. */
  unsigned int drain_hold;
  /* Drain form: one bit per block (task id), set by a block that left at the
   * gate without running; 0 bits elsewhere. Allocated per control block by
   * the runtime, all zero when a drained launch takes it. */
  unsigned int *undone;
  unsigned int yield_mask[PREEMPT_YIELD_MASK_WORDS]; /* bit s: CTAs on SM s leave at their next check */
  /* Per-SM CTA quotas (FlexSched §4.2's BSUs, without relying on the
   * hardware's round-robin placement): read only by grids launched with
   * PREEMPT_LAUNCH_QUOTA in their `relaunched` parameter. Each such CTA
   * counts itself in its SM's sm_resident as it starts and leaves at once if
   * that makes more than cta_quota; in a quota launch a yield bit means
   * "leave if your SM holds more than cta_quota", so a quota of 0 and every
   * bit evict it all. A CTA that counted itself takes itself off as it
   * leaves, so the counts are all zero between launches. */
  unsigned int cta_quota;
  /* The quota a raise asks for: the raise first sends every CTA away
   * (cta_quota 0), and once they have gone the runtime copies this word into
   * cta_quota on the launch's relaunch stream, just before the new grid, so
   * that a later change written meanwhile is the one that lands. */
  unsigned int quota_next;
  unsigned int sm_resident[PREEMPT_MAX_SM_IDS];
  /* In-task preemption (docs/intask.md, issue 8). Nonzero: every CTA leaves
   * at its next in-task yield point, saving its context there. Written with
   * a full eviction, cleared before the relaunch that resumes it. */
  unsigned int intask_evict;
  /* The time the runtime wants between in-task checks; 0: in-task points
   * never check (tasks are short, or PREEMPT_INTASK=off). */
  unsigned int intask_period_ns;
  /* Saved contexts form a ring of intask_capacity records of
   * intask_record_bytes each: [intask_head, intask_tail) are waiting to be
   * resumed (indices modulo 2^32; record = index % capacity). A yielding CTA
   * takes tail, a resuming CTA takes head. Both are equal whenever no launch
   * of this block is in flight, so nothing is reset between launches. */
  unsigned int intask_head, intask_tail;
  unsigned int intask_capacity, intask_record_bytes;
  unsigned char *intask_contexts;
  /* How a grid that resumes contexts shares them out: each CTA takes a
   * ticket (fetch-add), the CTA with ticket 0 publishes the waiting range
   * ((count + 1) << 32 | intask_head, one 64-bit store), and ticket t resumes
   * record head + t if t < count. A compare-and-swap on intask_head, one CTA
   * after another, kept the last of ~1000 CTAs from its first check for
   * about 1.5 ms (docs/intask.md). The runtime zeroes both words before the
   * relaunch that follows an in-task eviction. */
  unsigned int intask_claim_tickets, intask_claim_pad;
  unsigned long long intask_claim_range;
} preempt_control_block;

/* One saved context: this header, then the CTA's uniform values and shared
 * memory (cta_bytes of the kernel's descriptor, rounded up to 16), then the
 * threads' values, value by value (value j of thread t at
 * offset_j * threads + t * bytes_j, so that a warp's stores coalesce). */
typedef struct preempt_intask_header {
  /* (epoch of the grid that saved it << 32) | (ring index + 1), written last:
   * a resuming CTA takes a record only if the ring index matches and the
   * epoch is not its own grid's (control_block.h, PREEMPT_RELAUNCH_RESUMES). */
  unsigned long long tag;
  unsigned int task, batch_end; /* the task it stopped in and the rest of its batch */
  unsigned int point;           /* 1-based yield point */
  unsigned int extra_first, extra_count; /* a batch it had fetched but not begun */
  unsigned int pad[9];
} preempt_intask_header;
#define PREEMPT_INTASK_HEADER_BYTES 64u
#define PREEMPT_INTASK_MAX_POINTS 16u

/* Kernels with in-task points get them in a variant of their own, a kernel
 * of this prefix and the kernel's name with the persistent form's parameters:
 * the runtime launches it only where in-task checks pay (long tasks), so the
 * persistent form stays as it was everywhere else. */
#define PREEMPT_INTASK_KERNEL_PREFIX "__preempt_intaskform_"
/* The pass's description of the variant's in-task points, a device global of
 * this prefix and the kernel's name: the runtime sizes the context ring from
 * it. Absent for kernels without in-task points. */
#define PREEMPT_INTASK_DESC_PREFIX "__preempt_points_"
/* Where constant chunks could apply (-preempt-intask-chunks-variant), a second
 * variant of this prefix, in constant chunks, with its own descriptor: the
 * runtime times both shapes and runs the faster (PREEMPT_INTASK_SHAPE,
 * docs/intask.md "Two shapes"). */
#define PREEMPT_INTASK_CHUNKS_KERNEL_PREFIX "__preempt_intaskchunks_"
#define PREEMPT_INTASK_CHUNKS_DESC_PREFIX "__preempt_chunkpoints_"
typedef struct preempt_intask_desc {
  unsigned int abi_version;
  unsigned int point_count;
  unsigned int thread_bytes; /* the largest per-thread area of any point */
  unsigned int cta_bytes;    /* the largest CTA area (uniform values and shared memory) of any point */
} preempt_intask_desc;

/* Or'ed into a grid's `relaunched` parameter: the grid keeps its SMs' CTA
 * counts within the control block's cta_quota (above). */
#define PREEMPT_LAUNCH_QUOTA 4u
#define PREEMPT_RELAUNCH_KIND_MASK 3u
/* Or'ed into a relaunch's `relaunched` parameter when every earlier grid of
 * the launch has ended before it starts: only such a grid resumes saved
 * in-task contexts, so it never reads one still being written, and needs no
 * fence to see it. Bits 8-31 carry the grid's epoch (0 for the first wave,
 * the relaunch's number after), which it tags the contexts it saves with. */
#define PREEMPT_RELAUNCH_RESUMES 8u
#define PREEMPT_RELAUNCH_EPOCH_SHIFT 8u
/* Or'ed into a grid's `relaunched` parameter (first wave and relaunches) for
 * prompt yield checks: thread 0 reads its SM's yield word as each batch is
 * due and fetches the next batch only then, instead of reading one task ahead
 * and fetching as the last task of a batch starts. An eviction then waits for
 * the tasks in flight only, where it waited for up to two more, at the cost of
 * the read's and the fetch's round trips per batch (the runtime asks for it
 * only where tasks are long: docs/preemption.md, "Prompt checks"). Kernels
 * built before it ignore the bit. */
#define PREEMPT_LAUNCH_PROMPT 16u

/* A converted kernel that is safe only in blocks that are one row of threads
 * or whose rows are whole warps carries a device global (uint32, 1) of this
 * prefix and its name (passes/KernelSafety.cpp, the warp-sync rule: it reads
 * threadIdx.x alone and splits a CTA at warp boundaries of threadIdx.x). The
 * runtime runs a launch of any other block shape as written. */
#define PREEMPT_WARP_ROWS_PREFIX "__preempt_warprows_"

/* Converted kernels carry a device global with this prefix and the kernel's
 * symbol name; its presence is how the runtime tells converted kernels apart. */
#define PREEMPT_KERNEL_MARKER_PREFIX "__preempt_kernel_"

/* Beside each converted kernel the pass keeps the kernel as written, as a
 * kernel of this prefix and the kernel's symbol name, with the original
 * parameters and no marker. The runtime launches it instead of the
 * persistent form when the whole grid fits in one wave of persistent CTAs:
 * each CTA would run exactly one task, with no task boundary at which to
 * yield, so conversion would buy nothing and cost a control block, events
 * and a stream wait (docs/persistent-threads.md, "One-wave launches"). A
 * kernel without one (built by an older plugin) stays persistent. */
#define PREEMPT_ORIGINAL_KERNEL_PREFIX "__preempt_original_"

/* Since ABI 9, on NVIDIA, the two swap names once the kernel is converted:
 * the kernel's own symbol name is the kernel as written (what the program
 * registered, so that every launch preempt does not route, such as a graph's
 * kernel node, a cudaLaunchKernelEx or a launch through a function pointer,
 * runs it correctly, only not preemptibly), and the persistent form is the
 * kernel of this prefix and the name. The copy's prefix above only names it
 * inside the pass. */
#define PREEMPT_PERSISTENT_KERNEL_PREFIX "__preempt_persistent_"

/* Beside each converted NVIDIA kernel the pass also keeps a drain form, a
 * kernel of this prefix and the kernel's symbol name, taking the kernel's own
 * parameters and the control block. It runs the application's own grid on
 * the hardware's block scheduler; each block first reads its SM's yield bit
 * and, if set, sets its bit in `undone` and leaves without running
 * (FLEP §4.1's yield flag, checked at block entry: docs/preemption.md, "Drain
 * form"). A drained launch's relaunches are the persistent form with
 * `relaunched` = PREEMPT_RELAUNCH_UNDONE: it walks every task id and runs only
 * those whose bit is set, counting the others as done. */
#define PREEMPT_DRAIN_KERNEL_PREFIX "__preempt_drain_"
#define PREEMPT_RELAUNCH_UNDONE 2u

#define PREEMPT_NO_SM 0xffffffffu

/* Task id a CTA gets instead of a task when it must yield. */
#define PREEMPT_NO_TASK 0xffffffffu

/* One task as thread 0 publishes it to its CTA. */
typedef struct preempt_task_slot {
  unsigned int block_x, block_y, block_z;
  unsigned int has_task;
  unsigned int task;      /* batched loop: the batch is [task, batch_end) */
  unsigned int batch_end;
  unsigned int resume_point;  /* nonzero: the batch's first task resumes at this in-task point */
  unsigned int resume_record; /* ... from this record of the context ring */
} preempt_task_slot;

/* Lives in shared memory, one per CTA. Tasks alternate between two slots:
 * when tasks are separated by a single barrier, thread 0 fills the next
 * task's slot while siblings may still be reading the current one. */
typedef struct preempt_task_context {
  unsigned int grid_x, grid_y, grid_z;
  unsigned int task_count;
  unsigned int current_slot; /* for callees, which read the context mid-task */
  /* Thread 0's own bookkeeping, kept here because helpers hold no state:
   * the batch of task ids it holds [batch_next, batch_end), the largest batch
   * it may take (the check interval), the tasks it finished, and the last
   * task it decomposed (the next one in a batch is one step further). */
  unsigned int generation, check_interval, batch_next, batch_end, batch_taken, tasks_run, last_task;
  unsigned int relaunched; /* this grid is a relaunch (the kernel's last parameter, without PREEMPT_LAUNCH_QUOTA) */
  unsigned int prompt;     /* PREEMPT_LAUNCH_PROMPT: yield words read as each batch is due */
  /* A quota grid's CTA: the SM whose sm_resident counts it, until it takes
   * itself off (PREEMPT_NO_SM elsewhere). */
  unsigned int quota_sm;
  /* A drained launch's relaunch (PREEMPT_RELAUNCH_UNDONE): its blocks'
   * bitmap, and the task ids thread 0 passed because their block had run. */
  unsigned int tasks_skipped;
  const unsigned int *undone;
  /* In-task preemption: this grid's epoch and whether it resumes contexts
   * (PREEMPT_RELAUNCH_RESUMES); a context claimed before the first batch;
   * a batch a resumed context had fetched, run after the context's own;
   * thread 0's last check time and the ring record it saves into; the
   * iterations between checks, per point (changed only between the two
   * barriers of a check, so every thread reads the same value). */
  unsigned int epoch, resumes, claimed_record, pending_first, pending_count;
  unsigned int save_record;
  unsigned int last_check_ns; /* the global timer's low half */
  unsigned int intask_period_ns;
  unsigned int check_iterations[PREEMPT_INTASK_MAX_POINTS];
#if !defined(__AMDGPU__) /* no in-task points there: its LDS stays as it was */
  /* Points whose checks have no barrier of their own: the answers thread 0
   * leaves for the next check, two per point (intask_period.h). */
  unsigned int check_answers[PREEMPT_INTASK_MAX_POINTS][2];
#endif
  preempt_task_slot slots[2];
} preempt_task_context;

#endif
