// task_loop.cu: device helpers of the persistent-thread task loop, built to bitcode and linked into kernels.
// FLEP §4.1 (persistent threads, yield check, %smid for spatial preemption), EffiSha §5-6 (task loop, states).
//
// Compiled twice without any GPU headers: as CUDA for nvptx64 and as HIP for
// amdgcn. The pass inlines every helper and strips their target attributes, so
// they adopt the kernel's own GPU architecture. Only thread 0 of a CTA talks to
// the control block; shared memory and barriers carry its answers to the rest.
#include "preempt/control_block.h"
#include "preempt/generation.h"
#include "preempt/intask_period.h"

#define PREEMPT_DEVICE extern "C" __attribute__((device)) __attribute__((always_inline))
#define PREEMPT_LOCAL static __attribute__((device)) __attribute__((always_inline)) inline

extern "C" __attribute__((shared)) preempt_task_context __preempt_task_ctx;
__attribute__((shared)) preempt_task_context __preempt_task_ctx;

PREEMPT_LOCAL bool is_first_thread(void) {
#if defined(__NVPTX__)
  return (__nvvm_read_ptx_sreg_tid_x() | __nvvm_read_ptx_sreg_tid_y() | __nvvm_read_ptx_sreg_tid_z()) == 0;
#else
  return (__builtin_amdgcn_workitem_id_x() | __builtin_amdgcn_workitem_id_y() |
          __builtin_amdgcn_workitem_id_z()) == 0;
#endif
}

PREEMPT_LOCAL void cta_barrier(void) {
#if defined(__NVPTX__)
  __nvvm_bar_sync(0);
#else
  // What HIP's __syncthreads does: order shared memory around the barrier.
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
  __builtin_amdgcn_s_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
#endif
}

// A device-wide fence, AMD only: NVIDIA kernels carry none (control_block.h;
// the runtime's publisher fences for them).
#if !defined(__NVPTX__)
PREEMPT_LOCAL void device_fence(void) { __builtin_amdgcn_fence(__ATOMIC_SEQ_CST, "agent"); }
#endif

// The SM (NVIDIA) or compute unit (AMD, gfx9 HW_ID: CU, SH, SE) this CTA runs on.
PREEMPT_LOCAL unsigned int sm_id(void) {
#if defined(__NVPTX__)
  return __nvvm_read_ptx_sreg_smid();
#else
  // s_getreg(HW_REG_HW_ID, offset 8, size 7): CU_ID[11:8], SH_ID[12], SE_ID[14:13].
  return __builtin_amdgcn_s_getreg((6 << 11) | (8 << 6) | 4);
#endif
}

#define TAG_MASK 0xffffffff00000000ull
#define TAG(generation) ((unsigned long long)(generation) << 32)
/* What a prefetch returns when the CTA must yield instead of taking a task. */
#define YIELD_FETCH 0xffffffffffffffffull

// The slow path of a fetch or count from a generation-tagged word
// (control_block.h): the word still carries an older launch's generation.
// Installs this generation with `amount` already added, unless a sibling CTA
// got there first, in which case adds again. Returns the low half before this
// CTA's amount. Launches of one control block never overlap (the runtime waits
// for the previous one), so any other tag is older.
PREEMPT_LOCAL unsigned int tagged_add_slow(unsigned long long *word, unsigned int generation, unsigned int amount) {
  for (;;) {
    unsigned long long seen = __scoped_atomic_load_n(word, __ATOMIC_RELAXED, __MEMORY_SCOPE_DEVICE);
    if ((seen & TAG_MASK) == TAG(generation)) {
      unsigned long long before = __scoped_atomic_fetch_add(word, (unsigned long long)amount, __ATOMIC_RELAXED,
                                                            __MEMORY_SCOPE_DEVICE);
      if ((before & TAG_MASK) == TAG(generation))
        return (unsigned int)before;
      continue;
    }
    if (__scoped_atomic_compare_exchange_n(word, &seen, TAG(generation) | amount, false, __ATOMIC_RELAXED,
                                           __ATOMIC_RELAXED, __MEMORY_SCOPE_DEVICE))
      return 0;
  }
}

// Installs this generation, with a count of 0, in a word that still carries
// an older one, unless a sibling got there first. Done early, by the CTAs
// that met the older generation in the task word as the launch started, it
// spares the completion count that slow path when every CTA adds to it at
// once at the end.
PREEMPT_LOCAL void preinstall_generation(unsigned long long *word, unsigned int generation) {
  unsigned long long seen = __scoped_atomic_load_n(word, __ATOMIC_RELAXED, __MEMORY_SCOPE_DEVICE);
  if ((seen & TAG_MASK) != TAG(generation))
    __scoped_atomic_compare_exchange_n(word, &seen, TAG(generation), false, __ATOMIC_RELAXED, __ATOMIC_RELAXED,
                                       __MEMORY_SCOPE_DEVICE);
}

// Adds `amount` and returns the low half before it (see tagged_add_slow).
PREEMPT_LOCAL unsigned int tagged_add(unsigned long long *word, unsigned int generation, unsigned int amount) {
  unsigned long long before =
      __scoped_atomic_fetch_add(word, (unsigned long long)amount, __ATOMIC_RELAXED, __MEMORY_SCOPE_DEVICE);
  if ((before & TAG_MASK) == TAG(generation))
    return (unsigned int)before;
  return tagged_add_slow(word, generation, amount);
}

// The yield-mask word that holds this SM's bit. Read and tested apart: the
// loop carries the raw word from the task that reads it to the one that
// tests it, so the load's round trip (long while the kernel saturates memory)
// overlaps a task instead of stalling thread 0's warp, and with it the
// CTA's next barrier (measured on the H100: 5-9 us per vector_add launch).
PREEMPT_LOCAL unsigned int yield_word(preempt_control_block *control) {
  unsigned int sm = sm_id() % PREEMPT_MAX_SM_IDS;
  return __scoped_atomic_load_n(&control->yield_mask[sm / 32], __ATOMIC_RELAXED, __MEMORY_SCOPE_DEVICE);
}

