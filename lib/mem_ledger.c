/* mem_ledger.c: admission of device-memory requests against one GPU's ledger, and the four serving policies.
 * schedGPU §3.2 (the shared ledger, sanity check of dead clients) and §5 (FIFO, MMU, priority FIFO/MMU). */
#include "preempt/mem_ledger.h"

#include <stdio.h>
#include <string.h>

static const char *const policy_names[PREEMPT_MEM_POLICY_COUNT] = {"fifo", "mmu", "priority-fifo", "priority-mmu"};

const char *preempt_mem_policy_name(preempt_mem_policy policy) {
  return (unsigned)policy < PREEMPT_MEM_POLICY_COUNT ? policy_names[policy] : NULL;
}

int preempt_mem_policy_parse(const char *name, preempt_mem_policy *policy) {
  for (int index = 0; name && index < PREEMPT_MEM_POLICY_COUNT; index++)
    if (strcmp(name, policy_names[index]) == 0) {
      *policy = (preempt_mem_policy)index;
      return 0;
    }
  return -1;
}

/* A waiter's state is the one store that publishes or retires an entry (see the header on crash safety):
 * the compiler must not move the entry's other stores after it. */
static void store_state(preempt_mem_waiter *waiter, uint32_t state) {
  __atomic_store_n(&waiter->state, state, __ATOMIC_RELEASE);
}

void preempt_mem_ledger_init(preempt_mem_ledger *ledger, uint64_t capacity_bytes, preempt_mem_policy policy) {
  memset(ledger, 0, sizeof *ledger);
  ledger->version = PREEMPT_MEM_LEDGER_VERSION;
  ledger->policy = (unsigned)policy < PREEMPT_MEM_POLICY_COUNT ? policy : PREEMPT_MEM_POLICY_FIFO;
  ledger->capacity_bytes = capacity_bytes;
  ledger->next_arrival = 1;
  __atomic_store_n(&ledger->magic, PREEMPT_MEM_LEDGER_MAGIC, __ATOMIC_RELEASE);
}

/* The ends, bounded: a scribbled segment must not send a scan out of the arrays before the next check. */
static uint32_t clients_end(const preempt_mem_ledger *ledger) {
  return ledger->clients_end < PREEMPT_MEM_MAX_CLIENTS ? ledger->clients_end : PREEMPT_MEM_MAX_CLIENTS;
}

static uint32_t waiters_end(const preempt_mem_ledger *ledger) {
  return ledger->waiters_end < PREEMPT_MEM_MAX_WAITERS ? ledger->waiters_end : PREEMPT_MEM_MAX_WAITERS;
}

static int owns_slot(const preempt_mem_ledger *ledger, uint32_t client) {
  return client < PREEMPT_MEM_MAX_CLIENTS && ledger->clients[client].in_use == 1;
}

preempt_mem_result preempt_mem_ledger_attach(preempt_mem_ledger *ledger, uint32_t pid, int32_t priority,
                                             uint64_t liveness_key, uint32_t *client) {
  for (uint32_t index = 0; index < PREEMPT_MEM_MAX_CLIENTS; index++) {
    preempt_mem_client *slot = &ledger->clients[index];
    if (slot->in_use)
      continue;
    slot->pid = pid;
    slot->priority = priority;
    slot->reserved_bytes = 0;
    slot->liveness_key = liveness_key;
    if (index >= ledger->clients_end)
      ledger->clients_end = index + 1;
    __atomic_store_n(&slot->in_use, 1u, __ATOMIC_RELEASE);
    *client = index;
    return PREEMPT_MEM_OK;
  }
  return PREEMPT_MEM_FULL;
}

