/* intask_plan.c: the context plan of one in-task yield point over SSA values, and its independent checker.
 * CTXBack §III-B (re-execution), §III-C (reverting), §III-D (uniform values saved once per CTA, as scalar backup). */
#include <stdlib.h>
#include <string.h>

#include "preempt/intask_plan.h"

/* How a value is there at resumption, in one derivation (closure) over a set of saves. */
enum { HOW_NONE = 0, HOW_FREE, HOW_SAVED, HOW_REEXECUTE, HOW_REVERT };

static int is_invertible(const preempt_intask_value *value) {
  return value->operand_count == 2 && (value->operation == PREEMPT_INTASK_ADD || value->operation == PREEMPT_INTASK_SUB ||
                                       value->operation == PREEMPT_INTASK_XOR);
}

static uint32_t alignment_of(uint32_t bytes) { return bytes < 8 ? bytes : 8; }

/* The values' users (CSR) and the state of one derivation. */
typedef struct planner {
  const preempt_intask_value *values;
  size_t count;
  uint32_t *user_start; /* count + 1 */
  uint32_t *user_value; /* user_value[user_start[v] ..]: values having v as an operand */
  uint32_t *user_slot;  /* ... and in which operand slot */
  uint8_t *saved;
  uint8_t *how;
  uint32_t *source, *other;
  uint32_t *pending; /* PURE: operand slots not derived yet */
  uint32_t *queue;   /* derivation order */
  size_t queue_length;
  uint8_t *needed;
} planner;

static void planner_free(planner *p) {
  free(p->user_start);
  free(p->user_value);
  free(p->user_slot);
  free(p->saved);
  free(p->how);
  free(p->source);
  free(p->other);
  free(p->pending);
  free(p->queue);
  free(p->needed);
}

/* Malformed input: bad operand, ADD/SUB/XOR without 2 operands, zero bytes, unknown enums. */
static int validate(const preempt_intask_value *values, size_t count) {
  if (count > UINT32_MAX || (count && !values))
    return -1;
  for (size_t v = 0; v < count; v++) {
    const preempt_intask_value *value = &values[v];
    if (value->bytes == 0 || value->kind > PREEMPT_INTASK_OPAQUE || value->operation > PREEMPT_INTASK_XOR)
      return -1;
    if (value->operation != PREEMPT_INTASK_OTHER && value->operand_count != 2)
      return -1;
    if (value->operand_count && !value->operands)
      return -1;
    for (uint32_t slot = 0; slot < value->operand_count; slot++)
      if (value->operands[slot] >= count)
        return -1;
  }
  return 0;
}

/* A cycle through FREE/PURE values only (OPAQUE values, phis, break loops) is malformed:
 * iterative depth-first search, colour 1 on the stack, 2 done. */
static int has_pure_cycle(const preempt_intask_value *values, size_t count) {
  uint8_t *colour = calloc(count ? count : 1, 1);
  uint32_t *stack = malloc((count ? count : 1) * sizeof *stack);
  uint32_t *next_slot = calloc(count ? count : 1, sizeof *next_slot);
  int cycle = 0;
  if (!colour || !stack || !next_slot) {
    cycle = -1;
    goto done;
  }
  for (size_t root = 0; root < count && !cycle; root++) {
    if (colour[root] || values[root].kind == PREEMPT_INTASK_OPAQUE)
      continue;
    size_t depth = 0;
    stack[depth++] = (uint32_t)root;
    colour[root] = 1;
    while (depth && !cycle) {
      uint32_t v = stack[depth - 1];
      if (next_slot[v] == values[v].operand_count) {
        colour[v] = 2;
        depth--;
        continue;
      }
      uint32_t operand = values[v].operands[next_slot[v]++];
      if (values[operand].kind == PREEMPT_INTASK_OPAQUE || colour[operand] == 2)
        continue;
      if (colour[operand] == 1)
        cycle = 1;
      else {
        colour[operand] = 1;
        stack[depth++] = operand;
      }
    }
  }
done:
  free(colour);
  free(stack);
  free(next_slot);
  return cycle;
}

