/* daemon_socket.c: the runtime's end of preemptd's socket, shared by kernel scheduling and memory admission.
 * FLEP §3 (one scheduler per node), schedGPU §3.1 (its client-server mode over a Unix socket). */
#define _GNU_SOURCE /* MSG_CMSG_CLOEXEC, program_invocation_short_name */
#include "daemon_socket.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "preempt/daemon_protocol.h"

uint64_t preempt_monotonic_ns(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
}

void preempt_program_name(char *field, size_t field_bytes) {
  char name[64] = "";
  FILE *comm = fopen("/proc/self/comm", "re");
  if (comm) {
    if (fgets(name, sizeof name, comm))
      name[strcspn(name, "\n")] = '\0';
    fclose(comm);
  }
  preempt_copy_name(field, field_bytes, name[0] ? name : program_invocation_short_name);
}

int preempt_daemon_connect(const char *path, int *socket_fd, char *why, size_t why_bytes) {
  *socket_fd = -1;
  struct sockaddr_un address = {.sun_family = AF_UNIX};
  if (strlen(path) >= sizeof address.sun_path) {
    snprintf(why, why_bytes, "the socket path '%s' is longer than a Unix socket allows", path);
    return PREEMPT_LINK_FAILED;
  }
  strcpy(address.sun_path, path);
  /* Non-blocking: a daemon whose listen queue is full makes connect fail at once (EAGAIN) instead of blocking
   * the launch or the allocation. */
  int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    snprintf(why, why_bytes, "creating a socket: %s", strerror(errno));
    return PREEMPT_LINK_FAILED;
  }
  if (connect(fd, (const struct sockaddr *)&address, sizeof address) != 0) {
    int error = errno;
    close(fd);
    /* No socket file, or a stale one nobody listens on: no daemon. */
    if (error == ENOENT || error == ECONNREFUSED) {
      snprintf(why, why_bytes, "%s", strerror(error));
      return PREEMPT_LINK_ABSENT;
    }
    snprintf(why, why_bytes, "connecting to preemptd at %s: %s", path, strerror(error));
    return PREEMPT_LINK_FAILED;
  }
  *socket_fd = fd;
  return PREEMPT_LINK_OK;
}

int preempt_daemon_wait(int socket_fd, short events, uint64_t deadline_ns) {
  for (;;) {
    uint64_t now = preempt_monotonic_ns();
    if (now >= deadline_ns)
      return 0;
    struct pollfd entry = {.fd = socket_fd, .events = events};
    uint64_t left_ms = (deadline_ns - now + 999999) / 1000000;
    int ready = poll(&entry, 1, left_ms > 1000000 ? 1000000 : (int)left_ms);
    if (ready > 0)
      return 1;
    if (ready < 0 && errno != EINTR)
      return -1;
  }
}

int preempt_daemon_send(int socket_fd, const void *message, size_t length, uint64_t deadline_ns) {
  for (;;) {
    ssize_t sent = send(socket_fd, message, length, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (sent == (ssize_t)length)
      return 0;
    if (sent >= 0) {
      errno = EMSGSIZE;
      return -1;
    }
    if (errno == EINTR)
      continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK)
      return -1;
    int ready = preempt_daemon_wait(socket_fd, POLLOUT, deadline_ns);
    if (ready <= 0) {
      if (ready == 0)
        errno = ETIMEDOUT;
      return -1;
    }
  }
}

int preempt_daemon_receive(int socket_fd, preempt_reply_buffer *buffer, size_t *length, int fds[2], int *fd_count,
                           uint64_t deadline_ns) {
  int kept_fds[2];
  int kept = 0;
  if (fd_count)
    *fd_count = 0;
  for (;;) {
    int ready = preempt_daemon_wait(socket_fd, POLLIN, deadline_ns);
    if (ready <= 0)
      return ready == 0 ? 1 : -1;
    int message_flags = 0;
    ssize_t got = preempt_receive_packet(socket_fd, buffer->bytes, sizeof buffer->bytes, MSG_DONTWAIT,
                                         fds ? fds : kept_fds, fds ? 2 : 0, &kept, &message_flags);
    if (got < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK))
      continue;
    if (got < 0)
      return -1;
    if (got == 0 && kept == 0)
      return 2; /* SOCK_SEQPACKET: end of the connection */
    if (message_flags & (MSG_TRUNC | MSG_CTRUNC)) {
      while (fds && kept > 0)
        close(fds[--kept]);
      errno = EMSGSIZE;
      return -1;
    }
    if (fd_count)
      *fd_count = kept;
    *length = (size_t)got;
    return 0;
  }
}
