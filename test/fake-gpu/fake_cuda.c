/* fake_cuda.c: libfakecuda.so, one simulated GPU behind the CUDA runtime, driver and NVML APIs, shared by processes.
 * schedGPU §3.2 and §4 (the device memory admission shares, NVML's view of it) and §7.2 (its pressure runs, dry). */
/*
 * No GPU is needed. The "device memory" is a number, FAKE_GPU_MEMORY bytes, shared by every process that names the
 * same FAKE_GPU_NAME (a POSIX shared-memory segment), so that, as on a real GPU, one process's allocation makes
 * another's fail with out-of-memory, and a process's death gives its memory back. Two uses, one library:
 *  - test/lit/mem/ (built by CMake as build/test/fake-gpu/libfakecuda.so): mem_client links it; admission reaches
 *    it only through LD_PRELOAD=libpreempt_mem.so. build/test/fake-gpu/nvml/libnvidia-ml.so.1 is a link to it, so
 *    that a program that dlopens NVML (a scheduler daemon) reads the same simulated GPU;
 *  - bench/memory/dry_run.sh builds it as a stand-in libcudart.so.13 for mem_pressure.cu: allocations are real host
 *    memory (every pointer returned can be dereferenced), copies are memcpy, and launches of mem_pressure's three
 *    kernels run their host equivalents, found by the kernel's registered name.
 *
 * APIs: the CUDA runtime's allocation calls (cudaMalloc, Async and FromPoolAsync with their per-thread default
 * stream spellings _ptsz, Managed, Pitch, 3D, the frees), the driver's (cuMemAlloc_v2, Pitch_v2, Managed, Async and
 * FromPoolAsync with _ptsz, cuMemCreate/cuMemRelease, the frees), what admission asks of a GPU (device, UUID,
 * memory info, last error, capture state, host functions), what mem_pressure.cu needs (events, copies, kernel
 * registration and launch), what a daemon asks the driver (cuDeviceGetCount, cuDeviceGetAttribute's SM count), and
 * NVML's nvmlInit_v2, nvmlShutdown, nvmlErrorString, nvmlDeviceGetHandleByUUID and nvmlDeviceGetMemoryInfo. Streams are always idle: stream-ordered calls act at once, host functions run at once.
 *
 * Environment (read once per process; a malformed value is said on stderr and every call then fails with the
 * API's "no device" error, never a guess):
 *   FAKE_GPU_NAME             the segment, "/name" (default /fake-gpu-<uid>)
 *   FAKE_GPU_MEMORY           capacity, bytes with K/M/G/T (powers of 1024; default 1G); the segment's creator's
 *   FAKE_GPU_CONTEXT_MEMORY   bytes each process's context takes when it first uses the GPU (default 0; a real
 *                             context takes hundreds of MiB); a context that does not fit fails every call
 *   FAKE_GPU_UUID             32 hex digits: the UUID cudaGetDeviceProperties and cuDeviceGetUuid report and NVML
 *                             knows the device by (default fa4ec0da00112233445566778899aabb)
 *   FAKE_GPU_PITCH            row alignment of pitched allocations, a power of two (default 512)
 *   FAKE_GPU_RELEASE_DELAY_MS a slow driver: a dead process's memory stays in use that long after the first look
 *                             that finds it dead (default 0)
 *   FAKE_GPU_ALIAS_HANDLES=1  cuMemCreate's handles equal the address of the process's newest live allocation when
 *                             it can: the worst case for a table that keys both (tests only)
 *   FAKE_GPU_PASS_MS          each launch of mem_pressure's step kernel takes at least this long (default 0)
 *   FAKE_GPU_CORRUPT_JOB=J    the check kernel of job J (its seed) first flips a word: a wrong value
 *   FAKE_GPU_HANG_JOB=J       the fill kernel of job J never finishes: a hang
 *
 * What each process holds is kept in its own slot of the shared segment. A slot belongs to the process that holds
 * an open-file-description lock on the slot's byte of the segment file; the kernel drops that lock when the
 * process's last descriptor closes, which a kill -9 does too, before the process even becomes a zombie, just as a
 * real driver frees a dead process's memory when its device files close. A slot whose byte nobody holds counts for
 * nothing and is free for the next process. (kill(pid, 0) would see a killed but not yet reaped child as alive.)
 * Every update of a slot is one atomic store, and allocations are serialized across processes by flock on the
 * segment file, which a dead holder drops too: a kill at any point leaves the state consistent. A process that only
 * reads NVML maps the segment without taking a slot, as NVML needs no context.
 *
 * Order at death: a dying process's files are released one after the other (and on Linux >= 5.9, whose deferred
 * file releases run last-queued first, the descriptor closed last is released first), with a possible reschedule
 * in between. The segment's descriptor is moved high (>= 900) so that it is closed last and so released first: the
 * simulated GPU gives a dead process's memory back before the admission ledger, whose liveness byte lives in a file
 * opened later at a lower descriptor, can see the process dead. Tests then may demand that the GPU never holds
 * memory the ledger does not account for. FAKE_GPU_RELEASE_DELAY_MS simulates a driver slow to free instead. */
#define _GNU_SOURCE
#include <cuda.h>
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

#include "mem_pattern.h" /* bench/memory: the words mem_pressure.cu's kernels write and check */
#include "preempt/byte_count.h"

#define FAKE_MAGIC 0x55504746u /* "FGPU" */
#define FAKE_VERSION 2u
#define FAKE_SLOTS 512
#define FAKE_SLOT_BYTE_BASE (1ull << 20) /* slot i's liveness byte: above the segment's own bytes */
#define FAKE_SMS 132
#define EXPORTED __attribute__((visibility("default")))

