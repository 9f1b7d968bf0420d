/* context_plan.c: what every CTXBack plan shares: block checks, LIVE's plan, costs, reverting rules.
 * CTXBack §II-A/§V (LIVE: swap the live registers), §III-C (exactly invertible operations), §IV-C (costs). */
#include <stdlib.h>
#include <string.h>

#include "ctxback_internal.h"

/* gfx9 estimates: a wave64 vector store or load moves 256 B at about 4 B per
 * cycle per CU, a scalar one a dword; one VALU instruction takes 4 cycles.
 * §V-B: preemption time is about proportional to the bytes swapped. */
const preempt_ctx_cost_model preempt_ctx_default_costs = {
    .vector_save = 64, .scalar_save = 4, .vector_load = 64, .scalar_load = 4, .alu = 4};

size_t preempt_ctx_words(size_t register_count) { return (register_count + 63) / 64; }

int preempt_ctx_block_validate(const preempt_ctx_block *block) {
  if (!block || !block->registers || !block->live_in || block->register_count == 0 ||
      block->register_count > UINT16_MAX + 1u || (block->count > 0 && (!block->instructions || !block->live_after)))
    return -1;
  for (size_t reg = 0; reg < block->register_count; reg++)
    if (block->registers[reg].bits == 0 || block->registers[reg].bits > 64)
      return -1;
  for (size_t j = 0; j < block->count; j++) {
    const preempt_ctx_instruction *instruction = &block->instructions[j];
    if (!block->live_after[j] || (instruction->result_count && !instruction->results) ||
        (instruction->operand_count && !instruction->operands))
      return -1;
    for (size_t r = 0; r < instruction->result_count; r++)
      if (instruction->results[r] >= block->register_count)
        return -1;
    for (size_t o = 0; o < instruction->operand_count; o++)
      if (instruction->operands[o] >= block->register_count)
        return -1;
  }
  return 0;
}

uint64_t preempt_ctx_live_bytes(const preempt_ctx_block *block, size_t index) {
  uint64_t bytes = 0;
  CTX_FOR_EACH_REGISTER(reg, ctx_live_before(block, index), block->register_count)
    bytes += block->registers[reg].bytes;
  return bytes;
}

uint8_t ctx_result_bits(const preempt_ctx_block *block, size_t index) {
  const preempt_ctx_instruction *instruction = &block->instructions[index];
  return instruction->result_count ? block->registers[instruction->results[0]].bits : 64;
}

int ctx_is_copy(const preempt_ctx_block *block, size_t index) {
  const preempt_ctx_instruction *instruction = &block->instructions[index];
  return instruction->operation == PREEMPT_CTX_MOVE && !instruction->has_immediate && instruction->operand_count > 0 &&
         instruction->result_count > 0 &&
         block->registers[instruction->operands[0]].bits == block->registers[instruction->results[0]].bits;
}

uint64_t ctx_second_input(const preempt_ctx_instruction *instruction, const uint64_t *operand_values) {
  if (instruction->has_immediate)
    return instruction->immediate;
  return instruction->operand_count > 1 ? operand_values[1] : 0;
}

int ctx_revertible(const preempt_ctx_block *block, size_t index, size_t *shared_operand) {
  const preempt_ctx_instruction *instruction = &block->instructions[index];
  if (instruction->result_count == 0 || (instruction->flags & PREEMPT_CTX_BARRIER))
    return 0;
  /* The arithmetic inputs are operand 0 and then the immediate or operand 1. */
  size_t inputs = instruction->has_immediate ? 1 : 2;
  if (instruction->operation == PREEMPT_CTX_NOT)
    inputs = 1;
  if (instruction->operand_count < inputs)
    return 0;
  uint16_t shared = instruction->results[0];
  size_t found = SIZE_MAX;
  for (size_t o = 0; o < instruction->operand_count; o++)
    if (instruction->operands[o] == shared) {
      if (found != SIZE_MAX || o >= inputs)
        return 0; /* read twice, or only as an implicit input: not r' = op(r, R) */
      found = o;
    }
  if (found == SIZE_MAX)
    return 0;
  /* Widths must agree or the wrap-around differs from the register's. */
  for (size_t o = 0; o < inputs; o++)
    if (block->registers[instruction->operands[o]].bits != block->registers[shared].bits)
      return 0;
  switch (instruction->operation) {
  case PREEMPT_CTX_ADD:
  case PREEMPT_CTX_SUB:
  case PREEMPT_CTX_XOR:
  case PREEMPT_CTX_NOT:
    break;
  case PREEMPT_CTX_MUL:
    /* Only by an odd constant: then a multiplicative inverse exists mod 2^n. */
    if (!instruction->has_immediate || found != 0 || (instruction->immediate & 1) == 0)
      return 0;
    break;
  default:
    return 0;
  }
  *shared_operand = found;
  return 1;
}

