/* fake_cuda.c: libfakecuda.so, a simulated GPU behind the CUDA runtime API, for memory admission's tests
 * (test/lit/mem/). No GPU is needed: the "device memory" is a number, FAKE_GPU_MEMORY bytes (K/M/G/T
 * suffixes, powers of 1024; default 1G), shared by every process that names the same FAKE_GPU_NAME (a POSIX
 * shared-memory name, default /fake-gpu-<uid>), so that, as on a real GPU, one process's allocation makes
 * another's fail with cudaErrorMemoryAllocation.
 *
 * What each process has allocated is kept in its own slot of the shared segment. A slot belongs to the
 * process that holds an open-file-description lock on the slot's byte of the segment file; the kernel drops
 * that lock when the process's last descriptor closes, which a kill -9 does too, before the process even
 * becomes a zombie, just as a real driver frees a dead process's memory when its device files close. A slot
 * whose byte nobody holds counts for nothing and is free for the next process. (kill(pid, 0) would see a
 * killed but not yet reaped child as alive.) Every update of a slot is one atomic store, and allocations are
 * serialized across processes by flock on the segment file, which a dead holder drops too: a kill at any
 * point leaves the state consistent.
 *
 * Order at death: a dying process's files are released one after the other (and on Linux >= 5.9, whose
 * deferred file releases run last-queued first, the descriptor closed last is released first), with a
 * possible reschedule in between. The segment's descriptor is moved high (>= 900) so that it is closed last
 * and so released first: the simulated GPU gives a dead process's memory back before the admission ledger,
 * whose liveness byte lives in a file opened later at a lower descriptor, can see the process dead. Tests
 * then may demand that the GPU never holds memory the ledger does not account for. FAKE_GPU_RELEASE_DELAY_MS
 * simulates a driver that is slow to free instead: a dead process's memory stays in use that long after the
 * first look that finds it dead.
 *
 * Pointers returned are unique within the process and are never dereferenced; FAKE_GPU_UUID (32 hex digits)
 * sets the UUID cudaGetDeviceProperties reports, which names the admission ledger; FAKE_GPU_PITCH the row
 * alignment of pitched allocations. Stream-ordered calls act at once, and host functions run at once. */
#define _GNU_SOURCE
#include <cuda_runtime_api.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "preempt/byte_count.h"

#define FAKE_MAGIC 0x55504746u /* "FGPU" */
#define FAKE_VERSION 2u
#define FAKE_SLOTS 512
#define FAKE_SLOT_BYTE_BASE (1ull << 20) /* slot i's liveness byte: above the segment's own bytes */
#define EXPORTED __attribute__((visibility("default")))

typedef struct fake_slot {
  uint64_t used;    /* bytes this slot's process holds; meaningful only while its byte is locked */
  uint32_t pid;     /* for messages */
  uint32_t reserved0;
  uint64_t dead_since_ns; /* FAKE_GPU_RELEASE_DELAY_MS: when its process was first seen dead (0: not yet) */
} fake_slot;

typedef struct fake_shared {
  uint32_t magic, version;
  uint64_t capacity;
  uint64_t allocations; /* successful allocations, over the segment's life */
  uint64_t failures;    /* allocations refused for lack of memory */
  uint64_t reclaimed;   /* bytes of dead processes dropped */
  fake_slot slots[FAKE_SLOTS];
} fake_shared;

typedef struct fake_allocation {
  uint64_t address, bytes;
} fake_allocation;

static struct {
  pthread_mutex_t lock; /* flock excludes other processes only: this excludes this process's threads */
  int ready;            /* 1: attached; -1: failed (said) */
  int fd;
  fake_shared *shared;
  uint32_t slot;
  uint64_t next_address;
  fake_allocation *table;
  size_t count, capacity;
} fake = {.lock = PTHREAD_MUTEX_INITIALIZER, .fd = -1};

static __thread cudaError_t last_error = cudaSuccess;

static uint64_t now_ns(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
}

