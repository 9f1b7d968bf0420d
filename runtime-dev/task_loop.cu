// task_loop.cu: device helpers of the persistent-thread task loop, built to bitcode and linked into kernels.
// FLEP §4.1 (persistent threads pulling block-tasks), EffiSha §5.1 (task fetch, barrier between tasks).
//
// Compiled twice without any GPU headers: as CUDA for nvptx64 and as HIP for
// amdgcn. The pass inlines every helper and strips their target attributes, so
// they adopt the kernel's own GPU architecture.
#include "preempt/control_block.h"

#define PREEMPT_DEVICE extern "C" __attribute__((device)) __attribute__((always_inline))

extern "C" __attribute__((shared)) preempt_task_context __preempt_task_ctx;
__attribute__((shared)) preempt_task_context __preempt_task_ctx;

static __attribute__((device)) __attribute__((always_inline)) inline bool is_first_thread(void) {
#if defined(__NVPTX__)
  return (__nvvm_read_ptx_sreg_tid_x() | __nvvm_read_ptx_sreg_tid_y() | __nvvm_read_ptx_sreg_tid_z()) == 0;
#else
  return (__builtin_amdgcn_workitem_id_x() | __builtin_amdgcn_workitem_id_y() |
          __builtin_amdgcn_workitem_id_z()) == 0;
#endif
}

static __attribute__((device)) __attribute__((always_inline)) inline void cta_barrier(void) {
#if defined(__NVPTX__)
  __nvvm_bar_sync(0);
#else
  // What HIP's __syncthreads does: order shared memory around the barrier.
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
  __builtin_amdgcn_s_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
#endif
}

// Relaxed: the counter only hands out ids; the original grid promised no
// ordering between blocks either.
static __attribute__((device)) __attribute__((always_inline)) inline unsigned int
fetch_task(preempt_control_block *control) {
  return __scoped_atomic_fetch_add(&control->task_counter, 1u, __ATOMIC_RELAXED, __MEMORY_SCOPE_DEVICE);
}

// Once per CTA, before the first task: publishes the task count and the
// original grid, which every gridDim read in the kernel and its callees
// reports (the first task's barrier makes them visible), and takes the first
// task id. Returns that id in thread 0; other threads get 0 and never use it.
PREEMPT_DEVICE unsigned int __preempt_kernel_begin(preempt_control_block *control, unsigned int task_count,
                                                   unsigned int grid_x, unsigned int grid_y, unsigned int grid_z) {
  if (!is_first_thread())
    return 0;
  __preempt_task_ctx.task_count = task_count;
  __preempt_task_ctx.grid_x = grid_x;
  __preempt_task_ctx.grid_y = grid_y;
  __preempt_task_ctx.grid_z = grid_z;
  return fetch_task(control);
}

static __attribute__((device)) __attribute__((always_inline)) inline unsigned int persistent_cta_count(void) {
#if defined(__NVPTX__)
  return __nvvm_read_ptx_sreg_nctaid_x() * __nvvm_read_ptx_sreg_nctaid_y() * __nvvm_read_ptx_sreg_nctaid_z();
#else
  return __builtin_amdgcn_grid_size_x() / __builtin_amdgcn_workgroup_size_x();
#endif
}

// A device-wide fence. Explicit, because NVPTX in LLVM 22 lowers an acq_rel
// atomicrmw to a plain relaxed atom.
static __attribute__((device)) __attribute__((always_inline)) inline void device_fence(void) {
#if defined(__NVPTX__)
  __nvvm_membar_gl();
#else
  __builtin_amdgcn_fence(__ATOMIC_SEQ_CST, "agent");
#endif
}

// Once per CTA, after its last task. The last CTA to finish zeroes the
// control block for the next launch that uses it: every CTA's last fetch is
// fenced before its increment of ctas_done, and the last CTA fences after it.
PREEMPT_DEVICE void __preempt_kernel_end(preempt_control_block *control) {
  if (!is_first_thread())
    return;
  device_fence();
  unsigned int finished =
      __scoped_atomic_fetch_add(&control->ctas_done, 1u, __ATOMIC_RELAXED, __MEMORY_SCOPE_DEVICE) + 1;
  if (finished == persistent_cta_count()) {
    device_fence();
    __scoped_atomic_store_n(&control->task_counter, 0u, __ATOMIC_RELAXED, __MEMORY_SCOPE_DEVICE);
    __scoped_atomic_store_n(&control->ctas_done, 0u, __ATOMIC_RELAXED, __MEMORY_SCOPE_DEVICE);
  }
}

// Thread 0 decomposes the task id it fetched over the original grid (x
// fastest, as lib/task_grid.c) into slot `slot` and the barrier broadcasts it.
// Returns whether the CTA has a task to run. The loop alternates slots: a
// sibling may still read the other one when tasks are separated by this
// barrier alone, but never this one, which it read before reaching the
// previous task's barrier.
PREEMPT_DEVICE bool __preempt_task_begin(unsigned int task, unsigned int slot) {
  preempt_task_slot *published = &__preempt_task_ctx.slots[slot];
  if (is_first_thread()) {
    unsigned int has_task = task < __preempt_task_ctx.task_count;
    if (has_task) {
      unsigned int plane = task / __preempt_task_ctx.grid_x;
      published->block_x = task - plane * __preempt_task_ctx.grid_x;
      published->block_z = plane / __preempt_task_ctx.grid_y;
      published->block_y = plane - published->block_z * __preempt_task_ctx.grid_y;
    }
    published->has_task = has_task;
    __preempt_task_ctx.current_slot = slot;
  }
  cta_barrier();
  return published->has_task != 0;
}

// Takes the id of the CTA's next task as soon as the current one starts, so
// that the atomic's round trip overlaps the task instead of preceding the next
// (the persistent loop's fetch latency otherwise adds to every task).
PREEMPT_DEVICE unsigned int __preempt_task_prefetch(preempt_control_block *control) {
  return is_first_thread() ? fetch_task(control) : 0;
}

// Separates tasks when the body uses shared memory, barriers or reads the task
// context late (in callees): no thread may touch the next task's shared data,
// nor may thread 0 rewrite the context, while a sibling still runs this one.
PREEMPT_DEVICE void __preempt_task_end(void) { cta_barrier(); }

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
