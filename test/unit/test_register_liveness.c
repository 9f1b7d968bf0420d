/* test_register_liveness.c: unit tests of lib/register_liveness.c, the backward live-register dataflow.
 * CTXBack §III-A starts from each instruction's live registers; loops and branches must converge to the textbook sets. */
#include "check.h"
#include "preempt/register_liveness.h"

#define BIT(r) (UINT64_C(1) << (r))

/* A loop:  b0: r0 = ..; r1 = ..      -> b1
 *          b1: r2 = r0 + r1; r0 = r2  -> b1, b2
 *          b2: use r0                 -> exit
 * r1 stays live around the loop, r2 never leaves b1, r3 (written in b0, never read) is dead. */
static void loop_keeps_its_inputs_live(void) {
  size_t succ0[] = {1}, succ1[] = {1, 2};
  uint64_t uses[3] = {0, BIT(0) | BIT(1), BIT(0)};
  uint64_t defs[3] = {BIT(0) | BIT(1) | BIT(3), BIT(0) | BIT(2), 0};
  preempt_liveness_block blocks[3] = {
      {succ0, 1, &uses[0], &defs[0]}, {succ1, 2, &uses[1], &defs[1]}, {NULL, 0, &uses[2], &defs[2]}};
  uint64_t in[3], out[3];
  CHECK(preempt_liveness_solve(blocks, 3, 4, in, out) == 0);
  CHECK_EQ_U64(in[0], 0);
  CHECK_EQ_U64(out[0], BIT(0) | BIT(1));
  CHECK_EQ_U64(in[1], BIT(0) | BIT(1));
  CHECK_EQ_U64(out[1], BIT(0) | BIT(1));
  CHECK_EQ_U64(in[2], BIT(0));
  CHECK_EQ_U64(out[2], 0);
}

/* A diamond: a register read on one arm only is live into the branch. */
static void diamond_merges_both_arms(void) {
  size_t succ0[] = {1, 2}, succ1[] = {3}, succ2[] = {3};
  uint64_t uses[4] = {0, BIT(5), BIT(6), BIT(7)};
  uint64_t defs[4] = {BIT(5) | BIT(6), BIT(7), 0, 0};
  preempt_liveness_block blocks[4] = {{succ0, 2, &uses[0], &defs[0]},
                                      {succ1, 1, &uses[1], &defs[1]},
                                      {succ2, 1, &uses[2], &defs[2]},
                                      {NULL, 0, &uses[3], &defs[3]}};
  uint64_t in[4], out[4];
  CHECK(preempt_liveness_solve(blocks, 4, 8, in, out) == 0);
  CHECK_EQ_U64(out[0], BIT(5) | BIT(6) | BIT(7));
  CHECK_EQ_U64(in[0], BIT(7)); /* r7 is read in b3 on the b2 path before any write */
  CHECK_EQ_U64(in[1], BIT(5));
  CHECK_EQ_U64(in[2], BIT(6) | BIT(7));
}

/* Registers past the first word, and the per-instruction step. */
static void wide_sets_and_steps(void) {
  size_t words = preempt_liveness_words(130);
  CHECK_EQ_U64(words, 3);
  CHECK_EQ_U64(preempt_liveness_words(0), 0);
  CHECK_EQ_U64(preempt_liveness_words(64), 1);
  uint64_t live[3] = {BIT(1), BIT(0), 0};
  uint32_t defs[] = {64, 1}, uses[] = {129, 2};
  preempt_liveness_step_backward(live, defs, 2, uses, 2);
  CHECK_EQ_U64(live[0], BIT(2));
  CHECK_EQ_U64(live[1], 0);
  CHECK_EQ_U64(live[2], BIT(1));
  /* A register both read and written by one instruction stays live before it. */
  uint64_t one[1] = {0};
  uint32_t same[] = {3};
  preempt_liveness_step_backward(one, same, 1, same, 1);
  CHECK_EQ_U64(one[0], BIT(3));
}

static void bad_input_is_refused(void) {
  size_t succ[] = {5};
  uint64_t uses = 0, defs = 0, in = 0, out = 0;
  preempt_liveness_block block = {succ, 1, &uses, &defs};
  CHECK(preempt_liveness_solve(&block, 1, 3, &in, &out) == -1);
  CHECK(preempt_liveness_solve(NULL, 1, 3, &in, &out) == -1);
  CHECK(preempt_liveness_solve(NULL, 0, 3, NULL, NULL) == 0);
}

int main(void) {
  loop_keeps_its_inputs_live();
  diamond_merges_both_arms();
  wide_sets_and_steps();
  bad_input_is_refused();
  CHECK_DONE("test_register_liveness");
}
