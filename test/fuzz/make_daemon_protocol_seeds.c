/* make_daemon_protocol_seeds.c: writes fuzz_daemon_protocol's seed corpus, one valid message of each type per file.
 * EffiSha §6.1, FLEP §3 (preemptd's protocol). Generated at build time so no binary files live in the repository.
 *
 * Usage: make_daemon_protocol_seeds DIR   (DIR must exist; files are named after their message type) */
#include <stdio.h>
#include <string.h>

#include "preempt/daemon_protocol.h"

static const char *directory;

static int write_seed(const char *name, const void *bytes, size_t length) {
  char path[4096];
  if (snprintf(path, sizeof path, "%s/%s", directory, name) >= (int)sizeof path)
    return 1;
  FILE *file = fopen(path, "wb");
  if (!file || fwrite(bytes, 1, length, file) != length || fclose(file) != 0) {
    perror(path);
    return 1;
  }
  return 0;
}

/* Every message seed must be one the decoder accepts, or the fuzzer would start from rejections only. */
static int write_message_seed(const char *name, const void *bytes, size_t length) {
  preempt_msg msg;
  preempt_daemon_status status = preempt_msg_decode(bytes, length, &msg);
  if (status != PREEMPT_DAEMON_OK) {
    fprintf(stderr, "make_daemon_protocol_seeds: seed %s does not decode: %s\n", name, preempt_daemon_status_name(status));
    return 1;
  }
  return write_seed(name, bytes, length);
}

