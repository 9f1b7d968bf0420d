/* fake_cudart.c: a stand-in libcudart.so.13 for bench/memory/dry_run.sh, on a machine without a GPU. Never a
 * measurement. It runs mem_pressure.cu's three kernels on the host (by their names) and keeps a fake GPU memory of
 * FAKE_GPU_TOTAL_MIB (default 1024) shared by every process that uses FAKE_GPU_DIR (one file per process holding
 * its bytes, summed under a lock; a dead process's file no longer counts), so that processes that together ask for
 * more than it get cudaErrorMemoryAllocation as on a real GPU, and libpreempt_mem.so / the runtime's admission
 * wrappers run for real on top of it. Each process's context takes FAKE_GPU_CONTEXT_MIB (default 8).
 * Faults on request, by job (the kernels' seed): FAKE_GPU_CORRUPT_JOB=J flips a word before J's check,
 * FAKE_GPU_HANG_JOB=J never finishes J's fill. FAKE_GPU_PASS_MS=M makes each compute pass take at least M ms. */
#define _GNU_SOURCE
#include <cuda_runtime_api.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "mem_pattern.h"

#define EXPORT __attribute__((visibility("default")))

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static cudaError_t last_error = cudaSuccess;
static int context_state; /* 0 none, 1 created, -1 failed (out of memory) */
static uint64_t held_bytes; /* this process's, context included */

static uint64_t mib_env(const char *name, uint64_t fallback) {
  const char *text = getenv(name);
  return text && *text ? strtoull(text, NULL, 10) : fallback;
}

static uint64_t capacity(void) { return mib_env("FAKE_GPU_TOTAL_MIB", 1024) << 20; }

static const char *gpu_dir(void) {
  const char *dir = getenv("FAKE_GPU_DIR");
  return dir && *dir ? dir : "/tmp/fake-gpu";
}

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static cudaError_t record(cudaError_t status) {
  if (status != cudaSuccess)
    last_error = status;
  return status;
}

/* ---- the shared memory accounting: DIR/<pid> holds that process's bytes */

static int lock_dir(void) {
  char path[512];
  snprintf(path, sizeof path, "%s/lock", gpu_dir());
  int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd >= 0)
    flock(fd, LOCK_EX);
  return fd;
}

static void unlock_dir(int fd) {
  if (fd >= 0) {
    flock(fd, LOCK_UN);
    close(fd);
  }
}

static uint64_t used_by_others(void) {
  uint64_t used = 0;
  DIR *dir = opendir(gpu_dir());
  if (!dir)
    return 0;
  struct dirent *entry;
  while ((entry = readdir(dir))) {
    char *end;
    long pid = strtol(entry->d_name, &end, 10);
    if (*end || pid <= 0 || pid == getpid())
      continue;
    char path[512];
    snprintf(path, sizeof path, "%s/%s", gpu_dir(), entry->d_name);
    if (kill((pid_t)pid, 0) != 0 && errno == ESRCH) {
      unlink(path);
      continue;
    }
    FILE *file = fopen(path, "r");
    unsigned long long bytes = 0;
    if (file) {
      if (fscanf(file, "%llu", &bytes) != 1)
        bytes = 0;
      fclose(file);
    }
    used += bytes;
  }
  closedir(dir);
  return used;
}

static void write_held(void) {
  char path[512], temporary[520];
  snprintf(path, sizeof path, "%s/%d", gpu_dir(), (int)getpid());
  snprintf(temporary, sizeof temporary, "%s.tmp", path);
  FILE *file = fopen(temporary, "w");
  if (!file)
    return;
  fprintf(file, "%llu\n", (unsigned long long)held_bytes);
  fclose(file);
  rename(temporary, path);
}

/* Takes `bytes` of the fake GPU if they fit; 0 on success. */
static int take(uint64_t bytes) {
  int fd = lock_dir();
  int fits = used_by_others() + held_bytes + bytes <= capacity();
  if (fits) {
    held_bytes += bytes;
    write_held();
  }
  unlock_dir(fd);
  return fits ? 0 : -1;
}

