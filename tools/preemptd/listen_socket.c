/* listen_socket.c: the daemon's Unix socket: its directory, a stale socket or a live daemon at the path, bind.
 * FLEP §3 (one scheduler per node, so a second daemon on the same socket must not start). */
#include "preemptd.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

static preempt_daemon_status fail(char *why, size_t why_bytes, const char *what, const char *path) {
  snprintf(why, why_bytes, "%s %s: %s", what, path, strerror(errno));
  return PREEMPT_DAEMON_SYSTEM;
}

/* mkdir -p of the socket's directory, 0755: /run/preemptd may not exist outside systemd. */
static preempt_daemon_status make_parent(const char *path, char *why, size_t why_bytes) {
  char dir[sizeof ((struct sockaddr_un *)0)->sun_path];
  snprintf(dir, sizeof dir, "%s", path);
  char *slash = strrchr(dir, '/');
  if (!slash || slash == dir)
    return PREEMPT_DAEMON_OK; /* the current directory or / */
  *slash = '\0';
  for (char *p = dir + 1;; p++) {
    if (*p != '/' && *p != '\0')
      continue;
    char saved = *p;
    *p = '\0';
    if (mkdir(dir, 0755) != 0 && errno != EEXIST)
      return fail(why, why_bytes, "cannot create directory", dir);
    *p = saved;
    if (saved == '\0')
      break;
  }
  return PREEMPT_DAEMON_OK;
}

/* Something is at the path: a live daemon (refuse), a stale socket (remove), anything else (refuse:
 * never unlink a file the daemon did not make). */
static preempt_daemon_status clear_path(const char *path, const struct sockaddr_un *address, char *why,
                                        size_t why_bytes) {
  struct stat info;
  if (lstat(path, &info) != 0)
    return errno == ENOENT ? PREEMPT_DAEMON_OK : fail(why, why_bytes, "cannot stat", path);
  if (!S_ISSOCK(info.st_mode)) {
    snprintf(why, why_bytes, "%s exists and is not a socket", path);
    return PREEMPT_DAEMON_SYSTEM;
  }
  int probe = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (probe < 0)
    return fail(why, why_bytes, "cannot create a socket to probe", path);
  int answered = connect(probe, (const struct sockaddr *)address, sizeof *address) == 0;
  int probe_errno = errno;
  close(probe);
  if (answered) {
    snprintf(why, why_bytes, "another preemptd answers on %s", path);
    return PREEMPT_DAEMON_SYSTEM;
  }
  if (probe_errno != ECONNREFUSED) {
    /* EPROTOTYPE: some other program's stream socket; EACCES: not ours to remove. */
    errno = probe_errno;
    return fail(why, why_bytes, "cannot probe the socket at", path);
  }
  if (unlink(path) != 0 && errno != ENOENT)
    return fail(why, why_bytes, "cannot remove the stale socket", path);
  return PREEMPT_DAEMON_OK;
}

preempt_daemon_status preemptd_listen(const char *path, int *out_fd, char *why, size_t why_bytes) {
  struct sockaddr_un address;
  memset(&address, 0, sizeof address);
  address.sun_family = AF_UNIX;
  if (!path || path[0] == '\0' || strlen(path) >= sizeof address.sun_path) {
    snprintf(why, why_bytes, "socket path must be 1 to %zu bytes", sizeof address.sun_path - 1);
    return PREEMPT_DAEMON_MALFORMED;
  }
  memcpy(address.sun_path, path, strlen(path));
  preempt_daemon_status status = make_parent(path, why, why_bytes);
  if (status == PREEMPT_DAEMON_OK)
    status = clear_path(path, &address, why, why_bytes);
  if (status != PREEMPT_DAEMON_OK)
    return status;
  int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0)
    return fail(why, why_bytes, "cannot create the socket for", path);
  if (bind(fd, (const struct sockaddr *)&address, sizeof address) != 0) {
    status = fail(why, why_bytes, "cannot bind", path);
    close(fd);
    return status;
  }
  /* 0666: anyone may connect; who they are comes from SO_PEERCRED, not from file permissions. */
  if (chmod(path, 0666) != 0 || listen(fd, 64) != 0) {
    status = fail(why, why_bytes, "cannot listen on", path);
    close(fd);
    unlink(path);
    return status;
  }
  *out_fd = fd;
  return PREEMPT_DAEMON_OK;
}
