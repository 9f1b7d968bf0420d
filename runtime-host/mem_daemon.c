/* mem_daemon.c: the process's end of the daemon-kept memory ledger: attach, reserve (waiting), release, query.
 * schedGPU §3.1 (client-server: requests to a per-node daemon over a Unix socket), §4 (pre-allocation, post-free). */
#define _GNU_SOURCE
#include "memory.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "daemon_link.h"

/* A daemon that is there answers MEM_ATTACH, CANCEL and QUERY at once; one that does not within this is hung. */
#define ANSWER_TIMEOUT_NS 1000000000ull
/* While a RESERVE waits and the daemon has no NVML, the GPU's reading goes to it this often. */
#define READING_PERIOD_NS 100000000ull

/* The reply to `request_id` on the process's connection (daemon_link.c), decoded: PREEMPT_LINK_ARRIVED with
 * *answer, or what kept it (DEADLINE, QUIET, LOST). A reply that is not a MEM_REPLY (the daemon's STATUS as it hangs
 * up, or not this protocol) is the end of the connection. */
static int await_reply(const preempt_mem_daemon *daemon, uint32_t request_id, uint64_t deadline_ns, uint64_t quiet_ns,
                       preempt_msg_mem_reply *answer) {
  preempt_link_reply reply;
  int result = preempt_link_await(daemon->generation, request_id, deadline_ns, quiet_ns, &reply);
  if (result != PREEMPT_LINK_ARRIVED)
    return result;
  preempt_msg message;
  int fitting = preempt_msg_decode(reply.buffer.bytes, reply.length, &message) == PREEMPT_DAEMON_OK &&
                message.type == PREEMPT_MSG_MEM_REPLY;
  preempt_link_reply_close(&reply);
  if (!fitting) {
    preempt_link_drop(daemon->generation);
    return PREEMPT_LINK_LOST;
  }
  *answer = message.body.mem_reply;
  return PREEMPT_LINK_ARRIVED;
}

/* A request's id, or 0 (the request forgotten, the caller told) when the connection has ended. */
static uint32_t expect_reply(const preempt_mem_daemon *daemon) {
  return daemon->attached ? preempt_link_expect(daemon->generation) : 0;
}

int preempt_mem_daemon_attach(preempt_mem_daemon *daemon, const char *path, int priority_requested, int32_t priority,
                              char *why, size_t why_bytes) {
  memset(daemon, 0, sizeof *daemon);
  int joined = preempt_link_join(path, PREEMPT_LINK_MEMORY, &daemon->generation, why, why_bytes);
  if (joined != PREEMPT_LINK_OK)
    return joined == PREEMPT_LINK_ABSENT ? 1 : -1;
  preempt_msg_mem_attach request;
  memset(&request, 0, sizeof request);
  uint32_t request_id = preempt_link_expect(daemon->generation);
  preempt_msg_header_init(&request.header, PREEMPT_MSG_MEM_ATTACH, sizeof request, request_id);
  request.priority = priority;
  request.priority_requested = priority_requested ? 1 : 0;
  preempt_program_name(request.program, sizeof request.program);
  preempt_link_reply answer;
  preempt_msg reply;
  int result = PREEMPT_LINK_LOST;
  if (request_id == 0 || preempt_link_send(daemon->generation, &request, sizeof request) != 0)
    snprintf(why, why_bytes, "sending MEM_ATTACH to preemptd at %s: %s", path,
             request_id == 0 ? "the connection ended" : strerror(errno));
  else if ((result = preempt_link_await(daemon->generation, request_id, preempt_monotonic_ns() + ANSWER_TIMEOUT_NS, 0,
                                        &answer)) != PREEMPT_LINK_ARRIVED)
    snprintf(why, why_bytes, "preemptd at %s %s", path,
             result == PREEMPT_LINK_DEADLINE ? "did not answer MEM_ATTACH within 1 s"
                                             : "closed the connection instead of answering");
  else if (preempt_msg_decode(answer.buffer.bytes, answer.length, &reply) != PREEMPT_DAEMON_OK)
    snprintf(why, why_bytes, "preemptd at %s answered MEM_ATTACH with a message this runtime cannot read "
             "(preemptd and libpreempt from different versions?)", path);
  else if (reply.type == PREEMPT_MSG_STATUS)
    snprintf(why, why_bytes, "preemptd at %s refused MEM_ATTACH: %s", path, reply.body.status.message);
  else if (reply.type != PREEMPT_MSG_MEM_ATTACHED || reply.request_id != request_id)
    snprintf(why, why_bytes, "preemptd at %s answered MEM_ATTACH with message type %u", path, (unsigned)reply.type);
  else {
    daemon->attached = 1;
    daemon->client_id = reply.body.mem_attached.client_id;
    daemon->priority = reply.body.mem_attached.priority;
    daemon->wants_readings = (reply.body.mem_attached.flags & PREEMPT_MEM_DAEMON_WANTS_READINGS) != 0;
    return 0;
  }
  if (result == PREEMPT_LINK_ARRIVED)
    preempt_link_reply_close(&answer);
  if (result == PREEMPT_LINK_DEADLINE)
    preempt_link_forget(request_id);
  preempt_link_leave(daemon->generation, PREEMPT_LINK_MEMORY);
  return -1;
}

