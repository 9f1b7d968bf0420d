/* test_flashback.c: unit tests of lib/'s CTXBack analysis on the paper's worked examples and random blocks.
 * CTXBack §III Figs. 1-6 (flashback points, reverting, OSRB), §IV-C (CS-Defer, combination), the checker. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "preempt/ctxback.h"

#define MAX_CODE 64
#define MAX_REGS 64

/* A block under test: instructions written as in the paper, liveness from a
 * live-out set by the usual backward pass. */
typedef struct fixture {
  preempt_ctx_instruction code[MAX_CODE];
  uint16_t results[MAX_CODE][3], operands[MAX_CODE][4];
  preempt_ctx_register registers[MAX_REGS];
  uint64_t live[MAX_CODE + 1]; /* live[j]: before instruction j; live[count]: live out */
  const uint64_t *live_after[MAX_CODE];
  preempt_ctx_block block;
} fixture;

static void fixture_init(fixture *f, size_t register_count, uint32_t bytes) {
  memset(f, 0, sizeof *f);
  for (size_t reg = 0; reg < register_count; reg++)
    f->registers[reg] = (preempt_ctx_register){.bytes = bytes, .bits = 32, .kind = PREEMPT_CTX_VECTOR};
  f->block.registers = f->registers;
  f->block.register_count = register_count;
  f->block.instructions = f->code;
}

/* Adds `result = operation(operands..., immediate)`; -1 ends the operand list. */
static void emit(fixture *f, preempt_ctx_operation operation, int result, int first, int second, int has_immediate,
                 uint64_t immediate, unsigned flags) {
  size_t j = f->block.count++;
  preempt_ctx_instruction *instruction = &f->code[j];
  instruction->operation = operation;
  instruction->results = f->results[j];
  if (result >= 0)
    f->results[j][instruction->result_count++] = (uint16_t)result;
  instruction->operands = f->operands[j];
  if (first >= 0)
    f->operands[j][instruction->operand_count++] = (uint16_t)first;
  if (second >= 0)
    f->operands[j][instruction->operand_count++] = (uint16_t)second;
  instruction->has_immediate = has_immediate;
  instruction->immediate = immediate;
  instruction->flags = flags;
  instruction->opcode = (uint32_t)operation * 100 + (uint32_t)j;
}

#define PURE (PREEMPT_CTX_REEXECUTABLE | PREEMPT_CTX_COPYABLE)

static void fixture_finish(fixture *f, uint64_t live_out) {
  size_t count = f->block.count;
  f->live[count] = live_out;
  for (size_t j = count; j-- > 0;) {
    uint64_t live = f->live[j + 1];
    for (size_t r = 0; r < f->code[j].result_count; r++)
      live &= ~(1ull << f->code[j].results[r]);
    for (size_t o = 0; o < f->code[j].operand_count; o++)
      live |= 1ull << f->code[j].operands[o];
    f->live[j] = live;
  }
  for (size_t j = 0; j < count; j++)
    f->live_after[j] = &f->live[j + 1];
  f->block.live_after = f->live_after;
  f->block.live_in = &f->live[0];
}

static uint64_t regs(const char *names) { /* "0134": r0, r1, r3, r4 */
  uint64_t set = 0;
  for (; *names; names++)
    set |= 1ull << (*names - '0');
  return set;
}

/* The registers a plan saves, as a bitset. */
static uint64_t saved(const preempt_ctx_plan *plan) {
  uint64_t set = 0;
  for (size_t s = 0; s < plan->preempt_count; s++)
    if (plan->preempt[s].kind == PREEMPT_CTX_SAVE)
      set |= 1ull << plan->preempt[s].reg;
  return set;
}

/* Instructions a routine runs with `kind`, as a bitset in step order check. */
static uint64_t steps_of(const preempt_ctx_step *steps, size_t count, preempt_ctx_step_kind kind) {
  uint64_t set = 0;
  for (size_t s = 0; s < count; s++)
    if (steps[s].kind == kind)
      set |= 1ull << steps[s].instruction;
  return set;
}

static size_t position(const preempt_ctx_step *steps, size_t count, preempt_ctx_step_kind kind, uint32_t index) {
  for (size_t s = 0; s < count; s++)
    if (steps[s].kind == kind && steps[s].instruction == index)
      return s;
  return SIZE_MAX;
}

