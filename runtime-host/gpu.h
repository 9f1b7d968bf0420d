/* gpu.h: the small GPU interface the runtime is written against; gpu_cuda.c and gpu_hip.c implement it.
 * Keeps FLEP §3/§4's launch, eviction and resumption logic (launch.c, eviction.c) free of vendor calls. */
#ifndef PREEMPT_GPU_H
#define PREEMPT_GPU_H

#include <stddef.h>
#include <stdint.h>

#include "preempt.h"
#include "preempt/coexec.h"

/* Every call returns the vendor API's error code (0 = success). Pointers
 * named device_* are device addresses; streams and events are the vendor's
 * handles. */
typedef struct preempt_gpu_ops {
  const char *api_name;
  /* The API's own codes for the errors the runtime raises itself. */
  int invalid_value, out_of_memory, invalid_configuration, not_supported, not_ready;
  const char *(*error_string)(int code);
  int (*current_device)(int *device);
  /* The calling thread's current device: kernels launch on its streams only. */
  int (*set_device)(int device);
  int (*device_count)(int *count);
  int (*sm_count)(int device, uint32_t *count);
  /* The device's 16-byte UUID: preemptd knows GPUs by UUID, so processes
   * that number devices differently (CUDA_VISIBLE_DEVICES) agree on them. */
  int (*device_uuid)(int device, unsigned char uuid[16]);
  /* Reads a device global of exactly `bytes` bytes beside the kernel (its
   * marker, its in-task descriptor): all zero when there is none. */
  int (*kernel_global)(const void *host_stub, const char *name, void *value, size_t bytes);
  /* The kernel's own parameters as the device compiled them (the host stub's
   * LLVM arguments are not: the host ABI splits small structs in two and
   * drops empty ones): their number in *count, and, where `sizes` is not
   * NULL, the byte size of each of the first `capacity`. */
  int (*kernel_param_sizes)(const void *host_stub, uint32_t capacity, size_t *sizes, uint32_t *count);
  int (*occupancy)(const void *host_stub, uint32_t block_threads, size_t dynamic_shared_bytes,
                   uint32_t *ctas_per_sm);
  /* What one SM holds (FlexSched §4.3's co-execution space is computed from
   * it), and a kernel's registers per thread and static shared memory per
   * CTA: the daemon places two kernels' CTAs on one SM from these. */
  int (*sm_limits)(int device, preempt_sm_limits *limits);
  /* `function`: a copy looked up beside the stub's kernel (the persistent
   * form), or NULL for the stub's own. */
  int (*kernel_footprint)(const void *host_stub, void *function, uint32_t *registers_per_thread,
                          uint32_t *static_shared_bytes);
  /* Copies device memory to device memory on `stream`, in its order, without waiting. */
  int (*copy_device_async)(void *device_destination, const void *device_source, size_t bytes, void *stream);
  /* Copies device memory to the host on `stream` and waits for it. */
  int (*copy_to_host)(void *host, const void *device_pointer, size_t bytes, void *stream);
  int (*device_alloc)(void **pointer, size_t bytes);
  int (*device_free)(void *pointer);
  int (*device_zero)(void *pointer, size_t bytes); /* synchronous; used once per pool */
  /* Zeroes on `stream`, in its order, without waiting. */
  int (*device_zero_async)(void *pointer, size_t bytes, void *stream);
  /* A non-blocking stream; `urgent` asks for the highest priority. */
  int (*stream_create)(void **stream, int urgent);
  int (*stream_destroy)(void *stream);
  /* Stream memory operations: write `count` consecutive words (in one call
   * where the API has one: an eviction's latency includes every call), or
   * hold the stream until a word equals a value. */
  int (*stream_write_words)(void *stream, uint32_t *device_words, const uint32_t *values, uint32_t count);
  int (*stream_wait_u32)(void *stream, void *device_word, uint32_t value);
  int (*stream_wait_event)(void *stream, void *event);
  int (*event_create)(void **event, int timed);
  int (*event_destroy)(void *event);
  int (*event_record)(void *event, void *stream);
  int (*event_query)(void *event); /* 0 when done, not_ready while pending */
  int (*event_synchronize)(void *event);
  int (*event_elapsed_ms)(void *start, void *end, float *milliseconds);
  int (*launch)(const void *host_stub, preempt_dim3 grid, preempt_dim3 block, void **args,
                size_t dynamic_shared_bytes, void *stream);
  /* A copy kept beside a converted kernel (control_block.h: the unconverted
   * copy, PREEMPT_ORIGINAL_KERNEL_PREFIX, or the drain form,
   * PREEMPT_DRAIN_KERNEL_PREFIX), `name` in the module of the kernel whose
   * stub is given: *function = NULL when the module has none (a plugin older
   * than the copies, or a kernel the pass kept none for). not_supported where
   * the API cannot look it up. */
  int (*original_kernel)(const void *host_stub, const char *name, void **function);
  /* Launches such a copy with the application's own arguments. Attributes
   * the application set through the API reached the converted kernel
   * (`host_stub`), not the copy: the copy takes on those the launch needs.
   * On any failure the caller launches the persistent form instead, through
   * `launch`, so that the API reports its own error the usual way. */
  int (*launch_function)(const void *host_stub, void *function, preempt_dim3 grid, preempt_dim3 block, void **args,
                         size_t dynamic_shared_bytes, void *stream);
  /* Such a copy's CTAs per SM for this block size and dynamic shared memory,
   * under the limit launch_function would give it: a copy the pass added
   * code to (the in-task variant) may hold fewer than its kernel. */
  int (*function_occupancy)(const void *host_stub, void *function, uint32_t block_threads, size_t dynamic_shared_bytes,
                            uint32_t *ctas_per_sm);
  /* NVIDIA: a relaunch's CTAs leave their count for the runtime's publisher
   * kernel, enqueued after each relaunch (control_block.h). Loaded once per
   * device; NULL where relaunched CTAs publish themselves (AMD). */
  int (*publisher_load)(void **publisher);
  /* Stream capture: whether `stream` is capturing into a graph (*capturing),
   * and the calling thread's capture mode set to relaxed (the old one kept in
   * *saved) and put back, so that the runtime's own one-time lookups (reading
   * a marker) are allowed while some stream captures. NULL where the API has
   * no capture. */
  int (*stream_capturing)(void *stream, int *capturing);
  int (*capture_mode_relax)(int *saved);
  int (*capture_mode_restore)(int saved);
  /* Whether the API loads modules lazily (a launch of a kernel not yet loaded
   * then waits for the device, held streams included); NULL: never lazy. */
  int (*module_loading_lazy)(int *lazy);
  int (*publish_relaunch)(void *publisher, void *stream, void *control, uint32_t generation, uint32_t task_count);
  /* A stream's priority (lower numbers first, as CUDA and HIP order them); NULL: priorities are not kept
   * (priority.c). */
  int (*stream_priority)(void *stream, int *priority);
  /* `count` zeroed 32-bit words of pinned host memory that a stream's stream_wait_u32 can wait on, at
   * *device_view, and that the host releases with a plain store: preemptd's held launches wait on one in their own
   * stream (launch.c). NULL where the API has none (HIP here): those launches start as relaunches instead. */
  int (*host_words_alloc)(uint32_t **host, void **device_view, uint32_t count);
  int (*host_words_free)(uint32_t *host);
} preempt_gpu_ops;

const preempt_gpu_ops *preempt_gpu_backend(void);

#endif
