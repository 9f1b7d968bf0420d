/* generation.h: the launch generation a control block's next launch takes, shared by the host (launch.c) and the
 * CTA that completes a launch and presets the next one's lane (task_loop.cu); FLEP §4.1's reusable kernel state. */
#ifndef PREEMPT_GENERATION_H
#define PREEMPT_GENERATION_H

#if defined(__CUDA__) || defined(__HIP__)
#define PREEMPT_GENERATION_FN static __attribute__((host)) __attribute__((device)) inline
#else
#define PREEMPT_GENERATION_FN static inline
#endif

/* Generations from here up are never a launch's: the device tags what thread 0 hands itself between helpers
 * (a task of its batch, a claimed context, a fetch put off, a yield) with them, beside the raw words of the
 * task counter, whose upper half is the launch's generation. A launch of one of these generations would have
 * its own first fetch taken for such a tag: a resumed context read from a random ring record, or a batch cut
 * to its first task. */
#define PREEMPT_GENERATION_RESERVED 0xfffffff0u

/* The generation after `generation`: one more, skipping 0 (a launch id's "none") and the reserved ones. The
 * wrap goes to 2, even after the last odd one, so that launches keep alternating between the two lanes of
 * control-block words (control_block.h). */
PREEMPT_GENERATION_FN unsigned int preempt_next_generation(unsigned int generation) {
  unsigned int next = generation + 1;
  return next >= PREEMPT_GENERATION_RESERVED || next == 0 ? 2 - (next & 1) : next;
}

#endif