typedef struct fake_slot {
  uint64_t used;    /* bytes this slot's process holds, context included; meaningful only while its byte is locked */
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

/* What a call comes to, whichever API made it; each API's entry points turn it into their own code. */
typedef enum fake_status {
  FAKE_OK = 0,
  FAKE_INVALID,      /* a bad argument */
  FAKE_NOT_FOUND,    /* a free of something this process never allocated */
  FAKE_NO_MEMORY,    /* the simulated GPU is full */
  FAKE_NO_DEVICE,    /* the simulated GPU cannot be used (said on stderr) */
  FAKE_BAD_DEVICE,   /* a device other than 0 */
} fake_status;

/* Device memory is host memory mapped for it; a physical allocation (cuMemCreate) is only a handle. Kept apart, so
 * that a handle never matches an address. */
typedef enum fake_kind { FAKE_MAPPED = 0, FAKE_PHYSICAL = 1 } fake_kind;

typedef struct fake_allocation {
  fake_kind kind;
  uint64_t key;     /* the address, or the handle */
  uint64_t bytes;   /* what the simulated GPU counts */
  size_t mapped_bytes;
} fake_allocation;

typedef struct fake_config {
  char name[128];
  uint64_t capacity, context_bytes, pitch, release_delay_ns, pass_ms;
  int64_t corrupt_job, hang_job; /* -1: none */
  unsigned char uuid[16];
  int alias_handles;
} fake_config;

static struct {
  pthread_mutex_t lock; /* flock excludes other processes only: this excludes this process's threads */
  int configured;       /* 1: config read and good; -1: malformed (said) */
  fake_config config;
  int opened;           /* the segment: 1 mapped; -1 failed (said) */
  int attached;         /* a slot and a context: 1 taken; -1 failed (said), with attach_failure */
  fake_status attach_failure;
  int fd;
  fake_shared *shared;
  uint32_t slot;
  uint64_t next_handle;
  fake_allocation *table;
  size_t count, capacity;
  int nvml_initialized; /* nvmlInit_v2 calls not yet matched by nvmlShutdown */
} fake = {.lock = PTHREAD_MUTEX_INITIALIZER, .fd = -1, .slot = UINT32_MAX, .next_handle = 1};

static __thread cudaError_t last_error = cudaSuccess;

static uint64_t now_ns(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
}

/* ---- the environment */

static int hex_digit(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

/* A whole number: 0 and *value set (left alone when the variable is unset or empty), or -1 (said). */
static int read_count(const char *variable, uint64_t *value) {
  const char *text = getenv(variable);
  if (!text || !*text)
    return 0;
  char *end;
  errno = 0;
  unsigned long long parsed = strtoull(text, &end, 10);
  if (errno || *end || text[0] == '-' || text[0] == '+') {
    fprintf(stderr, "fakecuda: %s='%s' is not a whole number\n", variable, text);
    return -1;
  }
  *value = parsed;
  return 0;
}

static int read_bytes(const char *variable, uint64_t *value) {
  const char *text = getenv(variable);
  if (!text || !*text)
    return 0;
  if (preempt_parse_byte_count(text, value) != 0) {
    fprintf(stderr, "fakecuda: %s='%s' is not a byte count (digits with an optional K, M, G or T)\n", variable, text);
    return -1;
  }
  return 0;
}

/* A job number (mem_pressure's seed, a 32-bit number), or -1 when the variable is unset. */
static int read_job(const char *variable, int64_t *job) {
  const char *text = getenv(variable);
  uint64_t value = 0;
  *job = -1;
  if (!text || !*text)
    return 0;
  if (read_count(variable, &value) != 0)
    return -1;
  if (value > UINT32_MAX) {
    fprintf(stderr, "fakecuda: %s='%s' is not a job number (0..%u)\n", variable, text, UINT32_MAX);
    return -1;
  }
  *job = (int64_t)value;
  return 0;
}

static int parse_config(fake_config *config) {
  memset(config, 0, sizeof *config);
  const char *name = getenv("FAKE_GPU_NAME");
  if (name && *name) {
    if (name[0] != '/' || strchr(name + 1, '/') || strlen(name) >= sizeof config->name || !name[1]) {
      fprintf(stderr, "fakecuda: FAKE_GPU_NAME='%s' is not a shared-memory name (one leading slash, under %zu "
                      "characters)\n", name, sizeof config->name);
      return -1;
    }
    snprintf(config->name, sizeof config->name, "%s", name);
  } else {
    snprintf(config->name, sizeof config->name, "/fake-gpu-%u", (unsigned)geteuid());
  }
  config->capacity = 1ull << 30;
  config->pitch = 512;
  uint64_t delay_ms = 0, alias = 0;
  int bad = read_bytes("FAKE_GPU_MEMORY", &config->capacity) | read_bytes("FAKE_GPU_CONTEXT_MEMORY", &config->context_bytes) |
            read_count("FAKE_GPU_PITCH", &config->pitch) | read_count("FAKE_GPU_RELEASE_DELAY_MS", &delay_ms) |
            read_count("FAKE_GPU_PASS_MS", &config->pass_ms) | read_count("FAKE_GPU_ALIAS_HANDLES", &alias) |
            read_job("FAKE_GPU_CORRUPT_JOB", &config->corrupt_job) | read_job("FAKE_GPU_HANG_JOB", &config->hang_job);
  if (bad)
    return -1;
  if (config->capacity == 0) {
    fprintf(stderr, "fakecuda: FAKE_GPU_MEMORY must be more than 0 bytes\n");
    return -1;
  }
  if (config->pitch == 0 || (config->pitch & (config->pitch - 1))) {
    fprintf(stderr, "fakecuda: FAKE_GPU_PITCH=%llu is not a power of two\n", (unsigned long long)config->pitch);
    return -1;
  }
  /* An hour at most: longer is a typo, and the nanoseconds must not overflow. */
  if (delay_ms > 3600000 || config->pass_ms > 3600000) {
    fprintf(stderr, "fakecuda: FAKE_GPU_RELEASE_DELAY_MS and FAKE_GPU_PASS_MS are at most 3600000 (an hour)\n");
    return -1;
  }
  if (alias > 1) {
    fprintf(stderr, "fakecuda: FAKE_GPU_ALIAS_HANDLES is 0 or 1\n");
    return -1;
  }
  config->release_delay_ns = delay_ms * 1000000;
  config->alias_handles = (int)alias;
  static const unsigned char default_uuid[16] = {0xfa, 0x4e, 0xc0, 0xda, 0x00, 0x11, 0x22, 0x33,
                                                 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb};
  memcpy(config->uuid, default_uuid, 16);
  const char *uuid = getenv("FAKE_GPU_UUID");
  if (uuid && *uuid) {
    int good = strlen(uuid) == 32;
    for (int index = 0; index < 16 && good; index++) {
      int high = hex_digit(uuid[2 * index]), low = hex_digit(uuid[2 * index + 1]);
      good = high >= 0 && low >= 0;
      config->uuid[index] = (unsigned char)(high * 16 + low);
    }
    if (!good) {
      fprintf(stderr, "fakecuda: FAKE_GPU_UUID='%s' is not 32 hex digits\n", uuid);
      return -1;
    }
  }
  return 0;
}

/* The configuration, read on first use. Caller holds fake.lock. */
static const fake_config *config(void) {
  if (!fake.configured)
    fake.configured = parse_config(&fake.config) == 0 ? 1 : -1;
  return fake.configured > 0 ? &fake.config : NULL;
}

/* ---- the shared segment and this process's slot */

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

/* A dead process's slot: whether its memory is gone (1) or, with a release delay, still held (0). Caller holds the
 * flock. */
static int dead_slot_released(fake_slot *slot) {
  uint64_t bytes = __atomic_load_n(&slot->used, __ATOMIC_SEQ_CST);
  uint64_t delay = fake.config.release_delay_ns;
  if (bytes && delay) {
    uint64_t now = now_ns();
    if (!slot->dead_since_ns)
      slot->dead_since_ns = now;
    if (now - slot->dead_since_ns < delay)
      return 0;
  }
  if (bytes && __atomic_compare_exchange_n(&slot->used, &bytes, 0, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
    __atomic_add_fetch(&fake.shared->reclaimed, bytes, __ATOMIC_SEQ_CST);
  slot->dead_since_ns = 0;
  return 1;
}

/* Bytes held by live processes. Caller holds fake.lock and the flock. Dead processes' bytes are dropped. */
static uint64_t used_bytes(void) {
  uint64_t used = 0;
  for (uint32_t index = 0; index < FAKE_SLOTS; index++) {
    fake_slot *slot = &fake.shared->slots[index];
    uint64_t bytes = __atomic_load_n(&slot->used, __ATOMIC_SEQ_CST);
    if (!bytes)
      continue;
    if (slot_alive(index) || !dead_slot_released(slot))
      used += bytes;
  }
  return used;
}

/* Maps the segment, creating it if needed. Caller holds fake.lock. 0, or -1 (said). */
static int open_segment(void) {
  if (fake.opened)
    return fake.opened > 0 ? 0 : -1;
  fake.opened = -1;
  const fake_config *settings = config();
  if (!settings)
    return -1;
  const char *name = settings->name;
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
    /* New, or its creator died before finishing: (re)start it. Nobody can hold a slot of a segment whose magic is
     * not set, since slots are taken only after it is. */
    memset(shared, 0, sizeof *shared);
    shared->version = FAKE_VERSION;
    shared->capacity = settings->capacity;
    __atomic_store_n(&shared->magic, FAKE_MAGIC, __ATOMIC_RELEASE);
  } else if (shared->version != FAKE_VERSION) {
    fprintf(stderr, "fakecuda: %s has version %u, expected %u\n", name, shared->version, FAKE_VERSION);
    flock(fd, LOCK_UN);
    munmap(shared, sizeof *shared);
    close(fd);
    return -1;
  }
  flock(fd, LOCK_UN);
  fake.fd = fd;
  fake.shared = shared;
  fake.opened = 1;
  return 0;
}

/* Takes a slot and creates this process's context: what a process that allocates needs. Caller holds fake.lock. */
static fake_status attach(void) {
  if (fake.attached)
    return fake.attached > 0 ? FAKE_OK : fake.attach_failure;
  fake.attached = -1;
  fake.attach_failure = FAKE_NO_DEVICE;
  if (open_segment() != 0)
    return FAKE_NO_DEVICE;
  const char *name = fake.config.name;
  while (flock(fake.fd, LOCK_EX) != 0)
    if (errno != EINTR) {
      fprintf(stderr, "fakecuda: flock %s: %s\n", name, strerror(errno));
      return FAKE_NO_DEVICE;
    }
  for (uint32_t index = 0; index < FAKE_SLOTS; index++) {
    /* Succeeds only when no live process holds the byte; under the flock, no one else is taking one. */
    if (byte_lock(fake.fd, F_OFD_SETLK, FAKE_SLOT_BYTE_BASE + index, F_WRLCK, NULL) != 0)
      continue;
    if (!dead_slot_released(&fake.shared->slots[index])) { /* a slow driver still holds its memory */
      byte_lock(fake.fd, F_OFD_SETLK, FAKE_SLOT_BYTE_BASE + index, F_UNLCK, NULL);
      continue;
    }
    fake.shared->slots[index].pid = (uint32_t)getpid();
    fake.slot = index;
    break;
  }
  if (fake.slot == UINT32_MAX) {
    flock(fake.fd, LOCK_UN);
    fprintf(stderr, "fakecuda: %s: all %d process slots are taken\n", name, FAKE_SLOTS);
    return FAKE_NO_DEVICE;
  }
  uint64_t context = fake.config.context_bytes, used = used_bytes(), capacity = fake.shared->capacity;
  if (context > capacity || used > capacity - context) {
    byte_lock(fake.fd, F_OFD_SETLK, FAKE_SLOT_BYTE_BASE + fake.slot, F_UNLCK, NULL);
    fake.slot = UINT32_MAX;
    __atomic_add_fetch(&fake.shared->failures, 1, __ATOMIC_SEQ_CST);
    flock(fake.fd, LOCK_UN);
    fprintf(stderr, "fakecuda: %s: no room for this process's context (%llu bytes; %llu of %llu in use)\n", name,
            (unsigned long long)context, (unsigned long long)used, (unsigned long long)capacity);
    fake.attach_failure = FAKE_NO_MEMORY;
    return FAKE_NO_MEMORY;
  }
  __atomic_store_n(&fake.shared->slots[fake.slot].used, context, __ATOMIC_SEQ_CST);
  flock(fake.fd, LOCK_UN);
  fake.attached = 1;
  return FAKE_OK;
}

/* Holds the GPU (this process's lock, then the segment's flock), as a process with a context (as_client) or as an
 * observer (NVML). */
static fake_status lock_gpu(int as_client) {
  pthread_mutex_lock(&fake.lock);
  fake_status status = as_client ? attach() : (open_segment() == 0 ? FAKE_OK : FAKE_NO_DEVICE);
  if (status != FAKE_OK) {
    pthread_mutex_unlock(&fake.lock);
    return status;
  }
  while (flock(fake.fd, LOCK_EX) != 0 && errno == EINTR)
    ;
  return FAKE_OK;
}

static void unlock_gpu(void) {
  flock(fake.fd, LOCK_UN);
  pthread_mutex_unlock(&fake.lock);
}

/* What a process with a context sees: capacity and used bytes. */
static fake_status memory_info(int as_client, uint64_t *used, uint64_t *capacity) {
  fake_status status = lock_gpu(as_client);
  if (status != FAKE_OK)
    return status;
  *used = used_bytes();
  *capacity = fake.shared->capacity;
  unlock_gpu();
  return FAKE_OK;
}

/* ---- this process's allocations */

static fake_allocation *find(fake_kind kind, uint64_t key) {
  for (size_t index = 0; index < fake.count; index++)
    if (fake.table[index].kind == kind && fake.table[index].key == key)
      return &fake.table[index];
  return NULL;
}

/* A handle no live physical allocation of this process has: the newest live mapping's address when handles alias
 * addresses (FAKE_GPU_ALIAS_HANDLES), else the next number. */
static uint64_t new_handle(void) {
  if (fake.config.alias_handles)
    for (size_t index = fake.count; index-- > 0;)
      if (fake.table[index].kind == FAKE_MAPPED) {
        if (!find(FAKE_PHYSICAL, fake.table[index].key))
          return fake.table[index].key;
        break;
      }
  while (find(FAKE_PHYSICAL, fake.next_handle))
    fake.next_handle++;
  return fake.next_handle++;
}

/* Takes `bytes` of the simulated GPU: mapped host memory (*key its address) or a physical handle (*key the handle). */
static fake_status allocate(fake_kind kind, uint64_t bytes, uint64_t *key) {
  fake_status status = lock_gpu(1);
  if (status != FAKE_OK)
    return status;
  uint64_t used = used_bytes(), capacity = fake.shared->capacity;
  if (bytes > capacity || used > capacity - bytes) {
    __atomic_add_fetch(&fake.shared->failures, 1, __ATOMIC_SEQ_CST);
    unlock_gpu();
    return FAKE_NO_MEMORY;
  }
  if (fake.count == fake.capacity) {
    size_t grown = fake.capacity ? fake.capacity * 2 : 64;
    fake_allocation *table = realloc(fake.table, grown * sizeof *table);
    if (!table) {
      unlock_gpu();
      return FAKE_NO_MEMORY;
    }
    fake.table = table;
    fake.capacity = grown;
  }
  fake_allocation entry = {.kind = kind, .bytes = bytes};
  if (kind == FAKE_MAPPED) {
    /* Reserved, not committed: untouched pages cost nothing, and a program that writes its memory (mem_pressure)
     * gets real storage. */
    entry.mapped_bytes = (size_t)bytes;
    void *memory = mmap(NULL, entry.mapped_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                        -1, 0);
    if (memory == MAP_FAILED) {
      unlock_gpu();
      return FAKE_NO_MEMORY;
    }
    entry.key = (uint64_t)(uintptr_t)memory;
  } else {
    entry.key = new_handle();
  }
  fake.table[fake.count++] = entry;
  __atomic_add_fetch(&fake.shared->slots[fake.slot].used, bytes, __ATOMIC_SEQ_CST);
  __atomic_add_fetch(&fake.shared->allocations, 1, __ATOMIC_SEQ_CST);
  unlock_gpu();
  *key = entry.key;
  return FAKE_OK;
}

/* Gives an allocation's memory back; the caller takes it out of the table. Under the GPU lock. */
static void drop(const fake_allocation *entry) {
  if (entry->kind == FAKE_MAPPED)
    munmap((void *)(uintptr_t)entry->key, entry->mapped_bytes);
  __atomic_sub_fetch(&fake.shared->slots[fake.slot].used, entry->bytes, __ATOMIC_SEQ_CST);
}

static fake_status release(fake_kind kind, uint64_t key) {
  fake_status status = lock_gpu(1);
  if (status != FAKE_OK)
    return status;
  fake_allocation *entry = find(kind, key);
  if (!entry) {
    unlock_gpu();
    return FAKE_NOT_FOUND;
  }
  drop(entry);
  *entry = fake.table[--fake.count];
  unlock_gpu();
  return FAKE_OK;
}

/* Device memory at *pointer; 0 bytes is NULL and success, as on CUDA. */
static fake_status allocate_memory(void **pointer, uint64_t bytes) {
  if (!pointer)
    return FAKE_INVALID;
  if (bytes == 0) {
    *pointer = NULL;
    return FAKE_OK;
  }
  uint64_t address = 0;
  fake_status status = allocate(FAKE_MAPPED, bytes, &address);
  if (status == FAKE_OK)
    *pointer = (void *)(uintptr_t)address;
  return status;
}

/* Freeing NULL is success (and creates the context, as cudaFree(0) does). */
static fake_status release_memory(uint64_t address) {
  if (address)
    return release(FAKE_MAPPED, address);
  pthread_mutex_lock(&fake.lock);
  fake_status status = attach();
  pthread_mutex_unlock(&fake.lock);
  return status;
}

/* Row pitch: rounded up to FAKE_GPU_PITCH bytes. */
static uint64_t pitch_of(uint64_t width) {
  uint64_t alignment = fake.config.pitch;
  return (width + alignment - 1) & ~(alignment - 1);
}

/* A pitched allocation of `rows` rows of `width` bytes; the pitch comes back in *pitch. */
static fake_status allocate_pitched(void **pointer, uint64_t width, uint64_t rows, size_t *pitch) {
  if (!pointer || !pitch)
    return FAKE_INVALID;
  pthread_mutex_lock(&fake.lock);
  int configured = config() != NULL;
  pthread_mutex_unlock(&fake.lock);
  if (!configured)
    return FAKE_NO_DEVICE;
  uint64_t row_bytes = pitch_of(width);
  if (rows && row_bytes > UINT64_MAX / rows)
    return FAKE_NO_MEMORY;
  fake_status status = allocate_memory(pointer, row_bytes * rows);
  if (status == FAKE_OK)
    *pitch = (size_t)row_bytes;
  return status;
}

static fake_status device_uuid(int device, unsigned char uuid[16]) {
  if (device != 0)
    return FAKE_BAD_DEVICE;
  pthread_mutex_lock(&fake.lock);
  const fake_config *settings = config();
  if (settings)
    memcpy(uuid, settings->uuid, 16);
  pthread_mutex_unlock(&fake.lock);
  return settings ? FAKE_OK : FAKE_NO_DEVICE;
}

/* Whether this process can use the simulated GPU (its context exists, or is created now). */
static fake_status use_device(void) {
  pthread_mutex_lock(&fake.lock);
  fake_status status = attach();
  pthread_mutex_unlock(&fake.lock);
  return status;
}

/* ---- the CUDA runtime API */

static cudaError_t runtime_result(fake_status status) {
  static const cudaError_t codes[] = {
      [FAKE_OK] = cudaSuccess,           [FAKE_INVALID] = cudaErrorInvalidValue,
      [FAKE_NOT_FOUND] = cudaErrorInvalidValue, [FAKE_NO_MEMORY] = cudaErrorMemoryAllocation,
      [FAKE_NO_DEVICE] = cudaErrorNoDevice, [FAKE_BAD_DEVICE] = cudaErrorInvalidDevice};
  cudaError_t error = codes[status];
  if (error != cudaSuccess)
    last_error = error;
  return error;
}

EXPORTED cudaError_t cudaMalloc(void **devPtr, size_t size) { return runtime_result(allocate_memory(devPtr, size)); }

EXPORTED cudaError_t cudaFree(void *devPtr) { return runtime_result(release_memory((uint64_t)(uintptr_t)devPtr)); }

EXPORTED cudaError_t cudaMallocAsync(void **devPtr, size_t size, cudaStream_t hStream) {
  (void)hStream;
  return runtime_result(allocate_memory(devPtr, size));
}

EXPORTED cudaError_t cudaMallocAsync_ptsz(void **devPtr, size_t size, cudaStream_t hStream) {
  (void)hStream;
  return runtime_result(allocate_memory(devPtr, size));
}

EXPORTED cudaError_t cudaMallocFromPoolAsync(void **ptr, size_t size, cudaMemPool_t memPool, cudaStream_t stream) {
  (void)stream;
  return runtime_result(memPool ? allocate_memory(ptr, size) : FAKE_INVALID);
}

EXPORTED cudaError_t cudaMallocFromPoolAsync_ptsz(void **ptr, size_t size, cudaMemPool_t memPool, cudaStream_t stream) {
  (void)stream;
  return runtime_result(memPool ? allocate_memory(ptr, size) : FAKE_INVALID);
}

EXPORTED cudaError_t cudaFreeAsync(void *devPtr, cudaStream_t hStream) {
  (void)hStream;
  return runtime_result(release_memory((uint64_t)(uintptr_t)devPtr));
}

EXPORTED cudaError_t cudaFreeAsync_ptsz(void *devPtr, cudaStream_t hStream) {
  (void)hStream;
  return runtime_result(release_memory((uint64_t)(uintptr_t)devPtr));
}

EXPORTED cudaError_t cudaMallocManaged(void **devPtr, size_t size, unsigned int flags) {
  (void)flags;
  return runtime_result(allocate_memory(devPtr, size));
}

EXPORTED cudaError_t cudaMallocPitch(void **devPtr, size_t *pitch, size_t width, size_t height) {
  return runtime_result(allocate_pitched(devPtr, width, height, pitch));
}

EXPORTED cudaError_t cudaMalloc3D(struct cudaPitchedPtr *pitchedDevPtr, struct cudaExtent extent) {
  if (!pitchedDevPtr)
    return runtime_result(FAKE_INVALID);
  void *pointer = NULL;
  size_t pitch = 0;
  uint64_t rows = (uint64_t)extent.height * extent.depth;
  if (extent.depth && rows / extent.depth != extent.height)
    return runtime_result(FAKE_NO_MEMORY);
  fake_status status = allocate_pitched(&pointer, extent.width, rows, &pitch);
  if (status == FAKE_OK)
    *pitchedDevPtr = (struct cudaPitchedPtr){.ptr = pointer, .pitch = pitch, .xsize = extent.width, .ysize = extent.height};
  return runtime_result(status);
}

/* Any non-NULL token will do: the simulated GPU has one pool. */
static struct CUmemPoolHandle_st *default_pool(void) {
  static char token;
  return (struct CUmemPoolHandle_st *)(void *)&token;
}

EXPORTED cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t *memPool, int device) {
  if (!memPool)
    return runtime_result(FAKE_INVALID);
  if (device != 0)
    return runtime_result(FAKE_BAD_DEVICE);
  *memPool = default_pool();
  return cudaSuccess;
}

EXPORTED cudaError_t cudaGetDeviceCount(int *count) {
  if (!count)
    return runtime_result(FAKE_INVALID);
  *count = 1;
  return cudaSuccess;
}

EXPORTED cudaError_t cudaGetDevice(int *device) {
  if (!device)
    return runtime_result(FAKE_INVALID);
  *device = 0;
  return cudaSuccess;
}

EXPORTED cudaError_t cudaSetDevice(int device) {
  return runtime_result(device == 0 ? use_device() : FAKE_BAD_DEVICE);
}

EXPORTED cudaError_t cudaDeviceGetAttribute(int *value, enum cudaDeviceAttr attr, int device) {
  if (!value)
    return runtime_result(FAKE_INVALID);
  if (device != 0)
    return runtime_result(FAKE_BAD_DEVICE);
  *value = attr == cudaDevAttrMultiProcessorCount ? FAKE_SMS : 0;
  return cudaSuccess;
}

EXPORTED cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *prop, int device) {
  if (!prop)
    return runtime_result(FAKE_INVALID);
  unsigned char uuid[16];
  fake_status status = device_uuid(device, uuid);
  uint64_t used = 0, capacity = 0;
  if (status == FAKE_OK)
    status = memory_info(1, &used, &capacity);
  if (status != FAKE_OK)
    return runtime_result(status);
  memset(prop, 0, sizeof *prop);
  snprintf(prop->name, sizeof prop->name, "fake GPU (libfakecuda)");
  memcpy(prop->uuid.bytes, uuid, 16);
  prop->totalGlobalMem = capacity;
  prop->major = 9;
  prop->minor = 0;
  prop->multiProcessorCount = FAKE_SMS;
  return cudaSuccess;
}

EXPORTED cudaError_t cudaMemGetInfo(size_t *free, size_t *total) {
  if (!free || !total)
    return runtime_result(FAKE_INVALID);
  uint64_t used = 0, capacity = 0;
  fake_status status = memory_info(1, &used, &capacity);
  if (status != FAKE_OK)
    return runtime_result(status);
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

static cudaError_t run_host_function(cudaHostFn_t fn, void *userData) {
  if (!fn)
    return runtime_result(FAKE_INVALID);
  fn(userData); /* every stream of the simulated GPU is always idle */
  return cudaSuccess;
}

EXPORTED cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void *userData) {
  (void)stream;
  return run_host_function(fn, userData);
}

EXPORTED cudaError_t cudaLaunchHostFunc_ptsz(cudaStream_t stream, cudaHostFn_t fn, void *userData) {
  (void)stream;
  return run_host_function(fn, userData);
}

EXPORTED cudaError_t cudaStreamIsCapturing(cudaStream_t stream, enum cudaStreamCaptureStatus *pCaptureStatus) {
  (void)stream;
  if (!pCaptureStatus)
    return runtime_result(FAKE_INVALID);
  *pCaptureStatus = cudaStreamCaptureStatusNone;
  return cudaSuccess;
}

EXPORTED cudaError_t cudaStreamIsCapturing_ptsz(cudaStream_t stream, enum cudaStreamCaptureStatus *pCaptureStatus) {
  (void)stream;
  if (!pCaptureStatus)
    return runtime_result(FAKE_INVALID);
  *pCaptureStatus = cudaStreamCaptureStatusNone;
  return cudaSuccess;
}

EXPORTED cudaError_t cudaDeviceSynchronize(void) { return cudaSuccess; }

/* As CUDA's: every allocation of this process on the device is gone (the context too, which the next call makes
 * again: its bytes stay counted here, a simplification no test depends on). */
EXPORTED cudaError_t cudaDeviceReset(void) {
  fake_status status = lock_gpu(1);
  if (status != FAKE_OK)
    return runtime_result(status);
  for (size_t index = 0; index < fake.count; index++)
    drop(&fake.table[index]);
  fake.count = 0;
  unlock_gpu();
  return cudaSuccess;
}

EXPORTED const char *cudaGetErrorString(cudaError_t error) {
  switch (error) {
  case cudaSuccess: return "no error";
  case cudaErrorInvalidValue: return "invalid argument";
  case cudaErrorMemoryAllocation: return "out of memory";
  case cudaErrorInvalidDevice: return "invalid device ordinal";
  case cudaErrorNoDevice: return "no CUDA-capable device is detected";
  case cudaErrorInvalidDeviceFunction: return "invalid device function";
  default: return "unknown error";
  }
}

EXPORTED const char *cudaGetErrorName(cudaError_t error) {
  switch (error) {
  case cudaSuccess: return "cudaSuccess";
  case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
  case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
  case cudaErrorInvalidDevice: return "cudaErrorInvalidDevice";
  case cudaErrorNoDevice: return "cudaErrorNoDevice";
  case cudaErrorInvalidDeviceFunction: return "cudaErrorInvalidDeviceFunction";
  default: return "cudaErrorUnknown";
  }
}

/* Events: host timestamps (kernels run synchronously). */
EXPORTED cudaError_t cudaEventCreate(cudaEvent_t *event) {
  if (!event)
    return runtime_result(FAKE_INVALID);
  double *stamp = calloc(1, sizeof *stamp);
  if (!stamp)
    return runtime_result(FAKE_NO_MEMORY);
  *event = (cudaEvent_t)(void *)stamp;
  return cudaSuccess;
}

EXPORTED cudaError_t cudaEventDestroy(cudaEvent_t event) {
  free((void *)event);
  return cudaSuccess;
}

EXPORTED cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  (void)stream;
  if (!event)
    return runtime_result(FAKE_INVALID);
  *(double *)(void *)event = (double)now_ns() / 1e6;
  return cudaSuccess;
}

