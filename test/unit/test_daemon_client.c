/* test_daemon_client.c: the runtime's preemptd client (runtime-host/daemon_client.c) against an in-test daemon.
 * EffiSha §6.1 (stubs, states), §6.4 (priorities); FLEP §3: launches wait for the node's scheduler. Fake GPU. */
#define _GNU_SOURCE /* memfd_create, accept4 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "fake_gpu.h"
#include "preempt.h"
#include "preempt/daemon_protocol.h"
#include "memory.h"
#include "runtime.h"

/* ---------------------------------------------------------------- the in-test daemon */

enum { ANSWER, SILENT, WRONG_SIZES, FULL_TWICE };

/* What a real preemptd does for one client, through the real codec: REGISTER
 * -> memfd pages + REGISTERED with their fds, SET_PRIORITY -> PRIORITY, MEM_ATTACH -> MEM_ATTACHED, MEM_QUERY ->
 * an empty ledger. The
 * scheduling part is the test itself, writing commands into the page. */
typedef struct fake_daemon {
  char directory[64], path[108];
  int mode;
  int listener, connection;
  pthread_t thread;
  int running, stop;
  int accepts, registers, set_priorities, closes, mem_attaches, mem_queries; /* read with __atomic loads */
  preempt_msg_register last_register;
  int32_t last_priority, limit;
  uint32_t lease; /* the lease word a new client's page starts with */
  uint32_t client_ids;
  preempt_client_page *page; /* the current client's, as the daemon maps it */
  preempt_doorbell_page *doorbell;
  union {
    uint64_t align;
    unsigned char bytes[PREEMPT_DAEMON_MAX_MESSAGE];
  } packet;
} fake_daemon;

static fake_daemon daemon_state = {.listener = -1, .connection = -1};

static int memfd_page(size_t bytes, void **mapping) {
  int fd = memfd_create("preempt-test-page", MFD_CLOEXEC);
  if (fd < 0 || ftruncate(fd, (off_t)bytes) != 0)
    return -1;
  *mapping = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  return *mapping == MAP_FAILED ? -1 : fd;
}

static void daemon_send(fake_daemon *daemon, const void *message, size_t length, const int *fds, int fd_count) {
  struct iovec vector = {.iov_base = (void *)message, .iov_len = length};
  union {
    struct cmsghdr align;
    char bytes[CMSG_SPACE(sizeof(int) * 2)];
  } control;
  struct msghdr header = {.msg_iov = &vector, .msg_iovlen = 1};
  if (fd_count > 0) {
    header.msg_control = control.bytes;
    header.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)fd_count);
    struct cmsghdr *rights = CMSG_FIRSTHDR(&header);
    rights->cmsg_level = SOL_SOCKET;
    rights->cmsg_type = SCM_RIGHTS;
    rights->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)fd_count);
    memcpy(CMSG_DATA(rights), fds, sizeof(int) * (size_t)fd_count);
  }
  if (sendmsg(daemon->connection, &header, MSG_NOSIGNAL) < 0)
    fprintf(stderr, "fake daemon: sendmsg: %s\n", strerror(errno));
}

static int load(int *counter) { return __atomic_load_n(counter, __ATOMIC_ACQUIRE); }

static int32_t clamp_priority(const fake_daemon *daemon, int32_t priority) {
  return priority < PREEMPT_PRIORITY_MIN ? PREEMPT_PRIORITY_MIN : priority > daemon->limit ? daemon->limit : priority;
}

static void daemon_register(fake_daemon *daemon, const preempt_msg *message) {
  daemon->last_register = message->body.register_request;
  if (daemon->mode == SILENT) {
    __atomic_add_fetch(&daemon->registers, 1, __ATOMIC_RELEASE);
    return;
  }
  if (daemon->mode == FULL_TWICE && load(&daemon->registers) < 2) {
    /* As a daemon before issue 41 did: FULL with request id 0 (today's carries the REGISTER's). */
    preempt_msg_status full;
    memset(&full, 0, sizeof full);
    preempt_msg_header_init(&full.header, PREEMPT_MSG_STATUS, sizeof full, 0);
    full.status = PREEMPT_DAEMON_FULL;
    preempt_copy_name(full.message, sizeof full.message, "too many connections");
    __atomic_add_fetch(&daemon->registers, 1, __ATOMIC_RELEASE);
    daemon_send(daemon, &full, sizeof full, NULL, 0);
    return;
  }
  void *page = NULL, *doorbell = NULL;
  int fds[2] = {memfd_page(sizeof(preempt_client_page), &page), memfd_page(sizeof(preempt_doorbell_page), &doorbell)};
  if (fds[0] < 0 || fds[1] < 0) {
    fprintf(stderr, "fake daemon: memfd: %s\n", strerror(errno));
    return;
  }
  preempt_msg_registered reply;
  memset(&reply, 0, sizeof reply);
  preempt_msg_header_init(&reply.header, PREEMPT_MSG_REGISTERED, sizeof reply, message->request_id);
  reply.client_id = ++daemon->client_ids;
  reply.priority = clamp_priority(daemon, message->body.register_request.priority_requested
                                              ? message->body.register_request.priority
                                              : 0);
  reply.priority_limit = daemon->limit;
  reply.stub_count = PREEMPT_STUBS_PER_CLIENT;
  reply.page_bytes = sizeof(preempt_client_page) + (daemon->mode == WRONG_SIZES ? 64 : 0);
  reply.doorbell_bytes = sizeof(preempt_doorbell_page);
  preempt_client_page *client_page = page;
  client_page->page_version = PREEMPT_DAEMON_PROTOCOL_VERSION;
  client_page->client_id = reply.client_id;
  client_page->lease = daemon->lease; /* before the reply, as preemptd writes it */
  daemon->page = client_page; /* the old one stays mapped: the test may still look at it */
  daemon->doorbell = doorbell;
  /* Counted before the reply: the client may check the count as soon as it has it. */
  __atomic_add_fetch(&daemon->registers, 1, __ATOMIC_RELEASE);
  daemon_send(daemon, &reply, sizeof reply, fds, 2);
  close(fds[0]);
  close(fds[1]);
}

static void daemon_packet(fake_daemon *daemon) {
  ssize_t got = recv(daemon->connection, daemon->packet.bytes, sizeof daemon->packet.bytes, 0);
  if (got <= 0) {
    close(daemon->connection);
    daemon->connection = -1;
    __atomic_add_fetch(&daemon->closes, 1, __ATOMIC_RELEASE);
    return;
  }
  preempt_msg message;
  preempt_daemon_status status = preempt_msg_decode(daemon->packet.bytes, (size_t)got, &message);
  if (status != PREEMPT_DAEMON_OK) {
    fprintf(stderr, "fake daemon: the client sent a %s packet\n", preempt_daemon_status_name(status));
    return;
  }
  if (message.type == PREEMPT_MSG_REGISTER) {
    daemon_register(daemon, &message);
  } else if (message.type == PREEMPT_MSG_MEM_ATTACH) {
    preempt_msg_mem_attached reply;
    memset(&reply, 0, sizeof reply);
    preempt_msg_header_init(&reply.header, PREEMPT_MSG_MEM_ATTACHED, sizeof reply, message.request_id);
    reply.client_id = ++daemon->client_ids;
    reply.priority_limit = daemon->limit;
    __atomic_add_fetch(&daemon->mem_attaches, 1, __ATOMIC_RELEASE);
    daemon_send(daemon, &reply, sizeof reply, NULL, 0);
  } else if (message.type == PREEMPT_MSG_MEM_QUERY) {
    preempt_msg_mem_reply reply;
    memset(&reply, 0, sizeof reply);
    preempt_msg_header_init(&reply.header, PREEMPT_MSG_MEM_REPLY, sizeof reply, message.request_id);
    reply.result = PREEMPT_MEM_REPLY_LEDGER;
    /* Whose query this answers, for the test to check (held <= reserved, as the decoder asks). */
    reply.held_bytes = reply.reserved_bytes = message.body.mem_query.uuid[0];
    snprintf(reply.policy, sizeof reply.policy, "fifo");
    __atomic_add_fetch(&daemon->mem_queries, 1, __ATOMIC_RELEASE);
    daemon_send(daemon, &reply, sizeof reply, NULL, 0);
  } else if (message.type == PREEMPT_MSG_SET_PRIORITY) {
    __atomic_store_n(&daemon->last_priority, message.body.set_priority.priority, __ATOMIC_RELEASE);
    preempt_msg_priority reply;
    memset(&reply, 0, sizeof reply);
    preempt_msg_header_init(&reply.header, PREEMPT_MSG_PRIORITY, sizeof reply, message.request_id);
    reply.priority = clamp_priority(daemon, message.body.set_priority.priority);
    reply.priority_limit = daemon->limit;
    __atomic_add_fetch(&daemon->set_priorities, 1, __ATOMIC_RELEASE);
    daemon_send(daemon, &reply, sizeof reply, NULL, 0);
  }
}

