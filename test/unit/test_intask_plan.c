/* test_intask_plan.c: unit tests of lib/'s in-task yield point planner on hand-derived cases, malformed input, broken plans, random DAGs.
 * CTXBack §III-B (re-execution), §III-C (reverting), §III-D (uniform values saved once per CTA); the checker and a concrete run. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "preempt/intask_plan.h"

#define MAX_VALUES 64
#define MAX_OPERANDS 3
#define NONE UINT32_MAX

enum { FREE = PREEMPT_INTASK_FREE, PURE = PREEMPT_INTASK_PURE, OPAQUE = PREEMPT_INTASK_OPAQUE };
enum { OTHER = PREEMPT_INTASK_OTHER, ADD = PREEMPT_INTASK_ADD, SUB = PREEMPT_INTASK_SUB, XOR = PREEMPT_INTASK_XOR };

typedef struct graph {
  preempt_intask_value values[MAX_VALUES];
  uint32_t operands[MAX_VALUES][MAX_OPERANDS];
  size_t count;
} graph;

/* Adds a value; operands end at the first NONE. Returns its index. */
static uint32_t node(graph *g, uint32_t bytes, int kind, int operation, int uniform, int live, uint32_t first,
                     uint32_t second, uint32_t third) {
  uint32_t v = (uint32_t)g->count++;
  preempt_intask_value *value = &g->values[v];
  uint32_t given[MAX_OPERANDS] = {first, second, third};
  memset(value, 0, sizeof *value);
  value->bytes = bytes;
  value->kind = (uint8_t)kind;
  value->operation = (uint8_t)operation;
  value->uniform = (uint8_t)uniform;
  value->live = (uint8_t)live;
  value->operands = g->operands[v];
  while (value->operand_count < MAX_OPERANDS && given[value->operand_count] != NONE) {
    g->operands[v][value->operand_count] = given[value->operand_count];
    value->operand_count++;
  }
  return v;
}

static const preempt_intask_step *step_of(const preempt_intask_plan *plan, uint32_t value) {
  for (size_t i = 0; i < plan->step_count; i++)
    if (plan->steps[i].value == value)
      return &plan->steps[i];
  return NULL;
}

static size_t position_of(const preempt_intask_plan *plan, uint32_t value) {
  const preempt_intask_step *step = step_of(plan, value);
  return step ? (size_t)(step - plan->steps) : SIZE_MAX;
}

/* Loop latch, yield after i.next = i + 1, with p = gep(base, sext(tid*4 + i.next*4)) live:
 *   base (FREE 8 B), i (OPAQUE phi of i.next, uniform, dead at the yield), one and four (FREE),
 *   i.next = i + one (PURE ADD, uniform, live), tid (PURE, no operands), t4 = tid*4, i4 = i.next*4,
 *   off = t4 + i4, off64 = sext(off) (PURE, dead), p (PURE 8 B per thread, live).
 * LIVE saves i.next and p per thread: p at 0, i.next at 8, 12 B rounded to 16.
 * Greedy at 256 threads: p costs 8*256, i.next 4. p drops (tid, t4, i4, off, off64, p re-executed
 * from i.next and FREE values). i.next cannot: i is dead and OPAQUE, and reverting off = t4 + i4
 * needs off, which needs i4. So i.next is saved once per CTA at 0; 6 re-executions; 7 steps. */
