/* settings.c: the table of every PREEMPT_* setting (name, values, default, meaning) and the one parser over it.
 * Issue 40 item 5: before it, four files read the environment, and PREEMPT_PRIORITY was parsed twice, apart. */
#define _GNU_SOURCE
#include "settings.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "preempt/byte_count.h"
#include "preempt/daemon_protocol.h" /* PREEMPT_DAEMON_SOCKET_DEFAULT, PREEMPT_PRIORITY_MIN/MAX, PREEMPT_WEIGHT_MAX */

typedef enum { KIND_NUMBER, KIND_CHOICE, KIND_BYTES, KIND_TEXT } setting_kind;

typedef struct setting_choice {
  const char *word;
  int value;
} setting_choice;

typedef struct setting_spec {
  preempt_setting_doc doc; /* name, accepted values, default (as text, parsed like a value; "" = unset), meaning */
  setting_kind kind;
  size_t offset;
  long long minimum, maximum;    /* KIND_NUMBER */
  const setting_choice *choices; /* KIND_CHOICE, ended by a NULL word */
  const char *on_malformed;      /* the value a malformed setting gets, where it is not the default */
  int (*well_formed)(const char *text); /* KIND_TEXT */
} setting_spec;

#define FIELD(name) offsetof(preempt_settings, name)
_Static_assert(PREEMPT_PRIORITY_MIN == -20 && PREEMPT_PRIORITY_MAX == 20, "PREEMPT_PRIORITY's values in the table");
#define STRINGIFY2(x) #x
#define STRINGIFY(x) STRINGIFY2(x)

static const setting_choice zero_one[] = {{"0", 0}, {"1", 1}, {NULL, 0}};
static const setting_choice evict_ready[] = {{"auto", -1}, {"1", 1}, {"0", 0}, {NULL, 0}};
static const setting_choice stress[] = {{"0", 0}, {"1", 1}, {"2", 2}, {NULL, 0}};
static const setting_choice on_off[] = {{"on", 1}, {"off", 0}, {NULL, 0}};
static const setting_choice on_off_digits[] = {{"on", 1}, {"1", 1}, {"off", 0}, {"0", 0}, {NULL, 0}};
static const setting_choice one_wave[] = {{"original", 0}, {"persistent", 1}, {NULL, 0}};
static const setting_choice form[] = {{"auto", 0}, {"persistent", 1}, {"drain", 2}, {NULL, 0}}; /* preempt_form */
/* preempt_intask_mode and preempt_prompt_mode */
static const setting_choice auto_on_off[] = {{"auto", 0}, {"on", 1}, {"off", 2}, {NULL, 0}};
static const setting_choice shape[] = {{"auto", 0}, {"runtime", 1}, {"chunks", 2}, {NULL, 0}};
static const setting_choice mem_policy[] = /* preempt_mem_policy */
    {{"fifo", 0}, {"mmu", 1}, {"priority-fifo", 2}, {"priority-mmu", 3}, {NULL, 0}};
static const setting_choice ledger[] = {{"auto", 0}, {"shared", 1}, {NULL, 0}};

static int socket_path_ok(const char *text) { return text[0] != '\0'; }
/* A POSIX shared-memory name: one leading slash and no other (mem_segment.c appends the rest). */
static int segment_name_ok(const char *text) {
  return text[0] == '/' && text[1] && !strchr(text + 1, '/') && strlen(text) < 64;
}

