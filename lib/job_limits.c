/* job_limits.c: the Slurm plugin's limits (plugstack.conf arguments) and the check of a job's request against them.
 * Issue 43 (a job cannot ask for more than its grant); EffiSha §6.4 (a user's priority limit). */
#include "preempt/job_limits.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "preempt/byte_count.h"
#include "preempt/daemon_protocol.h"

static int fail(char *why, size_t why_bytes, const char *argument, const char *problem) {
  snprintf(why, why_bytes, "plugstack.conf argument '%s': %s", argument, problem);
  return -1;
}

static int parse_priority(const char *text, int32_t *out) {
  char *end = NULL;
  errno = 0;
  long value = strtol(text, &end, 10);
  if (errno || end == text || *end != '\0' || value < PREEMPT_PRIORITY_MIN || value > PREEMPT_PRIORITY_MAX)
    return -1;
  *out = (int32_t)value;
  return 0;
}

/* "none" is no limit; 0 would read as none too, so it is refused rather than meaning something else. */
static int parse_mem(const char *text, uint64_t *out) {
  if (strcmp(text, "none") == 0) {
    *out = 0;
    return 0;
  }
  return preempt_parse_byte_count(text, out) == 0 && *out > 0 ? 0 : -1;
}

/* max_priority=N or max_mem=SIZE into the rule. */
static int parse_field(preempt_job_rule *rule, const char *field, const char *argument, char *why, size_t why_bytes) {
  if (strncmp(field, "max_priority=", 13) == 0) {
    if (parse_priority(field + 13, &rule->max_priority) != 0)
      return fail(why, why_bytes, argument, "max_priority takes an integer from -20 to 20");
    rule->has_priority = true;
    return 0;
  }
  if (strncmp(field, "max_mem=", 8) == 0) {
    if (parse_mem(field + 8, &rule->max_mem_bytes) != 0)
      return fail(why, why_bytes, argument, "max_mem takes bytes with K, M, G or T, or none");
    rule->has_mem = true;
    return 0;
  }
  return fail(why, why_bytes, argument, "expected max_priority=N or max_mem=SIZE");
}

static int copy_path(char *field, const char *value, const char *argument, char *why, size_t why_bytes) {
  if (value[0] != '/' || strlen(value) >= PREEMPT_JOB_LIMIT_PATH_BYTES)
    return fail(why, why_bytes, argument, "expected an absolute path");
  snprintf(field, PREEMPT_JOB_LIMIT_PATH_BYTES, "%s", value);
  return 0;
}

/* partition=NAME:field[:field] or qos=NAME:field[:field]. */
static int parse_rule(preempt_job_limits *limits, preempt_job_rule_kind kind, const char *value, const char *argument,
                      char *why, size_t why_bytes) {
  if (limits->count >= PREEMPT_JOB_LIMIT_RULES)
    return fail(why, why_bytes, argument, "too many partition and qos rules (32 at most)");
  char copy[512];
  if (strlen(value) >= sizeof copy)
    return fail(why, why_bytes, argument, "too long");
  snprintf(copy, sizeof copy, "%s", value);
  char *name = copy, *fields = strchr(copy, ':');
  if (!fields || fields == name)
    return fail(why, why_bytes, argument, "expected NAME:max_priority=N[:max_mem=SIZE]");
  *fields++ = '\0';
  if (strlen(name) >= PREEMPT_JOB_LIMIT_NAME_BYTES)
    return fail(why, why_bytes, argument, "name too long");
  for (uint32_t i = 1; i < limits->count; i++)
    if (limits->rules[i].kind == kind && strcmp(limits->rules[i].name, name) == 0)
      return fail(why, why_bytes, argument, "a second rule for the same name");
  preempt_job_rule rule = {.kind = kind};
  snprintf(rule.name, sizeof rule.name, "%s", name);
  for (char *field = fields, *next; field; field = next) {
    next = strchr(field, ':');
    if (next)
      *next++ = '\0';
    if (parse_field(&rule, field, argument, why, why_bytes) != 0)
      return -1;
  }
  limits->rules[limits->count++] = rule;
  return 0;
}

