/* shared_pages.c: the memfd pages the daemon shares: one stub page per client, one doorbell for all.
 * EffiSha §6.1 (kernel stubs in memory both the scheduler and the program can reach; no call per launch). */
#include "preemptd.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* A sealed memfd of `bytes`, mapped shared. Sealed against shrinking so a client cannot truncate it under
 * the daemon (a truncated mapping faults with SIGBUS on access), against growing and further sealing. */
static preempt_daemon_status sealed_page(const char *name, size_t bytes, int *out_fd, void **out_page) {
  int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0)
    return PREEMPT_DAEMON_SYSTEM;
  if (ftruncate(fd, (off_t)bytes) != 0 || fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
    int saved = errno;
    close(fd);
    errno = saved;
    return PREEMPT_DAEMON_SYSTEM;
  }
  void *page = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (page == MAP_FAILED) {
    int saved = errno;
    close(fd);
    errno = saved;
    return PREEMPT_DAEMON_SYSTEM;
  }
  *out_fd = fd;
  *out_page = page;
  return PREEMPT_DAEMON_OK;
}

preempt_daemon_status preemptd_doorbell_create(int *out_fd, preempt_doorbell_page **out_page) {
  void *page = NULL;
  preempt_daemon_status status = sealed_page("preemptd-doorbell", sizeof(preempt_doorbell_page), out_fd, &page);
  if (status == PREEMPT_DAEMON_OK)
    *out_page = page; /* ftruncate zero-filled it: doorbell 0 */
  return status;
}

preempt_daemon_status preemptd_page_create(uint32_t client_id, int *out_fd, preempt_client_page **out_page) {
  void *mapped = NULL;
  preempt_daemon_status status = sealed_page("preemptd-client", sizeof(preempt_client_page), out_fd, &mapped);
  if (status != PREEMPT_DAEMON_OK)
    return status;
  preempt_client_page *page = mapped;
  /* Zero-filled: every stub FREE. The version and id are written before the fd leaves the daemon. */
  page->page_version = PREEMPT_DAEMON_PROTOCOL_VERSION;
  page->client_id = client_id;
  *out_page = page;
  return PREEMPT_DAEMON_OK;
}

void preemptd_page_release(preempt_client_page *page) {
  /* munmap of a mapping we made cannot fail; the memfd dies with the client's last reference. */
  if (page)
    munmap(page, sizeof *page);
}

void preemptd_ring_doorbell(preemptd_context *ctx) { preempt_futex_ring(&ctx->doorbell->doorbell); }