PREEMPT_LOCAL bool sm_yields(unsigned int word) { return (word >> (sm_id() % PREEMPT_MAX_SM_IDS % 32)) & 1u; }

// The lane of control-block words this launch uses (control_block.h).
PREEMPT_LOCAL unsigned int lane(void) { return __preempt_task_ctx.generation % PREEMPT_CONTROL_LANES; }

/* A prefetch result that is a task of the CTA's current batch, not an
 * atomic's raw word: tagged with a generation the runtime never uses. */
#define LOCAL_TAG TAG(0xfffffffeu)
/* A CTA's first "fetch" when it claimed a saved in-task context instead. */
#define RESUME_TAG TAG(0xfffffffdu)
/* A prefetch put off until its batch is due (fetch_when_due), with the
 * yield word that fetch tests in its low half. */
#define DEFER_TAG TAG(0xfffffffcu)
/* (Every tag's generation is at or above PREEMPT_GENERATION_RESERVED, which
 * no launch takes: generation.h.) */

// The launch's grid size in CTAs (x: the converted launch's grid is 1-D).
PREEMPT_LOCAL unsigned int grid_ctas(void) {
#if defined(__NVPTX__)
  return __nvvm_read_ptx_sreg_nctaid_x();
#else
  return __builtin_amdgcn_grid_size_x() / __builtin_amdgcn_workgroup_size_x();
#endif
}

// How many tasks the next fetch takes: up to the check interval, fewer as the
// tasks run out, so that no CTA is left with a long batch at the end
// (guided self-scheduling over the CTA's own view of the counter).
PREEMPT_LOCAL unsigned int batch_size(void) {
  unsigned int remaining = __preempt_task_ctx.task_count > __preempt_task_ctx.batch_end
                               ? __preempt_task_ctx.task_count - __preempt_task_ctx.batch_end
                               : 1;
  unsigned int guided = remaining / (2 * grid_ctas());
  if (guided < 1)
    guided = 1;
  return guided < __preempt_task_ctx.check_interval ? guided : __preempt_task_ctx.check_interval;
}

// Thread 0 of a quota grid's CTA, as it starts: counts the CTA on its SM
// and says whether the SM already held its quota, in which case the CTA took
// itself off again and must leave before any task (control_block.h). The
// hardware places CTAs where it likes; those in excess just go.
PREEMPT_LOCAL bool quota_admits(preempt_control_block *control) {
  unsigned int sm = sm_id() % PREEMPT_MAX_SM_IDS;
  unsigned int before =
      __scoped_atomic_fetch_add(&control->sm_resident[sm], 1u, __ATOMIC_RELAXED, __MEMORY_SCOPE_DEVICE);
  unsigned int quota = __scoped_atomic_load_n(&control->cta_quota, __ATOMIC_RELAXED, __MEMORY_SCOPE_DEVICE);
  if (before < quota) {
    __preempt_task_ctx.quota_sm = sm;
    return true;
  }
  __scoped_atomic_fetch_sub(&control->sm_resident[sm], 1u, __ATOMIC_RELAXED, __MEMORY_SCOPE_DEVICE);
  return false;
}

// Thread 0, when its SM's yield bit is set: whether this CTA leaves. Outside
// quota grids, always. In one, only while the SM holds more CTAs than its
// quota: exactly the excess leaves, each taking itself off the count as it
// decides, so lowering a quota moves no CTA that may stay (FlexSched §4.2:
// only the BSUs given up are evicted).
PREEMPT_LOCAL bool quota_releases(preempt_control_block *control) {
  unsigned int sm = __preempt_task_ctx.quota_sm;
  if (sm == PREEMPT_NO_SM)
    return true;
  unsigned int quota = __scoped_atomic_load_n(&control->cta_quota, __ATOMIC_RELAXED, __MEMORY_SCOPE_DEVICE);
  unsigned int resident = __scoped_atomic_load_n(&control->sm_resident[sm], __ATOMIC_RELAXED, __MEMORY_SCOPE_DEVICE);
  while (resident > quota) {
    if (__scoped_atomic_compare_exchange_n(&control->sm_resident[sm], &resident, resident - 1, false,
                                           __ATOMIC_RELAXED, __ATOMIC_RELAXED, __MEMORY_SCOPE_DEVICE)) {
      __preempt_task_ctx.quota_sm = PREEMPT_NO_SM;
      return true;
    }
  }
  return false;
}

// Thread 0 only: the fetch of a new batch, issued without waiting for it:
// the raw word comes back to __preempt_task_begin or __preempt_batch_begin,
// which resolves it (a stale generation included), so the atomic's round
// trip overlaps the current task. A yield is honoured only between batches:
// a batch, once taken, is always run.
PREEMPT_LOCAL unsigned long long fetch_batch(preempt_control_block *control, unsigned int yield_seen) {
  if (sm_yields(yield_seen) && quota_releases(control))
    return YIELD_FETCH;
  __preempt_task_ctx.batch_taken = batch_size();
  return __scoped_atomic_fetch_add(&control->task_word[lane()], (unsigned long long)__preempt_task_ctx.batch_taken,
                                   __ATOMIC_RELAXED, __MEMORY_SCOPE_DEVICE);
}

// Thread 0 only, about to prefetch its next batch as the current task
// starts: whether to fetch it only when it is due, at the next task's begin.
// In a one-wave launch (no more tasks than CTAs) a prefetch takes a task
// that a CTA still being launched would have started at once, so the first
// CTAs to start took two tasks each and the last ones none: prefetching, the
// persistent kernel of bench/intask (1056 tasks and CTAs) took 1.06x (up to
// 1.12x) the time it takes with the fetch put off, on the H100
// (docs/persistent-threads.md). Put off in the last wave of longer launches
// too, the fetch made the solver's in-task variant 1.05x slower for no gain
// measured: there every CTA has started before the tasks run out.
// Prompt checks (PREEMPT_LAUNCH_PROMPT) put every fetch off until it is due,
// and publish_task reads the yield word then.
PREEMPT_LOCAL bool fetch_when_due(void) {
  return __preempt_task_ctx.prompt || __preempt_task_ctx.task_count <= grid_ctas();
}

