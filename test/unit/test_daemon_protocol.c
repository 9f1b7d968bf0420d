/* test_daemon_protocol.c: unit tests of preemptd's protocol codec, stub checks, state moves, kernel keys and futexes.
 * EffiSha §6.1 (stubs and their states), §6.4 (priority limits); FLEP §3 (one scheduler per node). */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "preempt/daemon_protocol.h"

/* Packets are built here, 8-byte aligned as the decoder requires of LISTING; `+ 8` leaves room to misalign a copy. */
static _Alignas(8) unsigned char packet[PREEMPT_DAEMON_MAX_MESSAGE + 16];
static preempt_msg decoded;

static preempt_daemon_status decode_packet(size_t length) { return preempt_msg_decode(packet, length, &decoded); }

/* ---------------------------------------------------------------- valid messages of each type */

static size_t make_register(void) {
  preempt_msg_register m;
  memset(&m, 0, sizeof m);
  preempt_msg_header_init(&m.header, PREEMPT_MSG_REGISTER, sizeof m, 101);
  m.priority = -5;
  m.priority_requested = 1;
  m.gpu_count = 2;
  preempt_copy_name(m.program, sizeof m.program, "bench");
  for (int i = 0; i < 16; i++) {
    m.gpus[0].uuid[i] = (uint8_t)i;
    m.gpus[1].uuid[i] = (uint8_t)(0xf0 + i);
  }
  m.gpus[0].sm_count = 132;
  m.gpus[1].sm_count = 256;
  /* The first GPU reports an H100's SM limits, the second none (unknown: all zero). */
  m.gpus[0].max_threads = 2048;
  m.gpus[0].max_ctas = 32;
  m.gpus[0].registers = 65536;
  m.gpus[0].register_unit = 256;
  m.gpus[0].shared_bytes = 233472;
  m.gpus[0].shared_unit = 128;
  m.gpus[0].shared_reserved = 1024;
  m.gpus[0].warp_size = 32;
  memcpy(packet, &m, sizeof m);
  return sizeof m;
}

static size_t make_registered(void) {
  preempt_msg_registered m;
  memset(&m, 0, sizeof m);
  preempt_msg_header_init(&m.header, PREEMPT_MSG_REGISTERED, sizeof m, 101);
  m.client_id = 7;
  m.priority = -5;
  m.priority_limit = 0;
  m.stub_count = PREEMPT_STUBS_PER_CLIENT;
  m.page_bytes = sizeof(preempt_client_page);
  m.doorbell_bytes = sizeof(preempt_doorbell_page);
  memcpy(packet, &m, sizeof m);
  return sizeof m;
}

static size_t make_set_priority(void) {
  preempt_msg_set_priority m;
  memset(&m, 0, sizeof m);
  preempt_msg_header_init(&m.header, PREEMPT_MSG_SET_PRIORITY, sizeof m, 102);
  m.priority = PREEMPT_PRIORITY_MIN;
  memcpy(packet, &m, sizeof m);
  return sizeof m;
}

static size_t make_priority(void) {
  preempt_msg_priority m;
  memset(&m, 0, sizeof m);
  preempt_msg_header_init(&m.header, PREEMPT_MSG_PRIORITY, sizeof m, 102);
  m.priority = 3;
  m.priority_limit = PREEMPT_PRIORITY_MAX;
  memcpy(packet, &m, sizeof m);
  return sizeof m;
}

static size_t make_set_policy(void) {
  preempt_msg_set_policy m;
  memset(&m, 0, sizeof m);
  preempt_msg_header_init(&m.header, PREEMPT_MSG_SET_POLICY, sizeof m, 103);
  m.uuid[0] = 0xab;
  m.uuid[15] = 0xcd;
  preempt_copy_name(m.policy, sizeof m.policy, "dprr");
  memcpy(packet, &m, sizeof m);
  return sizeof m;
}

static size_t make_status(void) {
  preempt_msg_status m;
  memset(&m, 0, sizeof m);
  preempt_msg_header_init(&m.header, PREEMPT_MSG_STATUS, sizeof m, 103);
  m.status = PREEMPT_DAEMON_NOT_PERMITTED;
  preempt_copy_name(m.message, sizeof m.message, "policy switch needs root");
  memcpy(packet, &m, sizeof m);
  return sizeof m;
}

static size_t make_list(void) {
  preempt_msg_list m;
  preempt_msg_header_init(&m.header, PREEMPT_MSG_LIST, sizeof m, 104);
  memcpy(packet, &m, sizeof m);
  return sizeof m;
}

/* Offsets of a LISTING's parts in `packet`, for the tests that break one entry. */
static size_t listing_gpus_at(void) { return sizeof(preempt_msg_listing); }
static size_t listing_clients_at(uint32_t gpus) { return listing_gpus_at() + gpus * sizeof(preempt_listing_gpu); }
static size_t listing_kernels_at(uint32_t gpus, uint32_t clients) {
  return listing_clients_at(gpus) + clients * sizeof(preempt_listing_client);
}

static size_t make_listing(uint32_t gpus, uint32_t clients, uint32_t kernels) {
  preempt_msg_listing m;
  memset(&m, 0, sizeof m);
  size_t length = listing_kernels_at(gpus, clients) + kernels * sizeof(preempt_listing_kernel);
  preempt_msg_header_init(&m.header, PREEMPT_MSG_LISTING, (uint32_t)length, 104);
  m.gpu_count = gpus;
  m.client_count = clients;
  m.kernel_count = kernels;
  m.sharing = PREEMPT_SHARING_TIMESLICE;
  m.uptime_us = UINT64_C(123456789);
  memcpy(packet, &m, sizeof m);
  for (uint32_t i = 0; i < gpus; i++) {
    preempt_listing_gpu g;
    memset(&g, 0, sizeof g);
    g.uuid[0] = (uint8_t)i;
    g.sm_count = 100 + i;
    g.kernels = i;
    g.decisions = 1000 + i;
    g.evictions = 10 + i;
    preempt_copy_name(g.policy, sizeof g.policy, "hpf");
    memcpy(packet + listing_gpus_at() + i * sizeof g, &g, sizeof g);
  }
  for (uint32_t i = 0; i < clients; i++) {
    preempt_listing_client c;
    memset(&c, 0, sizeof c);
    c.client_id = i + 1;
    c.pid = 4000 + i;
    c.uid = 1000;
    c.priority = -1;
    c.priority_limit = 0;
    c.launches = 50 + i;
    c.evictions = 5;
    preempt_copy_name(c.program, sizeof c.program, "train");
    memcpy(packet + listing_clients_at(gpus) + i * sizeof c, &c, sizeof c);
  }
  for (uint32_t i = 0; i < kernels; i++) {
    preempt_listing_kernel k;
    memset(&k, 0, sizeof k);
    k.client_id = 1;
    k.stub = i % PREEMPT_STUBS_PER_CLIENT;
    k.gpu = gpus ? i % gpus : 0;
    k.state = i % (PREEMPT_STUB_DONE + 1);
    k.priority = 2;
    k.evictions = 1;
    k.weight = 1 + i % PREEMPT_WEIGHT_MAX; /* 1..64: the largest listing has every weight a daemon may grant */
    k.waited_us = 1500.5;
    k.ran_us = 20000;
    k.predicted_us = 30000;
    preempt_copy_name(k.name, sizeof k.name, "matmul_kernel");
    memcpy(packet + listing_kernels_at(gpus, clients) + i * sizeof k, &k, sizeof k);
  }
  return length;
}

/* ---------------------------------------------------------------- round trips */

