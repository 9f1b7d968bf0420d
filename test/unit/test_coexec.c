/* test_coexec.c: occupancy, the co-execution space and its online search on hand-derived numbers.
 * FlexSched §4.3 (Eq. 1), §4.4 (Eq. 3), §5.4.1 (Figs. 5, 6, 7), §5.5 (latency-sensitive kernel). */
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "check.h"
#include "preempt/coexec.h"

static int near(double actual, double expected) {
  double diff = actual - expected;
  return diff <= 1e-9 && diff >= -1e-9;
}

static preempt_sm_limits h100(void) {
  preempt_sm_limits limits = {2048, 32, 65536, 256, 233472, 128, 1024, 32};
  return limits;
}

/* A small SM where shared memory is the only limit that binds the kernels below: 64 KiB, 1 KiB reserved. */
static preempt_sm_limits shared_bound_sm(void) {
  preempt_sm_limits limits = {2048, 32, 65536, 256, 65536, 128, 1024, 32};
  return limits;
}

static preempt_cta_footprint cta(uint32_t threads, uint32_t registers_per_thread, uint32_t shared_bytes) {
  preempt_cta_footprint footprint = {threads, registers_per_thread, shared_bytes};
  return footprint;
}

static uint32_t alone(const preempt_sm_limits *limits, preempt_cta_footprint footprint) {
  uint32_t ctas = 12345;
  preempt_coexec_status status = preempt_coexec_ctas_alone(limits, &footprint, &ctas);
  return status == PREEMPT_COEXEC_OK ? ctas : 1000 + status; /* a status shows up in the failure message */
}

static int space_is(const preempt_coexec_space *space, const uint32_t (*expected)[2], uint32_t count) {
  if (space->count != count)
    return 0;
  for (uint32_t i = 0; i < count; i++)
    if (space->configs[i].ctas_a != expected[i][0] || space->configs[i].ctas_b != expected[i][1])
      return 0;
  return 1;
}

static void test_status_names(void) {
  CHECK(strcmp(preempt_coexec_status_name(PREEMPT_COEXEC_OK), "ok") == 0);
  CHECK(strcmp(preempt_coexec_status_name(PREEMPT_COEXEC_BAD_SAMPLE), "bad sample") == 0);
  CHECK(strcmp(preempt_coexec_status_name((preempt_coexec_status)99), "unknown status") == 0);
}

/* H100 (2048 threads, 32 CTAs, 65536 registers in units of 256 per warp, 233472 bytes of shared memory in
 * units of 128 plus 1024 per CTA), one shape limited by each resource in turn, as the CUDA calculator says. */
static void test_occupancy(void) {
  preempt_sm_limits limits = h100();
  /* Threads: 1024 threads, no registers: 2048/1024 = 2; shared 1024 per CTA allows 228. */
  CHECK_EQ_U64(alone(&limits, cta(1024, 0, 0)), 2);
  /* CTA slots: 32 threads (1 warp): threads allow 64, shared 228, CTAs 32. */
  CHECK_EQ_U64(alone(&limits, cta(32, 0, 0)), 32);
  /* Registers: 96 threads = 3 warps; 37 * 32 = 1184 per warp, rounded to 1280; 3840 per CTA;
   * 65536 / 3840 = 17.07 -> 17 (threads allow 2048/96 = 21). */
  CHECK_EQ_U64(alone(&limits, cta(96, 37, 0)), 17);
  /* Registers: 1024 threads at 64 = 32 warps * 2048 = 65536: exactly one CTA. */
  CHECK_EQ_U64(alone(&limits, cta(1024, 64, 0)), 1);
  /* Shared: 40000 bytes -> 313 units of 128 = 40064, + 1024 = 41088; 233472 / 41088 = 5.68 -> 5. */
  CHECK_EQ_U64(alone(&limits, cta(64, 0, 40000)), 5);
  /* Shared rounding decides: 45670 -> 357 units = 45696, + 1024 = 46720; 5 * 46720 = 233600 > 233472 -> 4
   * (unrounded, 5 * 46694 = 233470 would fit 5). */
  CHECK_EQ_U64(alone(&limits, cta(64, 0, 45670)), 4);
  /* Warp rounding of threads: 33 threads take 2 warps (64 threads): 2048 / 64 = 32, the CTA limit too;
   * with 16 CTA slots more, threads bind at 32. */
  CHECK_EQ_U64(alone(&limits, cta(33, 0, 0)), 32);
  limits.max_ctas = 48;
  CHECK_EQ_U64(alone(&limits, cta(33, 0, 0)), 32);
  /* The A and B of test_h100_pair: 256 threads at 32 registers -> 8 warps * 1024 = 8192 registers: 8 CTAs
   * (threads 8 too); 128 threads, 48 KiB shared -> 49152 + 1024 = 50176; 233472 / 50176 = 4.65 -> 4. */
  limits = h100();
  CHECK_EQ_U64(alone(&limits, cta(256, 32, 0)), 8);
  CHECK_EQ_U64(alone(&limits, cta(128, 32, 49152)), 4);
}

