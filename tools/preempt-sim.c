/* preempt-sim.c: runs a scheduling scenario under a named policy on a virtual clock; prints the trace and metrics.
 * FLEP §5.2 and §6.3 (HPF, FFS, ANTT, STP, GPU share), EffiSha §7 and §8.5 (PIV, DPRR, NTT).
 *
 * Usage: preempt-sim [--policy fifo|hpf|ffs|piv|dprr|flexsched] [--json] SCENARIO
 *
 * Scenario format: one directive per line; '#' starts a comment; fields are NAME=VALUE, separated by blanks.
 * Times are microseconds, or milliseconds with an "ms" suffix ("3ms", "1.5ms"); "us" is accepted too.
 *   gpu sms=N [sharing=mps|time-slicing]
 *                                  SMs of the simulated GPU (required, once, before any kernel; 1..256), and
 *                                  how clients share it (mps, the default: their kernels run side by side)
 *   policy NAME                    policy when --policy is not given
 *   param NAME=VALUE ...           max_overhead (0..1, FFS), ffs_min_epoch, hpf_spatial (0|1),
 *                                  dprr_age_step, dprr_age_cap, dprr_slice_unit (preempt_sched_params_set)
 *   until TIME                     stop the clock at TIME (for kernels that never end, FLEP §6.3.3)
 *   kernel NAME FIELD=VALUE ...    a launch; NAME is up to 31 characters, unique. Fields:
 *       duration=TIME   standalone time on its SMs (required, > 0)
 *       arrive=TIME     launch time (0)               client=N      owning client (0)
 *       priority=N      larger is more urgent (0)     weight=N      FFS weight (1)
 *       sms=N           SMs it needs (0: whole GPU)   predict=TIME  what the scheduler is told (duration)
 *       evict=TIME      eviction latency (0)          resume=TIME   redo after a full eviction (0)
 *       cost=TIME       eviction cost the policy assumes (evict + resume)
 * Errors name FILE:LINE and exit with status 1; usage errors exit with status 2. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "preempt/json_text.h"
#include "preempt/schedule_sim.h"

#define MAX_LINE 1024

typedef struct scenario {
  uint32_t sm_count;
  bool time_slicing;
  char policy[16];
  preempt_sched_params params;
  preempt_usec until;
  uint32_t kernel_count;
  preempt_sim_kernel kernels[PREEMPT_SCHED_MAX_KERNELS];
} scenario;

static const char *scenario_path;
static unsigned scenario_line;

static int fail(const char *message, const char *detail) {
  fprintf(stderr, "preempt-sim: %s:%u: %s%s%s%s\n", scenario_path, scenario_line, message, detail ? " \"" : "",
          detail ? detail : "", detail ? "\"" : "");
  return 1;
}

static int parse_number(const char *text, double *out) {
  char *end = NULL;
  errno = 0;
  double value = strtod(text, &end);
  if (end == text || errno != 0 || value != value || value - value != 0)
    return 0;
  if (*end == 0 || strcmp(end, "us") == 0) {
    *out = value;
    return 1;
  }
  return 0;
}

static int parse_time(const char *text, double *out) {
  size_t length = strlen(text);
  if (length > 2 && strcmp(text + length - 2, "ms") == 0) {
    char copy[64];
    if (length - 2 >= sizeof copy)
      return 0;
    memcpy(copy, text, length - 2);
    copy[length - 2] = 0;
    if (!parse_number(copy, out))
      return 0;
    *out *= 1000.0;
    return *out >= 0;
  }
  return parse_number(text, out) && *out >= 0;
}

static int parse_integer(const char *text, long min, long max, long *out) {
  char *end = NULL;
  errno = 0;
  long value = strtol(text, &end, 10);
  if (end == text || *end || errno != 0 || value < min || value > max)
    return 0;
  *out = value;
  return 1;
}

/* Splits "name=value" in place; returns the value or NULL. */
static char *split_field(char *field) {
  char *equals = strchr(field, '=');
  if (!equals || equals == field || equals[1] == 0)
    return NULL;
  *equals = 0;
  return equals + 1;
}