// Thread 0 only: the fetch of the next batch as the current task starts, or
// the yield word read now under DEFER_TAG (publish_task fetches with it).
PREEMPT_LOCAL unsigned long long prefetch_batch(preempt_control_block *control, unsigned int yield_seen) {
  return fetch_when_due() ? DEFER_TAG | yield_seen : fetch_batch(control, yield_seen);
}

// Thread 0 only: the next task id of the CTA's batch, or else the fetch of a
// new batch (`prefetch`, as a task starts: put off in one-wave launches,
// prefetch_batch).
PREEMPT_LOCAL unsigned long long issue_fetch(preempt_control_block *control, unsigned int yield_seen, bool prefetch) {
  if (__preempt_task_ctx.batch_next < __preempt_task_ctx.batch_end)
    return LOCAL_TAG | __preempt_task_ctx.batch_next++;
  // A batch a resumed context had taken: run whatever the yield mask says,
  // since nobody else will (a batch, once taken, is always run).
  if (__preempt_task_ctx.pending_count) {
    __preempt_task_ctx.batch_taken = __preempt_task_ctx.pending_count;
    __preempt_task_ctx.pending_count = 0;
    return TAG(__preempt_task_ctx.generation) | __preempt_task_ctx.pending_first;
  }
  return prefetch ? prefetch_batch(control, yield_seen) : fetch_batch(control, yield_seen);
}

// The ring record `index` of the control block's saved in-task contexts.
PREEMPT_LOCAL preempt_intask_header *intask_record(preempt_control_block *control, unsigned int index) {
  unsigned int capacity = __scoped_atomic_load_n(&control->intask_capacity, __ATOMIC_RELAXED, __MEMORY_SCOPE_DEVICE);
  unsigned int bytes = __scoped_atomic_load_n(&control->intask_record_bytes, __ATOMIC_RELAXED, __MEMORY_SCOPE_DEVICE);
  unsigned char *contexts = control->intask_contexts;
  return (preempt_intask_header *)(contexts + (unsigned long long)(index % capacity) * bytes);
}

// Thread 0 of a grid that resumes contexts (PREEMPT_RELAUNCH_RESUMES), before
// its first batch: takes a saved context, if one waits for its ticket. Every
// grid that saved one has ended (the runtime starts such a grid only then), so
// its record is whole and visible without a fence; records of this grid's own
// epoch come after the range ticket 0 published and are never taken. Tickets
// (one fetch-add each) instead of a compare-and-swap loop on intask_head:
// that served the CTAs one round trip after another, and an eviction asked
// for meanwhile waited for the last of them (control_block.h).
PREEMPT_LOCAL bool claim_context(preempt_control_block *control) {
  unsigned int ticket = __scoped_atomic_fetch_add(&control->intask_claim_tickets, 1u, __ATOMIC_RELAXED,
                                                  __MEMORY_SCOPE_DEVICE);
  unsigned long long range;
  if (ticket == 0) {
    unsigned int head = __scoped_atomic_load_n(&control->intask_head, __ATOMIC_RELAXED, __MEMORY_SCOPE_DEVICE);
    unsigned int tail = __scoped_atomic_load_n(&control->intask_tail, __ATOMIC_RELAXED, __MEMORY_SCOPE_DEVICE);
    range = ((unsigned long long)(tail - head + 1u) << 32) | head;
    __scoped_atomic_store_n(&control->intask_claim_range, range, __ATOMIC_RELAXED, __MEMORY_SCOPE_DEVICE);
  } else {
    // One word, so the range comes whole; ticket 0's CTA is running.
    while ((range = __scoped_atomic_load_n(&control->intask_claim_range, __ATOMIC_RELAXED, __MEMORY_SCOPE_DEVICE)) >>
               32 ==
           0)
      ;
  }
  unsigned int waiting = (unsigned int)(range >> 32) - 1u;
  if (ticket >= waiting)
    return false;
  unsigned int index = (unsigned int)range + ticket;
  preempt_intask_header *record = intask_record(control, index);
  unsigned long long tag = __scoped_atomic_load_n(&record->tag, __ATOMIC_RELAXED, __MEMORY_SCOPE_DEVICE);
  unsigned int saver = (unsigned int)(tag >> 32);
  if ((unsigned int)tag != index || saver == 0 || saver - 1 == __preempt_task_ctx.epoch)
    return false;
  // The claimed records are the range's first ones: head moves past them one
  // each, whatever the order (the save path's ring check reads it).
  __scoped_atomic_fetch_add(&control->intask_head, 1u, __ATOMIC_RELAXED, __MEMORY_SCOPE_DEVICE);
  __preempt_task_ctx.claimed_record = index;
  return true;
}

// Once per CTA, before the first task: publishes the launch's values, which
// every gridDim read in the kernel and its callees reports (the first task's
// barrier makes them visible), and fetches the first batch, unless the CTA's
// SM is being evicted already. Returns the fetch in thread 0, 0 elsewhere.
PREEMPT_DEVICE unsigned long long __preempt_kernel_begin(preempt_control_block *control, unsigned int task_count,
                                                         unsigned int grid_x, unsigned int grid_y,
                                                         unsigned int grid_z, unsigned int generation,
                                                         unsigned int check_interval, unsigned int relaunched) {
  if (!is_first_thread())
    return 0;
  __preempt_task_ctx.relaunched = relaunched & PREEMPT_RELAUNCH_KIND_MASK;
  __preempt_task_ctx.prompt = relaunched & PREEMPT_LAUNCH_PROMPT;
  __preempt_task_ctx.quota_sm = PREEMPT_NO_SM;
  __preempt_task_ctx.task_count = task_count;
  __preempt_task_ctx.grid_x = grid_x;
  __preempt_task_ctx.grid_y = grid_y;
  __preempt_task_ctx.grid_z = grid_z;
  __preempt_task_ctx.generation = generation;
  __preempt_task_ctx.check_interval = check_interval ? check_interval : 1;
  __preempt_task_ctx.batch_next = __preempt_task_ctx.batch_end = 0;
  __preempt_task_ctx.tasks_run = 0;
  __preempt_task_ctx.tasks_skipped = 0;
  if (__preempt_task_ctx.relaunched == PREEMPT_RELAUNCH_UNDONE)
    __preempt_task_ctx.undone = __scoped_atomic_load_n(&control->undone, __ATOMIC_RELAXED, __MEMORY_SCOPE_DEVICE);
  __preempt_task_ctx.epoch = relaunched >> PREEMPT_RELAUNCH_EPOCH_SHIFT;
  __preempt_task_ctx.pending_count = 0;
  if ((relaunched & PREEMPT_LAUNCH_QUOTA) && !quota_admits(control))
    return YIELD_FETCH;
  // A CTA that starts on an SM being evicted leaves without a context: one
  // claimed now would be restored only to be saved again at its first
  // checks, and the grids' CTAs that queued behind resident ones would do
  // that one after another.
  unsigned int word = yield_word(control);
  if ((relaunched & PREEMPT_RELAUNCH_RESUMES) && !sm_yields(word) && claim_context(control))
    return RESUME_TAG;
  return issue_fetch(control, word, false);
}