static int planner_init(planner *p, const preempt_intask_value *values, size_t count) {
  memset(p, 0, sizeof *p);
  p->values = values;
  p->count = count;
  size_t n = count ? count : 1, edges = 0;
  for (size_t v = 0; v < count; v++)
    edges += values[v].operand_count;
  p->user_start = calloc(n + 1, sizeof *p->user_start);
  p->user_value = malloc((edges ? edges : 1) * sizeof *p->user_value);
  p->user_slot = malloc((edges ? edges : 1) * sizeof *p->user_slot);
  p->saved = calloc(n, 1);
  p->how = calloc(n, 1);
  p->source = calloc(n, sizeof *p->source);
  p->other = calloc(n, sizeof *p->other);
  p->pending = calloc(n, sizeof *p->pending);
  p->queue = malloc(n * sizeof *p->queue);
  p->needed = calloc(n, 1);
  if (!p->user_start || !p->user_value || !p->user_slot || !p->saved || !p->how || !p->source || !p->other ||
      !p->pending || !p->queue || !p->needed || edges > UINT32_MAX)
    return -1;
  for (size_t v = 0; v < count; v++)
    for (uint32_t slot = 0; slot < values[v].operand_count; slot++)
      p->user_start[values[v].operands[slot] + 1]++;
  for (size_t v = 0; v < count; v++)
    p->user_start[v + 1] += p->user_start[v];
  uint32_t *fill = p->pending; /* borrowed as fill cursors */
  memcpy(fill, p->user_start, count * sizeof *fill);
  for (size_t v = 0; v < count; v++)
    for (uint32_t slot = 0; slot < values[v].operand_count; slot++) {
      uint32_t at = fill[values[v].operands[slot]]++;
      p->user_value[at] = (uint32_t)v;
      p->user_slot[at] = slot;
    }
  return 0;
}

static void derive(planner *p, uint32_t v, uint8_t how, uint32_t source, uint32_t other) {
  p->how[v] = how;
  p->source[v] = source;
  p->other[v] = other;
  p->queue[p->queue_length++] = v;
}

/* Reverting: s = a op b derived with `known` (a or b) derived gives the other operand. */
static void revert_through(planner *p, uint32_t s) {
  const preempt_intask_value *value = &p->values[s];
  if (!is_invertible(value))
    return;
  uint32_t a = value->operands[0], b = value->operands[1];
  if (p->how[a] && !p->how[b])
    derive(p, b, HOW_REVERT, s, a);
  else if (p->how[b] && !p->how[a])
    derive(p, a, HOW_REVERT, s, b);
}

/* Everything derivable from FREE values and the saves, breadth first (shallow
 * derivations first); returns 1 when every live value is derived. */
static int derive_all(planner *p) {
  const preempt_intask_value *values = p->values;
  p->queue_length = 0;
  memset(p->how, HOW_NONE, p->count);
  for (size_t v = 0; v < p->count; v++) {
    p->pending[v] = values[v].operand_count;
    if (values[v].kind == PREEMPT_INTASK_FREE)
      derive(p, (uint32_t)v, HOW_FREE, 0, 0);
    else if (p->saved[v])
      derive(p, (uint32_t)v, HOW_SAVED, 0, 0);
  }
  for (size_t v = 0; v < p->count; v++)
    if (!p->how[v] && values[v].kind == PREEMPT_INTASK_PURE && values[v].operand_count == 0)
      derive(p, (uint32_t)v, HOW_REEXECUTE, 0, 0);
  for (size_t head = 0; head < p->queue_length; head++) {
    uint32_t v = p->queue[head];
    for (uint32_t at = p->user_start[v]; at < p->user_start[v + 1]; at++) {
      uint32_t user = p->user_value[at];
      if (values[user].kind == PREEMPT_INTASK_PURE && !p->how[user] && --p->pending[user] == 0)
        derive(p, user, HOW_REEXECUTE, 0, 0);
      if (p->how[user] && is_invertible(&values[user])) {
        uint32_t remaining = values[user].operands[1 - p->user_slot[at]];
        if (!p->how[remaining])
          derive(p, remaining, HOW_REVERT, user, v);
      }
    }
    revert_through(p, v);
  }
  for (size_t v = 0; v < p->count; v++)
    if (values[v].live && !p->how[v])
      return 0;
  return 1;
}