EXPORTED cudaError_t cudaEventSynchronize(cudaEvent_t event) { return event ? cudaSuccess : runtime_result(FAKE_INVALID); }

EXPORTED cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end) {
  if (!ms || !start || !end)
    return runtime_result(FAKE_INVALID);
  *ms = (float)(*(double *)(void *)end - *(double *)(void *)start);
  return cudaSuccess;
}

/* Copies: every pointer is a host pointer; a __device__ variable is its host shadow. */
EXPORTED cudaError_t cudaMemcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind) {
  (void)kind;
  if (count && (!dst || !src))
    return runtime_result(FAKE_INVALID);
  memcpy(dst, src, count);
  return cudaSuccess;
}

EXPORTED cudaError_t cudaMemcpyToSymbol(const void *symbol, const void *src, size_t count, size_t offset,
                                        enum cudaMemcpyKind kind) {
  (void)kind;
  if (count && (!symbol || !src))
    return runtime_result(FAKE_INVALID);
  memcpy((char *)symbol + offset, src, count);
  return cudaSuccess;
}

EXPORTED cudaError_t cudaMemcpyFromSymbol(void *dst, const void *symbol, size_t count, size_t offset,
                                          enum cudaMemcpyKind kind) {
  (void)kind;
  if (count && (!dst || !symbol))
    return runtime_result(FAKE_INVALID);
  memcpy(dst, (const char *)symbol + offset, count);
  return cudaSuccess;
}

