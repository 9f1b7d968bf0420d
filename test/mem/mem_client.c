/* mem_client.c: an "unmodified" CUDA program for memory admission's tests (test/lit/mem/). It is linked with
 * the simulated GPU (test/fake-gpu/libfakecuda.so), never with preempt: admission reaches it only through
 * LD_PRELOAD=libpreempt_mem.so, as it would reach a real application. Every line it prints is flushed at once,
 * so that a driver reading its output sees each step as it happens; times are CLOCK_MONOTONIC nanoseconds.
 *
 *   mem_client hold NAME BYTES
 *       cudaMalloc(BYTES): "asking NAME BYTES", then "granted NAME T" or "oom NAME T <error>" (exit 3).
 *       Then waits for a line "free" on stdin: "freeing NAME T", cudaFree, "freed NAME T"; after it, each line
 *       "info" is answered as info does, with this process's view; exits 0 at the end of input ("exit NAME").
 *       At end of input without "free": exits holding the memory ("eof NAME").
 *   mem_client loop NAME ITERATIONS MIN_BYTES MAX_BYTES MAX_HOLD_MS SEED
 *       ITERATIONS times: cudaMalloc of a random size in [MIN, MAX] ("want NAME I BYTES"), holds it a random
 *       0..MAX_HOLD_MS ms ("granted NAME I T"), cudaFree ("freed NAME I"). A failed allocation prints
 *       "oom NAME I <error>" and counts. Ends with "done NAME iterations=N oom=K", exit 0.
 *   mem_client steps STEP...
 *       Each STEP "+BYTES" (cudaMalloc), "-" (cudaFree of the latest allocation held) or "reset" (cudaDeviceReset,
 *       which frees them all), then one line
 *       "step STEP held=... ahead=... reserved=... ledger=..." from preempt_mem_get_info.
 *   mem_client info [--loop]
 *       preempt_mem_get_info (found with dlsym: defined only when libpreempt_mem.so is preloaded), one line
 *       "info key=value ..." with every field; --loop: one such line per line read from stdin.
 *   mem_client gpu
 *       The simulated GPU itself: "gpu capacity=... used=... allocations=... failures=... ...".
 *   mem_client apis
 *       Each allocation and release API of the CUDA runtime and driver once, the per-thread default stream's
 *       spellings included (per_thread_stream.c), then an allocation larger than the GPU and a free of an unknown
 *       pointer, printing what the ledger reserves after each call; and a physical allocation (cuMemCreate)
 *       made while a cudaMalloc allocation is live, whose handle may equal that allocation's address
 *       (FAKE_GPU_ALIAS_HANDLES=1), released before it.
 *   BYTES take K, M, G suffixes (powers of 1024). */
#define _GNU_SOURCE
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <stdarg.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "preempt/byte_count.h"

#include "per_thread_stream.h"
#include "preempt.h"

static uint64_t now_ns(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
}

static void say(const char *format, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *format, ...) {
  va_list arguments;
  va_start(arguments, format);
  vprintf(format, arguments);
  va_end(arguments);
  putchar('\n');
  fflush(stdout);
}

/* Defined only when libpreempt_mem.so is preloaded. */
static preempt_status (*find_get_info(void))(preempt_mem_info *) {
  return (preempt_status(*)(preempt_mem_info *))dlsym(RTLD_DEFAULT, "preempt_mem_get_info");
}