static void test_occupancy_errors(void) {
  preempt_sm_limits limits = h100();
  preempt_cta_footprint footprint = cta(256, 32, 0);
  uint32_t ctas = 7;
  CHECK(preempt_coexec_ctas_alone(NULL, &footprint, &ctas) == PREEMPT_COEXEC_INVALID_ARGUMENT);
  CHECK(preempt_coexec_ctas_alone(&limits, NULL, &ctas) == PREEMPT_COEXEC_INVALID_ARGUMENT);
  CHECK(preempt_coexec_ctas_alone(&limits, &footprint, NULL) == PREEMPT_COEXEC_INVALID_ARGUMENT);
  CHECK_EQ_U64(alone(&limits, cta(0, 32, 0)), 1000 + PREEMPT_COEXEC_INVALID_ARGUMENT);
  CHECK_EQ_U64(alone(&limits, cta(2049, 0, 0)), 1000 + PREEMPT_COEXEC_INVALID_ARGUMENT);
  /* Every limit but the reserve must be non-zero (100 * the field's number shows which failed). */
  static const size_t fields[] = {
      offsetof(preempt_sm_limits, max_threads),  offsetof(preempt_sm_limits, max_ctas),
      offsetof(preempt_sm_limits, registers),    offsetof(preempt_sm_limits, register_unit),
      offsetof(preempt_sm_limits, shared_bytes), offsetof(preempt_sm_limits, shared_unit),
      offsetof(preempt_sm_limits, warp_size)};
  for (unsigned field = 0; field < sizeof fields / sizeof fields[0]; field++) {
    limits = h100();
    memset((char *)&limits + fields[field], 0, sizeof(uint32_t));
    CHECK_EQ_U64(alone(&limits, footprint) + 100 * field, 1000 + PREEMPT_COEXEC_INVALID_ARGUMENT + 100 * field);
  }
  limits = h100();
  limits.shared_reserved = 0; /* 233472 / 128 = 1824: threads (8) still bind */
  CHECK_EQ_U64(alone(&limits, footprint), 8);
  /* Too big alone: 240000 bytes of shared; 1024 threads at 255 registers = 32 warps * 8192 = 262144. */
  limits = h100();
  CHECK_EQ_U64(alone(&limits, cta(128, 0, 240000)), 1000 + PREEMPT_COEXEC_DOES_NOT_FIT);
  CHECK_EQ_U64(alone(&limits, cta(1024, 255, 0)), 1000 + PREEMPT_COEXEC_DOES_NOT_FIT);
  CHECK(preempt_coexec_ctas_alone(&limits, &(preempt_cta_footprint){1024, 255, 0}, &ctas) ==
            PREEMPT_COEXEC_DOES_NOT_FIT &&
        ctas == 0);
  /* 1990 threads are within 2000, but 63 warps take 2016 thread slots: not a bad CTA, one that does not fit. */
  limits.max_threads = 2000;
  CHECK_EQ_U64(alone(&limits, cta(1990, 0, 0)), 1000 + PREEMPT_COEXEC_DOES_NOT_FIT);
  /* Absurd but valid numbers must not overflow into "fits". */
  limits = h100();
  limits.warp_size = 4000000000u;
  limits.max_threads = 4000000000u;
  CHECK_EQ_U64(alone(&limits, cta(1, 4000000000u, 0)), 1000 + PREEMPT_COEXEC_DOES_NOT_FIT);
}

