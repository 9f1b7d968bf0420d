/* flashback.c: CTXBack's plan for one preemption point: flashback point, re-execution, reverting, saved values.
 * CTXBack §III-B (Alg. 1, relaxed condition), §III-C (Alg. 2, reverting at preemption or resumption), §III-E. */
#include <stdlib.h>
#include <string.h>

#include "ctxback_internal.h"

/* The search works on values, not registers: a value is "register r as of
 * some point". Initial values (before the window) have id r, every result a
 * fresh id, and a copy keeps its source's id, so an OSRB backup holds the
 * same value as the scalar it saved (§III-D). A pair (register, value) is
 * what the resumption must put back: the re-entry point's live registers,
 * each holding the value it had there. Alg. 1's forward and backward passes
 * become a closure over pairs: a pair is rebuilt by loading it (its value was
 * still somewhere at preemption, possibly after reverting there), by
 * re-executing its instruction, or by reverting the next write (§III-C). */

typedef struct u64_map { /* open addressing, key -> index + 1 */
  uint64_t *keys;
  size_t *values;
  size_t size;
} u64_map;

static int map_init(u64_map *map, size_t expected) {
  map->size = 16;
  while (map->size < expected * 2)
    map->size *= 2;
  map->keys = calloc(map->size, sizeof *map->keys);
  map->values = calloc(map->size, sizeof *map->values);
  return map->keys && map->values ? 0 : -1;
}

static size_t map_slot(const u64_map *map, uint64_t key) {
  uint64_t hash = key * 0x9e3779b97f4a7c15ull;
  size_t at = (size_t)(hash >> 17) & (map->size - 1);
  while (map->values[at] && map->keys[at] != key)
    at = (at + 1) & (map->size - 1);
  return at;
}

static size_t map_get(const u64_map *map, uint64_t key) {
  size_t at = map_slot(map, key);
  return map->values[at] ? map->values[at] - 1 : SIZE_MAX;
}

static void map_put(u64_map *map, uint64_t key, size_t value) { /* the map is sized for every key up front */
  size_t at = map_slot(map, key);
  map->keys[at] = key;
  map->values[at] = value + 1;
}

static void map_free(u64_map *map) {
  free(map->keys);
  free(map->values);
}

enum { NO_PAIR = SIZE_MAX };

typedef struct planner {
  const preempt_ctx_block *block;
  const preempt_ctx_cost_model *costs;
  size_t head, current;
  size_t words; /* of a pair bitset */
  /* Values, per instruction of [head, current): operands' and results'. */
  uint64_t **operand_values;
  uint64_t **result_values;
  size_t **operand_pairs;
  size_t **result_pairs;
  size_t *after_pair;  /* revertible: (shared register, its result) */
  size_t *before_pair; /* revertible: (shared register, the value it read) */
  uint64_t *state;     /* value of each register at `current` */
  /* Pairs. */
  uint16_t *pair_reg;
  uint64_t *pair_value;
  size_t pair_count, pair_capacity;
  u64_map pairs;
  /* Preemption-time availability (Alg. 2, revert at preemption). */
  uint16_t *save_from;        /* per pair: register holding its value at preemption */
  size_t *save_after_revert;  /* per pair: SIZE_MAX, or the preemption revert that brings it back */
  unsigned char *loadable;
  unsigned char *preempt_revert; /* per instruction: revertible in the preemption routine */
  /* Scratch. */
  size_t *producer; /* per pair: instruction that rebuilds it (or NO_PAIR) */
  unsigned char *producer_is_revert;
} planner;

static uint64_t pair_key(uint16_t reg, uint64_t value) { return ((uint64_t)reg << 48) ^ value; }

static size_t pair_add(planner *plan, uint16_t reg, uint64_t value) {
  size_t found = map_get(&plan->pairs, pair_key(reg, value));
  if (found != SIZE_MAX && plan->pair_reg[found] == reg && plan->pair_value[found] == value)
    return found;
  size_t id = plan->pair_count++;
  plan->pair_reg[id] = reg;
  plan->pair_value[id] = value;
  map_put(&plan->pairs, pair_key(reg, value), id);
  return id;
}

static size_t pair_find(const planner *plan, uint16_t reg, uint64_t value) {
  size_t found = map_get(&plan->pairs, pair_key(reg, value));
  return found != SIZE_MAX && plan->pair_reg[found] == reg && plan->pair_value[found] == value ? found : NO_PAIR;
}

static int bit(const uint64_t *set, size_t id) { return (set[id / 64] >> (id % 64)) & 1u; }
static void set_bit(uint64_t *set, size_t id) { set[id / 64] |= 1ull << (id % 64); }
static void clear_bit(uint64_t *set, size_t id) { set[id / 64] &= ~(1ull << (id % 64)); }