static void test_round_trips(void) {
  size_t length = make_register();
  CHECK(decode_packet(length) == PREEMPT_DAEMON_OK);
  CHECK(decoded.type == PREEMPT_MSG_REGISTER);
  CHECK_EQ_U64(decoded.request_id, 101);
  CHECK(decoded.body.register_request.priority == -5);
  CHECK_EQ_U64(decoded.body.register_request.priority_requested, 1);
  CHECK_EQ_U64(decoded.body.register_request.gpu_count, 2);
  CHECK(strcmp(decoded.body.register_request.program, "bench") == 0);
  CHECK_EQ_U64(decoded.body.register_request.gpus[1].sm_count, 256);
  CHECK_EQ_U64(decoded.body.register_request.gpus[1].uuid[15], 0xff);
  CHECK_EQ_U64(decoded.body.register_request.gpus[0].shared_bytes, 233472);
  CHECK_EQ_U64(decoded.body.register_request.gpus[1].max_threads, 0);
  CHECK(memcmp(&decoded.body.register_request, packet, length) == 0);
  CHECK(decoded.listing_gpus == NULL && decoded.listing_clients == NULL && decoded.listing_kernels == NULL);

  length = make_registered();
  CHECK(decode_packet(length) == PREEMPT_DAEMON_OK);
  CHECK(decoded.type == PREEMPT_MSG_REGISTERED);
  CHECK_EQ_U64(decoded.body.registered.client_id, 7);
  CHECK(decoded.body.registered.priority == -5 && decoded.body.registered.priority_limit == 0);
  CHECK_EQ_U64(decoded.body.registered.page_bytes, 13840);
  CHECK(memcmp(&decoded.body.registered, packet, length) == 0);

  length = make_set_priority();
  CHECK(decode_packet(length) == PREEMPT_DAEMON_OK);
  CHECK(decoded.type == PREEMPT_MSG_SET_PRIORITY);
  CHECK(decoded.body.set_priority.priority == PREEMPT_PRIORITY_MIN);
  CHECK_EQ_U64(decoded.request_id, 102);

  length = make_priority();
  CHECK(decode_packet(length) == PREEMPT_DAEMON_OK);
  CHECK(decoded.type == PREEMPT_MSG_PRIORITY);
  CHECK(decoded.body.priority.priority == 3 && decoded.body.priority.priority_limit == PREEMPT_PRIORITY_MAX);

  length = make_set_policy();
  CHECK(decode_packet(length) == PREEMPT_DAEMON_OK);
  CHECK(decoded.type == PREEMPT_MSG_SET_POLICY);
  CHECK(strcmp(decoded.body.set_policy.policy, "dprr") == 0);
  CHECK_EQ_U64(decoded.body.set_policy.uuid[0], 0xab);
  CHECK_EQ_U64(decoded.body.set_policy.uuid[15], 0xcd);

  length = make_status();
  CHECK(decode_packet(length) == PREEMPT_DAEMON_OK);
  CHECK(decoded.type == PREEMPT_MSG_STATUS);
  CHECK(decoded.body.status.status == PREEMPT_DAEMON_NOT_PERMITTED);
  CHECK(strcmp(decoded.body.status.message, "policy switch needs root") == 0);

  length = make_list();
  CHECK_EQ_U64(length, 16);
  CHECK(decode_packet(length) == PREEMPT_DAEMON_OK);
  CHECK(decoded.type == PREEMPT_MSG_LIST);
  CHECK_EQ_U64(decoded.request_id, 104);

  length = make_listing(2, 3, 5);
  CHECK(decode_packet(length) == PREEMPT_DAEMON_OK);
  CHECK(decoded.type == PREEMPT_MSG_LISTING);
  CHECK_EQ_U64(decoded.body.listing.gpu_count, 2);
  CHECK_EQ_U64(decoded.body.listing.client_count, 3);
  CHECK_EQ_U64(decoded.body.listing.kernel_count, 5);
  CHECK_EQ_U64(decoded.body.listing.uptime_us, 123456789);
  /* The arrays point into the packet, where the encoder put them. */
  CHECK((const unsigned char *)decoded.listing_gpus == packet + 40);
  CHECK((const unsigned char *)decoded.listing_clients == packet + 40 + 2 * 56);
  CHECK((const unsigned char *)decoded.listing_kernels == packet + 40 + 2 * 56 + 3 * 80);
  CHECK_EQ_U64(decoded.listing_gpus[1].sm_count, 101);
  CHECK_EQ_U64(decoded.listing_gpus[1].decisions, 1001);
  CHECK(strcmp(decoded.listing_gpus[0].policy, "hpf") == 0);
  CHECK_EQ_U64(decoded.listing_clients[2].pid, 4002);
  CHECK(strcmp(decoded.listing_clients[2].program, "train") == 0);
  CHECK_EQ_U64(decoded.listing_kernels[4].state, 4);
  CHECK_EQ_U64(decoded.listing_kernels[4].weight, 5);
  CHECK_EQ_U64(decoded.listing_kernels[0].weight, 1);
  CHECK(decoded.listing_kernels[4].waited_us == 1500.5);
  CHECK(strcmp(decoded.listing_kernels[4].name, "matmul_kernel") == 0);

  /* An empty listing (a daemon with no client yet) is valid, with no arrays. */
  length = make_listing(0, 0, 0);
  CHECK_EQ_U64(length, 40);
  CHECK(decode_packet(length) == PREEMPT_DAEMON_OK);
  CHECK(decoded.listing_gpus == NULL && decoded.listing_clients == NULL && decoded.listing_kernels == NULL);

  /* The largest listing fits the largest packet and decodes. */
  length = make_listing(PREEMPT_DAEMON_MAX_GPUS, PREEMPT_LISTING_MAX_CLIENTS, PREEMPT_LISTING_MAX_KERNELS);
  CHECK(length <= PREEMPT_DAEMON_MAX_MESSAGE);
  CHECK(decode_packet(length) == PREEMPT_DAEMON_OK);
  CHECK_EQ_U64(decoded.listing_kernels[PREEMPT_WEIGHT_MAX - 1].weight, PREEMPT_WEIGHT_MAX);
}

/* The kernel entry, as other programs pack it by hand (test/lit/daemon/Inputs/fake_preemptd.py): the weight and
 * (version 4, in version 2's reserved word) the CTA quota after evictions, the times 8-byte aligned behind them,
 * 104 bytes in all. */
static void test_listing_layout(void) {
  CHECK_EQ_U64(PREEMPT_DAEMON_PROTOCOL_VERSION, 6);
  CHECK_EQ_U64(sizeof(preempt_listing_client), 80);
  CHECK_EQ_U64(offsetof(preempt_listing_client, job_id), 72);
  CHECK_EQ_U64(sizeof(preempt_listing_kernel), 104);
  CHECK_EQ_U64(offsetof(preempt_listing_kernel, evictions), 20);
  CHECK_EQ_U64(offsetof(preempt_listing_kernel, weight), 24);
  CHECK_EQ_U64(offsetof(preempt_listing_kernel, quota), 28);
  CHECK_EQ_U64(offsetof(preempt_listing_kernel, waited_us), 32);
  CHECK_EQ_U64(offsetof(preempt_listing_kernel, name), 56);
  CHECK_EQ_U64(sizeof(preempt_msg_listing) + PREEMPT_DAEMON_MAX_GPUS * sizeof(preempt_listing_gpu) +
                   PREEMPT_LISTING_MAX_CLIENTS * sizeof(preempt_listing_client) +
                   PREEMPT_LISTING_MAX_KERNELS * sizeof(preempt_listing_kernel),
               48040);
}

/* A fixed-size message at an odd address decodes (it is copied out); a LISTING there is refused (its arrays would be
 * misaligned pointers). */
static void test_alignment(void) {
  size_t length = make_register();
  memmove(packet + 1, packet, length);
  CHECK(preempt_msg_decode(packet + 1, length, &decoded) == PREEMPT_DAEMON_OK);
  CHECK(strcmp(decoded.body.register_request.program, "bench") == 0);
  length = make_status();
  memmove(packet + 3, packet, length);
  CHECK(preempt_msg_decode(packet + 3, length, &decoded) == PREEMPT_DAEMON_OK);
  length = make_listing(1, 1, 1);
  memmove(packet + 4, packet, length);
  CHECK(preempt_msg_decode(packet + 4, length, &decoded) == PREEMPT_DAEMON_MALFORMED);
  memmove(packet + 8, packet + 4, length);
  CHECK(preempt_msg_decode(packet + 8, length, &decoded) == PREEMPT_DAEMON_OK);
}

/* ---------------------------------------------------------------- malformations */

static void put_u32(size_t at, uint32_t value) { memcpy(packet + at, &value, sizeof value); }
static void put_u16(size_t at, uint16_t value) { memcpy(packet + at, &value, sizeof value); }
static void put_i32(size_t at, int32_t value) { memcpy(packet + at, &value, sizeof value); }

/* Sets both the header's length and the packet's, so only the type's own size rule can reject it. */
static preempt_daemon_status decode_resized(size_t length) {
  put_u32(offsetof(preempt_msg_header, length), (uint32_t)length);
  return decode_packet(length);
}