/* FlexSched §4.3's example: each kernel alone fits 8 CTAs, on shared memory only (64 KiB SM).
 * A: 7168 + 1024 reserve = 8192 per CTA: 65536 / 8192 = 8.
 * B: 7000 -> 55 units of 128 = 7040, + 1024 = 8064: 65536 / 8064 = 8.13 -> 8.
 * Together 8192a + 8064b <= 65536: b beside a = 1..7 is 57344/8064 = 7.1, 49152/8064 = 6.1, 5.08, 4.06,
 * 3.05, 2.03, 8192/8064 = 1.02 -> 7,6,5,4,3,2,1; every pair sums to 8 CTAs and a ninth CTA needs at least
 * 9 * 8064 = 72576 > 65536, so each is maximal. Threads: 8 * 128 = 1024 of 2048. */
static void test_paper_space(void) {
  preempt_sm_limits limits = shared_bound_sm();
  preempt_cta_footprint a = cta(128, 32, 7168), b = cta(128, 32, 7000);
  CHECK_EQ_U64(alone(&limits, a), 8);
  CHECK_EQ_U64(alone(&limits, b), 8);
  preempt_coexec_space space;
  CHECK(preempt_coexec_space_build(&limits, &a, &b, &space) == PREEMPT_COEXEC_OK);
  static const uint32_t expected[][2] = {{1, 7}, {2, 6}, {3, 5}, {4, 4}, {5, 3}, {6, 2}, {7, 1}};
  CHECK(space_is(&space, expected, 7));
  CHECK(preempt_coexec_fits(&limits, &a, 3, &b, 5));
  CHECK(!preempt_coexec_fits(&limits, &a, 4, &b, 5));
  CHECK(preempt_coexec_fits(&limits, &a, 8, &b, 0));
  CHECK(preempt_coexec_fits(&limits, &a, 0, &b, 0));
  CHECK(!preempt_coexec_fits(NULL, &a, 1, &b, 1));
  CHECK(!preempt_coexec_fits(&limits, &a, 1, NULL, 1));
  /* Fig. 6: VA keeps its 5 CTAs, the newcomer fills the room: start at (5,3). */
  CHECK_EQ_U64(preempt_coexec_space_index_for_a(&space, 5), 4);
  CHECK_EQ_U64(preempt_coexec_space_index_for_a(&space, 0), 0);
  CHECK_EQ_U64(preempt_coexec_space_index_for_a(&space, 100), 6);
  CHECK_EQ_U64(preempt_coexec_space_index_for_a(NULL, 5), 0);
}

/* FlexSched Fig. 7's space (1,14) ... (7,2): A takes 7168 + 1024 = 8192 bytes, B 3072 + 1024 = 4096, so
 * 2a + b <= 16 in 4 KiB units. b beside a = 1..7: 14, 12, ..., 2; (a, b+1) needs an odd half unit more
 * than the SM has, and (a+1, b) two units more: all maximal. Threads: (1 + 14) * 128 = 1920 <= 2048. */
static void test_fig7_space(void) {
  preempt_sm_limits limits = shared_bound_sm();
  preempt_cta_footprint a = cta(128, 0, 7168), b = cta(128, 0, 3072);
  preempt_coexec_space space;
  CHECK(preempt_coexec_space_build(&limits, &a, &b, &space) == PREEMPT_COEXEC_OK);
  static const uint32_t expected[][2] = {{1, 14}, {2, 12}, {3, 10}, {4, 8}, {5, 6}, {6, 4}, {7, 2}};
  CHECK(space_is(&space, expected, 7));
}

/* H100: A = 256 threads, 32 registers, no shared (per CTA: 256 threads, 8192 registers, 1024 shared);
 * B = 128 threads, 32 registers, 48 KiB shared (128 threads, 4096 registers, 50176 shared).
 * b beside a = 1: threads 1792/128 = 14, registers 57344/4096 = 14, shared 232448/50176 = 4.63 -> 4.
 * a beside b = 4: threads 1536/256 = 6, registers 49152/8192 = 6, shared 32768/1024 = 32 -> 6: (6,4);
 * (1..5, 4) are not maximal, one more A fits each.
 * b beside a = 7: threads 256/128 = 2, registers 8192/4096 = 2, shared 226304/50176 = 4.5 -> 2;
 * a beside b = 2: threads 1792/256 = 7, registers 57344/8192 = 7 -> 7: (7,2).
 * b beside a = 8: threads 0 -> the end. */
