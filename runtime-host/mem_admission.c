/* mem_admission.c: the process's side of memory admission: waits by policy, budgets, the allocation table.
 * schedGPU §4 (initialisation, pre-allocation, post-free, shutdown; implicit and explicit modes) and §5. */
#define _GNU_SOURCE
#include "memory.h"
#include "preempt/byte_count.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "preempt/daemon_protocol.h" /* preempt_futex_wait, PREEMPT_PRIORITY_MIN/MAX */
#include "preempt/mem_ahead.h"
#include "settings.h"

static preempt_memory memory_context = {.lock = PTHREAD_MUTEX_INITIALIZER};

preempt_memory *preempt_memory_context(void) { return &memory_context; }

static void say(const char *format, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *format, ...) {
  preempt_settings settings;
  preempt_settings_load(0, &settings, NULL);
  if (settings.quiet)
    return;
  va_list arguments;
  va_start(arguments, format);
  fputs("preempt: ", stderr);
  vfprintf(stderr, format, arguments);
  fputc('\n', stderr);
  va_end(arguments);
}

static void configure(preempt_memory *memory) {
  memory->configured = 1;
  preempt_settings settings;
  int fresh;
  preempt_settings_load(0, &settings, &fresh);
  /* Under LD_PRELOAD (libpreempt_mem.so) nobody else reads them: their complaints are ours to say. */
  for (unsigned index = 0; fresh && index < settings.complaint_count; index++)
    say("%s", settings.complaints[index]);
  memory->enabled = settings.mem;
  memory->timeout_ms = settings.mem_timeout_ms;
  memory->policy = (preempt_mem_policy)settings.mem_policy;
  /* As preemptd's rule (EffiSha §6.4): a user other than root asks for at most -nice. Without a daemon
   * nothing enforces it beyond this process, but the ledger is per user (mem_segment.c), so a process
   * that lies only gets ahead of its own user's others. */
  errno = 0;
  int nice_value = getpriority(PRIO_PROCESS, 0);
  int32_t limit;
  preempt_grant_priority(geteuid(), errno ? 0 : nice_value, 0, 0, &memory->priority, &limit);
  if (preempt_setting_given(&settings, PREEMPT_SETTING_PRIORITY)) {
    memory->priority = preempt_clamp_priority((int32_t)settings.priority, limit);
    memory->priority_requested = 1;
    memory->priority_asked = (int32_t)settings.priority;
  }
  memory->daemon_wanted = !settings.mem_ledger_shared;
  memory->daemon_socket_named = preempt_setting_given(&settings, PREEMPT_SETTING_DAEMON_SOCKET);
  snprintf(memory->daemon_socket, sizeof memory->daemon_socket, "%s", settings.daemon_socket);
  memory->environment_budget = settings.mem_budget;
  /* Reserve-ahead (lib/mem_ahead.c): preemptd's round trip cost 27 us per cudaMalloc on the H200; with up to this
   * much admitted ahead, most allocations take it from what the process holds. */
  memory->ahead_bytes = settings.mem_ahead;
  snprintf(memory->segment_prefix, sizeof memory->segment_prefix, "%s", settings.mem_segment);
  memory->hold_lock_ns = (uint64_t)settings.mem_test_hold_ns;
}

static void release_at_exit(void);

static preempt_memory *lock_memory(void) {
  preempt_memory *memory = preempt_memory_context();
  pthread_mutex_lock(&memory->lock);
  if (!memory->configured)
    configure(memory);
  return memory;
}

static void unlock_memory(preempt_memory *memory) { pthread_mutex_unlock(&memory->lock); }

/* Test-only (PREEMPT_MEM_TEST_HOLD_NS): widens the ledger's critical section so that kills land inside it,
 * where they hurt most: after a request or a release is written, before its waiters are woken. */
static void hold_inside_lock(const preempt_memory *memory) {
  if (!memory->hold_lock_ns)
    return;
  struct timespec pause = {.tv_sec = (time_t)(memory->hold_lock_ns / 1000000000ull),
                           .tv_nsec = (long)(memory->hold_lock_ns % 1000000000ull)};
  nanosleep(&pause, NULL);
}

/* The device's shared segment, opened (created if needed) with this process attached. 0, or -1 (said). */
static int open_segment(preempt_memory *memory, preempt_mem_device *state, int device, uint64_t capacity_bytes) {
  char name[96];
  int length = snprintf(name, sizeof name, "%s-%u-", memory->segment_prefix, (unsigned)geteuid());
  for (int byte = 0; byte < 16 && length + 2 < (int)sizeof name; byte++)
    length += snprintf(name + length, sizeof name - (size_t)length, "%02x", state->uuid[byte]);
  char why[256];
  if (preempt_mem_segment_open(&state->segment, name, capacity_bytes, memory->policy, memory->priority, why,
                               sizeof why) != 0) {
    say("%s: device %d's allocations are not admitted", why, device);
    return -1;
  }
  return 0;
}

/* preemptd's ledger, once per process: the first device opened tries it (schedGPU §3.1); without an answer every
 * device uses the shared segment (§3.2), the usual case on a node without the daemon, said only when
 * PREEMPT_DAEMON_SOCKET named one. Memory lock held. */
