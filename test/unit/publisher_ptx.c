/* publisher_ptx.c: prints the control block's layout as the compiler lays it out, then the runtime's relaunch publisher
 * PTX, whose offsets are hard-coded: the lit test checks the second against the first (control_block.h). */
#include <stddef.h>
#include <stdio.h>

#include "preempt/control_block.h"
#include "relaunch_publisher_ptx.h"

int main(void) {
  if (printf("layout task_word=%zu done_word=%zu relaunch_word=%zu done_generation=%zu drain_hold=%zu lane_bytes=%zu\n",
             offsetof(preempt_control_block, task_word), offsetof(preempt_control_block, done_word),
             offsetof(preempt_control_block, relaunch_word), offsetof(preempt_control_block, done_generation),
             offsetof(preempt_control_block, drain_hold), sizeof(((preempt_control_block *)0)->task_word[0])) < 0)
    return 1;
  return fputs(publisher_ptx, stdout) == EOF;
}