static void test_loop_latch(void) {
  graph g = {0};
  uint32_t base = node(&g, 8, FREE, OTHER, 1, 0, NONE, NONE, NONE);
  uint32_t one = node(&g, 4, FREE, OTHER, 1, 0, NONE, NONE, NONE);
  uint32_t four = node(&g, 4, FREE, OTHER, 1, 0, NONE, NONE, NONE);
  uint32_t i = node(&g, 4, OPAQUE, OTHER, 1, 0, 0, NONE, NONE); /* phi operand patched below */
  uint32_t i_next = node(&g, 4, PURE, ADD, 1, 1, i, one, NONE);
  g.operands[i][0] = i_next;
  uint32_t tid = node(&g, 4, PURE, OTHER, 0, 0, NONE, NONE, NONE);
  uint32_t t4 = node(&g, 4, PURE, OTHER, 0, 0, tid, four, NONE);
  uint32_t i4 = node(&g, 4, PURE, OTHER, 1, 0, i_next, four, NONE);
  uint32_t off = node(&g, 4, PURE, ADD, 0, 0, t4, i4, NONE);
  uint32_t off64 = node(&g, 8, PURE, OTHER, 0, 0, off, NONE, NONE);
  uint32_t p = node(&g, 8, PURE, OTHER, 0, 1, base, off64, NONE);
  preempt_intask_plan plan;
  CHECK(preempt_intask_plan_make(g.values, g.count, 256, &plan) == 0);
  CHECK(preempt_intask_plan_check(g.values, g.count, &plan) == 0);
  CHECK_EQ_U64(plan.step_count, 7);
  CHECK_EQ_U64(plan.saved_count, 1);
  CHECK_EQ_U64(plan.reexecute_count, 6);
  CHECK_EQ_U64(plan.revert_count, 0);
  CHECK_EQ_U64(plan.thread_bytes, 0);
  CHECK_EQ_U64(plan.cta_bytes, 4);
  CHECK_EQ_U64(plan.live_thread_bytes, 16);
  CHECK(plan.step_count > 0 && plan.steps[0].value == i_next && plan.steps[0].action == PREEMPT_INTASK_SAVE_CTA &&
        plan.steps[0].offset == 0);
  CHECK(step_of(&plan, tid) && step_of(&plan, tid)->action == PREEMPT_INTASK_REEXECUTE);
  CHECK(step_of(&plan, p) && step_of(&plan, p)->action == PREEMPT_INTASK_REEXECUTE);
  CHECK(step_of(&plan, i) == NULL);
  CHECK(position_of(&plan, tid) < position_of(&plan, t4) && position_of(&plan, t4) < position_of(&plan, off) &&
        position_of(&plan, i4) < position_of(&plan, off) && position_of(&plan, off64) < position_of(&plan, p));
  (void)base;
  preempt_intask_plan_free(&plan);
  CHECK(plan.steps == NULL && plan.step_count == 0);
}

/* x (OPAQUE, per thread, live), c (FREE), y = x + c (PURE, live). LIVE saves both, 4*256 each.
 * Either alone suffices at one save: x gives y by re-execution, y gives x back as y - c. Ties go to the
 * save whose rebuild alone takes fewer steps (1 each here), then to the lower index: x drops first,
 * then y cannot. Plan: save y per thread at 0, revert x from source y and other c. */
static void test_revert_through_constant(void) {
  graph g = {0};
  uint32_t x = node(&g, 4, OPAQUE, OTHER, 0, 1, NONE, NONE, NONE);
  uint32_t c = node(&g, 4, FREE, OTHER, 1, 0, NONE, NONE, NONE);
  uint32_t y = node(&g, 4, PURE, ADD, 0, 1, x, c, NONE);
  preempt_intask_plan plan;
  CHECK(preempt_intask_plan_make(g.values, g.count, 256, &plan) == 0);
  CHECK(preempt_intask_plan_check(g.values, g.count, &plan) == 0);
  CHECK_EQ_U64(plan.step_count, 2);
  CHECK_EQ_U64(plan.thread_bytes, 4);
  CHECK_EQ_U64(plan.live_thread_bytes, 8);
  const preempt_intask_step *save = step_of(&plan, y), *revert = step_of(&plan, x);
  CHECK(save && save->action == PREEMPT_INTASK_SAVE_THREAD && save->offset == 0);
  CHECK(revert && revert->action == PREEMPT_INTASK_REVERT && revert->source == y && revert->other == c);
  preempt_intask_plan_free(&plan);
}

/* x (OPAQUE, per thread, live), z (OPAQUE, uniform, live), y = x + z (PURE, per thread, live).
 * Costs at 256 threads: x 1024, y 1024, z 4. x drops (x = y - z), then y cannot (x needs y) and z
 * cannot (z = y - x, x needs z). Plan: save y per thread, z per CTA, revert x from y and z:
 * 4 B per thread instead of LIVE's 12. */