static void test_h100_pair(void) {
  preempt_sm_limits limits = h100();
  preempt_cta_footprint a = cta(256, 32, 0), b = cta(128, 32, 49152);
  preempt_coexec_space space;
  CHECK(preempt_coexec_space_build(&limits, &a, &b, &space) == PREEMPT_COEXEC_OK);
  static const uint32_t expected[][2] = {{6, 4}, {7, 2}};
  CHECK(space_is(&space, expected, 2));
  /* (6,4): threads 1536 + 512 = 2048, registers 49152 + 16384 = 65536, shared 6144 + 200704 = 206848. */
  CHECK(preempt_coexec_fits(&limits, &a, 6, &b, 4));
  CHECK(!preempt_coexec_fits(&limits, &a, 7, &b, 3)); /* threads 1792 + 384 = 2176 */
  CHECK(!preempt_coexec_fits(&limits, &a, 6, &b, 5)); /* shared 6144 + 250880 = 257024 */
  CHECK(preempt_coexec_fits(&limits, &a, 1, &b, 4));  /* fits, though not maximal */
  CHECK_EQ_U64(preempt_coexec_space_index_for_a(&space, 8), 1);
  CHECK_EQ_U64(preempt_coexec_space_index_for_a(&space, 7), 1);
  CHECK_EQ_U64(preempt_coexec_space_index_for_a(&space, 6), 0);
  CHECK_EQ_U64(preempt_coexec_space_index_for_a(&space, 3), 0);
}

static void test_space_errors(void) {
  preempt_sm_limits limits = h100();
  preempt_cta_footprint fits = cta(256, 32, 0), huge = cta(128, 0, 240000), bad = cta(0, 0, 0);
  preempt_coexec_space space;
  space.count = 5;
  CHECK(preempt_coexec_space_build(NULL, &fits, &fits, &space) == PREEMPT_COEXEC_INVALID_ARGUMENT);
  CHECK_EQ_U64(space.count, 0);
  CHECK(preempt_coexec_space_build(&limits, NULL, &fits, &space) == PREEMPT_COEXEC_INVALID_ARGUMENT);
  CHECK(preempt_coexec_space_build(&limits, &fits, NULL, &space) == PREEMPT_COEXEC_INVALID_ARGUMENT);
  CHECK(preempt_coexec_space_build(&limits, &fits, &fits, NULL) == PREEMPT_COEXEC_INVALID_ARGUMENT);
  CHECK(preempt_coexec_space_build(&limits, &bad, &fits, &space) == PREEMPT_COEXEC_INVALID_ARGUMENT);
  CHECK(preempt_coexec_space_build(&limits, &fits, &huge, &space) == PREEMPT_COEXEC_DOES_NOT_FIT);
  CHECK(preempt_coexec_space_build(&limits, &huge, &fits, &space) == PREEMPT_COEXEC_DOES_NOT_FIT);
  /* Each alone fits once (120000 -> 120064 + 1024 = 121088), both need 242176 > 233472. */
  preempt_cta_footprint half = cta(128, 0, 120000);
  CHECK(preempt_coexec_space_build(&limits, &half, &half, &space) == PREEMPT_COEXEC_NO_SPACE);
  CHECK_EQ_U64(space.count, 0);
  /* 1024 threads at 64 registers take the whole register file: nothing beside it. */
  preempt_cta_footprint all_registers = cta(1024, 64, 0);
  CHECK(preempt_coexec_space_build(&limits, &all_registers, &fits, &space) == PREEMPT_COEXEC_NO_SPACE);
  /* Only CTA slots bind a one-warp kernel without registers or shared memory (no reserve): a + b <= slots,
   * so (1, slots-1) ... (slots-1, 1) is slots-1 configurations: 64 with 65 slots, 65 with 66 (too many). */
  limits.shared_reserved = 0;
  limits.max_threads = 66 * 32;
  limits.max_ctas = 65;
  preempt_cta_footprint tiny = cta(32, 0, 0);
  CHECK(preempt_coexec_space_build(&limits, &tiny, &tiny, &space) == PREEMPT_COEXEC_OK);
  CHECK_EQ_U64(space.count, 64);
  CHECK(space.configs[0].ctas_a == 1 && space.configs[0].ctas_b == 64);
  CHECK(space.configs[63].ctas_a == 64 && space.configs[63].ctas_b == 1);
  limits.max_ctas = 66;
  CHECK(preempt_coexec_space_build(&limits, &tiny, &tiny, &space) == PREEMPT_COEXEC_INVALID_ARGUMENT);
  CHECK_EQ_U64(space.count, 0);
}

