/* preemptctl.c: preemptd's control tool: lists the GPUs, clients and kernels the daemon schedules and switches policies.
 * FLEP §3 (one scheduler per node, inspected and steered at run time), §5.2.2 (FFS weights), EffiSha §6.1 (kernel
 * states), §6.4 (priorities).
 *
 * Usage: preemptctl [--socket PATH] [--json] list
 *        preemptctl [--socket PATH] policy NAME [--gpu UUIDHEX]
 * The socket is --socket PATH, else $PREEMPT_DAEMON_SOCKET, else PREEMPT_DAEMON_SOCKET_DEFAULT. `list` prints tables, or
 * with --json one JSON object with the same fields. `policy` switches every GPU, or the one with that UUID (32 hex
 * digits; dashes and a "GPU-" prefix, as nvidia-smi prints them, are ignored), and prints the daemon's answer.
 * Exit status: 0 done; 1 the daemon refused, could not be reached, did not answer within 2 s or answered badly;
 * 2 usage errors. */
#define _DEFAULT_SOURCE /* sockets, SO_RCVTIMEO under -std=c11 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "preempt/daemon_protocol.h"
#include "preempt/job_limits.h"
#include "preempt/json_text.h"

#define REPLY_TIMEOUT_SECONDS 2
#define REQUEST_ID 1u

static const char *socket_path;

static int usage_error(const char *message, const char *detail) {
  if (message)
    fprintf(stderr, "preemptctl: %s%s%s%s\n", message, detail ? " \"" : "", detail ? detail : "", detail ? "\"" : "");
  fprintf(stderr, "usage: preemptctl [--socket PATH] [--json] list\n"
                  "       preemptctl [--socket PATH] policy NAME [--gpu UUIDHEX]\n");
  return 2;
}

static int fail(const char *message) {
  fprintf(stderr, "preemptctl: %s\n", message);
  return 1;
}

/* ---------------------------------------------------------------- talking to the daemon */

static int connect_daemon(int *out) {
  struct sockaddr_un address;
  memset(&address, 0, sizeof address);
  address.sun_family = AF_UNIX;
  int error = 0;
  int fd = -1;
  if (strlen(socket_path) >= sizeof address.sun_path) {
    error = ENAMETOOLONG;
  } else {
    memcpy(address.sun_path, socket_path, strlen(socket_path) + 1);
    fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    /* Both timeouts before connect: on a Unix socket, connect to a daemon whose backlog is full waits for the send
     * timeout, and a daemon that accepts but never answers must not hang us either. */
    struct timeval timeout = {REPLY_TIMEOUT_SECONDS, 0};
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout) != 0 ||
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout) != 0 ||
        connect(fd, (const struct sockaddr *)&address, sizeof address) != 0)
      error = errno;
  }
  if (error) {
    if (fd >= 0)
      close(fd);
    fprintf(stderr, "preemptctl: cannot reach preemptd at %s: %s\n", socket_path, strerror(error));
    return 1;
  }
  *out = fd;
  return 0;
}

