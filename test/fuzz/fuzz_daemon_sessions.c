/* fuzz_daemon_sessions.c: libFuzzer target over preemptd itself: up to four connections of three users (root, 65534,
 * 65533) driving the real socket loop, packet handler, stub scans, memory ledgers. FLEP §3, EffiSha §6.4, issue 41.
 *
 * The daemon's own sources are compiled in (not main.c); the harness plays its main(): a listening socket in a private
 * directory, the doorbell, the lock, and, instead of the two threads, preemptd_serve_step and preemptd_scheduler_step
 * called in turn. Each input is a script of operations (below): connect, a raw packet, a well-formed request built
 * from the input's bytes, a hang-up, a launch or a stub move written into the client's page, a scheduler round. The
 * uid a connection is accepted under is overwritten by the script (the harness runs as one user), so the trusted and
 * untrusted paths both run. After the script every connection closes, and the daemon must be back to no client, no
 * kernel, no ledger slot: anything else abort()s, as does any sanitizer report. Between steps the metrics are scraped
 * as the HTTP thread would (issue 43): no counter of a client may go down. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "preemptd.h"

#define CONNECTIONS 4

#define REQUIRE(condition)                                                                                             \
  do {                                                                                                                 \
    if (!(condition)) {                                                                                                \
      fprintf(stderr, "fuzz_daemon_sessions: %s:%d: %s\n", __FILE__, __LINE__, #condition);                         \
      abort();                                                                                                         \
    }                                                                                                                  \
  } while (0)

typedef struct peer {
  int fd;
  uid_t uid;
  uint32_t request_id;
  preempt_client_page *page; /* from REGISTERED */
} peer;

static preemptd_context *ctx;
static char directory[64];
static peer peers[CONNECTIONS];

/* The input, read front to back; past its end every read is 0. */
typedef struct script {
  const uint8_t *bytes;
  size_t length, at;
} script;

static uint8_t next_byte(script *s) { return s->at < s->length ? s->bytes[s->at++] : 0; }

static void next_bytes(script *s, void *out, size_t count) {
  memset(out, 0, count);
  size_t take = s->length - s->at < count ? s->length - s->at : count;
  memcpy(out, s->bytes + s->at, take);
  s->at += take;
}

static void remove_directory(void) {
  unlink(ctx->socket_path);
  rmdir(directory);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  ctx = calloc(1, sizeof *ctx);
  REQUIRE(ctx);
  snprintf(directory, sizeof directory, "/tmp/preempt-fuzz-%d-XXXXXX", (int)getpid());
  REQUIRE(mkdtemp(directory));
  snprintf(ctx->socket_path, sizeof ctx->socket_path, "%s/d.sock", directory);
  char why[256];
  REQUIRE(preemptd_listen(ctx->socket_path, &ctx->listen_fd, why, sizeof why) == PREEMPT_DAEMON_OK);
  atexit(remove_directory);
  REQUIRE(preemptd_doorbell_create(&ctx->doorbell_fd, &ctx->doorbell) == PREEMPT_DAEMON_OK);
  REQUIRE(pthread_mutex_init(&ctx->lock, NULL) == 0);
  ctx->signal_fd = -1; /* poll skips it */
  preemptd_jobs_init(ctx);
  ctx->euid = geteuid();
  ctx->log = fopen("/dev/null", "we"); /* the log's formatting runs, its bytes go nowhere */
  ctx->unregistered_timeout_us = 0;    /* time-driven closes would make runs unrepeatable */
  ctx->leases = true;                  /* as preemptd runs by default: launches started on a lease are fuzzed too */
  for (uint32_t i = 0; i < PREEMPTD_MAX_CONNECTIONS; i++)
    ctx->clients[i].fd = -1;
  for (uint32_t i = 0; i < PREEMPTD_MAX_REFUSING; i++)
    ctx->refusing[i].fd = -1;
  for (int i = 0; i < CONNECTIONS; i++)
    peers[i].fd = -1;
  return 0;
}