static void test_revert_through_uniform(void) {
  graph g = {0};
  uint32_t x = node(&g, 4, OPAQUE, OTHER, 0, 1, NONE, NONE, NONE);
  uint32_t z = node(&g, 4, OPAQUE, OTHER, 1, 1, NONE, NONE, NONE);
  uint32_t y = node(&g, 4, PURE, ADD, 0, 1, x, z, NONE);
  preempt_intask_plan plan;
  CHECK(preempt_intask_plan_make(g.values, g.count, 256, &plan) == 0);
  CHECK(preempt_intask_plan_check(g.values, g.count, &plan) == 0);
  CHECK_EQ_U64(plan.step_count, 3);
  CHECK_EQ_U64(plan.saved_count, 2);
  CHECK_EQ_U64(plan.revert_count, 1);
  CHECK_EQ_U64(plan.thread_bytes, 4);
  CHECK_EQ_U64(plan.cta_bytes, 4);
  CHECK_EQ_U64(plan.live_thread_bytes, 12);
  CHECK(step_of(&plan, y) && step_of(&plan, y)->action == PREEMPT_INTASK_SAVE_THREAD);
  CHECK(step_of(&plan, z) && step_of(&plan, z)->action == PREEMPT_INTASK_SAVE_CTA);
  const preempt_intask_step *revert = step_of(&plan, x);
  CHECK(revert && revert->action == PREEMPT_INTASK_REVERT && revert->source == y && revert->other == z);
  CHECK(position_of(&plan, x) == 2); /* saves first */
  preempt_intask_plan_free(&plan);

  /* The same with y = z - x: x = z - y (b = a - s). */
  g.values[y].operation = SUB;
  g.operands[y][0] = z;
  g.operands[y][1] = x;
  CHECK(preempt_intask_plan_make(g.values, g.count, 256, &plan) == 0);
  CHECK(preempt_intask_plan_check(g.values, g.count, &plan) == 0);
  revert = step_of(&plan, x);
  CHECK(revert && revert->action == PREEMPT_INTASK_REVERT && revert->source == y && revert->other == z);
  preempt_intask_plan_free(&plan);
}

/* A chain of reverts: c, d (FREE), x (OPAQUE, live), y = x + c, w = y + d (PURE, live), all per thread.
 * All three cost the same and rebuild alone in one step, so the lower index drops first: x (= y - c),
 * then y (= w - d, and x from it), then w cannot. Plan: save w, revert y from w and d, then x from y
 * and c: one save where LIVE has three. */
static void test_revert_chain(void) {
  graph g = {0};
  uint32_t c = node(&g, 4, FREE, OTHER, 1, 0, NONE, NONE, NONE);
  uint32_t d = node(&g, 4, FREE, OTHER, 1, 0, NONE, NONE, NONE);
  uint32_t x = node(&g, 4, OPAQUE, OTHER, 0, 1, NONE, NONE, NONE);
  uint32_t y = node(&g, 4, PURE, ADD, 0, 1, x, c, NONE);
  uint32_t w = node(&g, 4, PURE, ADD, 0, 1, y, d, NONE);
  preempt_intask_plan plan;
  CHECK(preempt_intask_plan_make(g.values, g.count, 256, &plan) == 0);
  CHECK(preempt_intask_plan_check(g.values, g.count, &plan) == 0);
  CHECK_EQ_U64(plan.saved_count, 1);
  CHECK_EQ_U64(plan.revert_count, 2);
  CHECK_EQ_U64(plan.step_count, 3);
  CHECK_EQ_U64(plan.thread_bytes, 4);
  CHECK_EQ_U64(plan.live_thread_bytes, 12);
  CHECK(step_of(&plan, w) && step_of(&plan, w)->action == PREEMPT_INTASK_SAVE_THREAD);
  const preempt_intask_step *first = step_of(&plan, y), *second = step_of(&plan, x);
  CHECK(first && first->action == PREEMPT_INTASK_REVERT && first->source == w && first->other == d);
  CHECK(second && second->action == PREEMPT_INTASK_REVERT && second->source == y && second->other == c);
  CHECK(position_of(&plan, y) < position_of(&plan, x));
  preempt_intask_plan_free(&plan);
}

