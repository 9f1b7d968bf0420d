/* fake_client.c: a preemptd client without any GPU: registers, plays a script of launches and stub moves, prints what it sees.
 * EffiSha §6.1 (the client's half of the stub states) and FLEP §3 (a program whose launches the scheduler intercepts);
 * FlexSched §4.4 (progress samples following a rate table, for the flexsched policy). */
#define _GNU_SOURCE /* struct ucred-free, but mmap flags, MSG_CMSG_CLOEXEC and usleep-free nanosleep want it */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "preempt/byte_count.h"
#include "preempt/daemon_protocol.h"

static const char usage[] =
    "usage: fake_client [--socket PATH] [--tag TAG] [--priority P] [--gpu UUIDHEX:SMS[:LIMITS]]... [--program NAME]\n"
    "                   [--no-register] [COMMAND]...\n"
    "LIMITS: the GPU's SM limits in REGISTER, \"h100\" or THREADS,CTAS,REGS,REG_UNIT,SHARED,SHARED_UNIT,RESERVED,WARP\n"
    "Commands (arguments, or lines on stdin when none are given):\n"
    "  launch NAME [ctas=N] [per_sm=M] [priority=P] [gpu=I] [grid=G] [block=B] [input=BYTES] [weight=W]\n"
    "              [regs=R] [static_shared=BYTES] [shared=BYTES] [tasks=N]   (regs: the CTA footprint, 0 = unknown)\n"
    "              [started=1]   (started: on a lease, PREP -> RUNNING instead of READY)\n"
    "  lease                          prints the page's lease word\n"
    "  play MS NAME=RATES...          for MS ms: acknowledge every command to the named launches and write their\n"
    "                                 progress samples, RATES = tasks/us at quota 1,2,... (the last for larger ones\n"
    "                                 and for no quota); prints each quota a launch is given\n"
    "  wait STATE NAME TIMEOUT_MS     until the stub is in STATE; prints the command and the time taken\n"
    "  ack NAME [evict_us=U]          TORUN->RUNNING; TOEVICT->READY (all SMs) or ->RUNNING (a mask)\n"
    "  done NAME [quiet]              RUNNING or TOEVICT -> DONE (quiet: no doorbell ring)\n"
    "  state NAME                     prints the stub's state\n"
    "  set-priority P | list | policy NAME [UUIDHEX]\n"
    "  job JOB STEP UID PID PRIORITY|- [MEM_LIMIT]   a Slurm step's grant, as the Slurm plugin sends it\n"
    "  job-end JOB STEP\n"
    "  garbage KIND                   short|magic|length|type|reply|unterminated|version|oversize|fds\n"
    "  illegal-move NAME STATE|NUMBER writes a state the client may not write\n"
    "  register [TIMEOUT_MS]          (re)connects and registers, retrying until the daemon answers\n"
    "  wait-closed TIMEOUT_MS | sleep MS | touch PATH | wait-file PATH TIMEOUT_MS\n"
    "  pidfile PATH | kill PIDFILE (SIGKILL; later waits also print the time since) | exit [CODE]\n"
    "  register-here                  REGISTER on the connection as it is (after --no-register; no reconnect)\n"
    "  detach PIDFILE                 writes this pid, forks; the parent exits, the child runs the rest\n"
    "  connect-many N                 opens N more connections that never speak (kept until exit)\n"
    "  flood-garbage N                N connections, each sending 3 bytes and closing\n"
    "  mem-attach | mem-query UUIDHEX TOTAL USED | mem-reading UUIDHEX TOTAL USED [COUNT INTERVAL_MS]\n"
    "  mem-reserve UUIDHEX BYTES TOTAL USED TIMEOUT_MS   (waits for the answer; BYTES etc. take K, M, G)\n"
    "  mem-release UUIDHEX BYTES\n";

typedef struct fake {
  const char *socket_path;
  const char *tag;
  const char *program;
  bool priority_requested;
  int32_t priority_request;
  uint32_t gpu_count;
  preempt_msg_gpu gpus[PREEMPT_DAEMON_MAX_GPUS];
  int fd;
  uint32_t request_id;
  uint32_t client_id;
  int32_t priority, limit;
  preempt_client_page *page;
  preempt_doorbell_page *doorbell;
  char names[PREEMPT_STUBS_PER_CLIENT][PREEMPT_DAEMON_NAME_BYTES];
  double kill_ms; /* < 0: nothing killed yet */
} fake;

static double now_ms(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (double)now.tv_sec * 1e3 + (double)now.tv_nsec / 1e6;
}

static void sleep_ms(double ms) {
  struct timespec pause = {(time_t)(ms / 1000), (long)((ms - (double)(time_t)(ms / 1000) * 1000) * 1e6)};
  nanosleep(&pause, NULL);
}

static void say(const fake *f, const char *format, ...) __attribute__((format(printf, 2, 3)));
static void say(const fake *f, const char *format, ...) {
  if (f->tag)
    printf("%s: ", f->tag);
  va_list args;
  va_start(args, format);
  vprintf(format, args);
  va_end(args);
  putchar('\n');
  fflush(stdout);
}

/* ---------------------------------------------------------------- the socket */

static int send_bytes(fake *f, const void *bytes, size_t length) {
  return send(f->fd, bytes, length, MSG_NOSIGNAL) == (ssize_t)length ? 0 : -1;
}

/* One packet (and up to two fds) within timeout_ms: >0 its length, 0 the socket closed, -1 timeout or error. */
static ssize_t receive(fake *f, uint64_t *buffer, size_t capacity, int fds[2], int timeout_ms) {
  struct pollfd polled = {f->fd, POLLIN, 0};
  if (poll(&polled, 1, timeout_ms) <= 0)
    return -1;
  int fd_count = 0, message_flags = 0;
  ssize_t got = preempt_receive_packet(f->fd, buffer, capacity, 0, fds, fds ? 2 : 0, &fd_count, &message_flags);
  /* A peer that closed with our request unread (the daemon refusing a connection) leaves ECONNRESET, which
   * Linux reports before the packets already queued: the reply may still be there. */
  if (got < 0 && errno == ECONNRESET) {
    got = preempt_receive_packet(f->fd, buffer, capacity, MSG_DONTWAIT, fds, fds ? 2 : 0, &fd_count, &message_flags);
    if (got < 0)
      return 0;
  }
  return got;
}

static void say_status(fake *f, const char *what, const preempt_msg_status *status) {
  say(f, "%s: status %s: %s", what, preempt_daemon_status_name((preempt_daemon_status)status->status),
      status->message);
}