/* The ledger as preempt_mem_get_info reports it to this process: one "info key=value ..." line. */
static preempt_status say_info(preempt_status (*get_info)(preempt_mem_info *)) {
  preempt_mem_info value;
  preempt_status status = get_info(&value);
  if (status != PREEMPT_OK) {
    say("info failed: status %d", (int)status);
    return status;
  }
  say("info capacity=%llu external=%llu reserved=%llu free=%llu held=%llu budget=%llu budget_used=%llu "
      "dead_clients=%llu clients=%u waiting=%u reinitializations=%u lock_owner_deaths=%u lost_wakeups=%u policy=%s "
      "ledger=%s",
      (unsigned long long)value.capacity_bytes, (unsigned long long)value.external_bytes,
      (unsigned long long)value.reserved_bytes, (unsigned long long)value.free_bytes,
      (unsigned long long)value.held_bytes, (unsigned long long)value.budget_bytes,
      (unsigned long long)value.budget_used_bytes, (unsigned long long)value.dead_clients, value.clients,
      value.waiting, value.reinitializations, value.lock_owner_deaths, value.lost_wakeups, value.policy,
      value.ledger);
  return PREEMPT_OK;
}

static int usage(void) {
  fprintf(stderr, "usage: mem_client hold NAME BYTES | loop NAME ITERATIONS MIN MAX MAX_HOLD_MS SEED | "
                  "steps (+BYTES | -)... | info [--loop] | gpu | apis\n");
  return 2;
}

static int hold(const char *name, uint64_t bytes) {
  void *pointer = NULL;
  say("asking %s %llu", name, (unsigned long long)bytes);
  cudaError_t status = cudaMalloc(&pointer, bytes);
  if (status != cudaSuccess) {
    say("oom %s %llu %s", name, (unsigned long long)now_ns(), cudaGetErrorString(status));
    return 3;
  }
  say("granted %s %llu", name, (unsigned long long)now_ns());
  char line[256];
  while (fgets(line, sizeof line, stdin)) {
    if (strcmp(line, "free\n") != 0 && strcmp(line, "free") != 0)
      continue;
    say("freeing %s %llu", name, (unsigned long long)now_ns());
    status = cudaFree(pointer);
    if (status != cudaSuccess) {
      say("free failed %s %s", name, cudaGetErrorString(status));
      return 4;
    }
    say("freed %s %llu", name, (unsigned long long)now_ns());
    /* Still attached to the ledger: its exit (which also wakes waiters) comes only at end of input. preemptd
     * answers no free (MEM_RELEASE), so "freed" does not say the daemon has it yet; this process's own view does,
     * its query following the release on the same connection. */
    preempt_status (*get_info)(preempt_mem_info *) = find_get_info();
    while (fgets(line, sizeof line, stdin))
      if (strcmp(line, "info\n") == 0 || strcmp(line, "info") == 0) {
        if (get_info)
          (void)say_info(get_info);
        else
          say("info unavailable: preempt_mem_get_info not found (libpreempt_mem.so not preloaded)");
      }
    say("exit %s", name);
    return 0;
  }
  say("eof %s", name);
  return 0;
}

/* xorshift64*: the driver passes the seed, so a failing run can be replayed. */
static uint64_t next_random(uint64_t *state) {
  *state ^= *state >> 12;
  *state ^= *state << 25;
  *state ^= *state >> 27;
  return *state * 0x2545f4914f6cdd1dull;
}

/* steps: "+BYTES" allocates, "-" frees the latest allocation still held; after each, what the process holds, how
 * much of it was admitted ahead, and what the ledger has reserved (lib/mem_ahead.c). */
static int steps(int count, char **step) {
  preempt_status (*get_info)(preempt_mem_info *) = find_get_info();
  void *held[64];
  int depth = 0;
  for (int index = 0; index < count; index++) {
    uint64_t bytes = 0;
    if (step[index][0] == '+' && preempt_parse_byte_count(step[index] + 1, &bytes) == 0 && depth < 64) {
      cudaError_t status = cudaMalloc(&held[depth], bytes);
      if (status != cudaSuccess) {
        say("oom %s %s", step[index], cudaGetErrorString(status));
        return 3;
      }
      depth++;
    } else if (strcmp(step[index], "reset") == 0) {
      if (cudaDeviceReset() != cudaSuccess) {
        say("reset failed");
        return 4;
      }
      depth = 0; /* every allocation went with the reset */
    } else if (strcmp(step[index], "-") == 0 && depth > 0) {
      if (cudaFree(held[--depth]) != cudaSuccess) {
        say("free failed %s", step[index]);
        return 4;
      }
    } else {
      return usage();
    }
    preempt_mem_info info;
    if (!get_info || get_info(&info) != PREEMPT_OK) {
      say("info failed after %s", step[index]);
      return 5;
    }
    say("step %s held=%llu ahead=%llu reserved=%llu ledger=%s", step[index], (unsigned long long)info.held_bytes,
        (unsigned long long)info.ahead_bytes, (unsigned long long)info.reserved_bytes, info.ledger);
  }
  return 0;
}