static void planner_free(planner *plan) {
  size_t count = plan->current - plan->head;
  for (size_t i = 0; i < count; i++) {
    if (plan->operand_values)
      free(plan->operand_values[i]);
    if (plan->result_values)
      free(plan->result_values[i]);
    if (plan->operand_pairs)
      free(plan->operand_pairs[i]);
    if (plan->result_pairs)
      free(plan->result_pairs[i]);
  }
  free(plan->operand_values);
  free(plan->result_values);
  free(plan->operand_pairs);
  free(plan->result_pairs);
  free(plan->after_pair);
  free(plan->before_pair);
  free(plan->state);
  free(plan->pair_reg);
  free(plan->pair_value);
  map_free(&plan->pairs);
  free(plan->save_from);
  free(plan->save_after_revert);
  free(plan->loadable);
  free(plan->preempt_revert);
  free(plan->producer);
  free(plan->producer_is_revert);
}

static int reexecutable(const preempt_ctx_block *block, size_t index) {
  unsigned flags = block->instructions[index].flags;
  return (flags & PREEMPT_CTX_REEXECUTABLE) && (flags & PREEMPT_CTX_COPYABLE);
}

/* Numbers the values of the window and finds what the preemption routine
 * can still reach: the registers at `current`, and what reverting there (in
 * reverse order, each instruction's inputs intact) brings back. */
static int planner_init(planner *plan, const preempt_ctx_block *block, size_t head, size_t current,
                        const preempt_ctx_cost_model *costs) {
  memset(plan, 0, sizeof *plan);
  plan->block = block;
  plan->costs = costs;
  plan->head = head;
  plan->current = current;
  size_t count = current - head, registers = block->register_count, results = 0;
  for (size_t i = head; i < current; i++)
    results += block->instructions[i].result_count + 1;
  plan->pair_capacity = registers + results;
  plan->words = (plan->pair_capacity + 63) / 64;
  plan->operand_values = calloc(count + 1, sizeof(uint64_t *));
  plan->result_values = calloc(count + 1, sizeof(uint64_t *));
  plan->operand_pairs = calloc(count + 1, sizeof(size_t *));
  plan->result_pairs = calloc(count + 1, sizeof(size_t *));
  plan->after_pair = calloc(count + 1, sizeof(size_t));
  plan->before_pair = calloc(count + 1, sizeof(size_t));
  plan->state = calloc(registers, sizeof(uint64_t));
  plan->pair_reg = calloc(plan->pair_capacity, sizeof(uint16_t));
  plan->pair_value = calloc(plan->pair_capacity, sizeof(uint64_t));
  plan->save_from = calloc(plan->pair_capacity, sizeof(uint16_t));
  plan->save_after_revert = calloc(plan->pair_capacity, sizeof(size_t));
  plan->loadable = calloc(plan->pair_capacity, 1);
  plan->preempt_revert = calloc(count + 1, 1);
  plan->producer = calloc(plan->pair_capacity, sizeof(size_t));
  plan->producer_is_revert = calloc(plan->pair_capacity, 1);
  if (!plan->operand_values || !plan->result_values || !plan->operand_pairs || !plan->result_pairs ||
      !plan->after_pair || !plan->before_pair || !plan->state || !plan->pair_reg || !plan->pair_value ||
      !plan->save_from || !plan->save_after_revert || !plan->loadable || !plan->preempt_revert || !plan->producer ||
      !plan->producer_is_revert || map_init(&plan->pairs, plan->pair_capacity))
    return -1;

  for (size_t reg = 0; reg < registers; reg++) {
    plan->state[reg] = reg;
    pair_add(plan, (uint16_t)reg, reg);
  }
  uint64_t next_value = registers;
  for (size_t i = 0; i < count; i++) {
    const preempt_ctx_instruction *instruction = &block->instructions[head + i];
    plan->operand_values[i] = calloc(instruction->operand_count + 1, sizeof(uint64_t));
    plan->operand_pairs[i] = calloc(instruction->operand_count + 1, sizeof(size_t));
    plan->result_values[i] = calloc(instruction->result_count + 1, sizeof(uint64_t));
    plan->result_pairs[i] = calloc(instruction->result_count + 1, sizeof(size_t));
    if (!plan->operand_values[i] || !plan->operand_pairs[i] || !plan->result_values[i] || !plan->result_pairs[i])
      return -1;
    for (size_t o = 0; o < instruction->operand_count; o++) {
      uint16_t reg = instruction->operands[o];
      plan->operand_values[i][o] = plan->state[reg];
      plan->operand_pairs[i][o] = pair_find(plan, reg, plan->state[reg]);
    }
    for (size_t r = 0; r < instruction->result_count; r++) {
      int copy = r == 0 && ctx_is_copy(block, head + i);
      plan->result_values[i][r] = copy ? plan->operand_values[i][0] : next_value++;
    }
    for (size_t r = 0; r < instruction->result_count; r++) {
      uint16_t reg = instruction->results[r];
      plan->state[reg] = plan->result_values[i][r];
      plan->result_pairs[i][r] = pair_add(plan, reg, plan->result_values[i][r]);
    }
    size_t shared;
    plan->after_pair[i] = plan->before_pair[i] = NO_PAIR;
    if (ctx_revertible(block, head + i, &shared)) {
      plan->after_pair[i] = plan->result_pairs[i][0];
      plan->before_pair[i] = pair_find(plan, instruction->results[0], plan->operand_values[i][shared]);
    }
  }

  /* Where each value sits at preemption: a register of the same kind (the
   * context slot has that kind's size). */
  u64_map holders;
  if (map_init(&holders, registers * 2 + count * 2))
    return -1;
  for (size_t reg = 0; reg < registers; reg++) {
    uint64_t key = plan->state[reg] * 2 + block->registers[reg].kind;
    if (map_get(&holders, key) == SIZE_MAX)
      map_put(&holders, key, reg);
  }
  uint64_t *preempt_state = malloc(registers * sizeof(uint64_t));
  size_t *revert_holder_of = calloc(count * 2 + 1, sizeof(size_t));
  uint64_t *revert_values = calloc(count * 2 + 1, sizeof(uint64_t));
  size_t reverted = 0;
  int status = preempt_state && revert_holder_of && revert_values ? 0 : -1;
  if (status == 0) {
    memcpy(preempt_state, plan->state, registers * sizeof(uint64_t));
    for (size_t i = count; i-- > 0;) {
      const preempt_ctx_instruction *instruction = &block->instructions[head + i];
      size_t shared;
      if (!ctx_revertible(block, head + i, &shared))
        continue;
      int intact = preempt_state[instruction->results[0]] == plan->result_values[i][0];
      for (size_t o = 0; o < instruction->operand_count; o++)
        if (o != shared && preempt_state[instruction->operands[o]] != plan->operand_values[i][o])
          intact = 0;
      if (!intact)
        continue;
      plan->preempt_revert[i] = 1;
      uint16_t reg = instruction->results[0];
      preempt_state[reg] = plan->operand_values[i][shared];
      uint64_t key = preempt_state[reg] * 2 + block->registers[reg].kind;
      if (map_get(&holders, key) == SIZE_MAX) {
        map_put(&holders, key, reg);
        revert_values[reverted] = key;
        revert_holder_of[reverted++] = head + i;
      }
    }
    for (size_t p = 0; p < plan->pair_count; p++) {
      uint16_t reg = plan->pair_reg[p];
      uint64_t key = plan->pair_value[p] * 2 + block->registers[reg].kind;
      size_t holder = map_get(&holders, key);
      plan->save_after_revert[p] = SIZE_MAX;
      if (holder == SIZE_MAX)
        continue;
      plan->loadable[p] = 1;
      plan->save_from[p] = (uint16_t)holder;
      for (size_t k = 0; k < reverted; k++)
        if (revert_values[k] == key)
          plan->save_after_revert[p] = revert_holder_of[k];
    }
  }
  free(preempt_state);
  free(revert_holder_of);
  free(revert_values);
  map_free(&holders);
  return status;
}