/* One request, one reply, decoded into `reply` (whose LISTING arrays point into `buffer`). */
static int exchange(const void *request, size_t request_bytes, void *buffer, size_t buffer_bytes, preempt_msg *reply) {
  int fd;
  if (connect_daemon(&fd) != 0)
    return 1;
  ssize_t sent;
  do
    sent = send(fd, request, request_bytes, MSG_NOSIGNAL); /* a daemon gone mid-request is an error, not SIGPIPE */
  while (sent < 0 && errno == EINTR);
  if (sent < 0 || (size_t)sent != request_bytes) {
    fprintf(stderr, "preemptctl: cannot send to preemptd at %s: %s\n", socket_path,
            sent < 0 ? strerror(errno) : "short send");
    close(fd);
    return 1;
  }
  ssize_t received;
  int fd_count = 0, message_flags = 0;
  do
    received = preempt_receive_packet(fd, buffer, buffer_bytes, 0, NULL, 0, &fd_count, &message_flags);
  while (received < 0 && errno == EINTR);
  int saved_errno = errno;
  close(fd);
  if (received < 0) {
    if (saved_errno == EAGAIN || saved_errno == EWOULDBLOCK) {
      fprintf(stderr, "preemptctl: preemptd at %s did not answer within %d s\n", socket_path, REPLY_TIMEOUT_SECONDS);
      return 1;
    }
    fprintf(stderr, "preemptctl: cannot receive from preemptd at %s: %s\n", socket_path, strerror(saved_errno));
    return 1;
  }
  if (received == 0)
    return fail("preemptd closed the connection without answering");
  if (message_flags & MSG_TRUNC)
    return fail("preemptd's reply is larger than the largest message");
  const char *why = NULL;
  preempt_daemon_status status = preempt_msg_decode_why(buffer, (size_t)received, reply, &why);
  if (status != PREEMPT_DAEMON_OK) {
    /* Which field was wrong, for a malformed reply: one bad weight among 256 kernels is otherwise a riddle. Another
     * version is said by the status itself. */
    if (status == PREEMPT_DAEMON_MALFORMED && why)
      fprintf(stderr, "preemptctl: bad reply from preemptd: %s (%s)\n", preempt_daemon_status_name(status), why);
    else
      fprintf(stderr, "preemptctl: bad reply from preemptd: %s\n", preempt_daemon_status_name(status));
    return 1;
  }
  if (reply->request_id != REQUEST_ID)
    return fail("preemptd's reply answers another request");
  return 0;
}

/* A STATUS reply: its message, else its status's name (a daemon may leave the text empty). */
static const char *status_text(const preempt_msg *reply) {
  return reply->body.status.message[0] ? reply->body.status.message
                                       : preempt_daemon_status_name((preempt_daemon_status)reply->body.status.status);
}

/* ---------------------------------------------------------------- output */

/* Names come from other users' processes: control characters (a terminal escape, a newline that forges a row) are
 * shown as '?'. */
static const char *printable(const char *text, char *out, size_t out_bytes) {
  size_t i = 0;
  for (; text[i] && i + 1 < out_bytes; i++) {
    unsigned char c = (unsigned char)text[i];
    out[i] = c < 0x20 || c == 0x7f ? '?' : (char)c;
  }
  out[i] = 0;
  return out;
}

static void uuid_hex(const uint8_t uuid[16], char out[33]) {
  static const char digits[] = "0123456789abcdef";
  for (int i = 0; i < 16; i++) {
    out[2 * i] = digits[uuid[i] >> 4];
    out[2 * i + 1] = digits[uuid[i] & 15];
  }
  out[32] = 0;
}

/* The decoder admits only these two. */
static const char *sharing_name(uint32_t sharing) { return sharing == PREEMPT_SHARING_MPS ? "MPS" : "time-slicing"; }