/* ---- kernels: registration and launches as clang's CUDA host code makes them; mem_pressure.cu's run on the host */

#define MAX_FUNCTIONS 64
static struct {
  const void *host;
  const char *name;
} functions[MAX_FUNCTIONS];
static int function_count;
static unsigned long long *wrong_words; /* mem_pressure.cu's __device__ counter (its host shadow) */
static dim3 pushed_grid, pushed_block;
static size_t pushed_shared;

EXPORTED void **__cudaRegisterFatBinary(void *fatCubin) {
  static void *handle;
  handle = fatCubin;
  return &handle;
}

EXPORTED void __cudaRegisterFatBinaryEnd(void **fatCubinHandle) { (void)fatCubinHandle; }

EXPORTED void __cudaUnregisterFatBinary(void **fatCubinHandle) { (void)fatCubinHandle; }

EXPORTED void __cudaRegisterFunction(void **fatCubinHandle, const char *hostFun, char *deviceFun,
                                     const char *deviceName, int thread_limit, void *tid, void *bid, void *bDim,
                                     void *gDim, int *wSize) {
  (void)fatCubinHandle, (void)deviceFun, (void)thread_limit, (void)tid, (void)bid, (void)bDim, (void)gDim, (void)wSize;
  if (function_count < MAX_FUNCTIONS) {
    functions[function_count].host = hostFun;
    functions[function_count++].name = deviceName;
  } else {
    fprintf(stderr, "fakecuda: more than %d kernels registered: %s cannot be launched\n", MAX_FUNCTIONS, deviceName);
  }
}