static const preempt_ctx_cost_model *costs = &preempt_ctx_default_costs;

static void check_proven(const fixture *f, const preempt_ctx_plan *plan) {
  CHECK_EQ_U64(preempt_ctx_verify_plan(&f->block, plan), 0);
  CHECK_EQ_U64(preempt_ctx_check_plan(&f->block, plan, 42, 16, NULL), 0);
}

/* Fig. 1/2 code: I0 XOR r3,r4,0xF  I1 MUL r1,r3,0x7  I2 RSHL r0,r0,0x2  I3 ADD r2,r0,r4; r0-r4 live at I4. */
static void figure_2_code(fixture *f, unsigned flags) {
  fixture_init(f, 5, 4);
  emit(f, PREEMPT_CTX_XOR, 3, 4, -1, 1, 0xF, flags);
  emit(f, PREEMPT_CTX_MUL, 1, 3, -1, 1, 0x7, flags);
  emit(f, PREEMPT_CTX_OPAQUE, 0, 0, -1, 1, 0x2, flags); /* a right shift loses bits: not invertible */
  emit(f, PREEMPT_CTX_ADD, 2, 0, 4, 0, 0, flags);
  fixture_finish(f, regs("01234"));
}

static void test_figure_1(void) {
  /* Availability alone (nothing re-executable): I3's live-in registers are all
   * still in place at I4 and I0-I2's are not (r0 was overwritten by I2), so
   * the best flashback point is I3, saving r0, r1, r3, r4 instead of five. */
  fixture f;
  figure_2_code(&f, 0);
  preempt_ctx_plan plan;
  CHECK_EQ_U64(preempt_ctx_plan_flashback(&f.block, 4, 64, costs, &plan), 0);
  CHECK_EQ_U64(plan.resume_at, 3);
  CHECK_EQ_U64(saved(&plan), regs("0134"));
  CHECK_EQ_U64(plan.context_bytes, 16);
  check_proven(&f, &plan);
  preempt_ctx_plan_free(&plan);
}

static void test_figure_2(void) {
  /* The paper: flashback point I0; save r0 and r4; resume re-executes I0 and
   * I1, reloads I2's result r0, and jumps to I3. */
  fixture f;
  figure_2_code(&f, PURE);
  preempt_ctx_plan plan;
  CHECK_EQ_U64(preempt_ctx_plan_flashback(&f.block, 4, 64, costs, &plan), 0);
  CHECK_EQ_U64(plan.flashback, 0);
  CHECK_EQ_U64(plan.resume_at, 3);
  CHECK_EQ_U64(saved(&plan), regs("04"));
  CHECK_EQ_U64(plan.context_bytes, 8);
  CHECK_EQ_U64(steps_of(plan.resume, plan.resume_count, PREEMPT_CTX_REEXECUTE), regs("01"));
  CHECK_EQ_U64(plan.revert_count, 0);
  CHECK(position(plan.resume, plan.resume_count, PREEMPT_CTX_REEXECUTE, 0) <
        position(plan.resume, plan.resume_count, PREEMPT_CTX_REEXECUTE, 1));
  check_proven(&f, &plan);
  preempt_ctx_plan_free(&plan);

  /* A window of one instruction: I3 is the only candidate besides I4. */
  CHECK_EQ_U64(preempt_ctx_plan_flashback(&f.block, 4, 1, costs, &plan), 0);
  CHECK(plan.resume_at >= 3);
  CHECK_EQ_U64(plan.context_bytes, 16);
  check_proven(&f, &plan);
  preempt_ctx_plan_free(&plan);

  /* A store at I1 ends the idempotent region: nothing at or before it. */
  f.code[1].flags = PREEMPT_CTX_BARRIER;
  CHECK_EQ_U64(preempt_ctx_plan_flashback(&f.block, 4, 64, costs, &plan), 0);
  CHECK(plan.flashback >= 2);
  CHECK(plan.resume_at >= 2);
  check_proven(&f, &plan);
  preempt_ctx_plan_free(&plan);
}

