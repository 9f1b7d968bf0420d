/* mem_daemon.c: the process's end of the daemon-kept memory ledger: attach, reserve (waiting), release, query.
 * schedGPU §3.1 (client-server: requests to a per-node daemon over a Unix socket), §4 (pre-allocation, post-free). */
#define _GNU_SOURCE
#include "memory.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "daemon_socket.h"

/* A daemon that is there answers MEM_ATTACH, CANCEL and QUERY at once; one that does not within this is hung. */
#define ANSWER_TIMEOUT_NS 1000000000ull
/* While a RESERVE waits and the daemon has no NVML, the GPU's reading goes to it this often. */
#define READING_PERIOD_NS 100000000ull

/* Sends under no lock: a SOCK_SEQPACKET packet goes whole, whichever thread sends it. */
static int send_packet(preempt_mem_daemon *daemon, const void *message, size_t length) {
  return preempt_daemon_send(daemon->fd, message, length, preempt_monotonic_ns() + ANSWER_TIMEOUT_NS);
}

static void mark_lost(preempt_mem_daemon *daemon) {
  daemon->lost = 1;
  pthread_cond_broadcast(&daemon->arrived);
}

/* What await_reply saw. */
enum { REPLY_LOST = -1, REPLY_ARRIVED = 0, REPLY_DEADLINE = 1, REPLY_QUIET = 2 };

/* Waits (daemon->lock held) for the MEM_REPLY to `request_id`, reading the socket for every thread while no other
 * thread does. REPLY_ARRIVED with *answer; REPLY_DEADLINE; REPLY_QUIET after READING_PERIOD_NS with nothing for
 * us (the caller may send a reading, then wait again); REPLY_LOST when the connection ended, failed or broke the
 * protocol. */
static int await_reply(preempt_mem_daemon *daemon, uint32_t request_id, uint64_t deadline_ns,
                       preempt_msg_mem_reply *answer) {
  for (;;) {
    for (uint32_t index = 0; index < daemon->reply_count; index++)
      if (daemon->replies[index].header.request_id == request_id) {
        *answer = daemon->replies[index];
        daemon->replies[index] = daemon->replies[--daemon->reply_count];
        return REPLY_ARRIVED;
      }
    if (daemon->lost)
      return REPLY_LOST;
    uint64_t now = preempt_monotonic_ns();
    if (now >= deadline_ns)
      return REPLY_DEADLINE;
    uint64_t until = deadline_ns - now < READING_PERIOD_NS ? deadline_ns : now + READING_PERIOD_NS;
    if (daemon->receiving || daemon->reply_count == PREEMPT_MEM_DAEMON_MAX_REPLIES) {
      /* Another thread reads for us (or our table is full until its owners look): wait for what it files. */
      struct timespec at = {.tv_sec = (time_t)(until / 1000000000ull), .tv_nsec = (long)(until % 1000000000ull)};
      if (pthread_cond_timedwait(&daemon->arrived, &daemon->lock, &at) == ETIMEDOUT)
        return REPLY_QUIET;
      continue;
    }
    daemon->receiving = 1;
    pthread_mutex_unlock(&daemon->lock);
    preempt_reply_buffer buffer;
    size_t length = 0;
    int received = preempt_daemon_receive(daemon->fd, &buffer, &length, NULL, NULL, until);
    preempt_msg message;
    int broken = received == 2 || received < 0 ||
                 (received == 0 && (preempt_msg_decode(buffer.bytes, length, &message) != PREEMPT_DAEMON_OK ||
                                    message.type != PREEMPT_MSG_MEM_REPLY));
    pthread_mutex_lock(&daemon->lock);
    daemon->receiving = 0;
    if (broken) {
      /* A STATUS here is the daemon hanging up on us (it said why); anything else is not this protocol. */
      mark_lost(daemon);
      return REPLY_LOST;
    }
    if (received == 0) {
      daemon->replies[daemon->reply_count++] = message.body.mem_reply;
      pthread_cond_broadcast(&daemon->arrived);
    }
    if (received == 1)
      return REPLY_QUIET;
  }
}

/* await_reply, through its quiet periods, until the reply, the deadline or the end. */
static int await_reply_until(preempt_mem_daemon *daemon, uint32_t request_id, uint64_t deadline_ns,
                             preempt_msg_mem_reply *answer) {
  int result;
  while ((result = await_reply(daemon, request_id, deadline_ns, answer)) == REPLY_QUIET)
    ;
  return result;
}