/* A LISTING with some of everything; the largest seed, and the one whose layout is easiest to break. */
static size_t make_listing(unsigned char *packet, uint32_t gpus, uint32_t clients, uint32_t kernels) {
  preempt_msg_listing m;
  memset(&m, 0, sizeof m);
  size_t length = sizeof m + gpus * sizeof(preempt_listing_gpu) + clients * sizeof(preempt_listing_client) +
                  kernels * sizeof(preempt_listing_kernel);
  preempt_msg_header_init(&m.header, PREEMPT_MSG_LISTING, (uint32_t)length, 8);
  m.gpu_count = gpus;
  m.client_count = clients;
  m.kernel_count = kernels;
  m.sharing = PREEMPT_SHARING_TIMESLICE;
  m.uptime_us = 5000000;
  memcpy(packet, &m, sizeof m);
  size_t at = sizeof m;
  for (uint32_t i = 0; i < gpus; i++, at += sizeof(preempt_listing_gpu)) {
    preempt_listing_gpu g;
    memset(&g, 0, sizeof g);
    g.uuid[0] = (uint8_t)(0x10 + i);
    g.sm_count = 132;
    g.kernels = kernels;
    g.decisions = 40;
    g.evictions = 3;
    preempt_copy_name(g.policy, sizeof g.policy, i ? "ffs" : "hpf");
    memcpy(packet + at, &g, sizeof g);
  }
  for (uint32_t i = 0; i < clients; i++, at += sizeof(preempt_listing_client)) {
    preempt_listing_client c;
    memset(&c, 0, sizeof c);
    c.client_id = i + 1;
    c.pid = 1234 + i;
    c.uid = 1000;
    c.priority = (int32_t)i - 1;
    c.priority_limit = 20;
    c.launches = 10;
    c.evictions = 1;
    preempt_copy_name(c.program, sizeof c.program, "inference");
    memcpy(packet + at, &c, sizeof c);
  }
  for (uint32_t i = 0; i < kernels; i++, at += sizeof(preempt_listing_kernel)) {
    preempt_listing_kernel k;
    memset(&k, 0, sizeof k);
    k.client_id = 1 + i % (clients ? clients : 1);
    k.stub = i;
    k.gpu = i % gpus;
    k.state = PREEMPT_STUB_READY + i % 4;
    k.priority = 1;
    k.evictions = i;
    k.weight = i % 2 ? PREEMPT_WEIGHT_MAX : 1; /* granted FFS weights: both ends of the range */
    k.waited_us = 250.0 * i;
    k.ran_us = 1000.0;
    k.predicted_us = 1500.0;
    preempt_copy_name(k.name, sizeof k.name, "_Z6matmulPKfS0_Pfi");
    memcpy(packet + at, &k, sizeof k);
  }
  return length;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: make_daemon_protocol_seeds DIR\n");
    return 2;
  }
  directory = argv[1];
  int failed = 0;

  preempt_msg_register reg;
  memset(&reg, 0, sizeof reg);
  preempt_msg_header_init(&reg.header, PREEMPT_MSG_REGISTER, sizeof reg, 1);
  reg.priority = 5;
  reg.priority_requested = 1;
  reg.gpu_count = 2;
  preempt_copy_name(reg.program, sizeof reg.program, "train.py");
  for (int i = 0; i < 16; i++) {
    reg.gpus[0].uuid[i] = (uint8_t)(0x10 + i);
    reg.gpus[1].uuid[i] = (uint8_t)(0x20 + i);
  }
  reg.gpus[0].sm_count = 132;
  reg.gpus[1].sm_count = 108;
  /* The first GPU with an H100's SM limits (protocol 4), the second unknown. */
  reg.gpus[0].max_threads = 2048;
  reg.gpus[0].max_ctas = 32;
  reg.gpus[0].registers = 65536;
  reg.gpus[0].register_unit = 256;
  reg.gpus[0].shared_bytes = 233472;
  reg.gpus[0].shared_unit = 128;
  reg.gpus[0].shared_reserved = 1024;
  reg.gpus[0].warp_size = 32;
  failed |= write_message_seed("register", &reg, sizeof reg);

  preempt_msg_registered registered;
  memset(&registered, 0, sizeof registered);
  preempt_msg_header_init(&registered.header, PREEMPT_MSG_REGISTERED, sizeof registered, 1);
  registered.client_id = 1;
  registered.priority = 0;
  registered.priority_limit = 0;
  registered.stub_count = PREEMPT_STUBS_PER_CLIENT;
  registered.page_bytes = sizeof(preempt_client_page);
  registered.doorbell_bytes = sizeof(preempt_doorbell_page);
  failed |= write_message_seed("registered", &registered, sizeof registered);

  preempt_msg_set_priority set_priority;
  memset(&set_priority, 0, sizeof set_priority);
  preempt_msg_header_init(&set_priority.header, PREEMPT_MSG_SET_PRIORITY, sizeof set_priority, 2);
  set_priority.priority = -7;
  failed |= write_message_seed("set_priority", &set_priority, sizeof set_priority);

  preempt_msg_priority priority;
  memset(&priority, 0, sizeof priority);
  preempt_msg_header_init(&priority.header, PREEMPT_MSG_PRIORITY, sizeof priority, 2);
  priority.priority = -7;
  priority.priority_limit = 0;
  failed |= write_message_seed("priority", &priority, sizeof priority);

  preempt_msg_set_policy set_policy;
  memset(&set_policy, 0, sizeof set_policy);
  preempt_msg_header_init(&set_policy.header, PREEMPT_MSG_SET_POLICY, sizeof set_policy, 3);
  preempt_copy_name(set_policy.policy, sizeof set_policy.policy, "dprr");
  failed |= write_message_seed("set_policy", &set_policy, sizeof set_policy);

  preempt_msg_job job;
  memset(&job, 0, sizeof job);
  preempt_msg_header_init(&job.header, PREEMPT_MSG_JOB, sizeof job, 4);
  job.job_id = 42;
  job.uid = 65534;
  job.pid = 1234;
  job.priority = 5;
  job.flags = PREEMPT_JOB_PRIORITY;
  job.mem_limit_bytes = 1ull << 30;
  failed |= write_message_seed("job", &job, sizeof job);

  preempt_msg_status status;
  memset(&status, 0, sizeof status);
  preempt_msg_header_init(&status.header, PREEMPT_MSG_STATUS, sizeof status, 3);
  status.status = PREEMPT_DAEMON_UNKNOWN_POLICY;
  preempt_copy_name(status.message, sizeof status.message, "unknown policy \"lifo\"");
  failed |= write_message_seed("status", &status, sizeof status);

  preempt_msg_list list;
  preempt_msg_header_init(&list.header, PREEMPT_MSG_LIST, sizeof list, 4);
  failed |= write_message_seed("list", &list, sizeof list);

  preempt_msg_mem_attach mem_attach;
  memset(&mem_attach, 0, sizeof mem_attach);
  preempt_msg_header_init(&mem_attach.header, PREEMPT_MSG_MEM_ATTACH, sizeof mem_attach, 5);
  mem_attach.priority = -3;
  mem_attach.priority_requested = 1;
  preempt_copy_name(mem_attach.program, sizeof mem_attach.program, "trainer");
  failed |= write_message_seed("mem_attach", &mem_attach, sizeof mem_attach);

  preempt_msg_mem_attached mem_attached;
  memset(&mem_attached, 0, sizeof mem_attached);
  preempt_msg_header_init(&mem_attached.header, PREEMPT_MSG_MEM_ATTACHED, sizeof mem_attached, 5);
  mem_attached.client_id = 9;
  mem_attached.priority = -3;
  mem_attached.flags = PREEMPT_MEM_DAEMON_WANTS_READINGS;
  failed |= write_message_seed("mem_attached", &mem_attached, sizeof mem_attached);

  preempt_msg_mem_reserve mem_reserve;
  memset(&mem_reserve, 0, sizeof mem_reserve);
  preempt_msg_header_init(&mem_reserve.header, PREEMPT_MSG_MEM_RESERVE, sizeof mem_reserve, 6);
  memset(mem_reserve.uuid, 0xab, sizeof mem_reserve.uuid);
  mem_reserve.bytes = 1ull << 30;
  mem_reserve.device_total_bytes = 80ull << 30;
  mem_reserve.device_used_bytes = 2ull << 30;
  mem_reserve.flags = PREEMPT_MEM_RESERVE_AFTER_OOM;
  failed |= write_message_seed("mem_reserve", &mem_reserve, sizeof mem_reserve);

  preempt_msg_mem_release mem_release;
  memset(&mem_release, 0, sizeof mem_release);
  preempt_msg_header_init(&mem_release.header, PREEMPT_MSG_MEM_RELEASE, sizeof mem_release, 7);
  memset(mem_release.uuid, 0xab, sizeof mem_release.uuid);
  mem_release.bytes = 4096;
  failed |= write_message_seed("mem_release", &mem_release, sizeof mem_release);

  preempt_msg_mem_cancel mem_cancel;
  memset(&mem_cancel, 0, sizeof mem_cancel);
  preempt_msg_header_init(&mem_cancel.header, PREEMPT_MSG_MEM_CANCEL, sizeof mem_cancel, 8);
  mem_cancel.reserve_request_id = 6;
  failed |= write_message_seed("mem_cancel", &mem_cancel, sizeof mem_cancel);

  preempt_msg_mem_query mem_query;
  memset(&mem_query, 0, sizeof mem_query);
  preempt_msg_header_init(&mem_query.header, PREEMPT_MSG_MEM_QUERY, sizeof mem_query, 9);
  failed |= write_message_seed("mem_query", &mem_query, sizeof mem_query);

  preempt_msg_mem_reading mem_reading;
  memset(&mem_reading, 0, sizeof mem_reading);
  preempt_msg_header_init(&mem_reading.header, PREEMPT_MSG_MEM_READING, sizeof mem_reading, 10);
  mem_reading.device_total_bytes = 80ull << 30;
  mem_reading.device_used_bytes = 1ull << 30;
  failed |= write_message_seed("mem_reading", &mem_reading, sizeof mem_reading);

  preempt_msg_mem_reply mem_reply;
  memset(&mem_reply, 0, sizeof mem_reply);
  preempt_msg_header_init(&mem_reply.header, PREEMPT_MSG_MEM_REPLY, sizeof mem_reply, 6);
  mem_reply.result = PREEMPT_MEM_REPLY_GRANTED;
  mem_reply.clients = 2;
  mem_reply.readings_from_nvml = 1;
  mem_reply.capacity_bytes = 80ull << 30;
  mem_reply.reserved_bytes = 3ull << 30;
  mem_reply.held_bytes = 1ull << 30;
  preempt_copy_name(mem_reply.policy, sizeof mem_reply.policy, "priority-mmu");
  failed |= write_message_seed("mem_reply", &mem_reply, sizeof mem_reply);

  static _Alignas(8) unsigned char packet[PREEMPT_DAEMON_MAX_MESSAGE];
  size_t length = make_listing(packet, 2, 3, 4);
  failed |= write_message_seed("listing", packet, length);
  length = make_listing(packet, 0, 0, 0);
  failed |= write_message_seed("listing_empty", packet, length);

  /* A stub as the daemon copies it out of a page (for the stub part of the fuzzer: one byte of GPU count first). */
  unsigned char stub_seed[1 + sizeof(preempt_stub)];
  preempt_stub stub;
  memset(&stub, 0, sizeof stub);
  stub.state = PREEMPT_STUB_READY;
  stub.launch_sequence = PREEMPT_STUB_TORUN;
  stub.gpu = 0;
  stub.grid[0] = 80;
  stub.grid[1] = stub.grid[2] = 1;
  stub.block[0] = 256;
  stub.block[1] = stub.block[2] = 1;
  stub.persistent_ctas = 264;
  stub.ctas_per_sm = 2;
  preempt_copy_name(stub.name, sizeof stub.name, "vadd");
  stub.kernel_key = preempt_kernel_key("vadd");
  stub.weight = 2; /* an FFS weight in range, so the fuzzer starts from one that is accepted */
  stub_seed[0] = 2;
  memcpy(stub_seed + 1, &stub, sizeof stub);
  failed |= write_seed("stub", stub_seed, sizeof stub_seed);
  return failed;
}
