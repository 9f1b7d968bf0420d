/* metrics.h: preemptd's metrics as plain data (a snapshot copied from the daemon) and their text in Prometheus's
 * exposition format. Issue 43 (observability per client and job); FLEP §3 (one scheduler per node sees everything). */
#ifndef PREEMPT_METRICS_H
#define PREEMPT_METRICS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Upper bounds (seconds) of the eviction latency histogram's buckets, +Inf implied: from the tens of microseconds
 * a drained or in-task eviction takes (FLEP §6.3) to the second a long task could hold an SM. */
#define PREEMPT_METRICS_BUCKETS 16
extern const double preempt_metrics_bucket_le[PREEMPT_METRICS_BUCKETS];

typedef struct preempt_metrics_histogram {
  uint64_t bucket[PREEMPT_METRICS_BUCKETS]; /* observations in (le[i-1], le[i]]; larger ones count only below */
  uint64_t count;
  double sum_seconds;
} preempt_metrics_histogram;

void preempt_metrics_observe(preempt_metrics_histogram *histogram, double seconds);

/* Who a series is about: a client (a process's connection) and the Slurm job step it runs in. */
typedef struct preempt_metrics_who {
  uint32_t client_id, pid, uid;
  uint32_t job_id, step_id;      /* 0, 0: none */
  char program[32];              /* as the client named itself: any bytes, escaped when written */
  char gpu[33];                  /* the GPU's UUID, 32 hex digits as preemptctl writes it */
} preempt_metrics_who;

typedef struct preempt_metrics_client_gpu {
  preempt_metrics_who who;
  int32_t priority;              /* granted (Slurm's for a job's process) */
  uint64_t launches, evictions;
  double run_seconds, wait_seconds;
  preempt_metrics_histogram eviction_latency;
} preempt_metrics_client_gpu;

typedef struct preempt_metrics_client_memory {
  preempt_metrics_who who;
  uint64_t reserved_bytes, waiting_bytes;
} preempt_metrics_client_memory;

typedef struct preempt_metrics_gpu {
  char gpu[33];
  char policy[16];
  uint64_t decisions, evictions;
} preempt_metrics_gpu;

typedef struct preempt_metrics_snapshot {
  char sharing[16];              /* "mps" or "time-slicing" */
  uint32_t clients;              /* registered */
  uint32_t gpu_count, client_gpu_count, memory_count;
  preempt_metrics_gpu gpus[16];
  preempt_metrics_client_gpu *client_gpus;     /* client_gpu_count, the caller's */
  preempt_metrics_client_memory *memory;       /* memory_count, the caller's */
} preempt_metrics_snapshot;

/* The text of every family with HELP and TYPE lines, in a malloc'd buffer (*text, *length). 0, or -1 (no memory). */
int preempt_metrics_format(const preempt_metrics_snapshot *snapshot, char **text, size_t *length);

#ifdef __cplusplus
}
#endif

#endif