static void *daemon_main(void *argument) {
  fake_daemon *daemon = argument;
  while (!__atomic_load_n(&daemon->stop, __ATOMIC_ACQUIRE)) {
    struct pollfd entries[2] = {{.fd = daemon->listener, .events = POLLIN}, {.fd = daemon->connection, .events = POLLIN}};
    if (poll(entries, daemon->connection >= 0 ? 2 : 1, 10) <= 0)
      continue;
    if (entries[0].revents & POLLIN) {
      int connection = accept4(daemon->listener, NULL, NULL, SOCK_CLOEXEC);
      if (connection >= 0) {
        if (daemon->connection >= 0)
          close(daemon->connection);
        daemon->connection = connection;
        __atomic_add_fetch(&daemon->accepts, 1, __ATOMIC_RELEASE);
      }
      continue;
    }
    if (daemon->connection >= 0 && entries[1].revents)
      daemon_packet(daemon);
  }
  return NULL;
}

static void daemon_start(int mode) {
  fake_daemon *daemon = &daemon_state;
  daemon->mode = mode;
  daemon->stop = 0;
  daemon->accepts = daemon->registers = daemon->set_priorities = daemon->closes = 0;
  daemon->mem_attaches = daemon->mem_queries = 0;
  memset(&daemon->last_register, 0, sizeof daemon->last_register);
  daemon->listener = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  struct sockaddr_un address = {.sun_family = AF_UNIX};
  strcpy(address.sun_path, daemon->path);
  unlink(daemon->path);
  if (bind(daemon->listener, (struct sockaddr *)&address, sizeof address) != 0 || listen(daemon->listener, 8) != 0) {
    fprintf(stderr, "fake daemon: bind %s: %s\n", daemon->path, strerror(errno));
    exit(1);
  }
  daemon->running = pthread_create(&daemon->thread, NULL, daemon_main, daemon) == 0;
}

/* The daemon dies: its socket file goes, the client's connection closes. */
static void daemon_stop(void) {
  fake_daemon *daemon = &daemon_state;
  if (!daemon->running)
    return;
  __atomic_store_n(&daemon->stop, 1, __ATOMIC_RELEASE);
  pthread_join(daemon->thread, NULL);
  daemon->running = 0;
  close(daemon->listener);
  daemon->listener = -1;
  if (daemon->connection >= 0)
    close(daemon->connection);
  daemon->connection = -1;
  unlink(daemon->path);
}

/* ---------------------------------------------------------------- the scheduler's part, played by the test */

static preempt_stub *stub_at(int index) { return &daemon_state.page->stubs[index]; }
static uint32_t stub_state(int index) { return __atomic_load_n(&stub_at(index)->state, __ATOMIC_ACQUIRE); }

/* Polls (2 s at most) for a stub state; the agent answers within its 20 us or 100 ms wait. */
static int wait_state(int index, uint32_t state) {
  for (int round = 0; round < 20000; round++) {
    if (stub_state(index) == state)
      return 1;
    usleep(100);
  }
  fprintf(stderr, "stub %d is %s, expected %s\n", index, preempt_stub_state_name(stub_state(index)),
          preempt_stub_state_name(state));
  return 0;
}

/* A daemon command: fields first, then the state (compare-and-swap from `from`), then the wake. */
static void command(int index, uint32_t from, uint32_t to, int all, const preempt_sm_mask *mask) {
  preempt_stub *stub = stub_at(index);
  stub->command_sequence++;
  stub->command_all = (uint32_t)all;
  memset(stub->command_mask, 0, sizeof stub->command_mask);
  if (mask)
    memcpy(stub->command_mask, mask->words, sizeof stub->command_mask);
  uint32_t expected = from;
  CHECK(__atomic_compare_exchange_n(&stub->state, &expected, to, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE));
  preempt_futex_ring(&daemon_state.page->client_wake);
}

static void daemon_free(int index) {
  uint32_t expected = PREEMPT_STUB_DONE;
  CHECK(__atomic_compare_exchange_n(&stub_at(index)->state, &expected, PREEMPT_STUB_FREE, 0, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE));
}

static uint32_t doorbell_count(void) { return __atomic_load_n(&daemon_state.doorbell->doorbell, __ATOMIC_ACQUIRE); }

/* ---------------------------------------------------------------- the runtime's side */

static int stub_a, stub_b;


/* The agent and the relaunch thread call the fake under the runtime's lock: read it under the lock too. */
static int fake_launches(void) {
  preempt_runtime *runtime = preempt_runtime_lock();
  int launches = fake_gpu.launches;
  preempt_runtime_unlock(runtime);
  return launches;
}

static fake_launch last_fake_launch(void) {
  preempt_runtime *runtime = preempt_runtime_lock();
  fake_launch last = fake_gpu.last;
  preempt_runtime_unlock(runtime);
  return last;
}

static int wait_launches(int count) {
  for (int round = 0; round < 20000 && fake_launches() < count; round++)
    usleep(100);
  return fake_launches();
}

/* A word of the fake's "device memory" (a control block), or of a launch record: the agent writes them under the lock. */
static uint32_t locked_word(const uint32_t *word) {
  preempt_runtime *runtime = preempt_runtime_lock();
  uint32_t value = *word;
  preempt_runtime_unlock(runtime);
  return value;
}

/* The test plays the GPU: a launch whose tasks are not all done, whose relaunched CTAs still run
 * (EVICTED waits for relaunch_done_event, the event right behind the relaunch's grid). */
static void keep_running(preempt_launch_id launch) {
  preempt_launch_record *record = fake_launch_record(launch);
  fake_event_set_pending(record->done_event, 1);
  fake_event_set_pending(record->relaunch_done_event, 1);
  fake_event_set_pending(record->resume_event, 1);
}

static void finish(preempt_launch_id launch) {
  preempt_launch_record *record = fake_launch_record(launch);
  fake_event_set_pending(record->done_event, 0);
  fake_event_set_pending(record->relaunch_done_event, 0);
  fake_event_set_pending(record->resume_event, 0);
}

static double seconds_since(const struct timespec *start) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (double)(now.tv_sec - start->tv_sec) + (now.tv_nsec - start->tv_nsec) / 1e9;
}

/* Leaves a known error text behind, to tell whether a later call printed anything. */
static void mark_last_error(void) { preempt_set_priority(99); }
static int last_error_is_mark(void) { return strstr(preempt_last_error(), "preempt_set_priority(99)") != NULL; }

static const preempt_dim3 big_grid = {4096, 3, 2}, block256 = {256, 1, 1}, small_grid = {8, 1, 1}, block32 = {32, 1, 1};