/* Waits for a reply, decodes it; 0 with `out` filled, -1 (reported) otherwise. */
static int reply(fake *f, const char *what, preempt_msg *out, uint64_t *buffer, size_t capacity, int fds[2]) {
  ssize_t got = receive(f, buffer, capacity, fds, 5000);
  if (got <= 0) {
    say(f, "%s: %s", what, got == 0 ? "socket closed" : "no reply");
    return -1;
  }
  preempt_daemon_status status = preempt_msg_decode(buffer, (size_t)got, out);
  if (status != PREEMPT_DAEMON_OK) {
    say(f, "%s: undecodable reply: %s", what, preempt_daemon_status_name(status));
    return -1;
  }
  /* A reply must carry its request's id: a runtime cannot match one that does not (issue 41's FULL with id 0). */
  if (out->request_id != f->request_id)
    say(f, "%s: answered request %u, not %u", what, out->request_id, f->request_id);
  return 0;
}

static int connect_daemon(fake *f) {
  struct sockaddr_un address;
  memset(&address, 0, sizeof address);
  address.sun_family = AF_UNIX;
  snprintf(address.sun_path, sizeof address.sun_path, "%s", f->socket_path);
  int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return -1;
  if (connect(fd, (struct sockaddr *)&address, sizeof address) != 0) {
    int saved = errno;
    close(fd);
    errno = saved;
    return -1;
  }
  f->fd = fd;
  return 0;
}

static void forget_registration(fake *f) {
  if (f->page)
    munmap(f->page, sizeof *f->page);
  if (f->doorbell)
    munmap(f->doorbell, sizeof *f->doorbell);
  f->page = NULL;
  f->doorbell = NULL;
  memset(f->names, 0, sizeof f->names);
}

static int register_once(fake *f, bool quiet);

/* Connects and registers, retrying for timeout_ms: a daemon that is stopping may still accept a connection
 * it then drops, and one that is starting has no socket yet. */
static int do_register(fake *f, int timeout_ms) {
  double start = now_ms();
  for (;;) {
    if (f->fd >= 0)
      close(f->fd);
    f->fd = -1;
    forget_registration(f);
    bool last = now_ms() - start >= timeout_ms;
    if (connect_daemon(f) == 0) {
      int result = register_once(f, !last);
      if (result >= 0 || last)
        return result < 0 ? -1 : 0;
    } else if (last) {
      say(f, "register: cannot connect to %s: %s", f->socket_path, strerror(errno));
      return -1;
    }
    sleep_ms(10);
  }
}

/* 0 registered; -1 refused (reported); -2 the connection failed (reported unless quiet: the caller retries). */
static int register_once(fake *f, bool quiet) {
  preempt_msg_register request;
  memset(&request, 0, sizeof request);
  preempt_msg_header_init(&request.header, PREEMPT_MSG_REGISTER, sizeof request, ++f->request_id);
  request.priority = f->priority_request;
  request.priority_requested = f->priority_requested;
  request.gpu_count = f->gpu_count;
  preempt_copy_name(request.program, sizeof request.program, f->program);
  memcpy(request.gpus, f->gpus, sizeof request.gpus);
  if (send_bytes(f, &request, sizeof request) != 0) {
    if (!quiet)
      say(f, "register: send failed: %s", strerror(errno));
    return -2;
  }
  uint64_t buffer[PREEMPT_DAEMON_MAX_MESSAGE / 8];
  int fds[2] = {-1, -1};
  preempt_msg message;
  ssize_t got = receive(f, buffer, sizeof buffer, fds, 5000);
  if (got <= 0) {
    if (!quiet)
      say(f, "register: %s", got == 0 ? "socket closed" : "no reply");
    return -2;
  }
  if (preempt_msg_decode(buffer, (size_t)got, &message) != PREEMPT_DAEMON_OK) {
    say(f, "register: undecodable reply");
    return -1;
  }
  if (message.request_id != f->request_id)
    say(f, "register: answered request %u, not %u", message.request_id, f->request_id);
  if (message.type == PREEMPT_MSG_STATUS) {
    say_status(f, "register refused", &message.body.status);
    return -1;
  }
  if (message.type != PREEMPT_MSG_REGISTERED || fds[0] < 0 || fds[1] < 0) {
    say(f, "register: unexpected reply type %u", (unsigned)message.type);
    return -1;
  }
  const preempt_msg_registered *registered = &message.body.registered;
  void *page = mmap(NULL, registered->page_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fds[0], 0);
  void *doorbell = mmap(NULL, registered->doorbell_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fds[1], 0);
  close(fds[0]);
  close(fds[1]);
  if (page == MAP_FAILED || doorbell == MAP_FAILED) {
    say(f, "register: mmap failed: %s", strerror(errno));
    return -1;
  }
  f->page = page;
  f->doorbell = doorbell;
  f->client_id = registered->client_id;
  f->priority = registered->priority;
  f->limit = registered->priority_limit;
  say(f, "registered client=%u priority=%d limit=%d page_version=%u page_client=%u", f->client_id, f->priority,
      f->limit, f->page->page_version, f->page->client_id);
  return 0;
}

/* ---------------------------------------------------------------- stubs */

static int stub_named(fake *f, const char *name) {
  if (!f->page) {
    say(f, "%s: not registered", name);
    return -1;
  }
  for (int i = 0; i < PREEMPT_STUBS_PER_CLIENT; i++)
    if (strcmp(f->names[i], name) == 0)
      return i;
  say(f, "%s: no such launch", name);
  return -1;
}

static uint32_t load_state(fake *f, int stub) { return __atomic_load_n(&f->page->stubs[stub].state, __ATOMIC_ACQUIRE); }

static int parse_state(const char *text, uint32_t *state) {
  for (uint32_t s = PREEMPT_STUB_FREE; s <= PREEMPT_STUB_DONE; s++)
    if (strcmp(text, preempt_stub_state_name(s)) == 0) {
      *state = s;
      return 0;
    }
  char *end = NULL;
  unsigned long value = strtoul(text, &end, 0);
  if (!end || *end || end == text)
    return -1;
  *state = (uint32_t)value;
  return 0;
}

/* "all" or "sms=0-3,7" from the command fields, read after the acquire load of the state. */
static void command_text(const preempt_stub *stub, char *text, size_t bytes) {
  if (stub->command_all) {
    snprintf(text, bytes, "all");
    return;
  }
  size_t used = (size_t)snprintf(text, bytes, "sms=");
  bool any = false;
  for (uint32_t sm = 0; sm < 256; sm++) {
    bool has = (stub->command_mask[sm / 32] >> (sm % 32)) & 1;
    bool before = sm > 0 && ((stub->command_mask[(sm - 1) / 32] >> ((sm - 1) % 32)) & 1);
    if (!has || before)
      continue;
    uint32_t last = sm;
    while (last + 1 < 256 && ((stub->command_mask[(last + 1) / 32] >> ((last + 1) % 32)) & 1))
      last++;
    int n = last == sm ? snprintf(text + used, bytes - used, "%s%u", any ? "," : "", sm)
                       : snprintf(text + used, bytes - used, "%s%u-%u", any ? "," : "", sm, last);
    if (n < 0 || (size_t)n >= bytes - used)
      return;
    used += (size_t)n;
    any = true;
  }
  if (!any)
    snprintf(text + used, bytes - used, "none");
}

