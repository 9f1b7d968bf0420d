/* test_flashback.c: unit tests of lib/flashback.c on the examples of the CTXBack paper.
 * CTXBack §III-B Fig. 2 (re-execute or save/reload), Fig. 3 without reverting, barriers and the window. */
#include <string.h>

#include "check.h"
#include "preempt/flashback.h"

#define REGS(...) ((const uint16_t[]){__VA_ARGS__}), (sizeof((const uint16_t[]){__VA_ARGS__}) / sizeof(uint16_t))
#define NONE NULL, 0

static uint64_t bits(const char *registers) { /* "0134": r0, r1, r3, r4 */
  uint64_t set = 0;
  for (; *registers; registers++)
    set |= 1ull << (*registers - '0');
  return set;
}

int main(void) {
  const uint32_t bytes4[8] = {4, 4, 4, 4, 4, 4, 4, 4};
  uint64_t saved[1];
  preempt_fb_action actions[8];
  preempt_fb_plan plan = {.saved = saved, .actions = actions};

  /* Fig. 2: I0 XOR r3,r4  I1 MUL r1,r3  I2 RSHL r0,r0  I3 ADD r2,r0,r4; r0-r4 live at I4 (Fig. 1).
   * The paper: every instruction is a flashback point; from I0 only r0 (I2's result) and r4 are
   * saved; I0, I1 re-executed, I2 reloaded, then a jump to I3. */
  {
    preempt_fb_instruction code[] = {
        {REGS(3), REGS(4), 1, 0},
        {REGS(1), REGS(3), 1, 0},
        {REGS(0), REGS(0), 1, 0},
        {REGS(2), REGS(0, 4), 1, 0},
    };
    uint64_t live_in = bits("04"), after0 = bits("034"), after1 = bits("0134"), after2 = bits("0134"),
             after3 = bits("01234");
    const uint64_t *live_after[] = {&after0, &after1, &after2, &after3};
    preempt_fb_block block = {code, 4, 5, bytes4, live_after, &live_in};
    CHECK_EQ_U64(preempt_fb_plan_preemption(&block, 4, 64, &plan), 0);
    CHECK_EQ_U64(plan.flashback, 0);
    CHECK_EQ_U64(saved[0], bits("04"));
    CHECK_EQ_U64(plan.context_bytes, 8);
    CHECK_EQ_U64(plan.live_bytes, 20);
    CHECK_EQ_U64(actions[0], PREEMPT_FB_REEXECUTE);
    CHECK_EQ_U64(actions[1], PREEMPT_FB_REEXECUTE);
    CHECK_EQ_U64(actions[2], PREEMPT_FB_RELOAD);
    CHECK_EQ_U64(plan.jump_target, 3);

    /* A window of one instruction: from I3, r0 and r4 (its operands) plus r1 and r3
     * (live, not rebuilt) are saved. */
    CHECK_EQ_U64(preempt_fb_plan_preemption(&block, 4, 1, &plan), 0);
    CHECK_EQ_U64(plan.flashback, 3);
    CHECK_EQ_U64(saved[0], bits("0134"));

    /* A barrier at I1: no flashback point at or before it; from I2 or I3 four registers
     * are saved, and the latest of equals wins. */
    code[1].barrier = 1;
    CHECK_EQ_U64(preempt_fb_plan_preemption(&block, 4, 64, &plan), 0);
    CHECK(plan.flashback >= 2);
    CHECK_EQ_U64(plan.flashback, 3);
    CHECK_EQ_U64(plan.context_bytes, 16);
    code[1].barrier = 0;

    /* A scalar r4 costs 4 bytes, vector registers 256 (64 lanes): the same plan, 260 bytes. */
    const uint32_t mixed[5] = {256, 256, 256, 256, 4};
    block.register_bytes = mixed;
    CHECK_EQ_U64(preempt_fb_plan_preemption(&block, 4, 64, &plan), 0);
    CHECK_EQ_U64(plan.flashback, 0);
    CHECK_EQ_U64(plan.context_bytes, 260);
    CHECK_EQ_U64(plan.live_bytes, 4 * 256 + 4);
    block.register_bytes = bytes4;

    /* Preempted at I0: the only flashback point is I0 itself, with its live-in set. */
    CHECK_EQ_U64(preempt_fb_plan_preemption(&block, 0, 64, &plan), 0);
    CHECK_EQ_U64(plan.flashback, 0);
    CHECK_EQ_U64(saved[0], bits("04"));
    CHECK(preempt_fb_plan_preemption(&block, 5, 64, &plan) == -1); /* past the block */
  }

  /* Fig. 3 without instruction reverting: I0 XOR r1,r0,r2  I1 MUL r3,r1,r2  I2 ADD r0,r0,r3
   * I3 MOV r1; r0-r3 live at I4. I0's operand r0 is overwritten by I2 and its result by I3:
   * without reverting the context has three registers (r0, r2, r3) wherever the flashback
   * point is, against the paper's two with reverting (Alg. 2, not implemented). */
  {
    preempt_fb_instruction code[] = {
        {REGS(1), REGS(0, 2), 1, 0},
        {REGS(3), REGS(1, 2), 1, 0},
        {REGS(0), REGS(0, 3), 1, 0},
        {REGS(1), NONE, 1, 0},
    };
    uint64_t live_in = bits("02"), after0 = bits("012"), after1 = bits("023"), after2 = bits("023"),
             after3 = bits("0123");
    const uint64_t *live_after[] = {&after0, &after1, &after2, &after3};
    preempt_fb_block block = {code, 4, 4, bytes4, live_after, &live_in};
    CHECK_EQ_U64(preempt_fb_plan_preemption(&block, 4, 64, &plan), 0);
    CHECK_EQ_U64(saved[0], bits("023"));
    CHECK_EQ_U64(plan.context_bytes, 12);
    CHECK_EQ_U64(plan.live_bytes, 16);
    CHECK_EQ_U64(plan.flashback, 3);
    CHECK_EQ_U64(plan.jump_target, 3);
  }

  /* An instruction that cannot be re-executed (a load from memory the block later writes),
   * whose result is overwritten afterwards: from I0, I0 is skipped (its value is lost) and
   * I1, which read it, has its result reloaded instead. Every point costs r0 and r2 (8 bytes)
   * except I3 itself (12); the latest, I2, wins. */
  {
    preempt_fb_instruction code[] = {
        {REGS(1), REGS(0), 0, 0}, /* r1 = load [r0] */
        {REGS(2), REGS(1), 1, 0}, /* r2 = r1 + 1 */
        {REGS(1), NONE, 1, 0},    /* r1 = 7 */
    };
    uint64_t live_in = bits("0"), after0 = bits("01"), after1 = bits("012"), after2 = bits("012");
    const uint64_t *live_after[] = {&after0, &after1, &after2};
    preempt_fb_block block = {code, 3, 3, bytes4, live_after, &live_in};
    CHECK_EQ_U64(preempt_fb_plan_preemption(&block, 3, 64, &plan), 0);
    CHECK_EQ_U64(plan.context_bytes, 8);
    CHECK_EQ_U64(saved[0], bits("02"));
    CHECK_EQ_U64(plan.flashback, 2);
    CHECK_EQ_U64(plan.live_bytes, 12);
    /* Preempted at I2 (r0, r1, r2 live): from I1, r2 is re-executed from r1, which is saved
     * as it is; from I0, I0's r1 is reloaded (not yet overwritten) and I1 re-executed. Both
     * save r0 and r1 (8 bytes); the later, I1, wins. */
    CHECK_EQ_U64(preempt_fb_plan_preemption(&block, 2, 64, &plan), 0);
    CHECK_EQ_U64(plan.context_bytes, 8);
    CHECK_EQ_U64(saved[0], bits("01"));
    CHECK_EQ_U64(plan.flashback, 1);
    CHECK_EQ_U64(plan.jump_target, 1);
  }

  CHECK(preempt_fb_plan_preemption(NULL, 0, 1, &plan) == -1);
  CHECK_DONE("test_flashback");
}