/* Registration, held launches and every command, completion, stub reuse, the daemon's death and return, priorities. */
static void test_scheduled_launches(void) {
  setenv("PREEMPT_PRIORITY", "5", 1);
  setenv("PREEMPT_WEIGHT", "3", 1);
  fake_gpu_reset(PREEMPT_KERNEL_ABI_VERSION);
  fake_gpu.device_count = 2;
  fake_gpu.elapsed_ms = 0.01f; /* what a sampled launch would measure */
  daemon_state.limit = 10;
  daemon_start(ANSWER);
  long long first = 1234, second = 5;
  void *args[] = {&first, &second};
  void *app_stream = &first;

  /* An unconverted kernel runs as written and does not register. */
  fake_gpu.marker_abi = 0;
  preempt_kernel_desc plain = fake_kernel_desc(&stub_b, "_Z5plainv", 0);
  CHECK_EQ_U64(preempt_launch_kernel(&plain, small_grid, block32, NULL, 0, app_stream), 0);
  CHECK_EQ_U64(fake_launches(), 1);
  CHECK_EQ_U64(load(&daemon_state.accepts), 0);
  fake_gpu.marker_abi = PREEMPT_KERNEL_ABI_VERSION;

  /* The first converted launch registers: program, both devices' UUIDs and SM counts, PREEMPT_PRIORITY. */
  preempt_kernel_desc desc = fake_kernel_desc(&stub_a, "_Z3addPfS_S_i", 2);
  fake_gpu.expected_params = 2;
  CHECK_EQ_U64(preempt_launch_kernel(&desc, big_grid, block256, args, 64, app_stream), 0);
  preempt_launch_id launch = preempt_last_launch();
  CHECK(launch != 0);
  keep_running(launch); /* as a real GPU would: its tasks are not done */
  CHECK_EQ_U64(load(&daemon_state.registers), 1);
  const preempt_msg_register *request = &daemon_state.last_register;
  CHECK_EQ_U64(request->gpu_count, 2);
  for (int device = 0; device < 2; device++) {
    unsigned char uuid[16];
    fake_device_uuid(device, uuid);
    CHECK(memcmp(request->gpus[device].uuid, uuid, 16) == 0);
    CHECK_EQ_U64(request->gpus[device].sm_count, 132);
  }
  CHECK_EQ_U64(request->priority_requested, 1);
  CHECK_EQ_U64(request->priority, 5);
  CHECK(strncmp(request->program, "test_daemon", 11) == 0);
  int granted = -99, limit = -99;
  CHECK_EQ_U64(preempt_get_priority(&granted, &limit), PREEMPT_OK);
  CHECK(granted == 5 && limit == 10);

  /* Held: everything enqueued but the grid; the stub is READY with the launch's fields. */
  CHECK_EQ_U64(fake_launches(), 1);
  CHECK_EQ_U64(fake_gpu.stream_waits, 1);
  CHECK(fake_gpu.last_wait_stream == app_stream);
  CHECK_EQ_U64(fake_gpu.event_records, 3); /* start, first wave (empty), completion */
  CHECK(wait_state(0, PREEMPT_STUB_READY));
  preempt_stub *stub = stub_at(0);
  CHECK_EQ_U64(stub->launch_sequence, 1);
  CHECK_EQ_U64(stub->gpu, 0);
  CHECK_EQ_U64(stub->priority, 5);
  CHECK_EQ_U64(stub->weight, 3);
  CHECK(stub->grid[0] == 4096 && stub->grid[1] == 3 && stub->grid[2] == 2);
  CHECK(stub->block[0] == 256 && stub->block[1] == 1 && stub->block[2] == 1);
  CHECK_EQ_U64(stub->persistent_ctas, 8 * 132);
  CHECK_EQ_U64(stub->ctas_per_sm, 8);
  CHECK_EQ_U64(stub->shared_bytes, 64);
  CHECK_EQ_U64(stub->kernel_key, preempt_kernel_key("_Z3addPfS_S_i"));
  CHECK(strcmp(stub->name, "_Z3addPfS_S_i") == 0);
  CHECK(preempt_stub_validate(stub, 2, NULL) == PREEMPT_DAEMON_OK);
  CHECK(doorbell_count() >= 1);
  /* To the application a held launch is evicted; resuming it is the daemon's call. */
  preempt_launch_state state;
  CHECK_EQ_U64(preempt_query(launch, &state), PREEMPT_OK);
  CHECK_EQ_U64(state, PREEMPT_LAUNCH_EVICTED);
  CHECK_EQ_U64(preempt_resume(launch), PREEMPT_OK);
  CHECK_EQ_U64(preempt_resume_stream(app_stream), PREEMPT_OK);
  usleep(20000);
  CHECK_EQ_U64(fake_launches(), 1);
  CHECK_EQ_U64(stub_state(0), PREEMPT_STUB_READY);

  /* TORUN: the persistent grid starts (on the resume stream, same values and generation), then RUNNING.
   * Nothing was cleared on the device for it, so its relaunch is not ordered after the control stream. */
  int ordered_before = fake_gpu.stream_event_waits;
  command(0, PREEMPT_STUB_READY, PREEMPT_STUB_TORUN, 1, NULL);
  CHECK(wait_state(0, PREEMPT_STUB_RUNNING));
  CHECK_EQ_U64(fake_launches(), 2);
  CHECK_EQ_U64(fake_gpu.stream_event_waits, ordered_before);
  CHECK_EQ_U64(locked_word((const uint32_t *)&fake_gpu.set_device_calls), 1); /* the agent selected the device */
  fake_launch last = last_fake_launch();
  CHECK_EQ_U64(last.grid.x, 8 * 132);
  CHECK(last.persistent && last.stream != app_stream);
  CHECK_EQ_U64(last.first_param, 1234);
  CHECK_EQ_U64(last.generation, (uint32_t)launch);
  CHECK(last.grid_param[0] == 4096 && last.grid_param[1] == 3 && last.grid_param[2] == 2);
  preempt_control_block *control = last.control;
  CHECK_EQ_U64(preempt_query(launch, &state), PREEMPT_OK);
  CHECK_EQ_U64(state, PREEMPT_LAUNCH_RUNNING);

  /* TOEVICT every SM: the yield mask is written at once; READY only once no CTA is left. */
  command(0, PREEMPT_STUB_RUNNING, PREEMPT_STUB_TOEVICT, 1, NULL);
  int written = 0;
  for (int round = 0; round < 20000 && !written; round++, usleep(100))
    written = locked_word(&control->yield_mask[0]) == 0xffffffffu &&
              locked_word(&control->yield_mask[PREEMPT_YIELD_MASK_WORDS - 1]) == 0xffffffffu;
  CHECK(written);
  usleep(5000);
  CHECK_EQ_U64(stub_state(0), PREEMPT_STUB_TOEVICT); /* the relaunched CTAs are still there */
  /* Their grid has ended; its publisher behind it has not run yet (resume_event): evicted all the same. */
  fake_event_set_pending(fake_launch_record(launch)->relaunch_done_event, 0);
  CHECK(wait_state(0, PREEMPT_STUB_READY));
  CHECK_EQ_U64(stub->evictions_done, 1);
  CHECK(stub->last_eviction_ns >= 5000000 && stub->last_eviction_ns < 2000000000);
  CHECK_EQ_U64(preempt_query(launch, &state), PREEMPT_OK);
  CHECK_EQ_U64(state, PREEMPT_LAUNCH_EVICTED);

  /* TORUN after a full eviction: a full grid again. */
  keep_running(launch);
  command(0, PREEMPT_STUB_READY, PREEMPT_STUB_TORUN, 1, NULL);
  CHECK(wait_state(0, PREEMPT_STUB_RUNNING));
  CHECK_EQ_U64(wait_launches(3), 3);
  CHECK_EQ_U64(last_fake_launch().grid.x, 8 * 132);
  CHECK(locked_word(&control->yield_mask[0]) == 0 && locked_word(&control->yield_mask[7]) == 0);

  /* TOEVICT SMs 3 and 40: exactly those bits, RUNNING at once. */
  preempt_sm_mask two = {{0}};
  two.words[0] = 1u << 3;
  two.words[1] = 1u << 8;
  command(0, PREEMPT_STUB_RUNNING, PREEMPT_STUB_TOEVICT, 0, &two);
  CHECK(wait_state(0, PREEMPT_STUB_RUNNING));
  preempt_launch_record *record = fake_launch_record(launch);
  for (int word = 0; word < PREEMPT_YIELD_MASK_WORDS; word++) {
    CHECK_EQ_U64(locked_word(&control->yield_mask[word]), two.words[word]);
    CHECK_EQ_U64(locked_word(&record->yield_mask[word]), two.words[word]);
  }
  CHECK_EQ_U64(stub->evictions_done, 1);
  CHECK_EQ_U64(preempt_query(launch, &state), PREEMPT_OK);
  CHECK_EQ_U64(state, PREEMPT_LAUNCH_EVICTING);

  /* TORUN naming SM 3 only: that SM is refilled at the kernel's occupancy; SM 40 stays evicted. */
  preempt_sm_mask sm3 = {{0}};
  sm3.words[0] = 1u << 3;
  command(0, PREEMPT_STUB_RUNNING, PREEMPT_STUB_TORUN, 0, &sm3);
  CHECK(wait_state(0, PREEMPT_STUB_RUNNING));
  CHECK_EQ_U64(wait_launches(4), 4);
  CHECK_EQ_U64(last_fake_launch().grid.x, 8);
  CHECK(locked_word(&control->yield_mask[0]) == 0 && locked_word(&control->yield_mask[1]) == (1u << 8));

  /* Completion (the other SMs' CTAs did every task): DONE, the leftover bit cleared so the block can be reused. */
  uint32_t rings = doorbell_count();
  finish(launch);
  CHECK(wait_state(0, PREEMPT_STUB_DONE));
  CHECK(doorbell_count() > rings);
  CHECK_EQ_U64(locked_word(&control->yield_mask[1]), 0);
  CHECK_EQ_U64(wait_launches(5), 5); /* SM 40's refill: its CTAs find no task and leave */
  CHECK_EQ_U64(last_fake_launch().grid.x, 8);
  CHECK_EQ_U64(stub->evictions_done, 1);
  CHECK_EQ_U64(preempt_query(launch, &state), PREEMPT_OK);
  CHECK_EQ_U64(state, PREEMPT_LAUNCH_DONE);

  /* No task length from this launch: held, its first wave had no grid, and its relaunches were evicted. */
  preempt_kernel_info info;
  CHECK_EQ_U64(preempt_get_kernel_info(&desc, &info), PREEMPT_OK);
  CHECK(info.task_microseconds == 0);

  /* No stub is reused before the daemon frees it: the next launch takes stub 1. */
  CHECK_EQ_U64(preempt_launch_kernel(&desc, big_grid, block256, args, 64, app_stream), 0);
  preempt_launch_id second_launch = preempt_last_launch();
  CHECK(wait_state(1, PREEMPT_STUB_READY));
  CHECK_EQ_U64(stub_state(0), PREEMPT_STUB_DONE);
  daemon_free(0);
  CHECK_EQ_U64(preempt_launch_kernel(&desc, big_grid, block256, args, 64, app_stream), 0);
  CHECK(wait_state(0, PREEMPT_STUB_READY));
  CHECK_EQ_U64(stub->launch_sequence, 2);

  /* A launch still finishing when the daemon evicts it: TOEVICT -> DONE. */
  keep_running(second_launch);
  command(1, PREEMPT_STUB_READY, PREEMPT_STUB_TORUN, 1, NULL);
  CHECK(wait_state(1, PREEMPT_STUB_RUNNING));
  CHECK_EQ_U64(wait_launches(6), 6);
  command(1, PREEMPT_STUB_RUNNING, PREEMPT_STUB_TOEVICT, 1, NULL);
  usleep(5000);
  CHECK_EQ_U64(stub_state(1), PREEMPT_STUB_TOEVICT);
  finish(second_launch);
  CHECK(wait_state(1, PREEMPT_STUB_DONE));
  CHECK_EQ_U64(stub_at(1)->evictions_done, 0);
  int launches = wait_launches(7); /* the mask cleared for the block's next launch */
  CHECK_EQ_U64(launches, 7);
  daemon_free(1);

  /* Launches wait in PREP, unseen by the daemon, until the work ahead of them is done. */
  fake_gpu.events_pending = 1;
  CHECK_EQ_U64(preempt_launch_kernel(&desc, big_grid, block256, args, 64, app_stream), 0);
  preempt_launch_id waiting = preempt_last_launch();
  keep_running(waiting);
  usleep(20000);
  CHECK_EQ_U64(stub_state(1), PREEMPT_STUB_PREP);
  preempt_runtime *runtime = preempt_runtime_lock();
  fake_gpu.events_pending = 0;
  preempt_runtime_unlock(runtime);
  CHECK(wait_state(1, PREEMPT_STUB_READY));

  /* Every stub taken: the next launch runs at once, unscheduled, and the runtime says so once. */
  for (int index = 2; index < PREEMPT_STUBS_PER_CLIENT; index++)
    CHECK_EQ_U64(preempt_launch_kernel(&desc, big_grid, block256, args, 64, app_stream), 0);
  CHECK(wait_state(PREEMPT_STUBS_PER_CLIENT - 1, PREEMPT_STUB_READY));
  CHECK_EQ_U64(fake_launches(), launches);
  CHECK_EQ_U64(preempt_launch_kernel(&desc, big_grid, block256, args, 64, app_stream), 0);
  CHECK_EQ_U64(fake_launches(), launches + 1);
  CHECK(last_fake_launch().stream == app_stream);
  CHECK(strstr(preempt_last_error(), "stubs of this process are in use") != NULL);
  mark_last_error();
  CHECK_EQ_U64(preempt_launch_kernel(&desc, big_grid, block256, args, 64, app_stream), 0);
  CHECK(last_error_is_mark());
  launches += 2;

  /* Priorities: out of range refused; in range sent, and the daemon's clamp is what the API reads. */
  CHECK_EQ_U64(preempt_set_priority(21), PREEMPT_ERROR_INVALID_ARGUMENT);
  CHECK_EQ_U64(preempt_set_priority(-21), PREEMPT_ERROR_INVALID_ARGUMENT);
  CHECK_EQ_U64(load(&daemon_state.set_priorities), 0);
  CHECK_EQ_U64(preempt_set_priority(15), PREEMPT_OK);
  CHECK_EQ_U64(load(&daemon_state.set_priorities), 1);
  CHECK_EQ_U64(__atomic_load_n(&daemon_state.last_priority, __ATOMIC_ACQUIRE), 15);
  CHECK_EQ_U64(preempt_get_priority(&granted, &limit), PREEMPT_OK);
  CHECK(granted == 10 && limit == 10);
  CHECK_EQ_U64(preempt_set_priority(-3), PREEMPT_OK);
  CHECK_EQ_U64(preempt_get_priority(&granted, NULL), PREEMPT_OK);
  CHECK_EQ_U64(granted, (uint64_t)-3);

  /* The daemon dies: every held launch runs unscheduled (63 READY, one of them waiting before in PREP). */
  int held = 0;
  for (int index = 0; index < PREEMPT_STUBS_PER_CLIENT; index++)
    held += stub_state(index) == PREEMPT_STUB_READY;
  CHECK_EQ_U64(held, PREEMPT_STUBS_PER_CLIENT);
  daemon_stop();
  CHECK_EQ_U64(wait_launches(launches + held), launches + held);
  launches += held;
  CHECK_EQ_U64(preempt_query(waiting, &state), PREEMPT_OK);
  CHECK(state == PREEMPT_LAUNCH_RUNNING); /* resumed; still running to the fake */
  CHECK_EQ_U64(preempt_get_priority(&granted, &limit), PREEMPT_ERROR_UNSUPPORTED);
  /* New launches go straight to the GPU. */
  CHECK_EQ_U64(preempt_launch_kernel(&desc, big_grid, block256, args, 64, app_stream), 0);
  CHECK_EQ_U64(fake_launches(), launches + 1);
  CHECK(last_fake_launch().stream == app_stream);
  launches++;

  /* The daemon comes back: registered again within the 500 ms retry, with the priority last asked for. */
  struct timespec start;
  clock_gettime(CLOCK_MONOTONIC, &start);
  daemon_start(ANSWER);
  for (int round = 0; round < 300 && load(&daemon_state.registers) == 0; round++)
    usleep(10000);
  CHECK_EQ_U64(load(&daemon_state.registers), 1);
  CHECK(seconds_since(&start) < 1.5);
  CHECK_EQ_U64(daemon_state.last_register.priority_requested, 1);
  CHECK_EQ_U64(daemon_state.last_register.priority, (uint64_t)-3);
  for (int round = 0; round < 300 && preempt_get_priority(&granted, &limit) != PREEMPT_OK; round++)
    usleep(1000);
  CHECK_EQ_U64(preempt_get_priority(&granted, &limit), PREEMPT_OK);
  CHECK_EQ_U64(preempt_launch_kernel(&desc, big_grid, block256, args, 64, app_stream), 0);
  CHECK(wait_state(0, PREEMPT_STUB_READY));
  CHECK_EQ_U64(fake_launches(), launches);

  /* Shutdown: the held launch runs, the connection closes, the agent stops. */
  preempt_shutdown();
  CHECK_EQ_U64(fake_launches(), launches + 1);
  for (int round = 0; round < 1000 && load(&daemon_state.closes) == 0; round++)
    usleep(1000);
  CHECK_EQ_U64(load(&daemon_state.closes), 1);
  daemon_stop();
  unsetenv("PREEMPT_PRIORITY");
  unsetenv("PREEMPT_WEIGHT");
}