/* u (OPAQUE, uniform, 8 B, live: a loaded base pointer), tid (PURE), off = sext(tid)*4 (PURE, 8 B, dead),
 * p = u + off (PURE ADD, per thread, live). Either u or p is enough: p = u + off, u = p - off.
 * 256 threads: p costs 2048, u 8: p drops first; save u per CTA (8 B), re-execute tid, off, p.
 * 2 threads: p costs 16, u 8: the same choice.
 * 1 thread: both cost 8, both rebuild in 3 steps: the lower index (u) drops first; save p per thread,
 * revert u from p and off. */
static void test_threads_weigh_uniform(void) {
  graph g = {0};
  uint32_t u = node(&g, 8, OPAQUE, OTHER, 1, 1, NONE, NONE, NONE);
  uint32_t tid = node(&g, 4, PURE, OTHER, 0, 0, NONE, NONE, NONE);
  uint32_t off = node(&g, 8, PURE, OTHER, 0, 0, tid, NONE, NONE);
  uint32_t p = node(&g, 8, PURE, ADD, 0, 1, u, off, NONE);
  uint32_t thread_counts[] = {256, 2};
  for (size_t i = 0; i < 2; i++) {
    preempt_intask_plan plan;
    CHECK(preempt_intask_plan_make(g.values, g.count, thread_counts[i], &plan) == 0);
    CHECK(preempt_intask_plan_check(g.values, g.count, &plan) == 0);
    CHECK_EQ_U64(plan.cta_bytes, 8);
    CHECK_EQ_U64(plan.thread_bytes, 0);
    CHECK(step_of(&plan, u) && step_of(&plan, u)->action == PREEMPT_INTASK_SAVE_CTA);
    CHECK(step_of(&plan, p) && step_of(&plan, p)->action == PREEMPT_INTASK_REEXECUTE);
    CHECK_EQ_U64(plan.step_count, 4);
    preempt_intask_plan_free(&plan);
  }
  preempt_intask_plan plan;
  CHECK(preempt_intask_plan_make(g.values, g.count, 1, &plan) == 0);
  CHECK(preempt_intask_plan_check(g.values, g.count, &plan) == 0);
  CHECK_EQ_U64(plan.cta_bytes, 0);
  CHECK_EQ_U64(plan.thread_bytes, 8);
  CHECK(step_of(&plan, p) && step_of(&plan, p)->action == PREEMPT_INTASK_SAVE_THREAD);
  const preempt_intask_step *revert = step_of(&plan, u);
  CHECK(revert && revert->action == PREEMPT_INTASK_REVERT && revert->source == p && revert->other == off);
  preempt_intask_plan_free(&plan);
}

/* Only what live values need: a dead PURE chain and a dead OPAQUE value are never in the plan, and a
 * live PURE value with no operands (a thread-index read) is never saved. */
static void test_only_needed_steps(void) {
  graph g = {0};
  uint32_t tid = node(&g, 4, PURE, OTHER, 0, 1, NONE, NONE, NONE);
  uint32_t dead = node(&g, 4, PURE, OTHER, 0, 0, tid, NONE, NONE);
  uint32_t dead_load = node(&g, 4, OPAQUE, OTHER, 0, 0, dead, NONE, NONE);
  preempt_intask_plan plan;
  CHECK(preempt_intask_plan_make(g.values, g.count, 256, &plan) == 0);
  CHECK(preempt_intask_plan_check(g.values, g.count, &plan) == 0);
  CHECK_EQ_U64(plan.step_count, 1);
  CHECK(plan.step_count == 1 && plan.steps[0].value == tid && plan.steps[0].action == PREEMPT_INTASK_REEXECUTE);
  CHECK(step_of(&plan, dead) == NULL && step_of(&plan, dead_load) == NULL);
  CHECK_EQ_U64(plan.live_thread_bytes, 4);
  preempt_intask_plan_free(&plan);
}

static int make_fails(const graph *g, uint32_t threads) {
  preempt_intask_plan plan;
  memset(&plan, 0xAB, sizeof plan);
  int result = preempt_intask_plan_make(g->values, g->count, threads, &plan);
  int empty = plan.steps == NULL && plan.step_count == 0;
  preempt_intask_plan_free(&plan);
  return result == -1 && empty;
}