static int daemon_attached(preempt_memory *memory) {
  if (memory->daemon_state == 0 && memory->daemon_wanted) {
    char why[384] = "";
    int attached = preempt_mem_daemon_attach(&memory->daemon, memory->daemon_socket, memory->priority_requested,
                                             memory->priority_asked, why, sizeof why);
    memory->daemon_state = attached == 0 ? 1 : -1;
    if (attached < 0 || (attached > 0 && memory->daemon_socket_named))
      say("%s%s: memory admission uses the shared ledger (no daemon)", attached > 0 ? "no preemptd at " : "",
          attached > 0 ? memory->daemon_socket : why);
  }
  return memory->daemon_state == 1;
}

/* Opens the current device's ledger on first use. Returns the device's state, or NULL when admission does not
 * apply (off, or no ledger can be used: said once, and allocations go on unadmitted). */
static preempt_mem_device *open_device(preempt_memory *memory, const preempt_mem_gpu *gpu, int *device_out) {
  if (!memory->enabled)
    return NULL;
  int device = 0;
  if (gpu->current_device(&device) != 0 || device < 0 || device >= PREEMPT_MEM_MAX_DEVICES)
    return NULL; /* the allocation itself will report the API's error */
  preempt_mem_device *state = &memory->devices[device];
  *device_out = device;
  if (state->opened)
    return state->opened > 0 ? state : NULL;
  uint64_t free_bytes = 0, total_bytes = 0;
  if (gpu->device_uuid(device, state->uuid) != 0 || gpu->memory_info(&free_bytes, &total_bytes) != 0 ||
      total_bytes == 0) {
    say("cannot read device %d's UUID or memory size through %s: its allocations are not admitted", device,
        gpu->api_name);
    state->opened = -1;
    return NULL;
  }
  state->capacity_bytes = total_bytes;
  state->on_daemon = daemon_attached(memory);
  if (!state->on_daemon && open_segment(memory, state, device, total_bytes) != 0) {
    state->opened = -1;
    return NULL;
  }
  __atomic_store_n(&state->opened, 1, __ATOMIC_RELEASE);
  if (!memory->exit_hook) {
    memory->exit_hook = 1;
    atexit(release_at_exit);
  }
  return state;
}

/* preemptd went away: this device's ledger becomes the shared segment, holding what this process held in the
 * daemon's (said once per process). 0, or -1 when no segment can be used either (allocations go unadmitted). */
static int leave_daemon(preempt_mem_device *state) {
  preempt_memory *memory = lock_memory();
  if (!state->on_daemon) {
    unlock_memory(memory);
    return 0; /* another thread moved it already */
  }
  if (memory->daemon_state == 1) {
    memory->daemon_state = -1;
    say("the connection to preemptd at %s ended: memory admission goes on in the shared ledger", memory->daemon_socket);
  }
  int device = (int)(state - memory->devices);
  int opened = open_segment(memory, state, device, state->capacity_bytes) == 0;
  /* What was admitted ahead is not allocated: it stays behind with the daemon's ledger. */
  uint64_t allocated = state->daemon_held_bytes - state->daemon_spare_bytes;
  if (opened && allocated && preempt_mem_segment_lock(&state->segment, NULL, 0) == 0) {
    /* Already allocated: recorded without waiting, as after a reinitialized ledger. */
    preempt_mem_ledger_restore(&state->segment.shared->ledger, state->segment.client, allocated);
    state->segment.held_bytes += allocated;
    preempt_mem_segment_unlock(&state->segment);
  }
  state->daemon_held_bytes = state->daemon_spare_bytes = 0;
  __atomic_store_n(&state->on_daemon, 0, __ATOMIC_RELEASE);
  if (!opened)
    __atomic_store_n(&state->opened, -1, __ATOMIC_RELEASE);
  unlock_memory(memory);
  return opened ? 0 : -1;
}

static int read_gpu(uint64_t *total_bytes, uint64_t *used_bytes, void *argument) {
  const preempt_mem_gpu *gpu = argument;
  uint64_t free_bytes = 0;
  if (!gpu || gpu->memory_info(&free_bytes, total_bytes) != 0 || free_bytes > *total_bytes)
    return -1;
  *used_bytes = *total_bytes - free_bytes;
  return 0;
}

/* The ledger as a request that failed left it, for the out-of-memory message. */
typedef struct ledger_view {
  uint64_t reserved_bytes, capacity_bytes, external_bytes;
  char policy[PREEMPT_DAEMON_POLICY_BYTES];
  const char *keeper;       /* "preemptd" or "shared" */
} ledger_view;

uint64_t preempt_mem_deadline_ns(void) {
  preempt_memory *memory = lock_memory();
  int64_t timeout_ms = memory->timeout_ms;
  unlock_memory(memory);
  return timeout_ms < 0 ? UINT64_MAX : preempt_monotonic_ns() + (uint64_t)timeout_ms * 1000000ull;
}

/* What the GPU says is used, less what the ledger accounts for, is used outside it (other users, programs
 * without admission, and every client's own context). The GPU is asked with the segment lock held: clients
 * free on the GPU before they release in the ledger (and reserve in the ledger before they allocate on the
 * GPU), so a reading taken under the lock never counts as external what a client is freeing; one taken
 * before the lock would, whenever a client freed in between, and would hold back waiters until the next
 * quiet poll. */