static int parse_kernel(scenario *s, char *name, char *rest) {
  if (s->sm_count == 0)
    return fail("\"gpu sms=N\" must come before the first kernel", NULL);
  if (!name)
    return fail("kernel without a name", NULL);
  if (strlen(name) >= sizeof s->kernels[0].name || strchr(name, '='))
    return fail("kernel name must be 1-31 characters without '='", name);
  for (uint32_t i = 0; i < s->kernel_count; i++)
    if (strcmp(s->kernels[i].name, name) == 0)
      return fail("duplicate kernel name", name);
  if (s->kernel_count == PREEMPT_SCHED_MAX_KERNELS)
    return fail("too many kernels (at most 256)", NULL);
  preempt_sim_kernel *k = &s->kernels[s->kernel_count];
  preempt_sim_kernel_default(k);
  strcpy(k->name, name);
  int has_duration = 0;
  for (char *field = strtok(rest, " \t"); field; field = strtok(NULL, " \t")) {
    char *value = split_field(field);
    long integer = 0;
    double time = 0;
    if (!value)
      return fail("expected FIELD=VALUE, got", field);
    if (strcmp(field, "client") == 0 || strcmp(field, "weight") == 0 || strcmp(field, "sms") == 0) {
      long min = strcmp(field, "weight") == 0 ? 1 : 0;
      if (!parse_integer(value, min, 1000000, &integer))
        return fail(min ? "expected an integer >= 1 for weight, got" : "expected a non-negative integer, got", value);
      if (field[0] == 'c')
        k->client_id = (uint32_t)integer;
      else if (field[0] == 'w')
        k->weight = (uint32_t)integer;
      else
        k->sms_needed = (uint32_t)integer;
    } else if (strcmp(field, "priority") == 0) {
      if (!parse_integer(value, -1000000, 1000000, &integer))
        return fail("expected an integer priority, got", value);
      k->priority = (int32_t)integer;
    } else if (strcmp(field, "duration") == 0 || strcmp(field, "arrive") == 0 || strcmp(field, "predict") == 0 ||
               strcmp(field, "evict") == 0 || strcmp(field, "resume") == 0 || strcmp(field, "cost") == 0) {
      if (!parse_time(value, &time))
        return fail("expected a time (microseconds, or NNms), got", value);
      if (strcmp(field, "duration") == 0) {
        k->duration = time;
        has_duration = 1;
      } else if (strcmp(field, "arrive") == 0) {
        k->arrival = time;
      } else if (strcmp(field, "predict") == 0) {
        k->predicted = time;
      } else if (strcmp(field, "evict") == 0) {
        k->evict_latency = time;
      } else if (strcmp(field, "resume") == 0) {
        k->resume_cost = time;
      } else {
        k->cost_estimate = time;
      }
    } else {
      return fail("unknown kernel field", field);
    }
  }
  if (!has_duration || k->duration <= 0)
    return fail("kernel needs duration=TIME greater than 0", name);
  s->kernel_count++;
  return 0;
}

/* The names, ranges and messages are the library's (preempt_sched_params_set), shared with preemptd --param. */
static int parse_param(scenario *s, char *rest) {
  int any = 0;
  for (char *field = strtok(rest, " \t"); field; field = strtok(NULL, " \t")) {
    char *value = split_field(field);
    any = 1;
    if (!value)
      return fail("expected NAME=VALUE, got", field);
    const char *why = NULL;
    preempt_sched_status status = preempt_sched_params_set(&s->params, field, value, &why);
    if (status != PREEMPT_SCHED_OK)
      return fail(why, status == PREEMPT_SCHED_UNKNOWN_PARAMETER ? field : value);
  }
  return any ? 0 : fail("param needs NAME=VALUE", NULL);
}