static void test_header_malformations(void) {
  size_t length = make_register();
  CHECK(preempt_msg_decode(packet, 0, &decoded) == PREEMPT_DAEMON_MALFORMED);
  CHECK(preempt_msg_decode(packet, 15, &decoded) == PREEMPT_DAEMON_MALFORMED);
  CHECK(preempt_msg_decode(NULL, 16, &decoded) == PREEMPT_DAEMON_MALFORMED);
  CHECK(preempt_msg_decode(packet, length, NULL) == PREEMPT_DAEMON_MALFORMED);
  /* Short and long, by the packet and by the header's length. */
  CHECK(decode_packet(length - 1) == PREEMPT_DAEMON_MALFORMED);
  CHECK(decode_packet(length + 1) == PREEMPT_DAEMON_MALFORMED);
  CHECK(decode_resized(length - 1) == PREEMPT_DAEMON_MALFORMED);
  make_register();
  CHECK(decode_resized(length + 4) == PREEMPT_DAEMON_MALFORMED);
  make_register();
  CHECK(decode_resized(PREEMPT_DAEMON_MAX_MESSAGE + 8) == PREEMPT_DAEMON_MALFORMED);
  length = make_list();
  CHECK(decode_resized(length + 8) == PREEMPT_DAEMON_MALFORMED);
  length = make_set_priority();
  CHECK(decode_resized(length - 4) == PREEMPT_DAEMON_MALFORMED);

  /* Wrong magic: not ours at all. */
  length = make_status();
  put_u32(offsetof(preempt_msg_header, magic), 0x504d5254u);
  CHECK(decode_packet(length) == PREEMPT_DAEMON_MALFORMED);

  /* Wrong version: told apart from malformed, whatever follows. */
  length = make_status();
  put_u16(offsetof(preempt_msg_header, version), PREEMPT_DAEMON_PROTOCOL_VERSION + 1);
  CHECK(decode_packet(length) == PREEMPT_DAEMON_BAD_VERSION);
  put_u16(offsetof(preempt_msg_header, version), 0);
  CHECK(decode_packet(length) == PREEMPT_DAEMON_BAD_VERSION);
  put_u16(offsetof(preempt_msg_header, version), PREEMPT_DAEMON_PROTOCOL_VERSION + 1);
  CHECK(decode_resized(64) == PREEMPT_DAEMON_BAD_VERSION);

  /* Unknown types, including one between the client's and preemptctl's ranges. */
  static const uint16_t unknown[] = {0, 3, 9, 12, 19, 24, 0xffff};
  for (unsigned i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
    length = make_status();
    put_u16(offsetof(preempt_msg_header, type), unknown[i]);
    CHECK(decode_packet(length) == PREEMPT_DAEMON_MALFORMED);
  }
  /* The right size of another type is still the wrong size. */
  length = make_set_priority();
  put_u16(offsetof(preempt_msg_header, type), PREEMPT_MSG_SET_POLICY);
  CHECK(decode_packet(length) == PREEMPT_DAEMON_MALFORMED);

  /* A rejected message leaves `out` zeroed. */
  CHECK(decoded.type == 0 && decoded.request_id == 0);
}

static void test_body_malformations(void) {
  size_t length;
  /* REGISTER */
  length = make_register();
  put_i32(offsetof(preempt_msg_register, priority), PREEMPT_PRIORITY_MAX + 1);
  CHECK(decode_packet(length) == PREEMPT_DAEMON_MALFORMED);
  length = make_register();
  put_i32(offsetof(preempt_msg_register, priority), PREEMPT_PRIORITY_MIN - 1);
  CHECK(decode_packet(length) == PREEMPT_DAEMON_MALFORMED);
  length = make_register();
  put_u32(offsetof(preempt_msg_register, priority_requested), 2);
  CHECK(decode_packet(length) == PREEMPT_DAEMON_MALFORMED);
  length = make_register();
  put_u32(offsetof(preempt_msg_register, reserved), 1);
  CHECK(decode_packet(length) == PREEMPT_DAEMON_MALFORMED);
  length = make_register();
  put_u32(offsetof(preempt_msg_register, gpu_count), PREEMPT_DAEMON_MAX_GPUS + 1);
  CHECK(decode_packet(length) == PREEMPT_DAEMON_MALFORMED);
  length = make_register();
  memset(packet + offsetof(preempt_msg_register, program), 'x', PREEMPT_DAEMON_PROGRAM_BYTES);
  CHECK(decode_packet(length) == PREEMPT_DAEMON_MALFORMED);
  length = make_register();
  put_u32(offsetof(preempt_msg_register, gpus[1].sm_count), 0);
  CHECK(decode_packet(length) == PREEMPT_DAEMON_MALFORMED);
  length = make_register();
  put_u32(offsetof(preempt_msg_register, gpus[0].sm_count), 257);
  CHECK(decode_packet(length) == PREEMPT_DAEMON_MALFORMED);
  length = make_register();
  put_u32(offsetof(preempt_msg_register, gpus[1].reserved), 0x100);
  CHECK(decode_packet(length) == PREEMPT_DAEMON_MALFORMED);
  /* Entries past gpu_count are not meaningful: not checked. */
  length = make_register();
  put_u32(offsetof(preempt_msg_register, gpus[2].sm_count), 9999);
  CHECK(decode_packet(length) == PREEMPT_DAEMON_OK);
  /* A zeroed, unrequested priority and no GPU at all are fine. */
  length = make_register();
  put_i32(offsetof(preempt_msg_register, priority), 0);
  put_u32(offsetof(preempt_msg_register, priority_requested), 0);
  put_u32(offsetof(preempt_msg_register, gpu_count), 0);
  CHECK(decode_packet(length) == PREEMPT_DAEMON_OK);

  /* REGISTERED */
  length = make_registered();
  put_u32(offsetof(preempt_msg_registered, client_id), 0);
  CHECK(decode_packet(length) == PREEMPT_DAEMON_MALFORMED);
  length = make_registered();
  put_i32(offsetof(preempt_msg_registered, priority), 1); /* above its limit 0 */
  CHECK(decode_packet(length) == PREEMPT_DAEMON_MALFORMED);
  length = make_registered();
  put_i32(offsetof(preempt_msg_registered, priority_limit), PREEMPT_PRIORITY_MAX + 1);
  CHECK(decode_packet(length) == PREEMPT_DAEMON_MALFORMED);
  length = make_registered();
  put_u32(offsetof(preempt_msg_registered, stub_count), PREEMPT_STUBS_PER_CLIENT + 1);
  CHECK(decode_packet(length) == PREEMPT_DAEMON_MALFORMED);
  length = make_registered();
  put_u32(offsetof(preempt_msg_registered, page_bytes), 4096);
  CHECK(decode_packet(length) == PREEMPT_DAEMON_MALFORMED);
  length = make_registered();
  put_u32(offsetof(preempt_msg_registered, doorbell_bytes), 4);
  CHECK(decode_packet(length) == PREEMPT_DAEMON_MALFORMED);

  /* SET_PRIORITY, PRIORITY */
  length = make_set_priority();
  put_i32(offsetof(preempt_msg_set_priority, priority), 21);
  CHECK(decode_packet(length) == PREEMPT_DAEMON_MALFORMED);
  length = make_set_priority();
  put_i32(offsetof(preempt_msg_set_priority, priority), INT32_MIN);
  CHECK(decode_packet(length) == PREEMPT_DAEMON_MALFORMED);
  length = make_set_priority();
  put_u32(offsetof(preempt_msg_set_priority, reserved), 1);
  CHECK(decode_packet(length) == PREEMPT_DAEMON_MALFORMED);
  length = make_priority();
  put_i32(offsetof(preempt_msg_priority, priority), -21);
  CHECK(decode_packet(length) == PREEMPT_DAEMON_MALFORMED);
  length = make_priority();
  put_i32(offsetof(preempt_msg_priority, priority_limit), 2); /* below the grant 3 */
  CHECK(decode_packet(length) == PREEMPT_DAEMON_MALFORMED);

  /* SET_POLICY, STATUS */
  length = make_set_policy();
  memset(packet + offsetof(preempt_msg_set_policy, policy), 'p', PREEMPT_DAEMON_POLICY_BYTES);
  CHECK(decode_packet(length) == PREEMPT_DAEMON_MALFORMED);
  length = make_status();
  memset(packet + offsetof(preempt_msg_status, message), 'm', PREEMPT_DAEMON_TEXT_BYTES);
  CHECK(decode_packet(length) == PREEMPT_DAEMON_MALFORMED);
  length = make_status();
  put_u32(offsetof(preempt_msg_status, reserved), 1);
  CHECK(decode_packet(length) == PREEMPT_DAEMON_MALFORMED);
  length = make_status();
  put_i32(offsetof(preempt_msg_status, status), PREEMPT_DAEMON_BUFFER_TOO_SMALL + 1);
  CHECK(decode_packet(length) == PREEMPT_DAEMON_MALFORMED);
  length = make_status();
  put_i32(offsetof(preempt_msg_status, status), -1);
  CHECK(decode_packet(length) == PREEMPT_DAEMON_MALFORMED);
}