// Thread 0 only, as a task starts (before its prefetch): the yield-mask word
// of the CTA's SM (0 elsewhere), tested by the fetch at the next task's start,
// so it is read only when that fetch will take a new batch: when at most one
// id of the current batch is left. The read overlaps this task; the CTA
// leaves within a batch and one task of the request landing.
PREEMPT_DEVICE unsigned int __preempt_yield_check(preempt_control_block *control) {
  // Prompt checks (publish_task) read the word themselves: tested last, so that shared memory is read only in the
  // task that would read the word.
  if (!is_first_thread() || __preempt_task_ctx.batch_end - __preempt_task_ctx.batch_next > 1 ||
      __preempt_task_ctx.prompt)
    return 0;
  return yield_word(control);
}

// Issues the fetch of the CTA's next task as the current one starts.
PREEMPT_DEVICE unsigned long long __preempt_task_prefetch(preempt_control_block *control, unsigned int yield_seen) {
  return is_first_thread() ? issue_fetch(control, yield_seen, true) : 0;
}

// The versions of the two above for the loop whose threads never meet: every
// thread holds its batch in registers, [current, end), so thread 0 tests
// those instead of walking its bookkeeping in shared memory as each task
// starts. With no barrier between tasks, that chain of shared-memory reads
// let thread 0's warp fall behind its siblings by a little every task, and
// the whole CTA waited for it at the next batch's barrier. Same schedule: the
// yield word is read when at most one task of the batch is left after this
// one, and the next batch is fetched as its last task starts. (Loops with a
// barrier between tasks keep the shared-memory versions: there the lag is
// not carried over, and these made matmul_tiled's converted kernel need 40
// registers instead of 32, a CTA per SM fewer.)
//
// One read per batch: at its second-to-last task, or at its only one. Every
// CTA reads the same yield-mask word, so each read waits in line at one L2
// slice; the word read at a batch's last task was never tested (the fetch
// after it tests the read made one task earlier). Elsewhere the last value
// read is carried on, so that the fetch always tests a read.
PREEMPT_DEVICE unsigned int __preempt_batch_yield_check(preempt_control_block *control, unsigned int current,
                                                        unsigned int end, unsigned int batch_start,
                                                        unsigned int yield_seen) {
  if (!is_first_thread())
    return 0;
  unsigned int left = end - current;
  // Under prompt checks publish_task reads the word; yield_seen then stays 0. The flag is in shared memory, so it
  // is read only at the task that would read the word, not at every task.
  if (left == 2 || (left == 1 && batch_start))
    return __preempt_task_ctx.prompt ? 0 : yield_word(control);
  return yield_seen;
}

// Returns the fetch of the next batch in thread 0 as the batch's last task
// starts; 0 elsewhere, which the loop never reads (it steps inside a batch).
PREEMPT_DEVICE unsigned long long __preempt_batch_prefetch(preempt_control_block *control, unsigned int yield_seen,
                                                           unsigned int current, unsigned int end) {
  if (!is_first_thread() || current + 1 < end)
    return 0;
  return prefetch_batch(control, yield_seen);
}

// Thread 0 only, in a drained launch's relaunch (control_block.h): from the
// task id just taken, takes ids one at a time until one whose block left the
// drain form's gate without running, counting those it passes as done (their
// blocks ran in the first wave, or an earlier relaunch took them). The first
// wave has ended before any relaunch starts, so every bit is final.
PREEMPT_LOCAL unsigned int next_undone_task(preempt_control_block *control, unsigned int task) {
  const unsigned int *undone = __preempt_task_ctx.undone;
  while (task < __preempt_task_ctx.task_count && !((undone[task / 32] >> (task % 32)) & 1u)) {
    __preempt_task_ctx.tasks_skipped++;
    task = tagged_add(&control->task_word[lane()], __preempt_task_ctx.generation, 1);
  }
  return task;
}