/* Alg. 1's forward pass with Alg. 2 folded in, run to a fixpoint (§III-E:
 * a reverted register can make more instructions re-executable and the
 * other way round). `derived` starts as the loaded pairs. */
static void close_pairs(planner *plan, uint64_t *derived, int record) {
  size_t count = plan->current - plan->head;
  for (int changed = 1; changed;) {
    changed = 0;
    for (size_t i = 0; i < count; i++) {
      const preempt_ctx_instruction *instruction = &plan->block->instructions[plan->head + i];
      if (reexecutable(plan->block, plan->head + i)) {
        int ready = 1;
        for (size_t o = 0; o < instruction->operand_count && ready; o++)
          ready = plan->operand_pairs[i][o] != NO_PAIR && bit(derived, plan->operand_pairs[i][o]);
        if (ready)
          for (size_t r = 0; r < instruction->result_count; r++)
            if (!bit(derived, plan->result_pairs[i][r])) {
              set_bit(derived, plan->result_pairs[i][r]);
              if (record) {
                plan->producer[plan->result_pairs[i][r]] = plan->head + i;
                plan->producer_is_revert[plan->result_pairs[i][r]] = 0;
              }
              changed = 1;
            }
      }
      if (plan->before_pair[i] != NO_PAIR && !bit(derived, plan->before_pair[i]) &&
          bit(derived, plan->after_pair[i])) {
        size_t shared = 0;
        ctx_revertible(plan->block, plan->head + i, &shared);
        int ready = 1;
        for (size_t o = 0; o < instruction->operand_count && ready; o++)
          if (o != shared)
            ready = plan->operand_pairs[i][o] != NO_PAIR && bit(derived, plan->operand_pairs[i][o]);
        if (ready) {
          set_bit(derived, plan->before_pair[i]);
          if (record) {
            plan->producer[plan->before_pair[i]] = plan->head + i;
            plan->producer_is_revert[plan->before_pair[i]] = 1;
          }
          changed = 1;
        }
      }
    }
  }
}