uint64_t ctx_odd_inverse(uint64_t odd) {
  uint64_t inverse = odd; /* correct to 3 bits; each step doubles them */
  for (int step = 0; step < 6; step++)
    inverse *= 2 - odd * inverse;
  return inverse;
}

int ctx_steps_push(ctx_steps *list, preempt_ctx_step step) {
  if (list->count == list->capacity) {
    size_t capacity = list->capacity ? list->capacity * 2 : 16;
    preempt_ctx_step *grown = realloc(list->steps, capacity * sizeof *grown);
    if (!grown)
      return -1;
    list->steps = grown;
    list->capacity = capacity;
  }
  list->steps[list->count++] = step;
  return 0;
}

static uint64_t step_cycles(const preempt_ctx_block *block, const preempt_ctx_cost_model *costs,
                            const preempt_ctx_step *step) {
  int vector = step->kind == PREEMPT_CTX_SAVE || step->kind == PREEMPT_CTX_LOAD
                   ? block->registers[step->reg].kind == PREEMPT_CTX_VECTOR
                   : 0;
  switch (step->kind) {
  case PREEMPT_CTX_SAVE:
    return vector ? costs->vector_save : costs->scalar_save;
  case PREEMPT_CTX_LOAD:
    return vector ? costs->vector_load : costs->scalar_load;
  case PREEMPT_CTX_REVERT:
    return costs->alu;
  case PREEMPT_CTX_REEXECUTE:
  case PREEMPT_CTX_EXECUTE: {
    uint32_t latency = block->instructions[step->instruction].latency;
    return latency ? latency : costs->alu;
  }
  default:
    return 0;
  }
}

void ctx_plan_adopt(const preempt_ctx_block *block, const preempt_ctx_cost_model *costs, ctx_steps *preempt,
                    ctx_steps *resume, preempt_ctx_plan *plan) {
  plan->preempt = preempt->steps;
  plan->preempt_count = preempt->count;
  plan->resume = resume->steps;
  plan->resume_count = resume->count;
  memset(preempt, 0, sizeof *preempt);
  memset(resume, 0, sizeof *resume);
  plan->context_bytes = plan->preempt_cycles = plan->resume_cycles = 0;
  plan->revert_count = plan->reexecute_count = 0;
  plan->slot_count = 0;
  for (size_t s = 0; s < plan->preempt_count; s++) {
    const preempt_ctx_step *step = &plan->preempt[s];
    plan->preempt_cycles += step_cycles(block, costs, step);
    if (step->kind == PREEMPT_CTX_SAVE) {
      plan->context_bytes += block->registers[step->reg].bytes;
      if (step->slot + 1 > plan->slot_count)
        plan->slot_count = step->slot + 1;
    }
    plan->revert_count += step->kind == PREEMPT_CTX_REVERT;
  }
  for (size_t s = 0; s < plan->resume_count; s++) {
    const preempt_ctx_step *step = &plan->resume[s];
    plan->resume_cycles += step_cycles(block, costs, step);
    plan->revert_count += step->kind == PREEMPT_CTX_REVERT;
    plan->reexecute_count += step->kind == PREEMPT_CTX_REEXECUTE;
  }
}

/* Saves every register live before `point` and loads it back: correct at any
 * instruction, and the fallback of every other technique. */
int ctx_plan_swap_live(const preempt_ctx_block *block, size_t point, ctx_steps *preempt, ctx_steps *resume) {
  uint32_t slot = 0;
  CTX_FOR_EACH_REGISTER(reg, ctx_live_before(block, point), block->register_count) {
    preempt_ctx_step save = {.kind = PREEMPT_CTX_SAVE, .reg = (uint16_t)reg, .slot = slot++};
    preempt_ctx_step load = {.kind = PREEMPT_CTX_LOAD, .reg = save.reg, .slot = save.slot};
    if (ctx_steps_push(preempt, save) || ctx_steps_push(resume, load))
      return -1;
  }
  return 0;
}

int preempt_ctx_plan_live(const preempt_ctx_block *block, size_t current, const preempt_ctx_cost_model *costs,
                          preempt_ctx_plan *plan) {
  if (!plan || !costs || preempt_ctx_block_validate(block) || current > block->count)
    return -1;
  memset(plan, 0, sizeof *plan);
  ctx_steps preempt = {0}, resume = {0};
  if (ctx_plan_swap_live(block, current, &preempt, &resume)) {
    free(preempt.steps);
    free(resume.steps);
    return -1;
  }
  plan->technique = PREEMPT_CTX_LIVE;
  plan->current = plan->flashback = plan->resume_at = current;
  ctx_plan_adopt(block, costs, &preempt, &resume, plan);
  return 0;
}

void preempt_ctx_plan_free(preempt_ctx_plan *plan) {
  if (!plan)
    return;
  free(plan->preempt);
  free(plan->resume);
  plan->preempt = plan->resume = NULL;
  plan->preempt_count = plan->resume_count = 0;
}