static void test_figure_3(void) {
  /* I0 XOR r1,r0,r2  I1 MUL r3,r1,r2  I2 ADD r0,r0,r3  I3 MOV r1,0xF; r0-r3 live at I4.
   * The paper: revert I2 at preemption (SUB r0,r0,r3), save r0 and r2, resume
   * by loading them and jumping to I0. */
  fixture f;
  fixture_init(&f, 4, 4);
  emit(&f, PREEMPT_CTX_XOR, 1, 0, 2, 0, 0, PURE);
  emit(&f, PREEMPT_CTX_OPAQUE, 3, 1, 2, 0, 0, PURE); /* a multiply of two registers: no inverse */
  emit(&f, PREEMPT_CTX_ADD, 0, 0, 3, 0, 0, PURE);
  emit(&f, PREEMPT_CTX_MOVE, 1, -1, -1, 1, 0xF, PURE);
  fixture_finish(&f, regs("0123"));
  preempt_ctx_plan plan;
  CHECK_EQ_U64(preempt_ctx_plan_flashback(&f.block, 4, 64, costs, &plan), 0);
  CHECK_EQ_U64(plan.flashback, 0);
  CHECK_EQ_U64(plan.resume_at, 0);
  CHECK_EQ_U64(saved(&plan), regs("02"));
  CHECK_EQ_U64(steps_of(plan.preempt, plan.preempt_count, PREEMPT_CTX_REVERT), regs("2"));
  CHECK_EQ_U64(steps_of(plan.resume, plan.resume_count, PREEMPT_CTX_REEXECUTE), 0);
  CHECK_EQ_U64(plan.context_bytes, 8);
  /* The revert comes before r0 is saved: the saved r0 is the reverted one. */
  size_t revert = position(plan.preempt, plan.preempt_count, PREEMPT_CTX_REVERT, 2);
  for (size_t s = 0; s < plan.preempt_count; s++)
    if (plan.preempt[s].kind == PREEMPT_CTX_SAVE && plan.preempt[s].reg == 0)
      CHECK(s > revert);
  check_proven(&f, &plan);
  preempt_ctx_plan_free(&plan);

  /* Without reverting (ADD made opaque) three registers are needed. */
  f.code[2].operation = PREEMPT_CTX_OPAQUE;
  CHECK_EQ_U64(preempt_ctx_plan_flashback(&f.block, 4, 64, costs, &plan), 0);
  CHECK_EQ_U64(plan.context_bytes, 12);
  CHECK_EQ_U64(plan.revert_count, 0);
  check_proven(&f, &plan);
  preempt_ctx_plan_free(&plan);
}

static void test_figure_4(void) {
  /* I0 MUL r2,r1,0xE  I1 XOR r3,r0,r2  I2 ADD r0,r0,r2  I3 MOV r2,0xFF; r0-r3 live at I4.
   * Reverting I2 needs r2 as of I0, gone at preemption (I3): the revert must
   * happen at resumption after re-executing I0. The paper: save r0, r1;
   * resume: load, MUL r2 (I0), SUB r0,r0,r2 (I2^-1), jump I1. */
  fixture f;
  fixture_init(&f, 4, 4);
  emit(&f, PREEMPT_CTX_MUL, 2, 1, -1, 1, 0xE, PURE); /* even constant: not invertible, re-executable */
  emit(&f, PREEMPT_CTX_XOR, 3, 0, 2, 0, 0, PURE);
  emit(&f, PREEMPT_CTX_ADD, 0, 0, 2, 0, 0, PURE);
  emit(&f, PREEMPT_CTX_MOVE, 2, -1, -1, 1, 0xFF, PURE);
  fixture_finish(&f, regs("0123"));
  preempt_ctx_plan plan;
  CHECK_EQ_U64(preempt_ctx_plan_flashback(&f.block, 4, 64, costs, &plan), 0);
  CHECK_EQ_U64(saved(&plan), regs("01"));
  CHECK_EQ_U64(plan.context_bytes, 8);
  CHECK_EQ_U64(plan.resume_at, 1);
  CHECK_EQ_U64(plan.flashback, 0);
  CHECK_EQ_U64(steps_of(plan.preempt, plan.preempt_count, PREEMPT_CTX_REVERT), 0);
  CHECK_EQ_U64(steps_of(plan.resume, plan.resume_count, PREEMPT_CTX_REEXECUTE), regs("0"));
  CHECK_EQ_U64(steps_of(plan.resume, plan.resume_count, PREEMPT_CTX_REVERT), regs("2"));
  CHECK(position(plan.resume, plan.resume_count, PREEMPT_CTX_REEXECUTE, 0) <
        position(plan.resume, plan.resume_count, PREEMPT_CTX_REVERT, 2));
  check_proven(&f, &plan);
  preempt_ctx_plan_free(&plan);
}

