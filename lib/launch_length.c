/* launch_length.c: a kernel's duration per wave, from timed launches, and the "long launch" test.
 * EffiSha §6.3 (online sampling of task length), FLEP §4.2 (a kernel's duration predicted from its grid). */
#include "preempt/launch_length.h"

uint64_t preempt_launch_waves(uint64_t task_count, uint32_t ctas_per_sm, uint32_t sm_count) {
  uint64_t wave = (uint64_t)ctas_per_sm * sm_count;
  if (wave == 0 || task_count == 0)
    return 0;
  return (task_count + wave - 1) / wave;
}

void preempt_launch_length_add(preempt_launch_length *length, double nanoseconds, uint64_t waves) {
  if (!(nanoseconds > 0) || waves == 0)
    return;
  length->wave_ns = nanoseconds / (double)waves;
  length->samples++;
}

double preempt_launch_length_predict(const preempt_launch_length *length, uint64_t waves) {
  return length->samples ? length->wave_ns * (double)waves : 0;
}

int preempt_launch_is_long(const preempt_launch_length *length, uint64_t waves, double long_ns) {
  if (long_ns <= 0)
    return 1;
  return length->samples != 0 && preempt_launch_length_predict(length, waves) >= long_ns;
}
