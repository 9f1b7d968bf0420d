/* mem_ledger.h: one GPU's ledger of device-memory reservations and the queue of requests waiting for memory.
 * schedGPU §3.2 (total, per-client used memory, queue of waiters) and §5 (FIFO, MMU, priority FIFO, priority MMU).
 *
 * Plain data with no pointers, so that the same struct lives in a process-shared segment (daemonless mode,
 * runtime-host/mem_segment.c) or in a daemon's memory. The caller serializes every call (a robust mutex).
 *
 * Crash safety: a process may die between any two stores of any call here. Each call is written so that
 * what it leaves half done is either invisible or finished by the next call: a request becomes visible by
 * one store of its state, a grant is one store (the granted bytes count as used from then on, whether or
 * not the waiter has taken them yet), and removing a dead client is idempotent. preempt_mem_ledger_check
 * catches the rest (a segment scribbled on by a buggy process). */
#ifndef PREEMPT_MEM_LEDGER_H
#define PREEMPT_MEM_LEDGER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PREEMPT_MEM_LEDGER_MAGIC 0x474d5250u /* "PRMG" */
#define PREEMPT_MEM_LEDGER_VERSION 2u
#define PREEMPT_MEM_MAX_CLIENTS 256
#define PREEMPT_MEM_MAX_WAITERS 256
#define PREEMPT_MEM_NO_INDEX UINT32_MAX

/* How waiting requests are served when memory frees up (schedGPU §5). The paper's prose leaves the
 * priority policies' order within a class ambiguous; here they form a 2x2 grid, so that each differs from
 * its neighbours in one thing (docs/memory.md):
 *   FIFO           every waiter, in arrival order; the first that does not fit stops the rest.
 *   MMU            every waiter, in arrival order; any that fits is served (first fit).
 *   PRIORITY_FIFO  only the waiters of the highest waiting priority, as FIFO.
 *   PRIORITY_MMU   only the waiters of the highest waiting priority, as MMU.
 * A lower priority never overtakes a waiting higher one under the priority policies. */
typedef enum preempt_mem_policy {
  PREEMPT_MEM_POLICY_FIFO = 0,
  PREEMPT_MEM_POLICY_MMU = 1,
  PREEMPT_MEM_POLICY_PRIORITY_FIFO = 2,
  PREEMPT_MEM_POLICY_PRIORITY_MMU = 3,
  PREEMPT_MEM_POLICY_COUNT = 4,
} preempt_mem_policy;

/* "fifo", "mmu", "priority-fifo", "priority-mmu"; NULL for a value out of range. */
const char *preempt_mem_policy_name(preempt_mem_policy policy);
/* 0 and *policy set, or -1 for a name not in the list above. */
int preempt_mem_policy_parse(const char *name, preempt_mem_policy *policy);

typedef enum preempt_mem_result {
  PREEMPT_MEM_OK = 0,
  PREEMPT_MEM_FULL = 1,        /* no free client slot or waiter entry */
  PREEMPT_MEM_NEVER_FITS = 2,  /* more than the GPU's whole capacity */
  PREEMPT_MEM_INVALID = 3,     /* an index that is not the caller's, a release of more than it holds */
} preempt_mem_result;

enum { PREEMPT_MEM_WAITER_FREE = 0, PREEMPT_MEM_WAITER_WAITING = 1, PREEMPT_MEM_WAITER_GRANTED = 2 };

typedef struct preempt_mem_client {
  uint32_t in_use;          /* 0: free slot */
  uint32_t pid;             /* for listings */
  int32_t priority;
  uint32_t reserved0;
  uint64_t reserved_bytes;  /* taken grants, minus releases */
  uint64_t liveness_key;    /* the caller's: how it tells whether the client lives (mem_segment.c: a locked byte) */
} preempt_mem_client;

typedef struct preempt_mem_waiter {
  uint32_t state;           /* PREEMPT_MEM_WAITER_*; written last when a request is queued */
  uint32_t client;          /* slot index */
  int32_t priority;         /* the client's, when it asked */
  uint32_t reserved0;
  uint64_t bytes;
  uint64_t arrival;         /* order of requests: from the ledger's next_arrival */
  uint64_t grant;           /* order of grants, once GRANTED: the ledger's grant count then */
} preempt_mem_waiter;

