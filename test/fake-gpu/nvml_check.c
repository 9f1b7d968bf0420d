/* nvml_check.c: the fake NVML, found by dlopen as libnvidia-ml.so.1, against the fake CUDA runtime, in two processes.
 * schedGPU §3.2: a scheduler learns the GPU's used memory through NVML, without a context of its own.
 *
 * Usage: nvml_check FAKE_CUDA_LIBRARY BYTES      the checks below; exit 0 when all pass, 1 otherwise
 *        nvml_check --init-only                  nvmlInit_v2's result, for a bad environment
 *
 * The reader (this process) loads NVML only by its name, so that the dynamic loader must find it through
 * LD_LIBRARY_PATH as a daemon would, and never calls CUDA. The allocator (a child) loads FAKE_CUDA_LIBRARY by its
 * path and uses only the CUDA runtime: it reports its device's UUID and what cudaMemGetInfo says after each step
 * (ready, BYTES allocated, freed, allocated again), and is then killed. At each step the reader checks NVML's
 * total, used and free against the allocator's cudaMemGetInfo (used = total - free), and the error codes: before
 * nvmlInit_v2 and after the last nvmlShutdown NVML_ERROR_UNINITIALIZED, NULL arguments NVML_ERROR_INVALID_ARGUMENT,
 * a UUID of no device NVML_ERROR_NOT_FOUND. Every check prints "check <what>: ok" or "check <what>: FAILED (...)".
 * Each run uses its own simulated GPU (FAKE_GPU_NAME=/fake-nvml-check-<pid>, removed at the end). */
#define _GNU_SOURCE
#include <cuda_runtime_api.h> /* types only: the allocator finds the functions with dlsym */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

/* NVML's ABI (nvml.h is not installed here). */
typedef int nvmlReturn_t;
typedef struct nvmlDevice_st *nvmlDevice_t;
typedef struct {
  unsigned long long total, free, used;
} nvmlMemory_t;

static struct {
  nvmlReturn_t (*init)(void);
  nvmlReturn_t (*shutdown)(void);
  const char *(*error_string)(nvmlReturn_t);
  nvmlReturn_t (*handle_by_uuid)(const char *, nvmlDevice_t *);
  nvmlReturn_t (*memory_info)(nvmlDevice_t, nvmlMemory_t *);
} nvml;

static int failures;

static void check(const char *what, int ok, const char *format, ...) __attribute__((format(printf, 3, 4)));
static void check(const char *what, int ok, const char *format, ...) {
  if (ok) {
    printf("check %s: ok\n", what);
  } else {
    char why[256];
    va_list arguments;
    va_start(arguments, format);
    vsnprintf(why, sizeof why, format, arguments);
    va_end(arguments);
    printf("check %s: FAILED (%s)\n", what, why);
    failures++;
  }
  fflush(stdout);
}

static void check_code(const char *what, nvmlReturn_t got, nvmlReturn_t expected) {
  check(what, got == expected, "returned %d (%s), expected %d", got, nvml.error_string(got), expected);
}

static int load_nvml(void) {
  void *library = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    printf("cannot load libnvidia-ml.so.1: %s\n", dlerror());
    return -1;
  }
  struct link_map *map = NULL;
  if (dlinfo(library, RTLD_DI_LINKMAP, &map) == 0 && map)
    printf("loaded %s\n", map->l_name);
  static const char *const names[] = {"nvmlInit_v2", "nvmlShutdown", "nvmlErrorString", "nvmlDeviceGetHandleByUUID",
                                      "nvmlDeviceGetMemoryInfo"};
  void **slots[] = {(void **)&nvml.init, (void **)&nvml.shutdown, (void **)&nvml.error_string,
                    (void **)&nvml.handle_by_uuid, (void **)&nvml.memory_info};
  for (size_t index = 0; index < sizeof names / sizeof names[0]; index++) {
    *slots[index] = dlsym(library, names[index]);
    if (!*slots[index]) {
      printf("libnvidia-ml.so.1 has no %s\n", names[index]);
      return -1;
    }
  }
  return 0;
}