static void print_tables(const preempt_msg *listing) {
  const preempt_msg_listing *l = &listing->body.listing;
  char uuid[33], text[PREEMPT_DAEMON_TEXT_BYTES];
  printf("preemptd up %.1f s, %s: %" PRIu32 " GPU%s, %" PRIu32 " client%s, %" PRIu32 " kernel%s\n",
         (double)l->uptime_us / 1e6, sharing_name(l->sharing), l->gpu_count, l->gpu_count == 1 ? "" : "s",
         l->client_count, l->client_count == 1 ? "" : "s", l->kernel_count, l->kernel_count == 1 ? "" : "s");

  printf("\n%-4s %-32s %4s %-8s %7s %10s %9s\n", "GPU", "UUID", "SMS", "POLICY", "KERNELS", "DECISIONS", "EVICTIONS");
  for (uint32_t i = 0; i < l->gpu_count; i++) {
    const preempt_listing_gpu *g = &listing->listing_gpus[i];
    uuid_hex(g->uuid, uuid);
    printf("%-4" PRIu32 " %-32s %4" PRIu32 " %-8s %7" PRIu32 " %10" PRIu64 " %9" PRIu64 "\n", i, uuid, g->sm_count,
           printable(g->policy, text, sizeof text), g->kernels, g->decisions, g->evictions);
  }

  /* LEASE: the client's GPUs (its own indices) it may start launches on without a decision, "-" for none.
   * JOB: the Slurm job step the process runs in (JOB from the Slurm plugin), as Slurm writes it; "-" for none. */
  printf("\n%-6s %-8s %-6s %8s %5s %9s %9s %-10s %-16s %s\n", "CLIENT", "PID", "UID", "PRIORITY", "LIMIT", "LAUNCHES",
         "EVICTIONS", "LEASE", "JOB", "PROGRAM");
  for (uint32_t i = 0; i < l->client_count; i++) {
    const preempt_listing_client *c = &listing->listing_clients[i];
    char lease[16] = "-";
    if (c->lease != 0)
      snprintf(lease, sizeof lease, "0x%" PRIx32, c->lease);
    char job[32];
    preempt_job_step_text(c->job_id, c->step_id, job, sizeof job);
    printf("%-6" PRIu32 " %-8" PRIu32 " %-6" PRIu32 " %8" PRId32 " %5" PRId32 " %9" PRIu64 " %9" PRIu64
           " %-10s %-16s %s\n",
           c->client_id, c->pid, c->uid, c->priority, c->priority_limit, c->launches, c->evictions, lease, job,
           printable(c->program, text, sizeof text));
  }

  /* WEIGHT: the FFS share granted (FLEP §5.2.2's W_i), per kernel because each launch's stub asks for its own.
   * QUOTA: flexsched's CTAs per SM (FlexSched §4.2); "-" when the kernel has none (full occupancy on its SMs). */
  printf("\n%-6s %4s %3s %-7s %8s %6s %5s %11s %11s %12s %9s %s\n", "CLIENT", "STUB", "GPU", "STATE", "PRIORITY",
         "WEIGHT", "QUOTA", "WAITED_MS", "RAN_MS", "PREDICTED_MS", "EVICTIONS", "NAME");
  for (uint32_t i = 0; i < l->kernel_count; i++) {
    const preempt_listing_kernel *k = &listing->listing_kernels[i];
    char quota[16] = "-";
    if (k->quota != 0)
      snprintf(quota, sizeof quota, "%" PRIu32, k->quota);
    printf("%-6" PRIu32 " %4" PRIu32 " %3" PRIu32 " %-7s %8" PRId32 " %6" PRIu32 " %5s %11.3f %11.3f %12.3f %9" PRIu32
           " %s\n",
           k->client_id, k->stub, k->gpu, preempt_stub_state_name(k->state), k->priority, k->weight, quota,
           k->waited_us / 1000.0, k->ran_us / 1000.0, k->predicted_us / 1000.0, k->evictions,
           printable(k->name, text, sizeof text));
  }
}

/* Names are written by preempt_json_write_string: any bytes a client put in them come out as valid JSON. 0, or -1 when
 * stdout refused the listing. */