typedef struct preempt_mem_ledger {
  uint32_t magic, version;
  uint32_t policy;          /* preempt_mem_policy */
  uint32_t reserved0;
  uint64_t capacity_bytes;  /* the GPU's memory */
  uint64_t external_bytes;  /* used by processes outside the ledger (and by the clients' own contexts) */
  uint64_t next_arrival;
  uint64_t grants, waits, dead_clients; /* counters, for listings */
  /* One past the highest client slot and waiter entry used since init: every scan stops there, so that a node
   * with a few clients pays for a few, not for 256 + 256 entries per allocation (a program that allocates and
   * frees per kernel, as Thrust's temporary storage does, makes that cost visible). They only grow, and grow
   * before the entry is published: a crash between the two leaves an end too high, which costs time only. */
  uint32_t clients_end, waiters_end;
  preempt_mem_client clients[PREEMPT_MEM_MAX_CLIENTS];
  preempt_mem_waiter waiters[PREEMPT_MEM_MAX_WAITERS];
} preempt_mem_ledger;

void preempt_mem_ledger_init(preempt_mem_ledger *ledger, uint64_t capacity_bytes, preempt_mem_policy policy);

/* Takes a free client slot. PREEMPT_MEM_FULL when none is left. */
preempt_mem_result preempt_mem_ledger_attach(preempt_mem_ledger *ledger, uint32_t pid, int32_t priority,
                                             uint64_t liveness_key, uint32_t *client);

/* Frees the slot with everything it holds: reservations, waiting requests, grants not yet taken. Used for
 * a client that ends and for one found dead. Serves the waiters that now fit. Idempotent. */
void preempt_mem_ledger_detach(preempt_mem_ledger *ledger, uint32_t client);

/* Adds bytes the client already holds to its slot, unconditionally: after a damaged ledger was
 * reinitialized, each live client restores what it had. */
preempt_mem_result preempt_mem_ledger_restore(preempt_mem_ledger *ledger, uint32_t client, uint64_t bytes);

/* Bytes reserved by clients plus grants not yet taken. */
uint64_t preempt_mem_ledger_used_bytes(const preempt_mem_ledger *ledger);
/* capacity - external - used, or 0. */
uint64_t preempt_mem_ledger_free_bytes(const preempt_mem_ledger *ledger);

/* Queues a request and serves waiters by the policy. *waiter is the request's entry: read its state;
 * GRANTED: take it (preempt_mem_ledger_take); WAITING: wait for a change and look again, or cancel.
 * PREEMPT_MEM_NEVER_FITS for more than the capacity (nothing queued). */
preempt_mem_result preempt_mem_ledger_request(preempt_mem_ledger *ledger, uint32_t client, uint64_t bytes,
                                              uint32_t *waiter);

/* A GRANTED entry's bytes move to its client's reservation and the entry is freed. */
preempt_mem_result preempt_mem_ledger_take(preempt_mem_ledger *ledger, uint32_t client, uint32_t waiter);

/* Withdraws a request (a timeout): WAITING or GRANTED, the entry is freed and its bytes given back; then
 * serves the waiters that now may go (a FIFO head that leaves unblocks those behind it). */
preempt_mem_result preempt_mem_ledger_cancel(preempt_mem_ledger *ledger, uint32_t client, uint32_t waiter);

/* Gives back bytes of the client's reservation and serves waiters. PREEMPT_MEM_INVALID (nothing changed)
 * for more than it holds. */
preempt_mem_result preempt_mem_ledger_release(preempt_mem_ledger *ledger, uint32_t client, uint64_t bytes);

/* Sets the memory used outside the ledger (from the GPU's used memory) and serves waiters. */
void preempt_mem_ledger_set_external(preempt_mem_ledger *ledger, uint64_t external_bytes);

/* Grants every waiting request the policy lets go now; returns how many. Every call above that frees
 * memory or queues a request calls it. */
uint32_t preempt_mem_ledger_serve(preempt_mem_ledger *ledger);

/* Waiting requests, or waiting requests of one client (client = PREEMPT_MEM_NO_INDEX: all). */
uint32_t preempt_mem_ledger_waiting(const preempt_mem_ledger *ledger, uint32_t client);

/* 0 when the ledger is consistent, else -1 with the first problem written to why (may be NULL). A ledger
 * that fails is to be reinitialized: nothing in it can be trusted. */
int preempt_mem_ledger_check(const preempt_mem_ledger *ledger, char *why, size_t why_bytes);

#ifdef __cplusplus
}
#endif

#endif