static void test_listing_malformations(void) {
  const uint32_t gpus = 2, clients = 3, kernels = 4;
  size_t length = make_listing(gpus, clients, kernels);
  const size_t c0 = listing_clients_at(gpus), k0 = listing_kernels_at(gpus, clients);

  /* Lengths that disagree with the counts: one byte, one entry, either way; counts over their maximum. */
  CHECK(decode_resized(length - 1) == PREEMPT_DAEMON_MALFORMED);
  make_listing(gpus, clients, kernels);
  CHECK(decode_resized(length + 1) == PREEMPT_DAEMON_MALFORMED);
  make_listing(gpus, clients, kernels);
  CHECK(decode_resized(length - sizeof(preempt_listing_kernel)) == PREEMPT_DAEMON_MALFORMED);
  make_listing(gpus, clients, kernels);
  CHECK(decode_resized(length + sizeof(preempt_listing_kernel)) == PREEMPT_DAEMON_MALFORMED);
  length = make_listing(gpus, clients, kernels);
  put_u32(offsetof(preempt_msg_listing, client_count), clients + 1);
  CHECK(decode_packet(length) == PREEMPT_DAEMON_MALFORMED);
  length = make_listing(gpus, clients, kernels);
  put_u32(offsetof(preempt_msg_listing, gpu_count), 0xffffffffu);
  CHECK(decode_packet(length) == PREEMPT_DAEMON_MALFORMED);
  /* Counts one over the maximum, with lengths that match them. */
  length = make_listing(PREEMPT_DAEMON_MAX_GPUS + 1, 0, 0);
  CHECK(decode_packet(length) == PREEMPT_DAEMON_MALFORMED);
  length = make_listing(0, PREEMPT_LISTING_MAX_CLIENTS + 1, 0);
  CHECK(decode_packet(length) == PREEMPT_DAEMON_MALFORMED);
  length = make_listing(1, 0, PREEMPT_LISTING_MAX_KERNELS + 1);
  CHECK(decode_packet(length) == PREEMPT_DAEMON_MALFORMED);
  /* Sharing: time-slicing (1) or MPS (2), nothing else (0 is what a version 4 daemon sent). */
  for (uint32_t sharing = 0; sharing < 4; sharing++) {
    length = make_listing(gpus, clients, kernels);
    put_u32(offsetof(preempt_msg_listing, sharing), sharing);
    preempt_daemon_status expected =
        sharing == PREEMPT_SHARING_TIMESLICE || sharing == PREEMPT_SHARING_MPS ? PREEMPT_DAEMON_OK : PREEMPT_DAEMON_MALFORMED;
    CHECK(decode_packet(length) == expected);
  }

  /* GPU entries */
  length = make_listing(gpus, clients, kernels);
  put_u32(listing_gpus_at() + sizeof(preempt_listing_gpu) + offsetof(preempt_listing_gpu, sm_count), 0);
  CHECK(decode_packet(length) == PREEMPT_DAEMON_MALFORMED);
  length = make_listing(gpus, clients, kernels);
  memset(packet + listing_gpus_at() + offsetof(preempt_listing_gpu, policy), 'h', PREEMPT_DAEMON_POLICY_BYTES);
  CHECK(decode_packet(length) == PREEMPT_DAEMON_MALFORMED);

  /* Client entries */
  /* A client's lease word is any set of its GPUs. */
  length = make_listing(gpus, clients, kernels);
  put_u32(c0 + 2 * sizeof(preempt_listing_client) + offsetof(preempt_listing_client, lease), 0xffffffffu);
  CHECK(decode_packet(length) == PREEMPT_DAEMON_OK);
  CHECK_EQ_U64(decoded.listing_clients[2].lease, 0xffffffffu);
  length = make_listing(gpus, clients, kernels);
  put_i32(c0 + offsetof(preempt_listing_client, priority), 1); /* above its limit 0 */
  CHECK(decode_packet(length) == PREEMPT_DAEMON_MALFORMED);
  length = make_listing(gpus, clients, kernels);
  put_i32(c0 + offsetof(preempt_listing_client, priority_limit), 99);
  CHECK(decode_packet(length) == PREEMPT_DAEMON_MALFORMED);
  length = make_listing(gpus, clients, kernels);
  memset(packet + c0 + offsetof(preempt_listing_client, program), 't', PREEMPT_DAEMON_PROGRAM_BYTES);
  CHECK(decode_packet(length) == PREEMPT_DAEMON_MALFORMED);

  /* Kernel entries */
  length = make_listing(gpus, clients, kernels);
  put_u32(k0 + offsetof(preempt_listing_kernel, state), PREEMPT_STUB_DONE + 1);
  CHECK(decode_packet(length) == PREEMPT_DAEMON_MALFORMED);
  length = make_listing(gpus, clients, kernels);
  put_u32(k0 + sizeof(preempt_listing_kernel) + offsetof(preempt_listing_kernel, gpu), gpus);
  CHECK(decode_packet(length) == PREEMPT_DAEMON_MALFORMED);
  length = make_listing(gpus, clients, kernels);
  put_u32(k0 + offsetof(preempt_listing_kernel, stub), PREEMPT_STUBS_PER_CLIENT);
  CHECK(decode_packet(length) == PREEMPT_DAEMON_MALFORMED);
  length = make_listing(gpus, clients, kernels);
  put_i32(k0 + 3 * sizeof(preempt_listing_kernel) + offsetof(preempt_listing_kernel, priority), 21);
  CHECK(decode_packet(length) == PREEMPT_DAEMON_MALFORMED);
  length = make_listing(gpus, clients, kernels);
  memset(packet + k0 + 3 * sizeof(preempt_listing_kernel) + offsetof(preempt_listing_kernel, name), 'k',
         PREEMPT_DAEMON_NAME_BYTES);
  CHECK(decode_packet(length) == PREEMPT_DAEMON_MALFORMED);
  length = make_listing(gpus, clients, kernels);
  double nan_value = NAN, negative = -1.0;
  memcpy(packet + k0 + offsetof(preempt_listing_kernel, ran_us), &nan_value, sizeof nan_value);
  CHECK(decode_packet(length) == PREEMPT_DAEMON_MALFORMED);
  length = make_listing(gpus, clients, kernels);
  memcpy(packet + k0 + offsetof(preempt_listing_kernel, waited_us), &negative, sizeof negative);
  CHECK(decode_packet(length) == PREEMPT_DAEMON_MALFORMED);
  /* A kernel needs a GPU to point at: kernels with no GPU listed are malformed. */
  length = make_listing(0, 1, 1);
  CHECK(decode_packet(length) == PREEMPT_DAEMON_MALFORMED);
}

/* The FFS weight of a listing's kernel is the one granted: 1..PREEMPT_WEIGHT_MAX. 0 is malformed here (unlike in a
 * stub, where it reads as 1: the daemon lists what it granted), as is anything above the maximum, in any entry. */