static void ring(fake *f) { preempt_futex_ring(&f->doorbell->doorbell); }

static int cmd_launch(fake *f, int argc, char **argv) {
  if (argc < 2 || !f->page) {
    say(f, "launch: needs NAME and a registration");
    return -1;
  }
  unsigned long long ctas = 8, per_sm = 1, gpu = 0, grid = 0, block = 128, input = 0;
  unsigned long long weight = 0; /* the stub's FFS weight; 0 reads as 1 */
  unsigned long long registers = 0, static_shared = 0, shared = 0, tasks = 0; /* the CTA footprint (protocol 4) */
  long long priority = f->priority;
  unsigned long long started = 0; /* 1: started on a lease (PREP -> RUNNING), as the runtime does when leased */
  for (int i = 2; i < argc; i++) {
    char *eq = strchr(argv[i], '=');
    if (!eq) {
      say(f, "launch: bad argument %s", argv[i]);
      return -1;
    }
    *eq = '\0';
    const char *key = argv[i], *value = eq + 1;
    if (strcmp(key, "priority") == 0)
      priority = strtoll(value, NULL, 0);
    else if (strcmp(key, "ctas") == 0)
      ctas = strtoull(value, NULL, 0);
    else if (strcmp(key, "per_sm") == 0)
      per_sm = strtoull(value, NULL, 0);
    else if (strcmp(key, "gpu") == 0)
      gpu = strtoull(value, NULL, 0);
    else if (strcmp(key, "grid") == 0)
      grid = strtoull(value, NULL, 0);
    else if (strcmp(key, "block") == 0)
      block = strtoull(value, NULL, 0);
    else if (strcmp(key, "input") == 0)
      input = strtoull(value, NULL, 0);
    else if (strcmp(key, "weight") == 0)
      weight = strtoull(value, NULL, 0);
    else if (strcmp(key, "regs") == 0)
      registers = strtoull(value, NULL, 0);
    else if (strcmp(key, "static_shared") == 0)
      static_shared = strtoull(value, NULL, 0);
    else if (strcmp(key, "shared") == 0)
      shared = strtoull(value, NULL, 0);
    else if (strcmp(key, "tasks") == 0)
      tasks = strtoull(value, NULL, 0);
    else if (strcmp(key, "started") == 0)
      started = strtoull(value, NULL, 0);
    else {
      say(f, "launch: unknown key %s", key);
      return -1;
    }
  }
  for (int i = 0; i < PREEMPT_STUBS_PER_CLIENT; i++) {
    preempt_stub *stub = &f->page->stubs[i];
    uint32_t expected = PREEMPT_STUB_FREE;
    /* FREE -> PREP takes the stub (a CAS: a real runtime has several launching threads). */
    if (!__atomic_compare_exchange_n(&stub->state, &expected, PREEMPT_STUB_PREP, false, __ATOMIC_ACQUIRE,
                                     __ATOMIC_RELAXED))
      continue;
    stub->launch_sequence++;
    stub->gpu = (uint32_t)gpu;
    stub->priority = (int32_t)priority;
    stub->grid[0] = (uint32_t)(grid ? grid : ctas);
    stub->grid[1] = stub->grid[2] = 1;
    stub->block[0] = (uint32_t)block;
    stub->block[1] = stub->block[2] = 1;
    stub->persistent_ctas = (uint32_t)ctas;
    stub->ctas_per_sm = (uint32_t)per_sm;
    stub->shared_bytes = shared;
    stub->input_bytes = input;
    stub->registers_per_thread = (uint32_t)registers;
    stub->static_shared_bytes = (uint32_t)static_shared;
    stub->task_count = (uint32_t)(tasks ? tasks : registers ? 1000000 : 0);
    stub->reserved_client = 0;
    stub->progress_tasks = 0;
    stub->progress_ns = 0;
    stub->kernel_key = preempt_kernel_key(argv[1]);
    preempt_copy_name(stub->name, sizeof stub->name, argv[1]);
    stub->evictions_done = 0;
    stub->weight = (uint32_t)weight;
    stub->last_eviction_ns = 0;
    preempt_copy_name(f->names[i], sizeof f->names[i], argv[1]);
    __atomic_store_n(&stub->state, started ? PREEMPT_STUB_RUNNING : PREEMPT_STUB_READY, __ATOMIC_RELEASE);
    ring(f);
    say(f, "launch %s stub=%d%s", argv[1], i, started ? " started" : "");
    return 0;
  }
  say(f, "launch: no free stub");
  return -1;
}

static int cmd_wait(fake *f, const char *state_name, const char *name, int timeout_ms) {
  uint32_t wanted = 0;
  int stub = stub_named(f, name);
  if (stub < 0 || parse_state(state_name, &wanted) != 0)
    return -1;
  double start = now_ms();
  for (;;) {
    uint32_t wake = __atomic_load_n(&f->page->client_wake, __ATOMIC_ACQUIRE);
    uint32_t state = load_state(f, stub);
    double elapsed = now_ms() - start;
    if (state == wanted) {
      char command[128] = "";
      if (state == PREEMPT_STUB_TORUN || state == PREEMPT_STUB_TOEVICT)
        command_text(&f->page->stubs[stub], command, sizeof command);
      char since_kill[64] = "";
      if (f->kill_ms >= 0)
        snprintf(since_kill, sizeof since_kill, ", %.1f ms since kill", now_ms() - f->kill_ms);
      say(f, "%s: %s %s (%.0f ms%s)", name, preempt_stub_state_name(state), command, elapsed, since_kill);
      return 0;
    }
    if (elapsed >= timeout_ms) {
      say(f, "%s: timeout waiting for %s after %.0f ms (state %s)", name, state_name, elapsed,
          preempt_stub_state_name(state));
      return -1;
    }
    /* Slices of 10 ms: the daemon rings client_wake after commands, but not after DONE -> FREE. */
    double left = timeout_ms - elapsed;
    preempt_futex_wait(&f->page->client_wake, wake, (int64_t)((left < 10 ? left : 10) * 1e6));
  }
}

static int cmd_ack(fake *f, const char *name, int argc, char **argv) {
  int stub = stub_named(f, name);
  if (stub < 0)
    return -1;
  unsigned long long evict_us = 50;
  for (int i = 0; i < argc; i++)
    if (strncmp(argv[i], "evict_us=", 9) == 0)
      evict_us = strtoull(argv[i] + 9, NULL, 0);
  preempt_stub *s = &f->page->stubs[stub];
  uint32_t state = load_state(f, stub);
  uint32_t next;
  if (state == PREEMPT_STUB_TORUN) {
    next = PREEMPT_STUB_RUNNING; /* launched (or resumed, or refilled) */
  } else if (state == PREEMPT_STUB_TOEVICT && s->command_all) {
    s->evictions_done++;
    s->last_eviction_ns = evict_us * 1000;
    next = PREEMPT_STUB_READY; /* no CTA left */
  } else if (state == PREEMPT_STUB_TOEVICT) {
    next = PREEMPT_STUB_RUNNING; /* mask written: those SMs' CTAs leave, the rest runs on */
  } else {
    say(f, "ack %s: nothing to acknowledge in %s", name, preempt_stub_state_name(state));
    return -1;
  }
  __atomic_store_n(&s->state, next, __ATOMIC_RELEASE);
  ring(f);
  say(f, "ack %s: %s -> %s", name, preempt_stub_state_name(state), preempt_stub_state_name(next));
  return 0;
}