static void give(uint64_t bytes) {
  int fd = lock_dir();
  held_bytes -= bytes < held_bytes ? bytes : held_bytes;
  write_held();
  unlock_dir(fd);
}

/* The context: created at the first call that needs one, it takes memory too. */
static cudaError_t context(void) {
  if (context_state == 0)
    context_state = take(mib_env("FAKE_GPU_CONTEXT_MIB", 8) << 20) == 0 ? 1 : -1;
  return context_state == 1 ? cudaSuccess : cudaErrorMemoryAllocation;
}

/* ---- allocations: host memory, remembered with their sizes */

typedef struct allocation {
  void *pointer;
  uint64_t bytes;
  struct allocation *next;
} allocation;
static allocation *allocations;

EXPORT cudaError_t cudaMalloc(void **pointer, size_t bytes) {
  pthread_mutex_lock(&lock);
  cudaError_t status = context();
  if (status == cudaSuccess && (!pointer || bytes == 0))
    status = pointer ? cudaSuccess : cudaErrorInvalidValue;
  else if (status == cudaSuccess) {
    void *memory = NULL;
    if (take(bytes) != 0 || posix_memalign(&memory, 256, bytes) != 0) {
      status = cudaErrorMemoryAllocation;
    } else {
      allocation *entry = malloc(sizeof *entry);
      *entry = (allocation){memory, bytes, allocations};
      allocations = entry;
      *pointer = memory;
    }
  }
  pthread_mutex_unlock(&lock);
  return record(status);
}

EXPORT cudaError_t cudaFree(void *pointer) {
  pthread_mutex_lock(&lock);
  cudaError_t status = context();
  if (status == cudaSuccess && pointer) {
    status = cudaErrorInvalidValue;
    for (allocation **link = &allocations; *link; link = &(*link)->next) {
      if ((*link)->pointer == pointer) {
        allocation *entry = *link;
        *link = entry->next;
        give(entry->bytes);
        free(entry->pointer);
        free(entry);
        status = cudaSuccess;
        break;
      }
    }
  }
  pthread_mutex_unlock(&lock);
  return record(status);
}

EXPORT cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total_bytes) {
  pthread_mutex_lock(&lock);
  cudaError_t status = context();
  int fd = lock_dir();
  uint64_t used = used_by_others() + held_bytes;
  unlock_dir(fd);
  pthread_mutex_unlock(&lock);
  *total_bytes = capacity();
  *free_bytes = used < capacity() ? capacity() - used : 0;
  return record(status);
}

/* The rest of the allocation family: not used by mem_pressure; present because the runtime's wrappers name them. */
EXPORT cudaError_t cudaMallocAsync(void **pointer, size_t bytes, cudaStream_t stream) {
  (void)stream;
  return cudaMalloc(pointer, bytes);
}
EXPORT cudaError_t cudaFreeAsync(void *pointer, cudaStream_t stream) {
  (void)stream;
  return cudaFree(pointer);
}
EXPORT cudaError_t cudaMallocPitch(void **pointer, size_t *pitch, size_t width, size_t height) {
  *pitch = (width + 511) & ~(size_t)511;
  return cudaMalloc(pointer, *pitch * height);
}
EXPORT cudaError_t cudaMalloc3D(struct cudaPitchedPtr *pitched, struct cudaExtent extent) {
  size_t pitch = (extent.width + 511) & ~(size_t)511;
  pitched->pitch = pitch;
  pitched->xsize = extent.width;
  pitched->ysize = extent.height;
  return cudaMalloc(&pitched->ptr, pitch * extent.height * extent.depth);
}
EXPORT cudaError_t cudaMallocManaged(void **pointer, size_t bytes, unsigned int flags) {
  (void)flags;
  return cudaMalloc(pointer, bytes);
}
EXPORT cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t function, void *data) {
  (void)stream;
  function(data);
  return cudaSuccess;
}
EXPORT cudaError_t cudaStreamIsCapturing(cudaStream_t stream, enum cudaStreamCaptureStatus *status) {
  (void)stream;
  *status = cudaStreamCaptureStatusNone;
  return cudaSuccess;
}

/* ---- device queries */