int preempt_mem_daemon_attach(preempt_mem_daemon *daemon, const char *path, int priority_requested, int32_t priority,
                              char *why, size_t why_bytes) {
  daemon->fd = -1;
  pthread_condattr_t attributes;
  if (pthread_mutex_init(&daemon->lock, NULL) != 0 || pthread_condattr_init(&attributes) != 0 ||
      pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC) != 0 ||
      pthread_cond_init(&daemon->arrived, &attributes) != 0) {
    snprintf(why, why_bytes, "cannot create the daemon connection's lock");
    return -1;
  }
  pthread_condattr_destroy(&attributes);
  int connected = preempt_daemon_connect(path, &daemon->fd, why, why_bytes);
  if (connected != PREEMPT_LINK_OK)
    return connected == PREEMPT_LINK_ABSENT ? 1 : -1;
  preempt_msg_mem_attach request;
  memset(&request, 0, sizeof request);
  preempt_msg_header_init(&request.header, PREEMPT_MSG_MEM_ATTACH, sizeof request, ++daemon->next_request_id);
  request.priority = priority;
  request.priority_requested = priority_requested ? 1 : 0;
  preempt_program_name(request.program, sizeof request.program);
  uint64_t deadline = preempt_monotonic_ns() + ANSWER_TIMEOUT_NS;
  preempt_reply_buffer buffer;
  size_t length = 0;
  preempt_msg reply;
  int received = -1;
  if (preempt_daemon_send(daemon->fd, &request, sizeof request, deadline) != 0)
    snprintf(why, why_bytes, "sending MEM_ATTACH to preemptd at %s: %s", path, strerror(errno));
  else if ((received = preempt_daemon_receive(daemon->fd, &buffer, &length, NULL, NULL, deadline)) != 0)
    snprintf(why, why_bytes, "preemptd at %s %s", path,
             received == 1 ? "did not answer MEM_ATTACH within 1 s" : "closed the connection instead of answering");
  else if (preempt_msg_decode(buffer.bytes, length, &reply) != PREEMPT_DAEMON_OK)
    snprintf(why, why_bytes, "preemptd at %s answered MEM_ATTACH with a message this runtime cannot read "
             "(preemptd and libpreempt from different versions?)", path);
  else if (reply.type == PREEMPT_MSG_STATUS)
    snprintf(why, why_bytes, "preemptd at %s refused MEM_ATTACH: %s", path, reply.body.status.message);
  else if (reply.type != PREEMPT_MSG_MEM_ATTACHED || reply.request_id != request.header.request_id)
    snprintf(why, why_bytes, "preemptd at %s answered MEM_ATTACH with message type %u", path, (unsigned)reply.type);
  else {
    daemon->client_id = reply.body.mem_attached.client_id;
    daemon->priority = reply.body.mem_attached.priority;
    daemon->wants_readings = (reply.body.mem_attached.flags & PREEMPT_MEM_DAEMON_WANTS_READINGS) != 0;
    return 0;
  }
  close(daemon->fd);
  daemon->fd = -1;
  return -1;
}

static int send_reading(preempt_mem_daemon *daemon, const unsigned char uuid[16], preempt_mem_reading reading,
                        void *reading_argument) {
  preempt_msg_mem_reading message;
  memset(&message, 0, sizeof message);
  preempt_msg_header_init(&message.header, PREEMPT_MSG_MEM_READING, sizeof message, 0);
  memcpy(message.uuid, uuid, 16);
  if (reading(&message.device_total_bytes, &message.device_used_bytes, reading_argument) != 0 ||
      message.device_total_bytes == 0)
    return 0; /* no reading now: the daemon keeps its last */
  return send_packet(daemon, &message, sizeof message);
}