EXPORTED void __cudaRegisterVar(void **fatCubinHandle, char *hostVar, char *deviceAddress, const char *deviceName,
                                int ext, size_t size, int constant, int global) {
  (void)fatCubinHandle, (void)deviceAddress, (void)ext, (void)size, (void)constant, (void)global;
  if (strcmp(deviceName, "wrong_words") == 0)
    wrong_words = (unsigned long long *)(void *)hostVar;
}

EXPORTED unsigned __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim, size_t sharedMem, void *stream) {
  (void)stream;
  pushed_grid = gridDim, pushed_block = blockDim, pushed_shared = sharedMem;
  return 0;
}

EXPORTED cudaError_t __cudaPopCallConfiguration(dim3 *gridDim, dim3 *blockDim, size_t *sharedMem, void *stream) {
  (void)stream;
  *gridDim = pushed_grid, *blockDim = pushed_block, *sharedMem = pushed_shared;
  return cudaSuccess;
}

static void fill_on_host(void **args) {
  uint32_t *data = *(uint32_t **)args[0];
  size_t words = *(size_t *)args[1];
  uint64_t base = *(uint64_t *)args[2];
  uint32_t seed = *(uint32_t *)args[3];
  if (words && (int64_t)seed == fake.config.hang_job)
    for (;;)
      pause();
  for (size_t i = 0; i < words; i++)
    data[i] = mem_pattern(base + i, seed);
}

