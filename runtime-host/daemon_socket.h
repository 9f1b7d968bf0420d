/* daemon_socket.h: the runtime's end of preemptd's socket: connect, send, receive, each bounded by a deadline.
 * FLEP §3 (one scheduler per node), schedGPU §3.1 (its client-server mode over a Unix socket). */
#ifndef PREEMPT_DAEMON_SOCKET_H
#define PREEMPT_DAEMON_SOCKET_H

#include <stddef.h>
#include <stdint.h>

/* Packets to a client are small (REGISTERED, PRIORITY, STATUS, MEM_*); aligned for preempt_msg_decode. */
typedef union preempt_reply_buffer {
  uint64_t align;
  unsigned char bytes[1024];
} preempt_reply_buffer;

enum { PREEMPT_LINK_OK = 0, PREEMPT_LINK_ABSENT = 1, PREEMPT_LINK_FAILED = -1 };

uint64_t preempt_monotonic_ns(void);

/* This process's name as preemptd shows it (/proc/self/comm, else the invocation's), truncated to the field. */
void preempt_program_name(char *field, size_t field_bytes);

/* A non-blocking SOCK_SEQPACKET connection to `path`: PREEMPT_LINK_OK with *socket_fd, PREEMPT_LINK_ABSENT when
 * nobody listens there (no socket file, or a stale one), PREEMPT_LINK_FAILED with `why`. */
int preempt_daemon_connect(const char *path, int *socket_fd, char *why, size_t why_bytes);
/* 1 when `events` are ready, 0 at the deadline, -1 on error. */
int preempt_daemon_wait(int socket_fd, short events, uint64_t deadline_ns);
/* A packet goes whole or not at all (SOCK_SEQPACKET). 0 or -1 with errno (ETIMEDOUT at the deadline). */
int preempt_daemon_send(int socket_fd, const void *message, size_t length, uint64_t deadline_ns);
/* One packet and the fds that came with it (at most two kept, the rest closed; fds may be NULL to keep none).
 * 0: received; 1: deadline; 2: the peer closed; -1: error (errno), or a truncated packet (EMSGSIZE). */
int preempt_daemon_receive(int socket_fd, preempt_reply_buffer *buffer, size_t *length, int fds[2], int *fd_count,
                           uint64_t deadline_ns);

#endif
