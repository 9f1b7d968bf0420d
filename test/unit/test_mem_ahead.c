/* test_mem_ahead.c: reserve-ahead's two decisions (lib/mem_ahead.c) on cases worked out by hand.
 * schedGPU §4's pre-allocation through the daemon, with the round trip taken off most allocations. */
#include "check.h"
#include "preempt/mem_ahead.h"

#define MIB (1024ull * 1024ull)
#define GIB (1024ull * MIB)

int main(void) {
  const uint64_t h200 = 141ull * GIB, small = 1 * GIB;
  /* The size: the setting, capped at 1/2048 of the GPU (0.5 MiB of 1 GiB). */
  CHECK_EQ_U64(preempt_mem_ahead_size(32 * MIB, h200), 32 * MIB);
  CHECK_EQ_U64(preempt_mem_ahead_size(32 * MIB, small), small / 2048);
  CHECK_EQ_U64(preempt_mem_ahead_size(0, h200), 0);
  /* Asked when the last answer left room: need + ahead + capacity/8 free, nobody waiting. */
  CHECK_EQ_U64(preempt_mem_ahead_ask(32 * MIB, h200, 100 * GIB, 0, 4 * MIB), 32 * MIB);
  uint64_t edge = 4 * MIB + 32 * MIB + h200 / 8;
  CHECK_EQ_U64(preempt_mem_ahead_ask(32 * MIB, h200, edge, 0, 4 * MIB), 32 * MIB);
  CHECK_EQ_U64(preempt_mem_ahead_ask(32 * MIB, h200, edge - 1, 0, 4 * MIB), 0);
  /* Not when anyone waits, before any answer, when off, or for a need beyond what was free. */
  CHECK_EQ_U64(preempt_mem_ahead_ask(32 * MIB, h200, 100 * GIB, 1, 4 * MIB), 0);
  CHECK_EQ_U64(preempt_mem_ahead_ask(32 * MIB, h200, 0, 0, 4 * MIB), 0);
  CHECK_EQ_U64(preempt_mem_ahead_ask(0, h200, 100 * GIB, 0, 4 * MIB), 0);
  CHECK_EQ_U64(preempt_mem_ahead_ask(32 * MIB, h200, 100 * GIB, 0, 101 * GIB), 0);
  CHECK_EQ_U64(preempt_mem_ahead_ask(32 * MIB, h200, 100 * GIB, 0, UINT64_MAX), 0);
  /* Given back: nothing up to two sizes, down to one size above it, everything when anyone waits. */
  CHECK_EQ_U64(preempt_mem_ahead_excess(32 * MIB, h200, 64 * MIB, 0), 0);
  CHECK_EQ_U64(preempt_mem_ahead_excess(32 * MIB, h200, 64 * MIB + 1, 0), 32 * MIB + 1);
  CHECK_EQ_U64(preempt_mem_ahead_excess(32 * MIB, h200, 10 * MIB, 2), 10 * MIB);
  CHECK_EQ_U64(preempt_mem_ahead_excess(0, h200, 10 * MIB, 0), 10 * MIB); /* turned off: nothing kept */
  CHECK_DONE("test_mem_ahead");
}