static void step_on_host(void **args) {
  uint32_t *data = *(uint32_t **)args[0];
  size_t words = *(size_t *)args[1];
  uint32_t a = *(uint32_t *)args[2], b = *(uint32_t *)args[3];
  uint64_t began = now_ns();
  for (size_t i = 0; i < words; i++)
    data[i] = a * data[i] + b;
  uint64_t floor_ns = fake.config.pass_ms * 1000000ull, spent = now_ns() - began;
  if (words && spent < floor_ns) {
    uint64_t left = floor_ns - spent;
    struct timespec pause_for = {(time_t)(left / 1000000000ull), (long)(left % 1000000000ull)};
    nanosleep(&pause_for, NULL);
  }
}

static void check_on_host(void **args) {
  uint32_t *data = *(uint32_t **)args[0];
  size_t words = *(size_t *)args[1];
  uint64_t base = *(uint64_t *)args[2];
  uint32_t seed = *(uint32_t *)args[3], a = *(uint32_t *)args[4], b = *(uint32_t *)args[5];
  if (words && (int64_t)seed == fake.config.corrupt_job)
    data[words / 2] ^= 1;
  unsigned long long wrong = 0;
  for (size_t i = 0; i < words; i++)
    wrong += data[i] != a * mem_pattern(base + i, seed) + b;
  if (wrong_words)
    __atomic_add_fetch(wrong_words, wrong, __ATOMIC_RELAXED);
}

EXPORTED cudaError_t cudaLaunchKernel(const void *func, dim3 gridDim, dim3 blockDim, void **args, size_t sharedMem,
                                      cudaStream_t stream) {
  (void)gridDim, (void)blockDim, (void)sharedMem, (void)stream;
  fake_status status = use_device();
  if (status != FAKE_OK)
    return runtime_result(status);
  const char *name = NULL;
  for (int index = 0; index < function_count; index++)
    if (functions[index].host == func)
      name = functions[index].name;
  static const struct {
    const char *name;
    void (*run)(void **args);
  } host_kernels[] = {{"fill_kernel", fill_on_host}, {"step_kernel", step_on_host}, {"check_kernel", check_on_host}};
  for (size_t index = 0; name && args && index < sizeof host_kernels / sizeof host_kernels[0]; index++)
    if (strstr(name, host_kernels[index].name)) { /* the mangled name contains the plain one */
      host_kernels[index].run(args);
      return cudaSuccess;
    }
  last_error = cudaErrorInvalidDeviceFunction;
  return cudaErrorInvalidDeviceFunction;
}