static int loop(const char *name, long iterations, uint64_t min_bytes, uint64_t max_bytes, long max_hold_ms,
                uint64_t seed) {
  uint64_t state = seed ? seed : 0x9e3779b97f4a7c15ull;
  long ooms = 0;
  for (long iteration = 0; iteration < iterations; iteration++) {
    uint64_t bytes = min_bytes + next_random(&state) % (max_bytes - min_bytes + 1);
    long hold_ms = max_hold_ms > 0 ? (long)(next_random(&state) % (uint64_t)(max_hold_ms + 1)) : 0;
    say("want %s %ld %llu", name, iteration, (unsigned long long)bytes);
    void *pointer = NULL;
    cudaError_t status = cudaMalloc(&pointer, bytes);
    if (status != cudaSuccess) {
      say("oom %s %ld %s", name, iteration, cudaGetErrorString(status));
      ooms++;
      continue;
    }
    say("granted %s %ld %llu", name, iteration, (unsigned long long)now_ns());
    struct timespec pause = {.tv_sec = hold_ms / 1000, .tv_nsec = (hold_ms % 1000) * 1000000L};
    nanosleep(&pause, NULL);
    status = cudaFree(pointer);
    if (status != cudaSuccess) {
      say("free failed %s %ld %s", name, iteration, cudaGetErrorString(status));
      return 4;
    }
    say("freed %s %ld", name, iteration);
  }
  say("done %s iterations=%ld oom=%ld", name, iterations, ooms);
  return 0;
}

static int info(int repeat) {
  preempt_status (*get_info)(preempt_mem_info *) = find_get_info();
  if (!get_info) {
    say("info unavailable: preempt_mem_get_info not found (libpreempt_mem.so not preloaded)");
    return 2;
  }
  char line[256];
  do {
    if (say_info(get_info) != PREEMPT_OK && !repeat)
      return 1;
  } while (repeat && fgets(line, sizeof line, stdin));
  return 0;
}

static const char *driver_error(CUresult status) {
  const char *text = NULL;
  return cuGetErrorString(status, &text) == CUDA_SUCCESS && text ? text : "unknown driver error";
}