static void test_malformed_input(void) {
  graph g = {0};
  uint32_t x = node(&g, 4, OPAQUE, OTHER, 0, 1, NONE, NONE, NONE);
  uint32_t y = node(&g, 4, PURE, ADD, 0, 1, x, x, NONE);
  preempt_intask_plan plan;
  CHECK(preempt_intask_plan_make(g.values, g.count, 256, &plan) == 0); /* the positive control */
  preempt_intask_plan_free(&plan);
  CHECK(make_fails(&g, 0));
  g.operands[y][1] = 7; /* out of range */
  CHECK(make_fails(&g, 256));
  g.operands[y][1] = x;
  g.values[y].operand_count = 1; /* ADD with one operand */
  CHECK(make_fails(&g, 256));
  g.values[y].operand_count = 3;
  g.operands[y][2] = x;
  CHECK(make_fails(&g, 256));
  g.values[y].operand_count = 2;
  g.values[y].bytes = 0;
  CHECK(make_fails(&g, 256));
  g.values[y].bytes = 4;
  g.values[y].kind = 9;
  CHECK(make_fails(&g, 256));
  g.values[y].kind = PURE;
  g.values[y].operation = 9;
  CHECK(make_fails(&g, 256));
  g.values[y].operation = ADD;
  CHECK(preempt_intask_plan_make(NULL, 2, 256, &plan) == -1);
  CHECK(preempt_intask_plan_make(g.values, g.count, 256, NULL) == -1);

  /* a = b + 1, b = a + 1, both PURE: a cycle; with a FREE value on it too; broken by an OPAQUE phi: fine. */
  graph cycle = {0};
  uint32_t one = node(&cycle, 4, FREE, OTHER, 1, 0, NONE, NONE, NONE);
  uint32_t a = node(&cycle, 4, PURE, ADD, 0, 1, 0, one, NONE);
  uint32_t b = node(&cycle, 4, PURE, ADD, 0, 1, a, one, NONE);
  cycle.operands[a][0] = b;
  CHECK(make_fails(&cycle, 256));
  cycle.values[b].kind = FREE;
  CHECK(make_fails(&cycle, 256));
  cycle.values[b].kind = OPAQUE;
  CHECK(preempt_intask_plan_make(cycle.values, cycle.count, 256, &plan) == 0);
  CHECK(preempt_intask_plan_check(cycle.values, cycle.count, &plan) == 0);
  CHECK_EQ_U64(plan.saved_count, 1); /* b saved, a = b + 1 re-executed (or b reverted from a) */
  CHECK_EQ_U64(plan.step_count, 2);
  preempt_intask_plan_free(&plan);
  /* A self-loop PURE value. */
  graph self = {0};
  node(&self, 4, PURE, OTHER, 0, 1, 0, NONE, NONE);
  CHECK(make_fails(&self, 256));
}

/* Hand-broken plans over the graph of test_revert_through_uniform plus a dead OPAQUE w and a live
 * OPAQUE per-thread v: the sound plan saves y at 0, v at 4 per thread, z per CTA, reverts x. */
