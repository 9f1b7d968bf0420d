/* daemon_client.c: the runtime's side of preemptd: registration, the shared stub page, the agent thread.
 * EffiSha §6.1 (kernel stubs and their states), §6.4 (priorities, limits); FLEP §3 (one scheduler per node). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "daemon_link.h"
#include "runtime.h"

_Static_assert(PREEMPT_SM_MASK_WORDS == PREEMPT_DAEMON_SM_MASK_WORDS, "the daemon's SM masks are preempt_sm_mask");

/* A hung daemon must not hang the application: every exchange ends within this. */
#define REPLY_TIMEOUT_MS 1000
/* After the daemon went away: how often the agent tries to register again. */
#define RETRY_PERIOD_MS 500
/* How often a launch looks again for a daemon that was not there. */
#define ABSENT_RETRY_NS 1000000000ull
/* A daemon that answered FULL (its connections taken, perhaps by another user): asked again after this, doubled
 * at each refusal up to BUSY_RETRY_MAX_NS, so a lock-out that ends leaves no program unscheduled for good. */
#define BUSY_RETRY_FIRST_NS 100000000ull
#define BUSY_RETRY_MAX_NS 10000000000ull
/* register_with_daemon: the daemon refused for want of room, not for what was asked: try again later. */
#define LINK_BUSY 2
/* The agent's futex timeouts: short while a launch runs, is being evicted or
 * waits for its start (completion and eviction end are seen only by event
 * queries); long otherwise, when only the daemon's death (on the socket) and
 * its commands (which ring) can happen. */
#define POLL_BUSY_NS 20000
#define POLL_IDLE_NS 100000000
/* While busy, the socket is checked for the daemon's death at most this often. */
#define SOCKET_CHECK_NS 10000000ull

/* What a registration gives: the connection it stands on (daemon_link.c, shared with memory admission), both pages
 * mapped, the daemon's answer. */
typedef struct registration {
  uint32_t generation;
  preempt_client_page *page;
  preempt_doorbell_page *doorbell;
  uint32_t client_id;
  int32_t granted, limit;
} registration;

static void unmap_pages(preempt_client_page *page, preempt_doorbell_page *doorbell) {
  if (page)
    munmap(page, sizeof *page);
  if (doorbell)
    munmap(doorbell, sizeof *doorbell);
}

/* Maps one of the daemon's fds, refusing one smaller than its page (touching
 * past a memfd's end would kill the process with SIGBUS). */
static void *map_page(int fd, size_t bytes, char *why, size_t why_bytes, const char *which) {
  struct stat status;
  if (fstat(fd, &status) != 0 || status.st_size < 0 || (size_t)status.st_size < bytes) {
    snprintf(why, why_bytes, "preemptd's %s is smaller than the %zu bytes it announced", which, bytes);
    return NULL;
  }
  void *page = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (page == MAP_FAILED) {
    snprintf(why, why_bytes, "mapping preemptd's %s: %s", which, strerror(errno));
    return NULL;
  }
  return page;
}

/* Maps REGISTERED's pages (the decoder has checked their sizes against this
 * build's). 0, or -1 with `why`. */
static int accept_registration(const preempt_msg_registered *reply, const int fds[2], registration *link, char *why,
                               size_t why_bytes) {
  link->page = map_page(fds[0], sizeof *link->page, why, why_bytes, "stub page");
  if (link->page)
    link->doorbell = map_page(fds[1], sizeof *link->doorbell, why, why_bytes, "doorbell page");
  if (!link->page || !link->doorbell)
    return -1;
  uint32_t version = __atomic_load_n(&link->page->page_version, __ATOMIC_ACQUIRE);
  if (version != PREEMPT_DAEMON_PROTOCOL_VERSION || link->page->client_id != reply->client_id) {
    snprintf(why, why_bytes, "preemptd's stub page says version %u, client %u; expected version %u, client %u",
             version, link->page->client_id, PREEMPT_DAEMON_PROTOCOL_VERSION, reply->client_id);
    return -1;
  }
  link->client_id = reply->client_id;
  link->granted = reply->priority;
  link->limit = reply->priority_limit;
  return 0;
}

/* The decoder refuses a REGISTERED whose sizes differ from this build's (or
 * another protocol version) as a whole; say which, since that is what a
 * daemon and a runtime from different versions look like. */
static void explain_refused_reply(const preempt_reply_buffer *buffer, size_t length, preempt_daemon_status decoded, char *why,
                                  size_t why_bytes) {
  preempt_msg_registered registered;
  const preempt_msg_header *header = (const preempt_msg_header *)buffer->bytes;
  if (length >= sizeof *header && header->magic == PREEMPT_DAEMON_MAGIC &&
      header->version != PREEMPT_DAEMON_PROTOCOL_VERSION) {
    snprintf(why, why_bytes, "preemptd speaks protocol version %u, this runtime %u (preemptd and libpreempt from "
             "different versions?)", header->version, PREEMPT_DAEMON_PROTOCOL_VERSION);
    return;
  }
  if (length == sizeof registered && header->magic == PREEMPT_DAEMON_MAGIC && header->type == PREEMPT_MSG_REGISTERED) {
    memcpy(&registered, buffer->bytes, sizeof registered);
    if (registered.stub_count != PREEMPT_STUBS_PER_CLIENT || registered.page_bytes != sizeof(preempt_client_page) ||
        registered.doorbell_bytes != sizeof(preempt_doorbell_page)) {
      snprintf(why, why_bytes,
               "preemptd's REGISTERED reply describes %u stubs in a %u-byte page and a %u-byte doorbell, this "
               "runtime %u stubs in %zu bytes and %zu bytes (preemptd and libpreempt from different versions?)",
               registered.stub_count, registered.page_bytes, registered.doorbell_bytes, PREEMPT_STUBS_PER_CLIENT,
               sizeof(preempt_client_page), sizeof(preempt_doorbell_page));
      return;
    }
  }
  snprintf(why, why_bytes, "preemptd's answer to REGISTER is %s", preempt_daemon_status_name(decoded));
}