static uint64_t pair_bytes(const planner *plan, size_t pair) {
  return plan->block->registers[plan->save_from[pair]].bytes;
}

/* Prerequisites of rebuilding `pair` with instruction `index` (re-executed,
 * or reverted when `revert`). Returns how many, into `out`. */
static size_t prerequisites(const planner *plan, size_t index, int revert, size_t *out) {
  size_t i = index - plan->head, count = 0, shared = SIZE_MAX;
  const preempt_ctx_instruction *instruction = &plan->block->instructions[index];
  if (revert) {
    ctx_revertible(plan->block, index, &shared);
    out[count++] = plan->after_pair[i];
  }
  for (size_t o = 0; o < instruction->operand_count; o++)
    if (o != shared)
      out[count++] = plan->operand_pairs[i][o];
  return count;
}

/* Does window instruction `i`, re-executed or (when `revert`) reverted,
 * rebuild `pair`? Instructions with more operands than a level of scratch
 * holds are not considered. */
static int rebuilds(const planner *plan, size_t i, int revert, size_t pair) {
  const preempt_ctx_instruction *instruction = &plan->block->instructions[plan->head + i];
  if (instruction->operand_count + 2 > 64)
    return 0;
  if (revert)
    return plan->before_pair[i] == pair;
  if (!reexecutable(plan->block, plan->head + i))
    return 0;
  for (size_t r = 0; r < instruction->result_count; r++)
    if (plan->result_pairs[i][r] == pair)
      return 1;
  return 0;
}

/* Makes `pair` derivable from `loads`, adding the cheapest loads one
 * derivation deep (recursing for what cannot be loaded). Returns 0 or -1. */
static int obtain(planner *plan, size_t pair, uint64_t *loads, uint64_t *derived, size_t *scratch, int depth) {
  if (pair == NO_PAIR || depth > 8)
    return -1;
  if (bit(derived, pair))
    return 0;
  if (plan->loadable[pair]) {
    set_bit(loads, pair);
    memcpy(derived, loads, plan->words * sizeof(uint64_t));
    close_pairs(plan, derived, 0);
    return 0;
  }
  size_t count = plan->current - plan->head;
  size_t best_index = SIZE_MAX;
  int best_revert = 0;
  uint64_t best_cost = UINT64_MAX;
  for (size_t i = 0; i < count; i++)
    for (int revert = 0; revert < 2; revert++) {
      if (!rebuilds(plan, i, revert, pair))
        continue;
      size_t needs = prerequisites(plan, plan->head + i, revert, scratch);
      uint64_t cost = 0;
      for (size_t n = 0; n < needs && cost != UINT64_MAX; n++) {
        size_t need = scratch[n];
        if (need == NO_PAIR)
          cost = UINT64_MAX;
        else if (!bit(derived, need))
          cost += plan->loadable[need] ? pair_bytes(plan, need) : 1u << 20; /* deeper: discouraged */
      }
      if (cost < best_cost) {
        best_cost = cost;
        best_index = plan->head + i;
        best_revert = revert;
      }
    }
  if (best_index == SIZE_MAX)
    return -1;
  size_t *needs = malloc((plan->block->instructions[best_index].operand_count + 2) * sizeof(size_t));
  if (!needs)
    return -1;
  size_t need_count = prerequisites(plan, best_index, best_revert, needs);
  int status = 0;
  for (size_t n = 0; n < need_count && status == 0; n++)
    status = obtain(plan, needs[n], loads, derived, scratch + 64, depth + 1);
  free(needs);
  return status == 0 && bit(derived, pair) ? 0 : -1;
}

/* Are all `needed` pairs rebuilt from `loads`? (`derived`: scratch) */
static int all_rebuilt(planner *plan, const uint64_t *loads, uint64_t *derived, const size_t *needed,
                       size_t needed_count) {
  memcpy(derived, loads, plan->words * sizeof(uint64_t));
  close_pairs(plan, derived, 0);
  for (size_t n = 0; n < needed_count; n++)
    if (!bit(derived, needed[n]))
      return 0;
  return 1;
}

/* Replaces load `pair` by the loads of one derivation's missing inputs when
 * they cost fewer bytes and everything needed is still rebuilt. */