static void test_check_rejects(void) {
  graph g = {0};
  uint32_t x = node(&g, 4, OPAQUE, OTHER, 0, 1, NONE, NONE, NONE);
  uint32_t z = node(&g, 4, OPAQUE, OTHER, 1, 1, NONE, NONE, NONE);
  uint32_t y = node(&g, 4, PURE, ADD, 0, 1, x, z, NONE);
  uint32_t w = node(&g, 4, OPAQUE, OTHER, 0, 0, NONE, NONE, NONE);
  uint32_t v = node(&g, 4, OPAQUE, OTHER, 0, 1, NONE, NONE, NONE);
  uint32_t k = node(&g, 4, PURE, OTHER, 0, 0, v, NONE, NONE);
  preempt_intask_step sound[] = {
      {.value = y, .action = PREEMPT_INTASK_SAVE_THREAD, .offset = 0},
      {.value = v, .action = PREEMPT_INTASK_SAVE_THREAD, .offset = 4},
      {.value = z, .action = PREEMPT_INTASK_SAVE_CTA, .offset = 0},
      {.value = x, .action = PREEMPT_INTASK_REVERT, .source = y, .other = z},
  };
  preempt_intask_step steps[8];
  preempt_intask_plan plan = {.steps = steps, .step_count = 4, .thread_bytes = 8, .cta_bytes = 4,
                              .live_thread_bytes = 16, .saved_count = 3, .revert_count = 1};
#define RESET() (memcpy(steps, sound, sizeof sound), plan.step_count = 4, plan.thread_bytes = 8, plan.cta_bytes = 4, \
                 plan.saved_count = 3, plan.revert_count = 1, plan.reexecute_count = 0)
  RESET();
  CHECK(preempt_intask_plan_check(g.values, g.count, &plan) == 0);
  /* Wrong order: the revert before the save of its source. */
  RESET();
  steps[0] = sound[3];
  steps[3] = sound[0];
  CHECK(preempt_intask_plan_check(g.values, g.count, &plan) == -1);
  /* Wrong order: the revert before the save of its other operand. */
  RESET();
  steps[2] = sound[3];
  steps[3] = sound[2];
  CHECK(preempt_intask_plan_check(g.values, g.count, &plan) == -1);
  /* A save of a dead value. */
  RESET();
  steps[4] = (preempt_intask_step){.value = w, .action = PREEMPT_INTASK_SAVE_THREAD, .offset = 8};
  plan.step_count = 5;
  plan.thread_bytes = 12;
  plan.saved_count = 4;
  CHECK(preempt_intask_plan_check(g.values, g.count, &plan) == -1);
  steps[4].value = k; /* nor a dead PURE one */
  CHECK(preempt_intask_plan_check(g.values, g.count, &plan) == -1);
  /* Bad reverts: other is not source's operand; source without an invertible op; other not available yet. */
  RESET();
  steps[3].other = v;
  CHECK(preempt_intask_plan_check(g.values, g.count, &plan) == -1);
  RESET();
  g.values[y].operation = OTHER;
  CHECK(preempt_intask_plan_check(g.values, g.count, &plan) == -1);
  g.values[y].operation = ADD;
  RESET();
  steps[3].source = x;
  steps[3].other = y;
  steps[3].value = z;
  CHECK(preempt_intask_plan_check(g.values, g.count, &plan) == -1);
  /* Overlapping, misaligned, out-of-area offsets. */
  RESET();
  steps[1].offset = 0;
  CHECK(preempt_intask_plan_check(g.values, g.count, &plan) == -1);
  steps[1].offset = 2;
  CHECK(preempt_intask_plan_check(g.values, g.count, &plan) == -1);
  RESET();
  plan.thread_bytes = 7;
  CHECK(preempt_intask_plan_check(g.values, g.count, &plan) == -1);
  RESET();
  plan.cta_bytes = 0;
  CHECK(preempt_intask_plan_check(g.values, g.count, &plan) == -1);
  /* A per-thread value saved per CTA. */
  RESET();
  steps[1].action = PREEMPT_INTASK_SAVE_CTA;
  plan.cta_bytes = 8;
  CHECK(preempt_intask_plan_check(g.values, g.count, &plan) == -1);
  /* A live value nobody produces; a value produced twice; an OPAQUE value re-executed; wrong counts. */
  RESET();
  plan.step_count = 3;
  plan.revert_count = 0;
  CHECK(preempt_intask_plan_check(g.values, g.count, &plan) == -1);
  RESET();
  steps[4] = (preempt_intask_step){.value = y, .action = PREEMPT_INTASK_REEXECUTE};
  plan.step_count = 5;
  plan.reexecute_count = 1;
  CHECK(preempt_intask_plan_check(g.values, g.count, &plan) == -1);
  RESET();
  steps[3] = (preempt_intask_step){.value = x, .action = PREEMPT_INTASK_REEXECUTE};
  plan.revert_count = 0;
  plan.reexecute_count = 1;
  CHECK(preempt_intask_plan_check(g.values, g.count, &plan) == -1);
  RESET();
  plan.saved_count = 2;
  CHECK(preempt_intask_plan_check(g.values, g.count, &plan) == -1);
  RESET();
  steps[2].action = 9;
  CHECK(preempt_intask_plan_check(g.values, g.count, &plan) == -1);
#undef RESET
}