/* Joins the process's connection to preemptd, sends REGISTER and waits (REPLY_TIMEOUT_MS at most) for REGISTERED.
 * Touches no runtime state, so the agent calls it unlocked. `stale` is a connection the daemon already holds a
 * registration of this process on (after preempt_shutdown, while memory admission kept the connection): the daemon
 * takes no second REGISTER there, so that connection ends (memory admission moves to the shared ledger) and a new
 * one is made. PREEMPT_LINK_ABSENT: nobody listens at `path`; LINK_BUSY: it answered FULL. */
static int register_with_daemon(const char *path, preempt_msg_register *request, uint32_t stale, registration *link,
                                char *why, size_t why_bytes) {
  memset(link, 0, sizeof *link);
  int joined = preempt_link_join(path, PREEMPT_LINK_SCHEDULING, &link->generation, why, why_bytes);
  if (joined == PREEMPT_LINK_OK && stale && link->generation == stale) {
    preempt_link_drop(stale);
    joined = preempt_link_join(path, PREEMPT_LINK_SCHEDULING, &link->generation, why, why_bytes);
  }
  if (joined != PREEMPT_LINK_OK)
    return joined;
  uint32_t id = preempt_link_expect(link->generation);
  request->header.request_id = id;
  if (id == 0 || preempt_link_send(link->generation, request, sizeof *request) != 0) {
    snprintf(why, why_bytes, "sending REGISTER to %s: %s", path, id ? strerror(errno) : "the connection ended");
    preempt_link_forget(id);
    preempt_link_drop(link->generation);
    return PREEMPT_LINK_FAILED;
  }
  preempt_link_reply answer;
  int awaited = preempt_link_await(link->generation, id, preempt_monotonic_ns() + REPLY_TIMEOUT_MS * 1000000ull, 0,
                                   &answer);
  int result = PREEMPT_LINK_FAILED;
  /* A refusal that leaves the connection usable (memory admission may be on it); anything else ends it. */
  int keep = 0;
  preempt_msg reply;
  preempt_daemon_status decoded;
  if (awaited == PREEMPT_LINK_DEADLINE) {
    preempt_link_forget(id);
    snprintf(why, why_bytes, "preemptd at %s did not answer REGISTER within %d ms", path, REPLY_TIMEOUT_MS);
  } else if (awaited != PREEMPT_LINK_ARRIVED) {
    snprintf(why, why_bytes, "preemptd at %s closed the connection instead of answering REGISTER", path);
  } else if ((decoded = preempt_msg_decode(answer.buffer.bytes, answer.length, &reply)) != PREEMPT_DAEMON_OK) {
    explain_refused_reply(&answer.buffer, answer.length, decoded, why, why_bytes);
  } else if (reply.type == PREEMPT_MSG_STATUS && reply.body.status.status == PREEMPT_DAEMON_FULL) {
    /* Before issue 41 a daemon out of connections answered with request id 0: FULL is taken from either. */
    snprintf(why, why_bytes, "preemptd at %s is full: %s", path, reply.body.status.message);
    keep = reply.request_id == id;
    result = LINK_BUSY;
  } else if (reply.request_id != id) {
    snprintf(why, why_bytes, "preemptd answered request %u, not REGISTER's %u", reply.request_id, id);
  } else if (reply.type == PREEMPT_MSG_STATUS) {
    snprintf(why, why_bytes, "preemptd refused the registration: %s: %s",
             preempt_daemon_status_name((preempt_daemon_status)reply.body.status.status), reply.body.status.message);
    keep = 1;
  } else if (reply.type != PREEMPT_MSG_REGISTERED) {
    snprintf(why, why_bytes, "preemptd answered REGISTER with message type %u", (unsigned)reply.type);
  } else if (answer.fd_count != 2) {
    snprintf(why, why_bytes, "preemptd's REGISTERED came with %d file descriptors instead of 2", answer.fd_count);
  } else if (accept_registration(&reply.body.registered, answer.fds, link, why, why_bytes) == 0) {
    result = PREEMPT_LINK_OK;
  }
  /* Mapped or refused, the fds are not needed any more. */
  if (awaited == PREEMPT_LINK_ARRIVED)
    preempt_link_reply_close(&answer);
  if (result != PREEMPT_LINK_OK) {
    unmap_pages(link->page, link->doorbell);
    if (keep)
      preempt_link_leave(link->generation, PREEMPT_LINK_SCHEDULING);
    else
      preempt_link_drop(link->generation);
  }
  return result;
}

/* FULL: the next attempt after a growing wait; said once per process, not at every attempt. Context locked. */
static void retry_busy(preempt_daemon_client *client, const char *why) {
  client->busy_backoff_ns = client->busy_backoff_ns ? client->busy_backoff_ns * 2 : BUSY_RETRY_FIRST_NS;
  if (client->busy_backoff_ns > BUSY_RETRY_MAX_NS)
    client->busy_backoff_ns = BUSY_RETRY_MAX_NS;
  client->absent_retry_ns = preempt_monotonic_ns() + client->busy_backoff_ns;
  if (!client->told_busy)
    preempt_report("%s: kernels run unscheduled until a registration succeeds (retrying, at most every %llu s)", why,
                   BUSY_RETRY_MAX_NS / 1000000000ull);
  client->told_busy = 1;
}

/* Context locked. */
static void build_register(preempt_daemon_client *client, preempt_msg_register *request) {
  memset(request, 0, sizeof *request);
  preempt_msg_header_init(&request->header, PREEMPT_MSG_REGISTER, sizeof *request, 0); /* the id: the link's */
  request->priority = client->priority_requested ? client->priority : 0;
  request->priority_requested = client->priority_requested ? 1 : 0;
  request->gpu_count = client->gpu_count;
  memcpy(request->program, client->program, sizeof request->program);
  memcpy(request->gpus, client->gpus, sizeof request->gpus);
}

