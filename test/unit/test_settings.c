/* test_settings.c: the runtime's table of PREEMPT_* settings and its one parser (runtime-host/settings.c).
 * Issue 40 item 5. With --names it prints the table's names, which test/lit/unit/settings.test holds against the docs. */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "preempt/daemon_protocol.h"
#include "settings.h"

/* A fake environment: pairs of name and value, ended by a NULL name. */
typedef struct pair {
  const char *name, *value;
} pair;

static const char *lookup_pairs(const char *name, void *context) {
  for (const pair *entry = context; entry->name; entry++)
    if (strcmp(entry->name, name) == 0)
      return entry->value;
  return NULL;
}

/* Each setting's own default, given as a value: every one parses. */
static const char *lookup_defaults(const char *name, void *context) {
  (void)context;
  for (int id = 0; id < PREEMPT_SETTING_COUNT; id++)
    if (strcmp(preempt_setting_describe(id)->name, name) == 0)
      return preempt_setting_describe(id)->fallback;
  return NULL;
}

static int complained(const preempt_settings *settings, const char *text) {
  for (unsigned index = 0; index < settings->complaint_count; index++)
    if (strstr(settings->complaints[index], text))
      return 1;
  return 0;
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "--names") == 0) {
    for (int id = 0; id < PREEMPT_SETTING_COUNT; id++)
      printf("%s\n", preempt_setting_describe(id)->name);
    return 0;
  }
  preempt_settings settings;

  /* Nothing set: the defaults, nothing given, nothing said. */
  pair none[] = {{NULL, NULL}};
  CHECK_EQ_U64(preempt_settings_parse(&settings, lookup_pairs, none), 0);
  CHECK_EQ_U64(settings.given, 0);
  CHECK_EQ_U64(settings.quiet, 0);
  CHECK_EQ_U64(settings.evict_ready, (uint64_t)-1);
  CHECK_EQ_U64(settings.stress, 0);
  CHECK_EQ_U64(settings.stress_period_us, 2000);
  CHECK_EQ_U64(settings.daemon, 1);
  CHECK(strcmp(settings.daemon_socket, PREEMPT_DAEMON_SOCKET_DEFAULT) == 0);
  CHECK_EQ_U64(settings.weight, 1);
  CHECK_EQ_U64(settings.check_interval, 0);
  CHECK_EQ_U64(settings.check_period_us, 20);
  CHECK_EQ_U64(settings.one_wave_persistent, 0);
  CHECK_EQ_U64(settings.form, 0);
  CHECK_EQ_U64(settings.evict_bound_us, 50);
  CHECK_EQ_U64(settings.prompt, 0);
  CHECK_EQ_U64(settings.intask, 0);
  CHECK_EQ_U64(settings.intask_period_us, 10);
  CHECK_EQ_U64(settings.long_us, 500);
  CHECK_EQ_U64(settings.mem, 1);
  CHECK_EQ_U64(settings.mem_timeout_ms, 60000);
  CHECK_EQ_U64(settings.mem_budget, 0);
  CHECK_EQ_U64(settings.mem_ahead, 32ull << 20);
  CHECK(strcmp(settings.mem_segment, "/preempt-mem") == 0);

  /* Every default, written out by a user, is well formed and given. */
  CHECK_EQ_U64(preempt_settings_parse(&settings, lookup_defaults, NULL), 0);
  for (int id = 0; id < PREEMPT_SETTING_COUNT; id++)
    CHECK_EQ_U64(preempt_setting_given(&settings, id), *preempt_setting_describe(id)->fallback != '\0');

  /* Well-formed values, the edges of the ranges among them. */
  pair good[] = {{"PREEMPT_QUIET", "1"},
                 {"PREEMPT_EVICT_READY", "0"},
                 {"PREEMPT_STRESS", "2"},
                 {"PREEMPT_DAEMON", "off"},
                 {"PREEMPT_DAEMON_SOCKET", "/tmp/x.sock"},
                 {"PREEMPT_PRIORITY", "-20"},
                 {"PREEMPT_WEIGHT", "64"},
                 {"PREEMPT_STRESS_PERIOD_US", "20"},
                 {"PREEMPT_CHECK_INTERVAL", "1048576"},
                 {"PREEMPT_CHECK_PERIOD_US", "1"},
                 {"PREEMPT_ONE_WAVE", "persistent"},
                 {"PREEMPT_FORM", "drain"},
                 {"PREEMPT_EVICT_BOUND_US", "0"},
                 {"PREEMPT_PROMPT", "on"},
                 {"PREEMPT_INTASK", "off"},
                 {"PREEMPT_INTASK_SHAPE", "chunks"},
                 {"PREEMPT_INTASK_PERIOD_US", "25"},
                 {"PREEMPT_LONG_US", "0"},
                 {"PREEMPT_TIME_EVICTIONS", "1"},
                 {"PREEMPT_MEM", "0"},
                 {"PREEMPT_MEM_TIMEOUT_MS", "-1"},
                 {"PREEMPT_MEM_POLICY", "priority-mmu"},
                 {"PREEMPT_MEM_LEDGER", "shared"},
                 {"PREEMPT_MEM_BUDGET", "16G"},
                 {"PREEMPT_MEM_AHEAD", "0"},
                 {"PREEMPT_MEM_SEGMENT", "/mine"},
                 {"PREEMPT_MEM_TEST_HOLD_NS", "5000"},
                 {NULL, NULL}};
  CHECK_EQ_U64(preempt_settings_parse(&settings, lookup_pairs, good), 0);
  CHECK_EQ_U64(settings.given, (1ull << PREEMPT_SETTING_COUNT) - 1);
  CHECK_EQ_U64(settings.quiet, 1);
  CHECK_EQ_U64(settings.evict_ready, 0);
  CHECK_EQ_U64(settings.stress, 2);
  CHECK_EQ_U64(settings.stress_period_us, 20);
  CHECK_EQ_U64(settings.daemon, 0);
  CHECK(strcmp(settings.daemon_socket, "/tmp/x.sock") == 0);
  CHECK_EQ_U64(settings.priority, (uint64_t)-20);
  CHECK_EQ_U64(settings.weight, 64);
  CHECK_EQ_U64(settings.check_interval, 1u << 20);
  CHECK_EQ_U64(settings.check_period_us, 1);
  CHECK_EQ_U64(settings.one_wave_persistent, 1);
  CHECK_EQ_U64(settings.form, 2);
  CHECK_EQ_U64(settings.evict_bound_us, 0);
  CHECK_EQ_U64(settings.prompt, 1);
  CHECK_EQ_U64(settings.intask, 2);
  CHECK_EQ_U64(settings.intask_shape, 2);
  CHECK_EQ_U64(settings.intask_period_us, 25);
  CHECK_EQ_U64(settings.long_us, 0);
  CHECK_EQ_U64(settings.time_evictions, 1);
  CHECK_EQ_U64(settings.mem, 0);
  CHECK_EQ_U64(settings.mem_timeout_ms, (uint64_t)-1);
  CHECK_EQ_U64(settings.mem_policy, 3);
  CHECK_EQ_U64(settings.mem_ledger_shared, 1);
  CHECK_EQ_U64(settings.mem_budget, 16ull << 30);
  CHECK_EQ_U64(settings.mem_ahead, 0);
  CHECK(strcmp(settings.mem_segment, "/mine") == 0);
  CHECK_EQ_U64(settings.mem_test_hold_ns, 5000);

  /* Malformed: said by name and value, not given, and the default kept (PREEMPT_ONE_WAVE: the safe
   * "persistent"). Case matters: "On" is not "on". */
  pair bad[] = {{"PREEMPT_PRIORITY", "21"},       {"PREEMPT_WEIGHT", "0"},
                {"PREEMPT_CHECK_INTERVAL", "0"},  {"PREEMPT_ONE_WAVE", "sometimes"},
                {"PREEMPT_INTASK", "On"},         {"PREEMPT_MEM_TIMEOUT_MS", "-2"},
                {"PREEMPT_MEM_SEGMENT", "/a/b"},  {"PREEMPT_LONG_US", "5ms"},
                {NULL, NULL}};
  CHECK_EQ_U64(preempt_settings_parse(&settings, lookup_pairs, bad), 8);
  CHECK_EQ_U64(settings.given, 0);
  CHECK(complained(&settings, "ignoring PREEMPT_PRIORITY='21': expected -20..20; using unset"));
  CHECK(complained(&settings, "PREEMPT_WEIGHT='0'"));
  CHECK_EQ_U64(settings.weight, 1);
  CHECK(complained(&settings, "PREEMPT_CHECK_INTERVAL='0'"));
  CHECK_EQ_U64(settings.check_interval, 0);
  CHECK(complained(&settings, "PREEMPT_ONE_WAVE='sometimes': expected original, persistent; using persistent"));
  CHECK_EQ_U64(settings.one_wave_persistent, 1);
  CHECK(complained(&settings, "PREEMPT_INTASK='On': expected auto, on, off; using auto"));
  CHECK_EQ_U64(settings.intask, 0);
  CHECK(complained(&settings, "PREEMPT_MEM_TIMEOUT_MS='-2'"));
  CHECK_EQ_U64(settings.mem_timeout_ms, 60000);
  CHECK(complained(&settings, "PREEMPT_MEM_SEGMENT='/a/b'"));
  CHECK(strcmp(settings.mem_segment, "/preempt-mem") == 0);
  CHECK(complained(&settings, "PREEMPT_LONG_US='5ms'"));
  CHECK_EQ_U64(settings.long_us, 500);

  /* More: a path longer than a socket's room, bytes with an unknown unit, words where numbers go, values a
   * check would once have taken silently (PREEMPT_STRESS=yes was "off"). The count stops at the room kept. */
  char long_path[200];
  memset(long_path, 'p', sizeof long_path - 1);
  long_path[0] = '/';
  long_path[sizeof long_path - 1] = '\0';
  pair more[] = {{"PREEMPT_DAEMON_SOCKET", long_path}, {"PREEMPT_MEM_BUDGET", "12Q"},
                 {"PREEMPT_STRESS", "yes"},            {"PREEMPT_QUIET", "true"},
                 {"PREEMPT_TIME_EVICTIONS", "on"},     {"PREEMPT_FORM", "fast"},
                 {"PREEMPT_MEM", "maybe"},             {"PREEMPT_MEM_POLICY", "lifo"},
                 {"PREEMPT_EVICT_READY", "2"},         {"PREEMPT_CHECK_PERIOD_US", "1000001"},
                 {NULL, NULL}};
  CHECK_EQ_U64(preempt_settings_parse(&settings, lookup_pairs, more), PREEMPT_SETTINGS_MAX_COMPLAINTS);
  CHECK_EQ_U64(settings.given, 0);
  CHECK(strcmp(settings.daemon_socket, PREEMPT_DAEMON_SOCKET_DEFAULT) == 0);
  CHECK_EQ_U64(settings.mem_budget, 0);
  CHECK(complained(&settings, "PREEMPT_STRESS='yes'"));
  CHECK(complained(&settings, "PREEMPT_MEM='maybe' and further malformed PREEMPT_* settings"));
  CHECK(!complained(&settings, "PREEMPT_MEM_BUDGET"));
  CHECK_EQ_U64(settings.stress, 0);
  CHECK_EQ_U64(settings.check_period_us, 20);
  CHECK_EQ_U64(settings.evict_ready, (uint64_t)-1);

  /* Below the stress period's floor (its waits would round to nothing): said, and the default kept. */
  pair too_short[] = {{"PREEMPT_STRESS_PERIOD_US", "19"}, {NULL, NULL}};
  CHECK_EQ_U64(preempt_settings_parse(&settings, lookup_pairs, too_short), 1);
  CHECK(complained(&settings, "PREEMPT_STRESS_PERIOD_US='19'"));
  CHECK_EQ_U64(settings.stress_period_us, 2000);

  /* The process's copy: read once, again only when asked. */
  preempt_settings first, second;
  int fresh = 0;
  preempt_settings_load(0, &first, &fresh);
  preempt_settings_load(0, &second, &fresh);
  CHECK_EQ_U64(fresh, 0);
  preempt_settings_load(1, &second, &fresh);
  CHECK_EQ_U64(fresh, 1);
  CHECK_DONE("test_settings");
}
