/* mem_segment.c: the daemonless ledger: one shared-memory segment per GPU, a robust mutex, futex wake-ups.
 * schedGPU §3.2: shared memory, integrity check and recovery, sanity check of dead clients, no abandonment. */
#define _GNU_SOURCE
#include "memory.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "preempt/daemon_protocol.h" /* preempt_futex_wait / ring */

#define SAY(...)                                                                                                      \
  do {                                                                                                                \
    if (why && why_bytes)                                                                                             \
      snprintf(why, why_bytes, __VA_ARGS__);                                                                          \
  } while (0)

static int init_shared(preempt_mem_shared *shared, uint64_t capacity_bytes, preempt_mem_policy policy) {
  memset(shared, 0, sizeof *shared);
  pthread_mutexattr_t attributes;
  if (pthread_mutexattr_init(&attributes) != 0)
    return -1;
  int status = pthread_mutexattr_setpshared(&attributes, PTHREAD_PROCESS_SHARED);
  if (status == 0)
    status = pthread_mutexattr_setrobust(&attributes, PTHREAD_MUTEX_ROBUST);
  if (status == 0)
    status = pthread_mutex_init(&shared->lock, &attributes);
  pthread_mutexattr_destroy(&attributes);
  if (status != 0)
    return -1;
  preempt_mem_ledger_init(&shared->ledger, capacity_bytes, policy);
  shared->size = sizeof *shared;
  shared->version = PREEMPT_MEM_SEGMENT_VERSION;
  __atomic_store_n(&shared->magic, PREEMPT_MEM_SEGMENT_MAGIC, __ATOMIC_RELEASE);
  return 0;
}

/* A liveness byte: the kernel drops an open file description's locks when the last descriptor of it closes,
 * which a kill -9 does too, so a locked byte means a live client in any pid namespace, and a pid reused by
 * another process cannot pass for a dead client. */
static int lock_liveness_byte(int fd, uint64_t key) {
  struct flock byte = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = (off_t)key, .l_len = 1};
  return fcntl(fd, F_OFD_SETLK, &byte);
}

static int liveness_byte_held(int fd, uint64_t key) {
  struct flock byte = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = (off_t)key, .l_len = 1};
  if (fcntl(fd, F_OFD_GETLK, &byte) != 0)
    return 1; /* cannot tell: count it alive rather than take its memory */
  return byte.l_type != F_UNLCK;
}

/* Names tried in turn: the shared one, then ".1" to ".7". Every process of a user tries the same names in the same
 * order, so they meet at the first one that user owns or can create; a name another user squats is passed over. */
#define SEGMENT_NAMES 8

/* An open descriptor of `name` that this user owns, created 0600 here if nobody had it; -1 with errno (EACCES for
 * a name someone else holds). Checked before any lock: a file of another user is never locked, so a squatter that
 * holds a lock on it cannot make this process wait. */
static int open_own_segment(const char *name) {
  int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd >= 0 || errno != EEXIST)
    return fd;
  fd = shm_open(name, O_RDWR | O_NOFOLLOW | O_CLOEXEC, 0);
  if (fd < 0)
    return -1;
  struct stat status;
  if (fstat(fd, &status) != 0 || !S_ISREG(status.st_mode) || status.st_uid != geteuid() ||
      (status.st_mode & 077) != 0) {
    close(fd);
    errno = EACCES;
    return -1;
  }
  return fd;
}