/* quiet: without ringing the doorbell, so the daemon finds the DONE only when something else makes it scan
 * (tests use it to put a completion and a command in one scan). */
static int cmd_done(fake *f, const char *name, bool quiet) {
  int stub = stub_named(f, name);
  if (stub < 0)
    return -1;
  uint32_t state = load_state(f, stub);
  if (state != PREEMPT_STUB_RUNNING && state != PREEMPT_STUB_TOEVICT) {
    say(f, "done %s: cannot finish from %s", name, preempt_stub_state_name(state));
    return -1;
  }
  /* A CAS: from RUNNING the daemon may be writing TOEVICT at this moment. */
  if (!__atomic_compare_exchange_n(&f->page->stubs[stub].state, &state, PREEMPT_STUB_DONE, false, __ATOMIC_ACQ_REL,
                                   __ATOMIC_ACQUIRE) &&
      !__atomic_compare_exchange_n(&f->page->stubs[stub].state, &state, PREEMPT_STUB_DONE, false, __ATOMIC_ACQ_REL,
                                   __ATOMIC_ACQUIRE)) {
    say(f, "done %s: the state kept changing", name);
    return -1;
  }
  if (!quiet)
    ring(f);
  say(f, "done %s: %s -> DONE", name, preempt_stub_state_name(state));
  return 0;
}

/* One launch `play` drives: its rate table and the tasks it has taken. */
typedef struct played {
  int stub;
  const char *name;
  double rates[64];
  int rate_count;
  double tasks;
  double last_ms;           /* when tasks was last advanced; < 0: not running */
  uint32_t quota_seen;
  bool running;
} played;

static double played_rate(const played *p, uint32_t quota) {
  if (quota == 0 || (int)quota > p->rate_count)
    return p->rates[p->rate_count - 1]; /* no quota: full occupancy, the table's last entry */
  return p->rates[quota - 1];
}

/* What a converted launch's runtime does while the daemon schedules it (FlexSched §4.4's task counter): carries out
 * every command (TORUN: runs with the stub's command_quota; TOEVICT: leaves), and keeps writing (tasks, time) samples
 * whose tasks follow the rate table at the quota in force. */
static int cmd_play(fake *f, double duration_ms, int argc, char **argv) {
  played launches[8];
  int count = 0;
  for (int i = 0; i < argc && count < 8; i++) {
    char *eq = strchr(argv[i], '=');
    if (!eq) {
      say(f, "play: bad argument %s", argv[i]);
      return -1;
    }
    *eq = '\0';
    played *p = &launches[count];
    memset(p, 0, sizeof *p);
    p->name = argv[i];
    if ((p->stub = stub_named(f, argv[i])) < 0)
      return -1;
    for (char *rate = strtok(eq + 1, ","); rate && p->rate_count < 64; rate = strtok(NULL, ","))
      p->rates[p->rate_count++] = atof(rate);
    if (p->rate_count == 0) {
      say(f, "play: %s has no rates", argv[i]);
      return -1;
    }
    p->last_ms = -1;
    count++;
  }
  double start = now_ms();
  for (;;) {
    double now = now_ms();
    if (now - start >= duration_ms)
      break;
    bool moved = false;
    for (int i = 0; i < count; i++) {
      played *p = &launches[i];
      preempt_stub *stub = &f->page->stubs[p->stub];
      uint32_t state = load_state(f, p->stub);
      if (p->running)
        p->tasks += played_rate(p, p->quota_seen) * (now - p->last_ms) * 1e3;
      p->last_ms = now;
      if (state == PREEMPT_STUB_TORUN) {
        uint32_t quota = stub->command_quota;
        if (!p->running || quota != p->quota_seen)
          say(f, "play %s quota=%u", p->name, quota);
        p->quota_seen = quota;
        p->running = true;
        __atomic_store_n(&stub->state, PREEMPT_STUB_RUNNING, __ATOMIC_RELEASE);
        moved = true;
      } else if (state == PREEMPT_STUB_TOEVICT) {
        bool all = stub->command_all != 0;
        if (all) {
          stub->evictions_done++;
          stub->last_eviction_ns = 50000;
          p->running = false;
          say(f, "play %s evicted", p->name);
        }
        __atomic_store_n(&stub->state, all ? PREEMPT_STUB_READY : PREEMPT_STUB_RUNNING, __ATOMIC_RELEASE);
        moved = true;
      }
      if (p->running) {
        /* Tasks, then the time they were read at: the daemon drops a sample whose time moved while it read. */
        struct timespec clock;
        clock_gettime(CLOCK_MONOTONIC, &clock);
        __atomic_store_n(&stub->progress_tasks, (uint64_t)p->tasks, __ATOMIC_RELAXED);
        __atomic_store_n(&stub->progress_ns, (uint64_t)clock.tv_sec * 1000000000u + (uint64_t)clock.tv_nsec,
                         __ATOMIC_RELEASE);
      }
    }
    if (moved)
      ring(f);
    sleep_ms(0.1);
  }
  for (int i = 0; i < count; i++)
    say(f, "play %s: %s", launches[i].name, preempt_stub_state_name(load_state(f, launches[i].stub)));
  return 0;
}

static int cmd_illegal(fake *f, const char *name, const char *value) {
  int stub = stub_named(f, name);
  uint32_t state = 0;
  if (stub < 0 || parse_state(value, &state) != 0)
    return -1;
  uint32_t before = load_state(f, stub);
  __atomic_store_n(&f->page->stubs[stub].state, state, __ATOMIC_RELEASE);
  ring(f);
  say(f, "illegal-move %s: %s -> %s (%u)", name, preempt_stub_state_name(before), preempt_stub_state_name(state),
      state);
  return 0;
}

/* ---------------------------------------------------------------- requests */

static int cmd_set_priority(fake *f, int32_t priority) {
  preempt_msg_set_priority request;
  memset(&request, 0, sizeof request);
  preempt_msg_header_init(&request.header, PREEMPT_MSG_SET_PRIORITY, sizeof request, ++f->request_id);
  request.priority = priority;
  uint64_t buffer[PREEMPT_DAEMON_MAX_MESSAGE / 8];
  preempt_msg message;
  if (send_bytes(f, &request, sizeof request) != 0 || reply(f, "set-priority", &message, buffer, sizeof buffer, NULL))
    return -1;
  if (message.type == PREEMPT_MSG_STATUS) {
    say_status(f, "set-priority", &message.body.status);
    return 0;
  }
  f->priority = message.body.priority.priority;
  say(f, "set-priority %d: granted=%d limit=%d", priority, message.body.priority.priority,
      message.body.priority.priority_limit);
  return 0;
}