static void test_weighted_speedup(void) {
  preempt_coexec_rates j = {2, 1}, k = {1, 1};
  CHECK(near(preempt_coexec_weighted_speedup(&j, &k), 1.5)); /* (2/1 + 1/1) / 2 */
  CHECK(near(preempt_coexec_weighted_speedup(&k, &j), 0.75)); /* (1/2 + 1/1) / 2 */
  preempt_coexec_rates stalled = {0, 1}, moving = {1, 0};
  CHECK(near(preempt_coexec_weighted_speedup(&stalled, &stalled), 1)); /* 0 over 0 counts as 1 */
  /* A from 0 to 1 outweighs B from 1 to 0. */
  double gain = preempt_coexec_weighted_speedup(&moving, &stalled);
  CHECK(gain > 1 && isfinite(gain));
  CHECK(preempt_coexec_weighted_speedup(NULL, &k) == 0);
  CHECK(preempt_coexec_weighted_speedup(&j, NULL) == 0);
}

/* Runs a search to its end, feeding table[index] for every configuration it asks for; records the path. */
typedef struct search_run {
  preempt_coexec_status status;
  uint32_t path[32];
  uint32_t path_length;
  uint32_t settled_on;
} search_run;

static search_run run_search(preempt_coexec_mode mode, uint32_t count, uint32_t start, double min_rate_a,
                             const preempt_coexec_rates *table) {
  search_run run = {0};
  preempt_coexec_search search;
  preempt_coexec_step step;
  run.status = preempt_coexec_search_start(&search, mode, count, start, min_rate_a, &step);
  while (run.status == PREEMPT_COEXEC_OK && step.kind == PREEMPT_COEXEC_MEASURE && run.path_length < 32) {
    run.path[run.path_length++] = step.index;
    run.status = preempt_coexec_search_feed(&search, &table[step.index], &step);
  }
  run.settled_on = step.kind == PREEMPT_COEXEC_SETTLED ? step.index : 999;
  return run;
}

static int path_is(const search_run *run, const uint32_t *expected, uint32_t length) {
  return run->status == PREEMPT_COEXEC_OK && run->path_length == length &&
         memcmp(run->path, expected, length * sizeof *expected) == 0;
}

/* FlexSched Fig. 5, VA/RCONV over (1,7) ... (7,1); rates made up to give the figure's WS_TER:
 * (2,6) over (1,7): (2.0/1.0 + 5.32/7)/2 = (2 + 0.76)/2 = 1.38;
 * (3,5) over (2,6): (2.4/2.0 + 5.0/5.32)/2 = (1.2 + 0.9398)/2 = 1.07 > 1;
 * (4,4) over (3,5): (2.5/2.4 + 4.0/5.0)/2 = (1.0417 + 0.8)/2 = 0.92 < 1: back to (3,5), index 2.
 * Right to left (the blue line): (6,2)/(7,1) = (0.964 + 2)/2 = 1.48, (5,3)/(6,2) = (0.963 + 1.5)/2 = 1.23,
 * (4,4)/(5,3) = (0.962 + 1.333)/2 = 1.15, (3,5)/(4,4) = (0.96 + 1.25)/2 = 1.105,
 * (2,6)/(3,5) = (0.833 + 1.064)/2 = 0.949 < 1: the same (3,5). */
static const preempt_coexec_rates fig5[7] = {{1.0, 7.0}, {2.0, 5.32}, {2.4, 5.0}, {2.5, 4.0},
                                             {2.6, 3.0}, {2.7, 2.0},  {2.8, 1.0}};

static void test_fig5(void) {
  CHECK(near(preempt_coexec_weighted_speedup(&fig5[1], &fig5[0]), 1.38));
  search_run run = run_search(PREEMPT_COEXEC_THROUGHPUT, 7, 0, 0, fig5);
  static const uint32_t left[] = {0, 1, 2, 3};
  CHECK(path_is(&run, left, 4));
  CHECK_EQ_U64(run.settled_on, 2);
  run = run_search(PREEMPT_COEXEC_THROUGHPUT, 7, 6, 0, fig5);
  static const uint32_t right[] = {6, 5, 4, 3, 2, 1};
  CHECK(path_is(&run, right, 6));
  CHECK_EQ_U64(run.settled_on, 2);
}

