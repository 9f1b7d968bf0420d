/* control_block.h: the per-launch control block in device memory and the per-CTA task context.
 * Shared by runtime-dev (device helpers) and runtime-host; FLEP §4.1, EffiSha §5.2 (kernel-side state). */
#ifndef PREEMPT_CONTROL_BLOCK_H
#define PREEMPT_CONTROL_BLOCK_H

/* Bumped whenever the layout below or the kernel calling convention changes;
 * the pass writes it into each converted kernel's marker and the runtime
 * refuses to launch a kernel built for another version. */
#define PREEMPT_KERNEL_ABI_VERSION 2u

/* A converted kernel takes these parameters after its own, in this order:
 * the control block, the task count and the original grid (x, y, z). Passing
 * the launch's values by value leaves nothing to copy before the launch, which
 * also keeps launches valid inside CUDA graphs. */
#define PREEMPT_KERNEL_EXTRA_PARAMS 5

/* Converted kernels carry a device global with this prefix and the kernel's
 * symbol name; its presence is how the runtime tells converted kernels apart. */
#define PREEMPT_KERNEL_MARKER_PREFIX "__preempt_kernel_"

/* Lives in device memory, one per launch in flight. Zero when the launch
 * starts: zeroed once when allocated, and reset by the last CTA to finish. */
typedef struct preempt_control_block {
  unsigned int task_counter; /* next task id; one atomic add per task */
  unsigned int ctas_done;    /* persistent CTAs that have finished */
  unsigned int reserved[6];
} preempt_control_block;

/* One task as thread 0 publishes it to its CTA. */
typedef struct preempt_task_slot {
  unsigned int block_x, block_y, block_z;
  unsigned int has_task;
} preempt_task_slot;

/* Lives in shared memory, one per CTA. Tasks alternate between two slots:
 * when tasks are separated by a single barrier, thread 0 fills the next
 * task's slot while siblings may still be reading the current one. */
typedef struct preempt_task_context {
  unsigned int grid_x, grid_y, grid_z;
  unsigned int task_count;
  unsigned int current_slot; /* for callees, which read the context mid-task */
  preempt_task_slot slots[2];
} preempt_task_context;

#endif