/* FAKE_GPU_RELEASE_DELAY_MS, in ns: how long a dead process's memory stays in use. */
static uint64_t release_delay_ns(void) {
  static int64_t delay = -1;
  if (delay < 0) {
    const char *configured = getenv("FAKE_GPU_RELEASE_DELAY_MS");
    delay = configured ? (int64_t)strtoull(configured, NULL, 10) * 1000000 : 0;
  }
  return (uint64_t)delay;
}

/* A dead process's slot: whether its memory is gone (1) or, with a release delay, still held (0). Caller holds
 * the flock. */
static int dead_slot_released(fake_shared *shared, fake_slot *slot) {
  uint64_t bytes = __atomic_load_n(&slot->used, __ATOMIC_SEQ_CST);
  if (bytes && release_delay_ns()) {
    uint64_t now = now_ns();
    if (!slot->dead_since_ns)
      slot->dead_since_ns = now;
    if (now - slot->dead_since_ns < release_delay_ns())
      return 0;
  }
  if (bytes && __atomic_compare_exchange_n(&slot->used, &bytes, 0, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
    __atomic_add_fetch(&shared->reclaimed, bytes, __ATOMIC_SEQ_CST);
  slot->dead_since_ns = 0;
  return 1;
}

static cudaError_t fail(cudaError_t error) {
  last_error = error;
  return error;
}

static int byte_lock(int fd, int command, uint64_t offset, short type, struct flock *result) {
  struct flock byte = {.l_type = type, .l_whence = SEEK_SET, .l_start = (off_t)offset, .l_len = 1};
  int status = fcntl(fd, command, &byte);
  if (result)
    *result = byte;
  return status;
}

/* Whether another process holds slot i (our own lock reads as free through our own descriptor). */
static int slot_alive(uint32_t index) {
  if (index == fake.slot)
    return 1;
  struct flock probe;
  if (byte_lock(fake.fd, F_OFD_GETLK, FAKE_SLOT_BYTE_BASE + index, F_WRLCK, &probe) != 0)
    return 1;
  return probe.l_type != F_UNLCK;
}

/* Attaches this process to the simulated GPU on first use. Caller holds fake.lock. */
static int attach(void) {
  if (fake.ready)
    return fake.ready > 0 ? 0 : -1;
  fake.ready = -1;
  char name[128];
  const char *configured = getenv("FAKE_GPU_NAME");
  if (configured && configured[0] == '/')
    snprintf(name, sizeof name, "%s", configured);
  else
    snprintf(name, sizeof name, "/fake-gpu-%u", (unsigned)geteuid());
  uint64_t capacity = 1ull << 30;
  const char *memory = getenv("FAKE_GPU_MEMORY");
  if (memory && *memory && (preempt_parse_byte_count(memory, &capacity) != 0 || capacity == 0)) {
    fprintf(stderr, "fakecuda: FAKE_GPU_MEMORY='%s' is not a byte count\n", memory);
    return -1;
  }
  int fd = shm_open(name, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) {
    fprintf(stderr, "fakecuda: shm_open %s: %s\n", name, strerror(errno));
    return -1;
  }
  int high = fcntl(fd, F_DUPFD_CLOEXEC, 900); /* closed last at death, so released first: see the top */
  if (high >= 0) {
    close(fd);
    fd = high;
  }
  if (flock(fd, LOCK_EX) != 0) {
    fprintf(stderr, "fakecuda: flock %s: %s\n", name, strerror(errno));
    close(fd);
    return -1;
  }
  struct stat status;
  if (fstat(fd, &status) != 0 || ((size_t)status.st_size < sizeof(fake_shared) && ftruncate(fd, sizeof(fake_shared)) != 0)) {
    fprintf(stderr, "fakecuda: sizing %s: %s\n", name, strerror(errno));
    close(fd);
    return -1;
  }
  fake_shared *shared = mmap(NULL, sizeof(fake_shared), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (shared == MAP_FAILED) {
    fprintf(stderr, "fakecuda: mmap %s: %s\n", name, strerror(errno));
    close(fd);
    return -1;
  }
  if (__atomic_load_n(&shared->magic, __ATOMIC_ACQUIRE) != FAKE_MAGIC) {
    /* New, or its creator died before finishing: (re)start it. Nobody can hold a slot of a segment whose
     * magic is not set, since slots are taken only after it is. */
    memset(shared, 0, sizeof *shared);
    shared->version = FAKE_VERSION;
    shared->capacity = capacity;
    __atomic_store_n(&shared->magic, FAKE_MAGIC, __ATOMIC_RELEASE);
  } else if (shared->version != FAKE_VERSION) {
    fprintf(stderr, "fakecuda: %s has version %u, expected %u\n", name, shared->version, FAKE_VERSION);
    munmap(shared, sizeof *shared);
    close(fd);
    return -1;
  }
  fake.fd = fd;
  fake.shared = shared;
  fake.slot = UINT32_MAX;
  for (uint32_t index = 0; index < FAKE_SLOTS; index++) {
    /* Succeeds only when no live process holds the byte; under the flock, no one else is taking one. */
    if (byte_lock(fd, F_OFD_SETLK, FAKE_SLOT_BYTE_BASE + index, F_WRLCK, NULL) != 0)
      continue;
    if (!dead_slot_released(shared, &shared->slots[index])) { /* a slow driver still holds its memory */
      byte_lock(fd, F_OFD_SETLK, FAKE_SLOT_BYTE_BASE + index, F_UNLCK, NULL);
      continue;
    }
    shared->slots[index].pid = (uint32_t)getpid();
    fake.slot = index;
    break;
  }
  flock(fd, LOCK_UN);
  if (fake.slot == UINT32_MAX) {
    fprintf(stderr, "fakecuda: %s: all %d process slots are taken\n", name, FAKE_SLOTS);
    munmap(shared, sizeof *shared);
    close(fd);
    fake.fd = -1;
    fake.shared = NULL;
    return -1;
  }
  fake.next_address = 0x7f0000000000ull + ((uint64_t)fake.slot << 32);
  fake.ready = 1;
  return 0;
}

/* Bytes held by live processes. Caller holds fake.lock and the flock. Dead processes' bytes are dropped. */
static uint64_t used_bytes(void) {
  uint64_t used = 0;
  for (uint32_t index = 0; index < FAKE_SLOTS; index++) {
    fake_slot *slot = &fake.shared->slots[index];
    uint64_t bytes = __atomic_load_n(&slot->used, __ATOMIC_SEQ_CST);
    if (!bytes)
      continue;
    if (slot_alive(index) || !dead_slot_released(fake.shared, slot))
      used += bytes;
  }
  return used;
}

static int lock_gpu(void) {
  pthread_mutex_lock(&fake.lock);
  if (attach() != 0) {
    pthread_mutex_unlock(&fake.lock);
    return -1;
  }
  while (flock(fake.fd, LOCK_EX) != 0 && errno == EINTR)
    ;
  return 0;
}

static void unlock_gpu(void) {
  flock(fake.fd, LOCK_UN);
  pthread_mutex_unlock(&fake.lock);
}

static cudaError_t allocate(void **pointer, uint64_t bytes) {
  if (!pointer)
    return fail(cudaErrorInvalidValue);
  if (bytes == 0) {
    *pointer = NULL;
    return cudaSuccess;
  }
  if (lock_gpu() != 0)
    return fail(cudaErrorNoDevice);
  uint64_t used = used_bytes();
  if (bytes > fake.shared->capacity || used > fake.shared->capacity - bytes) {
    __atomic_add_fetch(&fake.shared->failures, 1, __ATOMIC_SEQ_CST);
    unlock_gpu();
    return fail(cudaErrorMemoryAllocation);
  }
  if (fake.count == fake.capacity) {
    size_t capacity = fake.capacity ? fake.capacity * 2 : 64;
    fake_allocation *table = realloc(fake.table, capacity * sizeof *table);
    if (!table) {
      unlock_gpu();
      return fail(cudaErrorMemoryAllocation);
    }
    fake.table = table;
    fake.capacity = capacity;
  }
  uint64_t address = fake.next_address;
  fake.next_address += (bytes + 0xfffu) & ~0xfffull; /* distinct, page-aligned ranges */
  fake.table[fake.count++] = (fake_allocation){.address = address, .bytes = bytes};
  __atomic_add_fetch(&fake.shared->slots[fake.slot].used, bytes, __ATOMIC_SEQ_CST);
  __atomic_add_fetch(&fake.shared->allocations, 1, __ATOMIC_SEQ_CST);
  unlock_gpu();
  *pointer = (void *)(uintptr_t)address;
  return cudaSuccess;
}

static cudaError_t release(void *pointer) {
  if (!pointer)
    return cudaSuccess;
  if (lock_gpu() != 0)
    return fail(cudaErrorNoDevice);
  for (size_t index = 0; index < fake.count; index++) {
    if (fake.table[index].address != (uint64_t)(uintptr_t)pointer)
      continue;
    __atomic_sub_fetch(&fake.shared->slots[fake.slot].used, fake.table[index].bytes, __ATOMIC_SEQ_CST);
    fake.table[index] = fake.table[--fake.count];
    unlock_gpu();
    return cudaSuccess;
  }
  unlock_gpu();
  return fail(cudaErrorInvalidValue);
}

/* Row pitch: rounded up to FAKE_GPU_PITCH bytes (a power of two; default 512). */
static uint64_t pitch_of(uint64_t width) {
  static uint64_t alignment;
  if (!alignment) {
    const char *configured = getenv("FAKE_GPU_PITCH");
    uint64_t value = configured ? strtoull(configured, NULL, 10) : 0;
    alignment = value && !(value & (value - 1)) ? value : 512;
  }
  return (width + alignment - 1) & ~(alignment - 1);
}

EXPORTED cudaError_t cudaMalloc(void **devPtr, size_t size) { return allocate(devPtr, size); }

EXPORTED cudaError_t cudaFree(void *devPtr) { return release(devPtr); }

EXPORTED cudaError_t cudaMallocAsync(void **devPtr, size_t size, cudaStream_t hStream) {
  (void)hStream;
  return allocate(devPtr, size);
}

EXPORTED cudaError_t cudaFreeAsync(void *devPtr, cudaStream_t hStream) {
  (void)hStream;
  return release(devPtr);
}

EXPORTED cudaError_t cudaMallocManaged(void **devPtr, size_t size, unsigned int flags) {
  (void)flags;
  return allocate(devPtr, size);
}

EXPORTED cudaError_t cudaMallocPitch(void **devPtr, size_t *pitch, size_t width, size_t height) {
  if (!pitch)
    return fail(cudaErrorInvalidValue);
  cudaError_t status = allocate(devPtr, pitch_of(width) * height);
  if (status == cudaSuccess)
    *pitch = pitch_of(width);
  return status;
}

EXPORTED cudaError_t cudaMalloc3D(struct cudaPitchedPtr *pitchedDevPtr, struct cudaExtent extent) {
  if (!pitchedDevPtr)
    return fail(cudaErrorInvalidValue);
  void *pointer = NULL;
  cudaError_t status = allocate(&pointer, pitch_of(extent.width) * extent.height * extent.depth);
  if (status == cudaSuccess)
    *pitchedDevPtr = (struct cudaPitchedPtr){.ptr = pointer, .pitch = pitch_of(extent.width),
                                             .xsize = extent.width, .ysize = extent.height};
  return status;
}

EXPORTED cudaError_t cudaGetDeviceCount(int *count) {
  if (!count)
    return fail(cudaErrorInvalidValue);
  *count = 1;
  return cudaSuccess;
}

EXPORTED cudaError_t cudaGetDevice(int *device) {
  if (!device)
    return fail(cudaErrorInvalidValue);
  *device = 0;
  return cudaSuccess;
}

EXPORTED cudaError_t cudaSetDevice(int device) { return device == 0 ? cudaSuccess : fail(cudaErrorInvalidDevice); }

static int hex_digit(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

EXPORTED cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *prop, int device) {
  if (!prop)
    return fail(cudaErrorInvalidValue);
  if (device != 0)
    return fail(cudaErrorInvalidDevice);
  pthread_mutex_lock(&fake.lock);
  int attached = attach();
  uint64_t capacity = attached == 0 ? fake.shared->capacity : 0;
  pthread_mutex_unlock(&fake.lock);
  if (attached != 0)
    return fail(cudaErrorNoDevice);
  memset(prop, 0, sizeof *prop);
  snprintf(prop->name, sizeof prop->name, "fake GPU (libfakecuda)");
  static const unsigned char default_uuid[16] = {0xfa, 0x4e, 0xc0, 0xda, 0x00, 0x11, 0x22, 0x33,
                                                 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb};
  memcpy(prop->uuid.bytes, default_uuid, 16);
  const char *uuid = getenv("FAKE_GPU_UUID");
  if (uuid && strlen(uuid) == 32) {
    unsigned char bytes[16];
    int good = 1;
    for (int index = 0; index < 16 && good; index++) {
      int high = hex_digit(uuid[2 * index]), low = hex_digit(uuid[2 * index + 1]);
      good = high >= 0 && low >= 0;
      bytes[index] = (unsigned char)(high * 16 + low);
    }
    if (good)
      memcpy(prop->uuid.bytes, bytes, 16);
  }
  prop->totalGlobalMem = capacity;
  prop->major = 9;
  prop->minor = 0;
  prop->multiProcessorCount = 132;
  return cudaSuccess;
}

EXPORTED cudaError_t cudaMemGetInfo(size_t *free, size_t *total) {
  if (!free || !total)
    return fail(cudaErrorInvalidValue);
  if (lock_gpu() != 0)
    return fail(cudaErrorNoDevice);
  uint64_t used = used_bytes();
  uint64_t capacity = fake.shared->capacity;
  unlock_gpu();
  *total = capacity;
  *free = used < capacity ? capacity - used : 0;
  return cudaSuccess;
}

EXPORTED cudaError_t cudaPeekAtLastError(void) { return last_error; }

EXPORTED cudaError_t cudaGetLastError(void) {
  cudaError_t error = last_error;
  last_error = cudaSuccess;
  return error;
}

EXPORTED cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void *userData) {
  (void)stream;
  if (!fn)
    return fail(cudaErrorInvalidValue);
  fn(userData); /* every stream of the simulated GPU is always idle */
  return cudaSuccess;
}

EXPORTED cudaError_t cudaStreamIsCapturing(cudaStream_t stream, enum cudaStreamCaptureStatus *pCaptureStatus) {
  (void)stream;
  if (!pCaptureStatus)
    return fail(cudaErrorInvalidValue);
  *pCaptureStatus = cudaStreamCaptureStatusNone;
  return cudaSuccess;
}

EXPORTED cudaError_t cudaDeviceSynchronize(void) { return cudaSuccess; }

EXPORTED const char *cudaGetErrorString(cudaError_t error) {
  switch (error) {
  case cudaSuccess: return "no error";
  case cudaErrorInvalidValue: return "invalid argument";
  case cudaErrorMemoryAllocation: return "out of memory";
  case cudaErrorInvalidDevice: return "invalid device ordinal";
  case cudaErrorNoDevice: return "no CUDA-capable device is detected";
  default: return "unknown error";
  }
}

/* Test-only: the simulated GPU's counters, for mem_client's "gpu" command. 0, or -1 when it cannot attach. */
typedef struct fake_gpu_stats {
  uint64_t capacity, used, allocations, failures, reclaimed;
  uint32_t live_processes;
} fake_gpu_stats;

EXPORTED int fake_gpu_get_stats(fake_gpu_stats *stats) {
  if (!stats || lock_gpu() != 0)
    return -1;
  stats->used = used_bytes();
  stats->capacity = fake.shared->capacity;
  stats->allocations = __atomic_load_n(&fake.shared->allocations, __ATOMIC_SEQ_CST);
  stats->failures = __atomic_load_n(&fake.shared->failures, __ATOMIC_SEQ_CST);
  stats->reclaimed = __atomic_load_n(&fake.shared->reclaimed, __ATOMIC_SEQ_CST);
  stats->live_processes = 0;
  for (uint32_t index = 0; index < FAKE_SLOTS; index++)
    if (index == fake.slot || slot_alive(index))
      stats->live_processes++;
  unlock_gpu();
  return 0;
}
