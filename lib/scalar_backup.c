/* scalar_backup.c: on-chip scalar register backup (OSRB): copy a scalar into a free register before it is overwritten.
 * CTXBack §III-D (Fig. 5): the copy keeps the old value reachable, so earlier instructions stay re-executable. */
#include <stdlib.h>
#include <string.h>

#include "ctxback_internal.h"

void preempt_ctx_block_free(preempt_ctx_block *block) {
  if (!block)
    return;
  if (block->instructions)
    for (size_t j = 0; j < block->count; j++)
      if (block->instructions[j].flags & PREEMPT_CTX_BACKUP) {
        free((void *)block->instructions[j].results);
        free((void *)block->instructions[j].operands);
      }
  free((void *)block->instructions);
  free((void *)block->live_after);
  memset(block, 0, sizeof *block);
}

int preempt_ctx_insert_backups(const preempt_ctx_block *block, const preempt_ctx_backup *backups, size_t count,
                               preempt_ctx_block *with_backups, size_t *index_map) {
  if (!with_backups || preempt_ctx_block_validate(block) || (count && !backups))
    return -1;
  memset(with_backups, 0, sizeof *with_backups);
  for (size_t b = 0; b < count; b++)
    if (backups[b].before >= block->count || backups[b].source >= block->register_count ||
        backups[b].backup >= block->register_count || (b > 0 && backups[b].before < backups[b - 1].before))
      return -1;
  size_t total = block->count + count;
  preempt_ctx_instruction *code = calloc(total + 1, sizeof *code);
  const uint64_t **live_after = calloc(total + 1, sizeof *live_after);
  if (!code || !live_after) {
    free(code);
    free(live_after);
    return -1;
  }
  with_backups->instructions = code;
  with_backups->live_after = live_after;
  with_backups->registers = block->registers;
  with_backups->register_count = block->register_count;
  with_backups->live_in = block->live_in;
  size_t next = 0, backup = 0;
  for (size_t j = 0; j < block->count; j++) {
    for (; backup < count && backups[backup].before == j; backup++) {
      uint16_t *result = malloc(sizeof *result), *operand = malloc(sizeof *operand);
      if (!result || !operand) {
        free(result);
        free(operand);
        with_backups->count = next;
        preempt_ctx_block_free(with_backups);
        return -1;
      }
      *result = backups[backup].backup;
      *operand = backups[backup].source;
      code[next] = (preempt_ctx_instruction){.results = result, .result_count = 1, .operands = operand,
                                             .operand_count = 1, .operation = PREEMPT_CTX_MOVE,
                                             .flags = PREEMPT_CTX_REEXECUTABLE | PREEMPT_CTX_COPYABLE |
                                                      PREEMPT_CTX_BACKUP,
                                             .latency = 1};
      /* The backup is never read by the program: liveness does not change. */
      live_after[next] = j == 0 ? block->live_in : block->live_after[j - 1];
      next++;
    }
    if (index_map)
      index_map[j] = next;
    code[next] = block->instructions[j];
    live_after[next] = block->live_after[j];
    next++;
  }
  with_backups->count = next;
  return 0;
}

/* Summed CTXBack context of the points a backup before `before` can help. */
static uint64_t context_near(const preempt_ctx_block *block, size_t first, size_t last, size_t window,
                             const preempt_ctx_cost_model *costs) {
  uint64_t bytes = 0;
  for (size_t point = first; point <= last && point < block->count; point++) {
    preempt_ctx_plan plan;
    if (preempt_ctx_plan_flashback(block, point, window, costs, &plan))
      return UINT64_MAX;
    bytes += plan.context_bytes;
    preempt_ctx_plan_free(&plan);
  }
  return bytes;
}

int preempt_ctx_choose_backups(const preempt_ctx_block *block, size_t window, const preempt_ctx_cost_model *costs,
                               const uint16_t *free_registers, size_t free_count, preempt_ctx_backup *backups,
                               size_t capacity, size_t *count) {
  if (!count || !costs || preempt_ctx_block_validate(block) || (free_count && !free_registers) ||
      (capacity && !backups))
    return -1;
  *count = 0;
  size_t used_free = 0;
  for (size_t j = 0; j < block->count && used_free < free_count && *count < capacity; j++) {
    const preempt_ctx_instruction *instruction = &block->instructions[j];
    size_t shared;
    if (ctx_revertible(block, j, &shared)) /* reverting brings the old value back already */
      continue;
    for (size_t r = 0; r < instruction->result_count && used_free < free_count && *count < capacity; r++) {
      uint16_t source = instruction->results[r];
      const preempt_ctx_register *kind = &block->registers[source];
      uint16_t backup = free_registers[used_free];
      if (kind->kind != PREEMPT_CTX_SCALAR || kind->bits != block->registers[backup].bits)
        continue;
      /* Only worth it when an earlier instruction in reach read the old value. */
      int read_before = 0;
      for (size_t h = j > window ? j - window : 0; h < j && !read_before; h++)
        for (size_t o = 0; o < block->instructions[h].operand_count; o++)
          read_before |= block->instructions[h].operands[o] == source;
      if (!read_before)
        continue;
      /* Measure with the backups chosen so far plus this one. */
      backups[*count] = (preempt_ctx_backup){.before = j, .source = source, .backup = backup};
      preempt_ctx_block without, with;
      size_t *map_without = calloc(block->count + 1, sizeof(size_t));
      size_t *map_with = calloc(block->count + 1, sizeof(size_t));
      int ok = map_without && map_with && preempt_ctx_insert_backups(block, backups, *count, &without, map_without) == 0;
      if (ok && preempt_ctx_insert_backups(block, backups, *count + 1, &with, map_with) != 0) {
        preempt_ctx_block_free(&without);
        ok = 0;
      }
      if (ok) {
        size_t last = j + window < block->count ? j + window : block->count - 1;
        uint64_t before_bytes = context_near(&without, map_without[j] + 1, map_without[last], window, costs);
        uint64_t after_bytes = context_near(&with, map_with[j] + 1, map_with[last], window, costs);
        if (after_bytes < before_bytes) {
          (*count)++;
          used_free++;
        }
        preempt_ctx_block_free(&without);
        preempt_ctx_block_free(&with);
      }
      free(map_without);
      free(map_with);
    }
  }
  return 0;
}