/* Held launches hold their streams: at most half the hardware queues, like evictions. An eviction the
 * runtime refuses for that reason leaves the launch TOEVICT until it finishes (never RUNNING). */
static void test_held_stream_limit(void) {
  setenv("CUDA_DEVICE_MAX_CONNECTIONS", "4", 1);
  fake_gpu_reset(PREEMPT_KERNEL_ABI_VERSION);
  daemon_state.limit = 0;
  daemon_start(ANSWER);
  preempt_kernel_desc desc = fake_kernel_desc(&stub_a, "_Z1kv", 0);
  fake_gpu.expected_params = 0;
  fake_gpu.elapsed_ms = 0.01f;
  long long streams[4];
  /* Stream 2's launch runs: its stream is not held. */
  CHECK_EQ_U64(preempt_launch_kernel(&desc, small_grid, block32, NULL, 0, &streams[2]), 0);
  preempt_launch_id running = preempt_last_launch();
  keep_running(running);
  CHECK(wait_state(0, PREEMPT_STUB_READY));
  command(0, PREEMPT_STUB_READY, PREEMPT_STUB_TORUN, 1, NULL);
  CHECK(wait_state(0, PREEMPT_STUB_RUNNING));
  CHECK_EQ_U64(wait_launches(1), 1);
  /* Streams 0 and 1 held: half of the 4 queues. */
  for (int index = 0; index < 2; index++)
    CHECK_EQ_U64(preempt_launch_kernel(&desc, small_grid, block32, NULL, 0, &streams[index]), 0);
  CHECK(wait_state(2, PREEMPT_STUB_READY));
  CHECK_EQ_U64(fake_launches(), 1);
  /* A third stream is not held: the launch runs at once, said once. */
  CHECK_EQ_U64(preempt_launch_kernel(&desc, small_grid, block32, NULL, 0, &streams[3]), 0);
  CHECK_EQ_U64(fake_launches(), 2);
  CHECK(strstr(preempt_last_error(), "hardware-queue") != NULL);
  CHECK_EQ_U64(stub_state(3), PREEMPT_STUB_FREE);
  /* A stream already held takes more held launches. */
  CHECK_EQ_U64(preempt_launch_kernel(&desc, small_grid, block32, NULL, 0, &streams[0]), 0);
  CHECK(wait_state(3, PREEMPT_STUB_READY));
  CHECK_EQ_U64(fake_launches(), 2);
  /* Evicting stream 2's launch would hold a third stream: refused, so it stays TOEVICT until it is done. */
  command(0, PREEMPT_STUB_RUNNING, PREEMPT_STUB_TOEVICT, 1, NULL);
  usleep(20000);
  CHECK_EQ_U64(stub_state(0), PREEMPT_STUB_TOEVICT);
  CHECK_EQ_U64(locked_word(&fake_launch_record(running)->yield_mask[0]), 0);
  finish(running);
  CHECK(wait_state(0, PREEMPT_STUB_DONE));
  /* Its one relaunch ran the whole grid undisturbed: the task length sample. 0.01 ms for 8 tasks on 8
   * CTAs is 10 us a task: the next launch checks every 20 us / 10 us = 2 tasks. */
  CHECK_EQ_U64(preempt_launch_kernel(&desc, small_grid, block32, NULL, 0, &streams[0]), 0);
  preempt_kernel_info info;
  CHECK_EQ_U64(preempt_get_kernel_info(&desc, &info), PREEMPT_OK);
  CHECK(info.task_microseconds > 9.99 && info.task_microseconds < 10.01);
  CHECK_EQ_U64(info.check_interval, 2);
  CHECK(wait_state(4, PREEMPT_STUB_READY));
  preempt_shutdown();
  CHECK_EQ_U64(fake_launches(), 6); /* the four held ones run */
  daemon_stop();
  setenv("CUDA_DEVICE_MAX_CONNECTIONS", "32", 1); /* what the runtime sets at load */
}