int preempt_job_limits_parse(preempt_job_limits *limits, int argc, char *const argv[], char *why, size_t why_bytes) {
  memset(limits, 0, sizeof *limits);
  /* Without a word from the administrator a job may not rise above the default priority (EffiSha §6.4's rule for
   * users) and has no memory limit of its own. */
  limits->rules[0] = (preempt_job_rule){.kind = PREEMPT_JOB_RULE_DEFAULT, .has_priority = true};
  limits->count = 1;
  for (int i = 0; i < argc; i++) {
    const char *argument = argv[i];
    if (strncmp(argument, "socket=", 7) == 0) {
      if (copy_path(limits->socket, argument + 7, argument, why, why_bytes) != 0)
        return -1;
    } else if (strncmp(argument, "preload=", 8) == 0) {
      if (copy_path(limits->preload, argument + 8, argument, why, why_bytes) != 0)
        return -1;
    } else if (strncmp(argument, "partition=", 10) == 0) {
      if (parse_rule(limits, PREEMPT_JOB_RULE_PARTITION, argument + 10, argument, why, why_bytes) != 0)
        return -1;
    } else if (strncmp(argument, "qos=", 4) == 0) {
      if (parse_rule(limits, PREEMPT_JOB_RULE_QOS, argument + 4, argument, why, why_bytes) != 0)
        return -1;
    } else if (strncmp(argument, "max_priority=", 13) == 0 || strncmp(argument, "max_mem=", 8) == 0) {
      if (parse_field(&limits->rules[0], argument, argument, why, why_bytes) != 0)
        return -1;
    } else {
      return fail(why, why_bytes, argument,
                  "unknown; expected socket=, preload=, max_priority=, max_mem=, partition= or qos=");
    }
  }
  return 0;
}

static const preempt_job_rule *rule_named(const preempt_job_limits *limits, preempt_job_rule_kind kind,
                                          const char *name) {
  if (!name || !name[0])
    return NULL;
  for (uint32_t i = 1; i < limits->count; i++)
    if (limits->rules[i].kind == kind && strcmp(limits->rules[i].name, name) == 0)
      return &limits->rules[i];
  return NULL;
}

static void describe(const preempt_job_rule *rule, char *text, size_t bytes) {
  snprintf(text, bytes, "%s%s", rule->kind == PREEMPT_JOB_RULE_QOS         ? "qos "
                                : rule->kind == PREEMPT_JOB_RULE_PARTITION ? "partition "
                                                                           : "the default",
           rule->name);
}

void preempt_job_limits_for(const preempt_job_limits *limits, const char *partition, const char *qos,
                            preempt_job_grant_limits *out) {
  const preempt_job_rule *order[3] = {rule_named(limits, PREEMPT_JOB_RULE_QOS, qos),
                                      rule_named(limits, PREEMPT_JOB_RULE_PARTITION, partition), &limits->rules[0]};
  memset(out, 0, sizeof *out);
  const preempt_job_rule *priority_rule = NULL, *mem_rule = NULL;
  for (int i = 0; i < 3; i++) {
    if (!order[i])
      continue;
    if (!priority_rule && order[i]->has_priority)
      priority_rule = order[i];
    if (!mem_rule && order[i]->has_mem)
      mem_rule = order[i];
  }
  priority_rule = priority_rule ? priority_rule : &limits->rules[0]; /* the default always has one */
  out->max_priority = priority_rule->max_priority;
  describe(priority_rule, out->text[0], sizeof out->text[0]);
  out->priority_from = out->text[0];
  if (mem_rule) {
    out->max_mem_bytes = mem_rule->max_mem_bytes;
    describe(mem_rule, out->text[1], sizeof out->text[1]);
    out->mem_from = out->text[1];
  } else {
    out->mem_from = "no rule";
  }
}

int preempt_job_request_check(const preempt_job_grant_limits *limits, bool asked_priority, int32_t priority,
                              bool asked_mem, uint64_t mem_bytes, char *why, size_t why_bytes) {
  if (asked_priority && priority > limits->max_priority) {
    snprintf(why, why_bytes, "--gpu-priority=%d is above %d, the most %s allows", (int)priority,
             (int)limits->max_priority, limits->priority_from);
    return -1;
  }
  if (asked_mem && limits->max_mem_bytes && mem_bytes > limits->max_mem_bytes) {
    char asked[32], most[32];
    preempt_format_byte_count(mem_bytes, asked, sizeof asked);
    preempt_format_byte_count(limits->max_mem_bytes, most, sizeof most);
    snprintf(why, why_bytes, "--gpu-mem=%s is above %s, the most %s allows", asked, most, limits->mem_from);
    return -1;
  }
  return 0;
}

void preempt_job_step_name(uint32_t step_id, char *text, size_t bytes) {
  /* slurm.h's SLURM_INTERACTIVE_STEP, SLURM_BATCH_SCRIPT and SLURM_EXTERN_CONT */
  static const struct {
    uint32_t id;
    const char *name;
  } special[] = {{0xfffffffau, "interactive"}, {0xfffffffbu, "batch"}, {0xfffffffcu, "extern"}};
  for (size_t i = 0; i < sizeof special / sizeof special[0]; i++)
    if (special[i].id == step_id) {
      snprintf(text, bytes, "%s", special[i].name);
      return;
    }
  snprintf(text, bytes, "%u", (unsigned)step_id);
}

void preempt_job_step_text(uint32_t job_id, uint32_t step_id, char *text, size_t bytes) {
  if (job_id == 0) {
    snprintf(text, bytes, "-");
    return;
  }
  char step[16];
  preempt_job_step_name(step_id, step, sizeof step);
  snprintf(text, bytes, "%u.%s", (unsigned)job_id, step);
}
