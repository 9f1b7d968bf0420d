/* nvml.c: the daemon's reading of each GPU's memory, total and used, through NVML loaded at run time.
 * schedGPU §3.1 (the server's global view of memory through NVML, by physical device, with no CUDA context). */
#include "preemptd.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

/* NVML's ABI, declared here: the daemon builds without NVML's headers and runs without the library. */
typedef struct nvml_memory {
  unsigned long long total, free, used;
} nvml_memory;

typedef int (*nvml_init_fn)(void);
typedef int (*nvml_shutdown_fn)(void);
typedef int (*nvml_handle_by_uuid_fn)(const char *uuid, void **device);
typedef int (*nvml_memory_info_fn)(void *device, nvml_memory *memory);
typedef const char *(*nvml_error_string_fn)(int result);

/* dlsym returns an object pointer; POSIX guarantees it converts to a function pointer. */
static void *symbol(void *library, const char *name) { return dlsym(library, name); }

preempt_daemon_status preemptd_nvml_open(preemptd_nvml *nvml) {
  memset(nvml, 0, sizeof *nvml);
  /* The driver installs the versioned name only; the unversioned one comes with development packages. */
  nvml->library = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!nvml->library) {
    const char *error = dlerror();
    snprintf(nvml->why, sizeof nvml->why, "%s", error ? error : "libnvidia-ml.so.1 not found");
    return PREEMPT_DAEMON_SYSTEM;
  }
  nvml_init_fn init = (nvml_init_fn)symbol(nvml->library, "nvmlInit_v2");
  nvml->shutdown = symbol(nvml->library, "nvmlShutdown");
  nvml->handle_by_uuid = symbol(nvml->library, "nvmlDeviceGetHandleByUUID");
  nvml->memory_info = symbol(nvml->library, "nvmlDeviceGetMemoryInfo");
  nvml->error_string = symbol(nvml->library, "nvmlErrorString");
  int result = -1;
  if (!init || !nvml->shutdown || !nvml->handle_by_uuid || !nvml->memory_info || !nvml->error_string)
    snprintf(nvml->why, sizeof nvml->why, "libnvidia-ml.so.1 lacks nvmlInit_v2 or the memory calls");
  else if ((result = init()) != 0)
    snprintf(nvml->why, sizeof nvml->why, "nvmlInit_v2: %s", ((nvml_error_string_fn)nvml->error_string)(result));
  if (result != 0) {
    dlclose(nvml->library);
    nvml->library = NULL;
    return PREEMPT_DAEMON_SYSTEM;
  }
  return PREEMPT_DAEMON_OK;
}

void preemptd_nvml_close(preemptd_nvml *nvml) {
  if (!nvml->library)
    return;
  ((nvml_shutdown_fn)nvml->shutdown)();
  dlclose(nvml->library);
  nvml->library = NULL;
}

preempt_daemon_status preemptd_nvml_device(preemptd_nvml *nvml, const uint8_t uuid[16], void **device) {
  if (!nvml->library)
    return PREEMPT_DAEMON_SYSTEM;
  /* NVML names a GPU by the text CUDA shows as "GPU-" and the UUID's bytes in 8-4-4-4-12 hex digits. */
  char text[48];
  int length = snprintf(text, sizeof text, "GPU-");
  for (int byte = 0; byte < 16; byte++)
    length += snprintf(text + length, sizeof text - (size_t)length, "%s%02x",
                       byte == 4 || byte == 6 || byte == 8 || byte == 10 ? "-" : "", uuid[byte]);
  return ((nvml_handle_by_uuid_fn)nvml->handle_by_uuid)(text, device) == 0 ? PREEMPT_DAEMON_OK
                                                                            : PREEMPT_DAEMON_UNKNOWN_GPU;
}

preempt_daemon_status preemptd_nvml_memory(preemptd_nvml *nvml, void *device, uint64_t *total_bytes,
                                           uint64_t *used_bytes) {
  nvml_memory memory;
  if (!nvml->library || ((nvml_memory_info_fn)nvml->memory_info)(device, &memory) != 0 || memory.used > memory.total)
    return PREEMPT_DAEMON_SYSTEM;
  *total_bytes = memory.total;
  *used_bytes = memory.used;
  return PREEMPT_DAEMON_OK;
}