/* Held in its own stream (gpu.h host_words_alloc): the EffiSha mix under MPS stalled when a held launch's first run
 * was a relaunch on another stream, behind the held stream's own wait in a shared hardware queue. Now the grid is
 * enqueued at once in the application's stream behind a wait on the launch's go word; TORUN stores the generation
 * there and launches nothing; shutdown releases a launch still held. */
static uint32_t go_words_set(uint32_t value) {
  uint32_t count = 0;
  for (uint32_t slot = 0; fake_gpu.last_host_words && slot < PREEMPT_POOL_FIRST_SLOTS; slot++)
    count += locked_word(&fake_gpu.last_host_words[slot]) == value;
  return count;
}

static void test_go_held_launches(void) {
  fake_gpu_reset(PREEMPT_KERNEL_ABI_VERSION);
  fake_gpu.host_words = 1;
  fake_gpu.elapsed_ms = 0.01f;
  daemon_state.limit = 0;
  daemon_start(ANSWER);
  preempt_kernel_desc desc = fake_kernel_desc(&stub_a, "_Z1kv", 0);
  fake_gpu.expected_params = 0;
  long long stream_a = 0, stream_b = 0;
  CHECK_EQ_U64(preempt_launch_kernel(&desc, big_grid, block256, NULL, 0, &stream_a), 0);
  preempt_launch_id launch = preempt_last_launch();
  CHECK(launch != 0);
  keep_running(launch);
  CHECK(wait_state(0, PREEMPT_STUB_READY));
  /* The grid is in the application's stream already, behind the go wait, then the wait on done_generation. */
  CHECK_EQ_U64(fake_gpu.host_words_allocs, 1);
  CHECK_EQ_U64(fake_launches(), 1);
  fake_launch last = last_fake_launch();
  CHECK(last.persistent && last.stream == &stream_a);
  CHECK_EQ_U64(last.generation, (uint32_t)launch);
  CHECK_EQ_U64(last.relaunched, 0);
  CHECK_EQ_U64(fake_gpu.stream_waits, 2);
  CHECK(fake_gpu.last_wait_stream == &stream_a);
  CHECK_EQ_U64(go_words_set((uint32_t)launch), 0);
  preempt_launch_state state;
  CHECK_EQ_U64(preempt_query(launch, &state), PREEMPT_OK);
  CHECK_EQ_U64(state, PREEMPT_LAUNCH_EVICTED); /* held: evicted, to the application */
  /* TORUN: a store of the generation to its word; no relaunch, nothing written on the control stream. */
  int mask_writes = fake_gpu.mask_writes;
  command(0, PREEMPT_STUB_READY, PREEMPT_STUB_TORUN, 1, NULL);
  CHECK(wait_state(0, PREEMPT_STUB_RUNNING));
  CHECK_EQ_U64(go_words_set((uint32_t)launch), 1);
  CHECK_EQ_U64(fake_launches(), 1);
  CHECK_EQ_U64(fake_gpu.publishes, 0);
  CHECK_EQ_U64(fake_gpu.mask_writes, mask_writes);
  CHECK_EQ_U64(preempt_query(launch, &state), PREEMPT_OK);
  CHECK_EQ_U64(state, PREEMPT_LAUNCH_RUNNING);
  /* Evicted now, it is an ordinary launch: the mask is written and a later TORUN relaunches. */
  command(0, PREEMPT_STUB_RUNNING, PREEMPT_STUB_TOEVICT, 1, NULL);
  CHECK(wait_state(0, PREEMPT_STUB_READY));
  CHECK(fake_gpu.mask_writes > mask_writes);
  command(0, PREEMPT_STUB_READY, PREEMPT_STUB_TORUN, 1, NULL);
  CHECK(wait_state(0, PREEMPT_STUB_RUNNING));
  CHECK_EQ_U64(wait_launches(2), 2);
  CHECK(last_fake_launch().stream != &stream_a);
  finish(launch);
  CHECK(wait_state(0, PREEMPT_STUB_DONE));
  /* A launch still held at shutdown runs: its word is stored, no grid added. */
  CHECK_EQ_U64(preempt_launch_kernel(&desc, big_grid, block256, NULL, 0, &stream_b), 0);
  preempt_launch_id second = preempt_last_launch();
  CHECK(wait_state(1, PREEMPT_STUB_READY));
  CHECK_EQ_U64(fake_launches(), 3);
  /* Generations count per slot: the first launch's word may hold the same number. */
  uint32_t released = go_words_set((uint32_t)second);
  preempt_shutdown();
  CHECK_EQ_U64(go_words_set((uint32_t)second), released + 1);
  CHECK_EQ_U64(fake_launches(), 3);
  daemon_stop();
}

/* A launch whose grid fits in one wave runs the kernel's unconverted copy only while no daemon schedules the
 * process: under preemptd it is held like any converted launch; once the daemon is gone, the copy runs. */
