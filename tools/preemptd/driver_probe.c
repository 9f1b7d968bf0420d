/* driver_probe.c: the daemon's own reading of each GPU's SM count, from the CUDA driver, in a child process.
 * FLEP §5 (the scheduler's SM masks are only as good as the SM count they are drawn over; issue 41: no user's claim). */
#include "preemptd.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The driver's ABI, declared here: the daemon builds without CUDA's headers and runs without a driver. */
typedef int (*cu_init_fn)(unsigned int flags);
typedef int (*cu_device_get_count_fn)(int *count);
typedef int (*cu_device_get_fn)(int *device, int ordinal);
typedef int (*cu_device_get_uuid_fn)(uint8_t uuid[16], int device);
typedef int (*cu_device_get_attribute_fn)(int *value, int attribute, int device);
#define CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT 16
/* cuInit on a GPU without persistence mode takes hundreds of milliseconds; a wedged driver must not hold the
 * daemon's start for ever. */
#define PROBE_TIMEOUT_MS 20000

static void *symbol(void *library, const char *name) { return dlsym(library, name); }

/* In the child, which, not the daemon, loads the driver: the daemon keeps no CUDA state, threads or device files for
 * its whole life. The answer is the table itself, or a `why` with count 0. */
static void probe_child(preemptd_driver_gpus *gpus) {
  /* The daemon schedules every GPU of the node, whatever devices its own environment happened to select. */
  unsetenv("CUDA_VISIBLE_DEVICES");
  void *library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    const char *error = dlerror();
    snprintf(gpus->why, sizeof gpus->why, "%s", error ? error : "libcuda.so.1 not found");
    return;
  }
  cu_init_fn init = (cu_init_fn)symbol(library, "cuInit");
  cu_device_get_count_fn get_count = (cu_device_get_count_fn)symbol(library, "cuDeviceGetCount");
  cu_device_get_fn get = (cu_device_get_fn)symbol(library, "cuDeviceGet");
  cu_device_get_uuid_fn get_uuid = (cu_device_get_uuid_fn)symbol(library, "cuDeviceGetUuid_v2");
  if (!get_uuid)
    get_uuid = (cu_device_get_uuid_fn)symbol(library, "cuDeviceGetUuid");
  cu_device_get_attribute_fn get_attribute = (cu_device_get_attribute_fn)symbol(library, "cuDeviceGetAttribute");
  int count = 0, result;
  if (!init || !get_count || !get || !get_uuid || !get_attribute) {
    snprintf(gpus->why, sizeof gpus->why,
             "libcuda.so.1 lacks cuInit, cuDeviceGetCount, cuDeviceGet, cuDeviceGetUuid or cuDeviceGetAttribute");
    return;
  }
  if ((result = init(0)) != 0) {
    snprintf(gpus->why, sizeof gpus->why, "cuInit: CUDA error %d", result);
    return;
  }
  if ((result = get_count(&count)) != 0) {
    snprintf(gpus->why, sizeof gpus->why, "cuDeviceGetCount: CUDA error %d", result);
    return;
  }
  for (int ordinal = 0; ordinal < count; ordinal++) {
    int device = 0, sms = 0;
    preemptd_driver_gpu *gpu = &gpus->gpus[gpus->count];
    if ((result = get(&device, ordinal)) != 0 || (result = get_uuid(gpu->uuid, device)) != 0 ||
        (result = get_attribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device)) != 0) {
      snprintf(gpus->why, sizeof gpus->why, "device %d: CUDA error %d", ordinal, result);
      gpus->count = 0;
      return;
    }
    /* More GPUs than the table holds, or an SM count no scheduler can use: left to the clients. */
    if (gpus->count < PREEMPTD_MAX_GPUS && sms > 0 && (uint32_t)sms <= PREEMPT_SCHED_MAX_SMS) {
      gpu->sm_count = (uint32_t)sms;
      gpus->count++;
    }
  }
}

static uint64_t now_ms(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (uint64_t)now.tv_sec * 1000u + (uint64_t)now.tv_nsec / 1000000u;
}

/* The child's whole answer, within the deadline; false on a timeout or a short answer (a child that died). */
static bool read_answer(int in, preemptd_driver_gpus *gpus) {
  size_t used = 0;
  uint64_t deadline = now_ms() + PROBE_TIMEOUT_MS;
  while (used < sizeof *gpus) {
    uint64_t now = now_ms();
    if (now >= deadline)
      return false;
    struct pollfd polled = {.fd = in, .events = POLLIN};
    int ready = poll(&polled, 1, (int)(deadline - now));
    if (ready < 0 && errno == EINTR)
      continue;
    if (ready <= 0)
      return false;
    ssize_t got = read(in, (char *)gpus + used, sizeof *gpus - used);
    if (got < 0 && errno == EINTR)
      continue;
    if (got <= 0)
      return false;
    used += (size_t)got;
  }
  return true;
}

preempt_daemon_status preemptd_driver_probe(preemptd_driver_gpus *gpus) {
  memset(gpus, 0, sizeof *gpus);
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    snprintf(gpus->why, sizeof gpus->why, "pipe: %s", strerror(errno));
    return PREEMPT_DAEMON_SYSTEM;
  }
  uint64_t start = now_ms();
  pid_t child = fork();
  if (child == 0) {
    /* A fork of this binary: the table's own bytes are the message. */
    close(fds[0]);
    probe_child(gpus);
    _exit(write(fds[1], gpus, sizeof *gpus) == (ssize_t)sizeof *gpus ? 0 : 1);
  }
  close(fds[1]);
  if (child < 0) {
    close(fds[0]);
    snprintf(gpus->why, sizeof gpus->why, "fork: %s", strerror(errno));
    return PREEMPT_DAEMON_SYSTEM;
  }
  bool complete = read_answer(fds[0], gpus);
  close(fds[0]);
  if (!complete)
    kill(child, SIGKILL);
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR)
    ;
  uint32_t took = (uint32_t)(now_ms() - start);
  if (complete && WIFEXITED(status) && WEXITSTATUS(status) == 0) {
    gpus->probe_ms = took;
    gpus->why[sizeof gpus->why - 1] = '\0';
    return gpus->why[0] ? PREEMPT_DAEMON_SYSTEM : PREEMPT_DAEMON_OK;
  }
  memset(gpus, 0, sizeof *gpus);
  gpus->probe_ms = took;
  if (took >= PROBE_TIMEOUT_MS)
    snprintf(gpus->why, sizeof gpus->why, "the driver did not answer within %d ms", PROBE_TIMEOUT_MS);
  else
    snprintf(gpus->why, sizeof gpus->why, "the probe process failed (wait status %d)", status);
  return PREEMPT_DAEMON_SYSTEM;
}

uint32_t preemptd_driver_sm_count(const preemptd_driver_gpus *gpus, const uint8_t uuid[16]) {
  for (uint32_t i = 0; i < gpus->count; i++)
    if (memcmp(gpus->gpus[i].uuid, uuid, 16) == 0)
      return gpus->gpus[i].sm_count;
  return 0;
}
