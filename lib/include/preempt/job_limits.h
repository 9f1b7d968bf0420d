/* job_limits.h: what a Slurm job may ask of preempt (GPU priority, GPU memory), from the plugin's plugstack.conf
 * arguments: a default, then rules per partition and per QOS. Issue 43; EffiSha §6.4 (priority limits per user). */
#ifndef PREEMPT_JOB_LIMITS_H
#define PREEMPT_JOB_LIMITS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PREEMPT_JOB_LIMIT_RULES 32
#define PREEMPT_JOB_LIMIT_NAME_BYTES 64
#define PREEMPT_JOB_LIMIT_PATH_BYTES 256

typedef enum preempt_job_rule_kind {
  PREEMPT_JOB_RULE_DEFAULT = 0,
  PREEMPT_JOB_RULE_PARTITION = 1,
  PREEMPT_JOB_RULE_QOS = 2,
} preempt_job_rule_kind;

/* One rule; a field it does not set falls through to the next rule (QOS, then partition, then the default). */
typedef struct preempt_job_rule {
  preempt_job_rule_kind kind;
  char name[PREEMPT_JOB_LIMIT_NAME_BYTES]; /* partition or QOS name; empty for the default */
  bool has_priority, has_mem;
  int32_t max_priority;                    /* -20..20 */
  uint64_t max_mem_bytes;                  /* 0: no limit */
} preempt_job_rule;

typedef struct preempt_job_limits {
  char socket[PREEMPT_JOB_LIMIT_PATH_BYTES];  /* socket=PATH; empty: the daemon's default */
  char preload[PREEMPT_JOB_LIMIT_PATH_BYTES]; /* preload=PATH: libpreempt_mem.so for --gpu-preload */
  uint32_t count;                             /* rules[0] is the default (priority 0, no memory limit) */
  preempt_job_rule rules[PREEMPT_JOB_LIMIT_RULES];
} preempt_job_limits;

/* What applies to one job after the rules. */
typedef struct preempt_job_grant_limits {
  int32_t max_priority;
  uint64_t max_mem_bytes;   /* 0: none */
  const char *priority_from, *mem_from; /* "default", "partition gpu", ...: for messages; point into `text` */
  char text[2][PREEMPT_JOB_LIMIT_NAME_BYTES + 16];
} preempt_job_grant_limits;

/* Parses the plugin's arguments: socket=PATH, preload=PATH, max_priority=N, max_mem=SIZE,
 * partition=NAME:max_priority=N[:max_mem=SIZE], qos=NAME:... (SIZE as preempt_parse_byte_count; "none": no limit).
 * 0, or -1 with `why` naming the argument. */
int preempt_job_limits_parse(preempt_job_limits *limits, int argc, char *const argv[], char *why, size_t why_bytes);
/* The limits of a job in `partition` under `qos` (either may be NULL): each field from the job's QOS rule, else its
 * partition's, else the default. */
void preempt_job_limits_for(const preempt_job_limits *limits, const char *partition, const char *qos,
                            preempt_job_grant_limits *out);
/* Whether a request fits: 0, or -1 with `why` ("--gpu-priority=15 is above 10, the most partition debug allows"). */
int preempt_job_request_check(const preempt_job_grant_limits *limits, bool asked_priority, int32_t priority,
                              bool asked_mem, uint64_t mem_bytes, char *why, size_t why_bytes);

/* A job step as Slurm's tools write it: "42.0", "42.batch" (its special step ids by name); "-" without a job. */
void preempt_job_step_text(uint32_t job_id, uint32_t step_id, char *text, size_t bytes);
/* The step alone: "0", "batch", "extern", "interactive". */
void preempt_job_step_name(uint32_t step_id, char *text, size_t bytes);

#ifdef __cplusplus
}
#endif

#endif