static void test_figure_5(void) {
  /* I0 ADD V7,V2,S4  I1 OR S4,S4,0x2  I2 MUL V11,V11,V2  I3 SUB V12,V11,V7; live at I4: V2 V7 V11 V12 S4.
   * Vector registers cost 256 B, scalar 4 B. I1 destroys S4, so I0 cannot be
   * re-executed and V7 must be swapped; OSRB copies S4 into the free S11
   * before I1: then S4's old value is saved from S11, and the resumption
   * rebuilds V7 (I0) and the new S4 (I1) from it: V2, V11 and one scalar. */
  enum { V2 = 0, V7 = 1, V11 = 2, V12 = 3, S4 = 4, S11 = 5 };
  fixture f;
  fixture_init(&f, 6, 256);
  f.registers[S4] = f.registers[S11] = (preempt_ctx_register){.bytes = 4, .bits = 32, .kind = PREEMPT_CTX_SCALAR};
  emit(&f, PREEMPT_CTX_ADD, V7, V2, S4, 0, 0, PURE);
  emit(&f, PREEMPT_CTX_OPAQUE, S4, S4, -1, 1, 0x2, PURE); /* OR: not invertible */
  emit(&f, PREEMPT_CTX_OPAQUE, V11, V11, V2, 0, 0, PURE);
  emit(&f, PREEMPT_CTX_SUB, V12, V11, V7, 0, 0, PURE);
  fixture_finish(&f, (1ull << V2) | (1ull << V7) | (1ull << V11) | (1ull << V12) | (1ull << S4));
  preempt_ctx_plan plan;
  CHECK_EQ_U64(preempt_ctx_plan_flashback(&f.block, 4, 64, costs, &plan), 0);
  /* From I3 (V12 is rewritten there): V2, V7, V11 and S4. */
  CHECK(saved(&plan) & (1ull << V7));
  CHECK_EQ_U64(plan.context_bytes, 3 * 256 + 4);
  check_proven(&f, &plan);
  preempt_ctx_plan_free(&plan);

  uint16_t free_registers[] = {S11};
  preempt_ctx_backup backups[4];
  size_t backup_count = 0;
  CHECK_EQ_U64(preempt_ctx_choose_backups(&f.block, 64, costs, free_registers, 1, backups, 4, &backup_count), 0);
  CHECK_EQ_U64(backup_count, 1);
  CHECK_EQ_U64(backups[0].before, 1);
  CHECK_EQ_U64(backups[0].source, S4);
  CHECK_EQ_U64(backups[0].backup, S11);
  preempt_ctx_block with;
  size_t index_map[4];
  CHECK_EQ_U64(preempt_ctx_insert_backups(&f.block, backups, backup_count, &with, index_map), 0);
  CHECK_EQ_U64(with.count, 5);
  CHECK_EQ_U64(index_map[1], 2);
  CHECK(with.instructions[1].flags & PREEMPT_CTX_BACKUP);
  CHECK_EQ_U64(preempt_ctx_plan_flashback(&with, 5, 64, costs, &plan), 0);
  /* V7 is rebuilt by re-executing I0 (now at 0) from V2 and the backup. */
  CHECK(!(saved(&plan) & (1ull << V7)));
  CHECK(saved(&plan) & (1ull << S11));
  CHECK_EQ_U64(plan.context_bytes, 2 * 256 + 4);
  CHECK(steps_of(plan.resume, plan.resume_count, PREEMPT_CTX_REEXECUTE) & 1);
  CHECK_EQ_U64(preempt_ctx_verify_plan(&with, &plan), 0);
  CHECK_EQ_U64(preempt_ctx_check_plan(&with, &plan, 7, 16, NULL), 0);
  preempt_ctx_plan_free(&plan);
  preempt_ctx_block_free(&with);
}