static void test_listing_weights(void) {
  const uint32_t gpus = 2, clients = 3, kernels = 4;
  const size_t k0 = listing_kernels_at(gpus, clients);
  const char *why = "unset";
  const uint32_t weights_ok[] = {1, 2, PREEMPT_WEIGHT_MAX - 1, PREEMPT_WEIGHT_MAX};
  for (unsigned i = 0; i < sizeof weights_ok / sizeof weights_ok[0]; i++) {
    size_t length = make_listing(gpus, clients, kernels);
    put_u32(k0 + 2 * sizeof(preempt_listing_kernel) + offsetof(preempt_listing_kernel, weight), weights_ok[i]);
    CHECK(preempt_msg_decode_why(packet, length, &decoded, &why) == PREEMPT_DAEMON_OK);
    CHECK(why == NULL);
    CHECK_EQ_U64(decoded.listing_kernels[2].weight, weights_ok[i]);
  }
  const uint32_t weights_bad[] = {0, PREEMPT_WEIGHT_MAX + 1, 1000, 0x80000000u, 0xffffffffu};
  for (unsigned i = 0; i < sizeof weights_bad / sizeof weights_bad[0]; i++) {
    for (uint32_t entry = 0; entry < kernels; entry += kernels - 1) { /* the first and the last entry */
      size_t length = make_listing(gpus, clients, kernels);
      put_u32(k0 + entry * sizeof(preempt_listing_kernel) + offsetof(preempt_listing_kernel, weight), weights_bad[i]);
      why = NULL;
      CHECK(preempt_msg_decode_why(packet, length, &decoded, &why) == PREEMPT_DAEMON_MALFORMED);
      CHECK(why != NULL && strcmp(why, "LISTING kernel weight not in 1..64") == 0);
      /* Refused as a whole: nothing of the listing is left for a careless reader. */
      CHECK(decoded.type == 0 && decoded.listing_kernels == NULL && decoded.body.listing.kernel_count == 0);
      CHECK(decode_packet(length) == PREEMPT_DAEMON_MALFORMED);
    }
  }
  /* The word next to it is the CTA quota: 0 (none) up to 64, the most CTAs an SM may report. */
  size_t length = make_listing(gpus, clients, kernels);
  put_u32(k0 + 3 * sizeof(preempt_listing_kernel) + offsetof(preempt_listing_kernel, quota), 64);
  CHECK(decode_packet(length) == PREEMPT_DAEMON_OK);
  CHECK_EQ_U64(decoded.listing_kernels[3].quota, 64);
  put_u32(k0 + 3 * sizeof(preempt_listing_kernel) + offsetof(preempt_listing_kernel, quota), 65);
  CHECK(preempt_msg_decode_why(packet, length, &decoded, &why) == PREEMPT_DAEMON_MALFORMED);
  CHECK(why != NULL && strcmp(why, "LISTING kernel quota over 64") == 0);

  /* Version 1's listing (96-byte kernel entries, no weight) is told apart, not misread: its header says version 1,
   * and the same bytes under version 2's number do not add up to version 2's length. */
  length = make_listing(gpus, clients, 0) + kernels * 96;
  memset(packet + k0, 0, kernels * 96);
  put_u32(offsetof(preempt_msg_listing, kernel_count), kernels);
  put_u32(offsetof(preempt_msg_header, length), (uint32_t)length);
  CHECK(preempt_msg_decode_why(packet, length, &decoded, &why) == PREEMPT_DAEMON_MALFORMED);
  CHECK(why != NULL && strcmp(why, "LISTING length does not match its counts") == 0);
  put_u16(offsetof(preempt_msg_header, version), 1);
  CHECK(preempt_msg_decode_why(packet, length, &decoded, &why) == PREEMPT_DAEMON_BAD_VERSION);
  CHECK(why != NULL && strcmp(why, "another protocol version") == 0);
}

/* preempt_msg_decode_why answers as preempt_msg_decode does and names what it refused; NULL for a sound message. */
static void test_decode_why(void) {
  const char *why = "unset";
  size_t length = make_register();
  CHECK(preempt_msg_decode_why(packet, length, &decoded, &why) == PREEMPT_DAEMON_OK && why == NULL);
  CHECK(preempt_msg_decode_why(packet, length, &decoded, NULL) == PREEMPT_DAEMON_OK);
  CHECK(preempt_msg_decode_why(packet, 8, &decoded, &why) == PREEMPT_DAEMON_MALFORMED);
  CHECK(why != NULL && strcmp(why, "shorter than a header") == 0);
  CHECK(preempt_msg_decode_why(NULL, length, &decoded, &why) == PREEMPT_DAEMON_MALFORMED && why != NULL);
  CHECK(preempt_msg_decode_why(packet, length, NULL, &why) == PREEMPT_DAEMON_MALFORMED && why != NULL);
  put_u32(offsetof(preempt_msg_register, gpus[1].sm_count), 0);
  CHECK(preempt_msg_decode_why(packet, length, &decoded, &why) == PREEMPT_DAEMON_MALFORMED);
  CHECK(why != NULL && strcmp(why, "REGISTER GPU sm_count not in 1..256") == 0);
  length = make_status();
  put_u32(offsetof(preempt_msg_header, magic), 0);
  CHECK(preempt_msg_decode_why(packet, length, &decoded, &why) == PREEMPT_DAEMON_MALFORMED);
  CHECK(why != NULL && strcmp(why, "wrong magic") == 0);
  length = make_listing(1, 1, 1);
  put_u32(listing_clients_at(1) + offsetof(preempt_listing_client, client_id), 0);
  CHECK(preempt_msg_decode_why(packet, length, &decoded, &why) == PREEMPT_DAEMON_MALFORMED);
  CHECK(why != NULL && strcmp(why, "LISTING client client_id 0") == 0);
  /* An accepted message clears a reason left from an earlier call. */
  length = make_listing(1, 1, 1);
  CHECK(preempt_msg_decode_why(packet, length, &decoded, &why) == PREEMPT_DAEMON_OK && why == NULL);
}

/* ---------------------------------------------------------------- helpers */

static void test_names(void) {
  char field[8];
  memset(field, 'z', sizeof field);
  preempt_copy_name(field, sizeof field, "abc");
  CHECK(memcmp(field, "abc\0\0\0\0\0", 8) == 0);
  preempt_copy_name(field, sizeof field, "a very long name");
  CHECK(memcmp(field, "a very \0", 8) == 0);
  preempt_copy_name(field, sizeof field, NULL);
  CHECK(memcmp(field, "\0\0\0\0\0\0\0\0", 8) == 0);
  preempt_copy_name(field, 1, "x");
  CHECK(field[0] == 0);

  preempt_msg_header header;
  preempt_msg_header_init(&header, PREEMPT_MSG_LISTING, 40, 0xdeadbeef);
  CHECK_EQ_U64(header.magic, 0x544d5250u);
  CHECK(memcmp(&header.magic, "PRMT", 4) == 0);
  CHECK_EQ_U64(header.version, PREEMPT_DAEMON_PROTOCOL_VERSION);
  CHECK_EQ_U64(header.type, 23);
  CHECK_EQ_U64(header.length, 40);
  CHECK_EQ_U64(header.request_id, 0xdeadbeef);

  CHECK(strcmp(preempt_stub_state_name(PREEMPT_STUB_FREE), "FREE") == 0);
  CHECK(strcmp(preempt_stub_state_name(PREEMPT_STUB_TOEVICT), "TOEVICT") == 0);
  CHECK(strcmp(preempt_stub_state_name(PREEMPT_STUB_DONE), "DONE") == 0);
  CHECK(strcmp(preempt_stub_state_name(7), "?") == 0);
  CHECK(strcmp(preempt_stub_state_name(0xffffffffu), "?") == 0);
  CHECK(strcmp(preempt_daemon_status_name(PREEMPT_DAEMON_OK), "ok") == 0);
  CHECK(strcmp(preempt_daemon_status_name(PREEMPT_DAEMON_BAD_VERSION), "another protocol version") == 0);
  CHECK(strcmp(preempt_daemon_status_name((preempt_daemon_status)99), "unknown status") == 0);
  for (int s = PREEMPT_DAEMON_OK; s <= PREEMPT_DAEMON_BUFFER_TOO_SMALL; s++)
    CHECK(strcmp(preempt_daemon_status_name((preempt_daemon_status)s), "unknown status") != 0);
}

static void test_kernel_key(void) {
  /* Expected values computed independently (Python, the FNV reference parameters); "foobar" is FNV's own vector. */
  CHECK_EQ_U64(preempt_kernel_key(""), UINT64_C(0xcbf29ce484222325));
  CHECK_EQ_U64(preempt_kernel_key("a"), UINT64_C(0xaf63dc4c8601ec8c));
  CHECK_EQ_U64(preempt_kernel_key("foobar"), UINT64_C(0x85944171f73967e8));
  CHECK_EQ_U64(preempt_kernel_key("_Z4vaddPfPKfS1_i"), UINT64_C(0x9fa95ba6566d41b8));
  CHECK_EQ_U64(preempt_kernel_key("matmul_kernel"), UINT64_C(0x2e39a98dbec8a55b));
  CHECK_EQ_U64(preempt_kernel_key(NULL), UINT64_C(0xcbf29ce484222325));
}

static preempt_stub valid_stub(void) {
  preempt_stub stub;
  memset(&stub, 0, sizeof stub);
  stub.state = PREEMPT_STUB_READY;
  stub.gpu = 1;
  stub.grid[0] = 1024;
  stub.grid[1] = stub.grid[2] = 1;
  stub.block[0] = 256;
  stub.block[1] = 2;
  stub.block[2] = 2;
  stub.persistent_ctas = 264;
  stub.ctas_per_sm = 2;
  preempt_copy_name(stub.name, sizeof stub.name, "vadd");
  stub.kernel_key = preempt_kernel_key("vadd");
  return stub;
}

static int stub_refused_for(const preempt_stub *stub, uint32_t gpu_count, const char *field) {
  const char *why = "unset";
  return preempt_stub_validate(stub, gpu_count, &why) == PREEMPT_DAEMON_MALFORMED && why && strcmp(why, field) == 0;
}