static int parse_uuid(const char *hex, uint8_t uuid[16]) {
  memset(uuid, 0, 16);
  size_t length = strlen(hex);
  if (length == 0 || length > 32)
    return -1;
  /* Right-aligned, so "1" is 00..01. */
  for (size_t i = 0; i < length; i++) {
    char c = hex[length - 1 - i];
    int v = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
    if (v < 0)
      return -1;
    uuid[15 - i / 2] |= (uint8_t)(i % 2 ? v << 4 : v);
  }
  return 0;
}

/* "h100" (coexec.h's figures) or the eight numbers of preempt_msg_gpu's limits, in its order. */
static int parse_limits(const char *text, preempt_msg_gpu *gpu) {
  if (strcmp(text, "h100") == 0)
    text = "2048,32,65536,256,233472,128,1024,32";
  uint32_t *fields[8] = {&gpu->max_threads,  &gpu->max_ctas,    &gpu->registers,       &gpu->register_unit,
                         &gpu->shared_bytes, &gpu->shared_unit, &gpu->shared_reserved, &gpu->warp_size};
  for (int i = 0; i < 8; i++) {
    char *end = NULL;
    unsigned long value = strtoul(text, &end, 0);
    if (end == text || (i < 7 ? *end != ',' : *end != '\0'))
      return -1;
    *fields[i] = (uint32_t)value;
    text = end + 1;
  }
  return 0;
}

static int cmd_policy(fake *f, const char *name, const char *uuid_hex) {
  preempt_msg_set_policy request;
  memset(&request, 0, sizeof request);
  preempt_msg_header_init(&request.header, PREEMPT_MSG_SET_POLICY, sizeof request, ++f->request_id);
  if (uuid_hex && parse_uuid(uuid_hex, request.uuid) != 0)
    return -1;
  preempt_copy_name(request.policy, sizeof request.policy, name);
  uint64_t buffer[PREEMPT_DAEMON_MAX_MESSAGE / 8];
  preempt_msg message;
  if (send_bytes(f, &request, sizeof request) != 0 || reply(f, "policy", &message, buffer, sizeof buffer, NULL))
    return -1;
  if (message.type != PREEMPT_MSG_STATUS)
    return -1;
  say_status(f, "policy", &message.body.status);
  return 0;
}

static int parse_bytes(fake *f, const char *text, uint64_t *bytes);

/* JOB as the Slurm plugin sends it: a grant (PRIORITY "-": none) or, with job-end, the step's end. */
static int cmd_job(fake *f, bool end, int argc, char **argv) {
  preempt_msg_job request;
  memset(&request, 0, sizeof request);
  preempt_msg_header_init(&request.header, PREEMPT_MSG_JOB, sizeof request, ++f->request_id);
  request.job_id = (uint32_t)strtoul(argv[1], NULL, 0);
  request.step_id = (uint32_t)strtoul(argv[2], NULL, 0);
  if (end) {
    request.flags = PREEMPT_JOB_END;
  } else {
    request.uid = (uint32_t)strtoul(argv[3], NULL, 0);
    request.pid = (uint32_t)strtoul(argv[4], NULL, 0);
    if (strcmp(argv[5], "-") != 0) {
      request.flags |= PREEMPT_JOB_PRIORITY;
      request.priority = (int32_t)atoi(argv[5]);
    }
    if (argc > 6 && parse_bytes(f, argv[6], &request.mem_limit_bytes) != 0)
      return -1;
  }
  uint64_t buffer[PREEMPT_DAEMON_MAX_MESSAGE / 8];
  preempt_msg message;
  if (send_bytes(f, &request, sizeof request) != 0 || reply(f, end ? "job-end" : "job", &message, buffer,
                                                            sizeof buffer, NULL))
    return -1;
  if (message.type != PREEMPT_MSG_STATUS)
    return -1;
  say_status(f, end ? "job-end" : "job", &message.body.status);
  return 0;
}

static int cmd_list(fake *f) {
  preempt_msg_list request;
  preempt_msg_header_init(&request.header, PREEMPT_MSG_LIST, sizeof request, ++f->request_id);
  uint64_t buffer[PREEMPT_DAEMON_MAX_MESSAGE / 8];
  preempt_msg message;
  /* A failed send (the daemon hung up at once) may still have a reply waiting: FULL. */
  (void)send_bytes(f, &request, sizeof request);
  if (reply(f, "list", &message, buffer, sizeof buffer, NULL))
    return -1;
  if (message.type == PREEMPT_MSG_STATUS) {
    say_status(f, "list", &message.body.status);
    return 0;
  }
  if (message.type != PREEMPT_MSG_LISTING || message.request_id != f->request_id) {
    say(f, "list: unexpected reply type %u", (unsigned)message.type);
    return -1;
  }
  const preempt_msg_listing *listing = &message.body.listing;
  say(f, "list gpus=%u clients=%u kernels=%u", listing->gpu_count, listing->client_count, listing->kernel_count);
  for (uint32_t i = 0; i < listing->gpu_count; i++)
    say(f, "list gpu %u sms=%u policy=%s kernels=%u", i, message.listing_gpus[i].sm_count,
        message.listing_gpus[i].policy, message.listing_gpus[i].kernels);
  for (uint32_t i = 0; i < listing->client_count; i++) {
    const preempt_listing_client *c = &message.listing_clients[i];
    char job[40] = "";
    if (c->job_id)
      snprintf(job, sizeof job, " job=%u.%u", c->job_id, c->step_id);
    say(f, "list client %u program=%s priority=%d limit=%d launches=%llu%s", c->client_id, c->program, c->priority,
        c->priority_limit, (unsigned long long)c->launches, job);
  }
  for (uint32_t i = 0; i < listing->kernel_count; i++) {
    const preempt_listing_kernel *k = &message.listing_kernels[i];
    say(f, "list kernel client=%u stub=%u gpu=%u %s name=%s priority=%d evictions=%u weight=%u", k->client_id, k->stub,
        k->gpu, preempt_stub_state_name(k->state), k->name, k->priority, k->evictions, k->weight);
  }
  return 0;
}

