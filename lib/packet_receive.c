/* packet_receive.c: one SOCK_SEQPACKET packet and the descriptors that came with it, for preemptd and its clients.
 * EffiSha §6.1 / FLEP §3: registration hands the stub page over a Unix socket (SCM_RIGHTS). */
#define _GNU_SOURCE /* MSG_CMSG_CLOEXEC */
#include "preempt/daemon_protocol.h"

#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

ssize_t preempt_receive_packet(int socket_fd, void *buffer, size_t capacity, int flags, int *fds, int max_fds,
                               int *fd_count, int *message_flags) {
  union {
    struct cmsghdr align;
    char bytes[CMSG_SPACE(sizeof(int) * PREEMPT_RECEIVE_MAX_FDS)];
  } control;
  struct iovec vector = {.iov_base = buffer, .iov_len = capacity};
  struct msghdr header = {.msg_iov = &vector, .msg_iovlen = 1, .msg_control = control.bytes,
                          .msg_controllen = sizeof control.bytes};
  *fd_count = 0;
  ssize_t got = recvmsg(socket_fd, &header, flags | MSG_CMSG_CLOEXEC);
  if (got < 0)
    return -1;
  /* Descriptors beyond what the caller keeps are closed at once: a peer must not fill our table. */
  for (struct cmsghdr *message = CMSG_FIRSTHDR(&header); message; message = CMSG_NXTHDR(&header, message)) {
    if (message->cmsg_level != SOL_SOCKET || message->cmsg_type != SCM_RIGHTS)
      continue;
    size_t count = (message->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t index = 0; index < count; index++) {
      int fd;
      memcpy(&fd, CMSG_DATA(message) + index * sizeof(int), sizeof fd);
      if (*fd_count < max_fds)
        fds[(*fd_count)++] = fd;
      else
        close(fd);
    }
  }
  *message_flags = header.msg_flags;
  return got;
}