static void learn_external(preempt_mem_device *state, const preempt_mem_gpu *gpu) {
  uint64_t total_bytes = 0, device_used = 0;
  if (preempt_mem_segment_lock(&state->segment, NULL, 0) != 0)
    return;
  if (read_gpu(&total_bytes, &device_used, (void *)gpu) != 0) {
    preempt_mem_segment_unlock(&state->segment);
    return;
  }
  preempt_mem_ledger *ledger = &state->segment.shared->ledger;
  uint64_t ledger_used = preempt_mem_ledger_used_bytes(ledger);
  uint64_t external = device_used > ledger_used ? device_used - ledger_used : 0;
  if (external > ledger->capacity_bytes)
    external = ledger->capacity_bytes;
  uint64_t grants_before = ledger->grants;
  preempt_mem_ledger_set_external(ledger, external);
  if (ledger->grants != grants_before)
    preempt_mem_segment_ring(&state->segment);
  preempt_mem_segment_unlock(&state->segment);
}

/* Waits for `bytes` in the shared segment's ledger by its policy until the deadline. 0 when granted (and held),
 * 1 on timeout, 2 when it can never fit, -1 when the segment failed (said). Without the memory lock: another
 * thread of this process may be about to free what this one waits for. */
static int wait_in_segment(const preempt_memory *memory, preempt_mem_device *state, const preempt_mem_gpu *gpu,
                           uint64_t bytes, uint64_t deadline_ns) {
  preempt_mem_segment *segment = &state->segment;
  char why[256];
  int learned = 0;
  for (;;) { /* one request per ledger generation */
    if (preempt_mem_segment_lock(segment, why, sizeof why) != 0) {
      say("%s", why);
      return -1;
    }
    preempt_mem_ledger *ledger = &segment->shared->ledger;
    uint32_t waiter;
    uint64_t grants_before = ledger->grants;
    preempt_mem_result result = preempt_mem_ledger_request(ledger, segment->client, bytes, &waiter);
    if (result == PREEMPT_MEM_FULL) {
      preempt_mem_segment_reclaim_dead(segment);
      result = preempt_mem_ledger_request(ledger, segment->client, bytes, &waiter);
    }
    if (result == PREEMPT_MEM_NEVER_FITS) {
      preempt_mem_segment_unlock(segment);
      return 2;
    }
    if (result != PREEMPT_MEM_OK) {
      preempt_mem_segment_unlock(segment);
      say("the memory ledger /dev/shm%s has no free waiter entry (%d)", segment->name, PREEMPT_MEM_MAX_WAITERS);
      return -1;
    }
    hold_inside_lock(memory); /* after the request is written: a kill here leaves it for the others to reclaim */
    uint32_t generation = segment->generation;
    for (;;) {
      preempt_mem_waiter *entry = &ledger->waiters[waiter];
      /* Our slot was taken for dead and we attached again (segment_lock): the request went with it. */
      if (entry->state == PREEMPT_MEM_WAITER_FREE || entry->client != segment->client)
        break;
      if (entry->state == PREEMPT_MEM_WAITER_GRANTED) {
        preempt_mem_ledger_take(ledger, segment->client, waiter);
        segment->held_bytes += bytes;
        if (ledger->grants - grants_before > 1)
          preempt_mem_segment_ring(segment); /* ours let others go too */
        preempt_mem_segment_unlock(segment);
        return 0;
      }
      uint64_t now = preempt_monotonic_ns();
      if (now >= deadline_ns) {
        preempt_mem_ledger_cancel(ledger, segment->client, waiter);
        preempt_mem_segment_ring(segment); /* a FIFO head leaving may let others go */
        preempt_mem_segment_unlock(segment);
        return 1;
      }
      /* Before sleeping: maybe dead clients hold memory, or memory counted outside the ledger was freed;
       * looked at once per request, then at each quiet poll. */
      if (!learned || now - segment->last_reclaim_ns >= (uint64_t)PREEMPT_MEM_POLL_NS) {
        preempt_mem_segment_reclaim_dead(segment);
        if (!learned) {
          learned = 1;
          preempt_mem_segment_unlock(segment);
          learn_external(state, gpu);
          if (preempt_mem_segment_lock(segment, why, sizeof why) != 0) {
            say("%s", why);
            return -1;
          }
          ledger = &segment->shared->ledger;
          if (segment->generation != generation)
            break; /* the ledger was reinitialized: our request went with it */
          continue;
        }
      }
      uint32_t seen = __atomic_load_n(&segment->shared->wake, __ATOMIC_SEQ_CST);
      preempt_mem_segment_unlock(segment);
      uint64_t left = deadline_ns - now;
      int timed_out = preempt_futex_wait(&segment->shared->wake, seen,
                                         (int64_t)(left < (uint64_t)PREEMPT_MEM_POLL_NS ? left : PREEMPT_MEM_POLL_NS));
      if (timed_out == 1)
        learned = 0; /* a quiet poll: look at the GPU again */
      if (preempt_mem_segment_lock(segment, why, sizeof why) != 0) {
        say("%s", why);
        return -1;
      }
      ledger = &segment->shared->ledger;
      if (segment->generation != generation)
        break;
      /* Granted while we slept, yet nobody rang: the poll found it, up to PREEMPT_MEM_POLL_NS late. Counted,
       * for tests: every path that grants must ring. */
      if (timed_out == 1 && ledger->waiters[waiter].state == PREEMPT_MEM_WAITER_GRANTED &&
          __atomic_load_n(&segment->shared->wake, __ATOMIC_SEQ_CST) == seen)
        segment->shared->lost_wakeups++;
    }
    preempt_mem_segment_unlock(segment);
  }
}