EXPORT cudaError_t cudaSetDevice(int device) {
  if (device != 0)
    return record(cudaErrorInvalidDevice);
  pthread_mutex_lock(&lock);
  cudaError_t status = context();
  pthread_mutex_unlock(&lock);
  return record(status);
}
EXPORT cudaError_t cudaGetDevice(int *device) {
  *device = 0;
  return cudaSuccess;
}
EXPORT cudaError_t cudaDeviceGetAttribute(int *value, enum cudaDeviceAttr attribute, int device) {
  (void)device;
  *value = attribute == cudaDevAttrMultiProcessorCount ? 4 : 0;
  return cudaSuccess;
}
EXPORT cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *properties, int device) {
  if (device != 0)
    return record(cudaErrorInvalidDevice);
  memset(properties, 0, sizeof *properties);
  snprintf(properties->name, sizeof properties->name, "Fake GPU (bench/memory/fake_cudart.c)");
  for (int byte = 0; byte < 16; byte++)
    properties->uuid.bytes[byte] = (char)(0xf0 + byte);
  properties->totalGlobalMem = capacity();
  properties->multiProcessorCount = 4;
  return cudaSuccess;
}
EXPORT cudaError_t cudaDeviceSynchronize(void) { return cudaSuccess; }
EXPORT cudaError_t cudaGetLastError(void) {
  cudaError_t status = last_error;
  last_error = cudaSuccess;
  return status;
}
EXPORT cudaError_t cudaPeekAtLastError(void) { return last_error; }
EXPORT const char *cudaGetErrorName(cudaError_t status) {
  switch (status) {
  case cudaSuccess: return "cudaSuccess";
  case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
  case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
  case cudaErrorInvalidDevice: return "cudaErrorInvalidDevice";
  case cudaErrorInvalidDeviceFunction: return "cudaErrorInvalidDeviceFunction";
  default: return "cudaErrorUnknown";
  }
}
EXPORT const char *cudaGetErrorString(cudaError_t status) {
  return status == cudaErrorMemoryAllocation ? "out of memory" : status == cudaSuccess ? "no error" : "fake error";
}

/* ---- events: host timestamps (kernels run synchronously) */

EXPORT cudaError_t cudaEventCreate(cudaEvent_t *event) {
  *event = (cudaEvent_t)calloc(1, sizeof(double));
  return cudaSuccess;
}
EXPORT cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  (void)stream;
  *(double *)event = now_ms();
  return cudaSuccess;
}
EXPORT cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  (void)event;
  return cudaSuccess;
}
EXPORT cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end) {
  *ms = (float)(*(double *)end - *(double *)start);
  return cudaSuccess;
}

/* ---- copies: every pointer is a host pointer; a __device__ variable is its host shadow */

EXPORT cudaError_t cudaMemcpy(void *destination, const void *source, size_t bytes, enum cudaMemcpyKind kind) {
  (void)kind;
  memcpy(destination, source, bytes);
  return cudaSuccess;
}
EXPORT cudaError_t cudaMemcpyToSymbol(const void *symbol, const void *source, size_t bytes, size_t offset,
                                      enum cudaMemcpyKind kind) {
  (void)kind;
  memcpy((char *)symbol + offset, source, bytes);
  return cudaSuccess;
}
EXPORT cudaError_t cudaMemcpyFromSymbol(void *destination, const void *symbol, size_t bytes, size_t offset,
                                        enum cudaMemcpyKind kind) {
  (void)kind;
  memcpy(destination, (const char *)symbol + offset, bytes);
  return cudaSuccess;
}

/* ---- registration and launches, as clang's CUDA host code calls them */

#define MAX_FUNCTIONS 64
static struct {
  const void *host;
  const char *name;
} functions[MAX_FUNCTIONS];
static int function_count;
static unsigned long long *wrong_words; /* mem_pressure.cu's __device__ counter (its host shadow) */

