/* routine_check.c: proves a preemption plan right by running block, preemption routine, wipe and resumption.
 * CTXBack §III-B (the restored context must equal R_cur), §IV-A (dedicated routines); issue 5's checker. */
#include <stdlib.h>
#include <string.h>

#include "ctxback_internal.h"

/* Two value domains run the same machine: symbolic (each value an id, so a
 * match is a proof for all inputs) and concrete (random values, real
 * arithmetic, the checker). */
typedef struct value_domain value_domain;
struct value_domain {
  uint64_t (*compute)(value_domain *domain, const preempt_ctx_block *block, size_t index, size_t result,
                      const uint64_t *operand_values);
  /* Undoes instruction `index` given its operands' values now (the shared
   * one's slot holds the register's current value) and at its original run. */
  uint64_t (*revert)(value_domain *domain, const preempt_ctx_block *block, size_t index, size_t shared,
                     const uint64_t *operand_values, const uint64_t *original_operands, uint64_t original_result);
  uint64_t (*garbage)(value_domain *domain, uint16_t reg);
  uint64_t (*initial)(value_domain *domain, uint16_t reg);
};

/* ---- concrete domain: real semantics for the invertible operations ---- */

typedef struct concrete_domain {
  value_domain base;
  const preempt_ctx_block *block;
  uint64_t random_state;
} concrete_domain;