static void test_one_wave_launches(void) {
  fake_gpu_reset(PREEMPT_KERNEL_ABI_VERSION);
  fake_gpu.has_original = 1;
  daemon_state.limit = 0;
  daemon_start(ANSWER);
  preempt_kernel_desc desc = fake_kernel_desc(&stub_a, "_Z1kv", 0);
  fake_gpu.expected_params = 0;
  long long stream;
  CHECK_EQ_U64(preempt_launch_kernel(&desc, small_grid, block32, NULL, 0, &stream), 0);
  preempt_launch_id launch = preempt_last_launch();
  CHECK(launch != 0);
  if (launch)
    keep_running(launch);
  CHECK_EQ_U64(load(&daemon_state.registers), 1);
  CHECK(wait_state(0, PREEMPT_STUB_READY));
  CHECK_EQ_U64(fake_launches(), 0); /* held: neither the grid nor the copy */
  CHECK_EQ_U64(fake_gpu.stream_waits, 1);
  CHECK_EQ_U64(stub_at(0)->persistent_ctas, 8);
  /* The daemon dies: the held launch runs unscheduled, in the persistent form; the next one runs the copy. */
  daemon_stop();
  CHECK_EQ_U64(wait_launches(1), 1);
  CHECK(last_fake_launch().persistent);
  if (launch)
    finish(launch);
  CHECK_EQ_U64(preempt_launch_kernel(&desc, small_grid, block32, NULL, 0, &stream), 0);
  CHECK_EQ_U64(fake_launches(), 2);
  fake_launch last = last_fake_launch();
  CHECK(last.original && last.grid.x == small_grid.x && last.stream == &stream);
  CHECK_EQ_U64(preempt_last_launch(), 0);
  preempt_kernel_info info;
  CHECK_EQ_U64(preempt_get_kernel_info(&desc, &info), PREEMPT_OK);
  CHECK(info.launches == 2 && info.one_wave_launches == 1);
  preempt_shutdown();
}

/* A kernel that ends after a partial eviction (its other SMs did every task) is answered DONE by
 * polling, with no command to wake the agent: within milliseconds, not after the 100 ms idle wait
 * (on the H100 a missed poll here kept a finished kernel's SMs from the next one for 100 ms). */
static void test_completion_after_partial_eviction(void) {
  fake_gpu_reset(PREEMPT_KERNEL_ABI_VERSION);
  daemon_state.limit = 0;
  daemon_start(ANSWER);
  preempt_kernel_desc desc = fake_kernel_desc(&stub_a, "_Z1kv", 0);
  fake_gpu.expected_params = 0;
  long long stream;
  CHECK_EQ_U64(preempt_launch_kernel(&desc, small_grid, block32, NULL, 0, &stream), 0);
  preempt_launch_id launch = preempt_last_launch();
  keep_running(launch);
  CHECK(wait_state(0, PREEMPT_STUB_READY));
  command(0, PREEMPT_STUB_READY, PREEMPT_STUB_TORUN, 1, NULL);
  CHECK(wait_state(0, PREEMPT_STUB_RUNNING));
  preempt_sm_mask one = {{0}};
  one.words[0] = 1u << 5;
  command(0, PREEMPT_STUB_RUNNING, PREEMPT_STUB_TOEVICT, 0, &one);
  CHECK(wait_state(0, PREEMPT_STUB_RUNNING));
  usleep(5000); /* the agent is back in its wait */
  struct timespec start;
  clock_gettime(CLOCK_MONOTONIC, &start);
  finish(launch);
  CHECK(wait_state(0, PREEMPT_STUB_DONE));
  double waited = seconds_since(&start);
  CHECK(waited < 0.05);
  if (waited >= 0.05)
    fprintf(stderr, "DONE came %.1f ms after the kernel ended\n", waited * 1e3);
  preempt_shutdown();
  daemon_stop();
}

/* On a lease (no other process has work on the GPU): a long launch starts at once (its persistent grid on the
 * application's stream, no hold) and its stub says RUNNING, so the daemon can still evict it: TOEVICT works as for a
 * launch it ran. A short launch runs as written and takes no stub. Without the lease a launch is held again. */
static void test_lease(void) {
  fake_gpu_reset(PREEMPT_KERNEL_ABI_VERSION);
  daemon_state.limit = 0;
  daemon_state.lease = 1; /* the client's GPU 0 */
  daemon_start(ANSWER);
  preempt_kernel_desc desc = fake_kernel_desc(&stub_a, "_Z1kv", 0);
  fake_gpu.expected_params = 0;
  long long stream;
  /* Every event pending until the launch is known to be running: the agent polls a RUNNING stub at once, and would
   * answer DONE for a launch whose completion event the fake says has fired. */
  fake_gpu.events_pending = 1;
  CHECK_EQ_U64(preempt_launch_kernel(&desc, big_grid, block256, NULL, 0, &stream), 0);
  preempt_launch_id launch = preempt_last_launch();
  CHECK(launch != 0);
  keep_running(launch);
  fake_gpu.events_pending = 0;
  CHECK_EQ_U64(fake_launches(), 1);
  fake_launch last = last_fake_launch();
  CHECK(last.persistent && last.stream == &stream && last.grid.x == 8 * 132);
  CHECK_EQ_U64(stub_state(0), PREEMPT_STUB_RUNNING);
  CHECK(preempt_stub_validate(stub_at(0), 2, NULL) == PREEMPT_DAEMON_OK);
  preempt_launch_state state;
  CHECK_EQ_U64(preempt_query(launch, &state), PREEMPT_OK);
  CHECK_EQ_U64(state, PREEMPT_LAUNCH_RUNNING);
  /* Beside it a second long launch is held, lease or not: in the daemon's books the first has the GPU. */
  CHECK_EQ_U64(preempt_launch_kernel(&desc, big_grid, block256, NULL, 0, &stream), 0);
  preempt_launch_id second = preempt_last_launch();
  keep_running(second);
  CHECK(wait_state(1, PREEMPT_STUB_READY));
  CHECK_EQ_U64(fake_launches(), 1);
  /* The daemon evicts it like any running launch: READY once no CTA is left, then held until TORUN. */
  command(0, PREEMPT_STUB_RUNNING, PREEMPT_STUB_TOEVICT, 1, NULL);
  preempt_control_block *control = fake_launch_record(launch)->control;
  int written = 0;
  for (int round = 0; round < 20000 && !written; round++, usleep(100))
    written = locked_word(&control->yield_mask[0]) == 0xffffffffu;
  CHECK(written);
  fake_event_set_pending(fake_launch_record(launch)->wave_done_event, 0);
  CHECK(wait_state(0, PREEMPT_STUB_READY));
  command(0, PREEMPT_STUB_READY, PREEMPT_STUB_TORUN, 1, NULL);
  CHECK(wait_state(0, PREEMPT_STUB_RUNNING));
  CHECK_EQ_U64(wait_launches(2), 2);
  finish(launch);
  CHECK(wait_state(0, PREEMPT_STUB_DONE));
  command(1, PREEMPT_STUB_READY, PREEMPT_STUB_TORUN, 1, NULL);
  CHECK(wait_state(1, PREEMPT_STUB_RUNNING));
  CHECK_EQ_U64(wait_launches(3), 3);
  finish(second);
  CHECK(wait_state(1, PREEMPT_STUB_DONE));
  /* A launch held beside another, whose stream reaches it once nothing else of the process is unfinished, is
   * started by the agent on the lease (its first run, a relaunch) and said RUNNING: no decision to wait for. The
   * fake daemon frees no stub: these take stubs 2 and 3. */
  fake_gpu.events_pending = 1; /* as above: running until the test says otherwise */
  CHECK_EQ_U64(preempt_launch_kernel(&desc, big_grid, block256, NULL, 0, &stream), 0);
  preempt_launch_id running = preempt_last_launch();
  keep_running(running);
  CHECK_EQ_U64(stub_state(2), PREEMPT_STUB_RUNNING);
  /* Still all pending: the next launch's start event is not reached yet. */
  CHECK_EQ_U64(preempt_launch_kernel(&desc, big_grid, block256, NULL, 0, &stream), 0);
  preempt_launch_id queued = preempt_last_launch();
  keep_running(queued);
  fake_event_set_pending(fake_launch_record(queued)->ready_event, 1);
  fake_gpu.events_pending = 0;
  usleep(2000);
  CHECK_EQ_U64(stub_state(3), PREEMPT_STUB_PREP);
  int before = fake_launches();
  finish(running);
  CHECK(wait_state(2, PREEMPT_STUB_DONE));
  fake_event_set_pending(fake_launch_record(queued)->ready_event, 0);
  CHECK(wait_state(3, PREEMPT_STUB_RUNNING));
  CHECK_EQ_U64(wait_launches(before + 1), before + 1);
  CHECK(last_fake_launch().persistent);
  finish(queued);
  CHECK(wait_state(3, PREEMPT_STUB_DONE));
  /* A short launch on the lease (PREEMPT_LONG_US is read when the runtime starts: a new one, registered again):
   * as written, no stub. */
  preempt_shutdown();
  unsetenv("PREEMPT_LONG_US");
  fake_gpu.has_original = 1;
  preempt_kernel_desc shorter = fake_kernel_desc(&stub_b, "_Z1sv", 0);
  CHECK_EQ_U64(preempt_launch_kernel(&shorter, big_grid, block256, NULL, 0, &stream), 0);
  CHECK_EQ_U64(load(&daemon_state.registers), 2);
  CHECK(last_fake_launch().as_written);
  CHECK_EQ_U64(preempt_last_launch(), 0);
  CHECK_EQ_U64(stub_state(0), PREEMPT_STUB_FREE);
  /* No lease: a long launch is held (READY, no grid) as before. */
  preempt_shutdown();
  setenv("PREEMPT_LONG_US", "0", 1);
  daemon_state.lease = 0;
  int launches = fake_launches();
  CHECK_EQ_U64(preempt_launch_kernel(&desc, big_grid, block256, NULL, 0, &stream), 0);
  preempt_launch_id held = preempt_last_launch();
  keep_running(held);
  CHECK(wait_state(0, PREEMPT_STUB_READY));
  CHECK_EQ_U64(fake_launches(), launches);
  daemon_state.lease = 0;
  preempt_shutdown();
  daemon_stop();
}