static int print_json(const preempt_msg *listing) {
  const preempt_msg_listing *l = &listing->body.listing;
  char uuid[33];
  printf("{\"uptime_us\":%" PRIu64 ",\"sharing\":\"%s\",\"gpus\":[", l->uptime_us,
         l->sharing == PREEMPT_SHARING_MPS ? "mps" : "time-slicing");
  for (uint32_t i = 0; i < l->gpu_count; i++) {
    const preempt_listing_gpu *g = &listing->listing_gpus[i];
    uuid_hex(g->uuid, uuid);
    printf("%s{\"index\":%" PRIu32 ",\"uuid\":\"%s\",\"sm_count\":%" PRIu32 ",\"policy\":", i ? "," : "", i, uuid,
           g->sm_count);
    if (preempt_json_write_string(stdout, g->policy) != 0)
      return -1;
    printf(",\"kernels\":%" PRIu32 ",\"decisions\":%" PRIu64 ",\"evictions\":%" PRIu64 "}", g->kernels, g->decisions,
           g->evictions);
  }
  printf("],\"clients\":[");
  for (uint32_t i = 0; i < l->client_count; i++) {
    const preempt_listing_client *c = &listing->listing_clients[i];
    printf("%s{\"client_id\":%" PRIu32 ",\"pid\":%" PRIu32 ",\"uid\":%" PRIu32 ",\"program\":", i ? "," : "",
           c->client_id, c->pid, c->uid);
    if (preempt_json_write_string(stdout, c->program) != 0)
      return -1;
    printf(",\"priority\":%" PRId32 ",\"priority_limit\":%" PRId32 ",\"launches\":%" PRIu64 ",\"evictions\":%" PRIu64
           ",\"lease\":%" PRIu32 ",\"job\":%" PRIu32 ",\"step\":%" PRIu32 "}",
           c->priority, c->priority_limit, c->launches, c->evictions, c->lease, c->job_id, c->step_id);
  }
  printf("],\"kernels\":[");
  for (uint32_t i = 0; i < l->kernel_count; i++) {
    const preempt_listing_kernel *k = &listing->listing_kernels[i];
    /* The decoder checked k->gpu < gpu_count and that the times are finite and not negative: valid JSON numbers. */
    uuid_hex(listing->listing_gpus[k->gpu].uuid, uuid);
    printf("%s{\"client_id\":%" PRIu32 ",\"stub\":%" PRIu32 ",\"gpu\":%" PRIu32 ",\"gpu_uuid\":\"%s\",\"state\":\"%s\","
           "\"priority\":%" PRId32 ",\"weight\":%" PRIu32 ",\"quota\":%" PRIu32 ",\"waited_ms\":%.3f,\"ran_ms\":%.3f,"
           "\"predicted_ms\":%.3f,\"evictions\":%" PRIu32 ",\"name\":",
           i ? "," : "", k->client_id, k->stub, k->gpu, uuid, preempt_stub_state_name(k->state), k->priority,
           k->weight, k->quota, k->waited_us / 1000.0, k->ran_us / 1000.0, k->predicted_us / 1000.0, k->evictions);
    if (preempt_json_write_string(stdout, k->name) != 0)
      return -1;
    putchar('}');
  }
  printf("]}\n");
  return 0;
}

/* ---------------------------------------------------------------- commands */

/* The reply buffer: the largest packet, aligned for the LISTING arrays the decoder hands out in place. */
static _Alignas(8) unsigned char reply_buffer[PREEMPT_DAEMON_MAX_MESSAGE];

static int command_list(int json) {
  preempt_msg_list request;
  preempt_msg_header_init(&request.header, PREEMPT_MSG_LIST, sizeof request, REQUEST_ID);
  preempt_msg reply;
  if (exchange(&request, sizeof request, reply_buffer, sizeof reply_buffer, &reply) != 0)
    return 1;
  if (reply.type == PREEMPT_MSG_STATUS && reply.body.status.status != PREEMPT_DAEMON_OK) {
    fprintf(stderr, "preemptctl: %s\n", status_text(&reply));
    return 1;
  }
  if (reply.type != PREEMPT_MSG_LISTING)
    return fail("preemptd answered LIST with neither a LISTING nor a refusal");
  int written = 0;
  if (json)
    written = print_json(&reply);
  else
    print_tables(&reply);
  return written == 0 && fflush(stdout) == 0 && !ferror(stdout) ? 0 : fail("cannot write the listing");
}