/* One RESERVE of bytes + ahead from preemptd (preempt_mem_daemon_reserve's results), the daemon's view kept for the
 * next ahead decision and the grant counted. A request with some ahead waits at most PREEMPT_MEM_AHEAD_WAIT_NS,
 * then goes again without: asking ahead must never be what makes an allocation wait. Without the memory lock. */
static int reserve_from_daemon(preempt_memory *memory, preempt_mem_device *state, const preempt_mem_gpu *gpu,
                               uint64_t bytes, uint64_t ahead, uint32_t flags, uint64_t deadline_ns,
                               preempt_msg_mem_reply *answer, char *why, size_t why_bytes) {
  int result;
  for (;;) {
    uint64_t now = preempt_monotonic_ns();
    int short_wait = ahead && deadline_ns > now && deadline_ns - now > PREEMPT_MEM_AHEAD_WAIT_NS;
    result = preempt_mem_daemon_reserve(&memory->daemon, state->uuid, bytes + ahead, flags, read_gpu, (void *)gpu,
                                        short_wait ? now + PREEMPT_MEM_AHEAD_WAIT_NS : deadline_ns, answer, why,
                                        why_bytes);
    if (!ahead || !(result == 2 || result == 4 || (result == 1 && short_wait)))
      break;
    ahead = 0;
  }
  if (result < 0 || result > 2)
    return result;
  lock_memory();
  state->daemon_waiting_seen = answer->waiting;
  uint64_t taken = answer->reserved_bytes + answer->external_bytes;
  state->daemon_free_seen = answer->capacity_bytes > taken ? answer->capacity_bytes - taken : 0;
  if (result == 0) {
    state->daemon_held_bytes += bytes + ahead;
    state->daemon_spare_bytes += ahead;
  }
  unlock_memory(memory);
  return result;
}

/* Waits for `bytes` in the device's ledger, preemptd's or the shared one, until the deadline; results as
 * wait_in_segment (4: over the job's limit in preemptd's ledger), with *view filled on 1 and 2. after_oom: the allocation failed although admitted, so the
 * GPU's used memory is read again first. Without the memory lock. */
static int wait_for_ledger(preempt_memory *memory, preempt_mem_device *state, const preempt_mem_gpu *gpu,
                           uint64_t bytes, uint64_t deadline_ns, int after_oom, ledger_view *view) {
  memset(view, 0, sizeof *view);
  if (__atomic_load_n(&state->on_daemon, __ATOMIC_ACQUIRE)) {
    /* Admitted ahead already: no round trip. After an out-of-memory the daemon must read the GPU again, and what
     * is held ahead goes back first: the GPU is fuller than the ledger said. */
    lock_memory();
    if (!after_oom && state->daemon_spare_bytes >= bytes) {
      state->daemon_spare_bytes -= bytes;
      unlock_memory(memory);
      return 0;
    }
    uint64_t ahead = after_oom ? 0
                               : preempt_mem_ahead_ask(memory->ahead_bytes, state->capacity_bytes, state->daemon_free_seen,
                                                       state->daemon_waiting_seen, bytes);
    uint64_t spare = after_oom ? state->daemon_spare_bytes : 0;
    state->daemon_spare_bytes -= spare;
    state->daemon_held_bytes -= spare;
    unlock_memory(memory);
    preempt_msg_mem_reply answer;
    char why[256];
    int result = spare && preempt_mem_daemon_release(&memory->daemon, state->uuid, spare) != 0
                     ? -1 /* the connection is gone: on to the shared segment, below */
                     : reserve_from_daemon(memory, state, gpu, bytes, ahead,
                                           after_oom ? PREEMPT_MEM_RESERVE_AFTER_OOM : 0, deadline_ns, &answer, why,
                                           sizeof why);
    if (result == 0)
      return 0;
    if (result == 1 || result == 2) {
      *view = (ledger_view){.reserved_bytes = answer.reserved_bytes, .capacity_bytes = answer.capacity_bytes,
                            .external_bytes = answer.external_bytes, .keeper = "preemptd"};
      memcpy(view->policy, answer.policy, sizeof view->policy);
      return result;
    }
    if (result == 4)
      return 4; /* the job's limit: out of memory, whatever the GPU has free */
    if (result == 3) {
      say("%s: this allocation is not admitted", why);
      return -1;
    }
    if (leave_daemon(state) != 0)
      return -1;
  } else if (after_oom) {
    learn_external(state, gpu);
  }
  int result = wait_in_segment(memory, state, gpu, bytes, deadline_ns);
  if (result == 1 || result == 2) {
    const preempt_mem_ledger *ledger = &state->segment.shared->ledger;
    *view = (ledger_view){.reserved_bytes = preempt_mem_ledger_used_bytes(ledger),
                          .capacity_bytes = ledger->capacity_bytes, .external_bytes = ledger->external_bytes,
                          .keeper = "shared"};
    snprintf(view->policy, sizeof view->policy, "%s", preempt_mem_policy_name((preempt_mem_policy)ledger->policy));
  }
  return result;
}