/* A bad PREEMPT_PRIORITY is reported and not sent. */
static void test_bad_priority_variable(void) {
  setenv("PREEMPT_PRIORITY", "7x", 1);
  fake_gpu_reset(PREEMPT_KERNEL_ABI_VERSION);
  daemon_start(ANSWER);
  preempt_kernel_desc desc = fake_kernel_desc(&stub_a, "_Z1kv", 0);
  fake_gpu.expected_params = 0;
  CHECK_EQ_U64(preempt_launch_kernel(&desc, small_grid, block32, NULL, 0, NULL), 0);
  CHECK(strstr(preempt_last_error(), "PREEMPT_PRIORITY='7x'") != NULL);
  CHECK_EQ_U64(load(&daemon_state.registers), 1);
  CHECK_EQ_U64(daemon_state.last_register.priority_requested, 0);
  /* preempt_set_priority before registering is remembered for it, over the variable. */
  preempt_shutdown();
  setenv("PREEMPT_PRIORITY", "4", 1);
  daemon_state.limit = 20;
  CHECK_EQ_U64(preempt_set_priority(12), PREEMPT_OK);
  CHECK_EQ_U64(preempt_get_priority(NULL, NULL), PREEMPT_ERROR_UNSUPPORTED);
  CHECK_EQ_U64(preempt_launch_kernel(&desc, small_grid, block32, NULL, 0, NULL), 0);
  CHECK_EQ_U64(load(&daemon_state.registers), 2);
  CHECK(daemon_state.last_register.priority_requested == 1 && daemon_state.last_register.priority == 12);
  preempt_shutdown();
  daemon_stop();
  unsetenv("PREEMPT_PRIORITY");
}

static int no_reading(uint64_t *total_bytes, uint64_t *used_bytes, void *argument) {
  (void)argument;
  *total_bytes = *used_bytes = 0;
  return 1;
}

/* Memory admission and scheduling share the process's one connection (issue 40): memory attaches first (a program's
 * first cudaMalloc comes before its first launch), the first converted launch registers on the same connection,
 * and preempt_shutdown leaves it to memory. A registration after that needs a new connection (the daemon takes no
 * second REGISTER on one), which ends memory's: its next request fails, and admission goes to the shared ledger. */
static void test_one_connection(void) {
  fake_gpu_reset(PREEMPT_KERNEL_ABI_VERSION);
  daemon_start(ANSWER);
  static const unsigned char uuid[16] = {1};
  preempt_mem_daemon memory;
  preempt_msg_mem_reply answer;
  char why[256] = "";
  CHECK_EQ_U64(preempt_mem_daemon_attach(&memory, daemon_state.path, 0, 0, why, sizeof why), 0);
  CHECK_EQ_U64(load(&daemon_state.accepts), 1);
  CHECK_EQ_U64(load(&daemon_state.mem_attaches), 1);
  preempt_kernel_desc desc = fake_kernel_desc(&stub_a, "_Z1kv", 0);
  fake_gpu.expected_params = 0;
  CHECK_EQ_U64(preempt_launch_kernel(&desc, small_grid, block32, NULL, 0, NULL), 0);
  CHECK_EQ_U64(load(&daemon_state.registers), 1);
  CHECK_EQ_U64(load(&daemon_state.accepts), 1); /* registered on memory's connection */
  CHECK(wait_state(0, PREEMPT_STUB_READY));
  /* Both wait for replies on the one socket, which the agent also reads: each gets its own. */
  CHECK_EQ_U64(preempt_set_priority(3), PREEMPT_OK);
  CHECK_EQ_U64(load(&daemon_state.set_priorities), 1);
  CHECK_EQ_U64(preempt_mem_daemon_query(&memory, uuid, no_reading, NULL, &answer), 0);
  CHECK_EQ_U64(load(&daemon_state.mem_queries), 1);
  preempt_shutdown();
  usleep(30000);
  CHECK_EQ_U64(load(&daemon_state.closes), 0); /* memory still uses it */
  CHECK_EQ_U64(preempt_mem_daemon_query(&memory, uuid, no_reading, NULL, &answer), 0);
  CHECK_EQ_U64(load(&daemon_state.mem_queries), 2);
  /* Registering again: a new connection, memory's gone with the old one. */
  CHECK_EQ_U64(preempt_launch_kernel(&desc, small_grid, block32, NULL, 0, NULL), 0);
  CHECK_EQ_U64(load(&daemon_state.registers), 2);
  CHECK_EQ_U64(load(&daemon_state.accepts), 2);
  CHECK(preempt_mem_daemon_query(&memory, uuid, no_reading, NULL, &answer) == -1);
  CHECK_EQ_U64(load(&daemon_state.mem_queries), 2);
  /* The first connection's end was counted or not, as the in-test daemon saw it before the second came (it
   * closes a connection it replaces): count from here. */
  int closes = load(&daemon_state.closes);
  preempt_mem_daemon_close(&memory);
  preempt_shutdown(); /* the last user: the connection closes */
  for (int round = 0; round < 200 && load(&daemon_state.closes) == closes; round++)
    usleep(1000);
  CHECK_EQ_U64(load(&daemon_state.closes), closes + 1);
  daemon_stop();
}

/* Threads asking at once over the one connection: whichever of them reads the socket, each gets the reply to its
 * own request (the daemon answers in order; a reply filed for the wrong waiter would carry another thread's GPU). */
enum { QUERY_THREADS = 8, QUERIES_EACH = 50 };
static preempt_mem_daemon shared_memory;
static int wrong_replies, failed_queries;

static void *query_many(void *argument) {
  unsigned char uuid[16] = {(unsigned char)(uintptr_t)argument};
  for (int query = 0; query < QUERIES_EACH; query++) {
    preempt_msg_mem_reply answer;
    if (preempt_mem_daemon_query(&shared_memory, uuid, no_reading, NULL, &answer) != 0)
      __atomic_add_fetch(&failed_queries, 1, __ATOMIC_RELAXED);
    else if (answer.held_bytes != uuid[0])
      __atomic_add_fetch(&wrong_replies, 1, __ATOMIC_RELAXED);
  }
  return NULL;
}

static void test_concurrent_replies(void) {
  fake_gpu_reset(PREEMPT_KERNEL_ABI_VERSION);
  daemon_start(ANSWER);
  char why[256] = "";
  CHECK_EQ_U64(preempt_mem_daemon_attach(&shared_memory, daemon_state.path, 0, 0, why, sizeof why), 0);
  /* The agent reads the socket too once registered. */
  preempt_kernel_desc desc = fake_kernel_desc(&stub_a, "_Z1kv", 0);
  fake_gpu.expected_params = 0;
  CHECK_EQ_U64(preempt_launch_kernel(&desc, small_grid, block32, NULL, 0, NULL), 0);
  CHECK_EQ_U64(load(&daemon_state.registers), 1);
  pthread_t threads[QUERY_THREADS];
  for (uintptr_t index = 0; index < QUERY_THREADS; index++)
    CHECK(pthread_create(&threads[index], NULL, query_many, (void *)(index + 1)) == 0);
  for (int round = 0; round < 5; round++)
    CHECK_EQ_U64(preempt_set_priority(round), PREEMPT_OK);
  for (int index = 0; index < QUERY_THREADS; index++)
    pthread_join(threads[index], NULL);
  CHECK_EQ_U64(failed_queries, 0);
  CHECK_EQ_U64(wrong_replies, 0);
  CHECK_EQ_U64(load(&daemon_state.mem_queries), QUERY_THREADS * QUERIES_EACH);
  CHECK_EQ_U64(load(&daemon_state.set_priorities), 5);
  int granted = -1;
  CHECK_EQ_U64(preempt_get_priority(&granted, NULL), PREEMPT_OK);
  CHECK_EQ_U64(granted, 4); /* the last one asked, answered through the same socket */
  preempt_mem_daemon_close(&shared_memory);
  preempt_shutdown();
  daemon_stop();
}