static void test_figure_6(void) {
  /* I0 XOR r3,r0,0x1  I1 MUL r1,r2,0x1  I2 ADD r0,r0,r1  I3 MOV r1,0x8  I4 ADD r2,r2,r1; r0-r3 live at I5.
   * The paper: revert I4 at preemption, save r0 and r2; resume: MUL r1 (I1),
   * SUB r0,r0,r1 (I2^-1), XOR r3 (I0), jump I2. */
  fixture f;
  fixture_init(&f, 4, 4);
  emit(&f, PREEMPT_CTX_XOR, 3, 0, -1, 1, 0x1, PURE);
  emit(&f, PREEMPT_CTX_MUL, 1, 2, -1, 1, 0x1, PURE);
  emit(&f, PREEMPT_CTX_ADD, 0, 0, 1, 0, 0, PURE);
  emit(&f, PREEMPT_CTX_MOVE, 1, -1, -1, 1, 0x8, PURE);
  emit(&f, PREEMPT_CTX_ADD, 2, 2, 1, 0, 0, PURE);
  fixture_finish(&f, regs("0123"));
  preempt_ctx_plan plan;
  CHECK_EQ_U64(preempt_ctx_plan_flashback(&f.block, 5, 64, costs, &plan), 0);
  CHECK_EQ_U64(saved(&plan), regs("02"));
  CHECK_EQ_U64(plan.context_bytes, 8);
  CHECK_EQ_U64(steps_of(plan.preempt, plan.preempt_count, PREEMPT_CTX_REVERT), regs("4"));
  CHECK_EQ_U64(steps_of(plan.resume, plan.resume_count, PREEMPT_CTX_REEXECUTE), regs("01"));
  CHECK_EQ_U64(steps_of(plan.resume, plan.resume_count, PREEMPT_CTX_REVERT), regs("2"));
  CHECK(position(plan.resume, plan.resume_count, PREEMPT_CTX_REEXECUTE, 1) <
        position(plan.resume, plan.resume_count, PREEMPT_CTX_REVERT, 2));
  CHECK(position(plan.resume, plan.resume_count, PREEMPT_CTX_REVERT, 2) <
        position(plan.resume, plan.resume_count, PREEMPT_CTX_REEXECUTE, 0));
  CHECK_EQ_U64(plan.resume_at, 2);
  CHECK_EQ_U64(plan.flashback, 0);
  check_proven(&f, &plan);
  preempt_ctx_plan_free(&plan);
}

static void test_cs_defer(void) {
  /* I0 ADD r4,r0,r1  I1 ADD r5,r2,r3  I2 ADD r6,r4,r5 (r0-r5 die); live out r6.
   * At I0 six registers are live, before I2 two, after it one: CS-Defer runs
   * on to I3 (3 ALU instructions + one save) rather than saving four. */
  fixture f;
  fixture_init(&f, 8, 256);
  emit(&f, PREEMPT_CTX_ADD, 4, 0, 1, 0, 0, PURE);
  emit(&f, PREEMPT_CTX_ADD, 5, 2, 3, 0, 0, PURE);
  emit(&f, PREEMPT_CTX_ADD, 6, 4, 5, 0, 0, PURE);
  emit(&f, PREEMPT_CTX_OPAQUE, 7, 6, -1, 0, 0, 0); /* the block's last instruction (a branch) */
  fixture_finish(&f, regs("7"));
  preempt_ctx_plan plan;
  CHECK_EQ_U64(preempt_ctx_plan_cs_defer(&f.block, 0, costs, &plan), 0);
  CHECK_EQ_U64(plan.technique, PREEMPT_CTX_CS_DEFER);
  CHECK_EQ_U64(plan.resume_at, 3);
  CHECK_EQ_U64(saved(&plan), regs("6"));
  CHECK_EQ_U64(steps_of(plan.preempt, plan.preempt_count, PREEMPT_CTX_EXECUTE), regs("012"));
  CHECK_EQ_U64(plan.preempt_cycles, 3 * costs->alu + costs->vector_save);
  check_proven(&f, &plan);
  preempt_ctx_plan_free(&plan);
  /* A barrier at I1 stops the deferral before it. */
  f.code[1].flags = PREEMPT_CTX_BARRIER;
  CHECK_EQ_U64(preempt_ctx_plan_cs_defer(&f.block, 0, costs, &plan), 0);
  CHECK(plan.resume_at <= 1);
  check_proven(&f, &plan);
  preempt_ctx_plan_free(&plan);
  f.code[1].flags = PURE;
  /* Combined: CTXBack at I0 would save four registers (4 x 64 cycles), CS-Defer costs 3 x 4 + 64. */
  CHECK_EQ_U64(preempt_ctx_plan_combined(&f.block, 0, 64, costs, &plan), 0);
  CHECK_EQ_U64(plan.technique, PREEMPT_CTX_CS_DEFER);
  preempt_ctx_plan_free(&plan);
}