static const setting_spec table[PREEMPT_SETTING_COUNT] = {
    [PREEMPT_SETTING_QUIET] = {{"PREEMPT_QUIET", "0, 1", "0",
                                "1: the runtime prints no errors to stderr (preempt_last_error() still returns them)"},
                               KIND_CHOICE, FIELD(quiet), 0, 0, zero_one, NULL, NULL},
    [PREEMPT_SETTING_EVICT_READY] =
        {{"PREEMPT_EVICT_READY", "auto, 1, 0", "auto",
          "what CUDA is asked for at load: auto: eager module loading where evictions are expected (PREEMPT_STRESS, a "
          "preemptd socket); 1: also 32 hardware queues; 0: nothing"},
         KIND_CHOICE, FIELD(evict_ready), 0, 0, evict_ready, NULL, NULL},
    [PREEMPT_SETTING_STRESS] = {{"PREEMPT_STRESS", "0, 1, 2", "0",
                                 "1: evict and resume every converted launch at random moments (a correctness test); "
                                 "2: and say each"},
                                KIND_CHOICE, FIELD(stress), 0, 0, stress, NULL, NULL},
    [PREEMPT_SETTING_STRESS_PERIOD_US] =
        {{"PREEMPT_STRESS_PERIOD_US", "20..10000000", "2000",
          "PREEMPT_STRESS: the longest wait between two eviction rounds, in microseconds (each waits a random tenth "
          "to all of it, and resumes within a quarter of it); shorter catches shorter launches"},
         KIND_NUMBER, FIELD(stress_period_us), 20, 10000000, NULL, NULL, NULL},
    [PREEMPT_SETTING_DAEMON] = {{"PREEMPT_DAEMON", "on, off", "on", "off: never look for preemptd"},
                                KIND_CHOICE, FIELD(daemon), 0, 0, on_off, NULL, NULL},
    [PREEMPT_SETTING_DAEMON_SOCKET] = {{"PREEMPT_DAEMON_SOCKET", "a path", PREEMPT_DAEMON_SOCKET_DEFAULT,
                                        "preemptd's socket; named, a missing daemon is said"},
                                       KIND_TEXT, FIELD(daemon_socket), 0, 0, NULL, NULL, socket_path_ok},
    [PREEMPT_SETTING_PRIORITY] = {{"PREEMPT_PRIORITY", "-20..20",
                                   "", "the priority asked of preemptd and of memory admission (higher first); unset: "
                                       "from the process's nice value"},
                                  KIND_NUMBER, FIELD(priority), PREEMPT_PRIORITY_MIN, PREEMPT_PRIORITY_MAX, NULL, NULL,
                                  NULL},
    [PREEMPT_SETTING_WEIGHT] = {{"PREEMPT_WEIGHT", "1.." STRINGIFY(PREEMPT_WEIGHT_MAX), "1",
                                 "the share asked of preemptd's fair-share policy (FLEP §5.2.2)"},
                                KIND_NUMBER, FIELD(weight), 1, PREEMPT_WEIGHT_MAX, NULL, NULL, NULL},
    [PREEMPT_SETTING_CHECK_INTERVAL] = {{"PREEMPT_CHECK_INTERVAL", "1..1048576", "",
                                         "tasks between yield checks; unset: from PREEMPT_CHECK_PERIOD_US and the "
                                         "measured task length"},
                                        KIND_NUMBER, FIELD(check_interval), 1, 1 << 20, NULL, NULL, NULL},
    [PREEMPT_SETTING_CHECK_PERIOD_US] = {{"PREEMPT_CHECK_PERIOD_US", "1..1000000", "20",
                                          "the time between a persistent CTA's yield checks, in microseconds"},
                                         KIND_NUMBER, FIELD(check_period_us), 1, 1000000, NULL, NULL, NULL},
    [PREEMPT_SETTING_ONE_WAVE] = {{"PREEMPT_ONE_WAVE", "original, persistent", "original",
                                   "what a launch that fits in one wave runs: the unconverted copy, or the persistent "
                                   "form (evictable); malformed: persistent"},
                                  KIND_CHOICE, FIELD(one_wave_persistent), 0, 0, one_wave, "persistent", NULL},
    [PREEMPT_SETTING_FORM] = {{"PREEMPT_FORM", "auto, persistent, drain", "auto",
                               "which form converted launches take: the faster measured per kernel, or one always"},
                              KIND_CHOICE, FIELD(form), 0, 0, form, NULL, NULL},
    [PREEMPT_SETTING_EVICT_BOUND_US] =
        {{"PREEMPT_EVICT_BOUND_US", "0..1000000", "50",
          "once evictions are expected (preemptd, PREEMPT_STRESS, PREEMPT_EVICT_READY=1, an eviction asked), auto "
          "drains no launch whose not-yet-started blocks would take longer than this to leave, and runs the in-task "
          "variant where tasks are longer; 0: auto weighs time only"},
         KIND_NUMBER, FIELD(evict_bound_us), 0, 1000000, NULL, NULL, NULL},
    [PREEMPT_SETTING_PROMPT] = {{"PREEMPT_PROMPT", "auto, on, off", "auto",
                                 "prompt yield checks (each CTA reads its yield bit as its next batch is due, so an "
                                 "eviction waits for the tasks in flight only, at a round trip per batch): where "
                                 "evictions are expected and two tasks outlast PREEMPT_EVICT_BOUND_US; always; never"},
                                KIND_CHOICE, FIELD(prompt), 0, 0, auto_on_off, NULL, NULL},
    [PREEMPT_SETTING_INTASK] = {{"PREEMPT_INTASK", "auto, on, off", "auto",
                                 "in-task yield points: where evictions are expected, tasks outlast PREEMPT_EVICT_BOUND_US and the variant "
                                 "measured at most 1.05x the persistent form; always; never"},
                                KIND_CHOICE, FIELD(intask), 0, 0, auto_on_off, NULL, NULL},
    [PREEMPT_SETTING_INTASK_SHAPE] = {{"PREEMPT_INTASK_SHAPE", "auto, runtime, chunks", "auto",
                                       "which in-task variant runs: the faster per task, or one always"},
                                      KIND_CHOICE, FIELD(intask_shape), 0, 0, shape, NULL, NULL},
    [PREEMPT_SETTING_INTASK_PERIOD_US] = {{"PREEMPT_INTASK_PERIOD_US", "1..1000000", "10",
                                           "the time between in-task yield checks, in microseconds"},
                                          KIND_NUMBER, FIELD(intask_period_us), 1, 1000000, NULL, NULL, NULL},
    [PREEMPT_SETTING_LONG_US] = {{"PREEMPT_LONG_US", "0..100000000", "500",
                                  "launches predicted to run at least this long (microseconds) take a preemptible "
                                  "form; shorter ones run as written; 0: every launch"},
                                 KIND_NUMBER, FIELD(long_us), 0, 100000000, NULL, NULL, NULL},
    [PREEMPT_SETTING_TIME_EVICTIONS] = {{"PREEMPT_TIME_EVICTIONS", "0, 1", "0",
                                         "1: time evictions on the GPU's clock (preempt_get_eviction_time), and say "
                                         "at exit where the host time of each preempt_evict call, and of each "
                                         "launch that evicted for its stream's priority, went"},
                                        KIND_CHOICE, FIELD(time_evictions), 0, 0, zero_one, NULL, NULL},
    [PREEMPT_SETTING_MEM] = {{"PREEMPT_MEM", "on, off, 1, 0", "on", "memory admission of cudaMalloc and its kin"},
                             KIND_CHOICE, FIELD(mem), 0, 0, on_off_digits, NULL, NULL},
    [PREEMPT_SETTING_MEM_TIMEOUT_MS] = {{"PREEMPT_MEM_TIMEOUT_MS", "-1 (no limit) or milliseconds", "60000",
                                         "how long an allocation waits for admission before it fails"},
                                        KIND_NUMBER, FIELD(mem_timeout_ms), -1, LLONG_MAX, NULL, NULL, NULL},
    [PREEMPT_SETTING_MEM_POLICY] = {{"PREEMPT_MEM_POLICY", "fifo, mmu, priority-fifo, priority-mmu", "fifo",
                                     "the order waiting allocations are admitted in (shared ledger; preemptd has its "
                                     "own)"},
                                    KIND_CHOICE, FIELD(mem_policy), 0, 0, mem_policy, NULL, NULL},
    [PREEMPT_SETTING_MEM_LEDGER] = {{"PREEMPT_MEM_LEDGER", "auto, shared", "auto",
                                     "auto: preemptd's ledger where it answers, else the shared segment; shared: the "
                                     "segment always"},
                                    KIND_CHOICE, FIELD(mem_ledger_shared), 0, 0, ledger, NULL, NULL},
    [PREEMPT_SETTING_MEM_BUDGET] = {{"PREEMPT_MEM_BUDGET", "bytes, with K, M, G or T", "",
                                     "this process's ceiling (0 or unset: none)"},
                                    KIND_BYTES, FIELD(mem_budget), 0, 0, NULL, NULL, NULL},
    [PREEMPT_SETTING_MEM_AHEAD] = {{"PREEMPT_MEM_AHEAD", "bytes, with K, M, G or T", "32M",
                                    "how much preemptd admits ahead of the allocations that need it"},
                                   KIND_BYTES, FIELD(mem_ahead), 0, 0, NULL, NULL, NULL},
    [PREEMPT_SETTING_MEM_SEGMENT] = {{"PREEMPT_MEM_SEGMENT", "/name (one slash, under 64 bytes)", "/preempt-mem",
                                      "the shared ledger's name prefix (POSIX shared memory)"},
                                     KIND_TEXT, FIELD(mem_segment), 0, 0, NULL, NULL, segment_name_ok},
    [PREEMPT_SETTING_MEM_TEST_HOLD_NS] = {{"PREEMPT_MEM_TEST_HOLD_NS", "0..10000000000", "0",
                                           "tests only: nanoseconds the ledger's lock is held, so that kills land "
                                           "inside it"},
                                          KIND_NUMBER, FIELD(mem_test_hold_ns), 0, 10000000000ll, NULL, NULL, NULL},
};

