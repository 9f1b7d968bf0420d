/* settings.h: every PREEMPT_* environment setting the runtime reads, in one table, parsed in one place.
 * Issue 40 item 5 (one table of settings, parsed once); their meanings for users: docs/settings.md. */
#ifndef PREEMPT_SETTINGS_H
#define PREEMPT_SETTINGS_H

#include <stddef.h>
#include <stdint.h>

/* Their order is the table's (settings.c); a setting's bit in preempt_settings.given. */
typedef enum preempt_setting_id {
  PREEMPT_SETTING_QUIET,
  PREEMPT_SETTING_EVICT_READY,
  PREEMPT_SETTING_STRESS,
  PREEMPT_SETTING_STRESS_PERIOD_US,
  PREEMPT_SETTING_DAEMON,
  PREEMPT_SETTING_DAEMON_SOCKET,
  PREEMPT_SETTING_PRIORITY,
  PREEMPT_SETTING_WEIGHT,
  PREEMPT_SETTING_CHECK_INTERVAL,
  PREEMPT_SETTING_CHECK_PERIOD_US,
  PREEMPT_SETTING_ONE_WAVE,
  PREEMPT_SETTING_FORM,
  PREEMPT_SETTING_EVICT_BOUND_US,
  PREEMPT_SETTING_PROMPT,
  PREEMPT_SETTING_INTASK,
  PREEMPT_SETTING_INTASK_SHAPE,
  PREEMPT_SETTING_INTASK_PERIOD_US,
  PREEMPT_SETTING_LONG_US,
  PREEMPT_SETTING_TIME_EVICTIONS,
  PREEMPT_SETTING_MEM,
  PREEMPT_SETTING_MEM_TIMEOUT_MS,
  PREEMPT_SETTING_MEM_POLICY,
  PREEMPT_SETTING_MEM_LEDGER,
  PREEMPT_SETTING_MEM_BUDGET,
  PREEMPT_SETTING_MEM_AHEAD,
  PREEMPT_SETTING_MEM_SEGMENT,
  PREEMPT_SETTING_MEM_TEST_HOLD_NS,
  PREEMPT_SETTING_COUNT,
} preempt_setting_id;

#define PREEMPT_SETTING_TEXT_BYTES 108 /* a Unix socket path's room */
#define PREEMPT_SETTINGS_MAX_COMPLAINTS 8

/* Values after parsing: each the user's where it was well formed, else the table's fallback. Choices hold the
 * value of the word given (the enums of runtime.h and mem_ledger.h); numbers and byte counts as parsed. */
typedef struct preempt_settings {
  uint64_t given; /* bit per preempt_setting_id: set and well formed */
  int quiet;
  int evict_ready; /* -1 auto, 0, 1 */
  int stress;      /* 0, 1, 2 (verbose) */
  long long stress_period_us;
  int daemon;      /* 0 off, 1 on */
  char daemon_socket[PREEMPT_SETTING_TEXT_BYTES];
  long long priority;
  long long weight;
  long long check_interval; /* 0: not set, the adaptive interval */
  long long check_period_us;
  int one_wave_persistent;
  int form;         /* preempt_form */
  long long evict_bound_us; /* 0: auto does not weigh eviction latency */
  int prompt;       /* preempt_prompt_mode */
  int intask;       /* preempt_intask_mode */
  int intask_shape; /* preempt_intask_shape */
  long long intask_period_us;
  long long long_us;
  int time_evictions;
  int mem;
  long long mem_timeout_ms; /* -1: no limit */
  int mem_policy;           /* preempt_mem_policy */
  int mem_ledger_shared;
  unsigned long long mem_budget; /* 0: none */
  unsigned long long mem_ahead;
  char mem_segment[PREEMPT_SETTING_TEXT_BYTES];
  long long mem_test_hold_ns;
  /* What was malformed, one sentence each ("ignoring NAME='value': expected ...; using ..."). */
  unsigned complaint_count;
  char complaints[PREEMPT_SETTINGS_MAX_COMPLAINTS][192];
} preempt_settings;

/* Whether the user set `id` and it was well formed (not the default). */
static inline int preempt_setting_given(const preempt_settings *settings, preempt_setting_id id) {
  return (int)((settings->given >> id) & 1);
}

typedef const char *(*preempt_settings_lookup)(const char *name, void *context);

/* Parses every setting from `lookup` (getenv's shape): plain code over plain data, for tests. Returns the
 * number of complaints. */
unsigned preempt_settings_parse(preempt_settings *out, preempt_settings_lookup lookup, void *context);

/* The process's settings, read from the environment the first time and again when `again` (after
 * preempt_shutdown: tests change the environment between runs). *fresh (where not NULL) is 1 when this call read
 * them, so that exactly one caller reports the complaints. A copy: no lock is held over its use. */
void preempt_settings_load(int again, preempt_settings *copy, int *fresh);

/* The table, for documentation and tests: name, accepted values, default, meaning. */
typedef struct preempt_setting_doc {
  const char *name, *values, *fallback, *meaning;
} preempt_setting_doc;
const preempt_setting_doc *preempt_setting_describe(preempt_setting_id id);

#endif
