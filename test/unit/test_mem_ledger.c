/* test_mem_ledger.c: the memory ledger alone: each policy's admission order, cancellation, dead clients, checks.
 * schedGPU §5's four policies (lib/mem_ledger.c); orders below are worked out by hand in the comments. */
#include "preempt/mem_ledger.h"

#include <stdlib.h>
#include <string.h>

#include "check.h"

/* The scripted scenario every policy runs. Capacity 100. A takes 60 at once. Then B (priority 0, 50),
 * C (0, 30), D (5, 45), E (0, 10) ask, in that order, while 40 are free. A releases its 60. Then, until no
 * one waits, the earliest-granted of B..E that still holds memory releases it.
 *   fifo:          B, C at A's release (D 45 > 20 left stops E); B's release: D, E.       -> BCDE
 *   mmu:           C, E on arrival; B at A's release; C's release: D 45 > 40 no; E's: D.  -> CEBD
 *   priority-fifo: at A's release D (class 5), then B; C 30 > 5 stops; D's release: C, E. -> DBCE
 *   priority-mmu:  C on arrival; at A's release D, then class 0: B no, E yes; C's release:
 *                  B 50 > 45 no; D's release: B.                                         -> CDEB */
static void run_scenario(preempt_mem_policy policy, char *order) {
  static preempt_mem_ledger ledger;
  preempt_mem_ledger_init(&ledger, 100, policy);
  const char names[] = "ABCDE";
  const int32_t priorities[] = {0, 0, 0, 5, 0};
  const uint64_t bytes[] = {60, 50, 30, 45, 10};
  uint32_t clients[5], waiters[5];
  int holding[5] = {0}, granted_at[5];
  int grants = 0;
  for (int index = 0; index < 5; index++)
    CHECK(preempt_mem_ledger_attach(&ledger, 100 + index, priorities[index], 0, &clients[index]) == PREEMPT_MEM_OK);
  /* Takes every grant in the ledger, in the order the ledger granted them. */
#define COLLECT()                                                                                                     \
  for (;;) {                                                                                                          \
    int next = -1;                                                                                                    \
    for (int who = 0; who < 5; who++)                                                                                 \
      if (!holding[who] && waiters[who] != PREEMPT_MEM_NO_INDEX &&                                                    \
          ledger.waiters[waiters[who]].state == PREEMPT_MEM_WAITER_GRANTED &&                                         \
          (next < 0 || ledger.waiters[waiters[who]].grant < ledger.waiters[waiters[next]].grant))                     \
        next = who;                                                                                                   \
    if (next < 0)                                                                                                     \
      break;                                                                                                          \
    CHECK(preempt_mem_ledger_take(&ledger, clients[next], waiters[next]) == PREEMPT_MEM_OK);                          \
    holding[next] = 1;                                                                                                \
    granted_at[next] = grants;                                                                                        \
    if (next > 0) /* A's own grant is not part of the order */                                                        \
      order[grants++] = names[next];                                                                                  \
    waiters[next] = PREEMPT_MEM_NO_INDEX;                                                                             \
  }
  for (int index = 0; index < 5; index++)
    waiters[index] = PREEMPT_MEM_NO_INDEX;
  for (int index = 0; index < 5; index++) {
    CHECK(preempt_mem_ledger_request(&ledger, clients[index], bytes[index], &waiters[index]) == PREEMPT_MEM_OK);
    COLLECT();
  }
  CHECK(holding[0]); /* A fitted at once */
  CHECK(preempt_mem_ledger_release(&ledger, clients[0], 60) == PREEMPT_MEM_OK);
  holding[0] = 0;
  COLLECT();
  for (int round = 0; round < 8 && preempt_mem_ledger_waiting(&ledger, PREEMPT_MEM_NO_INDEX) > 0; round++) {
    int earliest = -1;
    for (int who = 1; who < 5; who++)
      if (holding[who] == 1 && (earliest < 0 || granted_at[who] < granted_at[earliest]))
        earliest = who;
    CHECK(earliest > 0);
    if (earliest <= 0)
      break;
    CHECK(preempt_mem_ledger_release(&ledger, clients[earliest], bytes[earliest]) == PREEMPT_MEM_OK);
    holding[earliest] = 2; /* done: held and released */
    COLLECT();
  }
  order[grants] = '\0';
  CHECK(preempt_mem_ledger_check(&ledger, NULL, 0) == 0);
#undef COLLECT
}