/* Marks what rebuilding the live values uses; returns the number of rebuild steps. */
static size_t mark_needed(planner *p) {
  size_t steps = 0, depth = 0;
  uint32_t *stack = p->pending; /* free after derive_all */
  memset(p->needed, 0, p->count);
  for (size_t root = 0; root < p->count; root++) {
    if (!p->values[root].live || p->needed[root])
      continue;
    p->needed[root] = 1;
    stack[depth++] = (uint32_t)root;
    while (depth) {
      uint32_t v = stack[--depth];
      uint32_t inputs[2], input_count = 0;
      const uint32_t *operands = inputs;
      if (p->how[v] == HOW_REEXECUTE) {
        operands = p->values[v].operands;
        input_count = p->values[v].operand_count;
      } else if (p->how[v] == HOW_REVERT) {
        inputs[0] = p->source[v];
        inputs[1] = p->other[v];
        input_count = 2;
      }
      if (p->how[v] == HOW_REEXECUTE || p->how[v] == HOW_REVERT)
        steps++;
      for (uint32_t i = 0; i < input_count; i++)
        if (!p->needed[operands[i]]) {
          p->needed[operands[i]] = 1;
          stack[depth++] = operands[i]; /* each value pushed once: depth <= count */
        }
    }
  }
  return steps;
}

/* Lays the values of `members` out in one area, largest alignment first; the size,
 * rounded up to the largest alignment, in *bytes. -1 past 4 GiB. */
typedef struct slot_order {
  uint32_t value, alignment, bytes;
} slot_order;

static int slot_order_compare(const void *left, const void *right) {
  const slot_order *a = left, *b = right;
  if (a->alignment != b->alignment)
    return a->alignment > b->alignment ? -1 : 1;
  if (a->bytes != b->bytes)
    return a->bytes > b->bytes ? -1 : 1;
  return a->value < b->value ? -1 : a->value > b->value;
}

static int lay_out(const preempt_intask_value *values, slot_order *members, size_t member_count, uint32_t *offsets,
                   uint32_t *bytes) {
  for (size_t i = 0; i < member_count; i++) {
    members[i].bytes = values[members[i].value].bytes;
    members[i].alignment = alignment_of(members[i].bytes);
  }
  qsort(members, member_count, sizeof *members, slot_order_compare);
  uint64_t end = 0, largest = 1;
  for (size_t i = 0; i < member_count; i++) {
    uint64_t alignment = members[i].alignment;
    end = (end + alignment - 1) / alignment * alignment;
    if (offsets)
      offsets[members[i].value] = (uint32_t)end;
    end += members[i].bytes;
    if (alignment > largest)
      largest = alignment;
    if (end > UINT32_MAX)
      return -1;
  }
  end = (end + largest - 1) / largest * largest;
  if (end > UINT32_MAX)
    return -1;
  *bytes = (uint32_t)end;
  return 0;
}

typedef struct candidate {
  uint64_t cost;
  size_t rebuild_steps;
  uint32_t value;
} candidate;

static int candidate_compare(const void *left, const void *right) {
  const candidate *a = left, *b = right;
  if (a->cost != b->cost)
    return a->cost > b->cost ? -1 : 1;
  if (a->rebuild_steps != b->rebuild_steps)
    return a->rebuild_steps < b->rebuild_steps ? -1 : 1;
  return a->value < b->value ? -1 : a->value > b->value;
}

static int save_is_per_cta(const preempt_intask_value *value) { return value->uniform != 0; }

/* Emits the plan of p's current saves: saves (per-thread area, then CTA area), then
 * the needed rebuild steps in derivation order. */
