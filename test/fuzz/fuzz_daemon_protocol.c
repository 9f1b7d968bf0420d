/* fuzz_daemon_protocol.c: libFuzzer target over everything in daemon_protocol.c that reads bytes from another process.
 * EffiSha §6.1 (stubs, states), FLEP §3 (the per-node scheduler's socket): neither side may trust the other's bytes.
 *
 * Each input is decoded from an exactly-sized, 16-byte aligned heap copy (so AddressSanitizer reports any read past
 * the packet) and from a misaligned copy (fixed-size messages must decode the same, a LISTING must be refused). An
 * accepted message is checked against the header's promises independently of the decoder, re-encoded byte for byte
 * and decoded again. The same bytes also go through the stub check, the move table, kernel keys and preempt_copy_name.
 * Any inconsistency abort()s, which libFuzzer reports as a crash with the input saved. */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "preempt/daemon_protocol.h"

#define REQUIRE(condition)                                                                                             \
  do {                                                                                                                 \
    if (!(condition)) {                                                                                                \
      fprintf(stderr, "fuzz_daemon_protocol: %s:%d: inconsistent: %s\n", __FILE__, __LINE__, #condition);            \
      abort();                                                                                                         \
    }                                                                                                                  \
  } while (0)

static int terminated(const char *field, size_t bytes) { return memchr(field, 0, bytes) != NULL; }
static int priority_ok(int32_t p) { return p >= PREEMPT_PRIORITY_MIN && p <= PREEMPT_PRIORITY_MAX; }

static int all_zero(const void *bytes, size_t length) {
  const unsigned char *p = bytes;
  for (size_t i = 0; i < length; i++)
    if (p[i])
      return 0;
  return 1;
}

/* Re-encodes a fixed-size body: its header rebuilt by preempt_msg_header_init, the rest copied. */
static void check_reencoded_fixed(const unsigned char *packet, size_t length, const preempt_msg *msg, const void *body,
                                  size_t body_bytes) {
  REQUIRE(length == body_bytes);
  unsigned char *encoded = malloc(body_bytes);
  REQUIRE(encoded != NULL);
  memcpy(encoded, body, body_bytes);
  preempt_msg_header header;
  preempt_msg_header_init(&header, msg->type, (uint32_t)body_bytes, msg->request_id);
  memcpy(encoded, &header, sizeof header);
  REQUIRE(memcmp(encoded, packet, length) == 0);
  preempt_msg again;
  REQUIRE(preempt_msg_decode(encoded, body_bytes, &again) == PREEMPT_DAEMON_OK);
  REQUIRE(again.type == msg->type && again.request_id == msg->request_id);
  REQUIRE(memcmp(&again.body, &msg->body, sizeof again.body) == 0);
  free(encoded);
}

static void check_listing(const unsigned char *packet, size_t length, const preempt_msg *msg) {
  const preempt_msg_listing *fixed = &msg->body.listing;
  REQUIRE(fixed->gpu_count <= PREEMPT_DAEMON_MAX_GPUS);
  REQUIRE(fixed->client_count <= PREEMPT_LISTING_MAX_CLIENTS);
  REQUIRE(fixed->kernel_count <= PREEMPT_LISTING_MAX_KERNELS);
  REQUIRE(fixed->sharing == PREEMPT_SHARING_TIMESLICE || fixed->sharing == PREEMPT_SHARING_MPS);
  size_t gpu_bytes = fixed->gpu_count * sizeof(preempt_listing_gpu);
  size_t client_bytes = fixed->client_count * sizeof(preempt_listing_client);
  size_t kernel_bytes = fixed->kernel_count * sizeof(preempt_listing_kernel);
  REQUIRE(sizeof *fixed + gpu_bytes + client_bytes + kernel_bytes == length);
  /* Each array lies inside the packet, in order, right after the previous part; NULL exactly when empty. */
  const unsigned char *gpus = (const unsigned char *)msg->listing_gpus;
  const unsigned char *clients = (const unsigned char *)msg->listing_clients;
  const unsigned char *kernels = (const unsigned char *)msg->listing_kernels;
  REQUIRE((gpus == NULL) == (fixed->gpu_count == 0));
  REQUIRE((clients == NULL) == (fixed->client_count == 0));
  REQUIRE((kernels == NULL) == (fixed->kernel_count == 0));
  if (gpus)
    REQUIRE(gpus == packet + sizeof *fixed);
  if (clients)
    REQUIRE(clients == packet + sizeof *fixed + gpu_bytes);
  if (kernels)
    REQUIRE(kernels == packet + sizeof *fixed + gpu_bytes + client_bytes && kernels + kernel_bytes == packet + length);
  for (uint32_t i = 0; i < fixed->gpu_count; i++) {
    const preempt_listing_gpu *g = &msg->listing_gpus[i];
    REQUIRE(g->sm_count >= 1 && g->sm_count <= 256 && terminated(g->policy, sizeof g->policy));
  }
  for (uint32_t i = 0; i < fixed->client_count; i++) {
    const preempt_listing_client *c = &msg->listing_clients[i];
    REQUIRE(c->client_id != 0 && terminated(c->program, sizeof c->program));
    REQUIRE(priority_ok(c->priority) && priority_ok(c->priority_limit) && c->priority <= c->priority_limit);
  }
  for (uint32_t i = 0; i < fixed->kernel_count; i++) {
    const preempt_listing_kernel *k = &msg->listing_kernels[i];
    REQUIRE(k->gpu < fixed->gpu_count && k->stub < PREEMPT_STUBS_PER_CLIENT && k->client_id != 0);
    REQUIRE(strcmp(preempt_stub_state_name(k->state), "?") != 0 && priority_ok(k->priority));
    REQUIRE(k->weight >= 1 && k->weight <= PREEMPT_WEIGHT_MAX && k->quota <= PREEMPT_DAEMON_MAX_SM_CTAS);
    REQUIRE(isfinite(k->waited_us) && isfinite(k->ran_us) && isfinite(k->predicted_us));
    REQUIRE(k->waited_us >= 0 && k->ran_us >= 0 && k->predicted_us >= 0 && terminated(k->name, sizeof k->name));
    /* What preemptctl does with an entry: index the listing's GPUs by it. */
    REQUIRE(msg->listing_gpus[k->gpu].sm_count >= 1);
  }
  /* Re-encode from the decoded parts and decode again. */
  unsigned char *encoded = malloc(length);
  REQUIRE(encoded != NULL);
  preempt_msg_listing header_part = *fixed;
  preempt_msg_header_init(&header_part.header, PREEMPT_MSG_LISTING, (uint32_t)length, msg->request_id);
  memcpy(encoded, &header_part, sizeof header_part);
  if (gpu_bytes)
    memcpy(encoded + sizeof *fixed, msg->listing_gpus, gpu_bytes);
  if (client_bytes)
    memcpy(encoded + sizeof *fixed + gpu_bytes, msg->listing_clients, client_bytes);
  if (kernel_bytes)
    memcpy(encoded + sizeof *fixed + gpu_bytes + client_bytes, msg->listing_kernels, kernel_bytes);
  REQUIRE(memcmp(encoded, packet, length) == 0);
  preempt_msg again;
  REQUIRE(preempt_msg_decode(encoded, length, &again) == PREEMPT_DAEMON_OK);
  REQUIRE(again.type == PREEMPT_MSG_LISTING && memcmp(&again.body.listing, fixed, sizeof *fixed) == 0);
  free(encoded);
}

/* The header's promises for an accepted message, checked here rather than trusted from the decoder. */
static void check_accepted(const unsigned char *packet, size_t length, const preempt_msg *msg) {
  preempt_msg_header header;
  REQUIRE(length >= sizeof header && length <= PREEMPT_DAEMON_MAX_MESSAGE);
  memcpy(&header, packet, sizeof header);
  REQUIRE(header.magic == PREEMPT_DAEMON_MAGIC && header.version == PREEMPT_DAEMON_PROTOCOL_VERSION);
  REQUIRE(header.length == length && header.type == (uint16_t)msg->type && header.request_id == msg->request_id);
  switch (msg->type) {
  case PREEMPT_MSG_REGISTER: {
    const preempt_msg_register *m = &msg->body.register_request;
    REQUIRE(m->gpu_count <= PREEMPT_DAEMON_MAX_GPUS && m->priority_requested <= 1 && m->reserved == 0);
    REQUIRE(priority_ok(m->priority) && terminated(m->program, sizeof m->program));
    for (uint32_t i = 0; i < m->gpu_count; i++) {
      const preempt_msg_gpu *g = &m->gpus[i];
      REQUIRE(g->sm_count >= 1 && g->sm_count <= 256 && g->reserved == 0);
      /* SM limits: unknown (all zero), or every one but shared_reserved nonzero and within its bound. */
      bool unknown = g->max_threads == 0 && g->max_ctas == 0 && g->registers == 0 && g->register_unit == 0 &&
                     g->shared_bytes == 0 && g->shared_unit == 0 && g->shared_reserved == 0 && g->warp_size == 0;
      REQUIRE(unknown || (g->max_threads >= 1 && g->max_threads <= 4096 && g->max_ctas >= 1 && g->max_ctas <= 64 &&
                          g->registers >= 1 && g->registers <= (1u << 20) && g->register_unit >= 1 &&
                          g->shared_bytes >= 1 && g->shared_bytes <= (16u << 20) && g->shared_unit >= 1 &&
                          g->warp_size >= 1));
    }
    check_reencoded_fixed(packet, length, msg, m, sizeof *m);
    return;
  }
  case PREEMPT_MSG_SET_PRIORITY:
    REQUIRE(priority_ok(msg->body.set_priority.priority) && msg->body.set_priority.reserved == 0);
    check_reencoded_fixed(packet, length, msg, &msg->body.set_priority, sizeof msg->body.set_priority);
    return;
  case PREEMPT_MSG_LIST:
    REQUIRE(length == sizeof(preempt_msg_list));
    check_reencoded_fixed(packet, length, msg, &msg->body.listing.header, sizeof(preempt_msg_list));
    return;
  case PREEMPT_MSG_JOB: {
    const preempt_msg_job *m = &msg->body.job;
    REQUIRE(m->job_id != 0 && !(m->flags & ~(PREEMPT_JOB_END | PREEMPT_JOB_PRIORITY)));
    if (m->flags & PREEMPT_JOB_END)
      REQUIRE(m->pid == 0 && m->priority == 0 && m->mem_limit_bytes == 0 && m->flags == PREEMPT_JOB_END);
    else
      REQUIRE(m->pid != 0 && m->pid <= INT32_MAX &&
              (m->flags & PREEMPT_JOB_PRIORITY ? m->priority >= PREEMPT_PRIORITY_MIN && m->priority <= PREEMPT_PRIORITY_MAX
                                               : m->priority == 0));
    check_reencoded_fixed(packet, length, msg, m, sizeof *m);
    return;
  }
  case PREEMPT_MSG_SET_POLICY:
    REQUIRE(terminated(msg->body.set_policy.policy, sizeof msg->body.set_policy.policy));
    check_reencoded_fixed(packet, length, msg, &msg->body.set_policy, sizeof msg->body.set_policy);
    return;
  case PREEMPT_MSG_REGISTERED: {
    const preempt_msg_registered *m = &msg->body.registered;
    REQUIRE(m->client_id != 0 && priority_ok(m->priority) && priority_ok(m->priority_limit));
    REQUIRE(m->priority <= m->priority_limit && m->stub_count == PREEMPT_STUBS_PER_CLIENT);
    REQUIRE(m->page_bytes == sizeof(preempt_client_page) && m->doorbell_bytes == sizeof(preempt_doorbell_page));
    check_reencoded_fixed(packet, length, msg, m, sizeof *m);
    return;
  }
  case PREEMPT_MSG_PRIORITY: {
    const preempt_msg_priority *m = &msg->body.priority;
    REQUIRE(priority_ok(m->priority) && priority_ok(m->priority_limit) && m->priority <= m->priority_limit);
    check_reencoded_fixed(packet, length, msg, m, sizeof *m);
    return;
  }
  case PREEMPT_MSG_STATUS: {
    const preempt_msg_status *m = &msg->body.status;
    REQUIRE(m->status >= PREEMPT_DAEMON_OK && m->status <= PREEMPT_DAEMON_BUFFER_TOO_SMALL && m->reserved == 0);
    REQUIRE(terminated(m->message, sizeof m->message));
    REQUIRE(strcmp(preempt_daemon_status_name((preempt_daemon_status)m->status), "unknown status") != 0);
    check_reencoded_fixed(packet, length, msg, m, sizeof *m);
    return;
  }
  case PREEMPT_MSG_LISTING:
    check_listing(packet, length, msg);
    return;
  case PREEMPT_MSG_MEM_ATTACH: {
    const preempt_msg_mem_attach *m = &msg->body.mem_attach;
    REQUIRE(m->priority_requested <= 1 && priority_ok(m->priority) && terminated(m->program, sizeof m->program));
    check_reencoded_fixed(packet, length, msg, m, sizeof *m);
    return;
  }
  case PREEMPT_MSG_MEM_ATTACHED: {
    const preempt_msg_mem_attached *m = &msg->body.mem_attached;
    REQUIRE(m->client_id != 0 && priority_ok(m->priority) && priority_ok(m->priority_limit));
    REQUIRE(m->priority <= m->priority_limit && (m->flags & ~PREEMPT_MEM_DAEMON_WANTS_READINGS) == 0);
    check_reencoded_fixed(packet, length, msg, m, sizeof *m);
    return;
  }
  case PREEMPT_MSG_MEM_RESERVE: {
    const preempt_msg_mem_reserve *m = &msg->body.mem_reserve;
    REQUIRE(m->bytes > 0 && m->device_used_bytes <= m->device_total_bytes && m->reserved == 0);
    REQUIRE((m->flags & ~(PREEMPT_MEM_RESERVE_NOW | PREEMPT_MEM_RESERVE_AFTER_OOM)) == 0);
    check_reencoded_fixed(packet, length, msg, m, sizeof *m);
    return;
  }
  case PREEMPT_MSG_MEM_RELEASE:
    REQUIRE(msg->body.mem_release.bytes > 0);
    check_reencoded_fixed(packet, length, msg, &msg->body.mem_release, sizeof msg->body.mem_release);
    return;
  case PREEMPT_MSG_MEM_CANCEL:
    REQUIRE(msg->body.mem_cancel.reserved == 0);
    check_reencoded_fixed(packet, length, msg, &msg->body.mem_cancel, sizeof msg->body.mem_cancel);
    return;
  case PREEMPT_MSG_MEM_QUERY:
    REQUIRE(msg->body.mem_query.device_used_bytes <= msg->body.mem_query.device_total_bytes);
    check_reencoded_fixed(packet, length, msg, &msg->body.mem_query, sizeof msg->body.mem_query);
    return;
  case PREEMPT_MSG_MEM_READING: {
    const preempt_msg_mem_reading *m = &msg->body.mem_reading;
    REQUIRE(m->device_total_bytes > 0 && m->device_used_bytes <= m->device_total_bytes);
    check_reencoded_fixed(packet, length, msg, m, sizeof *m);
    return;
  }
  case PREEMPT_MSG_MEM_REPLY: {
    const preempt_msg_mem_reply *m = &msg->body.mem_reply;
    REQUIRE(m->result <= PREEMPT_MEM_REPLY_OVER_LIMIT && m->readings_from_nvml <= 1 && m->held_bytes <= m->reserved_bytes);
    REQUIRE(terminated(m->policy, sizeof m->policy));
    check_reencoded_fixed(packet, length, msg, m, sizeof *m);
    return;
  }
  }
  REQUIRE(!"an unknown type was accepted");
}

static void fuzz_decode(const uint8_t *data, size_t size) {
  /* Exactly `size` bytes on the heap: ASan flags a read one past the packet. malloc's alignment covers the 8 bytes
   * a LISTING needs. */
  unsigned char *aligned = malloc(size ? size : 1);
  REQUIRE(aligned != NULL && (uintptr_t)aligned % 8 == 0);
  if (size)
    memcpy(aligned, data, size);
  preempt_msg msg;
  preempt_daemon_status status = preempt_msg_decode(aligned, size, &msg);
  REQUIRE(status == PREEMPT_DAEMON_OK || status == PREEMPT_DAEMON_MALFORMED || status == PREEMPT_DAEMON_BAD_VERSION);
  if (status == PREEMPT_DAEMON_OK)
    check_accepted(aligned, size, &msg);
  else
    REQUIRE(all_zero(&msg, sizeof msg));
  /* The explaining decoder answers the same, with a reason exactly when it refuses. */
  preempt_msg explained;
  const char *why = "unset";
  REQUIRE(preempt_msg_decode_why(aligned, size, &explained, &why) == status);
  REQUIRE(memcmp(&explained, &msg, sizeof msg) == 0);
  REQUIRE(status == PREEMPT_DAEMON_OK ? why == NULL : why != NULL && why[0] != 0);

  /* The same bytes at an odd address: a copy-out decoder answers the same, except that a LISTING is refused. */
  unsigned char *shifted = malloc(size + 1);
  REQUIRE(shifted != NULL);
  if (size)
    memcpy(shifted + 1, data, size);
  preempt_msg shifted_msg;
  preempt_daemon_status shifted_status = preempt_msg_decode(shifted + 1, size, &shifted_msg);
  if (status == PREEMPT_DAEMON_OK && msg.type == PREEMPT_MSG_LISTING) {
    REQUIRE(shifted_status == PREEMPT_DAEMON_MALFORMED);
  } else if (!(status == PREEMPT_DAEMON_MALFORMED && shifted_status == PREEMPT_DAEMON_MALFORMED)) {
    /* (A malformed LISTING may be refused for its alignment first; any other status must match.) */
    REQUIRE(shifted_status == status);
    REQUIRE(memcmp(&shifted_msg, &msg, sizeof msg) == 0);
  }
  free(shifted);
  free(aligned);
}

static void fuzz_stub(const uint8_t *data, size_t size) {
  if (size < sizeof(preempt_stub) + 1)
    return;
  /* The daemon's path: copy the stub out of the page, then validate the copy. */
  preempt_stub stub;
  memcpy(&stub, data + 1, sizeof stub);
  uint32_t gpu_count = data[0] % (PREEMPT_DAEMON_MAX_GPUS + 2);
  const char *why = "unset";
  preempt_daemon_status status = preempt_stub_validate(&stub, gpu_count, &why);
  if (status == PREEMPT_DAEMON_OK) {
    REQUIRE(why == NULL && stub.gpu < gpu_count && stub.persistent_ctas >= 1 && stub.ctas_per_sm >= 1);
    uint64_t threads = 1;
    for (int d = 0; d < 3; d++) {
      REQUIRE(stub.grid[d] >= 1 && stub.block[d] >= 1);
      threads *= stub.block[d];
    }
    REQUIRE(threads <= 1024 && terminated(stub.name, sizeof stub.name));
    REQUIRE(stub.weight <= PREEMPT_WEIGHT_MAX); /* 0 is allowed: it reads as 1 */
    REQUIRE(stub.registers_per_thread <= 255 && stub.shared_bytes + stub.static_shared_bytes <= (16u << 20));
    REQUIRE(stub.registers_per_thread == 0 || stub.task_count >= 1);
  } else {
    REQUIRE(status == PREEMPT_DAEMON_MALFORMED && why != NULL && strcmp(why, "unset") != 0);
    /* The weight is the last check: refused for it only when it is out of range. */
    if (strcmp(why, "weight") == 0)
      REQUIRE(stub.weight > PREEMPT_WEIGHT_MAX && terminated(stub.name, sizeof stub.name));
  }
  /* The move table: 0 or 1, nothing outside the enum, and no move allowed to both sides. */
  uint32_t from = stub.state, to = stub.launch_sequence;
  int client = preempt_stub_move_allowed(from, to, 0), daemon = preempt_stub_move_allowed(from, to, 1);
  REQUIRE((client == 0 || client == 1) && (daemon == 0 || daemon == 1) && !(client && daemon));
  if (client || daemon)
    REQUIRE(from <= PREEMPT_STUB_DONE && to <= PREEMPT_STUB_DONE && from != to);
  REQUIRE(preempt_stub_state_name(stub.state) != NULL);
}

static void fuzz_names(const uint8_t *data, size_t size) {
  if (size == 0 || size > 4096)
    return;
  char *text = malloc(size);
  REQUIRE(text != NULL);
  memcpy(text, data + 1, size - 1);
  text[size - 1] = 0;
  /* Kernel keys: FNV-1a 64 recomputed here. */
  uint64_t hash = UINT64_C(0xcbf29ce484222325);
  for (const unsigned char *p = (const unsigned char *)text; *p; p++)
    hash = (hash ^ *p) * UINT64_C(0x100000001b3);
  REQUIRE(preempt_kernel_key(text) == hash);
  /* preempt_copy_name: truncated prefix, NUL-terminated, zero-padded, never past the field. */
  size_t field_bytes = (size_t)data[0] % 64 + 1;
  char *field = malloc(field_bytes);
  REQUIRE(field != NULL);
  memset(field, 0x5a, field_bytes);
  preempt_copy_name(field, field_bytes, text);
  size_t copied = strlen(field);
  REQUIRE(copied < field_bytes && copied <= strlen(text) && memcmp(field, text, copied) == 0);
  REQUIRE(copied == strlen(text) || copied == field_bytes - 1);
  REQUIRE(all_zero(field + copied, field_bytes - copied));
  free(field);
  free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_decode(data, size);
  fuzz_stub(data, size);
  fuzz_names(data, size);
  return 0;
}