int preempt_mem_segment_open(preempt_mem_segment *segment, const char *name, uint64_t capacity_bytes,
                             preempt_mem_policy policy, int32_t priority, char *why, size_t why_bytes) {
  memset(segment, 0, sizeof *segment);
  segment->fd = -1;
  segment->client = PREEMPT_MEM_NO_INDEX;
  segment->priority = priority;
  int fd = -1, squatted = 0;
  for (int attempt = 0; attempt < SEGMENT_NAMES && fd < 0; attempt++) {
    if (attempt == 0)
      snprintf(segment->name, sizeof segment->name, "%s", name);
    else
      snprintf(segment->name, sizeof segment->name, "%s.%d", name, attempt);
    fd = open_own_segment(segment->name);
    if (fd < 0 && errno != EACCES) {
      SAY("cannot open the memory ledger /dev/shm%s: %s", segment->name, strerror(errno));
      return -1;
    }
    squatted += fd < 0;
  }
  if (fd < 0) {
    SAY("the memory ledger /dev/shm%s and its %d alternatives belong to other users or have other users' "
        "permissions", name, SEGMENT_NAMES - 1);
    return -1;
  }
  if (squatted)
    fprintf(stderr, "preempt: /dev/shm%s is another user's: this user's memory ledger is /dev/shm%s\n", name,
            segment->name);
  name = segment->name;
  /* Whoever finds the segment empty initializes it under an exclusive flock; the others wait on a shared
   * one. A creator killed halfway leaves no magic: the next process does the work again. */
  if (flock(fd, LOCK_EX) != 0) {
    SAY("cannot lock the memory ledger /dev/shm%s: %s", name, strerror(errno));
    close(fd);
    return -1;
  }
  struct stat status;
  int failed = fstat(fd, &status) != 0;
  if (!failed && (size_t)status.st_size < sizeof(preempt_mem_shared))
    failed = ftruncate(fd, sizeof(preempt_mem_shared)) != 0;
  void *mapping = failed ? MAP_FAILED
                         : mmap(NULL, sizeof(preempt_mem_shared), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (mapping == MAP_FAILED) {
    SAY("cannot map the memory ledger /dev/shm%s: %s", name, strerror(errno));
    flock(fd, LOCK_UN);
    close(fd);
    return -1;
  }
  preempt_mem_shared *shared = mapping;
  if (__atomic_load_n(&shared->magic, __ATOMIC_ACQUIRE) != PREEMPT_MEM_SEGMENT_MAGIC) {
    if (init_shared(shared, capacity_bytes, policy) != 0) {
      SAY("cannot set up the memory ledger's lock");
      munmap(mapping, sizeof(preempt_mem_shared));
      flock(fd, LOCK_UN);
      close(fd);
      return -1;
    }
  } else if (shared->version != PREEMPT_MEM_SEGMENT_VERSION || shared->size != sizeof *shared) {
    SAY("the memory ledger /dev/shm%s has layout version %u (%u bytes); this program speaks %u (%zu bytes): "
        "processes of another preempt version share this GPU",
        name, shared->version, shared->size, PREEMPT_MEM_SEGMENT_VERSION, sizeof *shared);
    munmap(mapping, sizeof(preempt_mem_shared));
    flock(fd, LOCK_UN);
    close(fd);
    return -1;
  }
  flock(fd, LOCK_UN);
  /* Bytes above the segment's own size, so that no two clients of any ledger generation share one. */
  uint64_t random_bits = 0;
  if (getrandom(&random_bits, sizeof random_bits, 0) != sizeof random_bits)
    random_bits = preempt_monotonic_ns() ^ ((uint64_t)getpid() << 32);
  segment->liveness_key = (1ull << 20) + (random_bits & ((1ull << 60) - 1));
  if (lock_liveness_byte(fd, segment->liveness_key) != 0) {
    SAY("cannot lock a liveness byte of /dev/shm%s: %s", name, strerror(errno));
    munmap(mapping, sizeof(preempt_mem_shared));
    close(fd);
    return -1;
  }
  segment->fd = fd;
  segment->shared = shared;
  segment->generation = UINT32_MAX; /* attach on the first lock */
  return 0;
}

void preempt_mem_segment_close(preempt_mem_segment *segment) {
  if (segment->shared)
    munmap(segment->shared, sizeof(preempt_mem_shared));
  if (segment->fd >= 0)
    close(segment->fd); /* drops the liveness byte */
  segment->shared = NULL;
  segment->fd = -1;
}

/* The holder died inside the lock. Every ledger call leaves a crash-consistent state (mem_ledger.h), so the
 * check fails only for a ledger scribbled on; then nothing in it is trusted: it starts again empty, and each
 * live client restores what it holds when it next takes the lock (schedGPU §3.2's recovery, without a
 * backup file: the live clients are the backup). */
static void recover(preempt_mem_segment *segment) {
  preempt_mem_shared *shared = segment->shared;
  char problem[160];
  if (preempt_mem_ledger_check(&shared->ledger, problem, sizeof problem) != 0) {
    uint64_t capacity = shared->ledger.capacity_bytes;
    preempt_mem_policy policy = (preempt_mem_policy)shared->ledger.policy;
    if (capacity == 0 || (unsigned)policy >= PREEMPT_MEM_POLICY_COUNT)
      return; /* cannot even tell the size: left for the caller's check, which reports it */
    fprintf(stderr, "preempt: the memory ledger /dev/shm%s was damaged (%s): reinitialized\n", segment->name,
            problem);
    preempt_mem_ledger_init(&shared->ledger, capacity, policy);
    shared->reinitializations++;
    __atomic_add_fetch(&shared->generation, 1, __ATOMIC_RELEASE);
  }
}

/* How long one wait for the ledger's lock lasts before the waiter looks at the lock again. When a holder dies the
 * kernel marks the lock's word and wakes exactly one waiter; one that never takes the lock after that (killed on a
 * kernel that does not wake the next for it, before Linux 5.6; stopped; frozen; descheduled for long) would leave
 * the others asleep until some process locks afresh, and while every client waits for the lock none does. A wait
 * that ends finds the dead holder's mark the next time round and takes the lock with EOWNERDEAD. */
#define LOCK_SLICE_NS 100000000L

/* pthread_mutex_lock, in bounded waits (pthread_mutex_timedlock's deadline is on CLOCK_REALTIME, as POSIX has
 * it; a clock step only lengthens or shortens one slice). Returns what pthread_mutex_lock would. */
static int lock_in_slices(pthread_mutex_t *lock) {
  for (;;) {
    struct timespec deadline;
    if (clock_gettime(CLOCK_REALTIME, &deadline) != 0)
      return pthread_mutex_lock(lock); /* no clock: one unbounded wait rather than none */
    deadline.tv_nsec += LOCK_SLICE_NS;
    if (deadline.tv_nsec >= 1000000000L) {
      deadline.tv_sec++;
      deadline.tv_nsec -= 1000000000L;
    }
    int status = pthread_mutex_timedlock(lock, &deadline);
    if (status != ETIMEDOUT)
      return status;
  }
}

int preempt_mem_segment_lock(preempt_mem_segment *segment, char *why, size_t why_bytes) {
  preempt_mem_shared *shared = segment->shared;
  int status = lock_in_slices(&shared->lock);
  if (status == EOWNERDEAD) {
    recover(segment);
    pthread_mutex_consistent(&shared->lock);
    shared->owner_deaths++;
    preempt_mem_segment_reclaim_dead(segment);
    /* The dead holder may have granted requests and died before ringing for them; and the reclaim above can
     * miss it: the kernel hands a robust mutex on while the process exits (exit_mm) before it closes its files
     * (exit_files), so its liveness byte may still read as held here. Ring regardless: no waiter sleeps on a
     * wake-up the dead one owed it. */
    preempt_mem_segment_ring(segment);
  } else if (status != 0) {
    SAY("cannot lock the memory ledger /dev/shm%s: %s", segment->name, strerror(status));
    return -1;
  }
  char problem[160];
  if (segment->generation != shared->generation || segment->client == PREEMPT_MEM_NO_INDEX ||
      !shared->ledger.clients[segment->client].in_use ||
      shared->ledger.clients[segment->client].liveness_key != segment->liveness_key) {
    /* First use, or our slot went away (a reinitialized ledger; or a slot wrongly judged dead). A new client
     * checks the ledger's integrity first (schedGPU §3.2). */
    if (preempt_mem_ledger_check(&shared->ledger, problem, sizeof problem) != 0) {
      recover(segment);
      if (preempt_mem_ledger_check(&shared->ledger, problem, sizeof problem) != 0) {
        pthread_mutex_unlock(&shared->lock);
        SAY("the memory ledger /dev/shm%s is damaged beyond repair (%s); remove it", segment->name, problem);
        return -1;
      }
    }
    uint32_t client;
    if (preempt_mem_ledger_attach(&shared->ledger, (uint32_t)getpid(), segment->priority, segment->liveness_key,
                                  &client) != PREEMPT_MEM_OK) {
      preempt_mem_segment_reclaim_dead(segment);
      if (preempt_mem_ledger_attach(&shared->ledger, (uint32_t)getpid(), segment->priority,
                                    segment->liveness_key, &client) != PREEMPT_MEM_OK) {
        pthread_mutex_unlock(&shared->lock);
        SAY("the memory ledger /dev/shm%s has no free client slot (%d processes)", segment->name,
            PREEMPT_MEM_MAX_CLIENTS);
        return -1;
      }
    }
    preempt_mem_ledger_restore(&shared->ledger, client, segment->held_bytes);
    segment->client = client;
    segment->generation = shared->generation;
  }
  return 0;
}

void preempt_mem_segment_unlock(preempt_mem_segment *segment) { pthread_mutex_unlock(&segment->shared->lock); }

void preempt_mem_segment_ring(preempt_mem_segment *segment) { preempt_futex_ring(&segment->shared->wake); }

uint32_t preempt_mem_segment_reclaim_dead(preempt_mem_segment *segment) {
  preempt_mem_ledger *ledger = &segment->shared->ledger;
  uint32_t reclaimed = 0;
  for (uint32_t index = 0; index < PREEMPT_MEM_MAX_CLIENTS; index++) {
    preempt_mem_client *slot = &ledger->clients[index];
    /* Our own byte reads as free through our own descriptor: never judge ourselves. */
    if (!slot->in_use || slot->liveness_key == segment->liveness_key)
      continue;
    if (liveness_byte_held(segment->fd, slot->liveness_key))
      continue;
    preempt_mem_ledger_detach(ledger, index);
    ledger->dead_clients++;
    reclaimed++;
  }
  segment->last_reclaim_ns = preempt_monotonic_ns();
  if (reclaimed)
    preempt_mem_segment_ring(segment);
  return reclaimed;
}

void preempt_mem_segment_detach(preempt_mem_segment *segment) {
  if (segment->client != PREEMPT_MEM_NO_INDEX && segment->generation == segment->shared->generation &&
      segment->shared->ledger.clients[segment->client].liveness_key == segment->liveness_key)
    preempt_mem_ledger_detach(&segment->shared->ledger, segment->client);
  segment->client = PREEMPT_MEM_NO_INDEX;
  segment->held_bytes = 0;
  preempt_mem_segment_ring(segment);
}