void preempt_mem_ledger_detach(preempt_mem_ledger *ledger, uint32_t client) {
  if (client >= PREEMPT_MEM_MAX_CLIENTS)
    return;
  /* Entries first: a crash halfway leaves a slot still in use, whose next detach finishes the job. */
  for (uint32_t index = 0; index < waiters_end(ledger); index++) {
    preempt_mem_waiter *waiter = &ledger->waiters[index];
    if (waiter->state != PREEMPT_MEM_WAITER_FREE && waiter->client == client)
      store_state(waiter, PREEMPT_MEM_WAITER_FREE);
  }
  preempt_mem_client *slot = &ledger->clients[client];
  if (!slot->in_use)
    return;
  __atomic_store_n(&slot->in_use, 0u, __ATOMIC_RELEASE);
  slot->reserved_bytes = 0;
  preempt_mem_ledger_serve(ledger);
}

preempt_mem_result preempt_mem_ledger_restore(preempt_mem_ledger *ledger, uint32_t client, uint64_t bytes) {
  if (!owns_slot(ledger, client))
    return PREEMPT_MEM_INVALID;
  ledger->clients[client].reserved_bytes += bytes;
  return PREEMPT_MEM_OK;
}

uint64_t preempt_mem_ledger_used_bytes(const preempt_mem_ledger *ledger) {
  uint64_t used = 0;
  for (uint32_t index = 0; index < clients_end(ledger); index++)
    if (ledger->clients[index].in_use)
      used += ledger->clients[index].reserved_bytes;
  for (uint32_t index = 0; index < waiters_end(ledger); index++)
    if (ledger->waiters[index].state == PREEMPT_MEM_WAITER_GRANTED)
      used += ledger->waiters[index].bytes;
  return used;
}

uint64_t preempt_mem_ledger_free_bytes(const preempt_mem_ledger *ledger) {
  uint64_t taken = ledger->external_bytes + preempt_mem_ledger_used_bytes(ledger);
  return taken >= ledger->capacity_bytes ? 0 : ledger->capacity_bytes - taken;
}

preempt_mem_result preempt_mem_ledger_request(preempt_mem_ledger *ledger, uint32_t client, uint64_t bytes,
                                              uint32_t *waiter) {
  if (!owns_slot(ledger, client))
    return PREEMPT_MEM_INVALID;
  if (bytes > ledger->capacity_bytes)
    return PREEMPT_MEM_NEVER_FITS;
  for (uint32_t index = 0; index < PREEMPT_MEM_MAX_WAITERS; index++) {
    preempt_mem_waiter *entry = &ledger->waiters[index];
    if (entry->state != PREEMPT_MEM_WAITER_FREE)
      continue;
    entry->client = client;
    entry->priority = ledger->clients[client].priority;
    entry->bytes = bytes;
    entry->arrival = ledger->next_arrival++;
    if (index >= ledger->waiters_end)
      ledger->waiters_end = index + 1;
    store_state(entry, PREEMPT_MEM_WAITER_WAITING);
    *waiter = index;
    preempt_mem_ledger_serve(ledger);
    if (entry->state == PREEMPT_MEM_WAITER_WAITING)
      ledger->waits++;
    return PREEMPT_MEM_OK;
  }
  return PREEMPT_MEM_FULL;
}

static preempt_mem_waiter *clients_entry(preempt_mem_ledger *ledger, uint32_t client, uint32_t waiter) {
  if (!owns_slot(ledger, client) || waiter >= PREEMPT_MEM_MAX_WAITERS)
    return NULL;
  preempt_mem_waiter *entry = &ledger->waiters[waiter];
  return entry->state != PREEMPT_MEM_WAITER_FREE && entry->client == client ? entry : NULL;
}

preempt_mem_result preempt_mem_ledger_take(preempt_mem_ledger *ledger, uint32_t client, uint32_t waiter) {
  preempt_mem_waiter *entry = clients_entry(ledger, client, waiter);
  if (!entry || entry->state != PREEMPT_MEM_WAITER_GRANTED)
    return PREEMPT_MEM_INVALID;
  /* A crash between these two stores kills the client, whose whole slot is then freed: nothing leaks. */
  ledger->clients[client].reserved_bytes += entry->bytes;
  store_state(entry, PREEMPT_MEM_WAITER_FREE);
  return PREEMPT_MEM_OK;
}

