/* test_generation.c: unit tests of the launch generation sequence (preempt/generation.h): never 0 or a generation
 * the device's tags use, and alternating between the control block's two lanes. FLEP §4.1. */
#include "check.h"
#include "preempt/control_block.h"
#include "preempt/generation.h"

static void test_steps(void) {
  CHECK_EQ_U64(preempt_next_generation(0), 1);
  CHECK_EQ_U64(preempt_next_generation(1), 2);
  CHECK_EQ_U64(preempt_next_generation(41), 42);
  CHECK_EQ_U64(preempt_next_generation(0xffffffeeu), 0xffffffefu);
}

/* At the top: 0xffffffef is the last generation a launch takes; the next is 2, not 0xfffffff0 (the first reserved
 * one) nor 1 (the same lane as 0xffffffef). A record that somehow holds a reserved value or the old wrap's
 * 0xffffffff also leaves for a low, lane-alternating one. */
static void test_wrap(void) {
  CHECK_EQ_U64(PREEMPT_GENERATION_RESERVED, 0xfffffff0u);
  CHECK_EQ_U64(preempt_next_generation(0xffffffefu), 2);
  CHECK_EQ_U64(preempt_next_generation(0xfffffff0u), 1);
  CHECK_EQ_U64(preempt_next_generation(0xfffffffdu), 2);
  CHECK_EQ_U64(preempt_next_generation(0xfffffffeu), 1);
  CHECK_EQ_U64(preempt_next_generation(0xffffffffu), 2);
}

/* Walking the sequence across the wrap: every generation is nonzero and below the reserved ones, and the lane
 * (generation % PREEMPT_CONTROL_LANES) changes at every step. */
static void test_sequence(void) {
  unsigned int generation = 0xffffff00u;
  for (int step = 0; step < 1000; step++) {
    unsigned int next = preempt_next_generation(generation);
    CHECK(next != 0);
    CHECK(next < PREEMPT_GENERATION_RESERVED);
    CHECK(next % PREEMPT_CONTROL_LANES != generation % PREEMPT_CONTROL_LANES);
    generation = next;
  }
  CHECK(generation < 0xffffff00u); /* it wrapped */
}

int main(void) {
  test_steps();
  test_wrap();
  test_sequence();
  CHECK_DONE("test_generation");
}