static int parse_scenario(FILE *file, scenario *s) {
  char line[MAX_LINE + 2];
  memset(s, 0, sizeof *s);
  preempt_sched_params_default(&s->params);
  scenario_line = 0;
  while (fgets(line, sizeof line, file)) {
    scenario_line++;
    size_t length = strlen(line);
    if (length > MAX_LINE || (length == MAX_LINE + 1 && line[length - 1] != '\n'))
      return fail("line longer than 1024 characters", NULL);
    if (memchr(line, 0, length) != NULL && strlen(line) != length)
      return fail("NUL byte in line", NULL);
    char *comment = strchr(line, '#');
    if (comment)
      *comment = 0;
    char *directive = strtok(line, " \t\r\n");
    if (!directive)
      continue;
    char *rest = strtok(NULL, "\r\n");
    char empty[1] = "";
    if (!rest)
      rest = empty;
    if (strcmp(directive, "gpu") == 0) {
      char *field = strtok(rest, " \t");
      char *value = field ? split_field(field) : NULL;
      long sms = 0;
      if (s->sm_count)
        return fail("gpu given twice", NULL);
      if (!value || strcmp(field, "sms") != 0 || !parse_integer(value, 1, PREEMPT_SCHED_MAX_SMS, &sms))
        return fail("expected \"gpu sms=N\" with N in 1..256", NULL);
      s->sm_count = (uint32_t)sms;
      char *sharing = strtok(NULL, " \t");
      char *mode = sharing ? split_field(sharing) : NULL;
      if (sharing && (!mode || strcmp(sharing, "sharing") != 0 ||
                      (strcmp(mode, "mps") != 0 && strcmp(mode, "time-slicing") != 0) || strtok(NULL, " \t")))
        return fail("expected \"gpu sms=N [sharing=mps|time-slicing]\"", NULL);
      s->time_slicing = mode && strcmp(mode, "time-slicing") == 0;
    } else if (strcmp(directive, "policy") == 0) {
      char *name = strtok(rest, " \t");
      const preempt_sched_policy *policy;
      if (!name || strtok(NULL, " \t") || preempt_sched_policy_by_name(name, &policy) != PREEMPT_SCHED_OK)
        return fail("expected \"policy fifo|hpf|ffs|piv|dprr|flexsched\", got", name ? name : "");
      snprintf(s->policy, sizeof s->policy, "%s", name);
    } else if (strcmp(directive, "param") == 0) {
      if (parse_param(s, rest))
        return 1;
    } else if (strcmp(directive, "until") == 0) {
      char *value = strtok(rest, " \t");
      if (!value || strtok(NULL, " \t") || !parse_time(value, &s->until) || s->until <= 0)
        return fail("expected \"until TIME\" with TIME > 0", NULL);
    } else if (strcmp(directive, "kernel") == 0) {
      char *name = strtok(rest, " \t");
      char *fields = name ? strtok(NULL, "") : NULL;
      char none[1] = "";
      if (parse_kernel(s, name, fields ? fields : none))
        return 1;
    } else {
      return fail("unknown directive", directive);
    }
  }
  if (ferror(file))
    return fail("read error", strerror(errno));
  scenario_line++;
  if (s->sm_count == 0)
    return fail("no \"gpu sms=N\" line", NULL);
  if (s->kernel_count == 0)
    return fail("no kernels", NULL);
  return 0;
}

/* "all", or ranges like "0-4,7". */
static void format_sms(const preempt_sched_decision *decision, char *out, size_t size) {
  if (decision->all_sms) {
    snprintf(out, size, "all");
    return;
  }
  size_t used = 0;
  out[0] = 0;
  for (uint32_t sm = 0; sm < PREEMPT_SCHED_MAX_SMS; sm++) {
    if (!preempt_sm_set_has(&decision->sms, sm) || (sm > 0 && preempt_sm_set_has(&decision->sms, sm - 1)))
      continue;
    uint32_t last = sm;
    while (last + 1 < PREEMPT_SCHED_MAX_SMS && preempt_sm_set_has(&decision->sms, last + 1))
      last++;
    int written = last == sm ? snprintf(out + used, size - used, "%s%u", used ? "," : "", sm)
                             : snprintf(out + used, size - used, "%s%u-%u", used ? "," : "", sm, last);
    if (written < 0 || (size_t)written >= size - used)
      return;
    used += (size_t)written;
  }
}