static void test_stub_validate(void) {
  preempt_stub stub = valid_stub();
  const char *why = "unset";
  CHECK(preempt_stub_validate(&stub, 2, &why) == PREEMPT_DAEMON_OK);
  CHECK(why == NULL);
  CHECK(preempt_stub_validate(&stub, 2, NULL) == PREEMPT_DAEMON_OK);
  CHECK(stub_refused_for(&stub, 1, "gpu"));
  CHECK(stub_refused_for(&stub, 0, "gpu"));
  for (int d = 0; d < 3; d++) {
    stub = valid_stub();
    stub.grid[d] = 0;
    CHECK(stub_refused_for(&stub, 2, "grid"));
    stub = valid_stub();
    stub.block[d] = 0;
    CHECK(stub_refused_for(&stub, 2, "block"));
  }
  stub = valid_stub();
  stub.block[0] = 1024;
  stub.block[1] = stub.block[2] = 1;
  CHECK(preempt_stub_validate(&stub, 2, &why) == PREEMPT_DAEMON_OK);
  stub.block[2] = 2;
  CHECK(stub_refused_for(&stub, 2, "block threads"));
  /* 65536 * 65536 * 1 wraps a 32-bit product to 0: still far too many threads. */
  stub = valid_stub();
  stub.block[0] = stub.block[1] = 65536;
  stub.block[2] = 1;
  CHECK(stub_refused_for(&stub, 2, "block threads"));
  stub = valid_stub();
  stub.persistent_ctas = 0;
  CHECK(stub_refused_for(&stub, 2, "persistent_ctas"));
  stub = valid_stub();
  stub.ctas_per_sm = 0;
  CHECK(stub_refused_for(&stub, 2, "ctas_per_sm"));
  stub = valid_stub();
  memset(stub.name, 'n', sizeof stub.name);
  CHECK(stub_refused_for(&stub, 2, "name"));
  /* A name exactly filling its field but for the NUL is fine. */
  stub.name[sizeof stub.name - 1] = 0;
  CHECK(preempt_stub_validate(&stub, 2, &why) == PREEMPT_DAEMON_OK);
  /* The FFS weight: 0 (read as 1) up to PREEMPT_WEIGHT_MAX; the daemon clamps to the client's limit later. */
  CHECK_EQ_U64(PREEMPT_WEIGHT_MAX, 64);
  const uint32_t weights_ok[] = {0, 1, 2, 63, PREEMPT_WEIGHT_MAX};
  for (unsigned i = 0; i < sizeof weights_ok / sizeof weights_ok[0]; i++) {
    stub = valid_stub();
    stub.weight = weights_ok[i];
    CHECK(preempt_stub_validate(&stub, 2, &why) == PREEMPT_DAEMON_OK && why == NULL);
  }
  const uint32_t weights_bad[] = {PREEMPT_WEIGHT_MAX + 1, 1000, 0x80000000u, 0xffffffffu};
  for (unsigned i = 0; i < sizeof weights_bad / sizeof weights_bad[0]; i++) {
    stub = valid_stub();
    stub.weight = weights_bad[i];
    CHECK(stub_refused_for(&stub, 2, "weight"));
  }
  /* The weight took the reserved word's place: same offset and size, the page layout unchanged. */
  CHECK_EQ_U64(offsetof(preempt_stub, weight), 164);
  CHECK_EQ_U64(offsetof(preempt_stub, weight), offsetof(preempt_stub, evictions_done) + 4);
  CHECK_EQ_U64(offsetof(preempt_stub, last_eviction_ns), offsetof(preempt_stub, weight) + 4);
  /* Version 4 appended its fields after last_eviction_ns: the offsets before stay those of version 3. */
  CHECK_EQ_U64(offsetof(preempt_stub, last_eviction_ns), 168);
  CHECK_EQ_U64(offsetof(preempt_stub, registers_per_thread), 176);
  CHECK_EQ_U64(offsetof(preempt_stub, static_shared_bytes), 180);
  CHECK_EQ_U64(offsetof(preempt_stub, task_count), 184);
  CHECK_EQ_U64(offsetof(preempt_stub, reserved_client), 188);
  CHECK_EQ_U64(offsetof(preempt_stub, command_quota), 192);
  CHECK_EQ_U64(offsetof(preempt_stub, reserved_daemon), 196);
  CHECK_EQ_U64(offsetof(preempt_stub, progress_tasks), 200);
  CHECK_EQ_U64(offsetof(preempt_stub, progress_ns), 208);
  CHECK_EQ_U64(sizeof(preempt_stub), 216);
  CHECK_EQ_U64(sizeof(preempt_client_page), 13840);
}

/* Version 4's footprint fields: registers_per_thread 0 means unknown (never co-located) and needs nothing else;
 * a known footprint needs at least one task; static + dynamic shared memory at most 16 MiB. */
static void test_stub_footprint(void) {
  const char *why = "unset";
  preempt_stub stub = valid_stub();
  CHECK(preempt_stub_validate(&stub, 2, &why) == PREEMPT_DAEMON_OK); /* footprint unknown, task_count 0 */
  stub.registers_per_thread = 32;
  CHECK(stub_refused_for(&stub, 2, "task_count"));
  stub.task_count = 1;
  CHECK(preempt_stub_validate(&stub, 2, &why) == PREEMPT_DAEMON_OK && why == NULL);
  stub.registers_per_thread = 255;
  CHECK(preempt_stub_validate(&stub, 2, &why) == PREEMPT_DAEMON_OK);
  stub.registers_per_thread = 256;
  CHECK(stub_refused_for(&stub, 2, "registers_per_thread"));
  stub = valid_stub();
  stub.registers_per_thread = 64;
  stub.task_count = 1000;
  stub.static_shared_bytes = 8u << 20;
  stub.shared_bytes = 8u << 20;
  CHECK(preempt_stub_validate(&stub, 2, &why) == PREEMPT_DAEMON_OK); /* exactly 16 MiB */
  stub.shared_bytes++;
  CHECK(stub_refused_for(&stub, 2, "shared memory"));
  /* A dynamic size that would wrap the sum is refused, not wrapped back under the limit. */
  stub.static_shared_bytes = 16;
  stub.shared_bytes = UINT64_MAX - 8;
  CHECK(stub_refused_for(&stub, 2, "shared memory"));
  stub.static_shared_bytes = 0xffffffffu;
  stub.shared_bytes = 0;
  CHECK(stub_refused_for(&stub, 2, "shared memory"));
  /* Even without a footprint the shared sizes are bounded. */
  stub = valid_stub();
  stub.shared_bytes = (16u << 20) + 1;
  CHECK(stub_refused_for(&stub, 2, "shared memory"));
  /* The daemon's fields and the progress samples are never judged: the client may write anything there. */
  stub = valid_stub();
  stub.command_quota = 0xffffffffu;
  stub.progress_tasks = UINT64_MAX;
  stub.progress_ns = 1;
  CHECK(preempt_stub_validate(&stub, 2, &why) == PREEMPT_DAEMON_OK);
}

/* REGISTER's SM limits: all zero (unknown) or each nonzero but shared_reserved, within plausible bounds. */
static void test_register_limits(void) {
  const char *why = NULL;
  size_t length = make_register();
  CHECK(decode_packet(length) == PREEMPT_DAEMON_OK);
  /* shared_reserved 0: GPUs before compute capability 8.0. */
  put_u32(offsetof(preempt_msg_register, gpus[0].shared_reserved), 0);
  CHECK(decode_packet(length) == PREEMPT_DAEMON_OK);
  static const size_t fields[] = {
      offsetof(preempt_msg_gpu, max_threads), offsetof(preempt_msg_gpu, max_ctas),
      offsetof(preempt_msg_gpu, registers),   offsetof(preempt_msg_gpu, register_unit),
      offsetof(preempt_msg_gpu, shared_bytes), offsetof(preempt_msg_gpu, shared_unit),
      offsetof(preempt_msg_gpu, warp_size),
  };
  for (unsigned i = 0; i < sizeof fields / sizeof fields[0]; i++) {
    length = make_register();
    put_u32(offsetof(preempt_msg_register, gpus[0]) + fields[i], 0);
    CHECK(preempt_msg_decode_why(packet, length, &decoded, &why) == PREEMPT_DAEMON_MALFORMED);
    CHECK(why != NULL && strcmp(why, "REGISTER GPU SM limits partly zero") == 0);
    /* One field set on an otherwise unknown GPU is as partial. */
    length = make_register();
    put_u32(offsetof(preempt_msg_register, gpus[1]) + fields[i], 1);
    CHECK(decode_packet(length) == PREEMPT_DAEMON_MALFORMED);
  }
  length = make_register();
  put_u32(offsetof(preempt_msg_register, gpus[1].shared_reserved), 1024); /* alone on an unknown GPU */
  CHECK(decode_packet(length) == PREEMPT_DAEMON_MALFORMED);
  static const struct {
    size_t field;
    uint32_t largest;
  } bounds[] = {
      {offsetof(preempt_msg_gpu, max_threads), 4096},
      {offsetof(preempt_msg_gpu, max_ctas), 64},
      {offsetof(preempt_msg_gpu, registers), 1u << 20},
      {offsetof(preempt_msg_gpu, shared_bytes), 16u << 20},
  };
  for (unsigned i = 0; i < sizeof bounds / sizeof bounds[0]; i++) {
    length = make_register();
    put_u32(offsetof(preempt_msg_register, gpus[0]) + bounds[i].field, bounds[i].largest);
    CHECK(decode_packet(length) == PREEMPT_DAEMON_OK);
    put_u32(offsetof(preempt_msg_register, gpus[0]) + bounds[i].field, bounds[i].largest + 1);
    CHECK(preempt_msg_decode_why(packet, length, &decoded, &why) == PREEMPT_DAEMON_MALFORMED);
    CHECK(why != NULL && strcmp(why, "REGISTER GPU SM limits out of range") == 0);
  }
  /* The entry's layout: the limits in coexec.h's order after sm_count, one reserved word, 56 bytes. */
  CHECK_EQ_U64(sizeof(preempt_msg_gpu), 56);
  CHECK_EQ_U64(offsetof(preempt_msg_gpu, sm_count), 16);
  CHECK_EQ_U64(offsetof(preempt_msg_gpu, max_threads), 20);
  CHECK_EQ_U64(offsetof(preempt_msg_gpu, warp_size), 48);
  CHECK_EQ_U64(offsetof(preempt_msg_gpu, reserved), 52);
  CHECK_EQ_U64(sizeof(preempt_msg_register), 960);
}