/* Gives bytes back to the ledger and wakes the waiters they may let go. Without the memory lock. */
static void release_to_ledger(const preempt_memory *memory, preempt_mem_device *state, uint64_t bytes) {
  preempt_mem_segment *segment = &state->segment;
  char why[256];
  if (bytes == 0)
    return;
  if (__atomic_load_n(&state->on_daemon, __ATOMIC_ACQUIRE)) {
    /* Freed bytes stay admitted (spare) up to the reserve-ahead size; what is beyond it goes back. */
    preempt_memory *context = lock_memory();
    uint64_t allocated = state->daemon_held_bytes - state->daemon_spare_bytes;
    state->daemon_spare_bytes += bytes < allocated ? bytes : allocated;
    uint64_t released = preempt_mem_ahead_excess(context->ahead_bytes, state->capacity_bytes, state->daemon_spare_bytes,
                                                 state->daemon_waiting_seen);
    state->daemon_spare_bytes -= released;
    state->daemon_held_bytes -= released;
    unlock_memory(context);
    /* Gone: what is left held moves to the shared segment, without these bytes, which are free already. */
    if (released && preempt_mem_daemon_release(&context->daemon, state->uuid, released) != 0)
      (void)leave_daemon(state);
    return;
  }
  if (preempt_mem_segment_lock(segment, why, sizeof why) != 0) {
    say("%s", why);
    return;
  }
  uint64_t released = bytes < segment->held_bytes ? bytes : segment->held_bytes;
  segment->held_bytes -= released;
  int waiting = preempt_mem_ledger_waiting(&segment->shared->ledger, PREEMPT_MEM_NO_INDEX) > 0;
  preempt_mem_ledger_release(&segment->shared->ledger, segment->client, released);
  hold_inside_lock(memory); /* after the grants, before the wake-up: a kill here leaves it to the next holder */
  if (waiting)
    preempt_mem_segment_ring(segment);
  preempt_mem_segment_unlock(segment);
}

static const char *wait_failure(int waited) {
  return waited == 1   ? "waited the whole timeout (PREEMPT_MEM_TIMEOUT_MS)"
         : waited == 4 ? "would take its job over the GPU memory limit the job was granted (Slurm --gpu-mem)"
                       : "is larger than the GPU's memory";
}

static int admit(const preempt_mem_gpu *gpu, uint64_t bytes, int *device, preempt_mem_charge *charge,
                 uint64_t deadline_ns, int after_oom) {
  *device = -1;
  if (bytes == 0)
    return 0;
  preempt_memory *memory = lock_memory();
  int device_number;
  preempt_mem_device *state = open_device(memory, gpu, &device_number);
  uint64_t environment_budget = 0;
  if (state && !state->budget_from_environment_done) {
    state->budget_from_environment_done = 1;
    environment_budget = memory->environment_budget;
  }
  unlock_memory(memory);
  if (!state)
    return 0;
  /* PREEMPT_MEM_BUDGET: the declared budget is reserved before the first allocation (schedGPU's implicit
   * mode, with the user's number instead of a default). */
  ledger_view view;
  if (environment_budget) {
    int waited = wait_for_ledger(memory, state, gpu, environment_budget, deadline_ns, 0, &view);
    if (waited == 0) {
      memory = lock_memory();
      state->budget_bytes += environment_budget;
      unlock_memory(memory);
    } else if (waited > 0) {
      say("PREEMPT_MEM_BUDGET: %llu bytes on device %d %s; allocations are admitted one by one",
          (unsigned long long)environment_budget, device_number, wait_failure(waited));
    }
  }
  memory = lock_memory();
  if (state->budget_used_bytes + bytes <= state->budget_bytes) {
    state->budget_used_bytes += bytes;
    unlock_memory(memory);
    *device = device_number;
    *charge = PREEMPT_MEM_CHARGE_BUDGET;
    return 0;
  }
  unlock_memory(memory);
  int waited = wait_for_ledger(memory, state, gpu, bytes, deadline_ns, after_oom, &view);
  if (waited == 0) {
    *device = device_number;
    *charge = PREEMPT_MEM_CHARGE_LEDGER;
    return 0;
  }
  if (waited < 0)
    return 0; /* the ledger failed and said why: unadmitted, as without a ledger */
  if (waited == 4) {
    say("%s allocation of %llu bytes on device %d %s: out of memory", gpu->api_name, (unsigned long long)bytes,
        device_number, wait_failure(waited));
    return gpu->out_of_memory;
  }
  say("%s allocation of %llu bytes on device %d %s (%s ledger: %llu of %llu bytes reserved, %llu used outside, "
      "policy %s): out of memory",
      gpu->api_name, (unsigned long long)bytes, device_number, wait_failure(waited), view.keeper,
      (unsigned long long)view.reserved_bytes, (unsigned long long)view.capacity_bytes,
      (unsigned long long)view.external_bytes, view.policy);
  return gpu->out_of_memory;
}

int preempt_mem_admit_until(const preempt_mem_gpu *gpu, uint64_t bytes, int *device, preempt_mem_charge *charge,
                            uint64_t deadline_ns) {
  return admit(gpu, bytes, device, charge, deadline_ns, 0);
}

static preempt_mem_device *opened_device(int device) {
  if (device < 0 || device >= PREEMPT_MEM_MAX_DEVICES)
    return NULL;
  preempt_mem_device *state = &preempt_memory_context()->devices[device];
  return __atomic_load_n(&state->opened, __ATOMIC_ACQUIRE) == 1 ? state : NULL;
}

