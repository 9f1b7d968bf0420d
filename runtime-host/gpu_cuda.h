/* gpu_cuda.h: what gpu_cuda.c shares with the CUDA backend's other file, relaunch_publisher_cuda.c.
 * Driver entry points the runtime API does not wrap, and the relaunch publisher (control_block.h). */
#ifndef PREEMPT_GPU_CUDA_H
#define PREEMPT_GPU_CUDA_H

#include <stdint.h>

/* A driver function by name (CUDA 12.4's ABI); a cudaError_t. */
int preempt_cuda_driver_entry(const char *name, void **function);

/* Loads the publisher kernel into the current device's context. */
int preempt_cuda_publisher_load(void **publisher);
/* Enqueues it on `stream` for the launch of `control` and `generation`. */
int preempt_cuda_publish_relaunch(void *publisher, void *stream, void *control, uint32_t generation,
                                  uint32_t task_count);

#endif