static const char *action_name(preempt_sched_action action) {
  return action == PREEMPT_ACTION_RUN     ? "run"
         : action == PREEMPT_ACTION_EVICT ? "evict"
         : action == PREEMPT_ACTION_QUOTA ? "quota"
                                          : "nothing";
}

static const char *kernel_name(const scenario *s, uint32_t id) {
  return id >= 1 && id <= s->kernel_count ? s->kernels[id - 1].name : "-";
}

static void print_text(const scenario *s, const char *policy, const preempt_sim_result *r) {
  printf("policy %s, %u SMs%s, %u kernels\n", policy, s->sm_count, s->time_slicing ? " (time-slicing)" : "",
         s->kernel_count);
  for (uint32_t i = 0; i < r->trace_count; i++) {
    const preempt_sim_trace_entry *e = &r->trace[i];
    char sms[PREEMPT_SCHED_MAX_SMS * 8];
    format_sms(&e->decision, sms, sizeof sms);
    printf("%.1f %s %s: ", e->time, preempt_sched_event_name(e->event.kind), kernel_name(s, e->event.kernel_id));
    if (e->decision.action == PREEMPT_ACTION_NOTHING)
      printf("nothing\n");
    else
      printf("%s %s sms=%s\n", action_name(e->decision.action), kernel_name(s, e->decision.kernel_id), sms);
  }
  for (uint32_t i = 0; i < r->kernel_count; i++) {
    const preempt_sim_kernel_result *k = &r->kernels[i];
    if (k->finished)
      printf("kernel %s: finish %.1f turnaround %.1f ntt %.3f evictions %u\n", s->kernels[i].name, k->finish,
             k->turnaround, k->ntt, k->evictions);
    else
      printf("kernel %s: unfinished evictions %u\n", s->kernels[i].name, k->evictions);
  }
  for (uint32_t c = 0; c < r->client_count; c++)
    printf("client %u: gpu share %.3f\n", r->clients[c].client_id, r->clients[c].gpu_share);
  printf("finished %u of %u at %.1f: ANTT %.3f STP %.3f\n", r->finished, r->kernel_count, r->end_time, r->antt, r->stp);
}

/* Kernel names are the scenario file's bytes: preempt_json_write_string keeps the document valid JSON whatever they
 * are. 0, or -1 as soon as stdout refuses a name. */
static int print_json(const scenario *s, const char *policy, const preempt_sim_result *r) {
  printf("{\"policy\":\"%s\",\"sms\":%u,\"trace\":[", policy, s->sm_count);
  for (uint32_t i = 0; i < r->trace_count; i++) {
    const preempt_sim_trace_entry *e = &r->trace[i];
    char sms[PREEMPT_SCHED_MAX_SMS * 8];
    format_sms(&e->decision, sms, sizeof sms);
    printf("%s{\"time\":%.3f,\"event\":\"%s\",\"kernel\":", i ? "," : "", e->time,
           preempt_sched_event_name(e->event.kind));
    if (preempt_json_write_string(stdout, e->event.kernel_id ? kernel_name(s, e->event.kernel_id) : NULL) != 0)
      return -1;
    printf(",\"action\":\"%s\"", action_name(e->decision.action));
    if (e->decision.action != PREEMPT_ACTION_NOTHING) {
      printf(",\"target\":");
      if (preempt_json_write_string(stdout, kernel_name(s, e->decision.kernel_id)) != 0)
        return -1;
      printf(",\"sms\":\"%s\"", sms);
    }
    printf("}");
  }
  printf("],\"kernels\":[");
  for (uint32_t i = 0; i < r->kernel_count; i++) {
    const preempt_sim_kernel_result *k = &r->kernels[i];
    printf("%s{\"name\":", i ? "," : "");
    if (preempt_json_write_string(stdout, s->kernels[i].name) != 0)
      return -1;
    printf(",\"client\":%u,\"finished\":%s", s->kernels[i].client_id, k->finished ? "true" : "false");
    if (k->finished)
      printf(",\"finish\":%.3f,\"turnaround\":%.3f,\"ntt\":%.6f", k->finish, k->turnaround, k->ntt);
    printf(",\"evictions\":%u}", k->evictions);
  }
  printf("],\"clients\":[");
  for (uint32_t c = 0; c < r->client_count; c++)
    printf("%s{\"client\":%u,\"gpu_share\":%.6f}", c ? "," : "", r->clients[c].client_id, r->clients[c].gpu_share);
  printf("],\"finished\":%u,\"end\":%.3f,\"antt\":%.6f,\"stp\":%.6f}\n", r->finished, r->end_time, r->antt, r->stp);
  return 0;
}