/* The ways of not being scheduled: switched off, no daemon, a hung one, one of another version. */
static void test_unscheduled(void) {
  preempt_kernel_desc desc = fake_kernel_desc(&stub_a, "_Z1kv", 0);

  /* PREEMPT_DAEMON=off: not even a connection attempt. */
  setenv("PREEMPT_DAEMON", "off", 1);
  fake_gpu_reset(PREEMPT_KERNEL_ABI_VERSION);
  daemon_start(ANSWER);
  fake_gpu.expected_params = 0;
  CHECK_EQ_U64(preempt_launch_kernel(&desc, small_grid, block32, NULL, 0, NULL), 0);
  CHECK_EQ_U64(fake_launches(), 1);
  usleep(30000);
  CHECK_EQ_U64(load(&daemon_state.accepts), 0);
  CHECK_EQ_U64(preempt_get_priority(NULL, NULL), PREEMPT_ERROR_UNSUPPORTED);
  daemon_stop();
  unsetenv("PREEMPT_DAEMON");

  /* A socket named but absent: unscheduled, said once. */
  fake_gpu_reset(PREEMPT_KERNEL_ABI_VERSION);
  fake_gpu.expected_params = 0;
  CHECK_EQ_U64(preempt_launch_kernel(&desc, small_grid, block32, NULL, 0, NULL), 0);
  CHECK_EQ_U64(fake_launches(), 1);
  CHECK(strstr(preempt_last_error(), "no preemptd at PREEMPT_DAEMON_SOCKET") != NULL);
  mark_last_error();
  CHECK_EQ_U64(preempt_launch_kernel(&desc, small_grid, block32, NULL, 0, NULL), 0);
  CHECK(last_error_is_mark());
  CHECK_EQ_U64(fake_launches(), 2);
  /* The daemon starts after the first launch: a launch a second later finds it, and is held. */
  daemon_start(ANSWER);
  usleep(1100000);
  CHECK_EQ_U64(preempt_launch_kernel(&desc, small_grid, block32, NULL, 0, NULL), 0);
  CHECK_EQ_U64(load(&daemon_state.registers), 1);
  CHECK(wait_state(0, PREEMPT_STUB_READY));
  CHECK_EQ_U64(fake_launches(), 2);
  daemon_stop();

  /* No variable and no daemon at the default path: unscheduled, silently. */
  if (access(PREEMPT_DAEMON_SOCKET_DEFAULT, F_OK) != 0) {
    char *named = strdup(getenv("PREEMPT_DAEMON_SOCKET"));
    unsetenv("PREEMPT_DAEMON_SOCKET");
    fake_gpu_reset(PREEMPT_KERNEL_ABI_VERSION);
    fake_gpu.expected_params = 0;
    mark_last_error();
    CHECK_EQ_U64(preempt_launch_kernel(&desc, small_grid, block32, NULL, 0, NULL), 0);
    CHECK_EQ_U64(fake_launches(), 1);
    CHECK(last_error_is_mark());
    setenv("PREEMPT_DAEMON_SOCKET", named, 1);
    free(named);
  } else {
    printf("skipped: a daemon socket exists at %s\n", PREEMPT_DAEMON_SOCKET_DEFAULT);
  }

  /* A daemon that never answers: the launch goes on after the 1 s timeout, unscheduled. */
  fake_gpu_reset(PREEMPT_KERNEL_ABI_VERSION);
  daemon_start(SILENT);
  fake_gpu.expected_params = 0;
  struct timespec start;
  clock_gettime(CLOCK_MONOTONIC, &start);
  CHECK_EQ_U64(preempt_launch_kernel(&desc, small_grid, block32, NULL, 0, NULL), 0);
  double waited = seconds_since(&start);
  CHECK(waited > 0.9 && waited < 3);
  CHECK_EQ_U64(load(&daemon_state.registers), 1);
  CHECK_EQ_U64(fake_launches(), 1);
  CHECK(strstr(preempt_last_error(), "did not answer REGISTER") != NULL);
  clock_gettime(CLOCK_MONOTONIC, &start);
  CHECK_EQ_U64(preempt_launch_kernel(&desc, small_grid, block32, NULL, 0, NULL), 0);
  CHECK(seconds_since(&start) < 0.5); /* not tried again for every launch */
  daemon_stop();

  /* REGISTERED describing another page size: refused, clearly. */
  fake_gpu_reset(PREEMPT_KERNEL_ABI_VERSION);
  daemon_start(WRONG_SIZES);
  fake_gpu.expected_params = 0;
  CHECK_EQ_U64(preempt_launch_kernel(&desc, small_grid, block32, NULL, 0, NULL), 0);
  CHECK_EQ_U64(fake_launches(), 1);
  CHECK(strstr(preempt_last_error(), "different versions") != NULL);
  CHECK(strstr(preempt_last_error(), "-byte page") != NULL);
  CHECK_EQ_U64(preempt_get_priority(NULL, NULL), PREEMPT_ERROR_UNSUPPORTED);
  daemon_stop();
  preempt_shutdown();

  /* A daemon that is full (another user holds its connections: issue 41) answers FULL: said once, asked again
   * after a backoff (100 ms, then 200 ms), and a launch after the lock-out registers and is scheduled. */
  fake_gpu_reset(PREEMPT_KERNEL_ABI_VERSION);
  daemon_start(FULL_TWICE);
  fake_gpu.expected_params = 0;
  CHECK_EQ_U64(preempt_launch_kernel(&desc, small_grid, block32, NULL, 0, NULL), 0);
  CHECK_EQ_U64(fake_launches(), 1);
  CHECK_EQ_U64(load(&daemon_state.registers), 1);
  CHECK(strstr(preempt_last_error(), "is full: too many connections") != NULL);
  CHECK(strstr(preempt_last_error(), "retrying") != NULL);
  mark_last_error();
  CHECK_EQ_U64(preempt_launch_kernel(&desc, small_grid, block32, NULL, 0, NULL), 0);
  CHECK_EQ_U64(load(&daemon_state.registers), 1); /* within the backoff: not asked */
  usleep(150000);
  CHECK_EQ_U64(preempt_launch_kernel(&desc, small_grid, block32, NULL, 0, NULL), 0);
  CHECK_EQ_U64(load(&daemon_state.registers), 2);
  CHECK(last_error_is_mark()); /* the second FULL is not said again */
  CHECK_EQ_U64(fake_launches(), 3);
  usleep(250000);
  CHECK_EQ_U64(preempt_launch_kernel(&desc, small_grid, block32, NULL, 0, NULL), 0);
  CHECK_EQ_U64(load(&daemon_state.registers), 3);
  CHECK(strstr(preempt_last_error(), "after it was full") != NULL);
  CHECK(wait_state(0, PREEMPT_STUB_READY));
  CHECK_EQ_U64(fake_launches(), 3);
  daemon_stop();
  preempt_shutdown();
}

int main(void) {
  unsetenv("PREEMPT_CHECK_INTERVAL");
  unsetenv("PREEMPT_STRESS");
  unsetenv("PREEMPT_DAEMON");
  unsetenv("PREEMPT_PRIORITY");
  unsetenv("PREEMPT_ONE_WAVE");
  setenv("PREEMPT_LONG_US", "0", 1); /* launches once the daemon is gone: converted, as before launches as written */
  strcpy(daemon_state.directory, "/tmp/preempt-daemon-client-XXXXXX");
  if (!mkdtemp(daemon_state.directory)) {
    perror("mkdtemp");
    return 1;
  }
  snprintf(daemon_state.path, sizeof daemon_state.path, "%s/preemptd.sock", daemon_state.directory);
  setenv("PREEMPT_DAEMON_SOCKET", daemon_state.path, 1);

  test_scheduled_launches();
  test_held_stream_limit();
  test_go_held_launches();
  test_completion_after_partial_eviction();
  test_lease();
  test_one_wave_launches();
  test_bad_priority_variable();
  test_one_connection();
  test_concurrent_replies();
  test_unscheduled();

  unlink(daemon_state.path);
  rmdir(daemon_state.directory);
  CHECK_DONE("test_daemon_client");
}