/* Each allocation API once, with what the ledger then holds for this process. */
static int apis(void) {
  preempt_status (*get_info)(preempt_mem_info *) = find_get_info();
  if (!get_info) {
    say("apis: preempt_mem_get_info not found (libpreempt_mem.so not preloaded)");
    return 2;
  }
  preempt_mem_info info;
#define SHOW_AS(what, text)                                                                                           \
  do {                                                                                                                \
    const char *text_ = (text);                                                                                       \
    if (get_info(&info) != PREEMPT_OK) {                                                                              \
      say("%s: %s, and preempt_mem_get_info failed", what, text_);                                                    \
      return 1;                                                                                                       \
    }                                                                                                                 \
    say("%s: %s reserved=%llu held=%llu", what, text_, (unsigned long long)info.reserved_bytes,                       \
        (unsigned long long)info.held_bytes);                                                                         \
  } while (0)
#define SHOW(what, status) SHOW_AS(what, cudaGetErrorString(status))
#define SHOW_DRIVER(what, status) SHOW_AS(what, driver_error(status))
  void *pointer = NULL;
  SHOW("cudaMalloc 1M", cudaMalloc(&pointer, 1 << 20));
  SHOW("cudaFree", cudaFree(pointer));
  SHOW("cudaMallocAsync 2M", cudaMallocAsync(&pointer, 2 << 20, 0));
  SHOW("cudaFreeAsync", cudaFreeAsync(pointer, 0));
  SHOW("cudaMallocAsync_ptsz 2M", per_thread_malloc_async(&pointer, 2 << 20));
  SHOW("cudaFreeAsync_ptsz", per_thread_free_async(pointer));
  cudaMemPool_t pool = NULL;
  SHOW("cudaDeviceGetDefaultMemPool", cudaDeviceGetDefaultMemPool(&pool, 0));
  SHOW("cudaMallocFromPoolAsync 3M", cudaMallocFromPoolAsync(&pointer, 3 << 20, pool, 0));
  SHOW("cudaFreeAsync", cudaFreeAsync(pointer, 0));
  SHOW("cudaMallocFromPoolAsync_ptsz 3M", per_thread_malloc_from_pool_async(&pointer, 3 << 20, pool));
  SHOW("cudaFreeAsync_ptsz", per_thread_free_async(pointer));
  SHOW("cudaMallocManaged 3M", cudaMallocManaged(&pointer, 3 << 20, cudaMemAttachGlobal));
  SHOW("cudaFree", cudaFree(pointer));
  size_t pitch = 0;
  SHOW("cudaMallocPitch 1100x10", cudaMallocPitch(&pointer, &pitch, 1100, 10));
  say("pitch %zu", pitch);
  SHOW("cudaFree", cudaFree(pointer));
  struct cudaPitchedPtr pitched;
  SHOW("cudaMalloc3D 1100x10x2", cudaMalloc3D(&pitched, (struct cudaExtent){.width = 1100, .height = 10, .depth = 2}));
  say("pitch %zu", pitched.pitch);
  SHOW("cudaFree", cudaFree(pitched.ptr));

  CUdeviceptr device_pointer = 0;
  SHOW_DRIVER("cuMemAlloc_v2 4M", cuMemAlloc(&device_pointer, 4 << 20));
  SHOW_DRIVER("cuMemFree_v2", cuMemFree(device_pointer));
  SHOW_DRIVER("cuMemAllocPitch_v2 1100x10", cuMemAllocPitch(&device_pointer, &pitch, 1100, 10, 4));
  say("pitch %zu", pitch);
  SHOW_DRIVER("cuMemFree_v2", cuMemFree(device_pointer));
  SHOW_DRIVER("cuMemAllocManaged 5M", cuMemAllocManaged(&device_pointer, 5 << 20, CU_MEM_ATTACH_GLOBAL));
  SHOW_DRIVER("cuMemFree_v2", cuMemFree(device_pointer));
  SHOW_DRIVER("cuMemAllocAsync 6M", cuMemAllocAsync(&device_pointer, 6 << 20, 0));
  SHOW_DRIVER("cuMemFreeAsync", cuMemFreeAsync(device_pointer, 0));
  SHOW_DRIVER("cuMemAllocAsync_ptsz 6M", per_thread_mem_alloc_async(&device_pointer, 6 << 20));
  SHOW_DRIVER("cuMemFreeAsync_ptsz", per_thread_mem_free_async(device_pointer));
  CUmemoryPool driver_pool = NULL;
  SHOW_DRIVER("cuDeviceGetDefaultMemPool", cuDeviceGetDefaultMemPool(&driver_pool, 0));
  SHOW_DRIVER("cuMemAllocFromPoolAsync 7M", cuMemAllocFromPoolAsync(&device_pointer, 7 << 20, driver_pool, 0));
  SHOW_DRIVER("cuMemFreeAsync", cuMemFreeAsync(device_pointer, 0));
  SHOW_DRIVER("cuMemAllocFromPoolAsync_ptsz 7M",
              per_thread_mem_alloc_from_pool_async(&device_pointer, 7 << 20, driver_pool));
  SHOW_DRIVER("cuMemFreeAsync_ptsz", per_thread_mem_free_async(device_pointer));
  CUmemAllocationProp properties = {.type = CU_MEM_ALLOCATION_TYPE_PINNED,
                                    .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0}};
  CUmemGenericAllocationHandle handle = 0;
  SHOW_DRIVER("cuMemCreate 8M", cuMemCreate(&handle, 8 << 20, &properties, 0));
  SHOW_DRIVER("cuMemRelease", cuMemRelease(handle));

  /* A handle with the value of a live allocation's address must still be told apart from it. */
  SHOW("cudaMalloc 1M", cudaMalloc(&pointer, 1 << 20));
  SHOW_DRIVER("cuMemCreate 2M", cuMemCreate(&handle, 2 << 20, &properties, 0));
  say("handle equals the live allocation's address: %s", handle == (CUmemGenericAllocationHandle)(uintptr_t)pointer
                                                             ? "yes" : "no");
  SHOW_DRIVER("cuMemRelease", cuMemRelease(handle));
  SHOW("cudaFree", cudaFree(pointer));

  pointer = NULL;
  uint64_t start = now_ns();
  SHOW("cudaMalloc 200M", cudaMalloc(&pointer, 200u << 20));
  say("failed in %s", now_ns() - start < 1000000000ull ? "under 1 s" : "1 s or more");
  SHOW("cudaFree unknown pointer", cudaFree((void *)(uintptr_t)0x1234000));