preempt_mem_result preempt_mem_ledger_cancel(preempt_mem_ledger *ledger, uint32_t client, uint32_t waiter) {
  preempt_mem_waiter *entry = clients_entry(ledger, client, waiter);
  if (!entry)
    return PREEMPT_MEM_INVALID;
  store_state(entry, PREEMPT_MEM_WAITER_FREE);
  preempt_mem_ledger_serve(ledger);
  return PREEMPT_MEM_OK;
}

preempt_mem_result preempt_mem_ledger_release(preempt_mem_ledger *ledger, uint32_t client, uint64_t bytes) {
  if (!owns_slot(ledger, client) || bytes > ledger->clients[client].reserved_bytes)
    return PREEMPT_MEM_INVALID;
  ledger->clients[client].reserved_bytes -= bytes;
  preempt_mem_ledger_serve(ledger);
  return PREEMPT_MEM_OK;
}

void preempt_mem_ledger_set_external(preempt_mem_ledger *ledger, uint64_t external_bytes) {
  ledger->external_bytes = external_bytes;
  preempt_mem_ledger_serve(ledger);
}

/* The next waiter the policy looks at: the earliest arrival among those eligible and not yet skipped
 * (arrival > after). Priority policies consider only the highest waiting priority. */
static preempt_mem_waiter *next_eligible(preempt_mem_ledger *ledger, int by_priority, int32_t top_priority,
                                         uint64_t after) {
  preempt_mem_waiter *best = NULL;
  for (uint32_t index = 0; index < waiters_end(ledger); index++) {
    preempt_mem_waiter *entry = &ledger->waiters[index];
    if (entry->state != PREEMPT_MEM_WAITER_WAITING || entry->arrival <= after)
      continue;
    if (by_priority && entry->priority != top_priority)
      continue;
    if (!best || entry->arrival < best->arrival)
      best = entry;
  }
  return best;
}

static int top_waiting_priority(const preempt_mem_ledger *ledger, int32_t *top_priority) {
  int found = 0;
  for (uint32_t index = 0; index < waiters_end(ledger); index++) {
    const preempt_mem_waiter *entry = &ledger->waiters[index];
    if (entry->state != PREEMPT_MEM_WAITER_WAITING)
      continue;
    if (!found || entry->priority > *top_priority)
      *top_priority = entry->priority;
    found = 1;
  }
  return found;
}

uint32_t preempt_mem_ledger_serve(preempt_mem_ledger *ledger) {
  const int by_priority =
      ledger->policy == PREEMPT_MEM_POLICY_PRIORITY_FIFO || ledger->policy == PREEMPT_MEM_POLICY_PRIORITY_MMU;
  const int first_fit = ledger->policy == PREEMPT_MEM_POLICY_MMU || ledger->policy == PREEMPT_MEM_POLICY_PRIORITY_MMU;
  uint32_t granted = 0;
  uint64_t free_bytes = preempt_mem_ledger_free_bytes(ledger);
  /* One pass in arrival order per priority class; a grant under a priority policy may empty the top class,
   * so the class is recomputed after each one. */
  int32_t top_priority = 0;
  uint64_t after = 0;
  while (top_waiting_priority(ledger, &top_priority)) {
    preempt_mem_waiter *entry = next_eligible(ledger, by_priority, top_priority, after);
    if (!entry)
      break;
    if (entry->bytes <= free_bytes) {
      entry->grant = ++ledger->grants;
      store_state(entry, PREEMPT_MEM_WAITER_GRANTED);
      free_bytes -= entry->bytes;
      granted++;
      after = 0; /* a class may have changed: start again from its earliest */
      continue;
    }
    if (!first_fit)
      break;
    after = entry->arrival;
  }
  return granted;
}