/* Bytes no correct peer sends; the daemon must answer STATUS MALFORMED (or BAD_VERSION) and hang up. */
static int cmd_garbage(fake *f, const char *kind) {
  static uint64_t buffer[70000 / 8 + 1];
  memset(buffer, 0, sizeof buffer);
  preempt_msg_header *header = (preempt_msg_header *)buffer;
  size_t length = sizeof(preempt_msg_list);
  preempt_msg_header_init(header, PREEMPT_MSG_LIST, (uint32_t)length, ++f->request_id);
  int passed_fd = -1;
  if (strcmp(kind, "short") == 0) {
    length = 3;
  } else if (strcmp(kind, "magic") == 0) {
    header->magic = 0xdeadbeef;
  } else if (strcmp(kind, "length") == 0) {
    header->length = 4096;
  } else if (strcmp(kind, "type") == 0) {
    header->type = 99;
  } else if (strcmp(kind, "version") == 0) {
    header->version = 7;
  } else if (strcmp(kind, "reply") == 0) { /* a daemon -> client type, well formed */
    preempt_msg_status *status = (preempt_msg_status *)buffer;
    length = sizeof *status;
    preempt_msg_header_init(header, PREEMPT_MSG_STATUS, (uint32_t)length, f->request_id);
  } else if (strcmp(kind, "unterminated") == 0) { /* REGISTER whose program name has no NUL */
    preempt_msg_register *request = (preempt_msg_register *)buffer;
    length = sizeof *request;
    preempt_msg_header_init(header, PREEMPT_MSG_REGISTER, (uint32_t)length, f->request_id);
    memset(request->program, 'x', sizeof request->program);
  } else if (strcmp(kind, "oversize") == 0) {
    length = 70000;
    header->length = (uint32_t)length;
  } else if (strcmp(kind, "fds") == 0) {
    passed_fd = open("/dev/null", O_RDONLY | O_CLOEXEC); /* sent along with a LIST: the daemon must drop it */
  } else {
    say(f, "garbage: unknown kind %s", kind);
    return -1;
  }
  struct iovec iov = {buffer, length};
  struct msghdr message;
  memset(&message, 0, sizeof message);
  message.msg_iov = &iov;
  message.msg_iovlen = 1;
  union {
    char bytes[CMSG_SPACE(sizeof(int))];
    struct cmsghdr align;
  } control;
  if (passed_fd >= 0) {
    memset(&control, 0, sizeof control);
    message.msg_control = control.bytes;
    message.msg_controllen = sizeof control.bytes;
    struct cmsghdr *h = CMSG_FIRSTHDR(&message);
    h->cmsg_level = SOL_SOCKET;
    h->cmsg_type = SCM_RIGHTS;
    h->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(h), &passed_fd, sizeof(int));
  }
  ssize_t sent = sendmsg(f->fd, &message, MSG_NOSIGNAL);
  if (passed_fd >= 0)
    close(passed_fd);
  if (sent != (ssize_t)length) {
    /* SEQPACKET refuses a packet over the socket's send buffer: the daemon never sees it. */
    say(f, "garbage %s: send refused: %s", kind, strerror(errno));
    return 0;
  }
  uint64_t in[PREEMPT_DAEMON_MAX_MESSAGE / 8];
  ssize_t got = receive(f, in, sizeof in, NULL, 5000);
  preempt_msg decoded;
  if (got > 0 && preempt_msg_decode(in, (size_t)got, &decoded) == PREEMPT_DAEMON_OK) {
    if (decoded.type == PREEMPT_MSG_STATUS)
      say_status(f, kind, &decoded.body.status);
    else
      say(f, "garbage %s: reply type %u", kind, (unsigned)decoded.type);
    if (passed_fd >= 0)
      return 0; /* a well-formed request with a stray fd: answered, and the connection stays */
  } else {
    say(f, "garbage %s: %s", kind, got == 0 ? "socket closed without a reply" : "no usable reply");
    return 0;
  }
  got = receive(f, in, sizeof in, NULL, 2000);
  say(f, "garbage %s: %s", kind, got == 0 ? "socket closed" : "socket still open");
  return 0;
}

static int cmd_wait_closed(fake *f, int timeout_ms) {
  double start = now_ms();
  for (;;) {
    double left = timeout_ms - (now_ms() - start);
    if (left <= 0) {
      say(f, "wait-closed: still open after %d ms", timeout_ms);
      return -1;
    }
    uint64_t in[PREEMPT_DAEMON_MAX_MESSAGE / 8];
    ssize_t got = receive(f, in, sizeof in, NULL, (int)left);
    if (got == 0) {
      say(f, "socket closed (%.0f ms)", now_ms() - start);
      return 0;
    }
    preempt_msg decoded;
    if (got > 0 && preempt_msg_decode(in, (size_t)got, &decoded) == PREEMPT_DAEMON_OK &&
        decoded.type == PREEMPT_MSG_STATUS)
      say_status(f, "message", &decoded.body.status);
  }
}

/* ---------------------------------------------------------------- hostile users and memory admission */

static int parse_bytes(fake *f, const char *text, uint64_t *bytes) {
  if (preempt_parse_byte_count(text, bytes) != 0) {
    say(f, "bad byte count %s", text);
    return -1;
  }
  return 0;
}

static int cmd_detach(fake *f, const char *pidfile) {
  FILE *file = fopen(pidfile, "w");
  if (!file || fprintf(file, "%d\n", (int)getpid()) < 0 || fclose(file) != 0) {
    say(f, "detach: cannot write %s", pidfile);
    return -1;
  }
  fflush(stdout);
  pid_t child = fork();
  if (child < 0)
    return -1;
  if (child > 0)
    _exit(0); /* the connecting process is gone; its child keeps the connection */
  return 0;
}

static int cmd_connect_many(fake *f, int count) {
  int saved = f->fd, opened = 0;
  for (int i = 0; i < count; i++) {
    if (connect_daemon(f) != 0)
      break;
    opened++; /* kept open, never written: the daemon's slot or refusal holds it */
  }
  f->fd = saved;
  say(f, "connected %d", opened);
  return 0;
}

static int cmd_flood_garbage(fake *f, int count) {
  int saved = f->fd, sent = 0;
  for (int i = 0; i < count; i++) {
    if (connect_daemon(f) != 0)
      break;
    static const char junk[3] = {1, 2, 3};
    sent += send_bytes(f, junk, sizeof junk) == 0;
    /* The refusal is read so that the daemon finds the peer there when it answers. */
    uint64_t in[PREEMPT_DAEMON_MAX_MESSAGE / 8];
    (void)receive(f, in, sizeof in, NULL, 1000);
    close(f->fd);
  }
  f->fd = saved;
  say(f, "flooded %d", sent);
  return 0;
}

static const char *mem_result_name(uint32_t result) {
  static const char *const names[] = {"granted", "cancelled", "never-fits", "full", "unknown-gpu", "ledger", "over-limit"};
  return result < sizeof names / sizeof names[0] ? names[result] : "?";
}

static void say_mem_reply(fake *f, const char *what, const preempt_msg_mem_reply *r, double ms) {
  say(f, "%s: %s capacity=%llu external=%llu reserved=%llu held=%llu waiting=%u (%.0f ms)", what,
      mem_result_name(r->result), (unsigned long long)r->capacity_bytes, (unsigned long long)r->external_bytes,
      (unsigned long long)r->reserved_bytes, (unsigned long long)r->held_bytes, r->waiting, ms);
}