/* Random DAGs, evaluated concretely in two threads. */

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
static uint64_t next_random(void) { return mix(rng_state += 0x9E3779B97F4A7C15ull); }
static uint32_t below(uint32_t n) { return (uint32_t)(next_random() % n); }
static uint64_t width_mask(uint32_t bytes) { return bytes >= 8 ? ~0ull : (1ull << (bytes * 8)) - 1; }

#define THREADS 2

/* A value from its operands' values: the relation for ADD/SUB/XOR (any kind), a hash for PURE OTHER
 * (the thread only for a per-thread PURE read with no operands). */
static uint64_t compute(const graph *g, uint32_t v, const uint64_t *known, unsigned thread) {
  const preempt_intask_value *value = &g->values[v];
  uint64_t result;
  if (value->operation != OTHER) {
    uint64_t a = known[value->operands[0]], b = known[value->operands[1]];
    result = value->operation == ADD ? a + b : value->operation == SUB ? a - b : a ^ b;
  } else {
    result = mix(v * 0x100000001B3ull + (value->operand_count == 0 && !value->uniform ? thread + 1 : 0));
    for (uint32_t slot = 0; slot < value->operand_count; slot++)
      result = mix(result ^ known[value->operands[slot]]);
  }
  return result & width_mask(value->bytes);
}

/* The inverse, written independently of the library: value from s = op(a, b) and the other operand. */
static uint64_t invert(const graph *g, const preempt_intask_step *step, const uint64_t *known) {
  const preempt_intask_value *source = &g->values[step->source];
  uint64_t s = known[step->source], other = known[step->other];
  int value_is_first = source->operands[0] == step->value;
  uint64_t result;
  if (source->operation == ADD)
    result = s - other;
  else if (source->operation == XOR)
    result = s ^ other;
  else
    result = value_is_first ? s + other : other - s; /* s = a - b: a = s + b, b = a - s */
  return result & width_mask(g->values[step->value].bytes);
}

static void random_graph(graph *g, uint64_t leaf[][THREADS]) {
  memset(g, 0, sizeof *g);
  uint32_t n = 4 + below(36);
  for (uint32_t v = 0; v < n; v++) {
    uint32_t bytes = below(2) ? 4 : 8, roll = below(100);
    int kind = roll < 15 ? FREE : roll < 40 ? OPAQUE : PURE;
    int live = below(2);
    /* Same-width earlier values for ADD/SUB/XOR. */
    uint32_t same[MAX_VALUES], same_count = 0;
    for (uint32_t u = 0; u < v; u++)
      if (g->values[u].bytes == bytes)
        same[same_count++] = u;
    int operation = OTHER;
    uint32_t operands[3] = {NONE, NONE, NONE};
    if (same_count && (kind == PURE ? below(10) < 7 : below(10) < 2)) {
      operation = ADD + (int)below(3);
      operands[0] = same[below(same_count)];
      operands[1] = same[below(same_count)];
    } else if (kind == PURE && v > 0) {
      uint32_t operand_count = below(4);
      for (uint32_t slot = 0; slot < operand_count; slot++)
        operands[slot] = below(v);
    } else if (kind == OPAQUE && below(3) == 0) {
      operands[0] = below(n); /* a phi: may name a later value */
    }
    int uniform;
    if (operation != OTHER || (kind == PURE && operands[0] != NONE)) {
      uniform = 1;
      for (int slot = 0; slot < 3 && operands[slot] != NONE; slot++)
        uniform &= g->values[operands[slot]].uniform;
    } else {
      uniform = below(2);
    }
    node(g, bytes, kind, operation, uniform, live, operands[0], operands[1], operands[2]);
    uint64_t shared = next_random() & width_mask(bytes);
    for (unsigned t = 0; t < THREADS; t++)
      leaf[v][t] = uniform ? shared : next_random() & width_mask(bytes);
  }
}

