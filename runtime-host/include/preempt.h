/* preempt.h: the public C API of preempt's host runtime, the one header applications include.
 * Launch path of FLEP §3/§4.1 and EffiSha §6: the runtime sizes the persistent grid and owns control blocks. */
#ifndef PREEMPT_H
#define PREEMPT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Error codes of the runtime's own API. preempt_launch_kernel returns the GPU
 * API's code instead (cudaError_t / hipError_t), as the call it replaces did. */
typedef enum preempt_status {
  PREEMPT_OK = 0,
  PREEMPT_ERROR_INVALID_ARGUMENT = 1,
  PREEMPT_ERROR_GPU = 2,           /* the GPU API failed; the message has its text */
  PREEMPT_ERROR_OUT_OF_MEMORY = 3,
  PREEMPT_ERROR_UNSUPPORTED = 4,   /* e.g. a kernel built for another ABI version */
} preempt_status;

typedef struct preempt_dim3 {
  unsigned int x, y, z;
} preempt_dim3;

/* One per kernel launched from a file compiled with the plugin; emitted by
 * the host pass (passes/LaunchRewrite.cpp), which must match this layout. */
typedef struct preempt_kernel_desc {
  uint32_t desc_version;      /* 1 */
  uint32_t gpu_api;           /* 1 = CUDA, 2 = HIP */
  uint32_t param_count;       /* parameters of the source kernel */
  uint32_t kernel_abi;        /* PREEMPT_KERNEL_ABI_VERSION the plugin was built with */
  const void *host_stub;      /* the kernel's handle for the GPU runtime API */
  const char *name;           /* device-side (mangled) name */
  void *runtime_state;        /* owned by the runtime; null until first launch */
} preempt_kernel_desc;

/* What the runtime found out about a kernel on the current device. */
typedef struct preempt_kernel_info {
  int converted;              /* 1: persistent-thread form, preemptible; 0: launched as written */
  uint32_t ctas_per_sm;       /* occupancy for the last launch configuration */
  uint32_t sm_count;
  uint32_t last_persistent_ctas; /* CTAs of the last persistent launch */
  uint64_t launches;
} preempt_kernel_info;

/* The host pass calls this in place of cudaLaunchKernel / hipLaunchKernel,
 * with the same arguments but the descriptor first. `stream` is a
 * cudaStream_t / hipStream_t. Returns the GPU API's error code. */
int preempt_launch_kernel(preempt_kernel_desc *kernel, preempt_dim3 grid, preempt_dim3 block, void **args,
                          size_t dynamic_shared_bytes, void *stream);

preempt_status preempt_get_kernel_info(preempt_kernel_desc *kernel, preempt_kernel_info *info);

/* The last error this thread met in the runtime, with the GPU API's text, or
 * "" when none. Errors are also printed to stderr unless PREEMPT_QUIET=1. */
const char *preempt_last_error(void);

/* Releases every device resource the runtime holds; launches after it start
 * afresh. Call after the GPU work is done (or let process exit do it). */
preempt_status preempt_shutdown(void);

#ifdef __cplusplus
}
#endif
#endif