static void replace_load(planner *plan, size_t pair, uint64_t *loads, uint64_t *trial, uint64_t *derived,
                         size_t *scratch, const size_t *needed, size_t needed_count) {
  size_t count = plan->current - plan->head;
  for (size_t i = 0; i < count; i++)
    for (int revert = 0; revert < 2; revert++) {
      if (!rebuilds(plan, i, revert, pair))
        continue;
      memcpy(trial, loads, plan->words * sizeof(uint64_t));
      clear_bit(trial, pair);
      memcpy(derived, trial, plan->words * sizeof(uint64_t));
      close_pairs(plan, derived, 0);
      size_t needs = prerequisites(plan, plan->head + i, revert, scratch);
      uint64_t added = 0;
      int possible = 1;
      for (size_t n = 0; n < needs && possible; n++) {
        size_t need = scratch[n];
        if (need == NO_PAIR || need == pair)
          possible = 0;
        else if (!bit(derived, need)) {
          if (!plan->loadable[need])
            possible = 0;
          else if (!bit(trial, need)) {
            set_bit(trial, need);
            added += pair_bytes(plan, need);
          }
        }
      }
      if (!possible || added >= pair_bytes(plan, pair))
        continue;
      if (all_rebuilt(plan, trial, derived, needed, needed_count)) {
        memcpy(loads, trial, plan->words * sizeof(uint64_t));
        return;
      }
    }
}

/* Schedules the rebuilding of `needed` from `loads` into a resumption
 * routine, one register file: a step runs when its inputs sit in their
 * registers and its outputs overwrite nothing still needed. */
typedef struct rebuild_step {
  preempt_ctx_step step;
  size_t *inputs;
  size_t input_count;
  size_t *outputs;
  size_t output_count;
  int done;
} rebuild_step;

static int collect_steps(planner *plan, size_t pair, const uint64_t *loads, unsigned char *visited,
                         rebuild_step *steps, size_t *step_count, size_t *instruction_step) {
  if (visited[pair])
    return 0;
  visited[pair] = 1;
  if (bit(loads, pair)) {
    rebuild_step *step = &steps[(*step_count)++];
    memset(step, 0, sizeof *step);
    step->step = (preempt_ctx_step){.kind = PREEMPT_CTX_LOAD, .reg = plan->pair_reg[pair]};
    step->outputs = malloc(sizeof(size_t));
    if (!step->outputs)
      return -1;
    step->outputs[0] = pair;
    step->output_count = 1;
    step->inputs = NULL;
    return 0;
  }
  size_t index = plan->producer[pair];
  if (index == NO_PAIR)
    return -1;
  int revert = plan->producer_is_revert[pair];
  size_t key = (index - plan->head) * 2 + (size_t)revert;
  if (instruction_step[key] != SIZE_MAX)
    return 0;
  const preempt_ctx_instruction *instruction = &plan->block->instructions[index];
  size_t *inputs = malloc((instruction->operand_count + 2) * sizeof(size_t));
  if (!inputs)
    return -1;
  size_t input_count = prerequisites(plan, index, revert, inputs);
  for (size_t n = 0; n < input_count; n++)
    if (collect_steps(plan, inputs[n], loads, visited, steps, step_count, instruction_step)) {
      free(inputs);
      return -1;
    }
  rebuild_step *step = &steps[(*step_count)++];
  memset(step, 0, sizeof *step);
  instruction_step[key] = (size_t)(step - steps);
  step->step = (preempt_ctx_step){.kind = revert ? PREEMPT_CTX_REVERT : PREEMPT_CTX_REEXECUTE,
                                  .instruction = (uint32_t)index};
  step->inputs = inputs;
  step->input_count = input_count;
  size_t outputs = revert ? 1 : instruction->result_count;
  step->outputs = malloc((outputs + 1) * sizeof(size_t));
  if (!step->outputs)
    return -1;
  if (revert)
    step->outputs[0] = plan->before_pair[index - plan->head];
  else
    for (size_t r = 0; r < outputs; r++)
      step->outputs[r] = plan->result_pairs[index - plan->head][r];
  step->output_count = outputs;
  return 0;
}

static int holds(const planner *plan, const uint64_t *resume_state, size_t pair) {
  return resume_state[plan->pair_reg[pair]] == plan->pair_value[pair];
}

/* Is the value in register `reg` still wanted by a pending step other than
 * `self`, or as a final value? */
static int still_needed(const planner *plan, const rebuild_step *steps, size_t step_count, size_t self,
                        const uint64_t *resume_state, const size_t *needed, size_t needed_count, uint16_t reg,
                        size_t writes_pair) {
  uint64_t value = resume_state[reg];
  if (writes_pair != NO_PAIR && plan->pair_value[writes_pair] == value)
    return 0;
  for (size_t s = 0; s < step_count; s++) {
    if (s == self || steps[s].done)
      continue;
    for (size_t n = 0; n < steps[s].input_count; n++)
      if (plan->pair_reg[steps[s].inputs[n]] == reg && plan->pair_value[steps[s].inputs[n]] == value)
        return 1;
  }
  for (size_t n = 0; n < needed_count; n++)
    if (plan->pair_reg[needed[n]] == reg && plan->pair_value[needed[n]] == value)
      return 1;
  return 0;
}