static void test_random_dags(void) {
  for (int round = 0; round < 200; round++) {
    graph g;
    uint64_t leaf[MAX_VALUES][THREADS];
    random_graph(&g, leaf);
    uint32_t threads = round % 3 == 0 ? 1 : round % 3 == 1 ? 32 : 256;
    /* The truth: leaves (FREE/OPAQUE without a relation) random, the rest computed in index order. */
    uint64_t truth[THREADS][MAX_VALUES];
    for (unsigned t = 0; t < THREADS; t++)
      for (uint32_t v = 0; v < g.count; v++) {
        const preempt_intask_value *value = &g.values[v];
        int computed = value->operation != OTHER || value->kind == PURE;
        truth[t][v] = computed ? compute(&g, v, truth[t], t) : leaf[v][t];
      }
    for (uint32_t v = 0; v < g.count; v++) /* the generator's uniform flags are right */
      if (g.values[v].uniform)
        CHECK(truth[0][v] == truth[1][v]);
    preempt_intask_plan plan;
    int made = preempt_intask_plan_make(g.values, g.count, threads, &plan);
    CHECK(made == 0);
    if (made != 0)
      continue;
    CHECK(preempt_intask_plan_check(g.values, g.count, &plan) == 0);
    CHECK(plan.thread_bytes <= plan.live_thread_bytes);
    uint64_t live_cost = (uint64_t)plan.live_thread_bytes * threads,
             cost = (uint64_t)plan.thread_bytes * threads + plan.cta_bytes;
    CHECK(cost <= live_cost);
    /* Preemption: every thread writes its area, thread 0 the CTA's. */
    uint8_t thread_area[THREADS][MAX_VALUES * 8 + 8], cta_area[MAX_VALUES * 8 + 8];
    CHECK(plan.thread_bytes <= sizeof thread_area[0] && plan.cta_bytes <= sizeof cta_area);
    memset(thread_area, 0xEE, sizeof thread_area);
    memset(cta_area, 0xEE, sizeof cta_area);
    for (size_t i = 0; i < plan.step_count; i++) {
      const preempt_intask_step *step = &plan.steps[i];
      for (unsigned t = 0; t < THREADS; t++) {
        if (step->action == PREEMPT_INTASK_SAVE_THREAD)
          memcpy(thread_area[t] + step->offset, &truth[t][step->value], g.values[step->value].bytes);
        else if (step->action == PREEMPT_INTASK_SAVE_CTA && t == 0)
          memcpy(cta_area + step->offset, &truth[t][step->value], g.values[step->value].bytes);
      }
    }
    /* Resumption: FREE values and the areas only. */
    for (unsigned t = 0; t < THREADS; t++) {
      uint64_t known[MAX_VALUES];
      uint8_t have[MAX_VALUES] = {0};
      for (uint32_t v = 0; v < g.count; v++) {
        have[v] = g.values[v].kind == FREE;
        known[v] = have[v] ? truth[t][v] : 0xDEADBEEFull;
      }
      for (size_t i = 0; i < plan.step_count; i++) {
        const preempt_intask_step *step = &plan.steps[i];
        uint64_t result = 0;
        if (step->action == PREEMPT_INTASK_SAVE_THREAD)
          memcpy(&result, thread_area[t] + step->offset, g.values[step->value].bytes);
        else if (step->action == PREEMPT_INTASK_SAVE_CTA)
          memcpy(&result, cta_area + step->offset, g.values[step->value].bytes);
        else if (step->action == PREEMPT_INTASK_REEXECUTE) {
          for (uint32_t slot = 0; slot < g.values[step->value].operand_count; slot++)
            CHECK(have[g.values[step->value].operands[slot]]);
          result = compute(&g, step->value, known, t);
        } else {
          CHECK(have[step->source] && have[step->other]);
          result = invert(&g, step, known);
        }
        known[step->value] = result;
        have[step->value] = 1;
        CHECK(result == truth[t][step->value]); /* non-live intermediates too */
      }
      for (uint32_t v = 0; v < g.count; v++)
        if (g.values[v].live) {
          CHECK(have[v]);
          CHECK(known[v] == truth[t][v]);
        }
    }
    preempt_intask_plan_free(&plan);
  }
}

int main(void) {
  test_loop_latch();
  test_revert_through_constant();
  test_revert_through_uniform();
  test_revert_chain();
  test_threads_weigh_uniform();
  test_only_needed_steps();
  test_malformed_input();
  test_check_rejects();
  test_random_dags();
  CHECK_DONE("test_intask_plan");
}
