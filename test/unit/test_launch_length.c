/* test_launch_length.c: unit tests of lib/launch_length.c, the per-wave duration model and the long-launch test.
 * EffiSha §6.3's sampling decides which launches run as written and which are converted (docs/preemption.md). */
#include "check.h"
#include "preempt/launch_length.h"

int main(void) {
  /* Waves: whole waves of CTAs per SM x SMs, at least one for any block. */
  CHECK_EQ_U64(preempt_launch_waves(1, 8, 132), 1);
  CHECK_EQ_U64(preempt_launch_waves(8 * 132, 8, 132), 1);
  CHECK_EQ_U64(preempt_launch_waves(8 * 132 + 1, 8, 132), 2);
  CHECK_EQ_U64(preempt_launch_waves(65536, 16, 132), 32); /* 65536 / 2112 = 31.03 */
  CHECK_EQ_U64(preempt_launch_waves(100, 0, 132), 0);     /* the block cannot run */
  CHECK_EQ_U64(preempt_launch_waves(0, 8, 132), 0);

  preempt_launch_length length = {0};
  /* Never timed: nothing is long but under long_ns 0, which makes every launch long. */
  CHECK(preempt_launch_length_predict(&length, 10) == 0);
  CHECK(!preempt_launch_is_long(&length, 1000000, 500e3));
  CHECK(preempt_launch_is_long(&length, 1, 0));

  /* 4 waves in 100 us: 25 us a wave. */
  preempt_launch_length_add(&length, 100e3, 4);
  CHECK_EQ_U64(length.samples, 1);
  CHECK(length.wave_ns == 25e3);
  CHECK(preempt_launch_length_predict(&length, 8) == 200e3);
  CHECK(!preempt_launch_is_long(&length, 19, 500e3)); /* 475 us */
  CHECK(preempt_launch_is_long(&length, 20, 500e3));  /* 500 us: long from the threshold on */
  CHECK(preempt_launch_is_long(&length, 1, 0));

  /* A failed timing (no time, no wave) changes nothing. */
  preempt_launch_length_add(&length, 0, 4);
  preempt_launch_length_add(&length, -1, 4);
  preempt_launch_length_add(&length, 100e3, 0);
  CHECK_EQ_U64(length.samples, 1);
  CHECK(length.wave_ns == 25e3);

  /* The last sample counts: blocks that got longer are seen at once. */
  preempt_launch_length_add(&length, 3e6, 2);
  CHECK_EQ_U64(length.samples, 2);
  CHECK(preempt_launch_is_long(&length, 1, 500e3));
  CHECK_DONE("test_launch_length");
}
