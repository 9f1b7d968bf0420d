/* intask_period.h: how many loop iterations to run before the next in-task check, from the time the last ones took.
 * EffiSha §6.3's adaptive check interval, applied per yield point (issue 8, docs/intask.md); header-only, so that the
 * device helpers (runtime-dev/task_loop.cu) and the unit test (test_intask_plan.c) run the same code. */
#ifndef PREEMPT_INTASK_PERIOD_H
#define PREEMPT_INTASK_PERIOD_H

#if defined(__CUDA__) || defined(__HIP__)
#define PREEMPT_INTASK_PERIOD_FN static __attribute__((host)) __attribute__((device)) inline
#else
#define PREEMPT_INTASK_PERIOD_FN static inline
#endif

/* Never more iterations between checks than this, whatever a loop's speed. */
#define PREEMPT_INTASK_MAX_ITERATIONS (1u << 24)

/* The next count, after `iterations` iterations ran from the CTA's last check (at `last_check_ns`: the CTA's start
 * before its first check; 0: nothing measured, kept) to this one (`now_ns`; both the low 32 bits of a nanosecond
 * clock); the check period is `period_ns`. Moves by powers of two toward the period, by shifts: a division's
 * temporaries would raise the loop's register count (and cut its occupancy) for a path taken once per period. A
 * measure far over the period (16x) shrinks the count 16-fold: the first version ignored it, taking it for other
 * work between two loop entries, and so kept a count that had grown while the loop ran fast after the loop slowed
 * down (the SM filled, another process got it), which held every eviction of the CTA as long. After a long gap
 * between entries the count shrinks for nothing; it grows back 4-fold a check. */
PREEMPT_INTASK_PERIOD_FN unsigned int preempt_intask_next_iterations(unsigned int iterations, unsigned int period_ns,
                                                                    unsigned int last_check_ns, unsigned int now_ns) {
  if (last_check_ns == 0)
    return iterations;
  unsigned int measured = now_ns - last_check_ns;
  if ((measured >> 4) > period_ns)
    iterations >>= 4;
  else if ((measured >> 2) > period_ns)
    iterations >>= 2;
  else if ((measured >> 1) > period_ns)
    iterations >>= 1;
  else if (measured < period_ns / 4)
    iterations <<= 2;
  else if (measured < period_ns / 2)
    iterations <<= 1;
  return iterations < 1 ? 1 : iterations > PREEMPT_INTASK_MAX_ITERATIONS ? PREEMPT_INTASK_MAX_ITERATIONS : iterations;
}

/* Whether thread 0 reads the eviction word again at a check rather than act on the read it left in flight at the
 * check before (last_check_ns, now_ns and period_ns as above): only when that check was over 4 periods ago. A read
 * in flight overlaps the loop but is one check old, so an eviction waits for up to two intervals; where an
 * interval is one long iteration (its count cannot go under 1), that doubled the wait (the persistent kernel's
 * 150 us items: p99 284 us, bench/results/2026-11-23-intask-h100-9be1972.md). The fresh read's round trip
 * (0.3-1.4 us on the H100, longer while the kernel saturates memory) then costs under a quarter of a period per
 * four periods of work; at every check of a fast loop it cost the memory-bound gemm 1.22x (issue 8). */
PREEMPT_INTASK_PERIOD_FN int preempt_intask_poll_again(unsigned int period_ns, unsigned int last_check_ns,
                                                      unsigned int now_ns) {
  return period_ns != 0 && last_check_ns != 0 && ((now_ns - last_check_ns) >> 2) > period_ns;
}

/* Checks with no barrier of their own, at points of loops that meet at a CTA barrier every iteration (docs/intask.md,
 * "Checks without barriers"): every thread acts on the answer thread 0 left in a shared slot at the check before,
 * and thread 0 leaves the next one in the other slot. An answer is 0 (leave) or the iterations to the check after
 * it, with PREEMPT_INTASK_AGAIN when that check is to meet at barriers and act on a fresh read of the eviction word
 * (as every loop's first check after entering does): the slots' answer is a check old, which doubles an eviction's
 * wait where an interval is one long iteration or the last check was long ago (preempt_intask_poll_again). The
 * helper returns the answer's count and the next slot to read in bits 30-31 (PREEMPT_INTASK_STATE_SHIFT). */
#define PREEMPT_INTASK_AGAIN (1u << 30)
#define PREEMPT_INTASK_COUNT_MASK (PREEMPT_INTASK_AGAIN - 1u)
#define PREEMPT_INTASK_STATE_SHIFT 30
/* The check state's other value: a loop just entered (or resumed), no answer left yet; bit 0 is then thread 0's
 * read of the word on entry. */
#define PREEMPT_INTASK_STATE_FIRST 2u

/* Thread 0's answer for the check after the next: `word` the eviction word it read now, `iterations` the count
 * preempt_intask_next_iterations gives, `long_gap` preempt_intask_poll_again's answer at this check. */
PREEMPT_INTASK_PERIOD_FN unsigned int preempt_intask_flags_answer(unsigned int word, unsigned int iterations,
                                                                 int long_gap) {
  if (word != 0)
    return 0;
  if (iterations > PREEMPT_INTASK_MAX_ITERATIONS)
    iterations = PREEMPT_INTASK_MAX_ITERATIONS;
  if (iterations < 1)
    iterations = 1;
  return iterations | (iterations == 1 || long_gap ? PREEMPT_INTASK_AGAIN : 0u);
}

/* The longest constant chunk of a strip-mined loop, in iterations (issue 8, docs/intask.md "Constant chunks"). */
#define PREEMPT_INTASK_MAX_CHUNK 8u

/* How many iterations each chunk of a strip-mined loop runs between two tests of the count-down to the next check,
 * for a loop body of `body_instructions` IR instructions per thread: the largest power of two up to
 * PREEMPT_INTASK_MAX_CHUNK whose chunk runs at most `chunk_work` of them; 1 when not even two fit (the chunk's
 * length is then set at run time, as before). A constant length lets ptxas unroll the chunk whole: the run-time
 * length cost the bench's stencil a remainder dispatch and the chunk's set-up at every check (1.021x its time
 * without checks against 1.008-1.010x with chunks of 4 or 16, bench/intask/chunk_shape.cu). A long chunk is the
 * shortest interval between checks, and the loop's last iterations (fewer than a chunk) run with no check: small
 * bodies only. */
PREEMPT_INTASK_PERIOD_FN unsigned int preempt_intask_chunk_length(unsigned long long body_instructions,
                                                                 unsigned long long chunk_work) {
  unsigned long long body = body_instructions ? body_instructions : 1;
  unsigned int length = 1;
  while (length < PREEMPT_INTASK_MAX_CHUNK && length * 2ull <= chunk_work / body)
    length *= 2;
  return length;
}

#endif
