/* test_intask_period.c: unit tests of the in-task check interval and fresh reads (preempt/intask_period.h):
 * hand-derived steps, clock wraparound, simulated loops that speed up and slow down. EffiSha §6.3, per loop. */
#include "check.h"
#include "preempt/intask_period.h"

#define PERIOD 10000u /* PREEMPT_INTASK_PERIOD_US's default, in ns */

/* The count after one check that measured `measured` ns since the last (at a nonzero time). */
static unsigned int after(unsigned int iterations, unsigned int measured) {
  return preempt_intask_next_iterations(iterations, PERIOD, 1000, 1000 + measured);
}

static void test_steps(void) {
  /* Nothing measured since the loop was entered: kept, whatever the clock says. */
  CHECK_EQ_U64(preempt_intask_next_iterations(64, PERIOD, 0, 123456789), 64);
  /* Each band around the period: under 1/4 x4, under 1/2 x2, [1/2, 2] kept, over 2 /2, over 4 /4, over 16 /16. */
  CHECK_EQ_U64(after(64, 2499), 256);
  CHECK_EQ_U64(after(64, 2500), 128);
  CHECK_EQ_U64(after(64, 4999), 128);
  CHECK_EQ_U64(after(64, 5000), 64);
  CHECK_EQ_U64(after(64, 20000), 64);
  CHECK_EQ_U64(after(64, 20002), 32);
  CHECK_EQ_U64(after(64, 40004), 16);
  CHECK_EQ_U64(after(64, 160016), 4);
  CHECK_EQ_U64(after(64, 4000000), 4);
  /* A measure of 0 ns (a clock coarser than the loop) still grows the count. */
  CHECK_EQ_U64(after(1, 0), 4);
  /* Never under one iteration, never over the cap. */
  CHECK_EQ_U64(after(1, 4000000), 1);
  CHECK_EQ_U64(after(8, 4000000), 1);
  CHECK_EQ_U64(after(PREEMPT_INTASK_MAX_ITERATIONS, 1), PREEMPT_INTASK_MAX_ITERATIONS);
  CHECK_EQ_U64(after(PREEMPT_INTASK_MAX_ITERATIONS / 2, 1), PREEMPT_INTASK_MAX_ITERATIONS);
  /* The clock's low 32 bits wrap: 6144 ns across the wrap is 6144 ns. */
  CHECK_EQ_U64(preempt_intask_next_iterations(64, PERIOD, 0xfffff000u, 0x800u), 64);
  /* A period so long that 16 periods overflow 32 bits: no overflow in the comparison. */
  CHECK_EQ_U64(preempt_intask_next_iterations(64, 0x20000000u, 1000, 1000 + 0x30000000u), 64);
}

/* A loop whose iterations take `nanoseconds[phase]` each, checked `checks` times per phase from one iteration (a
 * CTA's start): the largest interval between two checks in each phase's last half, and in the whole run after the
 * first phase. */
static void simulate(const unsigned int *nanoseconds, int phases, int checks, unsigned long long *settled_max,
                     unsigned long long *worst) {
  unsigned int iterations = 1, now = 1000, last = 0;
  *worst = 0;
  for (int phase = 0; phase < phases; phase++) {
    settled_max[phase] = 0;
    for (int check = 0; check < checks; check++) {
      unsigned long long interval = (unsigned long long)iterations * nanoseconds[phase];
      now += (unsigned int)interval;
      if (check >= checks / 2 && interval > settled_max[phase])
        settled_max[phase] = interval;
      if (phase > 0 && interval > *worst)
        *worst = interval;
      iterations = preempt_intask_next_iterations(iterations, PERIOD, last, now);
      last = now;
    }
  }
}

static void test_simulated_loops(void) {
  unsigned long long settled[3], worst;
  /* 0.7 us iterations: settles within [period/2, 2 periods]. Then 100x slower (the SM filled, or another process
   * got the SM): the first interval is long (the count was set for the fast loop), and the count comes down within
   * a few checks instead of staying (a measure over 16 periods used to be ignored). Then fast again. */
  const unsigned int speeds[3] = {700, 70000, 700};
  simulate(speeds, 3, 16, settled, &worst);
  CHECK(settled[0] >= PERIOD / 2 && settled[0] <= 2 * PERIOD);
  CHECK(settled[1] <= 70000);                    /* one iteration: the shortest interval there is */
  CHECK(settled[2] >= PERIOD / 2 && settled[2] <= 2 * PERIOD);
  CHECK(worst <= 16ull * 70000);                 /* the count when it slowed down: 16 iterations */
  /* Every speed from 1 ns to 2 periods an iteration settles within [period/2, 2 periods]. */
  for (unsigned int speed = 1; speed <= 2 * PERIOD; speed = speed * 3 + 1) {
    const unsigned int one[1] = {speed};
    simulate(one, 1, 40, settled, &worst);
    CHECK(settled[0] >= PERIOD / 2 || speed * 1ull > PERIOD / 2);
    CHECK(settled[0] <= 2 * PERIOD);
  }
}