static int emit(planner *p, preempt_intask_plan *plan) {
  const preempt_intask_value *values = p->values;
  size_t count = p->count, n = count ? count : 1;
  if (!derive_all(p))
    return -1; /* cannot happen: the greedy keeps the plan complete */
  size_t rebuild_steps = mark_needed(p), save_count = 0;
  for (size_t v = 0; v < count; v++)
    save_count += p->saved[v];
  slot_order *members = malloc(n * sizeof *members);
  uint32_t *offsets = calloc(n, sizeof *offsets);
  plan->steps = calloc(save_count + rebuild_steps ? save_count + rebuild_steps : 1, sizeof *plan->steps);
  if (!members || !offsets || !plan->steps)
    goto fail;
  for (int per_cta = 0; per_cta <= 1; per_cta++) {
    size_t member_count = 0;
    for (size_t v = 0; v < count; v++)
      if (p->saved[v] && save_is_per_cta(&values[v]) == per_cta)
        members[member_count++].value = (uint32_t)v;
    if (lay_out(values, members, member_count, offsets, per_cta ? &plan->cta_bytes : &plan->thread_bytes) != 0)
      goto fail;
    for (size_t v = 0; v < count; v++)
      if (p->saved[v] && save_is_per_cta(&values[v]) == per_cta)
        plan->steps[plan->step_count++] = (preempt_intask_step){
            .value = (uint32_t)v,
            .action = per_cta ? PREEMPT_INTASK_SAVE_CTA : PREEMPT_INTASK_SAVE_THREAD,
            .offset = offsets[v]};
  }
  size_t live_count = 0;
  for (size_t v = 0; v < count; v++)
    if (values[v].live && values[v].kind != PREEMPT_INTASK_FREE)
      members[live_count++].value = (uint32_t)v;
  if (lay_out(values, members, live_count, NULL, &plan->live_thread_bytes) != 0)
    goto fail;
  plan->saved_count = (uint32_t)save_count;
  for (size_t head = 0; head < p->queue_length; head++) {
    uint32_t v = p->queue[head];
    if (!p->needed[v] || (p->how[v] != HOW_REEXECUTE && p->how[v] != HOW_REVERT))
      continue;
    preempt_intask_step *step = &plan->steps[plan->step_count++];
    step->value = v;
    if (p->how[v] == HOW_REEXECUTE) {
      step->action = PREEMPT_INTASK_REEXECUTE;
      plan->reexecute_count++;
    } else {
      step->action = PREEMPT_INTASK_REVERT;
      step->source = p->source[v];
      step->other = p->other[v];
      plan->revert_count++;
    }
  }
  free(members);
  free(offsets);
  return 0;
fail:
  free(members);
  free(offsets);
  return -1;
}

int preempt_intask_plan_make(const preempt_intask_value *values, size_t count, uint32_t threads_per_cta,
                             preempt_intask_plan *plan) {
  if (!plan)
    return -1;
  memset(plan, 0, sizeof *plan);
  if (threads_per_cta == 0 || validate(values, count) != 0 || has_pure_cycle(values, count) != 0)
    return -1;
  planner p;
  candidate *candidates = NULL;
  int result = -1;
  if (planner_init(&p, values, count) != 0)
    goto done;
  /* LIVE: every live non-FREE value saved. */
  size_t candidate_count = 0;
  for (size_t v = 0; v < count; v++)
    if (values[v].live && values[v].kind != PREEMPT_INTASK_FREE) {
      p.saved[v] = 1;
      candidate_count++;
    }
  candidates = malloc((candidate_count ? candidate_count : 1) * sizeof *candidates);
  if (!candidates)
    goto done;
  /* Each save's cost, and the steps its rebuild alone takes (the tie-break). */
  size_t next = 0;
  for (size_t v = 0; v < count; v++) {
    if (!p.saved[v])
      continue;
    uint64_t bytes = values[v].bytes;
    candidates[next].value = (uint32_t)v;
    candidates[next].cost = save_is_per_cta(&values[v]) ? bytes : bytes * threads_per_cta;
    p.saved[v] = 0;
    candidates[next].rebuild_steps = derive_all(&p) ? mark_needed(&p) : SIZE_MAX;
    p.saved[v] = 1;
    next++;
  }
  qsort(candidates, candidate_count, sizeof *candidates, candidate_compare);
  /* Greedy, most expensive first: a drop stays when every live value is still derived. */
  for (size_t i = 0; i < candidate_count; i++) {
    if (candidates[i].rebuild_steps == SIZE_MAX)
      continue; /* not derivable even with everything else saved */
    p.saved[candidates[i].value] = 0;
    if (!derive_all(&p))
      p.saved[candidates[i].value] = 1;
  }
  result = emit(&p, plan);
done:
  if (result != 0)
    preempt_intask_plan_free(plan);
  free(candidates);
  planner_free(&p);
  return result;
}