static void test_moves(void) {
  /* The header's table, written out independently of the implementation's bit table. */
  static const struct {
    uint32_t from, to;
    int by_daemon;
  } allowed[] = {
      {PREEMPT_STUB_FREE, PREEMPT_STUB_PREP, 0},       {PREEMPT_STUB_PREP, PREEMPT_STUB_READY, 0},
      {PREEMPT_STUB_READY, PREEMPT_STUB_TORUN, 1},     {PREEMPT_STUB_TORUN, PREEMPT_STUB_RUNNING, 0},
      {PREEMPT_STUB_RUNNING, PREEMPT_STUB_TOEVICT, 1}, {PREEMPT_STUB_RUNNING, PREEMPT_STUB_TORUN, 1},
      {PREEMPT_STUB_RUNNING, PREEMPT_STUB_DONE, 0},    {PREEMPT_STUB_TOEVICT, PREEMPT_STUB_READY, 0},
      {PREEMPT_STUB_TOEVICT, PREEMPT_STUB_RUNNING, 0}, {PREEMPT_STUB_TOEVICT, PREEMPT_STUB_DONE, 0},
      {PREEMPT_STUB_DONE, PREEMPT_STUB_FREE, 1},       {PREEMPT_STUB_PREP, PREEMPT_STUB_RUNNING, 0},
  };
  unsigned allowed_count = 0;
  for (uint32_t from = 0; from <= PREEMPT_STUB_DONE + 1; from++)
    for (uint32_t to = 0; to <= PREEMPT_STUB_DONE + 1; to++)
      for (int by_daemon = 0; by_daemon < 2; by_daemon++) {
        int expected = 0;
        for (unsigned i = 0; i < sizeof allowed / sizeof allowed[0]; i++)
          expected |= allowed[i].from == from && allowed[i].to == to && allowed[i].by_daemon == by_daemon;
        int actual = preempt_stub_move_allowed(from, to, by_daemon);
        if (actual != expected)
          fprintf(stderr, "move %s -> %s by %s: %d, expected %d\n", preempt_stub_state_name(from),
                  preempt_stub_state_name(to), by_daemon ? "daemon" : "client", actual, expected);
        CHECK(actual == expected);
        allowed_count += (unsigned)actual;
      }
  CHECK_EQ_U64(allowed_count, 12);
  /* A sample of refusals, named: the wrong side, backwards, skipped states, staying, out of range. */
  CHECK(!preempt_stub_move_allowed(PREEMPT_STUB_READY, PREEMPT_STUB_TORUN, 0));   /* client may not schedule */
  CHECK(!preempt_stub_move_allowed(PREEMPT_STUB_FREE, PREEMPT_STUB_PREP, 1));     /* daemon takes no stub */
  CHECK(!preempt_stub_move_allowed(PREEMPT_STUB_RUNNING, PREEMPT_STUB_DONE, 1));  /* only the client finishes */
  CHECK(!preempt_stub_move_allowed(PREEMPT_STUB_DONE, PREEMPT_STUB_FREE, 0));     /* only the daemon frees */
  CHECK(!preempt_stub_move_allowed(PREEMPT_STUB_PREP, PREEMPT_STUB_FREE, 0));     /* backwards */
  CHECK(!preempt_stub_move_allowed(PREEMPT_STUB_TORUN, PREEMPT_STUB_READY, 1));   /* backwards */
  CHECK(!preempt_stub_move_allowed(PREEMPT_STUB_READY, PREEMPT_STUB_RUNNING, 0)); /* skips TORUN */
  CHECK(!preempt_stub_move_allowed(PREEMPT_STUB_FREE, PREEMPT_STUB_READY, 0));    /* skips PREP */
  CHECK(!preempt_stub_move_allowed(PREEMPT_STUB_RUNNING, PREEMPT_STUB_RUNNING, 0));
  CHECK(!preempt_stub_move_allowed(PREEMPT_STUB_TOEVICT, PREEMPT_STUB_TORUN, 1));
  CHECK(!preempt_stub_move_allowed(7, PREEMPT_STUB_FREE, 1));
  CHECK(!preempt_stub_move_allowed(PREEMPT_STUB_FREE, 0xffffffffu, 0));
  /* Any nonzero by_daemon is the daemon. */
  CHECK(preempt_stub_move_allowed(PREEMPT_STUB_DONE, PREEMPT_STUB_FREE, 2));
}

/* ---------------------------------------------------------------- futexes */

static double seconds_since(const struct timespec *start) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (double)(now.tv_sec - start->tv_sec) + (double)(now.tv_nsec - start->tv_nsec) * 1e-9;
}

typedef struct waiter {
  uint32_t *word;
  uint32_t about_to_wait;
  int result;
  uint32_t seen;
} waiter;

static void *wait_for_ring(void *argument) {
  waiter *w = argument;
  __atomic_store_n(&w->about_to_wait, 1, __ATOMIC_SEQ_CST);
  /* Loop as a real caller does: a spurious wake (EINTR) returns 0 with the word unchanged. */
  do
    w->result = preempt_futex_wait(w->word, 0, INT64_C(10000000000));
  while (w->result == 0 && __atomic_load_n(w->word, __ATOMIC_SEQ_CST) == 0);
  w->seen = __atomic_load_n(w->word, __ATOMIC_SEQ_CST);
  return NULL;
}

static void test_futex(void) {
  uint32_t word = 5;
  struct timespec start;
  clock_gettime(CLOCK_MONOTONIC, &start);
  /* The word differs from what the caller expects: back at once, not after the 10 s timeout. */
  CHECK(preempt_futex_wait(&word, 4, INT64_C(10000000000)) == 0);
  CHECK(seconds_since(&start) < 1.0);

  /* Nobody rings: the timeout. */
  clock_gettime(CLOCK_MONOTONIC, &start);
  CHECK(preempt_futex_wait(&word, 5, 50 * 1000 * 1000) == 1);
  double waited = seconds_since(&start);
  CHECK(waited >= 0.045 && waited < 5.0);
  CHECK(preempt_futex_wait(&word, 5, 0) == 1);
  /* Timeouts of a second or more are split into seconds and nanoseconds correctly (an invalid timespec is EINVAL). */
  clock_gettime(CLOCK_MONOTONIC, &start);
  CHECK(preempt_futex_wait(&word, 5, INT64_C(1000000001)) == 1);
  CHECK(seconds_since(&start) >= 0.99);

  /* Ring adds one. */
  preempt_futex_ring(&word);
  CHECK_EQ_U64(word, 6);

  /* A ring from another thread wakes a waiter long before its 10 s timeout. */
  uint32_t shared = 0;
  waiter w = {.word = &shared, .result = -2};
  pthread_t thread;
  clock_gettime(CLOCK_MONOTONIC, &start);
  CHECK(pthread_create(&thread, NULL, wait_for_ring, &w) == 0);
  while (!__atomic_load_n(&w.about_to_wait, __ATOMIC_SEQ_CST))
    ;
  /* Give the waiter time to be asleep in the kernel, so the wake (not the value check) is what returns it. */
  struct timespec pause = {0, 100 * 1000 * 1000};
  nanosleep(&pause, NULL);
  preempt_futex_ring(&shared);
  CHECK(pthread_join(thread, NULL) == 0);
  CHECK(w.result == 0);
  CHECK_EQ_U64(w.seen, 1);
  CHECK(seconds_since(&start) < 5.0);
}