static void serve(int rounds) {
  for (int i = 0; i < rounds; i++) {
    bool stop = false;
    REQUIRE(preemptd_serve_step(ctx, 0, &stop) == PREEMPT_DAEMON_OK);
    REQUIRE(!stop);
  }
}

static void forget_page(peer *p) {
  if (p->page)
    munmap(p->page, sizeof *p->page);
  p->page = NULL;
}

/* Every reply waiting for the peer; REGISTERED's page is mapped, every descriptor closed. */
static void drain(peer *p) {
  for (;;) {
    uint64_t buffer[PREEMPT_DAEMON_MAX_MESSAGE / 8];
    int fds[2] = {-1, -1}, fd_count = 0, flags = 0;
    ssize_t got = preempt_receive_packet(p->fd, buffer, sizeof buffer, MSG_DONTWAIT, fds, 2, &fd_count, &flags);
    if (got <= 0)
      return;
    preempt_msg message;
    if (fd_count == 2 && preempt_msg_decode(buffer, (size_t)got, &message) == PREEMPT_DAEMON_OK &&
        message.type == PREEMPT_MSG_REGISTERED) {
      forget_page(p);
      void *page = mmap(NULL, sizeof *p->page, PROT_READ | PROT_WRITE, MAP_SHARED, fds[0], 0);
      p->page = page == MAP_FAILED ? NULL : page;
    }
    for (int i = 0; i < fd_count; i++)
      close(fds[i]);
  }
}

static void drain_all(void) {
  for (int i = 0; i < CONNECTIONS; i++)
    if (peers[i].fd >= 0)
      drain(&peers[i]);
}

static void hang_up(peer *p) {
  forget_page(p);
  if (p->fd >= 0)
    close(p->fd);
  p->fd = -1;
}

static void connect_peer(peer *p, uid_t uid) {
  hang_up(p);
  struct sockaddr_un address = {.sun_family = AF_UNIX};
  snprintf(address.sun_path, sizeof address.sun_path, "%s", ctx->socket_path);
  int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  REQUIRE(fd >= 0);
  REQUIRE(connect(fd, (struct sockaddr *)&address, sizeof address) == 0);
  bool taken[PREEMPTD_MAX_CONNECTIONS];
  for (uint32_t i = 0; i < PREEMPTD_MAX_CONNECTIONS; i++)
    taken[i] = ctx->clients[i].fd >= 0;
  serve(1);
  /* The slot the daemon gave it speaks for this user from now on (the uid SO_PEERCRED read is the harness's). */
  for (uint32_t i = 0; i < PREEMPTD_MAX_CONNECTIONS; i++)
    if (!taken[i] && ctx->clients[i].fd >= 0) {
      ctx->clients[i].uid = uid;
      ctx->clients[i].trusted = preemptd_uid_trusted(ctx, uid);
    }
  p->fd = fd;
  p->uid = uid;
}

static void send_packet(peer *p, const void *bytes, size_t length) {
  (void)send(p->fd, bytes, length, MSG_NOSIGNAL | MSG_DONTWAIT);
}

/* A request the decoder accepts, mostly: the header right, strings terminated, counts and names in range; the
 * rest (UUIDs, SM counts, sizes, priorities, flags) straight from the input. */