/* ---- the allocator: one line per step on `out`, commands from `in` */

static int allocator(const char *library_path, uint64_t bytes, FILE *in, FILE *out) {
  void *cuda = dlopen(library_path, RTLD_NOW | RTLD_LOCAL);
  if (!cuda) {
    fprintf(out, "error cannot load %s: %s\n", library_path, dlerror());
    return 1;
  }
  cudaError_t (*cuda_malloc)(void **, size_t) = (cudaError_t(*)(void **, size_t))dlsym(cuda, "cudaMalloc");
  cudaError_t (*cuda_free)(void *) = (cudaError_t(*)(void *))dlsym(cuda, "cudaFree");
  cudaError_t (*memory_info)(size_t *, size_t *) = (cudaError_t(*)(size_t *, size_t *))dlsym(cuda, "cudaMemGetInfo");
  cudaError_t (*properties)(struct cudaDeviceProp *, int) =
      (cudaError_t(*)(struct cudaDeviceProp *, int))dlsym(cuda, "cudaGetDeviceProperties");
  if (!cuda_malloc || !cuda_free || !memory_info || !properties) {
    fprintf(out, "error %s lacks the CUDA runtime calls\n", library_path);
    return 1;
  }
  struct cudaDeviceProp device;
  size_t free_bytes = 0, total_bytes = 0;
  if (properties(&device, 0) != cudaSuccess || memory_info(&free_bytes, &total_bytes) != cudaSuccess) {
    fprintf(out, "error cudaGetDeviceProperties or cudaMemGetInfo failed\n");
    return 1;
  }
  const unsigned char *uuid = (const unsigned char *)device.uuid.bytes;
  fprintf(out, "ready GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x %zu %zu\n", uuid[0],
          uuid[1], uuid[2], uuid[3], uuid[4], uuid[5], uuid[6], uuid[7], uuid[8], uuid[9], uuid[10], uuid[11],
          uuid[12], uuid[13], uuid[14], uuid[15], free_bytes, total_bytes);
  fflush(out);
  void *pointer = NULL;
  char command[64];
  while (fgets(command, sizeof command, in)) {
    cudaError_t status;
    const char *step;
    if (strcmp(command, "alloc\n") == 0) {
      status = cuda_malloc(&pointer, bytes);
      step = "allocated";
    } else if (strcmp(command, "free\n") == 0) {
      status = cuda_free(pointer);
      step = "freed";
    } else {
      fprintf(out, "error unknown command %s", command);
      return 1;
    }
    if (status != cudaSuccess || memory_info(&free_bytes, &total_bytes) != 0) {
      fprintf(out, "error %s: CUDA error %d\n", step, status);
      fflush(out);
      continue;
    }
    fprintf(out, "%s x %zu %zu\n", step, free_bytes, total_bytes);
    fflush(out);
  }
  return 0;
}

/* ---- the reader */

typedef struct {
  pid_t pid;
  FILE *to, *from;
} child;

/* The allocator's answer to a step: its cudaMemGetInfo numbers. 0, or -1 (said). */
static int answer(child *allocator_process, const char *command, const char *expected, char uuid[64],
                  uint64_t *free_bytes, uint64_t *total_bytes) {
  if (command) {
    fprintf(allocator_process->to, "%s\n", command);
    fflush(allocator_process->to);
  }
  char line[256], word[32], text[64];
  unsigned long long free_value, total_value;
  if (!fgets(line, sizeof line, allocator_process->from)) {
    printf("the allocator said nothing after %s\n", command ? command : "starting");
    return -1;
  }
  if (sscanf(line, "%31s %63s %llu %llu", word, text, &free_value, &total_value) != 4 || strcmp(word, expected) != 0) {
    printf("the allocator said: %s", line);
    return -1;
  }
  if (uuid)
    snprintf(uuid, 64, "%s", text);
  *free_bytes = free_value;
  *total_bytes = total_value;
  return 0;
}