/* ---- the CUDA driver API */

static CUresult driver_result(fake_status status) {
  static const CUresult codes[] = {
      [FAKE_OK] = CUDA_SUCCESS,           [FAKE_INVALID] = CUDA_ERROR_INVALID_VALUE,
      [FAKE_NOT_FOUND] = CUDA_ERROR_INVALID_VALUE, [FAKE_NO_MEMORY] = CUDA_ERROR_OUT_OF_MEMORY,
      [FAKE_NO_DEVICE] = CUDA_ERROR_NO_DEVICE, [FAKE_BAD_DEVICE] = CUDA_ERROR_INVALID_DEVICE};
  return codes[status];
}

/* Driver pointers are CUdeviceptr numbers. */
static fake_status allocate_device_pointer(CUdeviceptr *dptr, uint64_t bytes) {
  if (!dptr)
    return FAKE_INVALID;
  if (bytes == 0) /* unlike cudaMalloc, the driver refuses empty allocations */
    return FAKE_INVALID;
  void *pointer = NULL;
  fake_status status = allocate_memory(&pointer, bytes);
  if (status == FAKE_OK)
    *dptr = (CUdeviceptr)(uintptr_t)pointer;
  return status;
}

EXPORTED CUresult cuInit(unsigned int Flags) { return driver_result(Flags ? FAKE_INVALID : FAKE_OK); }

EXPORTED CUresult cuDeviceGet(CUdevice *device, int ordinal) {
  if (!device)
    return driver_result(FAKE_INVALID);
  if (ordinal != 0)
    return driver_result(FAKE_BAD_DEVICE);
  *device = 0;
  return CUDA_SUCCESS;
}

EXPORTED CUresult cuDeviceGetCount(int *count) {
  if (!count)
    return driver_result(FAKE_INVALID);
  *count = 1;
  return CUDA_SUCCESS;
}

/* What a daemon asks the driver of a GPU without a context (preemptd's driver_probe.c): its SM count. */
EXPORTED CUresult cuDeviceGetAttribute(int *value, CUdevice_attribute attribute, CUdevice dev) {
  if (!value)
    return driver_result(FAKE_INVALID);
  if (dev != 0)
    return driver_result(FAKE_BAD_DEVICE);
  *value = attribute == CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT ? FAKE_SMS : 0;
  return CUDA_SUCCESS;
}

/* The primary context of device 0, made current by the first call that needs it. */
EXPORTED CUresult cuCtxGetDevice(CUdevice *device) {
  if (!device)
    return driver_result(FAKE_INVALID);
  fake_status status = use_device();
  if (status == FAKE_OK)
    *device = 0;
  return driver_result(status);
}

static CUresult driver_uuid(CUuuid *uuid, CUdevice dev) {
  if (!uuid)
    return driver_result(FAKE_INVALID);
  return driver_result(device_uuid((int)dev, (unsigned char *)uuid->bytes));
}

EXPORTED CUresult cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev) { return driver_uuid(uuid, dev); }

#undef cuDeviceGetUuid /* cuda.h's macro names the _v2 entry point; programs built before it call this one */
EXPORTED CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice dev) { return driver_uuid(uuid, dev); }

EXPORTED CUresult cuMemGetInfo_v2(size_t *free, size_t *total) {
  if (!free || !total)
    return driver_result(FAKE_INVALID);
  uint64_t used = 0, capacity = 0;
  fake_status status = memory_info(1, &used, &capacity);
  if (status == FAKE_OK) {
    *total = capacity;
    *free = used < capacity ? capacity - used : 0;
  }
  return driver_result(status);
}

EXPORTED CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *pool_out, CUdevice dev) {
  if (!pool_out)
    return driver_result(FAKE_INVALID);
  if (dev != 0)
    return driver_result(FAKE_BAD_DEVICE);
  *pool_out = default_pool();
  return CUDA_SUCCESS;
}

EXPORTED CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize) {
  return driver_result(allocate_device_pointer(dptr, bytesize));
}

EXPORTED CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags) {
  (void)flags;
  return driver_result(allocate_device_pointer(dptr, bytesize));
}

EXPORTED CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes, size_t Height,
                                     unsigned int ElementSizeBytes) {
  if (!dptr || (ElementSizeBytes != 4 && ElementSizeBytes != 8 && ElementSizeBytes != 16) || !WidthInBytes || !Height)
    return driver_result(FAKE_INVALID);
  void *pointer = NULL;
  fake_status status = allocate_pitched(&pointer, WidthInBytes, Height, pPitch);
  if (status == FAKE_OK)
    *dptr = (CUdeviceptr)(uintptr_t)pointer;
  return driver_result(status);
}

EXPORTED CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream) {
  (void)hStream;
  return driver_result(allocate_device_pointer(dptr, bytesize));
}

EXPORTED CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream) {
  (void)hStream;
  return driver_result(allocate_device_pointer(dptr, bytesize));
}

EXPORTED CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream) {
  (void)hStream;
  return driver_result(pool ? allocate_device_pointer(dptr, bytesize) : FAKE_INVALID);
}

EXPORTED CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream) {
  (void)hStream;
  return driver_result(pool ? allocate_device_pointer(dptr, bytesize) : FAKE_INVALID);
}

/* The driver refuses to free 0. */
static fake_status release_device_pointer(CUdeviceptr dptr) { return dptr ? release(FAKE_MAPPED, dptr) : FAKE_INVALID; }

EXPORTED CUresult cuMemFree_v2(CUdeviceptr dptr) { return driver_result(release_device_pointer(dptr)); }

EXPORTED CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream) {
  (void)hStream;
  return driver_result(release_device_pointer(dptr));
}

EXPORTED CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream) {
  (void)hStream;
  return driver_result(release_device_pointer(dptr));
}

/* Physical memory of virtual memory management: counted at creation, given back at release (the simulated GPU
 * has no mappings to outlive the handle). */