// Thread 0 only: resolves its fetch to a task id and decomposes it over the
// original grid (x fastest, as lib/task_grid.c) into `published`. Returns
// whether there is a task.
PREEMPT_LOCAL unsigned int publish_task(preempt_control_block *control, unsigned long long fetched,
                                        preempt_task_slot *published, unsigned int slot) {
  unsigned int generation = __preempt_task_ctx.generation;
  unsigned int task;
  published->resume_point = 0;
  // Prompt checks read the yield word now, as the batch is due: a request
  // that landed during the task just run is seen at once (the read and the
  // fetch after it are the price: docs/preemption.md, "Prompt checks").
  if ((fetched & TAG_MASK) == DEFER_TAG)
    fetched = fetch_batch(control, __preempt_task_ctx.prompt ? yield_word(control) : (unsigned int)fetched);
  if (fetched == YIELD_FETCH) {
    task = PREEMPT_NO_TASK;
  } else if (fetched == RESUME_TAG) {
    // A saved in-task context: its task, the rest of its batch, and a batch
    // it had fetched (issue_fetch runs that one next).
    const preempt_intask_header *record = intask_record(control, __preempt_task_ctx.claimed_record);
    task = record->task;
    __preempt_task_ctx.batch_next = task + 1;
    __preempt_task_ctx.batch_end = record->batch_end;
    __preempt_task_ctx.pending_first = record->extra_first;
    __preempt_task_ctx.pending_count = record->extra_count;
    published->resume_point = record->point;
    published->resume_record = __preempt_task_ctx.claimed_record;
  } else if ((fetched & TAG_MASK) == LOCAL_TAG) {
    task = (unsigned int)fetched;
  } else {
    // A new batch: its first task now, the rest from issue_fetch.
    unsigned int taken = __preempt_task_ctx.batch_taken;
    if ((fetched & TAG_MASK) == TAG(generation)) {
      task = (unsigned int)fetched;
    } else {
      task = tagged_add_slow(&control->task_word[lane()], generation, taken);
      preinstall_generation(&control->done_word[lane()], generation);
    }
    if (__preempt_task_ctx.relaunched == PREEMPT_RELAUNCH_UNDONE)
      task = next_undone_task(control, task); // batches of one: relaunched at check interval 1
    unsigned int end = task + taken;
    __preempt_task_ctx.batch_next = task + 1;
    __preempt_task_ctx.batch_end = end < __preempt_task_ctx.task_count ? end : __preempt_task_ctx.task_count;
  }
  unsigned int has_task = task < __preempt_task_ctx.task_count;
  if (has_task) {
    // Siblings wait at the barrier meanwhile: inside a batch the next task
    // is one step from the last (the other slot), so a carry replaces the
    // two divisions.
    const preempt_task_slot *last = &__preempt_task_ctx.slots[slot ^ 1];
    if (__preempt_task_ctx.tasks_run > 0 && task == __preempt_task_ctx.last_task + 1) {
      unsigned int x = last->block_x + 1, y = last->block_y, z = last->block_z;
      if (x == __preempt_task_ctx.grid_x) {
        x = 0;
        if (++y == __preempt_task_ctx.grid_y) {
          y = 0;
          z++;
        }
      }
      published->block_x = x;
      published->block_y = y;
      published->block_z = z;
    } else {
      unsigned int plane = task / __preempt_task_ctx.grid_x;
      published->block_x = task - plane * __preempt_task_ctx.grid_x;
      published->block_z = plane / __preempt_task_ctx.grid_y;
      published->block_y = plane - published->block_z * __preempt_task_ctx.grid_y;
    }
    published->task = task;
    __preempt_task_ctx.last_task = task;
    __preempt_task_ctx.tasks_run++;
  }
  published->has_task = has_task;
  __preempt_task_ctx.current_slot = slot;
  return has_task;
}

// Thread 0 publishes the task into slot `slot` and the barrier broadcasts
// it. Returns whether the CTA has a task to run. The loop alternates slots: a
// sibling may still read the other one when tasks are separated by this
// barrier alone, but never this one, which it read before reaching the
// previous task's barrier.
PREEMPT_DEVICE bool __preempt_task_begin(preempt_control_block *control, unsigned long long fetched,
                                         unsigned int slot) {
  preempt_task_slot *published = &__preempt_task_ctx.slots[slot];
  if (is_first_thread())
    publish_task(control, fetched, published, slot);
  cta_barrier();
  return published->has_task != 0;
}

// The batched loops: only a new batch goes through thread 0 and a barrier;
// the slot alternates per batch. Every thread then steps the block index
// itself, on its own when threads never meet inside a task (no shared memory,
// barrier, warp-level operation), or behind a barrier between tasks when they
// do (PersistentThreads.cpp). Thread 0 keeps its bookkeeping as in the per-task loop
// (its prefetch still walks the batch, so the next batch's fetch is issued as
// the last task starts). A batch, once taken, is always run: thread 0 counts
// it whole.
PREEMPT_DEVICE bool __preempt_batch_begin(preempt_control_block *control, unsigned long long fetched,
                                          unsigned int slot) {
  preempt_task_slot *published = &__preempt_task_ctx.slots[slot];
  if (is_first_thread() && publish_task(control, fetched, published, slot)) {
    published->batch_end = __preempt_task_ctx.batch_end;
    __preempt_task_ctx.tasks_run += __preempt_task_ctx.batch_end - published->task - 1;
  }
  cta_barrier();
  return published->has_task != 0;
}

PREEMPT_DEVICE unsigned int __preempt_batch_first(unsigned int slot) { return __preempt_task_ctx.slots[slot].task; }
PREEMPT_DEVICE unsigned int __preempt_batch_end(unsigned int slot) { return __preempt_task_ctx.slots[slot].batch_end; }

// Separates tasks when the body uses shared memory, barriers or reads the task
// context late (in callees): no thread may touch the next task's shared data,
// nor may thread 0 rewrite the context, while a sibling still runs this one.
PREEMPT_DEVICE void __preempt_task_end(void) { cta_barrier(); }

// Once per CTA, when it leaves: no task left, or its SM yielded. The CTA adds
// the tasks it finished to the launch's count; the agent that completes the
// count presets the other lane for the next generation (control_block.h) and
// publishes done_generation, which the application's stream waits for.
//
// NVIDIA: no fence. A first wave's results are all visible once its kernel
// has ended, and the application's wait on done_generation comes after that
// in its stream. A relaunch's CTAs count in relaunch_word instead, which the
// runtime's publisher moves into done_word after the relaunch has ended
// (gpu_cuda.c). A fence here would make ptxas keep every atomic of the
// kernel body an ATOM instead of a RED (control_block.h).
//
// AMD: every thread fences its results before the barrier, thread 0 after it
// (the threadFenceReduction pattern), so the results are visible before any
// CTA, first wave or relaunch, completes the count.
PREEMPT_LOCAL void preset_next_lane(preempt_control_block *control, unsigned int generation) {
  // The runtime's next generation for this block (generation.h); should the
  // two ever share a lane, it is still in use here: no preset then.
  unsigned int next = preempt_next_generation(generation);
  unsigned int next_lane = next % PREEMPT_CONTROL_LANES;
  if (next_lane == lane())
    return;
  __scoped_atomic_store_n(&control->task_word[next_lane], TAG(next), __ATOMIC_RELAXED, __MEMORY_SCOPE_DEVICE);
  __scoped_atomic_store_n(&control->done_word[next_lane], TAG(next), __ATOMIC_RELAXED, __MEMORY_SCOPE_DEVICE);
  __scoped_atomic_store_n(&control->relaunch_word[next_lane], TAG(next), __ATOMIC_RELAXED, __MEMORY_SCOPE_DEVICE);
}