/* NVML's numbers at one step against the allocator's. */
static void compare(const char *step, nvmlDevice_t device, uint64_t cuda_free, uint64_t cuda_total) {
  nvmlMemory_t memory = {0, 0, 0};
  nvmlReturn_t status = nvml.memory_info(device, &memory);
  char what[96];
  snprintf(what, sizeof what, "%s: nvmlDeviceGetMemoryInfo", step);
  check_code(what, status, 0);
  printf("%s: nvml total=%llu used=%llu free=%llu; cudaMemGetInfo total=%llu free=%llu\n", step, memory.total,
         memory.used, memory.free, (unsigned long long)cuda_total, (unsigned long long)cuda_free);
  snprintf(what, sizeof what, "%s: NVML agrees with cudaMemGetInfo", step);
  check(what, memory.total == cuda_total && memory.free == cuda_free && memory.used == cuda_total - cuda_free,
        "see the line above");
  snprintf(what, sizeof what, "%s: used + free = total", step);
  check(what, memory.used + memory.free == memory.total, "%llu + %llu != %llu", memory.used, memory.free, memory.total);
}

static int spawn_allocator(const char *library_path, uint64_t bytes, child *allocator_process) {
  int to_child[2], from_child[2];
  if (pipe(to_child) != 0 || pipe(from_child) != 0) {
    printf("pipe: %s\n", strerror(errno));
    return -1;
  }
  fflush(stdout);
  pid_t pid = fork();
  if (pid < 0) {
    printf("fork: %s\n", strerror(errno));
    return -1;
  }
  if (pid == 0) {
    close(to_child[1]);
    close(from_child[0]);
    FILE *in = fdopen(to_child[0], "r"), *out = fdopen(from_child[1], "w");
    _exit(in && out ? allocator(library_path, bytes, in, out) : 1);
  }
  close(to_child[0]);
  close(from_child[1]);
  allocator_process->pid = pid;
  allocator_process->to = fdopen(to_child[1], "w");
  allocator_process->from = fdopen(from_child[0], "r");
  return allocator_process->to && allocator_process->from ? 0 : -1;
}