EXPORTED CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size, const CUmemAllocationProp *prop,
                              unsigned long long flags) {
  if (!handle || !prop || size == 0 || flags || prop->type != CU_MEM_ALLOCATION_TYPE_PINNED ||
      prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
    return driver_result(FAKE_INVALID);
  if (prop->location.id != 0)
    return driver_result(FAKE_BAD_DEVICE);
  uint64_t key = 0;
  fake_status status = allocate(FAKE_PHYSICAL, size, &key);
  if (status == FAKE_OK)
    *handle = (CUmemGenericAllocationHandle)key;
  return driver_result(status);
}

EXPORTED CUresult cuMemRelease(CUmemGenericAllocationHandle handle) {
  return driver_result(release(FAKE_PHYSICAL, (uint64_t)handle));
}

static CUresult run_driver_host_function(CUhostFn fn, void *userData) {
  if (!fn)
    return driver_result(FAKE_INVALID);
  fn(userData);
  return CUDA_SUCCESS;
}

EXPORTED CUresult cuLaunchHostFunc(CUstream hStream, CUhostFn fn, void *userData) {
  (void)hStream;
  return run_driver_host_function(fn, userData);
}

EXPORTED CUresult cuLaunchHostFunc_ptsz(CUstream hStream, CUhostFn fn, void *userData) {
  (void)hStream;
  return run_driver_host_function(fn, userData);
}

EXPORTED CUresult cuStreamIsCapturing(CUstream hStream, CUstreamCaptureStatus *captureStatus) {
  (void)hStream;
  if (!captureStatus)
    return driver_result(FAKE_INVALID);
  *captureStatus = CU_STREAM_CAPTURE_STATUS_NONE;
  return CUDA_SUCCESS;
}

EXPORTED CUresult cuStreamIsCapturing_ptsz(CUstream hStream, CUstreamCaptureStatus *captureStatus) {
  (void)hStream;
  if (!captureStatus)
    return driver_result(FAKE_INVALID);
  *captureStatus = CU_STREAM_CAPTURE_STATUS_NONE;
  return CUDA_SUCCESS;
}

EXPORTED CUresult cuGetErrorString(CUresult error, const char **pStr) {
  if (!pStr)
    return CUDA_ERROR_INVALID_VALUE;
  switch (error) {
  case CUDA_SUCCESS: *pStr = "no error"; break;
  case CUDA_ERROR_INVALID_VALUE: *pStr = "invalid argument"; break;
  case CUDA_ERROR_OUT_OF_MEMORY: *pStr = "out of memory"; break;
  case CUDA_ERROR_NO_DEVICE: *pStr = "no CUDA-capable device is detected"; break;
  case CUDA_ERROR_INVALID_DEVICE: *pStr = "invalid device ordinal"; break;
  default: *pStr = NULL; return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

/* ---- NVML: the same simulated GPU, read as a monitoring daemon reads it (no context, no slot). nvml.h is not
 * installed here; these are its ABI. */

typedef int nvmlReturn_t;
typedef struct nvmlDevice_st *nvmlDevice_t;
typedef struct {
  unsigned long long total, free, used;
} nvmlMemory_t;

enum {
  NVML_SUCCESS = 0,
  NVML_ERROR_UNINITIALIZED = 1,
  NVML_ERROR_INVALID_ARGUMENT = 2,
  NVML_ERROR_NOT_FOUND = 6,
  NVML_ERROR_DRIVER_NOT_LOADED = 9,
  NVML_ERROR_UNKNOWN = 999,
};

/* NVML's text form of a UUID: "GPU-" and the 16 bytes as lowercase hex, 8-4-4-4-12. */
#define NVML_UUID_TEXT_BYTES 41

struct nvmlDevice_st {
  int index;
};
static struct nvmlDevice_st the_device; /* the simulated GPU's handle */

static void uuid_text(const unsigned char uuid[16], char text[NVML_UUID_TEXT_BYTES]) {
  int length = snprintf(text, NVML_UUID_TEXT_BYTES, "GPU-");
  for (int index = 0; index < 16; index++) {
    if (index == 4 || index == 6 || index == 8 || index == 10)
      text[length++] = '-';
    length += snprintf(text + length, (size_t)(NVML_UUID_TEXT_BYTES - length), "%02x", uuid[index]);
  }
}

static int nvml_ready(void) {
  pthread_mutex_lock(&fake.lock);
  int ready = fake.nvml_initialized > 0;
  pthread_mutex_unlock(&fake.lock);
  return ready;
}

EXPORTED nvmlReturn_t nvmlInit_v2(void) {
  pthread_mutex_lock(&fake.lock);
  int opened = open_segment();
  if (opened == 0)
    fake.nvml_initialized++;
  pthread_mutex_unlock(&fake.lock);
  return opened == 0 ? NVML_SUCCESS : NVML_ERROR_DRIVER_NOT_LOADED;
}

EXPORTED nvmlReturn_t nvmlShutdown(void) {
  pthread_mutex_lock(&fake.lock);
  nvmlReturn_t status = fake.nvml_initialized > 0 ? NVML_SUCCESS : NVML_ERROR_UNINITIALIZED;
  if (fake.nvml_initialized > 0)
    fake.nvml_initialized--;
  pthread_mutex_unlock(&fake.lock);
  return status;
}

EXPORTED const char *nvmlErrorString(nvmlReturn_t result) {
  switch (result) {
  case NVML_SUCCESS: return "Success";
  case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
  case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
  case NVML_ERROR_NOT_FOUND: return "Not Found";
  case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
  default: return "Unknown Error";
  }
}

EXPORTED nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *device) {
  if (!nvml_ready())
    return NVML_ERROR_UNINITIALIZED;
  if (!uuid || !device)
    return NVML_ERROR_INVALID_ARGUMENT;
  unsigned char bytes[16];
  if (device_uuid(0, bytes) != FAKE_OK)
    return NVML_ERROR_UNKNOWN;
  char ours[NVML_UUID_TEXT_BYTES];
  uuid_text(bytes, ours);
  if (strcmp(uuid, ours) != 0)
    return NVML_ERROR_NOT_FOUND;
  *device = &the_device;
  return NVML_SUCCESS;
}

EXPORTED nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory) {
  if (!nvml_ready())
    return NVML_ERROR_UNINITIALIZED;
  if (device != &the_device || !memory)
    return NVML_ERROR_INVALID_ARGUMENT;
  uint64_t used = 0, capacity = 0;
  if (memory_info(0, &used, &capacity) != FAKE_OK)
    return NVML_ERROR_UNKNOWN;
  memory->total = capacity;
  memory->used = used < capacity ? used : capacity;
  memory->free = capacity - memory->used;
  return NVML_SUCCESS;
}

/* ---- tests only: the simulated GPU's counters, for mem_client's "gpu" command. 0, or -1 when it cannot attach. */

typedef struct fake_gpu_stats {
  uint64_t capacity, used, allocations, failures, reclaimed;
  uint32_t live_processes;
} fake_gpu_stats;

EXPORTED int fake_gpu_get_stats(fake_gpu_stats *stats) {
  if (!stats || lock_gpu(1) != FAKE_OK)
    return -1;
  stats->used = used_bytes();
  stats->capacity = fake.shared->capacity;
  stats->allocations = __atomic_load_n(&fake.shared->allocations, __ATOMIC_SEQ_CST);
  stats->failures = __atomic_load_n(&fake.shared->failures, __ATOMIC_SEQ_CST);
  stats->reclaimed = __atomic_load_n(&fake.shared->reclaimed, __ATOMIC_SEQ_CST);
  stats->live_processes = 0;
  for (uint32_t index = 0; index < FAKE_SLOTS; index++)
    if (slot_alive(index))
      stats->live_processes++;
  unlock_gpu();
  return 0;
}
