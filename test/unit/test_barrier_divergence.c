/* test_barrier_divergence.c: unit tests of lib/barrier_divergence.c on hand-built CFGs.
 * The rule of FLEP §4.1's conversion: no barrier may be reached by only part of a CTA. */
#include "check.h"
#include "preempt/barrier_divergence.h"

#define NONE PREEMPT_NO_BLOCK

int main(void) {
  /* if (i >= n) return; __syncthreads(); ... : 0 -> {1, 2}, 1 (barrier) -> 2, 2 = return. */
  {
    const uint32_t s0[] = {2, 1}, s1[] = {2};
    preempt_cfg_block cfg[] = {{s0, 2, 2, 1, 0}, {s1, 1, 2, 0, 1}, {NULL, 0, NONE, 0, 0}};
    uint32_t branch = NONE;
    CHECK_EQ_U64(preempt_find_divergent_barrier(cfg, 3, &branch), 1);
    CHECK_EQ_U64(branch, 0);
    /* The same shape with a uniform branch (blockIdx.x >= limit) is safe. */
    cfg[0].has_divergent_branch = 0;
    CHECK_EQ_U64(preempt_find_divergent_barrier(cfg, 3, &branch), NONE);
  }
  /* __syncthreads(); if (i < n) a[i] = ...; return : the barrier precedes the divergence. */
  {
    const uint32_t s0[] = {1, 2}, s1[] = {2};
    preempt_cfg_block cfg[] = {{s0, 2, 2, 1, 1}, {s1, 1, 2, 0, 0}, {NULL, 0, NONE, 0, 0}};
    CHECK_EQ_U64(preempt_find_divergent_barrier(cfg, 3, NULL), NONE);
  }
  /* Tree reduction: for (s...) { if (tid < s) ...; __syncthreads(); } -- the divergent
   * if reconverges before the barrier, the loop branch is uniform.
   * 0 -> 1; 1 (loop head, uniform) -> {2, 5}; 2 (divergent) -> {3, 4}; 3 -> 4;
   * 4 (barrier) -> 1; 5 = return. */
  {
    const uint32_t s0[] = {1}, s1[] = {2, 5}, s2[] = {3, 4}, s3[] = {4}, s4[] = {1};
    preempt_cfg_block cfg[] = {{s0, 1, 1, 0, 0}, {s1, 2, 5, 0, 0}, {s2, 2, 4, 1, 0},
                               {s3, 1, 4, 0, 0}, {s4, 1, 1, 0, 1}, {NULL, 0, NONE, 0, 0}};
    CHECK_EQ_U64(preempt_find_divergent_barrier(cfg, 6, NULL), NONE);
    /* A divergent loop exit around the barrier is unsafe. */
    cfg[1].has_divergent_branch = 1;
    CHECK_EQ_U64(preempt_find_divergent_barrier(cfg, 6, NULL), 4);
  }
  /* Two returns, no common post-dominator: 0 (divergent) -> {1, 2}; 1 = return;
   * 2 (barrier) -> 3; 3 = return. */
  {
    const uint32_t s0[] = {1, 2}, s2[] = {3};
    preempt_cfg_block cfg[] = {{s0, 2, NONE, 1, 0}, {NULL, 0, NONE, 0, 0}, {s2, 1, 3, 0, 1}, {NULL, 0, NONE, 0, 0}};
    CHECK_EQ_U64(preempt_find_divergent_barrier(cfg, 4, NULL), 2);
  }
  /* Divergent early exit and no barrier at all: safe. */
  {
    const uint32_t s0[] = {1, 2}, s1[] = {2};
    preempt_cfg_block cfg[] = {{s0, 2, 2, 1, 0}, {s1, 1, 2, 0, 0}, {NULL, 0, NONE, 0, 0}};
    CHECK_EQ_U64(preempt_find_divergent_barrier(cfg, 3, NULL), NONE);
  }
  CHECK_EQ_U64(preempt_find_divergent_barrier(NULL, 0, NULL), NONE);
  CHECK_DONE("test_barrier_divergence");
}