static void send_request(peer *p, script *s) {
  union {
    uint64_t align;
    preempt_msg_register register_request;
    preempt_msg_set_priority set_priority;
    preempt_msg_set_policy set_policy;
    preempt_msg_list list;
    preempt_msg_mem_attach mem_attach;
    preempt_msg_mem_reserve mem_reserve;
    preempt_msg_mem_release mem_release;
    preempt_msg_mem_cancel mem_cancel;
    preempt_msg_mem_query mem_query;
    preempt_msg_mem_reading mem_reading;
    preempt_msg_job job;
  } m;
  static const char *const policies[] = {"fifo", "hpf", "ffs", "piv", "dprr", "flexsched", "none"};
  uint8_t kind = next_byte(s) % 11;
  uint32_t id = ++p->request_id;
  size_t length = 0;
  memset(&m, 0, sizeof m);
  switch (kind) {
  case 0: {
    preempt_msg_register *r = &m.register_request;
    length = sizeof *r;
    r->priority = (int8_t)next_byte(s);
    r->priority_requested = next_byte(s) & 1;
    r->gpu_count = 1 + next_byte(s) % 4;
    snprintf(r->program, sizeof r->program, "fuzz");
    for (uint32_t g = 0; g < r->gpu_count; g++) {
      r->gpus[g].uuid[15] = next_byte(s) % 6; /* few GPUs, so that clients meet on one */
      r->gpus[g].uuid[0] = next_byte(s) & 0x80;
      r->gpus[g].sm_count = next_byte(s) % 8 == 0 ? next_byte(s) : 8;
    }
    preempt_msg_header_init(&r->header, PREEMPT_MSG_REGISTER, sizeof *r, id);
    break;
  }
  case 1:
    length = sizeof m.set_priority;
    m.set_priority.priority = (int8_t)next_byte(s);
    preempt_msg_header_init(&m.set_priority.header, PREEMPT_MSG_SET_PRIORITY, sizeof m.set_priority, id);
    break;
  case 2:
    length = sizeof m.set_policy;
    m.set_policy.uuid[15] = next_byte(s) % 3;
    snprintf(m.set_policy.policy, sizeof m.set_policy.policy, "%s", policies[next_byte(s) % 7]);
    preempt_msg_header_init(&m.set_policy.header, PREEMPT_MSG_SET_POLICY, sizeof m.set_policy, id);
    break;
  case 3:
    length = sizeof m.list;
    preempt_msg_header_init(&m.list.header, PREEMPT_MSG_LIST, sizeof m.list, id);
    break;
  case 4:
    length = sizeof m.mem_attach;
    m.mem_attach.priority = (int8_t)next_byte(s);
    m.mem_attach.priority_requested = next_byte(s) & 1;
    snprintf(m.mem_attach.program, sizeof m.mem_attach.program, "fuzz");
    preempt_msg_header_init(&m.mem_attach.header, PREEMPT_MSG_MEM_ATTACH, sizeof m.mem_attach, id);
    break;
  case 5:
  case 8:
  case 9: {
    /* RESERVE, QUERY and READING share uuid, then sizes: a small GPU so that requests wait and grants follow. */
    uint8_t uuid[16] = {0};
    uuid[15] = next_byte(s) % 6;
    uint64_t total = (uint64_t)(next_byte(s) % 4) << 20, used = (uint64_t)next_byte(s) << 14;
    if (kind == 5) {
      length = sizeof m.mem_reserve;
      memcpy(m.mem_reserve.uuid, uuid, 16);
      m.mem_reserve.bytes = 1 + ((uint64_t)next_byte(s) << 13);
      m.mem_reserve.device_total_bytes = total;
      m.mem_reserve.device_used_bytes = used;
      m.mem_reserve.flags = next_byte(s) & 3;
      preempt_msg_header_init(&m.mem_reserve.header, PREEMPT_MSG_MEM_RESERVE, sizeof m.mem_reserve, id);
    } else if (kind == 8) {
      length = sizeof m.mem_query;
      memcpy(m.mem_query.uuid, uuid, 16);
      m.mem_query.device_total_bytes = total;
      m.mem_query.device_used_bytes = used;
      preempt_msg_header_init(&m.mem_query.header, PREEMPT_MSG_MEM_QUERY, sizeof m.mem_query, id);
    } else {
      length = sizeof m.mem_reading;
      memcpy(m.mem_reading.uuid, uuid, 16);
      m.mem_reading.device_total_bytes = total;
      m.mem_reading.device_used_bytes = used;
      preempt_msg_header_init(&m.mem_reading.header, PREEMPT_MSG_MEM_READING, sizeof m.mem_reading, id);
    }
    break;
  }
  case 10: {
    /* A Slurm step's grant (root's connection is the only one believed) naming this process, its parent or pid 1,
     * for one of the users the connections run as; or a step's end. Small memory limits, so RESERVEs hit them. */
    static const uint32_t uids[] = {0, 65534, 65533};
    length = sizeof m.job;
    m.job.job_id = 1 + next_byte(s) % 3;
    m.job.step_id = next_byte(s) % 2;
    if (next_byte(s) % 4 == 0) {
      m.job.flags = PREEMPT_JOB_END;
    } else {
      uint8_t who = next_byte(s) % 3;
      m.job.pid = who == 0 ? (uint32_t)getpid() : who == 1 ? (uint32_t)getppid() : 1;
      m.job.uid = uids[next_byte(s) % 3];
      if (next_byte(s) & 1) {
        m.job.flags = PREEMPT_JOB_PRIORITY;
        m.job.priority = (int32_t)(next_byte(s) % 41) - 20;
      }
      m.job.mem_limit_bytes = (uint64_t)(next_byte(s) % 4) << 20;
    }
    preempt_msg_header_init(&m.job.header, PREEMPT_MSG_JOB, sizeof m.job, id);
    break;
  }
  case 6:
    length = sizeof m.mem_release;
    m.mem_release.uuid[15] = next_byte(s) % 6;
    m.mem_release.bytes = 1 + ((uint64_t)next_byte(s) << 13);
    preempt_msg_header_init(&m.mem_release.header, PREEMPT_MSG_MEM_RELEASE, sizeof m.mem_release, id);
    break;
  default:
    length = sizeof m.mem_cancel;
    m.mem_cancel.reserve_request_id = id - 1 - next_byte(s) % 2;
    preempt_msg_header_init(&m.mem_cancel.header, PREEMPT_MSG_MEM_CANCEL, sizeof m.mem_cancel, id);
    break;
  }
  send_packet(p, &m, length);
}