/* FlexSched Fig. 6, VA/MM from (5,3), index 4; rates made up to give the figure's WS_TER:
 * (6,2) over (5,3): (6.0/5.0 + 2.82/3.0)/2 = (1.2 + 0.94)/2 = 1.07;
 * (7,1) over (6,2): (6.3/6.0 + 2.4534/2.82)/2 = (1.05 + 0.87)/2 = 0.96: back to (6,2), index 5;
 * (4,4) over (5,3): (4.0/5.0 + 3.06/3.0)/2 = (0.8 + 1.02)/2 = 0.91 (the other first step). */
static const preempt_coexec_rates fig6[7] = {{1, 1}, {1, 1}, {1, 1}, {4.0, 3.06}, {5.0, 3.0}, {6.0, 2.82},
                                             {6.3, 2.4534}};

static void test_fig6(void) {
  CHECK(near(preempt_coexec_weighted_speedup(&fig6[5], &fig6[4]), 1.07));
  CHECK(near(preempt_coexec_weighted_speedup(&fig6[6], &fig6[5]), 0.96));
  CHECK(near(preempt_coexec_weighted_speedup(&fig6[3], &fig6[4]), 0.91));
  search_run run = run_search(PREEMPT_COEXEC_THROUGHPUT, 7, 4, 0, fig6);
  static const uint32_t toward_a[] = {4, 5, 6};
  CHECK(path_is(&run, toward_a, 3));
  CHECK_EQ_U64(run.settled_on, 5);
  /* The figure's other order, (4,4) first, with MM as kernel A: index i is Fig. 6's 6-i with the rates
   * swapped, which leaves every WS_TER as it was. From (3,5), index 2: (4,4) is 0.91, turn around;
   * (2,6) over (3,5) is 1.07; (1,7) over (2,6) is 0.96: settle on (2,6), index 1. */
  preempt_coexec_rates mirrored[7];
  for (int i = 0; i < 7; i++) {
    mirrored[i].a = fig6[6 - i].b;
    mirrored[i].b = fig6[6 - i].a;
  }
  run = run_search(PREEMPT_COEXEC_THROUGHPUT, 7, 2, 0, mirrored);
  static const uint32_t turned[] = {2, 3, 1, 0};
  CHECK(path_is(&run, turned, 4));
  CHECK_EQ_U64(run.settled_on, 1);
}

/* After turning, the first step is compared with start, not with the step that failed: index 0 over start
 * is (0.9 + 0.9)/2 = 0.9 (stay at start), though over index 2 it would be (1.8 + 1.8)/2 = 1.8. */
static void test_turn_compares_with_start(void) {
  static const preempt_coexec_rates table[3] = {{0.9, 0.9}, {1, 1}, {0.5, 0.5}};
  search_run run = run_search(PREEMPT_COEXEC_THROUGHPUT, 3, 1, 0, table);
  static const uint32_t path[] = {1, 2, 0};
  CHECK(path_is(&run, path, 3));
  CHECK_EQ_U64(run.settled_on, 1);
  /* From index 0 a worse first step has no other side to try. */
  run = run_search(PREEMPT_COEXEC_THROUGHPUT, 3, 0, 0, (const preempt_coexec_rates[3]){{1, 1}, {0.5, 0.5}, {9, 9}});
  static const uint32_t from_left[] = {0, 1};
  CHECK(path_is(&run, from_left, 2));
  CHECK_EQ_U64(run.settled_on, 0);
  /* WS_TER of exactly 1 is not better. */
  run = run_search(PREEMPT_COEXEC_THROUGHPUT, 3, 0, 0, (const preempt_coexec_rates[3]){{1, 1}, {1.5, 0.5}, {9, 9}});
  CHECK(path_is(&run, from_left, 2));
  CHECK_EQ_U64(run.settled_on, 0);
}

/* FlexSched Fig. 7, PF/SPMV over (1,14) ... (7,2): every step left to right is better, every step right to
 * left worse. Made-up rates: A doubles per step (to 2.6 times on the last), B stays at 10:
 * left to right (2 + 1)/2 = 1.5 (last (2.6 + 1)/2 = 1.8); right to left (32/83.2 + 1)/2 = 0.69. */
