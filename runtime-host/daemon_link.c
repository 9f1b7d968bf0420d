/* daemon_link.c: the process's one connection to preemptd: join, send, replies sorted by request id, its end.
 * FLEP §3 (one scheduler per node), schedGPU §3.1 (client-server over a Unix socket): one client, one connection. */
#define _GNU_SOURCE
#include "daemon_link.h"

#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "preempt/daemon_protocol.h"

/* A daemon that takes no packet within this is hung. */
#define SEND_TIMEOUT_NS 1000000000ull
/* Requests of this process awaiting replies at once: memory admission's threads and scheduling together. */
#define MAX_EXPECTED 64

typedef struct filed_reply {
  uint32_t request_id;
  preempt_link_reply reply;
} filed_reply;

/* Everything under `lock`. Sends and receives run outside it: a SOCK_SEQPACKET packet goes whole whichever thread
 * sends it, and one thread at a time reads for all (`receiving`). */
typedef struct daemon_link {
  pthread_mutex_t lock;
  pthread_cond_t arrived; /* CLOCK_MONOTONIC: a reply was filed, the reader stopped, or the connection ended */
  pthread_once_t once;
  int fd;                 /* -1: none */
  uint32_t generation;    /* +1 per connection */
  int ended;              /* the connection `generation` ended (fd may still be open: see closing_fd) */
  unsigned users;         /* PREEMPT_LINK_* bits of connection `generation` */
  int receiving;          /* a thread reads the socket for everybody */
  int closing_fd;         /* ended while being read: the reader closes it (-1: none) */
  uint32_t next_request_id;
  uint32_t expected[MAX_EXPECTED];
  uint32_t expected_count;
  filed_reply filed[MAX_EXPECTED];
  uint32_t filed_count;
  int has_last_word;      /* a STATUS with request id 0: the daemon's word to every waiter before it hangs up */
  preempt_link_reply last_word;
} daemon_link;

static daemon_link the_link = {.lock = PTHREAD_MUTEX_INITIALIZER, .once = PTHREAD_ONCE_INIT, .fd = -1,
                               .closing_fd = -1};

static void init_condition(void) {
  pthread_condattr_t attributes;
  pthread_condattr_init(&attributes);
  pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC);
  pthread_cond_init(&the_link.arrived, &attributes);
  pthread_condattr_destroy(&attributes);
}

static daemon_link *lock_link(void) {
  pthread_once(&the_link.once, init_condition);
  pthread_mutex_lock(&the_link.lock);
  return &the_link;
}

static void unlock_link(daemon_link *link) { pthread_mutex_unlock(&link->lock); }

void preempt_link_reply_close(preempt_link_reply *reply) {
  while (reply->fd_count > 0)
    close(reply->fds[--reply->fd_count]);
}

/* Ends the current connection: replies not taken yet go (with their descriptors), waiters wake. Lock held. */
static void end_connection(daemon_link *link) {
  if (link->fd >= 0) {
    if (link->receiving) {
      /* The reader still uses the descriptor: it wakes at once (the connection reads as ended) and closes it. */
      shutdown(link->fd, SHUT_RDWR);
      link->closing_fd = link->fd;
    } else {
      close(link->fd);
    }
    link->fd = -1;
  }
  link->ended = 1;
  link->users = 0;
  for (uint32_t index = 0; index < link->filed_count; index++)
    preempt_link_reply_close(&link->filed[index].reply);
  link->filed_count = 0;
  link->expected_count = 0;
  if (link->has_last_word)
    preempt_link_reply_close(&link->last_word);
  link->has_last_word = 0;
  pthread_cond_broadcast(&link->arrived);
}

static int expected_index(const daemon_link *link, uint32_t request_id) {
  for (uint32_t index = 0; index < link->expected_count; index++)
    if (link->expected[index] == request_id)
      return (int)index;
  return -1;
}