/* The next reply to request `id` within timeout_ms (other replies are skipped): 0, or -1 said. */
static int mem_answer(fake *f, const char *what, uint32_t id, int timeout_ms) {
  double start = now_ms();
  for (;;) {
    double left = timeout_ms - (now_ms() - start);
    if (left <= 0) {
      say(f, "%s: no answer within %d ms", what, timeout_ms);
      return -1;
    }
    uint64_t in[PREEMPT_DAEMON_MAX_MESSAGE / 8];
    ssize_t got = receive(f, in, sizeof in, NULL, (int)left);
    if (got <= 0) {
      say(f, "%s: %s", what, got == 0 ? "socket closed" : "no answer");
      return -1;
    }
    preempt_msg message;
    if (preempt_msg_decode(in, (size_t)got, &message) != PREEMPT_DAEMON_OK || message.request_id != id)
      continue;
    if (message.type == PREEMPT_MSG_STATUS)
      say_status(f, what, &message.body.status);
    else if (message.type == PREEMPT_MSG_MEM_ATTACHED)
      say(f, "%s: attached client=%u priority=%d flags=%u", what, message.body.mem_attached.client_id,
          message.body.mem_attached.priority, message.body.mem_attached.flags);
    else if (message.type == PREEMPT_MSG_MEM_REPLY)
      say_mem_reply(f, what, &message.body.mem_reply, now_ms() - start);
    else
      say(f, "%s: reply type %u", what, (unsigned)message.type);
    return 0;
  }
}

static int cmd_mem(fake *f, int argc, char **argv) {
  const char *c = argv[0];
  uint64_t bytes = 0, total = 0, used = 0;
  uint8_t uuid[16];
  if (strcmp(c, "mem-attach") == 0) {
    preempt_msg_mem_attach request;
    memset(&request, 0, sizeof request);
    preempt_msg_header_init(&request.header, PREEMPT_MSG_MEM_ATTACH, sizeof request, ++f->request_id);
    preempt_copy_name(request.program, sizeof request.program, f->program);
    if (send_bytes(f, &request, sizeof request) != 0)
      return -1;
    return mem_answer(f, c, f->request_id, 5000);
  }
  if (argc < 2 || parse_uuid(argv[1], uuid) != 0) {
    say(f, "%s: UUIDHEX first", c);
    return -1;
  }
  if (strcmp(c, "mem-release") == 0) {
    if (argc < 3 || parse_bytes(f, argv[2], &bytes) != 0)
      return -1;
    preempt_msg_mem_release request;
    memset(&request, 0, sizeof request);
    preempt_msg_header_init(&request.header, PREEMPT_MSG_MEM_RELEASE, sizeof request, ++f->request_id);
    memcpy(request.uuid, uuid, 16);
    request.bytes = bytes;
    return send_bytes(f, &request, sizeof request);
  }
  int first = strcmp(c, "mem-reserve") == 0 ? 3 : 2;
  if (argc < first + 2 || parse_bytes(f, argv[first], &total) != 0 || parse_bytes(f, argv[first + 1], &used) != 0)
    return -1;
  if (strcmp(c, "mem-query") == 0) {
    preempt_msg_mem_query request;
    memset(&request, 0, sizeof request);
    preempt_msg_header_init(&request.header, PREEMPT_MSG_MEM_QUERY, sizeof request, ++f->request_id);
    memcpy(request.uuid, uuid, 16);
    request.device_total_bytes = total;
    request.device_used_bytes = used;
    if (send_bytes(f, &request, sizeof request) != 0)
      return -1;
    return mem_answer(f, c, f->request_id, 5000);
  }
  if (strcmp(c, "mem-reading") == 0) {
    int count = argc > 4 ? atoi(argv[4]) : 1;
    double interval = argc > 5 ? atof(argv[5]) : 0;
    for (int i = 0; i < count; i++) {
      preempt_msg_mem_reading request;
      memset(&request, 0, sizeof request);
      preempt_msg_header_init(&request.header, PREEMPT_MSG_MEM_READING, sizeof request, ++f->request_id);
      memcpy(request.uuid, uuid, 16);
      request.device_total_bytes = total;
      request.device_used_bytes = used;
      if (send_bytes(f, &request, sizeof request) != 0)
        return -1;
      if (interval > 0)
        sleep_ms(interval);
    }
    return 0;
  }
  if (strcmp(c, "mem-reserve") == 0) {
    if (argc < 6 || parse_bytes(f, argv[2], &bytes) != 0)
      return -1;
    preempt_msg_mem_reserve request;
    memset(&request, 0, sizeof request);
    preempt_msg_header_init(&request.header, PREEMPT_MSG_MEM_RESERVE, sizeof request, ++f->request_id);
    memcpy(request.uuid, uuid, 16);
    request.bytes = bytes;
    request.device_total_bytes = total;
    request.device_used_bytes = used;
    if (send_bytes(f, &request, sizeof request) != 0)
      return -1;
    return mem_answer(f, c, f->request_id, atoi(argv[5]));
  }
  say(f, "unknown command %s", c);
  return -1;
}

/* ---------------------------------------------------------------- the script */

static int wait_file(fake *f, const char *path, int timeout_ms) {
  double start = now_ms();
  struct stat info;
  while (stat(path, &info) != 0) {
    if (now_ms() - start >= timeout_ms) {
      say(f, "wait-file %s: timeout", path);
      return -1;
    }
    sleep_ms(2);
  }
  return 0;
}