static const preempt_coexec_rates fig7[7] = {{1, 10}, {2, 10}, {4, 10}, {8, 10}, {16, 10}, {32, 10}, {83.2, 10}};

static void test_fig7(void) {
  CHECK(near(preempt_coexec_weighted_speedup(&fig7[5], &fig7[6]), (32 / 83.2 + 1) / 2));
  search_run run = run_search(PREEMPT_COEXEC_THROUGHPUT, 7, 0, 0, fig7);
  static const uint32_t all[] = {0, 1, 2, 3, 4, 5, 6};
  CHECK(path_is(&run, all, 7));
  CHECK_EQ_U64(run.settled_on, 6); /* the end, reached still improving */
  run = run_search(PREEMPT_COEXEC_THROUGHPUT, 7, 6, 0, fig7);
  static const uint32_t from_right[] = {6, 5};
  CHECK(path_is(&run, from_right, 2));
  CHECK_EQ_U64(run.settled_on, 6);
}

/* FlexSched §5.5 over a made-up table: A's rate grows with its CTAs, 1 to 5 over indices 0 to 4. */
static void test_latency(void) {
  static const preempt_coexec_rates table[5] = {{1, 5}, {2, 4}, {3, 3}, {4, 2}, {5, 1}};
  /* Minimum 3: 5, 4, 3 meet it (3 >= 3), 2 misses at index 1: back to index 2. start is ignored. */
  search_run run = run_search(PREEMPT_COEXEC_LATENCY, 5, 0, 3.0, table);
  static const uint32_t down[] = {4, 3, 2, 1};
  CHECK(path_is(&run, down, 4));
  CHECK_EQ_U64(run.settled_on, 2);
  /* Minimum 0.5: every configuration meets it; the walk ends on index 0. */
  run = run_search(PREEMPT_COEXEC_LATENCY, 5, 3, 0.5, table);
  static const uint32_t all[] = {4, 3, 2, 1, 0};
  CHECK(path_is(&run, all, 5));
  CHECK_EQ_U64(run.settled_on, 0);
  /* Minimum 6: not even the most A can have meets it; that is kept. */
  run = run_search(PREEMPT_COEXEC_LATENCY, 5, 0, 6.0, table);
  static const uint32_t last[] = {4};
  CHECK(path_is(&run, last, 1));
  CHECK_EQ_U64(run.settled_on, 4);
}

static void test_single_configuration(void) {
  preempt_coexec_search search;
  preempt_coexec_step step;
  preempt_coexec_rates rates = {1, 1};
  for (int mode = PREEMPT_COEXEC_THROUGHPUT; mode <= PREEMPT_COEXEC_LATENCY; mode++) {
    CHECK(preempt_coexec_search_start(&search, (preempt_coexec_mode)mode, 1, 0, 1.0, &step) == PREEMPT_COEXEC_OK);
    CHECK(step.kind == PREEMPT_COEXEC_SETTLED && step.index == 0);
    CHECK(preempt_coexec_search_feed(&search, &rates, &step) == PREEMPT_COEXEC_OK);
    CHECK(step.kind == PREEMPT_COEXEC_SETTLED && step.index == 0);
  }
}

