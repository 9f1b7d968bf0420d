/* futex.c: wait and ring on a 32-bit word in memory shared between processes (Linux futex(2), not private).
 * The hot path between preemptd and its clients: EffiSha §6.1's stubs change state without a socket round trip. */
#define _GNU_SOURCE /* syscall() is not declared under plain C11 */
#include "preempt/daemon_protocol.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

int preempt_futex_wait(uint32_t *word, uint32_t expected, int64_t timeout_ns) {
  struct timespec timeout;
  struct timespec *relative = NULL;
  if (timeout_ns >= 0) {
    timeout.tv_sec = (time_t)(timeout_ns / 1000000000);
    timeout.tv_nsec = (long)(timeout_ns % 1000000000);
    relative = &timeout;
  }
  /* FUTEX_WAIT (not FUTEX_WAIT_PRIVATE): the word lives in a memfd mapped by two processes, and a private futex is
   * keyed by the virtual address in one process only. Its timeout is relative, unlike FUTEX_WAIT_BITSET's. */
  long result = syscall(SYS_futex, word, FUTEX_WAIT, expected, relative, NULL, 0);
  if (result == 0)
    return 0;
  switch (errno) {
  case EAGAIN:    /* the word already differed: whatever the caller waits for may have happened */
  case EINTR:     /* a signal: callers recheck the word anyway, so a spurious wake is harmless */
    return 0;
  case ETIMEDOUT:
    return 1;
  default:
    return -1;
  }
}

void preempt_futex_ring(uint32_t *word) {
  /* The add comes first and is seq_cst: a waiter that read the old value either sleeps before the wake (and is woken)
   * or finds the word changed when the kernel rechecks it (EAGAIN). No wake-up is lost in between. */
  __atomic_add_fetch(word, 1, __ATOMIC_SEQ_CST);
  /* Everyone: the daemon's doorbell has one waiter, but a client's wake word may have several threads behind it. */
  (void)syscall(SYS_futex, word, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}