PREEMPT_DEVICE void __preempt_kernel_end(preempt_control_block *control) {
#if !defined(__NVPTX__)
  device_fence();
#endif
  cta_barrier();
  if (!is_first_thread())
    return;
  if (__preempt_task_ctx.quota_sm != PREEMPT_NO_SM)
    __scoped_atomic_fetch_sub(&control->sm_resident[__preempt_task_ctx.quota_sm], 1u, __ATOMIC_RELAXED,
                              __MEMORY_SCOPE_DEVICE);
  unsigned int tasks_done = __preempt_task_ctx.tasks_run + __preempt_task_ctx.tasks_skipped;
  if (tasks_done == 0)
    return;
  unsigned int generation = __preempt_task_ctx.generation;
#if defined(__NVPTX__)
  if (__preempt_task_ctx.relaunched) {
    tagged_add(&control->relaunch_word[lane()], generation, tasks_done);
    return;
  }
#endif
  unsigned int finished = tagged_add(&control->done_word[lane()], generation, tasks_done) + tasks_done;
  if (finished == __preempt_task_ctx.task_count) {
    preset_next_lane(control, generation);
#if !defined(__NVPTX__)
    device_fence();
#endif
    __scoped_atomic_store_n(&control->done_generation, generation, __ATOMIC_RELAXED, __MEMORY_SCOPE_DEVICE);
  }
}

// The kernel's own block-index reads, right after the task's barrier.
PREEMPT_DEVICE unsigned int __preempt_task_block_x(unsigned int slot) { return __preempt_task_ctx.slots[slot].block_x; }
PREEMPT_DEVICE unsigned int __preempt_task_block_y(unsigned int slot) { return __preempt_task_ctx.slots[slot].block_y; }
PREEMPT_DEVICE unsigned int __preempt_task_block_z(unsigned int slot) { return __preempt_task_ctx.slots[slot].block_z; }

// Callees' reads, at any point of the task: only kernels that keep the
// barrier between tasks call them, so the current slot is stable meanwhile.
PREEMPT_DEVICE unsigned int __preempt_block_index_x(void) {
  return __preempt_task_ctx.slots[__preempt_task_ctx.current_slot].block_x;
}
PREEMPT_DEVICE unsigned int __preempt_block_index_y(void) {
  return __preempt_task_ctx.slots[__preempt_task_ctx.current_slot].block_y;
}
PREEMPT_DEVICE unsigned int __preempt_block_index_z(void) {
  return __preempt_task_ctx.slots[__preempt_task_ctx.current_slot].block_z;
}
PREEMPT_DEVICE unsigned int __preempt_grid_dim_x(void) { return __preempt_task_ctx.grid_x; }
PREEMPT_DEVICE unsigned int __preempt_grid_dim_y(void) { return __preempt_task_ctx.grid_y; }
PREEMPT_DEVICE unsigned int __preempt_grid_dim_z(void) { return __preempt_task_ctx.grid_z; }

// ---- In-task preemption (docs/intask.md; issue 8) ----
//
// The pass puts yield points at the back-edge of loops whose trip count is
// the same in every thread of the CTA (PersistentThreads.cpp, InTaskYield.cpp).
// Every `check_iterations[point]` iterations the CTA meets at a check: thread
// 0 tests the eviction word it read at the previous check (so the read's
// round trip overlaps the loop; read again when that check was long ago)
// and shares its answer through shared memory.
// On eviction every thread stores its context and the CTA leaves; a resumed
// grid claims the context (claim_context) and each thread loads it back.
// NVIDIA only: the pass places no in-task points on AMDGPU.
#if defined(__NVPTX__)

// The low half of the global timer: checks compare times a few
// microseconds apart, and 32-bit arithmetic keeps the check's registers
// (it sits in the kernel's loop) few.
PREEMPT_LOCAL unsigned int global_time_ns(void) { return (unsigned int)__nvvm_read_ptx_sreg_globaltimer(); }

// Thread 0, once per CTA after __preempt_kernel_begin, in kernels with
// in-task points: the launch's check period (0: checks never fire).
PREEMPT_DEVICE void __preempt_intask_begin(preempt_control_block *control) {
  if (!is_first_thread())
    return;
  unsigned int period = __scoped_atomic_load_n(&control->intask_period_ns, __ATOMIC_RELAXED, __MEMORY_SCOPE_DEVICE);
  __preempt_task_ctx.intask_period_ns = period;
  // The CTA's start stands for its last check: its first check (a loop
  // entered with no word read yet, as after a resume) then reads the word
  // again when the CTA has run over 4 periods, rather than leave it to the
  // second check, one slow iteration later (intask_period.h).
  __preempt_task_ctx.last_check_ns = period ? global_time_ns() : 0;
  // Start at one iteration: the first checks measure how long one takes.
  for (unsigned int point = 0; point < PREEMPT_INTASK_MAX_POINTS; point++)
    __preempt_task_ctx.check_iterations[point] = period ? 1u : 0xffffffffu;
}

// Every thread, entering a loop with yield point `point` (0-based): the
// iterations until its first check. Written only between the two barriers of
// a check, which no thread reading here has reached. The time of the last
// check is kept across loop entries: a loop entered often for a few
// iterations (a short loop per task, an inner loop) then measures the work
// between its entries too, and its count grows past its trip count, so that
// it stops checking at all rather than checking once per entry.
PREEMPT_DEVICE unsigned int __preempt_intask_iterations(unsigned int point) {
  return __preempt_task_ctx.check_iterations[point];
}