/* A launch into a FREE stub, or the client's half of a move (TORUN->RUNNING, TOEVICT->READY, RUNNING->DONE), or
 * any state at all: the daemon checks each against the table. */
static void touch_stub(peer *p, script *s) {
  if (!p->page)
    return;
  preempt_stub *stub = &p->page->stubs[next_byte(s) % PREEMPT_STUBS_PER_CLIENT];
  uint8_t what = next_byte(s) % 4;
  uint32_t state = __atomic_load_n(&stub->state, __ATOMIC_ACQUIRE);
  if (what == 0 && state == PREEMPT_STUB_FREE) {
    __atomic_store_n(&stub->state, PREEMPT_STUB_PREP, __ATOMIC_RELEASE);
    stub->launch_sequence++;
    stub->gpu = next_byte(s) % 4;
    stub->priority = (int8_t)next_byte(s);
    stub->grid[0] = 1 + next_byte(s);
    stub->grid[1] = stub->grid[2] = 1;
    stub->block[0] = 128;
    stub->block[1] = stub->block[2] = 1;
    stub->persistent_ctas = 1 + next_byte(s) % 64;
    stub->ctas_per_sm = 1 + next_byte(s) % 4;
    stub->weight = next_byte(s) % 70;
    stub->registers_per_thread = next_byte(s) % 2 ? 32 : 0;
    stub->task_count = stub->registers_per_thread ? 1000 : 0;
    char name[16];
    snprintf(name, sizeof name, "k%u", next_byte(s) % 8);
    stub->kernel_key = preempt_kernel_key(name);
    preempt_copy_name(stub->name, sizeof stub->name, name);
    /* Some launches start on the lease (PREP -> RUNNING), whether the page grants one or not: a withdrawn lease
     * read late is a race the daemon must survive. */
    __atomic_store_n(&stub->state, next_byte(s) % 4 == 0 ? PREEMPT_STUB_RUNNING : PREEMPT_STUB_READY,
                     __ATOMIC_RELEASE);
  } else if (what == 1) {
    uint32_t next = state == PREEMPT_STUB_TORUN     ? PREEMPT_STUB_RUNNING
                    : state == PREEMPT_STUB_TOEVICT ? (stub->command_all ? PREEMPT_STUB_READY : PREEMPT_STUB_RUNNING)
                    : state == PREEMPT_STUB_RUNNING ? PREEMPT_STUB_DONE
                                                    : state;
    stub->evictions_done += state == PREEMPT_STUB_TOEVICT;
    stub->last_eviction_ns = next_byte(s) * 1000u;
    __atomic_store_n(&stub->state, next, __ATOMIC_RELEASE);
  } else if (what == 2) {
    stub->progress_tasks += next_byte(s);
    stub->progress_ns += 1 + next_byte(s) * 1000u;
  } else {
    __atomic_store_n(&stub->state, next_byte(s) % 12, __ATOMIC_RELEASE);
  }
  preemptd_ring_doorbell(ctx);
}

