/* replies.c: every packet preemptd sends a client (STATUS and the rest, descriptors with REGISTERED), never blocking.
 * FLEP §3 and schedGPU §3.1 (a per-node daemon answering its clients over a socket). */
#include "preemptd.h"

#include <string.h>
#include <sys/socket.h>

/* Replies never block the socket thread: a peer that stops reading gets dropped, not the daemon stuck. */
preempt_daemon_status preemptd_send_fds(int fd, const void *bytes, size_t length, const int *fds, int fd_count) {
  struct iovec iov = {(void *)bytes, length};
  struct msghdr message;
  memset(&message, 0, sizeof message);
  message.msg_iov = &iov;
  message.msg_iovlen = 1;
  union {
    char buffer[CMSG_SPACE(2 * sizeof(int))];
    struct cmsghdr align;
  } control;
  if (fd_count > 0) {
    memset(&control, 0, sizeof control);
    message.msg_control = control.buffer;
    message.msg_controllen = CMSG_SPACE((size_t)fd_count * sizeof(int));
    struct cmsghdr *header = CMSG_FIRSTHDR(&message);
    header->cmsg_level = SOL_SOCKET;
    header->cmsg_type = SCM_RIGHTS;
    header->cmsg_len = CMSG_LEN((size_t)fd_count * sizeof(int));
    memcpy(CMSG_DATA(header), fds, (size_t)fd_count * sizeof(int));
  }
  ssize_t sent = sendmsg(fd, &message, MSG_NOSIGNAL | MSG_DONTWAIT);
  return sent == (ssize_t)length ? PREEMPT_DAEMON_OK : PREEMPT_DAEMON_SYSTEM;
}

preempt_daemon_status preemptd_send(int fd, const void *bytes, size_t length) {
  return preemptd_send_fds(fd, bytes, length, NULL, 0);
}

preempt_daemon_status preemptd_send_status(int fd, uint32_t request_id, preempt_daemon_status status,
                                           const char *text) {
  preempt_msg_status reply;
  memset(&reply, 0, sizeof reply);
  preempt_msg_header_init(&reply.header, PREEMPT_MSG_STATUS, sizeof reply, request_id);
  reply.status = (int32_t)status;
  preempt_copy_name(reply.message, sizeof reply.message, text ? text : preempt_daemon_status_name(status));
  return preemptd_send_fds(fd, &reply, sizeof reply, NULL, 0);
}