static int parse_uuid(const char *text, uint8_t out[16]) {
  if (strncmp(text, "GPU-", 4) == 0)
    text += 4;
  int digits = 0;
  for (; *text; text++) {
    if (*text == '-')
      continue;
    int value;
    if (*text >= '0' && *text <= '9')
      value = *text - '0';
    else if (*text >= 'a' && *text <= 'f')
      value = *text - 'a' + 10;
    else if (*text >= 'A' && *text <= 'F')
      value = *text - 'A' + 10;
    else
      return 0;
    if (digits == 32)
      return 0;
    if (digits % 2 == 0)
      out[digits / 2] = (uint8_t)(value << 4);
    else
      out[digits / 2] |= (uint8_t)value;
    digits++;
  }
  return digits == 32;
}

static int command_policy(const char *name, const char *gpu) {
  preempt_msg_set_policy request;
  memset(&request, 0, sizeof request);
  preempt_msg_header_init(&request.header, PREEMPT_MSG_SET_POLICY, sizeof request, REQUEST_ID);
  if (name[0] == 0 || strlen(name) >= sizeof request.policy)
    return usage_error("a policy name has 1 to 15 characters, got", name);
  preempt_copy_name(request.policy, sizeof request.policy, name);
  /* No --gpu: the all-zero UUID, which means every GPU. */
  if (gpu && !parse_uuid(gpu, request.uuid))
    return usage_error("--gpu needs a UUID of 32 hex digits, got", gpu);
  preempt_msg reply;
  if (exchange(&request, sizeof request, reply_buffer, sizeof reply_buffer, &reply) != 0)
    return 1;
  if (reply.type != PREEMPT_MSG_STATUS)
    return fail("preemptd answered SET_POLICY with something other than STATUS");
  if (reply.body.status.status != PREEMPT_DAEMON_OK) {
    fprintf(stderr, "preemptctl: %s\n", status_text(&reply));
    return 1;
  }
  printf("%s\n", status_text(&reply));
  return 0;
}

int main(int argc, char **argv) {
  const char *positional[3] = {NULL, NULL, NULL};
  int positional_count = 0, json = 0;
  const char *gpu = NULL, *socket_option = NULL;
  for (int i = 1; i < argc; i++) {
    const char *arg = argv[i];
    if (strcmp(arg, "--socket") == 0) {
      if (i + 1 == argc)
        return usage_error("--socket needs a path", NULL);
      socket_option = argv[++i];
    } else if (strcmp(arg, "--gpu") == 0) {
      if (i + 1 == argc)
        return usage_error("--gpu needs a UUID", NULL);
      gpu = argv[++i];
    } else if (strncmp(arg, "--socket=", 9) == 0) {
      socket_option = arg + 9;
    } else if (strncmp(arg, "--gpu=", 6) == 0) {
      gpu = arg + 6;
    } else if (strcmp(arg, "--json") == 0) {
      json = 1;
    } else if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
      printf("usage: preemptctl [--socket PATH] [--json] list\n"
             "       preemptctl [--socket PATH] policy NAME [--gpu UUIDHEX]\n");
      return 0;
    } else if (arg[0] == '-' && arg[1] != 0) {
      return usage_error("unknown option", arg);
    } else if (positional_count == 3) {
      return usage_error("too many arguments", NULL);
    } else {
      positional[positional_count++] = arg;
    }
  }
  if (socket_option && socket_option[0] == 0)
    return usage_error("--socket needs a path", NULL);
  const char *environment = getenv("PREEMPT_DAEMON_SOCKET");
  socket_path = socket_option ? socket_option
                : environment && environment[0] ? environment
                                                : PREEMPT_DAEMON_SOCKET_DEFAULT;

  if (positional_count == 0)
    return usage_error("no command", NULL);
  if (strcmp(positional[0], "list") == 0) {
    if (positional_count != 1)
      return usage_error("list takes no argument", NULL);
    if (gpu)
      return usage_error("--gpu is for policy", NULL);
    return command_list(json);
  }
  if (strcmp(positional[0], "policy") == 0) {
    if (positional_count != 2)
      return usage_error("policy needs exactly one NAME", NULL);
    if (json)
      return usage_error("--json is for list", NULL);
    return command_policy(positional[1], gpu);
  }
  return usage_error("unknown command", positional[0]);
}