/* The metrics' counters as last scraped, per client and GPU: Prometheus takes any decrease for a restart of the
 * counter (issue 43), so within one client's life none may go down, whatever the client writes into its page. */
typedef struct scraped_counters {
  uint32_t client_id;
  char gpu[33];
  uint64_t launches, evictions, latency_count;
  double run_seconds, wait_seconds, latency_sum;
} scraped_counters;
static scraped_counters scraped[PREEMPTD_MAX_CONNECTIONS * PREEMPTD_MAX_GPUS];
static uint32_t scraped_count;

/* What the endpoint does on a scrape (metrics_http.c without libmicrohttpd): the snapshot under the lock, the text
 * outside it; then the counters against the previous scrape. */
static void scrape(void) {
  preempt_metrics_snapshot snapshot;
  REQUIRE(preemptd_metrics_snapshot(ctx, &snapshot) == PREEMPT_DAEMON_OK);
  char *text = NULL;
  size_t length = 0;
  REQUIRE(preempt_metrics_format(&snapshot, &text, &length) == 0);
  REQUIRE(length > 0 && text[length - 1] == '\n');
  free(text);
  /* Rounding of a period summed at a scrape against the same period summed when it ends. */
  const double slack = 1e-9;
  for (uint32_t i = 0; i < snapshot.client_gpu_count; i++) {
    const preempt_metrics_client_gpu *c = &snapshot.client_gpus[i];
    uint64_t buckets = 0;
    for (int b = 0; b < PREEMPT_METRICS_BUCKETS; b++)
      buckets += c->eviction_latency.bucket[b];
    REQUIRE(buckets <= c->eviction_latency.count);
    REQUIRE(c->run_seconds >= 0 && c->wait_seconds >= 0 && c->eviction_latency.sum_seconds >= 0);
    scraped_counters *before = NULL;
    for (uint32_t k = 0; k < scraped_count && !before; k++)
      if (scraped[k].client_id == c->who.client_id && strcmp(scraped[k].gpu, c->who.gpu) == 0)
        before = &scraped[k];
    if (!before) {
      REQUIRE(scraped_count < sizeof scraped / sizeof scraped[0]);
      before = &scraped[scraped_count++];
      memset(before, 0, sizeof *before);
      before->client_id = c->who.client_id;
      memcpy(before->gpu, c->who.gpu, sizeof before->gpu);
    }
    if (c->launches < before->launches || c->evictions < before->evictions ||
        c->eviction_latency.count < before->latency_count || c->run_seconds < before->run_seconds - slack ||
        c->wait_seconds < before->wait_seconds - slack ||
        c->eviction_latency.sum_seconds < before->latency_sum - slack) {
      fprintf(stderr,
              "fuzz_daemon_sessions: %s:%d: client %u gpu %s: a counter went down: launches %llu -> %llu, "
              "evictions %llu -> %llu, latency count %llu -> %llu, run %.9f -> %.9f s, wait %.9f -> %.9f s\n",
              __FILE__, __LINE__, (unsigned)c->who.client_id, c->who.gpu, (unsigned long long)before->launches,
              (unsigned long long)c->launches, (unsigned long long)before->evictions,
              (unsigned long long)c->evictions, (unsigned long long)before->latency_count,
              (unsigned long long)c->eviction_latency.count, before->run_seconds, c->run_seconds,
              before->wait_seconds, c->wait_seconds);
      abort();
    }
    before->launches = c->launches;
    before->evictions = c->evictions;
    before->latency_count = c->eviction_latency.count;
    before->run_seconds = c->run_seconds;
    before->wait_seconds = c->wait_seconds;
    before->latency_sum = c->eviction_latency.sum_seconds;
  }
  preemptd_metrics_release(&snapshot);
}