void preempt_mem_give_back(int device, uint64_t bytes, preempt_mem_charge charge) {
  preempt_mem_device *state = opened_device(device);
  if (!state || bytes == 0)
    return;
  preempt_memory *memory = lock_memory();
  if (charge == PREEMPT_MEM_CHARGE_BUDGET) {
    state->budget_used_bytes -= bytes < state->budget_used_bytes ? bytes : state->budget_used_bytes;
    unlock_memory(memory);
    return;
  }
  unlock_memory(memory);
  release_to_ledger(memory, state, bytes);
}

int preempt_mem_readmit_after_oom(const preempt_mem_gpu *gpu, uint64_t bytes, int *device,
                                  preempt_mem_charge *charge, uint64_t deadline_ns) {
  preempt_mem_give_back(*device, bytes, *charge);
  return admit(gpu, bytes, device, charge, deadline_ns, 1);
}

/* A budget's allocations stay charged what they were admitted: the budget is the application's own declared
 * total, and the few bytes of padding a pitch adds show up as memory used outside the ledger. */
void preempt_mem_adjust(int device, uint64_t admitted_bytes, uint64_t actual_bytes, preempt_mem_charge charge) {
  preempt_mem_device *state = opened_device(device);
  if (!state || actual_bytes == admitted_bytes || charge == PREEMPT_MEM_CHARGE_BUDGET)
    return;
  if (actual_bytes < admitted_bytes) {
    preempt_mem_give_back(device, admitted_bytes - actual_bytes, charge);
    return;
  }
  uint64_t more = actual_bytes - admitted_bytes;
  if (__atomic_load_n(&state->on_daemon, __ATOMIC_ACQUIRE)) {
    preempt_memory *memory = preempt_memory_context();
    preempt_msg_mem_reply answer;
    char why[256];
    int result = preempt_mem_daemon_reserve(&memory->daemon, state->uuid, more, PREEMPT_MEM_RESERVE_NOW, read_gpu,
                                            NULL, preempt_monotonic_ns() + 1000000000ull, &answer, why, sizeof why);
    if (result == 0) {
      lock_memory();
      state->daemon_held_bytes += more;
      unlock_memory(memory);
      return;
    }
    if (result != -1 || leave_daemon(state) != 0)
      return; /* refused (more than the GPU): the padding shows up as used outside the ledger */
  }
  if (charge == PREEMPT_MEM_CHARGE_LEDGER && preempt_mem_segment_lock(&state->segment, NULL, 0) == 0) {
    /* Already allocated: the ledger records it without asking. */
    preempt_mem_ledger_restore(&state->segment.shared->ledger, state->segment.client, more);
    state->segment.held_bytes += more;
    preempt_mem_segment_unlock(&state->segment);
  }
}

/* ---- the allocation table: address -> what its free gives back (open addressing, linear probing) */

#define EMPTY 0ull
#define DELETED UINT64_MAX

static uint64_t slot_of(uint64_t address, uint64_t capacity) {
  uint64_t hash = address * 0x9e3779b97f4a7c15ull;
  return (hash ^ (hash >> 29)) & (capacity - 1);
}

static int grow_table(preempt_memory *memory) {
  uint64_t capacity = memory->table_capacity ? memory->table_capacity * 2 : 1024;
  preempt_mem_allocation *table = calloc(capacity, sizeof *table);
  if (!table)
    return -1;
  for (uint64_t index = 0; index < memory->table_capacity; index++) {
    preempt_mem_allocation *old = &memory->table[index];
    if (old->address == EMPTY || old->address == DELETED)
      continue;
    uint64_t slot = slot_of(old->address, capacity);
    while (table[slot].address != EMPTY)
      slot = (slot + 1) & (capacity - 1);
    table[slot] = *old;
  }
  free(memory->table);
  memory->table = table;
  memory->table_capacity = capacity;
  memory->table_deleted = 0;
  return 0;
}

void preempt_mem_record(uint64_t address, uint64_t bytes, int device, preempt_mem_charge charge) {
  if (device < 0 || address == EMPTY || address == DELETED)
    return;
  preempt_memory *memory = lock_memory();
  if ((memory->table_count + memory->table_deleted + 1) * 2 > memory->table_capacity && grow_table(memory) != 0) {
    /* No host memory to remember it: give it back now rather than leak it in the ledger forever. */
    unlock_memory(memory);
    preempt_mem_give_back(device, bytes, charge);
    say("out of host memory for the allocation table: an allocation of %llu bytes is no longer accounted",
        (unsigned long long)bytes);
    return;
  }
  uint64_t slot = slot_of(address, memory->table_capacity);
  while (memory->table[slot].address != EMPTY && memory->table[slot].address != DELETED)
    slot = (slot + 1) & (memory->table_capacity - 1);
  if (memory->table[slot].address == DELETED)
    memory->table_deleted--;
  memory->table[slot] = (preempt_mem_allocation){.address = address, .bytes = bytes, .device = device, .charge = charge};
  memory->table_count++;
  unlock_memory(memory);
}

/* Marks a live slot deleted (open addressing: lookups walk past it). Under the memory lock. */
static void delete_slot(preempt_memory *memory, preempt_mem_allocation *slot) {
  slot->address = DELETED;
  memory->table_count--;
  memory->table_deleted++;
}

