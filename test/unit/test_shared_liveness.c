/* test_shared_liveness.c: unit tests of lib/shared_liveness.c on hand-built CFGs and store sets.
 * Issue 8's live shared memory: a variable is left out of a context only where no path reads it before the CTA
 * writes it again. */
#include "check.h"
#include "preempt/shared_liveness.h"

#define NOTHING PREEMPT_SHARED_NOTHING
#define READ PREEMPT_SHARED_READ
#define KILLED PREEMPT_SHARED_KILLED

static int live_from(const preempt_shared_block *blocks, size_t count, uint32_t start) {
  int live = -1;
  CHECK_EQ_U64(preempt_shared_live_from(blocks, count, start, &live), 0);
  return live;
}

int main(void) {
  /* gemm's K loop, point at the back-edge 3 -> 1: 0 (entry) -> 1; 1 (header: loads the tile, barrier) -> 2;
   * 2 (reads the tile) -> 3; 3 (latch) -> {1, 4}; 4 (after the loop, no tile) -> return. */
  {
    const uint32_t s0[] = {1}, s1[] = {2}, s2[] = {3}, s3[] = {1, 4};
    preempt_shared_block cfg[] = {
        {s0, 1, NOTHING}, {s1, 1, KILLED}, {s2, 1, READ}, {s3, 2, NOTHING}, {NULL, 0, NOTHING}};
    CHECK_EQ_U64(live_from(cfg, 5, 1), 0);
    /* From the latch the exit path reaches no read either. */
    CHECK_EQ_U64(live_from(cfg, 5, 3), 0);
    /* If the header only writes part of the tile, the read after it sees the old rest. */
    cfg[1].first = NOTHING;
    CHECK_EQ_U64(live_from(cfg, 5, 1), 1);
    /* Code after the loop that reads the tile keeps it live through the exit. */
    cfg[1].first = KILLED;
    cfg[4].first = READ;
    CHECK_EQ_U64(live_from(cfg, 5, 1), 0);
    CHECK_EQ_U64(live_from(cfg, 5, 3), 1);
  }
  /* A read on one side of a branch, the overwrite on the other: live (some thread's path reads first).
   * 0 -> {1, 2}; 1 (READ) -> 3; 2 (KILLED) -> 3; 3 -> return. */
  {
    const uint32_t s0[] = {1, 2}, s1[] = {3}, s2[] = {3};
    preempt_shared_block cfg[] = {{s0, 2, NOTHING}, {s1, 1, READ}, {s2, 1, KILLED}, {NULL, 0, NOTHING}};
    CHECK_EQ_U64(live_from(cfg, 4, 0), 1);
    cfg[1].first = NOTHING;
    CHECK_EQ_U64(live_from(cfg, 4, 0), 0);
    /* Reads before the start do not count. */
    cfg[0].first = NOTHING;
    cfg[1].first = READ;
    CHECK_EQ_U64(live_from(cfg, 4, 2), 0);
  }
  /* A cycle with no read terminates: 0 -> 1 -> 0. */
  {
    const uint32_t s0[] = {1}, s1[] = {0};
    preempt_shared_block cfg[] = {{s0, 1, NOTHING}, {s1, 1, NOTHING}};
    CHECK_EQ_U64(live_from(cfg, 2, 0), 0);
    cfg[1].first = READ;
    CHECK_EQ_U64(live_from(cfg, 2, 0), 1);
  }
  /* Bad input: a successor out of range or a bad start is an error, and the variable is taken as live. */
  {
    const uint32_t s0[] = {7};
    preempt_shared_block cfg[] = {{s0, 1, NOTHING}};
    int live = 0;
    CHECK_EQ_U64(preempt_shared_live_from(cfg, 1, 0, &live), (uint64_t)-1);
    CHECK_EQ_U64(live, 1);
    live = 0;
    CHECK_EQ_U64(preempt_shared_live_from(cfg, 1, 3, &live), (uint64_t)-1);
    CHECK_EQ_U64(live, 1);
  }

  /* Coverage: gemm's 16 x 64 words, 256 threads storing word t, t + 256, t + 512, t + 768 (transposed: the
   * word at row e % 16, column e / 16 for e = t + 256 l). */
  {
    static preempt_shared_write writes[1024];
    size_t count = 0;
    for (unsigned t = 0; t < 256; t++)
      for (unsigned l = 0; l < 4; l++) {
        unsigned e = t + 256 * l;
        writes[count].offset = 4ull * ((e % 16) * 64 + e / 16);
        writes[count++].bytes = 4;
      }
    int covered = 0;
    CHECK_EQ_U64(preempt_shared_covered(writes, count, 4096, &covered), 0);
    CHECK_EQ_U64(covered, 1);
    /* One word fewer (the last after sorting: byte 4092) leaves a hole at the end. */
    CHECK_EQ_U64(preempt_shared_covered(writes, count - 1, 4096, &covered), 0);
    CHECK_EQ_U64(covered, 0);
    /* A hole in the middle. */
    writes[100].offset = 4096;
    CHECK_EQ_U64(preempt_shared_covered(writes, count, 4096, &covered), 0);
    CHECK_EQ_U64(covered, 0);
  }
  /* Overlapping and wider writes; a variable of 0 bytes is covered by nothing; bytes past the end do not
   * help; an offset near 2^64 does not wrap around to cover the start. */
  {
    preempt_shared_write writes[] = {{8, 8}, {0, 6}, {4, 8}, {14, 2}};
    int covered = 0;
    CHECK_EQ_U64(preempt_shared_covered(writes, 4, 16, &covered), 0);
    CHECK_EQ_U64(covered, 1);
    CHECK_EQ_U64(preempt_shared_covered(writes, 4, 17, &covered), 0);
    CHECK_EQ_U64(covered, 0);
    CHECK_EQ_U64(preempt_shared_covered(NULL, 0, 0, &covered), 0);
    CHECK_EQ_U64(covered, 1);
    preempt_shared_write wrapping[] = {{UINT64_MAX - 1, 16}};
    CHECK_EQ_U64(preempt_shared_covered(wrapping, 1, 8, &covered), 0);
    CHECK_EQ_U64(covered, 0);
    CHECK_EQ_U64(preempt_shared_covered(NULL, 3, 8, &covered), (uint64_t)-1);
    CHECK_EQ_U64(covered, 0);
  }
  CHECK_DONE("test_shared_liveness");
}