/* The memory messages: a sound one of each decodes to what was written; each field check refuses its bad value
 * with its own reason. */
static void test_memory_messages(void) {
  const char *why = NULL;
  preempt_msg_mem_reserve reserve;
  memset(&reserve, 0, sizeof reserve);
  preempt_msg_header_init(&reserve.header, PREEMPT_MSG_MEM_RESERVE, sizeof reserve, 41);
  memset(reserve.uuid, 0x5a, sizeof reserve.uuid);
  reserve.bytes = 3ull << 30;
  reserve.device_total_bytes = 80ull << 30;
  reserve.device_used_bytes = 80ull << 30; /* all used is a reading, not a lie */
  reserve.flags = PREEMPT_MEM_RESERVE_NOW;
  memcpy(packet, &reserve, sizeof reserve);
  CHECK(preempt_msg_decode_why(packet, sizeof reserve, &decoded, &why) == PREEMPT_DAEMON_OK);
  CHECK(decoded.type == PREEMPT_MSG_MEM_RESERVE && decoded.request_id == 41);
  CHECK_EQ_U64(decoded.body.mem_reserve.bytes, 3ull << 30);
  CHECK(decoded.body.mem_reserve.uuid[15] == 0x5a && decoded.body.mem_reserve.flags == PREEMPT_MEM_RESERVE_NOW);
  /* Each bad field, one at a time, from the sound message. */
#define REFUSED(field_assignment, reason)                                                                               \
  do {                                                                                                                 \
    preempt_msg_mem_reserve bad = reserve;                                                                             \
    bad.field_assignment;                                                                                              \
    memcpy(packet, &bad, sizeof bad);                                                                                  \
    CHECK(preempt_msg_decode_why(packet, sizeof bad, &decoded, &why) == PREEMPT_DAEMON_MALFORMED);                     \
    CHECK(why != NULL && strcmp(why, reason) == 0);                                                                    \
  } while (0)
  REFUSED(bytes = 0, "MEM_RESERVE of 0 bytes");
  REFUSED(device_used_bytes = (80ull << 30) + 1, "MEM_RESERVE reading with more used than total");
  REFUSED(flags = 4, "MEM_RESERVE unknown flags");
  REFUSED(reserved = 1, "MEM_RESERVE reserved field not 0");
#undef REFUSED

  preempt_msg_mem_reply reply;
  memset(&reply, 0, sizeof reply);
  preempt_msg_header_init(&reply.header, PREEMPT_MSG_MEM_REPLY, sizeof reply, 41);
  reply.result = PREEMPT_MEM_REPLY_LEDGER;
  reply.reserved_bytes = 10;
  reply.held_bytes = 10;
  preempt_copy_name(reply.policy, sizeof reply.policy, "mmu");
  memcpy(packet, &reply, sizeof reply);
  CHECK(preempt_msg_decode_why(packet, sizeof reply, &decoded, &why) == PREEMPT_DAEMON_OK);
  CHECK(decoded.body.mem_reply.result == PREEMPT_MEM_REPLY_LEDGER && strcmp(decoded.body.mem_reply.policy, "mmu") == 0);
  /* A client cannot hold more than every client together. */
  reply.held_bytes = 11;
  memcpy(packet, &reply, sizeof reply);
  CHECK(preempt_msg_decode_why(packet, sizeof reply, &decoded, &why) == PREEMPT_DAEMON_MALFORMED);
  CHECK(why != NULL && strcmp(why, "MEM_REPLY holds more than the ledger has reserved") == 0);
  reply.held_bytes = 10;
  reply.result = PREEMPT_MEM_REPLY_OVER_LIMIT + 1;
  memcpy(packet, &reply, sizeof reply);
  CHECK(preempt_msg_decode_why(packet, sizeof reply, &decoded, &why) == PREEMPT_DAEMON_MALFORMED);
  CHECK(why != NULL && strcmp(why, "MEM_REPLY result unknown") == 0);

  preempt_msg_mem_release release;
  memset(&release, 0, sizeof release);
  preempt_msg_header_init(&release.header, PREEMPT_MSG_MEM_RELEASE, sizeof release, 0);
  memcpy(packet, &release, sizeof release);
  CHECK(preempt_msg_decode_why(packet, sizeof release, &decoded, &why) == PREEMPT_DAEMON_MALFORMED);
  CHECK(why != NULL && strcmp(why, "MEM_RELEASE of 0 bytes") == 0);
  /* A reply type is not a request, and a request one byte short is not that request. */
  release.bytes = 1;
  memcpy(packet, &release, sizeof release);
  CHECK(preempt_msg_decode(packet, sizeof release - 1, &decoded) == PREEMPT_DAEMON_MALFORMED);
  CHECK(preempt_msg_decode(packet, sizeof release, &decoded) == PREEMPT_DAEMON_OK);
}

/* JOB (issue 43): a grant, an end, and each field that makes one malformed, refused with its own reason. */
static void test_job_message(void) {
  const char *why = NULL;
  preempt_msg_job job;
  memset(&job, 0, sizeof job);
  preempt_msg_header_init(&job.header, PREEMPT_MSG_JOB, sizeof job, 7);
  job.job_id = 42;
  job.step_id = 0xfffffffbu; /* Slurm's batch step */
  job.uid = 65534;
  job.pid = 1234;
  job.priority = 5;
  job.flags = PREEMPT_JOB_PRIORITY;
  job.mem_limit_bytes = 1ull << 30;
  memcpy(packet, &job, sizeof job);
  CHECK(preempt_msg_decode_why(packet, sizeof job, &decoded, &why) == PREEMPT_DAEMON_OK);
  CHECK(decoded.type == PREEMPT_MSG_JOB && decoded.body.job.job_id == 42 && decoded.body.job.priority == 5);
  CHECK_EQ_U64(decoded.body.job.mem_limit_bytes, 1ull << 30);
#define JOB_REFUSED(field_assignment, reason)                                                                           \
  do {                                                                                                                 \
    preempt_msg_job bad = job;                                                                                         \
    bad.field_assignment;                                                                                              \
    memcpy(packet, &bad, sizeof bad);                                                                                  \
    CHECK(preempt_msg_decode_why(packet, sizeof bad, &decoded, &why) == PREEMPT_DAEMON_MALFORMED);                     \
    CHECK(why != NULL && strcmp(why, reason) == 0);                                                                    \
  } while (0)
  JOB_REFUSED(job_id = 0, "JOB job_id 0");
  JOB_REFUSED(flags = 4, "JOB unknown flags");
  JOB_REFUSED(pid = 0, "JOB pid not a process id");
  JOB_REFUSED(pid = 0x80000000u, "JOB pid not a process id");
  JOB_REFUSED(priority = PREEMPT_PRIORITY_MAX + 1, "JOB priority out of range");
  JOB_REFUSED(flags = 0, "JOB priority given without its flag");
  JOB_REFUSED(flags = PREEMPT_JOB_END, "JOB end with a pid, priority or memory limit");
#undef JOB_REFUSED
  /* Without a priority the processes keep the -nice rule; an end carries nothing but the job and step. */
  job.flags = 0;
  job.priority = 0;
  memcpy(packet, &job, sizeof job);
  CHECK(preempt_msg_decode_why(packet, sizeof job, &decoded, &why) == PREEMPT_DAEMON_OK);
  job.flags = PREEMPT_JOB_END;
  job.pid = 0;
  job.mem_limit_bytes = 0;
  memcpy(packet, &job, sizeof job);
  CHECK(preempt_msg_decode_why(packet, sizeof job, &decoded, &why) == PREEMPT_DAEMON_OK);
  CHECK(decoded.body.job.flags == PREEMPT_JOB_END && decoded.body.job.step_id == 0xfffffffbu);
}

int main(void) {
  test_job_message();
  test_round_trips();
  test_memory_messages();
  test_alignment();
  test_header_malformations();
  test_body_malformations();
  test_listing_malformations();
  test_listing_layout();
  test_listing_weights();
  test_decode_why();
  test_names();
  test_kernel_key();
  test_stub_validate();
  test_stub_footprint();
  test_register_limits();
  test_moves();
  test_futex();
  CHECK_DONE("test_daemon_protocol");
}