static int usage(void) {
  fprintf(stderr, "usage: preempt-sim [--policy fifo|hpf|ffs|piv|dprr|flexsched] [--json] SCENARIO\n");
  return 2;
}

int main(int argc, char **argv) {
  const char *policy_name = NULL;
  int json = 0;
  scenario_path = NULL;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--json") == 0)
      json = 1;
    else if (strcmp(argv[i], "--policy") == 0 && i + 1 < argc)
      policy_name = argv[++i];
    else if (strncmp(argv[i], "--policy=", 9) == 0)
      policy_name = argv[i] + 9;
    else if (argv[i][0] == '-' && argv[i][1] != 0)
      return usage();
    else if (scenario_path)
      return usage();
    else
      scenario_path = argv[i];
  }
  if (!scenario_path)
    return usage();
  static scenario s;
  FILE *file = strcmp(scenario_path, "-") == 0 ? stdin : fopen(scenario_path, "r");
  if (!file) {
    fprintf(stderr, "preempt-sim: %s: cannot open: %s\n", scenario_path, strerror(errno));
    return 1;
  }
  int failed = parse_scenario(file, &s);
  if (file != stdin)
    fclose(file);
  if (failed)
    return 1;
  if (!policy_name)
    policy_name = s.policy[0] ? s.policy : NULL;
  if (!policy_name) {
    fprintf(stderr, "preempt-sim: %s: no policy (give --policy or a \"policy\" line)\n", scenario_path);
    return 1;
  }
  preempt_sim_config config;
  memset(&config, 0, sizeof config);
  if (preempt_sched_policy_by_name(policy_name, &config.policy) != PREEMPT_SCHED_OK) {
    fprintf(stderr, "preempt-sim: unknown policy \"%s\" (fifo, hpf, ffs, piv, dprr, flexsched)\n", policy_name);
    return 2;
  }
  config.sm_count = s.sm_count;
  config.time_slicing = s.time_slicing;
  config.params = s.params;
  config.until = s.until;
  static preempt_sim_result result;
  preempt_sched_status status = preempt_sim_run(&config, s.kernels, s.kernel_count, &result);
  int written = 0;
  if (json)
    written = print_json(&s, policy_name, &result);
  else
    print_text(&s, policy_name, &result);
  int write_failed = written != 0 || fflush(stdout) != 0 || ferror(stdout);
  int write_errno = errno; /* the write's, before free() may touch it */
  preempt_sim_result_free(&result);
  if (write_failed) {
    fprintf(stderr, "preempt-sim: cannot write the results: %s\n", strerror(write_errno));
    return 1;
  }
  if (status != PREEMPT_SCHED_OK) {
    fprintf(stderr, "preempt-sim: %s: simulation stopped: %s\n", scenario_path, preempt_sched_status_name(status));
    return 1;
  }
  return 0;
}
