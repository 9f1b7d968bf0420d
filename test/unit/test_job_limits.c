/* test_job_limits.c: the Slurm plugin's limits alone (lib/job_limits.c): argument parsing and its errors, the rule a
 * job's QOS, partition or the default gives, and the check of a request. Issue 43. */
#include <string.h>

#include "check.h"
#include "preempt/job_limits.h"

static int parse(preempt_job_limits *limits, char why[256], int argc, char **argv) {
  why[0] = '\0';
  return preempt_job_limits_parse(limits, argc, argv, why, 256);
}

static void test_parse_and_resolve(void) {
  char *argv[] = {"socket=/run/preemptd/preemptd.sock", "preload=/usr/lib/libpreempt_mem.so", "max_priority=2",
                  "max_mem=8G", "partition=gpu:max_priority=10:max_mem=40G", "partition=debug:max_priority=-5",
                  "qos=urgent:max_priority=20", "qos=small:max_mem=1G"};
  preempt_job_limits limits;
  char why[256];
  CHECK(parse(&limits, why, 8, argv) == 0);
  CHECK(strcmp(limits.socket, "/run/preemptd/preemptd.sock") == 0);
  CHECK(strcmp(limits.preload, "/usr/lib/libpreempt_mem.so") == 0);
  CHECK_EQ_U64(limits.count, 5);

  preempt_job_grant_limits g;
  preempt_job_limits_for(&limits, NULL, NULL, &g); /* no partition known: the default */
  CHECK(g.max_priority == 2 && g.max_mem_bytes == 8ull << 30 && strcmp(g.priority_from, "the default") == 0);
  preempt_job_limits_for(&limits, "gpu", "normal", &g); /* a QOS without a rule: the partition's */
  CHECK(g.max_priority == 10 && g.max_mem_bytes == 40ull << 30 && strcmp(g.priority_from, "partition gpu") == 0);
  preempt_job_limits_for(&limits, "debug", NULL, &g); /* the partition sets a priority only: memory falls through */
  CHECK(g.max_priority == -5 && g.max_mem_bytes == 8ull << 30 && strcmp(g.mem_from, "the default") == 0);
  preempt_job_limits_for(&limits, "debug", "urgent", &g); /* the QOS's priority wins over the partition's */
  CHECK(g.max_priority == 20 && strcmp(g.priority_from, "qos urgent") == 0 && g.max_mem_bytes == 8ull << 30);
  preempt_job_limits_for(&limits, "gpu", "small", &g); /* each field from its own rule */
  CHECK(g.max_priority == 10 && g.max_mem_bytes == 1ull << 30 && strcmp(g.mem_from, "qos small") == 0);

  /* Requests: at the limit passes, above it is refused with the rule named. */
  preempt_job_limits_for(&limits, "gpu", NULL, &g);
  CHECK(preempt_job_request_check(&g, true, 10, true, 40ull << 30, why, sizeof why) == 0);
  CHECK(preempt_job_request_check(&g, true, 11, false, 0, why, sizeof why) == -1);
  CHECK(strcmp(why, "--gpu-priority=11 is above 10, the most partition gpu allows") == 0);
  CHECK(preempt_job_request_check(&g, false, 0, true, (40ull << 30) + 1, why, sizeof why) == -1);
  CHECK(strcmp(why, "--gpu-mem=42949672961 is above 40G, the most partition gpu allows") == 0);
  CHECK(preempt_job_request_check(&g, false, 0, true, 41ull << 30, why, sizeof why) == -1);
  CHECK(strcmp(why, "--gpu-mem=41G is above 40G, the most partition gpu allows") == 0);
  /* Not asked: nothing to refuse, whatever the numbers. */
  CHECK(preempt_job_request_check(&g, false, 20, false, ~0ull, why, sizeof why) == 0);
}

static void test_defaults(void) {
  preempt_job_limits limits;
  char why[256];
  CHECK(parse(&limits, why, 0, NULL) == 0);
  preempt_job_grant_limits g;
  preempt_job_limits_for(&limits, "any", "any", &g);
  /* Nothing configured: no job rises above priority 0, and memory has no limit. */
  CHECK(g.max_priority == 0 && g.max_mem_bytes == 0);
  CHECK(preempt_job_request_check(&g, true, 1, false, 0, why, sizeof why) == -1);
  CHECK(preempt_job_request_check(&g, true, -3, true, 1ull << 40, why, sizeof why) == 0);
  /* "none" lifts a memory limit a later rule would inherit. */
  char *argv[] = {"max_mem=4G", "partition=big:max_mem=none"};
  CHECK(parse(&limits, why, 2, argv) == 0);
  preempt_job_limits_for(&limits, "big", NULL, &g);
  CHECK(g.max_mem_bytes == 0);
}

static void test_errors(void) {
  static const struct {
    const char *argument, *reason;
  } bad[] = {
      {"max_priority=21", "max_priority takes an integer from -20 to 20"},
      {"max_priority=", "max_priority takes an integer from -20 to 20"},
      {"max_mem=0", "max_mem takes bytes with K, M, G or T, or none"},
      {"max_mem=12Q", "max_mem takes bytes with K, M, G or T, or none"},
      {"socket=relative.sock", "expected an absolute path"},
      {"partition=gpu", "expected NAME:max_priority=N[:max_mem=SIZE]"},
      {"partition=:max_priority=1", "expected NAME:max_priority=N[:max_mem=SIZE]"},
      {"qos=q:weight=3", "expected max_priority=N or max_mem=SIZE"},
      {"colour=blue", "unknown; expected socket=, preload=, max_priority=, max_mem=, partition= or qos="},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    preempt_job_limits limits;
    char why[256], *argv[] = {(char *)bad[i].argument};
    CHECK(parse(&limits, why, 1, argv) == -1);
    char expected[256];
    snprintf(expected, sizeof expected, "plugstack.conf argument '%s': %s", bad[i].argument, bad[i].reason);
    if (strcmp(why, expected) != 0) {
      fprintf(stderr, "got: %s\nexpected: %s\n", why, expected);
      CHECK(!"the error names the argument and the problem");
    }
  }
  preempt_job_limits limits;
  char why[256], *twice[] = {"partition=a:max_priority=1", "partition=a:max_priority=2"};
  CHECK(parse(&limits, why, 2, twice) == -1 && strstr(why, "a second rule for the same name") != NULL);
}

int main(void) {
  test_parse_and_resolve();
  test_defaults();
  test_errors();
  CHECK_DONE("test_job_limits");
}