/* /proc/self/comm is what ps and the daemon's own /proc reads show. */
/* Every device's UUID and SM count, once: they do not change. Devices past
 * PREEMPT_DAEMON_MAX_GPUS are left out (their launches run unscheduled). */
static int describe_gpus(preempt_runtime *runtime) {
  const preempt_gpu_ops *gpu = runtime->gpu;
  preempt_daemon_client *client = &runtime->daemon;
  int count = 0;
  int status = gpu->device_count(&count);
  if (status != 0) {
    preempt_report_gpu(gpu, status, "counting devices for preemptd", NULL);
    return -1;
  }
  if (count > PREEMPT_DAEMON_MAX_GPUS)
    count = PREEMPT_DAEMON_MAX_GPUS;
  memset(client->gpus, 0, sizeof client->gpus);
  client->gpu_count = 0;
  for (int device = 0; device < count; device++) {
    preempt_msg_gpu *entry = &client->gpus[device];
    status = gpu->sm_count(device, &entry->sm_count);
    if (status == 0)
      status = gpu->device_uuid(device, entry->uuid);
    if (status != 0) {
      preempt_report_gpu(gpu, status, "reading a device's UUID and SM count for preemptd", NULL);
      return -1;
    }
    /* Unknown limits (an API that cannot say, such as HIP here) are all zero: the daemon then never places two
     * kernels on one SM, which is safe, so it is not an error. */
    preempt_sm_limits limits;
    if (gpu->sm_limits(device, &limits) == 0) {
      entry->max_threads = limits.max_threads;
      entry->max_ctas = limits.max_ctas;
      entry->registers = limits.registers;
      entry->register_unit = limits.register_unit;
      entry->shared_bytes = limits.shared_bytes;
      entry->shared_unit = limits.shared_unit;
      entry->shared_reserved = limits.shared_reserved;
      entry->warp_size = limits.warp_size;
    }
    if (entry->sm_count < 1 || entry->sm_count > 256)
      break; /* beyond what an SM mask names: this and later devices run unscheduled */
    client->gpu_count = (uint32_t)device + 1;
  }
  return 0;
}

/* PREEMPT_PRIORITY, unless the API set one first; PREEMPT_WEIGHT: the FFS share this process's kernels ask for
 * (FLEP §5.2.2). The daemon clamps both to what the user may have. */
static void take_settings(preempt_daemon_client *client, const preempt_settings *settings) {
  client->weight = (uint32_t)settings->weight;
  if (!preempt_setting_given(settings, PREEMPT_SETTING_PRIORITY) || client->priority_from_api)
    return;
  client->priority = (int32_t)settings->priority;
  client->priority_requested = 1;
}

/* Launches the daemon holds or has evicted run unscheduled from now on:
 * without a daemon nobody else would ever start them. Context locked. */
static void release_launches(preempt_runtime *runtime) {
  preempt_daemon_client *client = &runtime->daemon;
  for (int index = 0; index < PREEMPT_STUBS_PER_CLIENT; index++) {
    preempt_daemon_stub_view *view = &client->stubs[index];
    if (!view->owned || view->spare)
      continue;
    preempt_device_state *device;
    preempt_launch_record *record = preempt_launch_lookup(
        runtime, preempt_launch_id_make(view->device, view->slot, view->generation), &device);
    if (!record || record->daemon_stub != (uint32_t)index + 1)
      continue;
    record->daemon_stub = 0;
    if (record->daemon_evicted) {
      record->daemon_evicted = 0;
      preempt_resume_record(runtime, device, record);
    }
  }
  memset(client->stubs, 0, sizeof client->stubs);
}

/* The pages go; the connection stays while memory admission uses it (the last user closes it). Context locked. */
static void disconnect(preempt_daemon_client *client) {
  unmap_pages(client->page, client->doorbell);
  preempt_link_leave(client->link_generation, PREEMPT_LINK_SCHEDULING);
  client->page = NULL;
  client->doorbell = NULL;
  client->registered = 0;
  client->epoch++;
  memset(client->stubs, 0, sizeof client->stubs);
}

static void *agent_main(void *argument);

static void stop_agent_at_exit(void) {
  preempt_runtime_unlock(preempt_daemon_stop(preempt_runtime_lock()));
}

/* Context locked. 0, or -1 (reported) when the agent cannot start. */
static int install(preempt_runtime *runtime, registration *link) {
  preempt_daemon_client *client = &runtime->daemon;
  client->link_generation = link->generation;
  client->page = link->page;
  client->doorbell = link->doorbell;
  client->client_id = link->client_id;
  client->granted = link->granted;
  client->limit = link->limit;
  client->registered = 1;
  client->lost = 0;
  client->told_lost = 0;
  client->epoch++;
  memset(client->stubs, 0, sizeof client->stubs);
  if (!client->agent.running) {
    client->agent.stopping = 0;
    if (pthread_create(&client->agent.thread, NULL, agent_main, NULL) != 0) {
      preempt_report("could not start the thread that carries out preemptd's commands: running unscheduled");
      disconnect(client);
      return -1;
    }
    client->agent.running = 1;
    if (!client->exit_hook) {
      /* Registered after the GPU runtime's own exit handler (the first
       * converted launch comes after the GPU API's first use), so it runs
       * before it: the agent stops while the GPU API still works. */
      client->exit_hook = 1;
      atexit(stop_agent_at_exit);
    }
  }
  return 0;
}

/* The first converted launch: environment, GPUs, registration (under the
 * runtime's lock, bounded by REPLY_TIMEOUT_MS), agent thread. */
