/* mps_detect.h: whether an MPS control daemon serves this node's GPUs, as a process started now would find it.
 * FlexSched and FLEP co-run kernels of different processes only under MPS; without it contexts time-slice. */
#ifndef PREEMPT_MPS_DETECT_H
#define PREEMPT_MPS_DETECT_H

/* 1 when the MPS control socket exists: `control` in $CUDA_MPS_PIPE_DIRECTORY, else in /tmp/nvidia-mps (the
 * directory CUDA's clients look in); 0 otherwise. Reads the environment and the file system only. */
int preempt_mps_running(void);

#endif