int preempt_mem_forget(uint64_t address, preempt_mem_allocation *allocation) {
  preempt_memory *memory = lock_memory();
  int found = 0;
  if (memory->table_capacity && address != EMPTY && address != DELETED) {
    uint64_t slot = slot_of(address, memory->table_capacity);
    while (memory->table[slot].address != EMPTY) {
      if (memory->table[slot].address == address) {
        *allocation = memory->table[slot];
        delete_slot(memory, &memory->table[slot]);
        found = 1;
        break;
      }
      slot = (slot + 1) & (memory->table_capacity - 1);
    }
  }
  unlock_memory(memory);
  return found;
}

/* ---- the one admission loop every wrapper goes through */

int preempt_mem_allocate(const preempt_mem_gpu *gpu, uint64_t bytes, preempt_mem_real_allocation allocate,
                         void *call) {
  int device;
  preempt_mem_charge charge;
  uint64_t deadline = preempt_mem_deadline_ns();
  int status = preempt_mem_admit_until(gpu, bytes, &device, &charge, deadline);
  if (status != 0)
    return status;
  /* A retried failure of ours must not stay behind as the API's last error for the application to find,
   * unless one of its own was there already. */
  int drop_errors = gpu->error_pending && !gpu->error_pending();
  for (;;) {
    uint64_t address = 0, actual_bytes = bytes;
    status = allocate(call, &address, &actual_bytes);
    if (status == 0) {
      preempt_mem_adjust(device, bytes, actual_bytes, charge);
      preempt_mem_record(address, charge == PREEMPT_MEM_CHARGE_BUDGET ? bytes : actual_bytes, device, charge);
      return 0;
    }
    if (status != gpu->out_of_memory || device < 0 || preempt_monotonic_ns() >= deadline) {
      preempt_mem_give_back(device, bytes, charge);
      return status;
    }
    if (drop_errors)
      gpu->drop_last_error();
    struct timespec pause = {.tv_sec = 0, .tv_nsec = 10000000}; /* not a busy loop when nothing changes */
    nanosleep(&pause, NULL);
    status = preempt_mem_readmit_after_oom(gpu, bytes, &device, &charge, deadline);
    if (status != 0)
      return status;
  }
}

void preempt_mem_freed(uint64_t address) {
  preempt_mem_allocation allocation;
  if (preempt_mem_forget(address, &allocation))
    preempt_mem_give_back(allocation.device, allocation.bytes, allocation.charge);
}

void preempt_mem_device_reset(int device) {
  uint64_t ledger_bytes = 0, budget_bytes = 0;
  preempt_memory *memory = lock_memory();
  for (uint64_t index = 0; index < memory->table_capacity; index++) {
    preempt_mem_allocation *allocation = &memory->table[index];
    if (allocation->address == EMPTY || allocation->address == DELETED || allocation->device != device)
      continue;
    if (allocation->charge == PREEMPT_MEM_CHARGE_BUDGET)
      budget_bytes += allocation->bytes;
    else
      ledger_bytes += allocation->bytes;
    delete_slot(memory, allocation);
  }
  unlock_memory(memory);
  preempt_mem_give_back(device, ledger_bytes, PREEMPT_MEM_CHARGE_LEDGER);
  preempt_mem_give_back(device, budget_bytes, PREEMPT_MEM_CHARGE_BUDGET);
}

preempt_mem_allocation *preempt_mem_take(uint64_t address) {
  preempt_mem_allocation allocation;
  if (!preempt_mem_forget(address, &allocation))
    return NULL;
  preempt_mem_allocation *copy = malloc(sizeof *copy);
  if (!copy) {
    preempt_mem_give_back(allocation.device, allocation.bytes, allocation.charge);
    return NULL;
  }
  *copy = allocation;
  return copy;
}

void preempt_mem_give_back_taken(void *taken) {
  preempt_mem_allocation *allocation = taken;
  preempt_mem_give_back(allocation->device, allocation->bytes, allocation->charge);
  free(allocation);
}

uint64_t preempt_mem_pitched_estimate(uint64_t width, uint64_t rows) { return ((width + 511) & ~511ull) * rows; }

/* Shutdown (schedGPU §4): at exit everything this process holds goes back, and waiters are woken. A process
 * that dies without exiting is found by the others through its liveness byte instead. */
static void release_at_exit(void) {
  preempt_memory *memory = lock_memory();
  for (int device = 0; device < PREEMPT_MEM_MAX_DEVICES; device++) {
    preempt_mem_device *state = &memory->devices[device];
    if (state->opened != 1)
      continue;
    if (state->on_daemon) {
      /* What was admitted ahead goes back as a release, so that a process that freed everything does not end
       * holding memory (the daemon counts those as dead clients). */
      if (state->daemon_spare_bytes)
        (void)preempt_mem_daemon_release(&memory->daemon, state->uuid, state->daemon_spare_bytes);
      state->opened = 0; /* the connection's end, below, gives back what it held */
      state->daemon_held_bytes = state->daemon_spare_bytes = state->budget_bytes = state->budget_used_bytes = 0;
      continue;
    }
    if (preempt_mem_segment_lock(&state->segment, NULL, 0) == 0) {
      preempt_mem_segment_detach(&state->segment);
      preempt_mem_segment_unlock(&state->segment);
    }
    preempt_mem_segment_close(&state->segment);
    state->opened = 0;
    state->budget_bytes = state->budget_used_bytes = 0;
  }
  if (memory->daemon_state == 1)
    preempt_mem_daemon_close(&memory->daemon);
  unlock_memory(memory);
}