static void test_search_errors(void) {
  preempt_coexec_search search;
  preempt_coexec_step step;
  preempt_coexec_rates good = {1, 1};
  CHECK(preempt_coexec_search_start(NULL, PREEMPT_COEXEC_THROUGHPUT, 3, 0, 0, &step) ==
        PREEMPT_COEXEC_INVALID_ARGUMENT);
  CHECK(preempt_coexec_search_start(&search, PREEMPT_COEXEC_THROUGHPUT, 3, 0, 0, NULL) ==
        PREEMPT_COEXEC_INVALID_ARGUMENT);
  CHECK(preempt_coexec_search_start(&search, PREEMPT_COEXEC_THROUGHPUT, 0, 0, 0, &step) ==
        PREEMPT_COEXEC_INVALID_ARGUMENT);
  CHECK(preempt_coexec_search_start(&search, PREEMPT_COEXEC_THROUGHPUT, 3, 3, 0, &step) ==
        PREEMPT_COEXEC_INVALID_ARGUMENT);
  CHECK(preempt_coexec_search_start(&search, PREEMPT_COEXEC_LATENCY, 3, 3, 1, &step) ==
        PREEMPT_COEXEC_INVALID_ARGUMENT);
  CHECK(preempt_coexec_search_start(&search, (preempt_coexec_mode)7, 3, 0, 0, &step) ==
        PREEMPT_COEXEC_INVALID_ARGUMENT);
  CHECK(preempt_coexec_search_start(&search, PREEMPT_COEXEC_LATENCY, 3, 0, -1, &step) ==
        PREEMPT_COEXEC_INVALID_ARGUMENT);
  CHECK(preempt_coexec_search_start(&search, PREEMPT_COEXEC_LATENCY, 3, 0, NAN, &step) ==
        PREEMPT_COEXEC_INVALID_ARGUMENT);
  /* Throughput mode has no minimum to check. */
  CHECK(preempt_coexec_search_start(&search, PREEMPT_COEXEC_THROUGHPUT, 3, 0, NAN, &step) == PREEMPT_COEXEC_OK);
  /* Feeding a search never started. */
  preempt_coexec_search blank;
  memset(&blank, 0, sizeof blank);
  CHECK(preempt_coexec_search_feed(&blank, &good, &step) == PREEMPT_COEXEC_INVALID_ARGUMENT);

  CHECK(preempt_coexec_search_start(&search, PREEMPT_COEXEC_THROUGHPUT, 3, 0, 0, &step) == PREEMPT_COEXEC_OK);
  CHECK(step.kind == PREEMPT_COEXEC_MEASURE && step.index == 0);
  CHECK(preempt_coexec_search_feed(NULL, &good, &step) == PREEMPT_COEXEC_INVALID_ARGUMENT);
  CHECK(preempt_coexec_search_feed(&search, NULL, &step) == PREEMPT_COEXEC_INVALID_ARGUMENT);
  CHECK(preempt_coexec_search_feed(&search, &good, NULL) == PREEMPT_COEXEC_INVALID_ARGUMENT);
  /* Bad samples leave the search as it was; a good one afterwards goes on as if they never came. */
  const preempt_coexec_rates bad[] = {{-1, 1}, {1, -0.5}, {NAN, 1}, {1, NAN}, {INFINITY, 1}, {1, -INFINITY}};
  for (unsigned i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    preempt_coexec_search before = search;
    preempt_coexec_step untouched = {PREEMPT_COEXEC_MEASURE, 77};
    CHECK_EQ_U64(preempt_coexec_search_feed(&search, &bad[i], &untouched) + 10 * i,
                 PREEMPT_COEXEC_BAD_SAMPLE + 10 * i);
    CHECK(memcmp(&before, &search, sizeof search) == 0);
    CHECK(untouched.index == 77);
  }
  CHECK(preempt_coexec_search_feed(&search, &good, &step) == PREEMPT_COEXEC_OK);
  CHECK(step.kind == PREEMPT_COEXEC_MEASURE && step.index == 1);
  preempt_coexec_rates worse = {0.5, 0.5};
  CHECK(preempt_coexec_search_feed(&search, &worse, &step) == PREEMPT_COEXEC_OK);
  CHECK(step.kind == PREEMPT_COEXEC_SETTLED && step.index == 0);
  /* After SETTLED: the same answer, whatever is fed. */
  preempt_coexec_rates better = {9, 9}, nonsense = {-1, NAN};
  CHECK(preempt_coexec_search_feed(&search, &better, &step) == PREEMPT_COEXEC_OK);
  CHECK(step.kind == PREEMPT_COEXEC_SETTLED && step.index == 0);
  CHECK(preempt_coexec_search_feed(&search, &nonsense, &step) == PREEMPT_COEXEC_OK);
  CHECK(step.kind == PREEMPT_COEXEC_SETTLED && step.index == 0);
}

int main(void) {
  test_status_names();
  test_occupancy();
  test_occupancy_errors();
  test_paper_space();
  test_fig7_space();
  test_h100_pair();
  test_space_errors();
  test_weighted_speedup();
  test_fig5();
  test_fig6();
  test_turn_compares_with_start();
  test_fig7();
  test_latency();
  test_single_configuration();
  test_search_errors();
  CHECK_DONE("test_coexec");
}