static int schedule(planner *plan, rebuild_step *steps, size_t step_count, const size_t *needed, size_t needed_count,
                    ctx_steps *resume, uint32_t *slot_of_pair) {
  const uint64_t garbage = UINT64_MAX;
  uint64_t *resume_state = malloc(plan->block->register_count * sizeof(uint64_t));
  if (!resume_state)
    return -1;
  for (size_t reg = 0; reg < plan->block->register_count; reg++)
    resume_state[reg] = garbage;
  size_t remaining = step_count;
  int status = 0;
  while (remaining && status == 0) {
    size_t chosen = SIZE_MAX;
    /* Computation first; then a load some pending step reads; then any load
     * no pending computation will overwrite; then any load. */
    for (int pass = 0; pass < 4 && chosen == SIZE_MAX; pass++)
      for (size_t s = 0; s < step_count && chosen == SIZE_MAX; s++) {
        rebuild_step *step = &steps[s];
        int load = step->step.kind == PREEMPT_CTX_LOAD;
        if (step->done || (pass == 0 && load) || (pass > 0 && !load))
          continue;
        int ready = 1;
        for (size_t n = 0; n < step->input_count && ready; n++)
          ready = holds(plan, resume_state, step->inputs[n]);
        for (size_t n = 0; n < step->output_count && ready; n++)
          ready = !still_needed(plan, steps, step_count, s, resume_state, needed, needed_count,
                                plan->pair_reg[step->outputs[n]], step->outputs[n]);
        if (ready && load && pass == 1) {
          int read = 0;
          for (size_t t = 0; t < step_count && !read; t++)
            for (size_t n = 0; !steps[t].done && n < steps[t].input_count; n++)
              read |= steps[t].inputs[n] == step->outputs[0];
          ready = read;
        }
        if (ready && load && pass == 2)
          for (size_t t = 0; t < step_count && ready; t++)
            if (!steps[t].done && t != s && steps[t].step.kind != PREEMPT_CTX_LOAD)
              for (size_t n = 0; n < steps[t].output_count; n++)
                if (plan->pair_reg[steps[t].outputs[n]] == step->step.reg)
                  ready = 0;
        if (ready)
          chosen = s;
      }
    if (chosen == SIZE_MAX) {
      status = -1;
      break;
    }
    rebuild_step *step = &steps[chosen];
    step->done = 1;
    remaining--;
    preempt_ctx_step emitted = step->step;
    if (emitted.kind == PREEMPT_CTX_LOAD)
      emitted.slot = slot_of_pair[step->outputs[0]];
    if (ctx_steps_push(resume, emitted))
      status = -1;
    if (emitted.kind == PREEMPT_CTX_REEXECUTE) {
      const preempt_ctx_instruction *instruction = &plan->block->instructions[emitted.instruction];
      for (size_t r = 0; r < instruction->result_count; r++)
        resume_state[instruction->results[r]] = plan->result_values[emitted.instruction - plan->head][r];
    } else {
      resume_state[plan->pair_reg[step->outputs[0]]] = plan->pair_value[step->outputs[0]];
    }
  }
  for (size_t n = 0; n < needed_count && status == 0; n++)
    if (!holds(plan, resume_state, needed[n]))
      status = -1;
  free(resume_state);
  return status;
}

/* The preemption routine for `loads`: saves of values at `current` first,
 * then the reverts the rest need (latest first, each with what its inputs
 * need reverted before it), saving each value as it comes back. */