/* When thread 0 reads the eviction word again at a check: over 4 periods since the last check, never without a
 * measure or a period. */
static void test_poll_again(void) {
  CHECK(!preempt_intask_poll_again(PERIOD, 1000, 1000 + 4 * PERIOD));
  CHECK(!preempt_intask_poll_again(PERIOD, 1000, 1000 + 4 * PERIOD + 3)); /* 40003 >> 2 is still 10000 */
  CHECK(preempt_intask_poll_again(PERIOD, 1000, 1000 + 4 * PERIOD + 4));
  CHECK(preempt_intask_poll_again(PERIOD, 1000, 1000 + 150000));         /* one 150 us iteration a check */
  CHECK(!preempt_intask_poll_again(PERIOD, 0, 123456789));                /* nothing measured yet */
  CHECK(!preempt_intask_poll_again(0, 1000, 123456789));                  /* checks off */
  /* Across the clock's 32-bit wrap: 50 us is 50 us. */
  CHECK(preempt_intask_poll_again(PERIOD, 0xfffff000u, 0xfffff000u + 50000u));
  CHECK(!preempt_intask_poll_again(PERIOD, 0xfffff000u, 0xfffff000u + 30000u));
}

static void test_chunk_length(void) {
  /* The largest power of two whose chunk fits the work: 64 x 8 = 512 fits exactly, 65 x 8 does not. */
  CHECK_EQ_U64(preempt_intask_chunk_length(64, 512), 8);
  CHECK_EQ_U64(preempt_intask_chunk_length(65, 512), 4);
  CHECK_EQ_U64(preempt_intask_chunk_length(128, 512), 4);
  CHECK_EQ_U64(preempt_intask_chunk_length(129, 512), 2);
  CHECK_EQ_U64(preempt_intask_chunk_length(256, 512), 2);
  /* Not even two iterations fit: 1, a chunk length set at run time. */
  CHECK_EQ_U64(preempt_intask_chunk_length(257, 512), 1);
  CHECK_EQ_U64(preempt_intask_chunk_length(10, 0), 1);
  /* Never over the cap, however small the body; an empty body counts as one instruction. */
  CHECK_EQ_U64(preempt_intask_chunk_length(1, 1u << 30), PREEMPT_INTASK_MAX_CHUNK);
  CHECK_EQ_U64(preempt_intask_chunk_length(0, 16), PREEMPT_INTASK_MAX_CHUNK);
  CHECK_EQ_U64(preempt_intask_chunk_length(0, 1), 1);
  /* No overflow for a huge body. */
  CHECK_EQ_U64(preempt_intask_chunk_length(~0ull / 2, ~0ull), 2);
}

/* The answer thread 0 leaves for a check with no barrier of its own (intask_period.h). */
static void test_flags_answer(void) {
  /* The word set: leave (0), whatever the count or the gap. */
  CHECK_EQ_U64(preempt_intask_flags_answer(1, 64, 0), 0);
  CHECK_EQ_U64(preempt_intask_flags_answer(0xffffffffu, 1, 1), 0);
  /* Not set: the count, within its field; the state bits above it stay clear. */
  CHECK_EQ_U64(preempt_intask_flags_answer(0, 64, 0), 64);
  CHECK_EQ_U64(preempt_intask_flags_answer(0, 0xffffffffu, 0), PREEMPT_INTASK_MAX_ITERATIONS);
  CHECK_EQ_U64(preempt_intask_flags_answer(0, 0xffffffffu, 0) & ~PREEMPT_INTASK_COUNT_MASK, 0);
  /* One iteration per interval, or a long gap: the next check meets at barriers and reads afresh. */
  CHECK_EQ_U64(preempt_intask_flags_answer(0, 1, 0), 1u | PREEMPT_INTASK_AGAIN);
  CHECK_EQ_U64(preempt_intask_flags_answer(0, 0, 0), 1u | PREEMPT_INTASK_AGAIN);
  CHECK_EQ_U64(preempt_intask_flags_answer(0, 64, 1), 64u | PREEMPT_INTASK_AGAIN);
  /* The count and AGAIN fit under the state's bits (the check returns the state in bits 30-31). */
  CHECK(PREEMPT_INTASK_AGAIN < (1u << PREEMPT_INTASK_STATE_SHIFT) + 1u);
  CHECK(PREEMPT_INTASK_MAX_ITERATIONS <= PREEMPT_INTASK_COUNT_MASK);
  CHECK((PREEMPT_INTASK_STATE_FIRST & 1u) == 0);
}

int main(void) {
  test_flags_answer();
  test_steps();
  test_poll_again();
  test_simulated_loops();
  test_chunk_length();
  CHECK_DONE("test_intask_period");
}
