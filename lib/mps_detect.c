/* mps_detect.c: whether an MPS control daemon serves this node's GPUs (its control socket in the pipe directory).
 * FlexSched §2 and FLEP §6.3: kernels of different processes overlap only under MPS; without it contexts time-slice. */
#include "preempt/mps_detect.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int preempt_mps_running(void) {
  const char *pipes = getenv("CUDA_MPS_PIPE_DIRECTORY");
  char path[4096];
  int length = snprintf(path, sizeof path, "%s/control", pipes && *pipes ? pipes : "/tmp/nvidia-mps");
  return length > 0 && (size_t)length < sizeof path && access(path, F_OK) == 0;
}