EXPORT void **__cudaRegisterFatBinary(void *fatbin) {
  static void *handle;
  handle = fatbin;
  return &handle;
}
EXPORT void __cudaRegisterFatBinaryEnd(void **handle) { (void)handle; }
EXPORT void __cudaUnregisterFatBinary(void **handle) { (void)handle; }
EXPORT void __cudaRegisterFunction(void **handle, const char *host, char *device, const char *name, int limit,
                                   void *tid, void *bid, void *block, void *grid, int *warp) {
  (void)handle, (void)device, (void)limit, (void)tid, (void)bid, (void)block, (void)grid, (void)warp;
  if (function_count < MAX_FUNCTIONS)
    functions[function_count].host = host, functions[function_count++].name = name;
}
EXPORT void __cudaRegisterVar(void **handle, char *host, char *device, const char *name, int external, size_t size,
                              int constant, int global) {
  (void)handle, (void)device, (void)external, (void)size, (void)constant, (void)global;
  if (strcmp(name, "wrong_words") == 0)
    wrong_words = (unsigned long long *)host;
}
static dim3 pushed_grid, pushed_block;
static size_t pushed_shared;
EXPORT unsigned __cudaPushCallConfiguration(dim3 grid, dim3 block, size_t shared, void *stream) {
  (void)stream;
  pushed_grid = grid, pushed_block = block, pushed_shared = shared;
  return 0;
}
EXPORT cudaError_t __cudaPopCallConfiguration(dim3 *grid, dim3 *block, size_t *shared, void *stream) {
  (void)stream;
  *grid = pushed_grid, *block = pushed_block, *shared = pushed_shared;
  return cudaSuccess;
}

static long env_job(const char *name) {
  const char *text = getenv(name);
  return text && *text ? strtol(text, NULL, 10) : -1;
}

EXPORT cudaError_t cudaLaunchKernel(const void *function, dim3 grid, dim3 block, void **args, size_t shared,
                                    cudaStream_t stream) {
  (void)grid, (void)block, (void)shared, (void)stream;
  const char *name = NULL;
  for (int index = 0; index < function_count; index++)
    if (functions[index].host == function)
      name = functions[index].name;
  if (!name)
    return record(cudaErrorInvalidDeviceFunction);
  if (strstr(name, "fill_kernel")) {
    uint32_t *data = *(uint32_t **)args[0];
    size_t words = *(size_t *)args[1];
    uint64_t base = *(uint64_t *)args[2];
    uint32_t seed = *(uint32_t *)args[3];
    if (words && (long)seed == env_job("FAKE_GPU_HANG_JOB"))
      for (;;)
        pause();
    for (size_t i = 0; i < words; i++)
      data[i] = mem_pattern(base + i, seed);
  } else if (strstr(name, "step_kernel")) {
    uint32_t *data = *(uint32_t **)args[0];
    size_t words = *(size_t *)args[1];
    uint32_t a = *(uint32_t *)args[2], b = *(uint32_t *)args[3];
    double began = now_ms();
    for (size_t i = 0; i < words; i++)
      data[i] = a * data[i] + b;
    double floor_ms = (double)mib_env("FAKE_GPU_PASS_MS", 0);
    if (words && now_ms() - began < floor_ms) {
      double left = floor_ms - (now_ms() - began);
      struct timespec pause_for = {(time_t)(left / 1e3), (long)((left - (time_t)(left / 1e3) * 1e3) * 1e6)};
      nanosleep(&pause_for, NULL);
    }
  } else if (strstr(name, "check_kernel")) {
    uint32_t *data = *(uint32_t **)args[0];
    size_t words = *(size_t *)args[1];
    uint64_t base = *(uint64_t *)args[2];
    uint32_t seed = *(uint32_t *)args[3], a = *(uint32_t *)args[4], b = *(uint32_t *)args[5];
    if (words && (long)seed == env_job("FAKE_GPU_CORRUPT_JOB"))
      data[words / 2] ^= 1;
    unsigned long long wrong = 0;
    for (size_t i = 0; i < words; i++)
      wrong += data[i] != a * mem_pattern(base + i, seed) + b;
    if (wrong_words)
      __atomic_add_fetch(wrong_words, wrong, __ATOMIC_RELAXED);
  } else {
    return record(cudaErrorInvalidDeviceFunction);
  }
  return cudaSuccess;
}