uint32_t preempt_mem_ledger_waiting(const preempt_mem_ledger *ledger, uint32_t client) {
  uint32_t count = 0;
  for (uint32_t index = 0; index < waiters_end(ledger); index++) {
    const preempt_mem_waiter *entry = &ledger->waiters[index];
    if (entry->state == PREEMPT_MEM_WAITER_WAITING && (client == PREEMPT_MEM_NO_INDEX || entry->client == client))
      count++;
  }
  return count;
}

#define FAIL(...)                                                                                                     \
  do {                                                                                                                \
    if (why && why_bytes)                                                                                             \
      snprintf(why, why_bytes, __VA_ARGS__);                                                                          \
    return -1;                                                                                                        \
  } while (0)

int preempt_mem_ledger_check(const preempt_mem_ledger *ledger, char *why, size_t why_bytes) {
  if (ledger->magic != PREEMPT_MEM_LEDGER_MAGIC)
    FAIL("bad magic 0x%08x", ledger->magic);
  if (ledger->version != PREEMPT_MEM_LEDGER_VERSION)
    FAIL("version %u, expected %u", ledger->version, PREEMPT_MEM_LEDGER_VERSION);
  if (ledger->policy >= PREEMPT_MEM_POLICY_COUNT)
    FAIL("policy %u out of range", ledger->policy);
  if (ledger->capacity_bytes == 0)
    FAIL("capacity 0");
  if (ledger->clients_end > PREEMPT_MEM_MAX_CLIENTS || ledger->waiters_end > PREEMPT_MEM_MAX_WAITERS)
    FAIL("ends %u clients, %u waiters, above the tables' %u, %u", ledger->clients_end, ledger->waiters_end,
         PREEMPT_MEM_MAX_CLIENTS, PREEMPT_MEM_MAX_WAITERS);
  if (ledger->external_bytes > ledger->capacity_bytes)
    FAIL("external %llu bytes above capacity %llu", (unsigned long long)ledger->external_bytes,
         (unsigned long long)ledger->capacity_bytes);
  for (uint32_t index = 0; index < PREEMPT_MEM_MAX_CLIENTS; index++) {
    const preempt_mem_client *slot = &ledger->clients[index];
    if (slot->in_use > 1)
      FAIL("client %u: in_use %u", index, slot->in_use);
    if (slot->in_use && slot->reserved_bytes > ledger->capacity_bytes)
      FAIL("client %u: %llu bytes reserved, above capacity", index, (unsigned long long)slot->reserved_bytes);
    if (slot->in_use && index >= ledger->clients_end)
      FAIL("client %u in use beyond the clients' end %u", index, ledger->clients_end);
  }
  for (uint32_t index = 0; index < PREEMPT_MEM_MAX_WAITERS; index++) {
    const preempt_mem_waiter *entry = &ledger->waiters[index];
    if (entry->state == PREEMPT_MEM_WAITER_FREE)
      continue;
    if (entry->state > PREEMPT_MEM_WAITER_GRANTED)
      FAIL("waiter %u: state %u", index, entry->state);
    if (index >= ledger->waiters_end)
      FAIL("waiter %u in use beyond the waiters' end %u", index, ledger->waiters_end);
    if (entry->client >= PREEMPT_MEM_MAX_CLIENTS || !ledger->clients[entry->client].in_use)
      FAIL("waiter %u: client %u not in use", index, entry->client);
    if (entry->bytes > ledger->capacity_bytes)
      FAIL("waiter %u: %llu bytes, above capacity", index, (unsigned long long)entry->bytes);
    if (entry->arrival == 0 || entry->arrival >= ledger->next_arrival)
      FAIL("waiter %u: arrival %llu not before %llu", index, (unsigned long long)entry->arrival,
           (unsigned long long)ledger->next_arrival);
  }
  return 0;
}
