/* peer.c: who is on the other end of a connection (SO_PEERCRED, a pidfd, nice, all at connect time).
 * EffiSha §6.4: a user other than root cannot raise its kernels above the default; priorities follow nice. */
#include "preemptd.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Linux 6.5's pidfd of the process that called connect(); older headers lack the name. */
#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77
#endif

bool preemptd_uid_trusted(const preemptd_context *ctx, uid_t uid) { return uid == 0 || uid == ctx->euid; }

/* A pidfd of the connecting process itself (SO_PEERPIDFD); before Linux 6.5 one opened by pid, which names the
 * same process unless it exited between connect() and accept() and its pid was handed out again in that time. */
static int peer_pidfd(int fd, pid_t pid) {
  int pidfd = -1;
  socklen_t length = sizeof pidfd;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &length) == 0 && length == sizeof pidfd && pidfd >= 0)
    return pidfd;
  return (int)syscall(SYS_pidfd_open, pid, 0);
}

/* A pidfd polls readable once its process has exited. */
bool preemptd_pidfd_alive(int pidfd) {
  struct pollfd polled = {pidfd, POLLIN, 0};
  return poll(&polled, 1, 0) == 0;
}

preempt_daemon_status preemptd_peer_identify(int fd, pid_t *pid, uid_t *uid, int *nice, int *nice_error) {
  struct ucred credentials;
  socklen_t length = sizeof credentials;
  /* The kernel's record of who called connect(): a client cannot claim another pid or uid. */
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) != 0 || length != sizeof credentials)
    return PREEMPT_DAEMON_SYSTEM;
  int pidfd = peer_pidfd(fd, credentials.pid);
  if (pidfd < 0)
    return PREEMPT_DAEMON_SYSTEM; /* ESRCH: it is gone already */
  /* /proc/<pid> is read by number; the pidfd pins the process: if it is still alive after the read, the number
   * named it throughout (a live process's pid is never reused), so the nice is that process's. */
  *nice_error = preemptd_read_nice(credentials.pid, nice) == PREEMPT_DAEMON_OK ? 0 : errno ? errno : EINVAL;
  bool alive = preemptd_pidfd_alive(pidfd);
  close(pidfd);
  if (!alive) {
    errno = ESRCH;
    return PREEMPT_DAEMON_SYSTEM;
  }
  *pid = credentials.pid;
  *uid = credentials.uid;
  return PREEMPT_DAEMON_OK;
}

/* Field `wanted` (>= 3, as proc(5) numbers them) of a /proc/<pid>/stat line, as a number. "pid (comm) state ppid ...":
 * comm is the program's name as it chose it, spaces and ')' included, so only the last ')' ends it. */
static preempt_daemon_status stat_field(const char *stat_text, size_t length, int wanted, long *out) {
  const char *close_paren = NULL;
  for (size_t i = 0; i < length; i++)
    if (stat_text[i] == ')')
      close_paren = stat_text + i;
  if (!close_paren || wanted < 3)
    return PREEMPT_DAEMON_MALFORMED;
  const char *p = close_paren + 1, *end = stat_text + length;
  for (int field = 3; field <= wanted; field++) {
    while (p < end && *p == ' ')
      p++;
    if (p == end)
      return PREEMPT_DAEMON_MALFORMED;
    const char *start = p;
    while (p < end && *p != ' ' && *p != '\n')
      p++;
    if (field < wanted)
      continue;
    char number[24];
    size_t digits = (size_t)(p - start);
    if (digits == 0 || digits >= sizeof number)
      return PREEMPT_DAEMON_MALFORMED;
    memcpy(number, start, digits);
    number[digits] = '\0';
    char *parsed_end = NULL;
    errno = 0;
    long value = strtol(number, &parsed_end, 10);
    if (errno != 0 || *parsed_end != '\0')
      return PREEMPT_DAEMON_MALFORMED;
    *out = value;
    return PREEMPT_DAEMON_OK;
  }
  return PREEMPT_DAEMON_MALFORMED;
}

preempt_daemon_status preemptd_parse_nice(const char *stat_text, size_t length, int *nice) {
  long value = 0;
  /* nice is field 19 */
  if (stat_field(stat_text, length, 19, &value) != PREEMPT_DAEMON_OK || value < -20 || value > 19)
    return PREEMPT_DAEMON_MALFORMED;
  *nice = (int)value;
  return PREEMPT_DAEMON_OK;
}

preempt_daemon_status preemptd_parse_ppid(const char *stat_text, size_t length, pid_t *ppid) {
  long value = 0;
  /* ppid is field 4; 0 for the first process and for kernel threads */
  if (stat_field(stat_text, length, 4, &value) != PREEMPT_DAEMON_OK || value < 0 || value > INT32_MAX)
    return PREEMPT_DAEMON_MALFORMED;
  *ppid = (pid_t)value;
  return PREEMPT_DAEMON_OK;
}

/* The text of /proc/<pid>/stat: the whole line is well under 1 KB (comm is at most 64 bytes); a truncated read fails
 * the parse that follows. */
static preempt_daemon_status read_stat(pid_t pid, char *text, size_t bytes, size_t *length) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return PREEMPT_DAEMON_SYSTEM;
  ssize_t got = read(fd, text, bytes);
  int saved = errno;
  close(fd);
  errno = saved;
  if (got <= 0)
    return PREEMPT_DAEMON_SYSTEM;
  *length = (size_t)got;
  return PREEMPT_DAEMON_OK;
}

preempt_daemon_status preemptd_read_ppid(pid_t pid, pid_t *ppid) {
  char text[1024];
  size_t length = 0;
  preempt_daemon_status status = read_stat(pid, text, sizeof text, &length);
  return status != PREEMPT_DAEMON_OK ? status : preemptd_parse_ppid(text, length, ppid);
}

preempt_daemon_status preemptd_read_nice(pid_t pid, int *nice) {
  char text[1024];
  size_t length = 0;
  preempt_daemon_status status = read_stat(pid, text, sizeof text, &length);
  return status != PREEMPT_DAEMON_OK ? status : preemptd_parse_nice(text, length, nice);
}