static void test_policy_orders(void) {
  const char *expected[PREEMPT_MEM_POLICY_COUNT] = {"BCDE", "CEBD", "DBCE", "CDEB"};
  for (int policy = 0; policy < PREEMPT_MEM_POLICY_COUNT; policy++) {
    char order[8] = "";
    run_scenario((preempt_mem_policy)policy, order);
    printf("%s: %s\n", preempt_mem_policy_name((preempt_mem_policy)policy), order);
    if (strcmp(order, expected[policy]) != 0) {
      fprintf(stderr, "%s: order %s, expected %s\n", preempt_mem_policy_name((preempt_mem_policy)policy), order,
              expected[policy]);
      check_failures++;
    }
  }
}

/* A FIFO head that gives up (timeout) must let those behind it go: otherwise a wake-up is lost. */
static void test_cancel_unblocks(void) {
  static preempt_mem_ledger ledger;
  preempt_mem_ledger_init(&ledger, 100, PREEMPT_MEM_POLICY_FIFO);
  uint32_t holder, head, behind, waiter, head_waiter, behind_waiter;
  CHECK(preempt_mem_ledger_attach(&ledger, 1, 0, 0, &holder) == PREEMPT_MEM_OK);
  CHECK(preempt_mem_ledger_attach(&ledger, 2, 0, 0, &head) == PREEMPT_MEM_OK);
  CHECK(preempt_mem_ledger_attach(&ledger, 3, 0, 0, &behind) == PREEMPT_MEM_OK);
  CHECK(preempt_mem_ledger_request(&ledger, holder, 70, &waiter) == PREEMPT_MEM_OK);
  CHECK(preempt_mem_ledger_take(&ledger, holder, waiter) == PREEMPT_MEM_OK);
  CHECK(preempt_mem_ledger_request(&ledger, head, 50, &head_waiter) == PREEMPT_MEM_OK);
  CHECK(preempt_mem_ledger_request(&ledger, behind, 20, &behind_waiter) == PREEMPT_MEM_OK);
  CHECK(ledger.waiters[behind_waiter].state == PREEMPT_MEM_WAITER_WAITING); /* 20 fits, but FIFO */
  CHECK(preempt_mem_ledger_cancel(&ledger, head, head_waiter) == PREEMPT_MEM_OK);
  CHECK(ledger.waiters[behind_waiter].state == PREEMPT_MEM_WAITER_GRANTED);
  CHECK_EQ_U64(preempt_mem_ledger_free_bytes(&ledger), 10);
  /* Cancelling a grant not yet taken gives its bytes back. */
  CHECK(preempt_mem_ledger_cancel(&ledger, behind, behind_waiter) == PREEMPT_MEM_OK);
  CHECK_EQ_U64(preempt_mem_ledger_free_bytes(&ledger), 30);
  CHECK(preempt_mem_ledger_cancel(&ledger, behind, behind_waiter) == PREEMPT_MEM_INVALID);
}

/* A client found dead leaves nothing behind: reservations, waiting requests, and grants it never took. */
static void test_detach_dead(void) {
  static preempt_mem_ledger ledger;
  preempt_mem_ledger_init(&ledger, 100, PREEMPT_MEM_POLICY_MMU);
  uint32_t dead, live, waiter, dead_grant, live_waiter;
  CHECK(preempt_mem_ledger_attach(&ledger, 1, 0, 0, &dead) == PREEMPT_MEM_OK);
  CHECK(preempt_mem_ledger_attach(&ledger, 2, 0, 0, &live) == PREEMPT_MEM_OK);
  CHECK(preempt_mem_ledger_request(&ledger, dead, 40, &waiter) == PREEMPT_MEM_OK);
  CHECK(preempt_mem_ledger_take(&ledger, dead, waiter) == PREEMPT_MEM_OK);
  CHECK(preempt_mem_ledger_request(&ledger, dead, 30, &dead_grant) == PREEMPT_MEM_OK); /* granted, never taken */
  CHECK(ledger.waiters[dead_grant].state == PREEMPT_MEM_WAITER_GRANTED);
  CHECK(preempt_mem_ledger_request(&ledger, live, 90, &live_waiter) == PREEMPT_MEM_OK);
  CHECK(ledger.waiters[live_waiter].state == PREEMPT_MEM_WAITER_WAITING);
  preempt_mem_ledger_detach(&ledger, dead);
  CHECK(ledger.waiters[live_waiter].state == PREEMPT_MEM_WAITER_GRANTED);
  CHECK(ledger.waiters[dead_grant].state == PREEMPT_MEM_WAITER_FREE || dead_grant == live_waiter);
  CHECK_EQ_U64(preempt_mem_ledger_used_bytes(&ledger), 90);
  preempt_mem_ledger_detach(&ledger, dead); /* idempotent */
  CHECK_EQ_U64(preempt_mem_ledger_used_bytes(&ledger), 90);
  CHECK(preempt_mem_ledger_request(&ledger, dead, 1, &waiter) == PREEMPT_MEM_INVALID);
  CHECK(preempt_mem_ledger_check(&ledger, NULL, 0) == 0);
}

