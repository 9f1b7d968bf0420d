/* mem_ahead.c: reserve-ahead for memory admission through preemptd: what to ask beyond an allocation, what to give
 * back. schedGPU §4 (pre-allocation and post-free through the server), with its round trip taken off most calls. */
#include "preempt/mem_ahead.h"

uint64_t preempt_mem_ahead_size(uint64_t setting, uint64_t capacity) {
  uint64_t share = capacity / 2048;
  return setting < share ? setting : share;
}

uint64_t preempt_mem_ahead_ask(uint64_t setting, uint64_t capacity, uint64_t free_seen, uint32_t waiting_seen,
                               uint64_t need) {
  uint64_t ahead = preempt_mem_ahead_size(setting, capacity);
  if (ahead == 0 || waiting_seen > 0 || free_seen == 0)
    return 0;
  uint64_t margin = capacity / 8;
  /* need + ahead + margin <= free_seen, without overflow: ahead and margin are below capacity. */
  if (need > free_seen || free_seen - need < ahead + margin)
    return 0;
  return ahead;
}

uint64_t preempt_mem_ahead_excess(uint64_t setting, uint64_t capacity, uint64_t spare, uint32_t waiting_seen) {
  if (waiting_seen > 0)
    return spare;
  uint64_t ahead = preempt_mem_ahead_size(setting, capacity);
  return spare > 2 * ahead ? spare - ahead : 0;
}
