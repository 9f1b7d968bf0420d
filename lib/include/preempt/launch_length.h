/* launch_length.h: how long a launch of a kernel as written will run, from timed launches of it.
 * EffiSha §6.3's online sampling, used to decide which launches are long enough to need eviction (FLEP §4.2). */
#ifndef PREEMPT_LAUNCH_LENGTH_H
#define PREEMPT_LAUNCH_LENGTH_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A kernel's duration per wave of its grid: blocks run a wave at a time
 * (CTAs per SM x SMs of them), so a launch of W waves takes about W times a
 * wave's time. One sample is enough to decide: the last one counts, so a
 * kernel whose blocks grow longer is seen at its next timed launch. */
typedef struct preempt_launch_length {
  double wave_ns; /* 0: never timed */
  uint32_t samples;
} preempt_launch_length;

/* Waves a grid of `task_count` blocks takes at `ctas_per_sm` on `sm_count`
 * SMs: at least 1 for any block, 0 when the block cannot run (occupancy 0). */
uint64_t preempt_launch_waves(uint64_t task_count, uint32_t ctas_per_sm, uint32_t sm_count);

/* Takes a timed launch: `nanoseconds` for `waves` waves. Ignores a sample of
 * no time or no wave (an event pair that failed to time). */
void preempt_launch_length_add(preempt_launch_length *length, double nanoseconds, uint64_t waves);

/* The predicted duration of a launch of `waves` waves; 0 when never timed. */
double preempt_launch_length_predict(const preempt_launch_length *length, uint64_t waves);

/* Whether a launch of `waves` waves is long: predicted at `long_ns` or more.
 * A kernel never timed is not (its launch is timed as written instead);
 * long_ns 0 makes every launch long. */
int preempt_launch_is_long(const preempt_launch_length *length, uint64_t waves, double long_ns);

#ifdef __cplusplus
}
#endif
#endif