static int build_preemption(planner *plan, const uint64_t *loads, ctx_steps *preempt, uint32_t *slot_of_pair) {
  size_t count = plan->current - plan->head;
  unsigned char *needed_revert = calloc(count + 1, 1);
  uint64_t *saved_keys = calloc(plan->pair_count + 1, sizeof(uint64_t));
  uint32_t *saved_slots = calloc(plan->pair_count + 1, sizeof(uint32_t));
  if (!needed_revert || !saved_keys || !saved_slots) {
    free(needed_revert);
    free(saved_keys);
    free(saved_slots);
    return -1;
  }
  for (size_t p = 0; p < plan->pair_count; p++)
    if (bit(loads, p) && plan->save_after_revert[p] != SIZE_MAX)
      needed_revert[plan->save_after_revert[p] - plan->head] = 1;
  /* A revert needs every later performed revert that wrote its registers,
   * and those in turn theirs: to a fixed point. */
  for (int changed = 1; changed;) {
    changed = 0;
    for (size_t i = 0; i < count; i++) {
      if (!needed_revert[i])
        continue;
      const preempt_ctx_instruction *instruction = &plan->block->instructions[plan->head + i];
      for (size_t j = i + 1; j < count; j++) {
        if (!plan->preempt_revert[j] || needed_revert[j])
          continue;
        uint16_t written = plan->block->instructions[plan->head + j].results[0];
        int touches = written == instruction->results[0];
        for (size_t o = 0; o < instruction->operand_count; o++)
          touches |= instruction->operands[o] == written;
        if (touches)
          needed_revert[j] = changed = 1;
      }
    }
  }
  int status = 0;
  uint32_t slots = 0;
  size_t saved = 0;
  /* One slot per value and register kind: two registers loaded with the
   * same value share it. */
  for (size_t pass = 0; pass <= count && status == 0; pass++) {
    size_t revert_index = SIZE_MAX;
    if (pass > 0) {
      size_t i = count - pass;
      if (!needed_revert[i])
        continue;
      revert_index = plan->head + i;
      status = ctx_steps_push(preempt, (preempt_ctx_step){.kind = PREEMPT_CTX_REVERT, .instruction = (uint32_t)revert_index});
    }
    for (size_t p = 0; p < plan->pair_count && status == 0; p++) {
      if (!bit(loads, p) || plan->save_after_revert[p] != revert_index)
        continue;
      uint64_t key = plan->pair_value[p] * 2 + plan->block->registers[plan->save_from[p]].kind;
      size_t k = 0;
      while (k < saved && saved_keys[k] != key)
        k++;
      if (k == saved) {
        saved_keys[saved] = key;
        saved_slots[saved++] = slots;
        status = ctx_steps_push(preempt, (preempt_ctx_step){.kind = PREEMPT_CTX_SAVE, .reg = plan->save_from[p], .slot = slots++});
      }
      slot_of_pair[p] = saved_slots[k];
    }
  }
  free(needed_revert);
  free(saved_keys);
  free(saved_slots);
  return status;
}

/* Plans a resumption that re-enters the program at `resume_at`. */
static int plan_reentry(planner *plan, size_t resume_at, preempt_ctx_plan *out) {
  const preempt_ctx_block *block = plan->block;
  const uint64_t *live = ctx_live_before(block, resume_at);
  size_t words = plan->words, needed_count = 0;
  size_t *needed = malloc((block->register_count + 1) * sizeof(size_t));
  uint64_t *loads = calloc(words, sizeof(uint64_t));
  uint64_t *derived = calloc(words, sizeof(uint64_t));
  uint64_t *trial = calloc(words, sizeof(uint64_t));
  size_t *scratch = malloc(64 * 10 * sizeof(size_t));
  uint32_t *slot_of_pair = calloc(plan->pair_count + 1, sizeof(uint32_t));
  unsigned char *visited = calloc(plan->pair_count + 1, 1);
  size_t step_capacity = plan->pair_count * 2 + 2;
  rebuild_step *steps = calloc(step_capacity, sizeof *steps);
  size_t *instruction_step = malloc(((plan->current - plan->head) * 2 + 2) * sizeof(size_t));
  size_t step_count = 0;
  ctx_steps preempt = {0}, resume = {0};
  int status = -1;
  if (!needed || !loads || !derived || !trial || !scratch || !slot_of_pair || !visited || !steps || !instruction_step)
    goto done;

  /* The value each live register had at the re-entry point. */
  uint64_t *values = malloc(block->register_count * sizeof(uint64_t));
  if (!values)
    goto done;
  for (size_t reg = 0; reg < block->register_count; reg++)
    values[reg] = reg;
  for (size_t i = plan->head; i < resume_at; i++)
    for (size_t r = 0; r < block->instructions[i].result_count; r++)
      values[block->instructions[i].results[r]] = plan->result_values[i - plan->head][r];
  CTX_FOR_EACH_REGISTER(reg, live, block->register_count)
    needed[needed_count++] = pair_find(plan, (uint16_t)reg, values[reg]);
  free(values);

  /* Greedy: load what can be loaded, rebuild the rest (Alg. 1 + Alg. 2). */
  close_pairs(plan, derived, 0);
  for (size_t n = 0; n < needed_count; n++)
    if (obtain(plan, needed[n], loads, derived, scratch, 0))
      goto done;
  /* Then drop each load the others rebuild anyway, or that cheaper loads
   * rebuild one instruction away (an OSRB backup instead of a vector), the
   * biggest first. */
  for (int round = 0; round < 2; round++)
    for (size_t p = 0; p < plan->pair_count; p++) {
      if (!bit(loads, p) || plan->block->registers[plan->save_from[p]].kind != (round == 0 ? PREEMPT_CTX_VECTOR : PREEMPT_CTX_SCALAR))
        continue;
      memcpy(trial, loads, words * sizeof(uint64_t));
      clear_bit(trial, p);
      if (all_rebuilt(plan, trial, derived, needed, needed_count)) {
        clear_bit(loads, p);
        continue;
      }
      replace_load(plan, p, loads, trial, derived, scratch, needed, needed_count);
    }

  memcpy(derived, loads, words * sizeof(uint64_t));
  for (size_t p = 0; p < plan->pair_count; p++)
    plan->producer[p] = NO_PAIR;
  close_pairs(plan, derived, 1);
  for (size_t k = 0; k < (plan->current - plan->head) * 2 + 2; k++)
    instruction_step[k] = SIZE_MAX;
  for (size_t n = 0; n < needed_count; n++)
    if (!bit(derived, needed[n]) ||
        collect_steps(plan, needed[n], loads, visited, steps, &step_count, instruction_step))
      goto done;
  if (build_preemption(plan, loads, &preempt, slot_of_pair) ||
      schedule(plan, steps, step_count, needed, needed_count, &resume, slot_of_pair))
    goto done;

  out->technique = PREEMPT_CTX_FLASHBACK;
  out->current = plan->current;
  out->resume_at = resume_at;
  out->flashback = resume_at;
  for (size_t s = 0; s < resume.count; s++)
    if (resume.steps[s].kind != PREEMPT_CTX_LOAD && resume.steps[s].instruction < out->flashback)
      out->flashback = resume.steps[s].instruction;
  for (size_t s = 0; s < preempt.count; s++)
    if (preempt.steps[s].kind == PREEMPT_CTX_REVERT && preempt.steps[s].instruction < out->flashback)
      out->flashback = preempt.steps[s].instruction;
  ctx_plan_adopt(block, plan->costs, &preempt, &resume, out);
  for (size_t j = resume_at; j < plan->current; j++) /* the program's code, run again */
    out->resume_cycles += block->instructions[j].latency ? block->instructions[j].latency : plan->costs->alu;
  status = 0;
done:
  for (size_t s = 0; s < step_count; s++) {
    free(steps[s].inputs);
    free(steps[s].outputs);
  }
  free(steps);
  free(instruction_step);
  free(needed);
  free(loads);
  free(derived);
  free(trial);
  free(scratch);
  free(slot_of_pair);
  free(visited);
  free(preempt.steps);
  free(resume.steps);
  return status;
}