static void schedule(void) {
  pthread_mutex_lock(&ctx->lock);
  (void)preemptd_scheduler_step(ctx);
  pthread_mutex_unlock(&ctx->lock);
}

/* Everyone gone: the daemon must hold nothing of theirs. Then the tables start afresh for the next input. */
static void finish(void) {
  for (int i = 0; i < CONNECTIONS; i++)
    hang_up(&peers[i]);
  for (int round = 0; round < 64; round++) {
    serve(1);
    schedule();
  }
  for (uint32_t i = 0; i < PREEMPTD_MAX_CONNECTIONS; i++)
    REQUIRE(ctx->clients[i].fd < 0);
  for (uint32_t g = 0; g < ctx->gpu_count; g++)
    REQUIRE(ctx->gpus[g].sched->kernel_count == 0);
  for (uint32_t g = 0; g < ctx->mem_gpu_count; g++) {
    const preempt_mem_ledger *ledger = ctx->mem_gpus[g].ledger;
    REQUIRE(preempt_mem_ledger_used_bytes(ledger) == 0);
    REQUIRE(preempt_mem_ledger_waiting(ledger, PREEMPT_MEM_NO_INDEX) == 0);
    char problem[160];
    REQUIRE(preempt_mem_ledger_check(ledger, problem, sizeof problem) == 0);
  }
  for (uint32_t i = 0; i < PREEMPTD_MAX_REFUSING; i++)
    if (ctx->refusing[i].fd >= 0) {
      close(ctx->refusing[i].fd);
      ctx->refusing[i].fd = -1;
    }
  preemptd_gpus_free(ctx);
  preemptd_mem_free(ctx);
  preemptd_jobs_free(ctx); /* their pidfds: one run's steps must not outlive it */
  ctx->next_client_id = ctx->next_kernel_id = 0;
  scraped_count = 0; /* client ids start again */
  memset(ctx->log_budgets, 0, sizeof ctx->log_budgets);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const uid_t users[] = {0, 65534, 65533};
  script s = {data, size, 0};
  const preempt_sched_policy *policy = NULL;
  static const char *const names[] = {"fifo", "hpf", "ffs", "piv", "dprr", "flexsched"};
  REQUIRE(preempt_sched_policy_by_name(names[next_byte(&s) % 6], &policy) == PREEMPT_SCHED_OK);
  ctx->default_policy = policy;
  ctx->mem_policy = (preempt_mem_policy)(next_byte(&s) % PREEMPT_MEM_POLICY_COUNT);
  for (int steps = 0; s.at < s.length && steps < 256; steps++) {
    uint8_t op = next_byte(&s);
    peer *p = &peers[(op >> 4) % CONNECTIONS];
    switch (op % 8) {
    case 0:
      connect_peer(p, users[next_byte(&s) % 3]);
      break;
    case 1:
    case 2:
      if (p->fd >= 0)
        send_request(p, &s);
      break;
    case 3: {
      uint8_t raw[512];
      size_t length = 1 + next_byte(&s) % sizeof raw;
      next_bytes(&s, raw, length);
      if (p->fd >= 0)
        send_packet(p, raw, length);
      break;
    }
    case 4:
      hang_up(p);
      break;
    case 5:
    case 6:
      touch_stub(p, &s);
      break;
    default:
      schedule();
      break;
    }
    serve(2);
    drain_all();
    scrape();
  }
  finish();
  return 0;
}
