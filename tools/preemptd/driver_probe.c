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

/* In the child: one line per GPU ("gpu <32 hex> <sms>") or one "error <text>" line. The child, not the daemon, loads
 * the driver: the daemon keeps no CUDA state, threads or device files for its whole life. */
static void probe_child(int out) {
  FILE *pipe = fdopen(out, "w");
  if (!pipe)
    _exit(1);
  /* The daemon schedules every GPU of the node, whatever devices its own environment happened to select. */
  unsetenv("CUDA_VISIBLE_DEVICES");
  void *library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    const char *error = dlerror();
    fprintf(pipe, "error %s\n", error ? error : "libcuda.so.1 not found");
    _exit(fclose(pipe) == 0 ? 0 : 1);
  }
  cu_init_fn init = (cu_init_fn)symbol(library, "cuInit");
  cu_device_get_count_fn get_count = (cu_device_get_count_fn)symbol(library, "cuDeviceGetCount");
  cu_device_get_fn get = (cu_device_get_fn)symbol(library, "cuDeviceGet");
  cu_device_get_uuid_fn get_uuid = (cu_device_get_uuid_fn)symbol(library, "cuDeviceGetUuid_v2");
  if (!get_uuid)
    get_uuid = (cu_device_get_uuid_fn)symbol(library, "cuDeviceGetUuid");
  cu_device_get_attribute_fn get_attribute = (cu_device_get_attribute_fn)symbol(library, "cuDeviceGetAttribute");
  int count = 0, result;
  if (!init || !get_count || !get || !get_uuid || !get_attribute)
    fprintf(pipe, "error libcuda.so.1 lacks cuInit, cuDeviceGetCount, cuDeviceGet, cuDeviceGetUuid or "
                  "cuDeviceGetAttribute\n");
  else if ((result = init(0)) != 0)
    fprintf(pipe, "error cuInit: CUDA error %d\n", result);
  else if ((result = get_count(&count)) != 0)
    fprintf(pipe, "error cuDeviceGetCount: CUDA error %d\n", result);
  for (int ordinal = 0; ordinal < count; ordinal++) {
    int device = 0, sms = 0;
    uint8_t uuid[16];
    if ((result = get(&device, ordinal)) != 0 || (result = get_uuid(uuid, device)) != 0 ||
        (result = get_attribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device)) != 0) {
      fprintf(pipe, "error device %d: CUDA error %d\n", ordinal, result);
      break;
    }
    fprintf(pipe, "gpu ");
    for (int byte = 0; byte < 16; byte++)
      fprintf(pipe, "%02x", uuid[byte]);
    fprintf(pipe, " %d\n", sms);
  }
  _exit(fclose(pipe) == 0 ? 0 : 1);
}

static uint64_t now_ms(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (uint64_t)now.tv_sec * 1000u + (uint64_t)now.tv_nsec / 1000000u;
}

/* The child's whole output, within the deadline; false on a timeout (the child is then killed). */
static bool read_all(int in, char *text, size_t bytes) {
  size_t used = 0;
  uint64_t deadline = now_ms() + PROBE_TIMEOUT_MS;
  for (;;) {
    uint64_t now = now_ms();
    if (now >= deadline)
      return false;
    struct pollfd polled = {.fd = in, .events = POLLIN};
    int ready = poll(&polled, 1, (int)(deadline - now));
    if (ready < 0 && errno == EINTR)
      continue;
    if (ready <= 0)
      return false;
    ssize_t got = read(in, text + used, bytes - 1 - used);
    if (got < 0 && errno == EINTR)
      continue;
    if (got <= 0 || (used += (size_t)got) == bytes - 1)
      break;
  }
  text[used] = '\0';
  return true;
}

static bool parse_uuid(const char *hex, uint8_t uuid[16]) {
  for (int byte = 0; byte < 16; byte++) {
    unsigned value;
    if (sscanf(hex + 2 * byte, "%2x", &value) != 1)
      return false;
    uuid[byte] = (uint8_t)value;
  }
  return hex[32] == ' ';
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
    close(fds[0]);
    probe_child(fds[1]);
  }
  close(fds[1]);
  if (child < 0) {
    close(fds[0]);
    snprintf(gpus->why, sizeof gpus->why, "fork: %s", strerror(errno));
    return PREEMPT_DAEMON_SYSTEM;
  }
  char text[4096];
  bool complete = read_all(fds[0], text, sizeof text);
  close(fds[0]);
  if (!complete)
    kill(child, SIGKILL);
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR)
    ;
  gpus->probe_ms = (uint32_t)(now_ms() - start);
  if (!complete) {
    snprintf(gpus->why, sizeof gpus->why, "the driver did not answer within %d ms", PROBE_TIMEOUT_MS);
    return PREEMPT_DAEMON_SYSTEM;
  }
  for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
    unsigned sms;
    if (strncmp(line, "error ", 6) == 0) {
      snprintf(gpus->why, sizeof gpus->why, "%s", line + 6);
      gpus->count = 0;
      return PREEMPT_DAEMON_SYSTEM;
    }
    preemptd_driver_gpu *gpu = &gpus->gpus[gpus->count];
    if (gpus->count == PREEMPTD_MAX_GPUS || strncmp(line, "gpu ", 4) != 0 || !parse_uuid(line + 4, gpu->uuid) ||
        sscanf(line + 37, "%u", &sms) != 1 || sms == 0 || sms > PREEMPT_SCHED_MAX_SMS)
      continue; /* more GPUs than the table holds, or an SM count no scheduler can use: left to the clients */
    gpu->sm_count = sms;
    gpus->count++;
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    snprintf(gpus->why, sizeof gpus->why, "the probe process failed (wait status %d)", status);
    gpus->count = 0;
    return PREEMPT_DAEMON_SYSTEM;
  }
  return PREEMPT_DAEMON_OK;
}

uint32_t preemptd_driver_sm_count(const preemptd_driver_gpus *gpus, const uint8_t uuid[16]) {
  for (uint32_t i = 0; i < gpus->count; i++)
    if (memcmp(gpus->gpus[i].uuid, uuid, 16) == 0)
      return gpus->gpus[i].sm_count;
  return 0;
}
