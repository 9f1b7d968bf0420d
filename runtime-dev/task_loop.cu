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

// Once per CTA, before the first task: the original grid, which every gridDim
// read in the kernel and its callees reports. The first task's barrier
// publishes it.
PREEMPT_DEVICE void __preempt_kernel_begin(preempt_control_block *control) {
  if (is_first_thread()) {
    __preempt_task_ctx.grid_x = control->grid_x;
    __preempt_task_ctx.grid_y = control->grid_y;
    __preempt_task_ctx.grid_z = control->grid_z;
  }
}

// Thread 0 takes the next task id and decomposes it over the original grid
// (x fastest, as lib/task_grid.c); the barrier broadcasts it. Returns whether
// this CTA has a task to run.
PREEMPT_DEVICE bool __preempt_task_begin(preempt_control_block *control) {
  if (is_first_thread()) {
    unsigned int task = fetch_task(control);
    unsigned int has_task = task < control->task_count;
    if (has_task) {
      unsigned int plane = task / __preempt_task_ctx.grid_x;
      __preempt_task_ctx.block_x = task - plane * __preempt_task_ctx.grid_x;
      __preempt_task_ctx.block_z = plane / __preempt_task_ctx.grid_y;
      __preempt_task_ctx.block_y = plane - __preempt_task_ctx.block_z * __preempt_task_ctx.grid_y;
    }
    __preempt_task_ctx.has_task = has_task;
  }
  cta_barrier();
  return __preempt_task_ctx.has_task != 0;
}

// Separates tasks: no thread may touch shared memory of the next task, nor may
// thread 0 overwrite the task context, while a sibling still runs this one.
PREEMPT_DEVICE void __preempt_task_end(void) { cta_barrier(); }

PREEMPT_DEVICE unsigned int __preempt_block_index_x(void) { return __preempt_task_ctx.block_x; }
PREEMPT_DEVICE unsigned int __preempt_block_index_y(void) { return __preempt_task_ctx.block_y; }
PREEMPT_DEVICE unsigned int __preempt_block_index_z(void) { return __preempt_task_ctx.block_z; }
PREEMPT_DEVICE unsigned int __preempt_grid_dim_x(void) { return __preempt_task_ctx.grid_x; }
PREEMPT_DEVICE unsigned int __preempt_grid_dim_y(void) { return __preempt_task_ctx.grid_y; }
PREEMPT_DEVICE unsigned int __preempt_grid_dim_z(void) { return __preempt_task_ctx.grid_z; }