static void test_checker_rejects(void) {
  /* Break Fig. 2's plan in three ways; the checker and the proof must both notice. */
  fixture f;
  figure_2_code(&f, PURE);
  preempt_ctx_plan plan;
  CHECK_EQ_U64(preempt_ctx_plan_flashback(&f.block, 4, 64, costs, &plan), 0);
  size_t reexecute = position(plan.resume, plan.resume_count, PREEMPT_CTX_REEXECUTE, 0);
  CHECK(reexecute != SIZE_MAX);
  preempt_ctx_step kept = plan.resume[reexecute];
  plan.resume[reexecute] = (preempt_ctx_step){.kind = PREEMPT_CTX_REEXECUTE, .instruction = 3}; /* wrong instruction */
  uint16_t bad = 0xffff;
  CHECK(preempt_ctx_check_plan(&f.block, &plan, 1, 4, &bad) != 0);
  CHECK(bad < 5);
  CHECK(preempt_ctx_verify_plan(&f.block, &plan) != 0);
  plan.resume[reexecute] = kept;
  CHECK_EQ_U64(preempt_ctx_verify_plan(&f.block, &plan), 0);
  /* Loading a slot into the wrong register. */
  for (size_t s = 0; s < plan.resume_count; s++)
    if (plan.resume[s].kind == PREEMPT_CTX_LOAD) {
      plan.resume[s].reg = (uint16_t)((plan.resume[s].reg + 1) % 5);
      break;
    }
  CHECK(preempt_ctx_check_plan(&f.block, &plan, 1, 4, NULL) != 0);
  CHECK(preempt_ctx_verify_plan(&f.block, &plan) != 0);
  preempt_ctx_plan_free(&plan);

  /* Fig. 3 with the revert dropped from preemption: r0 comes back wrong. */
  fixture g;
  fixture_init(&g, 4, 4);
  emit(&g, PREEMPT_CTX_XOR, 1, 0, 2, 0, 0, PURE);
  emit(&g, PREEMPT_CTX_OPAQUE, 3, 1, 2, 0, 0, PURE);
  emit(&g, PREEMPT_CTX_ADD, 0, 0, 3, 0, 0, PURE);
  emit(&g, PREEMPT_CTX_MOVE, 1, -1, -1, 1, 0xF, PURE);
  fixture_finish(&g, regs("0123"));
  CHECK_EQ_U64(preempt_ctx_plan_flashback(&g.block, 4, 64, costs, &plan), 0);
  size_t revert = position(plan.preempt, plan.preempt_count, PREEMPT_CTX_REVERT, 2);
  CHECK(revert != SIZE_MAX);
  if (revert != SIZE_MAX) {
    memmove(plan.preempt + revert, plan.preempt + revert + 1, (plan.preempt_count - revert - 1) * sizeof *plan.preempt);
    plan.preempt_count--;
    CHECK(preempt_ctx_check_plan(&g.block, &plan, 3, 4, NULL) != 0);
    CHECK(preempt_ctx_verify_plan(&g.block, &plan) != 0);
  }
  preempt_ctx_plan_free(&plan);

  /* Bad input: a register id out of range is refused, not read. */
  f.operands[0][0] = 9;
  CHECK(preempt_ctx_plan_flashback(&f.block, 4, 64, costs, &plan) != 0);
  CHECK(preempt_ctx_block_validate(&f.block) != 0);
}

static uint64_t next_random(uint64_t *state) {
  *state ^= *state << 13;
  *state ^= *state >> 7;
  *state ^= *state << 17;
  return *state;
}