/* Ranking (§IV-C ranks by preemption latency): the smaller context, then
 * the shorter preemption routine, then the shorter resumption (routine plus
 * the program's instructions run again up to `current`), then the fewer
 * routine instructions, then the earliest re-entry point: running the
 * program's own code beats copying it into a routine. */
static int better(const preempt_ctx_plan *candidate, const preempt_ctx_plan *best) {
  if (candidate->context_bytes != best->context_bytes)
    return candidate->context_bytes < best->context_bytes;
  if (candidate->preempt_cycles != best->preempt_cycles)
    return candidate->preempt_cycles < best->preempt_cycles;
  if (candidate->resume_cycles != best->resume_cycles)
    return candidate->resume_cycles < best->resume_cycles;
  if (candidate->resume_count != best->resume_count)
    return candidate->resume_count < best->resume_count;
  return candidate->resume_at <= best->resume_at; /* candidates come latest first */
}

int preempt_ctx_plan_flashback(const preempt_ctx_block *block, size_t current, size_t window,
                               const preempt_ctx_cost_model *costs, preempt_ctx_plan *plan) {
  if (!plan || !costs || preempt_ctx_block_validate(block) || current > block->count)
    return -1;
  /* LIVE is always correct: start from it. */
  if (preempt_ctx_plan_live(block, current, costs, plan))
    return -1;
  plan->technique = PREEMPT_CTX_FLASHBACK;
  size_t head = current > window ? current - window : 0;
  for (size_t j = current; j-- > head;)
    if (block->instructions[j].flags & PREEMPT_CTX_BARRIER) {
      head = j + 1;
      break;
    }
  planner search;
  if (planner_init(&search, block, head, current, costs)) {
    planner_free(&search);
    return 0; /* out of memory for the search: LIVE stands */
  }
  for (size_t resume_at = current + 1; resume_at-- > head;) {
    preempt_ctx_plan candidate;
    memset(&candidate, 0, sizeof candidate);
    if (plan_reentry(&search, resume_at, &candidate) == 0 && better(&candidate, plan) &&
        preempt_ctx_verify_plan(block, &candidate) == 0) {
      preempt_ctx_plan_free(plan);
      *plan = candidate;
    } else {
      preempt_ctx_plan_free(&candidate);
    }
  }
  planner_free(&search);
  return 0;
}