void preempt_intask_plan_free(preempt_intask_plan *plan) {
  if (!plan)
    return;
  free(plan->steps);
  memset(plan, 0, sizeof *plan);
}

typedef struct area_slot {
  uint32_t offset, bytes;
} area_slot;

static int area_slot_compare(const void *left, const void *right) {
  const area_slot *a = left, *b = right;
  return a->offset < b->offset ? -1 : a->offset > b->offset;
}

/* Sorted slots of one area must not overlap. */
static int slots_disjoint(area_slot *slots, size_t slot_count) {
  qsort(slots, slot_count, sizeof *slots, area_slot_compare);
  for (size_t i = 1; i < slot_count; i++)
    if ((uint64_t)slots[i - 1].offset + slots[i - 1].bytes > slots[i].offset)
      return 0;
  return 1;
}

int preempt_intask_plan_check(const preempt_intask_value *values, size_t count, const preempt_intask_plan *plan) {
  if (!plan || validate(values, count) != 0 || (plan->step_count && !plan->steps))
    return -1;
  size_t n = count ? count : 1, steps = plan->step_count;
  uint8_t *available = calloc(n, 1);
  area_slot *thread_slots = malloc((steps ? steps : 1) * sizeof *thread_slots);
  area_slot *cta_slots = malloc((steps ? steps : 1) * sizeof *cta_slots);
  size_t thread_slot_count = 0, cta_slot_count = 0;
  uint32_t saved = 0, reexecuted = 0, reverted = 0;
  int sound = available && thread_slots && cta_slots;
  for (size_t v = 0; sound && v < count; v++)
    available[v] = values[v].kind == PREEMPT_INTASK_FREE;
  for (size_t i = 0; sound && i < steps; i++) {
    const preempt_intask_step *step = &plan->steps[i];
    if (step->value >= count || available[step->value]) {
      sound = 0; /* out of range, FREE, or produced twice */
      break;
    }
    const preempt_intask_value *value = &values[step->value];
    switch (step->action) {
    case PREEMPT_INTASK_SAVE_THREAD:
    case PREEMPT_INTASK_SAVE_CTA: {
      int per_cta = step->action == PREEMPT_INTASK_SAVE_CTA;
      uint32_t area = per_cta ? plan->cta_bytes : plan->thread_bytes;
      if (!value->live || (per_cta && !value->uniform) || step->offset % alignment_of(value->bytes) != 0 ||
          (uint64_t)step->offset + value->bytes > area)
        sound = 0;
      else if (per_cta)
        cta_slots[cta_slot_count++] = (area_slot){step->offset, value->bytes};
      else
        thread_slots[thread_slot_count++] = (area_slot){step->offset, value->bytes};
      saved++;
      break;
    }
    case PREEMPT_INTASK_REEXECUTE:
      if (value->kind != PREEMPT_INTASK_PURE)
        sound = 0;
      for (uint32_t slot = 0; sound && slot < value->operand_count; slot++)
        sound = available[value->operands[slot]];
      reexecuted++;
      break;
    case PREEMPT_INTASK_REVERT: {
      if (step->source >= count || step->other >= count || !is_invertible(&values[step->source])) {
        sound = 0;
        break;
      }
      const uint32_t *operands = values[step->source].operands;
      int shape = (operands[0] == step->value && operands[1] == step->other) ||
                  (operands[1] == step->value && operands[0] == step->other);
      sound = shape && available[step->source] && available[step->other];
      reverted++;
      break;
    }
    default:
      sound = 0;
    }
    if (sound)
      available[step->value] = 1;
  }
  for (size_t v = 0; sound && v < count; v++)
    if (values[v].live && !available[v])
      sound = 0;
  if (sound)
    sound = saved == plan->saved_count && reexecuted == plan->reexecute_count && reverted == plan->revert_count &&
            slots_disjoint(thread_slots, thread_slot_count) && slots_disjoint(cta_slots, cta_slot_count);
  free(available);
  free(thread_slots);
  free(cta_slots);
  return sound ? 0 : -1;
}
