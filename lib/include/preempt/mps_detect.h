/* mps_detect.h: whether an MPS control daemon serves this node's GPUs, as a process started now would find it.
 * FlexSched and FLEP co-run kernels of different processes only under MPS; without it contexts time-slice. */
#ifndef PREEMPT_MPS_DETECT_H
#define PREEMPT_MPS_DETECT_H

/* 1 when the MPS control socket exists: `control` in $CUDA_MPS_PIPE_DIRECTORY, else in /tmp/nvidia-mps (the
 * directory CUDA's clients look in); 0 otherwise. Reads the environment and the file system only. */
int preempt_mps_running(void);

/* The hardware queues an MPS client gets when CUDA_DEVICE_MAX_CONNECTIONS is unset: a server's clients share
 * one pool, on the H200 (driver 580) 128 connections (32 each: 3 clients started, 8 each: 15) for up to 48
 * clients; NVIDIA does not say the default, and no API tells it, so the runtime takes the most all 48 fit. */
#define PREEMPT_MPS_DEFAULT_QUEUES 2u

#endif