/* 0 and the field set from `text`; -1 when malformed. */
static int apply(const setting_spec *spec, const char *text, preempt_settings *out) {
  void *field = (char *)out + spec->offset;
  switch (spec->kind) {
  case KIND_NUMBER: {
    if (!*text) {
      *(long long *)field = 0;
      return 0;
    }
    char *end;
    errno = 0;
    long long value = strtoll(text, &end, 10);
    if (errno || *end || value < spec->minimum || value > spec->maximum)
      return -1;
    *(long long *)field = value;
    return 0;
  }
  case KIND_CHOICE:
    for (const setting_choice *choice = spec->choices; choice->word; choice++)
      if (strcmp(text, choice->word) == 0) {
        *(int *)field = choice->value;
        return 0;
      }
    return -1;
  case KIND_BYTES: {
    uint64_t bytes = 0;
    if (*text && preempt_parse_byte_count(text, &bytes) != 0)
      return -1;
    *(unsigned long long *)field = bytes;
    return 0;
  }
  case KIND_TEXT:
    if (strlen(text) >= PREEMPT_SETTING_TEXT_BYTES || !spec->well_formed(text))
      return -1;
    snprintf((char *)field, PREEMPT_SETTING_TEXT_BYTES, "%s", text);
    return 0;
  }
  return -1;
}