static void test_limits(void) {
  static preempt_mem_ledger ledger;
  preempt_mem_ledger_init(&ledger, 100, PREEMPT_MEM_POLICY_FIFO);
  uint32_t client, waiter;
  CHECK(preempt_mem_ledger_attach(&ledger, 1, 0, 0, &client) == PREEMPT_MEM_OK);
  CHECK(preempt_mem_ledger_request(&ledger, client, 101, &waiter) == PREEMPT_MEM_NEVER_FITS);
  CHECK(preempt_mem_ledger_waiting(&ledger, PREEMPT_MEM_NO_INDEX) == 0);
  CHECK(preempt_mem_ledger_release(&ledger, client, 1) == PREEMPT_MEM_INVALID);
  /* Memory used outside the ledger counts: 80 outside leaves 20. */
  preempt_mem_ledger_set_external(&ledger, 80);
  CHECK(preempt_mem_ledger_request(&ledger, client, 30, &waiter) == PREEMPT_MEM_OK);
  CHECK(ledger.waiters[waiter].state == PREEMPT_MEM_WAITER_WAITING);
  preempt_mem_ledger_set_external(&ledger, 60);
  CHECK(ledger.waiters[waiter].state == PREEMPT_MEM_WAITER_GRANTED);
  CHECK(preempt_mem_ledger_take(&ledger, client, waiter) == PREEMPT_MEM_OK);
  CHECK(preempt_mem_ledger_take(&ledger, client, waiter) == PREEMPT_MEM_INVALID);
  CHECK(preempt_mem_ledger_release(&ledger, client, 31) == PREEMPT_MEM_INVALID);
  CHECK(preempt_mem_ledger_release(&ledger, client, 30) == PREEMPT_MEM_OK);
  /* Every slot taken: the next client is told, not given someone else's. */
  for (int index = 1; index < PREEMPT_MEM_MAX_CLIENTS; index++)
    CHECK(preempt_mem_ledger_attach(&ledger, 2, 0, 0, &client) == PREEMPT_MEM_OK);
  CHECK(preempt_mem_ledger_attach(&ledger, 3, 0, 0, &client) == PREEMPT_MEM_FULL);
  preempt_mem_policy policy;
  CHECK(preempt_mem_policy_parse("priority-mmu", &policy) == 0 && policy == PREEMPT_MEM_POLICY_PRIORITY_MMU);
  CHECK(preempt_mem_policy_parse("lifo", &policy) == -1);
  CHECK(preempt_mem_policy_name((preempt_mem_policy)9) == NULL);
}