static uint64_t splitmix(uint64_t *state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static uint64_t mix(uint64_t hash, uint64_t value) {
  uint64_t state = hash ^ value;
  return splitmix(&state);
}

static uint64_t concrete_compute(value_domain *domain, const preempt_ctx_block *block, size_t index, size_t result,
                                 const uint64_t *operand_values) {
  (void)domain;
  const preempt_ctx_instruction *instruction = &block->instructions[index];
  uint64_t mask = ctx_mask(block->registers[instruction->results[result]].bits);
  uint64_t first = instruction->operand_count ? operand_values[0] : 0;
  uint64_t second = ctx_second_input(instruction, operand_values);
  if (result == 0)
    switch (instruction->operation) {
    case PREEMPT_CTX_MOVE:
      return (instruction->has_immediate ? instruction->immediate : first) & mask;
    case PREEMPT_CTX_ADD:
      return (first + second) & mask;
    case PREEMPT_CTX_SUB:
      return (first - second) & mask;
    case PREEMPT_CTX_XOR:
      return (first ^ second) & mask;
    case PREEMPT_CTX_NOT:
      return ~first & mask;
    case PREEMPT_CTX_MUL:
      return (first * second) & mask;
    default:
      break;
    }
  /* The stand-in: a function of what the instruction is and reads, nothing else. */
  uint64_t hash = mix(instruction->opcode, result);
  hash = mix(hash, instruction->has_immediate ? instruction->immediate : 0x5eed);
  for (size_t o = 0; o < instruction->operand_count; o++)
    hash = mix(hash, operand_values[o]);
  return hash & mask;
}

static uint64_t concrete_revert(value_domain *domain, const preempt_ctx_block *block, size_t index, size_t shared,
                                const uint64_t *operand_values, const uint64_t *original_operands,
                                uint64_t original_result) {
  (void)domain, (void)original_operands, (void)original_result;
  const preempt_ctx_instruction *instruction = &block->instructions[index];
  uint64_t mask = ctx_mask(ctx_result_bits(block, index));
  uint64_t after = operand_values[shared]; /* the register now holds r' */
  uint64_t other = shared == 0 ? ctx_second_input(instruction, operand_values) : operand_values[0];
  switch (instruction->operation) {
  case PREEMPT_CTX_ADD:
    return (after - other) & mask;
  case PREEMPT_CTX_SUB: /* r' = r - x gives r = r' + x; r' = x - r gives r = x - r' */
    return (shared == 0 ? after + other : other - after) & mask;
  case PREEMPT_CTX_XOR:
    return (after ^ other) & mask;
  case PREEMPT_CTX_NOT:
    return ~after & mask;
  case PREEMPT_CTX_MUL:
    return (after * ctx_odd_inverse(instruction->immediate)) & mask;
  default:
    return after;
  }
}

/* A register never holds more bits than it has: a copy through a narrower
 * path must not look like a change. */
static uint64_t concrete_garbage(value_domain *domain, uint16_t reg) {
  concrete_domain *concrete = (concrete_domain *)domain;
  return splitmix(&concrete->random_state) & ctx_mask(concrete->block->registers[reg].bits);
}

/* ---- symbolic domain: values are ids; equal ids are equal for all inputs ---- */

typedef struct symbolic_entry {
  uint64_t id;
  size_t index;
  size_t result;
  size_t operand_start; /* into operand_pool */
} symbolic_entry;

typedef struct symbolic_domain {
  value_domain base;
  symbolic_entry *entries;
  size_t entry_count, entry_capacity;
  size_t *table; /* open addressing: entry index + 1, 0 when empty */
  size_t table_size;
  uint64_t *operand_pool;
  size_t pool_count, pool_capacity;
  uint64_t next_garbage;
  int out_of_memory;
} symbolic_domain;

enum { SYMBOLIC_COMPUTED = 1ull << 40, SYMBOLIC_GARBAGE = 1ull << 41 };

static uint64_t entry_hash(size_t index, size_t result, const uint64_t *operand_values, size_t operands) {
  uint64_t hash = mix(index, result);
  for (size_t o = 0; o < operands; o++)
    hash = mix(hash, operand_values[o]);
  return hash;
}

static int symbolic_grow(symbolic_domain *symbolic, const preempt_ctx_block *block) {
  size_t size = symbolic->table_size ? symbolic->table_size * 2 : 256;
  size_t *table = calloc(size, sizeof *table);
  if (!table)
    return -1;
  for (size_t e = 0; e < symbolic->entry_count; e++) {
    const symbolic_entry *entry = &symbolic->entries[e];
    size_t operands = block->instructions[entry->index].operand_count;
    size_t at = entry_hash(entry->index, entry->result, symbolic->operand_pool + entry->operand_start, operands) &
                (size - 1);
    while (table[at])
      at = (at + 1) & (size - 1);
    table[at] = e + 1;
  }
  free(symbolic->table);
  symbolic->table = table;
  symbolic->table_size = size;
  return 0;
}

static uint64_t symbolic_compute(value_domain *domain, const preempt_ctx_block *block, size_t index, size_t result,
                                 const uint64_t *operand_values) {
  symbolic_domain *symbolic = (symbolic_domain *)domain;
  const preempt_ctx_instruction *instruction = &block->instructions[index];
  if (result == 0 && ctx_is_copy(block, index))
    return operand_values[0];
  size_t operands = instruction->operand_count;
  if ((symbolic->entry_count + 1) * 2 > symbolic->table_size && symbolic_grow(symbolic, block))
    goto no_memory;
  /* Hash-consing: the same instruction on the same values is the same value. */
  size_t at = entry_hash(index, result, operand_values, operands) & (symbolic->table_size - 1);
  for (; symbolic->table[at]; at = (at + 1) & (symbolic->table_size - 1)) {
    const symbolic_entry *entry = &symbolic->entries[symbolic->table[at] - 1];
    if (entry->index == index && entry->result == result &&
        !memcmp(symbolic->operand_pool + entry->operand_start, operand_values, operands * sizeof(uint64_t)))
      return entry->id;
  }
  if (symbolic->entry_count == symbolic->entry_capacity) {
    size_t capacity = symbolic->entry_capacity ? symbolic->entry_capacity * 2 : 64;
    symbolic_entry *grown = realloc(symbolic->entries, capacity * sizeof *grown);
    if (!grown)
      goto no_memory;
    symbolic->entries = grown;
    symbolic->entry_capacity = capacity;
  }
  if (symbolic->pool_count + operands > symbolic->pool_capacity) {
    size_t capacity = (symbolic->pool_capacity + operands) * 2 + 64;
    uint64_t *grown = realloc(symbolic->operand_pool, capacity * sizeof *grown);
    if (!grown)
      goto no_memory;
    symbolic->operand_pool = grown;
    symbolic->pool_capacity = capacity;
  }
  symbolic_entry *entry = &symbolic->entries[symbolic->entry_count];
  entry->id = SYMBOLIC_COMPUTED + symbolic->entry_count;
  entry->index = index;
  entry->result = result;
  entry->operand_start = symbolic->pool_count;
  if (operands)
    memcpy(symbolic->operand_pool + symbolic->pool_count, operand_values, operands * sizeof(uint64_t));
  symbolic->pool_count += operands;
  symbolic->table[at] = ++symbolic->entry_count;
  return entry->id;
no_memory:
  symbolic->out_of_memory = 1;
  return SYMBOLIC_GARBAGE + symbolic->next_garbage++;
}

static uint64_t symbolic_revert(value_domain *domain, const preempt_ctx_block *block, size_t index, size_t shared,
                                const uint64_t *operand_values, const uint64_t *original_operands,
                                uint64_t original_result) {
  symbolic_domain *symbolic = (symbolic_domain *)domain;
  const preempt_ctx_instruction *instruction = &block->instructions[index];
  /* Exact only when every input is what the instruction saw (its result for
   * the shared register): then the inverse gives back the old operand. */
  if (operand_values[shared] != original_result)
    return SYMBOLIC_GARBAGE + symbolic->next_garbage++;
  for (size_t o = 0; o < instruction->operand_count; o++)
    if (o != shared && operand_values[o] != original_operands[o])
      return SYMBOLIC_GARBAGE + symbolic->next_garbage++;
  return original_operands[shared];
}

static uint64_t symbolic_garbage(value_domain *domain, uint16_t reg) {
  (void)reg;
  return SYMBOLIC_GARBAGE + ((symbolic_domain *)domain)->next_garbage++;
}

static uint64_t symbolic_initial(value_domain *domain, uint16_t reg) {
  (void)domain;
  return reg;
}

static uint64_t concrete_initial(value_domain *domain, uint16_t reg) { return concrete_garbage(domain, reg); }

/* ---- the machine ---- */

typedef struct machine {
  uint64_t *registers;
  uint64_t *reference;
  uint64_t *slots;
  uint64_t *operand_values; /* scratch, max operands */
  uint64_t **original_operands; /* per instruction of [0, end) */
  uint64_t *original_results;
} machine;

static void execute(value_domain *domain, const preempt_ctx_block *block, size_t index, uint64_t *registers,
                    uint64_t *operand_values) {
  const preempt_ctx_instruction *instruction = &block->instructions[index];
  for (size_t o = 0; o < instruction->operand_count; o++)
    operand_values[o] = registers[instruction->operands[o]];
  uint64_t results[8];
  size_t count = instruction->result_count < 8 ? instruction->result_count : 8;
  /* All results read the operands before any is written. */
  for (size_t r = 0; r < count; r++)
    results[r] = domain->compute(domain, block, index, r, operand_values);
  for (size_t r = 0; r < instruction->result_count; r++)
    registers[instruction->results[r]] = r < 8 ? results[r] : domain->garbage(domain, instruction->results[r]);
}

static int revert(value_domain *domain, const preempt_ctx_block *block, const machine *state, size_t index,
                  uint64_t *registers) {
  size_t shared;
  if (!ctx_revertible(block, index, &shared))
    return -1;
  const preempt_ctx_instruction *instruction = &block->instructions[index];
  for (size_t o = 0; o < instruction->operand_count; o++)
    state->operand_values[o] = registers[instruction->operands[o]];
  registers[instruction->results[0]] = domain->revert(domain, block, index, shared, state->operand_values,
                                                      state->original_operands[index], state->original_results[index]);
  return 0;
}

static int steps_valid(const preempt_ctx_block *block, const preempt_ctx_plan *plan, size_t end) {
  const preempt_ctx_step *lists[2] = {plan->preempt, plan->resume};
  size_t counts[2] = {plan->preempt_count, plan->resume_count};
  for (int list = 0; list < 2; list++)
    for (size_t s = 0; s < counts[list]; s++) {
      const preempt_ctx_step *step = &lists[list][s];
      switch (step->kind) {
      case PREEMPT_CTX_SAVE:
      case PREEMPT_CTX_LOAD:
        if (step->reg >= block->register_count || step->slot >= plan->slot_count ||
            (step->kind == PREEMPT_CTX_SAVE) != (list == 0))
          return -1;
        break;
      case PREEMPT_CTX_REVERT:
        if (step->instruction >= plan->current)
          return -1;
        break;
      case PREEMPT_CTX_REEXECUTE:
        if (list != 1 || step->instruction >= plan->current ||
            !(block->instructions[step->instruction].flags & PREEMPT_CTX_REEXECUTABLE))
          return -1;
        break;
      case PREEMPT_CTX_EXECUTE:
        if (list != 0 || step->instruction < plan->current || step->instruction >= end)
          return -1;
        break;
      default:
        return -1;
      }
    }
  return 0;
}

/* Runs one trial; returns 0 when every register live at the re-reached
 * point matches, 1 on a mismatch (*bad gets the register), -1 on error. */
static int run_plan(value_domain *domain, const preempt_ctx_block *block, const preempt_ctx_plan *plan,
                    machine *state, uint16_t *bad) {
  size_t registers = block->register_count;
  /* The point the program re-reaches: `current`, or further on for CS-Defer. */
  size_t end = plan->resume_at > plan->current ? plan->resume_at : plan->current;
  for (size_t reg = 0; reg < registers; reg++)
    state->registers[reg] = domain->initial(domain, (uint16_t)reg);
  for (size_t j = 0; j < end; j++) {
    if (j == plan->current)
      memcpy(state->reference, state->registers, registers * sizeof(uint64_t));
    const preempt_ctx_instruction *instruction = &block->instructions[j];
    for (size_t o = 0; o < instruction->operand_count; o++)
      state->original_operands[j][o] = state->registers[instruction->operands[o]];
    execute(domain, block, j, state->registers, state->operand_values);
    state->original_results[j] = instruction->result_count ? state->registers[instruction->results[0]] : 0;
  }
  if (end == plan->current)
    memcpy(state->reference, state->registers, registers * sizeof(uint64_t));
  /* `reference` holds the state at `current`, `registers` the state at `end`:
   * swap so the preemption routine starts from `current`. */
  uint64_t *at_end = state->registers;
  state->registers = state->reference;
  state->reference = at_end;

  for (size_t s = 0; s < plan->slot_count; s++)
    state->slots[s] = domain->garbage(domain, 0);
  for (size_t s = 0; s < plan->preempt_count; s++) {
    const preempt_ctx_step *step = &plan->preempt[s];
    if (step->kind == PREEMPT_CTX_SAVE)
      state->slots[step->slot] = state->registers[step->reg];
    else if (step->kind == PREEMPT_CTX_REVERT && revert(domain, block, state, step->instruction, state->registers))
      return -1;
    else if (step->kind == PREEMPT_CTX_EXECUTE)
      execute(domain, block, step->instruction, state->registers, state->operand_values);
  }
  for (size_t reg = 0; reg < registers; reg++)
    state->registers[reg] = domain->garbage(domain, (uint16_t)reg);
  for (size_t s = 0; s < plan->resume_count; s++) {
    const preempt_ctx_step *step = &plan->resume[s];
    if (step->kind == PREEMPT_CTX_LOAD)
      state->registers[step->reg] = state->slots[step->slot];
    else if (step->kind == PREEMPT_CTX_REEXECUTE)
      execute(domain, block, step->instruction, state->registers, state->operand_values);
    else if (step->kind == PREEMPT_CTX_REVERT && revert(domain, block, state, step->instruction, state->registers))
      return -1;
  }
  for (size_t j = plan->resume_at; j < end; j++)
    execute(domain, block, j, state->registers, state->operand_values);

  CTX_FOR_EACH_REGISTER(reg, ctx_live_before(block, end), registers)
    if (state->registers[reg] != state->reference[reg]) {
      if (bad)
        *bad = (uint16_t)reg;
      return 1;
    }
  return 0;
}

static void machine_free(machine *state, size_t instructions) {
  if (state->original_operands)
    for (size_t j = 0; j < instructions; j++)
      free(state->original_operands[j]);
  free(state->original_operands);
  free(state->original_results);
  free(state->registers);
  free(state->reference);
  free(state->slots);
  free(state->operand_values);
}

static int machine_init(machine *state, const preempt_ctx_block *block, const preempt_ctx_plan *plan) {
  memset(state, 0, sizeof *state);
  size_t max_operands = 1;
  for (size_t j = 0; j < block->count; j++)
    if (block->instructions[j].operand_count > max_operands)
      max_operands = block->instructions[j].operand_count;
  state->registers = calloc(block->register_count, sizeof(uint64_t));
  state->reference = calloc(block->register_count, sizeof(uint64_t));
  state->slots = calloc(plan->slot_count + 1, sizeof(uint64_t));
  state->operand_values = calloc(max_operands, sizeof(uint64_t));
  state->original_operands = calloc(block->count + 1, sizeof(uint64_t *));
  state->original_results = calloc(block->count + 1, sizeof(uint64_t));
  if (!state->registers || !state->reference || !state->slots || !state->operand_values ||
      !state->original_operands || !state->original_results)
    return -1;
  for (size_t j = 0; j < block->count; j++)
    if (!(state->original_operands[j] = calloc(block->instructions[j].operand_count + 1, sizeof(uint64_t))))
      return -1;
  return 0;
}

static int plan_shape_valid(const preempt_ctx_block *block, const preempt_ctx_plan *plan) {
  if (!plan || preempt_ctx_block_validate(block) || plan->current > block->count || plan->resume_at > block->count ||
      (plan->preempt_count && !plan->preempt) || (plan->resume_count && !plan->resume))
    return -1;
  size_t end = plan->resume_at > plan->current ? plan->resume_at : plan->current;
  return steps_valid(block, plan, end);
}

int preempt_ctx_verify_plan(const preempt_ctx_block *block, const preempt_ctx_plan *plan) {
  if (plan_shape_valid(block, plan))
    return -1;
  machine state;
  symbolic_domain symbolic = {.base = {symbolic_compute, symbolic_revert, symbolic_garbage, symbolic_initial}};
  int status = machine_init(&state, block, plan) ? -1 : run_plan(&symbolic.base, block, plan, &state, NULL);
  if (symbolic.out_of_memory)
    status = -1;
  machine_free(&state, block->count);
  free(symbolic.entries);
  free(symbolic.table);
  free(symbolic.operand_pool);
  return status == 0 ? 0 : -1;
}

int preempt_ctx_check_plan(const preempt_ctx_block *block, const preempt_ctx_plan *plan, uint64_t seed,
                           unsigned trials, uint16_t *bad_register) {
  if (plan_shape_valid(block, plan))
    return -1;
  machine state;
  int status = machine_init(&state, block, plan) ? -1 : 0;
  for (unsigned trial = 0; status == 0 && trial < trials; trial++) {
    concrete_domain concrete = {.base = {concrete_compute, concrete_revert, concrete_garbage, concrete_initial},
                                .block = block,
                                .random_state = seed + trial * 0x632be59bd9b4e019ull};
    status = run_plan(&concrete.base, block, plan, &state, bad_register);
  }
  machine_free(&state, block->count);
  return status == 0 ? 0 : -1;
}
