/* daemon_link.h: the process's one connection to preemptd, shared by kernel scheduling and memory admission.
 * FLEP §3 (one scheduler per node), schedGPU §3.1 (client-server over a Unix socket): one client, one connection. */
#ifndef PREEMPT_DAEMON_LINK_H
#define PREEMPT_DAEMON_LINK_H

#include <stddef.h>
#include <stdint.h>

#include "daemon_socket.h"

/* Who uses the connection: it closes when the last of them leaves. */
enum { PREEMPT_LINK_SCHEDULING = 1, PREEMPT_LINK_MEMORY = 2 };

/* What preempt_link_await saw. */
enum { PREEMPT_LINK_ARRIVED = 0, PREEMPT_LINK_DEADLINE = 1, PREEMPT_LINK_QUIET = 2, PREEMPT_LINK_LOST = -1 };

/* A reply as it came: the packet (the caller decodes it) and the descriptors that came with it (the caller's to
 * close). */
typedef struct preempt_link_reply {
  preempt_reply_buffer buffer;
  size_t length;
  int fds[2];
  int fd_count;
} preempt_link_reply;

/* Closes the descriptors a reply came with (only REGISTERED carries any) and forgets them. */
void preempt_link_reply_close(preempt_link_reply *reply);
/* Joins the process's connection to preemptd at `path` as `user`, connecting when there is none or the last one
 * ended: PREEMPT_LINK_OK with *generation (which connection: a user holds on to it and learns of a reconnection by
 * a mismatch), PREEMPT_LINK_ABSENT when nobody listens at `path`, PREEMPT_LINK_FAILED with `why`. */
int preempt_link_join(const char *path, unsigned user, uint32_t *generation, char *why, size_t why_bytes);
/* A request id whose reply the connection keeps for the caller until preempt_link_await takes it or
 * preempt_link_forget drops it; 0 when connection `generation` has ended. */
uint32_t preempt_link_expect(uint32_t generation);
void preempt_link_forget(uint32_t request_id);
/* Sends one packet on connection `generation`, within 1 s: 0, or -1 with errno (the connection is then ended for
 * every user: a daemon that takes no packet for a second is hung). */
int preempt_link_send(uint32_t generation, const void *message, size_t length);
/* Waits for the reply to `request_id` (or the daemon's last word, a STATUS with request id 0, which every waiter
 * sees), reading the socket for every thread while no other thread does: PREEMPT_LINK_ARRIVED with *reply;
 * PREEMPT_LINK_DEADLINE; PREEMPT_LINK_QUIET after quiet_ns (0: never) with nothing for the caller;
 * PREEMPT_LINK_LOST when the connection ended or broke the protocol. */
int preempt_link_await(uint32_t generation, uint32_t request_id, uint64_t deadline_ns, uint64_t quiet_ns,
                       preempt_link_reply *reply);
/* 1 when connection `generation` has ended, 0 while it lasts; reads what came meanwhile when no thread does (a
 * late reply nobody waits for is dropped). Never blocks. */
int preempt_link_ended(uint32_t generation);
/* `user` is done with connection `generation`; the last user closes it. */
void preempt_link_leave(uint32_t generation, unsigned user);
/* Ends connection `generation` for every user: the daemon broke the protocol, hung, or cannot be used again on it. */
void preempt_link_drop(uint32_t generation);

#endif