static int send_reading(const preempt_mem_daemon *daemon, const unsigned char uuid[16], preempt_mem_reading reading,
                        void *reading_argument) {
  preempt_msg_mem_reading message;
  memset(&message, 0, sizeof message);
  preempt_msg_header_init(&message.header, PREEMPT_MSG_MEM_READING, sizeof message, 0);
  memcpy(message.uuid, uuid, 16);
  if (reading(&message.device_total_bytes, &message.device_used_bytes, reading_argument) != 0 ||
      message.device_total_bytes == 0)
    return 0; /* no reading now: the daemon keeps its last */
  return preempt_link_send(daemon->generation, &message, sizeof message);
}

int preempt_mem_daemon_reserve(preempt_mem_daemon *daemon, const unsigned char uuid[16], uint64_t bytes, uint32_t flags,
                               preempt_mem_reading reading, void *reading_argument, uint64_t deadline_ns,
                               preempt_msg_mem_reply *answer, char *why, size_t why_bytes) {
  memset(answer, 0, sizeof *answer);
  preempt_msg_mem_reserve request;
  memset(&request, 0, sizeof request);
  uint32_t request_id = expect_reply(daemon);
  if (request_id == 0) {
    snprintf(why, why_bytes, "the connection to preemptd ended");
    return -1;
  }
  preempt_msg_header_init(&request.header, PREEMPT_MSG_MEM_RESERVE, sizeof request, request_id);
  memcpy(request.uuid, uuid, 16);
  request.bytes = bytes;
  request.flags = flags;
  if (daemon->wants_readings &&
      (reading(&request.device_total_bytes, &request.device_used_bytes, reading_argument) != 0 ||
       request.device_used_bytes > request.device_total_bytes))
    request.device_total_bytes = request.device_used_bytes = 0;
  if (preempt_link_send(daemon->generation, &request, sizeof request) != 0) {
    snprintf(why, why_bytes, "sending MEM_RESERVE to preemptd: %s", strerror(errno));
    preempt_link_forget(request_id);
    return -1;
  }
  int result;
  /* Without NVML, the daemon learns of memory freed outside its ledger only from its clients: a reading goes to it
   * at each quiet period. */
  while ((result = await_reply(daemon, request_id, deadline_ns, daemon->wants_readings ? READING_PERIOD_NS : 0,
                               answer)) == PREEMPT_LINK_QUIET)
    if (send_reading(daemon, uuid, reading, reading_argument) != 0)
      break;
  if (result == PREEMPT_LINK_DEADLINE) {
    /* Our timeout: withdraw. The daemon answers the RESERVE itself, CANCELLED or (when its grant came first)
     * GRANTED, which we keep: the bytes are ours either way. */
    preempt_msg_mem_cancel cancel;
    memset(&cancel, 0, sizeof cancel);
    preempt_msg_header_init(&cancel.header, PREEMPT_MSG_MEM_CANCEL, sizeof cancel, 0);
    cancel.reserve_request_id = request_id;
    if (preempt_link_send(daemon->generation, &cancel, sizeof cancel) == 0)
      result = await_reply(daemon, request_id, preempt_monotonic_ns() + ANSWER_TIMEOUT_NS, 0, answer);
    if (result == PREEMPT_LINK_DEADLINE)
      preempt_link_drop(daemon->generation); /* it did not answer: hung, or not the daemon we know */
  }
  if (result != PREEMPT_LINK_ARRIVED) {
    preempt_link_forget(request_id);
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
  if (!daemon->attached)
    return -1;
  return preempt_link_send(daemon->generation, &message, sizeof message) == 0 ? 0 : -1;
}

int preempt_mem_daemon_query(preempt_mem_daemon *daemon, const unsigned char uuid[16], preempt_mem_reading reading,
                             void *reading_argument, preempt_msg_mem_reply *answer) {
  preempt_msg_mem_query message;
  memset(&message, 0, sizeof message);
  if (reading(&message.device_total_bytes, &message.device_used_bytes, reading_argument) != 0 ||
      message.device_used_bytes > message.device_total_bytes)
    message.device_total_bytes = message.device_used_bytes = 0;
  uint32_t request_id = expect_reply(daemon);
  if (request_id == 0)
    return -1;
  preempt_msg_header_init(&message.header, PREEMPT_MSG_MEM_QUERY, sizeof message, request_id);
  memcpy(message.uuid, uuid, 16);
  int result = preempt_link_send(daemon->generation, &message, sizeof message) == 0
                   ? await_reply(daemon, request_id, preempt_monotonic_ns() + ANSWER_TIMEOUT_NS, 0, answer)
                   : PREEMPT_LINK_LOST;
  if (result != PREEMPT_LINK_ARRIVED) {
    preempt_link_forget(request_id);
    preempt_link_drop(daemon->generation);
    return -1;
  }
  return answer->result == PREEMPT_MEM_REPLY_LEDGER ? 0 : 1;
}

void preempt_mem_daemon_close(preempt_mem_daemon *daemon) {
  if (daemon->attached)
    preempt_link_leave(daemon->generation, PREEMPT_LINK_MEMORY);
  daemon->attached = 0;
}