#undef SHOW_DRIVER
#undef SHOW
#undef SHOW_AS
  return 0;
}

typedef struct fake_gpu_stats {
  uint64_t capacity, used, allocations, failures, reclaimed;
  uint32_t live_processes;
} fake_gpu_stats;

static int gpu(void) {
  int (*get_stats)(fake_gpu_stats *) = (int (*)(fake_gpu_stats *))dlsym(RTLD_DEFAULT, "fake_gpu_get_stats");
  size_t free_bytes = 0, total_bytes = 0;
  cudaError_t status = cudaMemGetInfo(&free_bytes, &total_bytes);
  fake_gpu_stats stats;
  if (status != cudaSuccess || !get_stats || get_stats(&stats) != 0) {
    say("gpu unavailable");
    return 1;
  }
  say("gpu capacity=%llu free=%zu used=%llu allocations=%llu failures=%llu reclaimed=%llu processes=%u",
      (unsigned long long)stats.capacity, free_bytes, (unsigned long long)stats.used,
      (unsigned long long)stats.allocations, (unsigned long long)stats.failures,
      (unsigned long long)stats.reclaimed, stats.live_processes);
  return 0;
}

int main(int argc, char **argv) {
  if (argc >= 4 && strcmp(argv[1], "hold") == 0) {
    uint64_t bytes;
    if (argc != 4 || preempt_parse_byte_count(argv[3], &bytes) != 0)
      return usage();
    return hold(argv[2], bytes);
  }
  if (argc >= 2 && strcmp(argv[1], "loop") == 0) {
    uint64_t min_bytes, max_bytes, seed;
    if (argc != 8 || preempt_parse_byte_count(argv[4], &min_bytes) != 0 ||
        preempt_parse_byte_count(argv[5], &max_bytes) != 0 || min_bytes > max_bytes ||
        preempt_parse_byte_count(argv[7], &seed) != 0)
      return usage();
    return loop(argv[2], atol(argv[3]), min_bytes, max_bytes, atol(argv[6]), seed);
  }
  if (argc >= 3 && strcmp(argv[1], "steps") == 0)
    return steps(argc - 2, argv + 2);
  if (argc >= 2 && strcmp(argv[1], "info") == 0)
    return info(argc == 3 && strcmp(argv[2], "--loop") == 0);
  if (argc == 2 && strcmp(argv[1], "gpu") == 0)
    return gpu();
  if (argc == 2 && strcmp(argv[1], "apis") == 0)
    return apis();
  return usage();
}