static void test_random_blocks(void) {
  /* Every plan of every technique, at every point of random blocks, proven
   * and checked; CTXBack never saves more than LIVE. */
  uint64_t state = 0x1234567;
  unsigned plans = 0, better_than_live = 0;
  for (int round = 0; round < 150; round++) {
    fixture f;
    size_t register_count = 6 + next_random(&state) % 10;
    fixture_init(&f, register_count, 256);
    for (size_t reg = register_count / 2; reg < register_count; reg++)
      f.registers[reg] = (preempt_ctx_register){.bytes = 4, .bits = 32, .kind = PREEMPT_CTX_SCALAR};
    f.registers[0].bits = 16;
    size_t count = 4 + next_random(&state) % 24;
    for (size_t j = 0; j < count; j++) {
      preempt_ctx_operation operation = (preempt_ctx_operation)(next_random(&state) % 7);
      int result = (int)(next_random(&state) % register_count);
      int first = (int)(next_random(&state) % register_count);
      int second = next_random(&state) % 3 ? (int)(next_random(&state) % register_count) : -1;
      if (next_random(&state) % 3 == 0)
        first = result; /* r' = op(r, ...): reverting material */
      int immediate = second < 0;
      unsigned roll = (unsigned)(next_random(&state) % 10);
      unsigned flags = roll < 7 ? PURE : roll < 9 ? 0 : PREEMPT_CTX_BARRIER;
      emit(&f, operation, result, first, second, immediate, next_random(&state) % 64, flags);
      if (next_random(&state) % 5 == 0) /* a second result, like a carry */
        f.results[j][f.code[j].result_count++] = (uint16_t)(next_random(&state) % register_count);
    }
    fixture_finish(&f, next_random(&state) & ((1ull << register_count) - 1));
    for (size_t current = 0; current <= count; current++) {
      preempt_ctx_plan live, flashback, deferred, combined;
      CHECK_EQ_U64(preempt_ctx_plan_live(&f.block, current, costs, &live), 0);
      CHECK_EQ_U64(preempt_ctx_plan_flashback(&f.block, current, 16, costs, &flashback), 0);
      CHECK_EQ_U64(preempt_ctx_plan_cs_defer(&f.block, current, costs, &deferred), 0);
      CHECK_EQ_U64(preempt_ctx_plan_combined(&f.block, current, 16, costs, &combined), 0);
      const preempt_ctx_plan *all[] = {&live, &flashback, &deferred, &combined};
      for (int k = 0; k < 4; k++) {
        int proven = preempt_ctx_verify_plan(&f.block, all[k]) == 0;
        int checked = preempt_ctx_check_plan(&f.block, all[k], state, 4, NULL) == 0;
        CHECK(proven);
        CHECK(checked);
        if (!proven || !checked) {
          fprintf(stderr, "round %d point %zu technique %d\n", round, current, k);
          round = 1000;
        }
        plans++;
      }
      CHECK(flashback.context_bytes <= live.context_bytes);
      better_than_live += flashback.context_bytes < live.context_bytes;
      preempt_ctx_plan_free(&live);
      preempt_ctx_plan_free(&flashback);
      preempt_ctx_plan_free(&deferred);
      preempt_ctx_plan_free(&combined);
    }
    /* OSRB on the same block: every point of the block with backups is checked too. */
    uint16_t free_registers[] = {(uint16_t)(register_count - 1)};
    preempt_ctx_backup backups[8];
    size_t backup_count = 0;
    CHECK_EQ_U64(preempt_ctx_choose_backups(&f.block, 16, costs, free_registers, 0, backups, 8, &backup_count), 0);
    CHECK_EQ_U64(backup_count, 0); /* no free register, no backup */
    preempt_ctx_totals totals;
    memset(&totals, 0, sizeof totals);
    CHECK_EQ_U64(preempt_ctx_analyze_block(&f.block, 16, costs, 2, &totals, NULL), 0);
    CHECK_EQ_U64(totals.check_failures, 0);
    CHECK_EQ_U64(totals.points, count);
    CHECK(totals.flashback <= totals.live);
    CHECK(totals.ckpt <= totals.live);
  }
  CHECK(plans > 1000);
  CHECK(better_than_live > 50); /* the search finds something, not only LIVE */
}

int main(void) {
  test_figure_1();
  test_figure_2();
  test_figure_3();
  test_figure_4();
  test_figure_5();
  test_figure_6();
  test_cs_defer();
  test_checker_rejects();
  test_random_blocks();
  CHECK_DONE("test_flashback");
}