int preempt_mem_daemon_reserve(preempt_mem_daemon *daemon, const unsigned char uuid[16], uint64_t bytes, uint32_t flags,
                               preempt_mem_reading reading, void *reading_argument, uint64_t deadline_ns,
                               preempt_msg_mem_reply *answer, char *why, size_t why_bytes) {
  memset(answer, 0, sizeof *answer);
  preempt_msg_mem_reserve request;
  memset(&request, 0, sizeof request);
  pthread_mutex_lock(&daemon->lock);
  uint32_t request_id = ++daemon->next_request_id;
  int wants_readings = daemon->wants_readings;
  int lost = daemon->lost;
  pthread_mutex_unlock(&daemon->lock);
  if (lost) {
    snprintf(why, why_bytes, "the connection to preemptd ended");
    return -1;
  }
  preempt_msg_header_init(&request.header, PREEMPT_MSG_MEM_RESERVE, sizeof request, request_id);
  memcpy(request.uuid, uuid, 16);
  request.bytes = bytes;
  request.flags = flags;
  if (wants_readings && (reading(&request.device_total_bytes, &request.device_used_bytes, reading_argument) != 0 ||
                         request.device_used_bytes > request.device_total_bytes))
    request.device_total_bytes = request.device_used_bytes = 0;
  if (send_packet(daemon, &request, sizeof request) != 0) {
    snprintf(why, why_bytes, "sending MEM_RESERVE to preemptd: %s", strerror(errno));
    pthread_mutex_lock(&daemon->lock);
    mark_lost(daemon);
    pthread_mutex_unlock(&daemon->lock);
    return -1;
  }
  pthread_mutex_lock(&daemon->lock);
  int result;
  for (;;) {
    result = await_reply(daemon, request_id, deadline_ns, answer);
    if (result != REPLY_QUIET)
      break;
    if (wants_readings) {
      /* Without NVML, the daemon learns of memory freed outside its ledger only from its clients. */
      pthread_mutex_unlock(&daemon->lock);
      int sent = send_reading(daemon, uuid, reading, reading_argument);
      pthread_mutex_lock(&daemon->lock);
      if (sent != 0)
        mark_lost(daemon);
    }
  }
  if (result == REPLY_DEADLINE) {
    /* Our timeout: withdraw. The daemon answers the RESERVE itself, CANCELLED or (when its grant came first)
     * GRANTED, which we keep: the bytes are ours either way. */
    pthread_mutex_unlock(&daemon->lock);
    preempt_msg_mem_cancel cancel;
    memset(&cancel, 0, sizeof cancel);
    preempt_msg_header_init(&cancel.header, PREEMPT_MSG_MEM_CANCEL, sizeof cancel, 0);
    cancel.reserve_request_id = request_id;
    int sent = send_packet(daemon, &cancel, sizeof cancel);
    pthread_mutex_lock(&daemon->lock);
    if (sent != 0)
      mark_lost(daemon);
    result = await_reply_until(daemon, request_id, preempt_monotonic_ns() + ANSWER_TIMEOUT_NS, answer);
    if (result == REPLY_DEADLINE)
      mark_lost(daemon); /* it did not answer: hung, or not the daemon we know */
  }
  pthread_mutex_unlock(&daemon->lock);
  if (result != REPLY_ARRIVED) {
    snprintf(why, why_bytes, "the connection to preemptd ended while waiting for memory");
    return -1;
  }
  switch (answer->result) {
  case PREEMPT_MEM_REPLY_GRANTED: return 0;
  case PREEMPT_MEM_REPLY_CANCELLED: return 1;
  case PREEMPT_MEM_REPLY_NEVER_FITS: return 2;
  case PREEMPT_MEM_REPLY_OVER_LIMIT: return 4;
  default:
    snprintf(why, why_bytes, "preemptd refused the request: %s",
             answer->result == PREEMPT_MEM_REPLY_FULL ? "its ledger is full"
             : answer->result == PREEMPT_MEM_REPLY_UNKNOWN_GPU ? "it cannot tell the GPU's memory size"
                                                               : "an answer this runtime does not expect");
    return 3;
  }
}

int preempt_mem_daemon_release(preempt_mem_daemon *daemon, const unsigned char uuid[16], uint64_t bytes) {
  preempt_msg_mem_release message;
  memset(&message, 0, sizeof message);
  preempt_msg_header_init(&message.header, PREEMPT_MSG_MEM_RELEASE, sizeof message, 0);
  memcpy(message.uuid, uuid, 16);
  message.bytes = bytes;
  pthread_mutex_lock(&daemon->lock);
  int lost = daemon->lost;
  pthread_mutex_unlock(&daemon->lock);
  if (!lost && send_packet(daemon, &message, sizeof message) == 0)
    return 0;
  pthread_mutex_lock(&daemon->lock);
  mark_lost(daemon);
  pthread_mutex_unlock(&daemon->lock);
  return -1;
}

int preempt_mem_daemon_query(preempt_mem_daemon *daemon, const unsigned char uuid[16], preempt_mem_reading reading,
                             void *reading_argument, preempt_msg_mem_reply *answer) {
  preempt_msg_mem_query message;
  memset(&message, 0, sizeof message);
  if (reading(&message.device_total_bytes, &message.device_used_bytes, reading_argument) != 0 ||
      message.device_used_bytes > message.device_total_bytes)
    message.device_total_bytes = message.device_used_bytes = 0;
  pthread_mutex_lock(&daemon->lock);
  uint32_t request_id = ++daemon->next_request_id;
  int lost = daemon->lost;
  pthread_mutex_unlock(&daemon->lock);
  if (lost)
    return -1;
  preempt_msg_header_init(&message.header, PREEMPT_MSG_MEM_QUERY, sizeof message, request_id);
  memcpy(message.uuid, uuid, 16);
  int sent = send_packet(daemon, &message, sizeof message);
  pthread_mutex_lock(&daemon->lock);
  int result = sent == 0 ? await_reply_until(daemon, request_id, preempt_monotonic_ns() + ANSWER_TIMEOUT_NS, answer)
                          : REPLY_LOST;
  if (result != REPLY_ARRIVED)
    mark_lost(daemon);
  pthread_mutex_unlock(&daemon->lock);
  if (result != REPLY_ARRIVED)
    return -1;
  return answer->result == PREEMPT_MEM_REPLY_LEDGER ? 0 : 1;
}

void preempt_mem_daemon_close(preempt_mem_daemon *daemon) {
  if (daemon->fd >= 0)
    close(daemon->fd);
  daemon->fd = -1;
}