PREEMPT_LOCAL unsigned int evict_word(preempt_control_block *control) {
  return __scoped_atomic_load_n(&control->intask_evict, __ATOMIC_RELAXED, __MEMORY_SCOPE_DEVICE);
}
// Thread 0: the eviction word, tested at the next check (0 elsewhere).
PREEMPT_DEVICE unsigned int __preempt_intask_poll(preempt_control_block *control) {
  if (!is_first_thread())
    return 0;
  return evict_word(control);
}

// Thread 0: how many iterations to the next check, so that checks come
// about once per period (EffiSha §6.3's adaptive checking, per loop;
// preempt/intask_period.h); `now` is this check's time.
PREEMPT_LOCAL unsigned int next_check_iterations(unsigned int point, unsigned int now) {
  unsigned int period = __preempt_task_ctx.intask_period_ns;
  unsigned int last = __preempt_task_ctx.last_check_ns;
  __preempt_task_ctx.last_check_ns = now;
  if (period == 0)
    return 0xffffffffu;
  return preempt_intask_next_iterations(__preempt_task_ctx.check_iterations[point], period, last, now);
}

// Every thread, at a check: 0 when the CTA leaves, else the iterations to
// the next check. Thread 0 decides, writes the answer after a first barrier
// (so no sibling can still be reading the old count) and a second barrier
// publishes it; every thread then reads the one word. Not a barrier
// reduction (bar.red.or): ptxas takes its result for divergent, so the
// branch on it made the loop's control divergent in ptxas's eyes, and every
// value of the loop (the counter of a `for`, an address built from it) moved
// from the uniform datapath to per-thread registers and the loop was no
// longer unrolled: 11-19% slower on the H100 (docs/intask.md). A word read
// from shared memory after a barrier, at a uniform address, stays uniform.
PREEMPT_DEVICE unsigned int __preempt_intask_check(preempt_control_block *control, unsigned int point,
                                                  unsigned int evict_seen) {
  unsigned int iterations = 0;
  if (is_first_thread()) {
    unsigned int now = global_time_ns();
    // A check long after the last one (one slow iteration between checks):
    // the word read then is as old, so read it again (intask_period.h).
    if (evict_seen == 0 &&
        preempt_intask_poll_again(__preempt_task_ctx.intask_period_ns, __preempt_task_ctx.last_check_ns, now))
      evict_seen = evict_word(control);
    if (evict_seen == 0)
      iterations = next_check_iterations(point, now);
  }
  cta_barrier();
  if (is_first_thread())
    __preempt_task_ctx.check_iterations[point] = iterations;
  cta_barrier();
  return __preempt_task_ctx.check_iterations[point];
}

// Every thread, entering a loop whose point checks without barriers of its
// own: the check state, "just entered" with thread 0's read of the word.
PREEMPT_DEVICE unsigned int __preempt_intask_flags_begin(preempt_control_block *control) {
  return PREEMPT_INTASK_STATE_FIRST | (__preempt_intask_poll(control) != 0);
}

// Every thread, at a check of a loop that meets at a CTA barrier every
// iteration (the pass proves it): the count to the next check (0: leave) and,
// in bits 30-31, the state for the next check. The CTA agrees without a
// barrier of the check's own: every thread reads the answer thread 0 left in
// check_answers[point][state] at the check before, and thread 0 leaves the
// next one in the other slot. A loop barrier lies between thread 0's write and
// every read of it, and between every read and thread 0's next write to that
// slot. The barriers and thread 0's read and arithmetic on the CTA's path
// were what a check cost: gemm 1.023x at a check every 3 K steps against
// 0.999x this way (bench/intask/check_protocol.cu). A loop's first check
// after entering, and a check an answer asks to (PREEMPT_INTASK_AGAIN), meet
// at barriers instead and act on a fresh read, which also refills both slots:
// nothing is left to read from before the entry.
PREEMPT_DEVICE unsigned int __preempt_intask_check_flags(preempt_control_block *control, unsigned int point,
                                                        unsigned int state) {
  unsigned int *answers = __preempt_task_ctx.check_answers[point];
  unsigned int slot = state & 1u;
  if (!(state & PREEMPT_INTASK_STATE_FIRST)) {
    unsigned int answer = answers[slot];
    if (!(answer & PREEMPT_INTASK_AGAIN)) {
      if (is_first_thread()) {
        unsigned int now = global_time_ns(), period = __preempt_task_ctx.intask_period_ns;
        unsigned int last = __preempt_task_ctx.last_check_ns;
        __preempt_task_ctx.last_check_ns = now;
        // The interval that just ended ran the other slot's count.
        unsigned int ran = answers[slot ^ 1u] & PREEMPT_INTASK_COUNT_MASK;
        unsigned int word = evict_word(control);
        unsigned int next = period ? preempt_intask_next_iterations(ran, period, last, now) : 0xffffffffu;
        answers[slot ^ 1u] = preempt_intask_flags_answer(word, next, preempt_intask_poll_again(period, last, now));
      }
      return (answer & PREEMPT_INTASK_COUNT_MASK) | ((slot ^ 1u) << PREEMPT_INTASK_STATE_SHIFT);
    }
  }
  unsigned int iterations = 0;
  if (is_first_thread()) {
    unsigned int now = global_time_ns(), period = __preempt_task_ctx.intask_period_ns;
    unsigned int word = (state & PREEMPT_INTASK_STATE_FIRST) ? (state & 1u) : 0u;
    if (word == 0)
      word = evict_word(control);
    if (word == 0) {
      unsigned int ran = (state & PREEMPT_INTASK_STATE_FIRST) ? __preempt_task_ctx.check_iterations[point]
                                                              : answers[slot ^ 1u] & PREEMPT_INTASK_COUNT_MASK;
      unsigned int last = __preempt_task_ctx.last_check_ns;
      __preempt_task_ctx.last_check_ns = now;
      iterations = period ? preempt_intask_next_iterations(ran, period, last, now) : PREEMPT_INTASK_MAX_ITERATIONS;
    }
  }
  cta_barrier();
  if (is_first_thread()) {
    __preempt_task_ctx.check_iterations[point] = iterations;
    // The next check goes on with this count, and measures it; where an
    // interval is one iteration, it meets too (PREEMPT_INTASK_AGAIN), as
    // every check of such a loop does.
    answers[0] = answers[1] = iterations ? preempt_intask_flags_answer(0u, iterations, 0) : 1u;
  }
  cta_barrier();
  return __preempt_task_ctx.check_iterations[point];
}

