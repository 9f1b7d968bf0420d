/* stalled_waiter.c: a waiter on the memory ledger's lock that, once the kernel wakes it, never takes the lock.
 * schedGPU §3.2 (no abandonment: a dead holder's lock must reach the other waiters), for mem_segment.c's sliced lock.
 *
 * Usage: stalled_waiter SEGMENT     (the ledger's shared-memory name, /<prefix>-<uid>-<GPU UUID in hex>)
 *
 * It queues on the ledger's robust mutex as glibc's pthread_mutex_lock does (the futex word's waiters bit set, then
 * FUTEX_WAIT on the word, shared), but keeps no robust-list entry while it waits, so that nothing it does after its
 * wake-up reaches the kernel. When the holder dies the kernel marks the word OWNER_DIED and wakes exactly one
 * waiter, the first queued: queued first, this one prints "woken owner_died=1" (0 if another waiter took the lock
 * before it looked) and then sleeps until killed. It
 * stands for a woken waiter that never takes the lock: one killed before it could on a kernel that does not wake
 * the next waiter for it (Linux before 5.6), one stopped or frozen, or descheduled for long. The waiters queued
 * after it sleep on until a process locks afresh; mem_segment.c's lock wakes them at the end of each slice.
 * glibc only: the futex word is pthread_mutex_t's __data.__lock. Exit 2 on bad arguments, 1 when the segment is
 * not a ledger or its lock is not held. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "memory.h"

int main(int argc, char **argv) {
  if (argc != 2 || argv[1][0] != '/') {
    fprintf(stderr, "usage: stalled_waiter /SEGMENT\n");
    return 2;
  }
  int fd = shm_open(argv[1], O_RDWR, 0);
  struct stat status;
  if (fd < 0 || fstat(fd, &status) != 0) {
    fprintf(stderr, "stalled_waiter: cannot open /dev/shm%s: %s\n", argv[1], strerror(errno));
    return 1;
  }
  if ((size_t)status.st_size < sizeof(preempt_mem_shared)) {
    fprintf(stderr, "stalled_waiter: /dev/shm%s is too small for a ledger\n", argv[1]);
    return 1;
  }
  preempt_mem_shared *shared = mmap(NULL, sizeof *shared, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (shared == MAP_FAILED) {
    fprintf(stderr, "stalled_waiter: cannot map /dev/shm%s: %s\n", argv[1], strerror(errno));
    return 1;
  }
  if (shared->magic != PREEMPT_MEM_SEGMENT_MAGIC || shared->version != PREEMPT_MEM_SEGMENT_VERSION ||
      shared->size != sizeof *shared) {
    fprintf(stderr, "stalled_waiter: /dev/shm%s is not a ledger of this layout\n", argv[1]);
    return 1;
  }
  int *word = &shared->lock.__data.__lock;
  for (;;) {
    int value = __atomic_load_n(word, __ATOMIC_SEQ_CST);
    if ((value & FUTEX_TID_MASK) == 0) {
      fprintf(stderr, "stalled_waiter: the ledger's lock is not held (word 0x%x): nothing to wait behind\n",
              (unsigned)value);
      return 1;
    }
    int waiting = value | FUTEX_WAITERS;
    if (value != waiting &&
        !__atomic_compare_exchange_n(word, &value, waiting, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
      continue;
    if (syscall(SYS_futex, word, FUTEX_WAIT, waiting, NULL, NULL, 0) == 0)
      break;
    if (errno != EAGAIN && errno != EINTR) {
      fprintf(stderr, "stalled_waiter: futex wait: %s\n", strerror(errno));
      return 1;
    }
  }
  printf("woken owner_died=%d\n", (__atomic_load_n(word, __ATOMIC_SEQ_CST) & FUTEX_OWNER_DIED) != 0);
  fflush(stdout);
  for (;;)
    pause();
}