static int run(const char *library_path, uint64_t bytes) {
  if (load_nvml() != 0)
    return 1;
  /* Before nvmlInit_v2: nothing but the error string answers. */
  nvmlDevice_t device = NULL;
  check_code("before init: nvmlDeviceGetHandleByUUID", nvml.handle_by_uuid("GPU-00000000-0000-0000-0000-000000000000", &device), 1);
  nvmlMemory_t memory;
  check_code("before init: nvmlDeviceGetMemoryInfo", nvml.memory_info(device, &memory), 1);
  check_code("before init: nvmlShutdown", nvml.shutdown(), 1);
  for (nvmlReturn_t code = 0; code <= 6; code += code == 2 ? 4 : 1)
    printf("nvmlErrorString(%d) = %s\n", code, nvml.error_string(code));

  child allocator_process;
  if (spawn_allocator(library_path, bytes, &allocator_process) != 0)
    return 1;
  char uuid[64];
  uint64_t cuda_free = 0, cuda_total = 0;
  if (answer(&allocator_process, NULL, "ready", uuid, &cuda_free, &cuda_total) != 0)
    return 1;
  printf("the allocator's device: %s\n", uuid);

  check_code("nvmlInit_v2", nvml.init(), 0);
  check_code("nvmlDeviceGetHandleByUUID (the allocator's device)", nvml.handle_by_uuid(uuid, &device), 0);
  nvmlDevice_t unused = NULL;
  check_code("nvmlDeviceGetHandleByUUID (NULL uuid)", nvml.handle_by_uuid(NULL, &unused), 2);
  check_code("nvmlDeviceGetHandleByUUID (NULL device)", nvml.handle_by_uuid(uuid, NULL), 2);
  char other[64];
  snprintf(other, sizeof other, "%s", uuid);
  other[strlen(other) - 1] = other[strlen(other) - 1] == '0' ? '1' : '0';
  check_code("nvmlDeviceGetHandleByUUID (another UUID)", nvml.handle_by_uuid(other, &unused), 6);
  snprintf(other, sizeof other, "%s", uuid + 4); /* without "GPU-" */
  check_code("nvmlDeviceGetHandleByUUID (no GPU- prefix)", nvml.handle_by_uuid(other, &unused), 6);
  check_code("nvmlDeviceGetHandleByUUID (empty)", nvml.handle_by_uuid("", &unused), 6);
  check_code("nvmlDeviceGetMemoryInfo (NULL memory)", nvml.memory_info(device, NULL), 2);
  check_code("nvmlDeviceGetMemoryInfo (NULL device)", nvml.memory_info(NULL, &memory), 2);

  compare("ready", device, cuda_free, cuda_total);
  if (answer(&allocator_process, "alloc", "allocated", NULL, &cuda_free, &cuda_total) != 0)
    return 1;
  compare("allocated", device, cuda_free, cuda_total);
  if (answer(&allocator_process, "free", "freed", NULL, &cuda_free, &cuda_total) != 0)
    return 1;
  compare("freed", device, cuda_free, cuda_total);
  if (answer(&allocator_process, "alloc", "allocated", NULL, &cuda_free, &cuda_total) != 0)
    return 1;
  compare("allocated again", device, cuda_free, cuda_total);
  int status = 0;
  if (kill(allocator_process.pid, SIGKILL) != 0 || waitpid(allocator_process.pid, &status, 0) != allocator_process.pid) {
    printf("cannot kill the allocator: %s\n", strerror(errno));
    return 1;
  }
  check_code("killed: nvmlDeviceGetMemoryInfo", nvml.memory_info(device, &memory), 0);
  printf("killed: nvml total=%llu used=%llu free=%llu\n", memory.total, memory.used, memory.free);
  check("killed: the dead allocator holds nothing", memory.used == 0 && memory.free == memory.total,
        "used %llu", memory.used);

  /* Initializations nest: the device stays readable until the last shutdown. */
  check_code("nvmlInit_v2 again", nvml.init(), 0);
  check_code("nvmlShutdown (one of two)", nvml.shutdown(), 0);
  check_code("after one of two shutdowns: nvmlDeviceGetMemoryInfo", nvml.memory_info(device, &memory), 0);
  check_code("nvmlShutdown (two of two)", nvml.shutdown(), 0);
  check_code("after shutdown: nvmlDeviceGetMemoryInfo", nvml.memory_info(device, &memory), 1);
  check_code("after shutdown: nvmlShutdown", nvml.shutdown(), 1);
  return failures ? 1 : 0;
}

int main(int argc, char **argv) {
  if (argc == 2 && strcmp(argv[1], "--init-only") == 0) {
    if (load_nvml() != 0)
      return 1;
    nvmlReturn_t status = nvml.init();
    printf("nvmlInit_v2: %d (%s)\n", status, nvml.error_string(status));
    return status == 0 ? 0 : 1;
  }
  char *end = NULL;
  unsigned long long bytes = argc == 3 ? strtoull(argv[2], &end, 10) : 0;
  if (argc != 3 || !*argv[2] || *end || bytes == 0) {
    fprintf(stderr, "usage: nvml_check FAKE_CUDA_LIBRARY BYTES | nvml_check --init-only\n");
    return 2;
  }
  char name[64];
  snprintf(name, sizeof name, "/fake-nvml-check-%d", (int)getpid());
  shm_unlink(name);
  setenv("FAKE_GPU_NAME", name, 1); /* before either process reads it */
  int status = run(argv[1], bytes);
  shm_unlink(name);
  printf("%d failed\n", failures);
  return status;
}