// The CTA's thread count and this thread's place in it (contexts are laid
// out value by value, thread by thread: control_block.h).
PREEMPT_DEVICE unsigned int __preempt_intask_threads(void) {
  return __nvvm_read_ptx_sreg_ntid_x() * __nvvm_read_ptx_sreg_ntid_y() * __nvvm_read_ptx_sreg_ntid_z();
}
PREEMPT_DEVICE unsigned int __preempt_intask_thread(void) {
  return __nvvm_read_ptx_sreg_tid_x() +
         __nvvm_read_ptx_sreg_ntid_x() * (__nvvm_read_ptx_sreg_tid_y() + __nvvm_read_ptx_sreg_ntid_y() *
                                                                              __nvvm_read_ptx_sreg_tid_z());
}

// Every thread, as the CTA leaves at a point: the record it saves into, which
// thread 0 takes from the ring here, outside the loop's check.
PREEMPT_DEVICE unsigned char *__preempt_intask_save_record(preempt_control_block *control) {
  if (is_first_thread()) {
    unsigned int index = __scoped_atomic_fetch_add(&control->intask_tail, 1u, __ATOMIC_RELAXED, __MEMORY_SCOPE_DEVICE);
    unsigned int head = __scoped_atomic_load_n(&control->intask_head, __ATOMIC_RELAXED, __MEMORY_SCOPE_DEVICE);
    unsigned int capacity = __scoped_atomic_load_n(&control->intask_capacity, __ATOMIC_RELAXED, __MEMORY_SCOPE_DEVICE);
    // The runtime sizes the ring for twice the CTAs that can be resident
    // (docs/intask.md says why that suffices); overrunning it would
    // overwrite a context: stop the kernel loudly instead.
    if (index - head >= capacity)
      __builtin_trap();
    __preempt_task_ctx.save_record = index;
  }
  cta_barrier();
  return (unsigned char *)intask_record(control, __preempt_task_ctx.save_record);
}

// The record the batch in `slot` resumes from.
PREEMPT_DEVICE unsigned char *__preempt_intask_resume_record(preempt_control_block *control, unsigned int slot) {
  return (unsigned char *)intask_record(control, __preempt_task_ctx.slots[slot].resume_record);
}
PREEMPT_DEVICE unsigned int __preempt_intask_resume_point(unsigned int slot) {
  return __preempt_task_ctx.slots[slot].resume_point;
}

// Every thread: copies `bytes` between shared memory and a record, the CTA's
// threads word by word together (shared arrays are word-aligned; a ragged
// end goes byte by byte).
PREEMPT_DEVICE void __preempt_intask_copy(unsigned char *destination, const unsigned char *source,
                                          unsigned int bytes) {
  unsigned int threads = __preempt_intask_threads(), thread = __preempt_intask_thread();
  unsigned int words = bytes / 4;
  for (unsigned int word = thread; word < words; word += threads)
    ((unsigned int *)destination)[word] = ((const unsigned int *)source)[word];
  for (unsigned int byte = words * 4 + thread; byte < bytes; byte += threads)
    destination[byte] = source[byte];
}

// Every thread, after restoring shared memory: nobody reads it before all is back.
PREEMPT_DEVICE void __preempt_intask_restored(void) { cta_barrier(); }

// Every thread, once its values are stored: thread 0 finishes the record
// (the task it stopped in, the rest of its batch, a batch it had fetched)
// and takes the unfinished tasks off what the CTA will count as done. The
// tag goes last; the grid that resumes it starts after this one has ended.
PREEMPT_DEVICE void __preempt_intask_save_end(preempt_control_block *control, unsigned int point,
                                              unsigned int task, unsigned int batch_end,
                                              unsigned long long next_fetch) {
  cta_barrier();
  if (!is_first_thread())
    return;
  preempt_intask_header *record = intask_record(control, __preempt_task_ctx.save_record);
  record->task = task;
  record->batch_end = batch_end;
  record->point = point;
  unsigned int extra_first = 0, extra_count = 0;
  if (next_fetch != YIELD_FETCH && (next_fetch & TAG_MASK) != DEFER_TAG && (next_fetch & TAG_MASK) != LOCAL_TAG) {
    // A new batch thread 0 fetched as this task started: taken, not begun.
    unsigned int generation = __preempt_task_ctx.generation;
    unsigned int taken = __preempt_task_ctx.batch_taken;
    extra_first = (next_fetch & TAG_MASK) == TAG(generation)
                      ? (unsigned int)next_fetch
                      : tagged_add_slow(&control->task_word[lane()], generation, taken);
    if (extra_first < __preempt_task_ctx.task_count)
      extra_count = __preempt_task_ctx.task_count - extra_first < taken ? __preempt_task_ctx.task_count - extra_first
                                                                         : taken;
  } else if (__preempt_task_ctx.pending_count) {
    // A resumed context's own extra batch, not yet begun: it goes on.
    extra_first = __preempt_task_ctx.pending_first;
    extra_count = __preempt_task_ctx.pending_count;
    __preempt_task_ctx.pending_count = 0;
  }
  record->extra_first = extra_first;
  record->extra_count = extra_count;
  __scoped_atomic_store_n(&record->tag,
                          ((unsigned long long)(__preempt_task_ctx.epoch + 1) << 32) | __preempt_task_ctx.save_record,
                          __ATOMIC_RELAXED, __MEMORY_SCOPE_DEVICE);
  __preempt_task_ctx.tasks_run -= batch_end - task;
}

#endif