static int run_command(fake *f, int argc, char **argv) {
  if (argc == 0)
    return 0;
  const char *c = argv[0];
#define NEED(n)                                                                                                        \
  do {                                                                                                                 \
    if (argc < (n)) {                                                                                                  \
      say(f, "%s: missing arguments", c);                                                                              \
      return -1;                                                                                                       \
    }                                                                                                                  \
  } while (0)
  if (strcmp(c, "launch") == 0)
    return cmd_launch(f, argc, argv);
  if (strcmp(c, "wait") == 0) {
    NEED(4);
    return cmd_wait(f, argv[1], argv[2], atoi(argv[3]));
  }
  if (strcmp(c, "ack") == 0) {
    NEED(2);
    return cmd_ack(f, argv[1], argc - 2, argv + 2);
  }
  if (strcmp(c, "play") == 0) {
    NEED(3);
    return cmd_play(f, atof(argv[1]), argc - 2, argv + 2);
  }
  if (strcmp(c, "done") == 0) {
    NEED(2);
    return cmd_done(f, argv[1], argc > 2 && strcmp(argv[2], "quiet") == 0);
  }
  if (strcmp(c, "lease") == 0) {
    if (!f->page)
      return -1;
    say(f, "lease 0x%x", __atomic_load_n(&f->page->lease, __ATOMIC_ACQUIRE));
    return 0;
  }
  if (strcmp(c, "state") == 0) {
    NEED(2);
    int stub = stub_named(f, argv[1]);
    if (stub < 0)
      return -1;
    say(f, "%s: state %s", argv[1], preempt_stub_state_name(load_state(f, stub)));
    return 0;
  }
  if (strcmp(c, "set-priority") == 0) {
    NEED(2);
    return cmd_set_priority(f, (int32_t)atoi(argv[1]));
  }
  if (strcmp(c, "list") == 0)
    return cmd_list(f);
  if (strcmp(c, "job") == 0) {
    NEED(6);
    return cmd_job(f, false, argc, argv);
  }
  if (strcmp(c, "job-end") == 0) {
    NEED(3);
    return cmd_job(f, true, argc, argv);
  }
  if (strcmp(c, "policy") == 0) {
    NEED(2);
    return cmd_policy(f, argv[1], argc > 2 ? argv[2] : NULL);
  }
  if (strcmp(c, "garbage") == 0) {
    NEED(2);
    return cmd_garbage(f, argv[1]);
  }
  if (strcmp(c, "illegal-move") == 0) {
    NEED(3);
    return cmd_illegal(f, argv[1], argv[2]);
  }
  if (strcmp(c, "register") == 0)
    return do_register(f, argc > 1 ? atoi(argv[1]) : 0);
  if (strcmp(c, "register-here") == 0)
    return register_once(f, false) == 0 ? 0 : -1;
  if (strcmp(c, "detach") == 0) {
    NEED(2);
    return cmd_detach(f, argv[1]);
  }
  if (strcmp(c, "connect-many") == 0) {
    NEED(2);
    return cmd_connect_many(f, atoi(argv[1]));
  }
  if (strcmp(c, "flood-garbage") == 0) {
    NEED(2);
    return cmd_flood_garbage(f, atoi(argv[1]));
  }
  if (strncmp(c, "mem-", 4) == 0)
    return cmd_mem(f, argc, argv);
  if (strcmp(c, "wait-closed") == 0) {
    NEED(2);
    return cmd_wait_closed(f, atoi(argv[1]));
  }
  if (strcmp(c, "sleep") == 0) {
    NEED(2);
    sleep_ms(atof(argv[1]));
    return 0;
  }
  if (strcmp(c, "touch") == 0) {
    NEED(2);
    FILE *file = fopen(argv[1], "w");
    return file && fclose(file) == 0 ? 0 : -1;
  }
  if (strcmp(c, "wait-file") == 0) {
    NEED(3);
    return wait_file(f, argv[1], atoi(argv[2]));
  }
  if (strcmp(c, "pidfile") == 0) {
    NEED(2);
    FILE *file = fopen(argv[1], "w");
    if (!file)
      return -1;
    fprintf(file, "%d\n", (int)getpid());
    return fclose(file) == 0 ? 0 : -1;
  }
  if (strcmp(c, "kill") == 0) {
    NEED(2);
    FILE *file = fopen(argv[1], "r");
    int pid = 0;
    if (!file || fscanf(file, "%d", &pid) != 1 || pid <= 1) {
      if (file)
        fclose(file);
      say(f, "kill: no pid in %s", argv[1]);
      return -1;
    }
    fclose(file);
    if (kill(pid, SIGKILL) != 0) {
      say(f, "kill: %s", strerror(errno));
      return -1;
    }
    f->kill_ms = now_ms();
    say(f, "killed the process of %s", argv[1]);
    return 0;
  }
  if (strcmp(c, "exit") == 0) {
    fflush(stdout);
    exit(argc > 1 ? atoi(argv[1]) : 0);
  }
  say(f, "unknown command %s", c);
  return -1;
#undef NEED
}

/* Splits a command into words (spaces and tabs) in place. */
static int split(char *line, char **words, int capacity) {
  int count = 0;
  for (char *word = strtok(line, " \t\r\n"); word && count < capacity; word = strtok(NULL, " \t\r\n"))
    words[count++] = word;
  return count;
}

int main(int argc, char **argv) {
  fake f;
  memset(&f, 0, sizeof f);
  f.fd = -1;
  f.kill_ms = -1;
  f.program = "fake_client";
  const char *env = getenv("PREEMPT_DAEMON_SOCKET");
  f.socket_path = env && env[0] ? env : PREEMPT_DAEMON_SOCKET_DEFAULT;
  bool do_registration = true;
  int i = 1;
  for (; i < argc && strncmp(argv[i], "--", 2) == 0; i++) {
    const char *option = argv[i];
    const char *value = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(option, "--no-register") == 0) {
      do_registration = false;
      continue;
    }
    if (strcmp(option, "--help") == 0) {
      fputs(usage, stdout);
      return 0;
    }
    if (!value) {
      fprintf(stderr, "fake_client: %s needs a value\n%s", option, usage);
      return 2;
    }
    i++;
    if (strcmp(option, "--socket") == 0) {
      f.socket_path = value;
    } else if (strcmp(option, "--tag") == 0) {
      f.tag = value;
    } else if (strcmp(option, "--program") == 0) {
      f.program = value;
    } else if (strcmp(option, "--priority") == 0) {
      f.priority_requested = true;
      f.priority_request = (int32_t)atoi(value);
    } else if (strcmp(option, "--gpu") == 0) {
      const char *colon = strchr(value, ':');
      char hex[40];
      if (!colon || (size_t)(colon - value) >= sizeof hex || f.gpu_count == PREEMPT_DAEMON_MAX_GPUS) {
        fprintf(stderr, "fake_client: --gpu UUIDHEX:SMS[:LIMITS]\n");
        return 2;
      }
      memcpy(hex, value, (size_t)(colon - value));
      hex[colon - value] = '\0';
      if (parse_uuid(hex, f.gpus[f.gpu_count].uuid) != 0) {
        fprintf(stderr, "fake_client: bad uuid %s\n", hex);
        return 2;
      }
      preempt_msg_gpu *gpu = &f.gpus[f.gpu_count++];
      gpu->sm_count = (uint32_t)atoi(colon + 1);
      const char *limits = strchr(colon + 1, ':');
      if (limits && parse_limits(limits + 1, gpu) != 0) {
        fprintf(stderr, "fake_client: bad SM limits %s\n", limits + 1);
        return 2;
      }
    } else {
      fprintf(stderr, "fake_client: unknown option %s\n%s", option, usage);
      return 2;
    }
  }
  if (f.gpu_count == 0) { /* one GPU of 8 SMs, UUID 00..01 */
    f.gpus[0].uuid[15] = 1;
    f.gpus[0].sm_count = 8;
    f.gpu_count = 1;
  }
  if (do_registration ? do_register(&f, 0) != 0 : connect_daemon(&f) != 0) {
    if (!do_registration)
      say(&f, "connect: %s", strerror(errno));
    return 1;
  }
  char *words[32];
  if (i < argc) {
    for (; i < argc; i++) {
      char line[1024];
      snprintf(line, sizeof line, "%s", argv[i]);
      if (run_command(&f, split(line, words, 32), words) != 0)
        return 1;
    }
  } else {
    char line[1024];
    while (fgets(line, sizeof line, stdin))
      if (line[0] != '#' && run_command(&f, split(line, words, 32), words) != 0)
        return 1;
  }
  return 0;
}