static void unexpect(daemon_link *link, uint32_t request_id) {
  int index = expected_index(link, request_id);
  if (index >= 0)
    link->expected[index] = link->expected[--link->expected_count];
}

/* Files a packet for its waiter, or drops it when nobody waits for it any more (a reply that came after its
 * request gave up). A packet that is not this protocol's ends the connection. Lock held. */
static void file(daemon_link *link, preempt_link_reply *packet) {
  preempt_msg_header header;
  if (packet->length < sizeof header) {
    preempt_link_reply_close(packet);
    end_connection(link);
    return;
  }
  memcpy(&header, packet->buffer.bytes, sizeof header);
  if (header.magic != PREEMPT_DAEMON_MAGIC) {
    preempt_link_reply_close(packet);
    end_connection(link);
    return;
  }
  if (header.request_id == 0 && header.type == PREEMPT_MSG_STATUS) {
    if (link->has_last_word)
      preempt_link_reply_close(&link->last_word);
    link->last_word = *packet;
    link->has_last_word = 1;
    return;
  }
  if (expected_index(link, header.request_id) < 0 || link->filed_count == MAX_EXPECTED) {
    preempt_link_reply_close(packet);
    return;
  }
  link->filed[link->filed_count++] = (filed_reply){.request_id = header.request_id, .reply = *packet};
}

/* Reads one packet until `until` for everybody, with the lock released meanwhile; lock held on entry and return.
 * The caller made sure nobody else reads and the connection is open. */
static void receive_one(daemon_link *link, uint64_t until) {
  int fd = link->fd;
  uint32_t generation = link->generation;
  link->receiving = 1;
  unlock_link(link);
  preempt_link_reply packet;
  memset(&packet, 0, sizeof packet);
  int received = preempt_daemon_receive(fd, &packet.buffer, &packet.length, packet.fds, &packet.fd_count, until);
  pthread_mutex_lock(&link->lock);
  link->receiving = 0;
  if (link->closing_fd == fd) {
    close(fd);
    link->closing_fd = -1;
  }
  if (link->generation != generation || link->fd != fd) {
    preempt_link_reply_close(&packet); /* the connection it came on has ended */
  } else if (received == 0) {
    file(link, &packet);
  } else if (received != 1) {
    end_connection(link); /* closed by the daemon, a socket error, or a packet too long for this protocol */
  }
  pthread_cond_broadcast(&link->arrived); /* a filed reply, or the reading is free for the next waiter */
}

int preempt_link_join(const char *path, unsigned user, uint32_t *generation, char *why, size_t why_bytes) {
  daemon_link *link = lock_link();
  if (link->fd >= 0 && !link->ended) {
    link->users |= user;
    *generation = link->generation;
    unlock_link(link);
    return PREEMPT_LINK_OK;
  }
  int fd = -1;
  /* connect is non-blocking (daemon_socket.c): holding the lock through it delays nobody for long. */
  int connected = preempt_daemon_connect(path, &fd, why, why_bytes);
  if (connected == PREEMPT_LINK_OK) {
    link->fd = fd;
    link->generation++;
    link->ended = 0;
    link->users = user;
    *generation = link->generation;
  }
  unlock_link(link);
  return connected;
}

uint32_t preempt_link_expect(uint32_t generation) {
  daemon_link *link = lock_link();
  uint32_t request_id = 0;
  if (link->generation == generation && !link->ended && link->expected_count < MAX_EXPECTED) {
    do
      request_id = ++link->next_request_id;
    while (request_id == 0 || expected_index(link, request_id) >= 0);
    link->expected[link->expected_count++] = request_id;
  }
  unlock_link(link);
  return request_id;
}

void preempt_link_forget(uint32_t request_id) {
  daemon_link *link = lock_link();
  unexpect(link, request_id);
  for (uint32_t index = 0; index < link->filed_count; index++)
    if (link->filed[index].request_id == request_id) {
      preempt_link_reply_close(&link->filed[index].reply);
      link->filed[index] = link->filed[--link->filed_count];
      break;
    }
  unlock_link(link);
}

