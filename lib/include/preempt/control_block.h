/* control_block.h: the per-launch control block in device memory and the per-CTA task context.
 * Shared by runtime-dev (device helpers) and runtime-host; FLEP §4.1, EffiSha §5.2 (kernel-side state). */
#ifndef PREEMPT_CONTROL_BLOCK_H
#define PREEMPT_CONTROL_BLOCK_H

/* Bumped whenever the layout below or the kernel calling convention changes;
 * the pass writes it into each converted kernel's marker and the runtime
 * refuses to launch a kernel built for another version. */
#define PREEMPT_KERNEL_ABI_VERSION 1u

/* Converted kernels carry a device global with this prefix and the kernel's
 * symbol name; its presence is how the runtime tells converted kernels apart. */
#define PREEMPT_KERNEL_MARKER_PREFIX "__preempt_kernel_"

/* Lives in device memory, one per launch; written by the host before the
 * launch, in stream order. */
typedef struct preempt_control_block {
  unsigned int task_counter; /* next task id; one atomic add per task */
  unsigned int task_count;   /* tasks in the original grid */
  unsigned int grid_x;       /* the original grid, which gridDim must report */
  unsigned int grid_y;
  unsigned int grid_z;
  unsigned int reserved[3];
} preempt_control_block;

/* Lives in shared memory, one per CTA: thread 0 fills it for every task and
 * the other threads read it after the barrier. */
typedef struct preempt_task_context {
  unsigned int block_x, block_y, block_z;
  unsigned int grid_x, grid_y, grid_z;
  unsigned int has_task;
} preempt_task_context;

#endif