unsigned preempt_settings_parse(preempt_settings *out, preempt_settings_lookup lookup, void *context) {
  memset(out, 0, sizeof *out);
  for (int id = 0; id < PREEMPT_SETTING_COUNT; id++) {
    const setting_spec *spec = &table[id];
    const char *text = lookup(spec->doc.name, context);
    apply(spec, spec->doc.fallback, out); /* every default parses: test_settings */
    if (!text || !*text)
      continue;
    if (apply(spec, text, out) == 0) {
      out->given |= 1ull << id;
      continue;
    }
    const char *used = spec->on_malformed ? spec->on_malformed : *spec->doc.fallback ? spec->doc.fallback : "unset";
    if (spec->on_malformed)
      apply(spec, spec->on_malformed, out);
    /* The last room says that more follow, rather than dropping them unsaid. */
    if (out->complaint_count + 1 < PREEMPT_SETTINGS_MAX_COMPLAINTS)
      snprintf(out->complaints[out->complaint_count++], sizeof out->complaints[0],
               "ignoring %s='%.60s': expected %s; using %s", spec->doc.name, text, spec->doc.values, used);
    else if (out->complaint_count + 1 == PREEMPT_SETTINGS_MAX_COMPLAINTS)
      snprintf(out->complaints[out->complaint_count++], sizeof out->complaints[0],
               "ignoring %s='%.60s' and further malformed PREEMPT_* settings (docs/settings.md)", spec->doc.name,
               text);
  }
  return out->complaint_count;
}

static const char *from_environment(const char *name, void *context) {
  (void)context;
  return getenv(name);
}

static pthread_mutex_t loaded_lock = PTHREAD_MUTEX_INITIALIZER;
static preempt_settings loaded;
static int loaded_once;

void preempt_settings_load(int again, preempt_settings *copy, int *fresh) {
  pthread_mutex_lock(&loaded_lock);
  int reading = again || !loaded_once;
  if (reading) {
    preempt_settings_parse(&loaded, from_environment, NULL);
    loaded_once = 1;
  }
  if (fresh)
    *fresh = reading;
  *copy = loaded;
  pthread_mutex_unlock(&loaded_lock);
}

const preempt_setting_doc *preempt_setting_describe(preempt_setting_id id) {
  return id < PREEMPT_SETTING_COUNT ? &table[id].doc : NULL;
}