int preempt_link_send(uint32_t generation, const void *message, size_t length) {
  daemon_link *link = lock_link();
  int sent = -1;
  if (link->generation != generation || link->ended) {
    errno = ENOTCONN;
  } else {
    /* Under the lock so that the descriptor cannot close and be reused meanwhile; a full socket makes it wait,
     * at most SEND_TIMEOUT_NS, and then the daemon is taken for hung. */
    sent = preempt_daemon_send(link->fd, message, length, preempt_monotonic_ns() + SEND_TIMEOUT_NS);
    if (sent != 0) {
      int error = errno;
      end_connection(link);
      errno = error;
    }
  }
  unlock_link(link);
  return sent;
}

int preempt_link_await(uint32_t generation, uint32_t request_id, uint64_t deadline_ns, uint64_t quiet_ns,
                       preempt_link_reply *reply) {
  daemon_link *link = lock_link();
  uint64_t quiet_at = quiet_ns ? preempt_monotonic_ns() + quiet_ns : UINT64_MAX;
  int result;
  for (;;) {
    if (link->generation != generation) {
      result = PREEMPT_LINK_LOST;
      break;
    }
    int found = -1;
    for (uint32_t index = 0; index < link->filed_count && found < 0; index++)
      if (link->filed[index].request_id == request_id)
        found = (int)index;
    if (found >= 0) {
      *reply = link->filed[found].reply;
      link->filed[found] = link->filed[--link->filed_count];
      unexpect(link, request_id);
      result = PREEMPT_LINK_ARRIVED;
      break;
    }
    if (link->has_last_word) {
      *reply = link->last_word;
      reply->fd_count = 0; /* a STATUS carries none */
      result = PREEMPT_LINK_ARRIVED;
      break;
    }
    if (link->ended) {
      result = PREEMPT_LINK_LOST;
      break;
    }
    uint64_t now = preempt_monotonic_ns();
    if (now >= deadline_ns) {
      result = PREEMPT_LINK_DEADLINE;
      break;
    }
    if (now >= quiet_at) {
      result = PREEMPT_LINK_QUIET;
      break;
    }
    uint64_t until = deadline_ns < quiet_at ? deadline_ns : quiet_at;
    if (link->receiving || link->filed_count == MAX_EXPECTED) {
      /* Another thread reads for us (or the table is full until its owners look): wait for what it files. */
      struct timespec at = {.tv_sec = (time_t)(until / 1000000000ull), .tv_nsec = (long)(until % 1000000000ull)};
      pthread_cond_timedwait(&link->arrived, &link->lock, &at);
      continue;
    }
    receive_one(link, until);
  }
  unlock_link(link);
  return result;
}

int preempt_link_ended(uint32_t generation) {
  daemon_link *link = lock_link();
  while (link->generation == generation && !link->ended && !link->receiving) {
    char byte;
    ssize_t got = recv(link->fd, &byte, 1, MSG_DONTWAIT | MSG_PEEK);
    if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
      break;
    if (got <= 0) {
      end_connection(link); /* 0: the daemon closed it */
      break;
    }
    receive_one(link, preempt_monotonic_ns() + 1000000); /* a packet is there: it comes at once */
  }
  int ended = link->generation != generation || link->ended;
  unlock_link(link);
  return ended;
}

void preempt_link_leave(uint32_t generation, unsigned user) {
  daemon_link *link = lock_link();
  if (link->generation == generation && !link->ended) {
    link->users &= ~user;
    if (!link->users)
      end_connection(link);
  }
  unlock_link(link);
}

void preempt_link_drop(uint32_t generation) {
  daemon_link *link = lock_link();
  if (link->generation == generation && !link->ended)
    end_connection(link);
  unlock_link(link);
}