static void daemon_start(preempt_runtime *runtime) {
  preempt_daemon_client *client = &runtime->daemon;
  client->started = 1;
  const preempt_settings *settings = &runtime->settings;
  if (!settings->daemon)
    return;
  int named = preempt_setting_given(settings, PREEMPT_SETTING_DAEMON_SOCKET);
  snprintf(client->socket_path, sizeof client->socket_path, "%s", settings->daemon_socket);
  take_settings(client, settings);
  preempt_program_name(client->program, sizeof client->program);
  if (describe_gpus(runtime) != 0)
    return;
  preempt_msg_register request;
  build_register(client, &request);
  registration link;
  char why[384] = "";
  int result = register_with_daemon(client->socket_path, &request, client->link_generation, &link, why, sizeof why);
  if (result == PREEMPT_LINK_ABSENT) {
    /* No daemon on this node is the usual case: say nothing unless asked for one. */
    if (named)
      preempt_report("no preemptd at PREEMPT_DAEMON_SOCKET=%s (%s): kernels run unscheduled", client->socket_path,
                     why);
    client->absent_retry_ns = preempt_monotonic_ns() + ABSENT_RETRY_NS;
    return;
  }
  if (result == LINK_BUSY) {
    retry_busy(client, why);
    return;
  }
  if (result != PREEMPT_LINK_OK) {
    preempt_report("%s: kernels run unscheduled", why);
    return;
  }
  install(runtime, &link);
}

/* No daemon was there at the first launch: one may have started since; or it
 * was full. Looked for again at a launch, at most once per ABSENT_RETRY_NS
 * (full: the backoff); finding nobody costs a failed connect (microseconds).
 * A daemon that refuses otherwise or does not answer is not asked again.
 * Context locked. */
static void look_again(preempt_runtime *runtime) {
  preempt_daemon_client *client = &runtime->daemon;
  client->absent_retry_ns = 0;
  preempt_msg_register request;
  build_register(client, &request);
  registration link;
  char why[384] = "";
  int result = register_with_daemon(client->socket_path, &request, client->link_generation, &link, why, sizeof why);
  if (result == PREEMPT_LINK_ABSENT)
    client->absent_retry_ns = preempt_monotonic_ns() + ABSENT_RETRY_NS;
  else if (result == LINK_BUSY)
    retry_busy(client, why);
  else if (result != PREEMPT_LINK_OK)
    preempt_report("%s: kernels run unscheduled", why);
  else {
    if (client->told_busy)
      preempt_report("registered with preemptd at %s after it was full: kernels are scheduled from now on",
                     client->socket_path);
    client->busy_backoff_ns = 0;
    client->told_busy = 0;
    install(runtime, &link);
  }
}

/* Asked at every launch: the coarse clock (a tick of a few ms, against retries a second or a backoff apart) costs
 * a memory read where the fine one cost about 20 ns, an eighth of the runtime's CPU path for a launch it runs as
 * written under eager loading (bench/host/launch_host_path.c). Same epoch as preempt_monotonic_ns, behind it by
 * at most a tick. */
static uint64_t coarse_now_ns(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &now);
  return (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
}

int preempt_daemon_active(preempt_runtime *runtime) {
  preempt_daemon_client *client = &runtime->daemon;
  if (!client->started)
    daemon_start(runtime);
  else if (!client->registered && client->absent_retry_ns && coarse_now_ns() >= client->absent_retry_ns)
    look_again(runtime);
  return runtime->daemon.registered;
}

/* The page's lease bit for the device (daemon_protocol.h): registered clients only. */
static int lease_held(const preempt_daemon_client *client, int device_index) {
  return client->registered && device_index >= 0 && device_index < 32 &&
         (__atomic_load_n(&client->page->lease, __ATOMIC_ACQUIRE) >> device_index & 1u);
}

int preempt_daemon_schedules(preempt_runtime *runtime, int device_index) {
  return preempt_daemon_active(runtime) && !lease_held(&runtime->daemon, device_index);
}

int preempt_daemon_may_start(const preempt_runtime *runtime, int device_index, int except_stub) {
  const preempt_daemon_client *client = &runtime->daemon;
  if (!lease_held(client, device_index))
    return 0;
  /* Another published launch of this process unfinished there holds the GPU in the daemon's books: it would send
   * this one away. */
  for (int index = 0; index < PREEMPT_STUBS_PER_CLIENT; index++) {
    const preempt_daemon_stub_view *view = &client->stubs[index];
    if (index != except_stub && view->owned && !view->spare && view->device == device_index)
      return 0;
  }
  return 1;
}

/* A spare stub (already this process's, in PREP) first, else a FREE one. A
 * stub is only ever taken from FREE, which only the daemon moves DONE to,
 * so one is never reused before the daemon has accounted for it. */