/* ---- the public API (preempt.h) */

preempt_status preempt_mem_budget_with(const preempt_mem_gpu *gpu, size_t bytes) {
  uint64_t deadline = preempt_mem_deadline_ns();
  preempt_memory *memory = lock_memory();
  int device_number;
  preempt_mem_device *state = open_device(memory, gpu, &device_number);
  if (!state) {
    unlock_memory(memory);
    return PREEMPT_ERROR_UNSUPPORTED;
  }
  state->budget_from_environment_done = 1; /* the program's own budget wins */
  uint64_t current = state->budget_bytes;
  if (bytes <= current) {
    /* Lowering gives back only what no allocation uses. */
    uint64_t keep = bytes > state->budget_used_bytes ? bytes : state->budget_used_bytes;
    state->budget_bytes = keep;
    unlock_memory(memory);
    release_to_ledger(memory, state, current - keep);
    return PREEMPT_OK;
  }
  unlock_memory(memory);
  ledger_view view;
  int waited = wait_for_ledger(memory, state, gpu, bytes - current, deadline, 0, &view);
  if (waited != 0) {
    if (waited > 0)
      say("preempt_mem_budget of %zu bytes on device %d %s", bytes, device_number, wait_failure(waited));
    return waited < 0 ? PREEMPT_ERROR_GPU : PREEMPT_ERROR_OUT_OF_MEMORY;
  }
  memory = lock_memory();
  state->budget_bytes += bytes - current;
  unlock_memory(memory);
  return PREEMPT_OK;
}

preempt_status preempt_mem_get_info_with(const preempt_mem_gpu *gpu, preempt_mem_info *info) {
  if (!info)
    return PREEMPT_ERROR_INVALID_ARGUMENT;
  memset(info, 0, sizeof *info);
  preempt_memory *memory = lock_memory();
  int device_number;
  preempt_mem_device *state = open_device(memory, gpu, &device_number);
  if (state && state->on_daemon) {
    info->held_bytes = state->daemon_held_bytes + state->budget_bytes;
    info->ahead_bytes = state->daemon_spare_bytes;
    info->budget_bytes = state->budget_bytes;
    info->budget_used_bytes = state->budget_used_bytes;
    unlock_memory(memory);
    preempt_msg_mem_reply answer;
    int answered = preempt_mem_daemon_query(&memory->daemon, state->uuid, read_gpu, (void *)gpu, &answer);
    if (answered == 1)
      return PREEMPT_ERROR_UNSUPPORTED;
    if (answered == 0) {
      info->capacity_bytes = answer.capacity_bytes;
      info->external_bytes = answer.external_bytes;
      info->reserved_bytes = answer.reserved_bytes;
      uint64_t taken = answer.external_bytes + answer.reserved_bytes;
      info->free_bytes = taken < answer.capacity_bytes ? answer.capacity_bytes - taken : 0;
      info->clients = answer.clients;
      info->waiting = answer.waiting;
      info->dead_clients = answer.dead_clients;
      snprintf(info->policy, sizeof info->policy, "%s", answer.policy);
      snprintf(info->ledger, sizeof info->ledger, "preemptd");
      return PREEMPT_OK;
    }
    if (leave_daemon(state) != 0)
      return PREEMPT_ERROR_UNSUPPORTED;
    memset(info, 0, sizeof *info);
    memory = lock_memory();
  }
  if (!state || preempt_mem_segment_lock(&state->segment, NULL, 0) != 0) {
    unlock_memory(memory);
    return PREEMPT_ERROR_UNSUPPORTED;
  }
  /* schedGPU §3.2's sanity check: what dead clients held is not reported as reserved. */
  preempt_mem_segment_reclaim_dead(&state->segment);
  const preempt_mem_ledger *ledger = &state->segment.shared->ledger;
  info->capacity_bytes = ledger->capacity_bytes;
  info->external_bytes = ledger->external_bytes;
  info->reserved_bytes = preempt_mem_ledger_used_bytes(ledger);
  info->free_bytes = preempt_mem_ledger_free_bytes(ledger);
  for (uint32_t index = 0; index < PREEMPT_MEM_MAX_CLIENTS; index++)
    info->clients += ledger->clients[index].in_use;
  info->waiting = preempt_mem_ledger_waiting(ledger, PREEMPT_MEM_NO_INDEX);
  info->dead_clients = ledger->dead_clients;
  info->held_bytes = state->segment.held_bytes;
  info->budget_bytes = state->budget_bytes;
  info->budget_used_bytes = state->budget_used_bytes;
  info->reinitializations = state->segment.shared->reinitializations;
  info->lock_owner_deaths = state->segment.shared->owner_deaths;
  info->lost_wakeups = state->segment.shared->lost_wakeups;
  snprintf(info->policy, sizeof info->policy, "%s", preempt_mem_policy_name((preempt_mem_policy)ledger->policy));
  snprintf(info->ledger, sizeof info->ledger, "shared");
  preempt_mem_segment_unlock(&state->segment);
  unlock_memory(memory);
  return PREEMPT_OK;
}