/* Scans stop at the highest slot and entry used so far: what is used later, further out, is still seen. */
static void test_ends(void) {
  static preempt_mem_ledger ledger;
  char why[128];
  uint32_t clients[6], waiters[3];
  preempt_mem_ledger_init(&ledger, 100, PREEMPT_MEM_POLICY_FIFO);
  for (int index = 0; index < 6; index++)
    CHECK(preempt_mem_ledger_attach(&ledger, 1, 0, 0, &clients[index]) == PREEMPT_MEM_OK);
  CHECK(preempt_mem_ledger_request(&ledger, clients[5], 70, &waiters[0]) == PREEMPT_MEM_OK);
  CHECK(preempt_mem_ledger_take(&ledger, clients[5], waiters[0]) == PREEMPT_MEM_OK);
  CHECK(preempt_mem_ledger_used_bytes(&ledger) == 70); /* the last slot's reservation counts */
  /* Two wait behind the 70 (entries 0 and 1), a third after them (entry 2). */
  CHECK(preempt_mem_ledger_request(&ledger, clients[0], 40, &waiters[0]) == PREEMPT_MEM_OK);
  CHECK(preempt_mem_ledger_request(&ledger, clients[1], 40, &waiters[1]) == PREEMPT_MEM_OK);
  CHECK(preempt_mem_ledger_request(&ledger, clients[2], 20, &waiters[2]) == PREEMPT_MEM_OK);
  CHECK(waiters[2] == 2 && preempt_mem_ledger_waiting(&ledger, PREEMPT_MEM_NO_INDEX) == 3);
  CHECK(preempt_mem_ledger_cancel(&ledger, clients[0], waiters[0]) == PREEMPT_MEM_OK);
  CHECK(preempt_mem_ledger_cancel(&ledger, clients[1], waiters[1]) == PREEMPT_MEM_OK);
  CHECK(ledger.waiters[2].state == PREEMPT_MEM_WAITER_GRANTED); /* 20 fit once the FIFO head left */
  CHECK(preempt_mem_ledger_used_bytes(&ledger) == 90);
  CHECK(preempt_mem_ledger_check(&ledger, why, sizeof why) == 0);
  /* A stray write that marks an entry beyond the end: the check says so, nothing scans it unseen. */
  ledger.clients[6].in_use = 1;
  CHECK(preempt_mem_ledger_check(&ledger, why, sizeof why) == -1 && strstr(why, "beyond"));
  ledger.clients[6].in_use = 0;
  ledger.waiters_end = PREEMPT_MEM_MAX_WAITERS + 1;
  CHECK(preempt_mem_ledger_check(&ledger, why, sizeof why) == -1 && strstr(why, "ends"));
  CHECK(preempt_mem_ledger_waiting(&ledger, PREEMPT_MEM_NO_INDEX) == 0); /* bounded, even so */
}

/* The integrity check catches what a crash cannot leave but a stray write can. */
static void test_check(void) {
  static preempt_mem_ledger ledger;
  char why[128];
  uint32_t client, waiter;
  preempt_mem_ledger_init(&ledger, 100, PREEMPT_MEM_POLICY_FIFO);
  CHECK(preempt_mem_ledger_attach(&ledger, 1, 0, 0, &client) == PREEMPT_MEM_OK);
  CHECK(preempt_mem_ledger_request(&ledger, client, 200 / 4, &waiter) == PREEMPT_MEM_OK);
  CHECK(preempt_mem_ledger_check(&ledger, why, sizeof why) == 0);
  ledger.waiters[waiter].state = 7;
  CHECK(preempt_mem_ledger_check(&ledger, why, sizeof why) == -1 && strstr(why, "state 7"));
  ledger.waiters[waiter].state = PREEMPT_MEM_WAITER_WAITING;
  ledger.waiters[waiter].client = 17; /* a slot not in use */
  CHECK(preempt_mem_ledger_check(&ledger, why, sizeof why) == -1 && strstr(why, "not in use"));
  ledger.waiters[waiter].client = client;
  ledger.clients[client].reserved_bytes = 1000;
  CHECK(preempt_mem_ledger_check(&ledger, why, sizeof why) == -1 && strstr(why, "above capacity"));
  ledger.clients[client].reserved_bytes = 0;
  ledger.magic = 0;
  CHECK(preempt_mem_ledger_check(&ledger, why, sizeof why) == -1 && strstr(why, "magic"));
  ledger.magic = PREEMPT_MEM_LEDGER_MAGIC;
  ledger.policy = 9;
  CHECK(preempt_mem_ledger_check(&ledger, why, sizeof why) == -1 && strstr(why, "policy"));
  ledger.policy = PREEMPT_MEM_POLICY_FIFO;
  CHECK(preempt_mem_ledger_check(&ledger, why, sizeof why) == 0);
}

int main(void) {
  test_policy_orders();
  test_cancel_unblocks();
  test_detach_dead();
  test_limits();
  test_ends();
  test_check();
  CHECK_DONE("test_mem_ledger");
}