static int take_stub(preempt_daemon_client *client) {
  for (int index = 0; index < PREEMPT_STUBS_PER_CLIENT; index++)
    if (client->stubs[index].owned && client->stubs[index].spare) {
      client->stubs[index].spare = 0;
      return index;
    }
  for (int index = 0; index < PREEMPT_STUBS_PER_CLIENT; index++) {
    uint32_t expected = PREEMPT_STUB_FREE;
    if (__atomic_compare_exchange_n(&client->page->stubs[index].state, &expected, PREEMPT_STUB_PREP, 0,
                                    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
      memset(&client->stubs[index], 0, sizeof client->stubs[index]);
      client->stubs[index].owned = 1;
      return index;
    }
  }
  return -1;
}

int preempt_daemon_hold(preempt_runtime *runtime, int device_index, preempt_device_state *device, void *stream,
                        preempt_dim3 block, uint32_t ctas_per_sm, uint32_t *epoch) {
  preempt_daemon_client *client = &runtime->daemon;
  if (!client->registered || device_index < 0 || (uint32_t)device_index >= client->gpu_count)
    return -1;
  /* What preempt_stub_validate refuses (the daemon would disconnect this
   * process) the GPU API refuses too: launch it and let the API say why. */
  uint64_t threads = (uint64_t)block.x * block.y * block.z;
  if (ctas_per_sm == 0 || threads == 0 || threads > 1024)
    return -1;
  /* Its first run is a relaunch: impossible without the publisher (said at load). */
  if (!preempt_device_can_relaunch(runtime, device))
    return -1;
  /* A held launch holds its stream like an evicted one: the same limits. */
  if (preempt_lazy_loading(runtime)) {
    if (!client->told_held_streams) {
      client->told_held_streams = 1;
      preempt_report("CUDA loads this process's modules lazily, and a launch of a kernel not yet loaded would wait "
                     "behind a stream held for preemptd: launches run unscheduled (said once); set "
                     "PREEMPT_EVICT_READY=1 or CUDA_MODULE_LOADING=EAGER before the program starts");
    }
    return -1;
  }
  if (!preempt_may_hold_stream(runtime, device, stream)) {
    if (!client->told_held_streams) {
      client->told_held_streams = 1;
      preempt_report("holding one more stream for preemptd would risk the hardware-queue deadlock "
                     "(%u hardware queues, %s): such launches run unscheduled (said once)",
                     runtime->hardware_queues, runtime->hardware_queues_from);
    }
    return -1;
  }
  int stub = take_stub(client);
  if (stub < 0) {
    if (!client->told_no_stub) {
      client->told_no_stub = 1;
      preempt_report("all %d preemptd stubs of this process are in use: further launches run unscheduled until "
                     "one is free (said once)", PREEMPT_STUBS_PER_CLIENT);
    }
    return -1;
  }
  *epoch = client->epoch;
  return stub;
}

void preempt_daemon_unhold(preempt_runtime *runtime, int stub, uint32_t epoch) {
  preempt_daemon_client *client = &runtime->daemon;
  if (client->registered && epoch == client->epoch)
    client->stubs[stub].spare = 1;
}

int preempt_daemon_publish(preempt_runtime *runtime, int stub, uint32_t epoch, int device_index, uint32_t slot,
                           preempt_launch_record *record, int started) {
  preempt_daemon_client *client = &runtime->daemon;
  if (!client->registered || epoch != client->epoch)
    return -1; /* the daemon went away while the launch was enqueued */
  preempt_stub *entry = &client->page->stubs[stub];
  /* PREP: the fields are this process's to write until the release store below. */
  entry->launch_sequence++;
  entry->gpu = (uint32_t)device_index;
  entry->priority = client->granted;
  entry->grid[0] = record->grid[0];
  entry->grid[1] = record->grid[1];
  entry->grid[2] = record->grid[2];
  entry->block[0] = record->block.x;
  entry->block[1] = record->block.y;
  entry->block[2] = record->block.z;
  entry->persistent_ctas = record->full_ctas;
  entry->ctas_per_sm = record->ctas_per_sm;
  entry->shared_bytes = record->shared_bytes;
  entry->input_bytes = 0;
  entry->kernel_key = preempt_kernel_key(record->desc->name);
  preempt_copy_name(entry->name, sizeof entry->name, record->desc->name);
  entry->evictions_done = 0;
  entry->weight = client->weight;
  entry->last_eviction_ns = 0;
  /* The persistent form's footprint, for co-execution (FlexSched §4.3); 0 registers: unknown, never co-located. */
  uint32_t registers_per_thread = 0, static_shared_bytes = 0;
  if (runtime->gpu->kernel_footprint(record->desc->host_stub, record->persistent_function, &registers_per_thread,
                                     &static_shared_bytes) != 0)
    registers_per_thread = static_shared_bytes = 0;
  entry->registers_per_thread = registers_per_thread;
  entry->static_shared_bytes = static_shared_bytes;
  entry->task_count = record->task_count;
  entry->reserved_client = 0;
  entry->progress_tasks = 0;
  entry->progress_ns = 0;
  preempt_daemon_stub_view *view = &client->stubs[stub];
  memset(view, 0, sizeof *view);
  view->owned = 1;
  view->device = device_index;
  view->slot = slot;
  view->generation = record->generation;
  record->daemon_stub = (uint32_t)stub + 1;
  record->daemon_evicted = !started;
  if (started) {
    /* Launched on a lease: RUNNING, so the daemon can evict it; the agent polls it for its end. */
    __atomic_store_n(&entry->state, PREEMPT_STUB_RUNNING, __ATOMIC_RELEASE);
    preempt_futex_ring(&client->doorbell->doorbell);
    preempt_futex_ring(&client->page->client_wake);
    return 0;
  }
  /* READY only once the work queued ahead of it (in its stream, or events
   * it waits for) is done: a launch that cannot start yet, put before the
   * daemon, could be chosen to run while the launch it waits for is kept
   * waiting, and neither would ever finish. */
  if (runtime->gpu->event_query(record->ready_event) == 0) {
    __atomic_store_n(&entry->state, PREEMPT_STUB_READY, __ATOMIC_RELEASE);
    preempt_futex_ring(&client->doorbell->doorbell);
  } else {
    view->waiting_start = 1;
    /* The agent may be in its long wait: it polls the start event from now on. */
    preempt_futex_ring(&client->page->client_wake);
  }
  return 0;
}

/* ---------------------------------------------------------------- the agent */

/* Every task finished: what the daemon needs to give its SMs to the next
 * kernel. Relaunched CTAs may still be leaving (the record is reused only
 * once they are gone, control_pool.c): waiting for them too would keep the
 * daemon from giving its SMs away until they are. */
static int launch_done(const preempt_gpu_ops *gpu, const preempt_launch_record *record) {
  return !record || !record->in_flight || gpu->event_query(record->done_event) == 0;
}

static void command_mask(const preempt_stub *entry, preempt_sm_mask *mask) {
  memcpy(mask->words, entry->command_mask, sizeof mask->words);
}

/* Every task finished: DONE, whatever the daemon has just commanded
 * (TOEVICT may go to DONE; TORUN only to RUNNING, then DONE). The stub is
 * the daemon's again until it moves it to FREE. Context locked. */
static void answer_done(preempt_runtime *runtime, preempt_daemon_stub_view *view, preempt_stub *entry,
                        preempt_launch_record *record, preempt_device_state *device) {
  if (record) {
    record->daemon_stub = 0;
    record->daemon_evicted = 0;
    /* Finished with yield bits left (CTAs on its other SMs did every task):
     * cleared, or its control block would never be reused. */
    if (record->in_flight && preempt_launch_suspended(record))
      preempt_resume_record(runtime, device, record);
  }
  entry->evictions_done = view->evictions;
  uint32_t state = __atomic_load_n(&entry->state, __ATOMIC_ACQUIRE);
  int done = 0;
  for (int round = 0; round < 16 && !done; round++) {
    if (state == PREEMPT_STUB_TOEVICT) {
      __atomic_store_n(&entry->state, PREEMPT_STUB_DONE, __ATOMIC_RELEASE);
      done = 1;
      break;
    }
    if (state == PREEMPT_STUB_TORUN) {
      __atomic_store_n(&entry->state, PREEMPT_STUB_RUNNING, __ATOMIC_RELEASE);
      state = PREEMPT_STUB_RUNNING;
    }
    if (state != PREEMPT_STUB_RUNNING)
      break;
    /* Fails only if the daemon has just written TOEVICT or TORUN: answer that. */
    done = __atomic_compare_exchange_n(&entry->state, &state, PREEMPT_STUB_DONE, 0, __ATOMIC_ACQ_REL,
                                       __ATOMIC_ACQUIRE);
  }
  /* Kept otherwise: the next scan answers again (the launch has no record
   * any more, which reads as finished). */
  if (done)
    memset(view, 0, sizeof *view);
}

/* TORUN: resume the SMs named (all of them after a full eviction or for a
 * held launch), then RUNNING. Context locked. */
static void carry_out_run(preempt_runtime *runtime, preempt_daemon_stub_view *view, preempt_stub *entry,
                          preempt_launch_record *record, preempt_device_state *device) {
  preempt_sm_mask mask;
  command_mask(entry, &mask);
  int all = entry->command_all != 0;
  uint32_t quota = entry->command_quota;
  view->evicting = view->refused = 0;
  if (record && record->in_flight) {
    /* flexsched: every SM, at most `quota` CTAs on each (quota.c). A quota that cannot be set (a drained
     * launch, a publisher that did not load; reported) leaves the launch as the plain command would. */
    if (!quota || preempt_quota_record(runtime, device, record, quota) != PREEMPT_OK)
      preempt_resume_record_sms(runtime, device, record, all ? NULL : &mask);
    record->daemon_evicted = preempt_launch_suspended(record);
    view->next_progress_ns = 0;
  }
  __atomic_store_n(&entry->state, PREEMPT_STUB_RUNNING, __ATOMIC_RELEASE);
}

/* A running quota launch's task counter, for the daemon's rates (FlexSched Eq. 2): a small copy from the device,
 * so at most once per PREEMPT_PROGRESS_PERIOD_NS. Plain stores, the time last: the daemon reads them racily and
 * drops a sample whose time changed under it. Context locked. */
#define PREEMPT_PROGRESS_PERIOD_NS 250000ull
static void report_progress(preempt_runtime *runtime, preempt_daemon_stub_view *view, preempt_stub *entry,
                            preempt_launch_record *record, preempt_device_state *device) {
  if (!record || !record->cta_quota)
    return;
  uint64_t now = preempt_monotonic_ns();
  if (now < view->next_progress_ns)
    return;
  view->next_progress_ns = now + PREEMPT_PROGRESS_PERIOD_NS;
  preempt_progress progress;
  if (preempt_progress_record(runtime, device, record, &progress) != PREEMPT_OK)
    return;
  __atomic_store_n(&entry->progress_tasks, progress.tasks_taken, __ATOMIC_RELAXED);
  __atomic_store_n(&entry->progress_ns, now, __ATOMIC_RELEASE);
}

/* TOEVICT: issue the eviction once per command; a partial one goes back to
 * RUNNING at once, a full one to READY once no CTA is left (polled). Returns
 * whether the stub moved; sets *busy while the eviction is under way.
 * Context locked. */
static int carry_out_evict(preempt_runtime *runtime, preempt_daemon_stub_view *view, preempt_stub *entry,
                           preempt_launch_record *record, preempt_device_state *device, int *busy) {
  const preempt_gpu_ops *gpu = runtime->gpu;
  uint32_t sequence = entry->command_sequence;
  if (!view->evicting || view->command_sequence != sequence) {
    if (launch_done(gpu, record)) {
      answer_done(runtime, view, entry, record, device);
      return 1;
    }
    preempt_sm_mask mask;
    command_mask(entry, &mask);
    int all = entry->command_all != 0;
    preempt_status status = preempt_evict_record(runtime, device, record, all ? NULL : &mask);
    if (status == PREEMPT_ERROR_FINISHED) {
      answer_done(runtime, view, entry, record, device);
      return 1;
    }
    if (status != PREEMPT_OK) {
      /* Refused (the hardware-queue limit, a stream that could not be
       * ordered; reported) or failed: its CTAs stay. RUNNING would let the
       * daemon hand its SMs to another kernel while they are in use (and
       * after an eviction from every SM the daemon takes that for a broken
       * client), so it stays TOEVICT until it finishes, then DONE. */
      view->evicting = view->refused = 1;
      view->command_sequence = sequence;
      *busy = 1;
      return 0;
    }
    record->daemon_evicted = 1;
    if (!all && !preempt_yield_mask_full(record->yield_mask)) {
      /* Spatial: CTAs on those SMs leave after their current task while the
       * others go on; the waiting kernel takes the SMs as they free. Still
       * running, so polled for its completion: nothing else wakes the agent
       * when it ends (missing this left finished kernels holding the GPU
       * until the 100 ms idle wait ran out, on the H100). */
      __atomic_store_n(&entry->state, PREEMPT_STUB_RUNNING, __ATOMIC_RELEASE);
      *busy = 1;
      return 1;
    }
    view->evicting = 1;
    view->command_sequence = sequence;
    view->eviction_started_ns = preempt_monotonic_ns();
  }
  preempt_launch_state state = record ? preempt_record_state(gpu, record) : PREEMPT_LAUNCH_DONE;
  if (state == PREEMPT_LAUNCH_DONE) {
    answer_done(runtime, view, entry, record, device); /* it finished before it could be evicted */
    return 1;
  }
  if (state != PREEMPT_LAUNCH_EVICTED || view->refused) {
    *busy = 1;
    return 0;
  }
  /* The daemon's eviction-cost sample: request to no CTA left, to within the polling period. */
  entry->last_eviction_ns = preempt_monotonic_ns() - view->eviction_started_ns;
  entry->evictions_done = ++view->evictions;
  view->evicting = 0;
  __atomic_store_n(&entry->state, PREEMPT_STUB_READY, __ATOMIC_RELEASE);
  return 1;
}

/* One pass over this process's stubs. Returns whether anything needs polling
 * (a launch running, being evicted, or waiting for its start). Context locked. */
static int agent_scan(preempt_runtime *runtime, int *agent_device) {
  preempt_daemon_client *client = &runtime->daemon;
  const preempt_gpu_ops *gpu = runtime->gpu;
  int busy = 0, moved = 0;
  for (int index = 0; index < PREEMPT_STUBS_PER_CLIENT; index++) {
    preempt_daemon_stub_view *view = &client->stubs[index];
    if (!view->owned || view->spare)
      continue;
    preempt_stub *entry = &client->page->stubs[index];
    preempt_device_state *device = NULL;
    preempt_launch_record *record = preempt_launch_lookup(
        runtime, preempt_launch_id_make(view->device, view->slot, view->generation), &device);
    if (record && record->daemon_stub != (uint32_t)index + 1)
      record = NULL; /* not (or no longer) this stub's launch */
    uint32_t state = __atomic_load_n(&entry->state, __ATOMIC_ACQUIRE);
    /* This thread's own current device: the launch's, for the stream
     * operations of evictions and resumptions. */
    if (record && (state == PREEMPT_STUB_TORUN || state == PREEMPT_STUB_TOEVICT || state == PREEMPT_STUB_RUNNING) &&
        *agent_device != view->device && gpu->set_device(view->device) == 0)
      *agent_device = view->device;
    switch (state) {
    case PREEMPT_STUB_PREP:
      if (!view->waiting_start)
        break; /* being filled by a launch */
      if (!record) {
        view->waiting_start = 0;
        view->spare = 1;
      } else if (gpu->event_query(record->ready_event) == 0) {
        view->waiting_start = 0;
        /* Its stream has come to it: on a lease, with no other published
         * launch of this process unfinished there, it starts now instead of
         * waiting for a decision (docs/daemon.md, "Leases"): a loop of long
         * kernels in one stream would otherwise pay a round trip per kernel. */
        uint32_t next = PREEMPT_STUB_READY;
        if (preempt_daemon_may_start(runtime, view->device, index) &&
            preempt_resume_record(runtime, device, record) == PREEMPT_OK) {
          record->daemon_evicted = preempt_launch_suspended(record);
          next = PREEMPT_STUB_RUNNING;
        }
        __atomic_store_n(&entry->state, next, __ATOMIC_RELEASE);
        moved = 1;
      } else {
        busy = 1;
      }
      break;
    case PREEMPT_STUB_READY:
      break; /* the daemon's turn */
    case PREEMPT_STUB_TORUN:
      carry_out_run(runtime, view, entry, record, device);
      moved = busy = 1;
      break;
    case PREEMPT_STUB_RUNNING:
      if (launch_done(gpu, record)) {
        answer_done(runtime, view, entry, record, device);
        moved = 1;
      } else {
        report_progress(runtime, view, entry, record, device);
        busy = 1;
      }
      break;
    case PREEMPT_STUB_TOEVICT:
      moved |= carry_out_evict(runtime, view, entry, record, device, &busy);
      break;
    default:
      /* DONE is not ours any more once written (the view was cleared). FREE
       * under an owned stub: the daemon took it back without DONE, against
       * the protocol; its launch must not wait for a command that never comes. */
      if (state == PREEMPT_STUB_FREE && record) {
        record->daemon_stub = 0;
        if (record->daemon_evicted) {
          record->daemon_evicted = 0;
          preempt_resume_record(runtime, device, record);
        }
      }
      if (state == PREEMPT_STUB_FREE)
        memset(view, 0, sizeof *view);
      break;
    }
  }
  if (moved)
    preempt_futex_ring(&client->doorbell->doorbell);
  return busy;
}

/* Whether the daemon has gone: the connection's end (a late reply nobody waits for is read and dropped). */
static int daemon_gone(preempt_daemon_client *client) { return preempt_link_ended(client->link_generation); }

/* Context locked. */
static void daemon_lost(preempt_runtime *runtime) {
  preempt_daemon_client *client = &runtime->daemon;
  release_launches(runtime);
  disconnect(client);
  client->lost = 1;
  if (!client->told_lost) {
    client->told_lost = 1;
    preempt_report("preemptd closed the connection: kernels run unscheduled until it is back (trying every %d ms)",
                   RETRY_PERIOD_MS);
  }
}

/* One registration attempt after a loss, with the context unlocked during
 * the exchange (it can take REPLY_TIMEOUT_MS). Silent: it repeats. Context
 * locked on entry and on return. */
static preempt_runtime *register_again(preempt_runtime *runtime) {
  preempt_daemon_client *client = &runtime->daemon;
  preempt_msg_register request;
  build_register(client, &request);
  char path[sizeof client->socket_path];
  memcpy(path, client->socket_path, sizeof path);
  uint32_t stale = client->link_generation;
  preempt_runtime_unlock(runtime);
  registration link;
  char why[384];
  int result = register_with_daemon(path, &request, stale, &link, why, sizeof why);
  runtime = preempt_runtime_lock();
  client = &runtime->daemon;
  if (result != PREEMPT_LINK_OK)
    return runtime;
  if (client->agent.stopping || client->registered) {
    unmap_pages(link.page, link.doorbell);
    preempt_link_drop(link.generation); /* the daemon holds a registration nobody serves */
  } else
    install(runtime, &link);
  return runtime;
}

static void *agent_main(void *argument) {
  (void)argument;
  /* Its 20 us polls would otherwise oversleep by the default 50 us timer slack. */
  prctl(PR_SET_TIMERSLACK, 1000UL);
  preempt_runtime *runtime = preempt_runtime_lock();
  (void)preempt_relax_thread_capture(runtime->gpu, "daemon agent"); /* reported; its calls then run as before */
  preempt_daemon_client *client = &runtime->daemon;
  uint64_t socket_checked = 0;
  int agent_device = -1;
  while (!client->agent.stopping) {
    if (!client->registered) {
      struct timespec deadline;
      clock_gettime(CLOCK_REALTIME, &deadline);
      deadline.tv_nsec += RETRY_PERIOD_MS * 1000000L;
      deadline.tv_sec += deadline.tv_nsec / 1000000000L;
      deadline.tv_nsec %= 1000000000L;
      pthread_cond_timedwait(&client->agent.wake, &runtime->lock, &deadline);
      if (!client->agent.stopping && !client->registered)
        runtime = register_again(runtime);
      continue;
    }
    preempt_client_page *page = client->page;
    /* Read before the scan: a command written during it changes the word, so
     * the wait below returns at once instead of missing it. */
    uint32_t wake = __atomic_load_n(&page->client_wake, __ATOMIC_ACQUIRE);
    int busy = agent_scan(runtime, &agent_device);
    uint64_t now = preempt_monotonic_ns();
    if (!busy || now - socket_checked >= SOCKET_CHECK_NS) {
      socket_checked = now;
      if (daemon_gone(client)) {
        daemon_lost(runtime);
        continue;
      }
    }
    /* Never wait holding the lock: the application's launches need it. The
     * page stays mapped meanwhile: only this thread unmaps it, and
     * preempt_daemon_stop joins this thread first. */
    preempt_runtime_unlock(runtime);
    preempt_futex_wait(&page->client_wake, wake, busy ? POLL_BUSY_NS : POLL_IDLE_NS);
    runtime = preempt_runtime_lock();
  }
  preempt_runtime_unlock(runtime);
  return NULL;
}

preempt_runtime *preempt_daemon_stop(preempt_runtime *runtime) {
  runtime = preempt_worker_stop(runtime, &runtime->daemon.agent);
  preempt_daemon_client *client = &runtime->daemon;
  if (client->registered) {
    release_launches(runtime);
    disconnect(client);
  }
  /* Launches after shutdown start afresh: environment, registration. */
  client->started = client->lost = 0;
  client->absent_retry_ns = client->busy_backoff_ns = 0;
  client->told_busy = 0;
  client->priority_requested = client->priority_from_api = 0;
  client->priority = client->granted = client->limit = 0;
  client->gpu_count = 0;
  client->told_no_stub = client->told_held_streams = client->told_lost = 0;
  return runtime;
}

/* ---------------------------------------------------------------- priorities */

preempt_status preempt_set_priority(int priority) {
  if (priority < PREEMPT_PRIORITY_MIN || priority > PREEMPT_PRIORITY_MAX) {
    preempt_report("preempt_set_priority(%d): priorities run from %d to %d", priority, PREEMPT_PRIORITY_MIN,
                   PREEMPT_PRIORITY_MAX);
    return PREEMPT_ERROR_INVALID_ARGUMENT;
  }
  preempt_runtime *runtime = preempt_runtime_lock();
  preempt_daemon_client *client = &runtime->daemon;
  client->priority = priority;
  client->priority_requested = client->priority_from_api = 1;
  int registered = client->registered;
  preempt_runtime_unlock(runtime);
  if (!registered)
    return PREEMPT_OK; /* asked for at registration */

  /* The round trip runs unlocked, so that launches go on and the agent may see the connection end meanwhile. */
  pthread_mutex_lock(&client->request_lock);
  runtime = preempt_runtime_lock();
  uint32_t generation = client->link_generation, id = 0;
  if (client->registered && client->priority == priority) /* not superseded meanwhile */
    id = preempt_link_expect(generation);
  preempt_runtime_unlock(runtime);
  if (id == 0) {
    pthread_mutex_unlock(&client->request_lock);
    return PREEMPT_OK;
  }
  preempt_msg_set_priority request;
  memset(&request, 0, sizeof request);
  preempt_msg_header_init(&request.header, PREEMPT_MSG_SET_PRIORITY, sizeof request, id);
  request.priority = priority;
  preempt_link_reply answer;
  preempt_msg reply;
  int answered = preempt_link_send(generation, &request, sizeof request) == 0 &&
                 preempt_link_await(generation, id, preempt_monotonic_ns() + REPLY_TIMEOUT_MS * 1000000ull, 0,
                                    &answer) == PREEMPT_LINK_ARRIVED;
  if (!answered)
    preempt_link_forget(id);
  else
    preempt_link_reply_close(&answer);
  answered = answered && preempt_msg_decode(answer.buffer.bytes, answer.length, &reply) == PREEMPT_DAEMON_OK;
  runtime = preempt_runtime_lock();
  if (answered && reply.type == PREEMPT_MSG_PRIORITY && client->registered) {
    client->granted = reply.body.priority.priority;
    client->limit = reply.body.priority.priority_limit;
  } else if (answered && reply.type == PREEMPT_MSG_STATUS) {
    preempt_report("preemptd refused priority %d: %s: %s", priority,
                   preempt_daemon_status_name((preempt_daemon_status)reply.body.status.status),
                   reply.body.status.message);
  }
  preempt_runtime_unlock(runtime);
  pthread_mutex_unlock(&client->request_lock);
  return PREEMPT_OK;
}

preempt_status preempt_get_priority(int *granted, int *limit) {
  preempt_runtime *runtime = preempt_runtime_lock();
  preempt_daemon_client *client = &runtime->daemon;
  preempt_status result = PREEMPT_ERROR_UNSUPPORTED;
  if (client->registered) {
    if (granted)
      *granted = client->granted;
    if (limit)
      *limit = client->limit;
    result = PREEMPT_OK;
  }
  preempt_runtime_unlock(runtime);
  return result;
}
