/* test_preemptd_peer.c: unit test of preemptd's peer.c: nice from /proc/<pid>/stat text, and the priority grant.
 * EffiSha §6.4 (default priority from nice; only root above the default). */
#include <string.h>
#include <unistd.h>

#include "../unit/check.h"
#include "preemptd.h"

static int parse(const char *text, int *nice) { return (int)preemptd_parse_nice(text, strlen(text), nice); }

static void test_parse_nice(void) {
  int nice = 99;
  /* Fields after comm: state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime cutime
   * cstime priority nice ... */
  CHECK(parse("42 (cat) R 1 42 42 0 -1 4194304 10 0 0 0 1 2 0 0 25 5 1 0 100\n", &nice) == PREEMPT_DAEMON_OK);
  CHECK_EQ_U64(nice, 5);
  /* comm is the program's choice: spaces, parentheses and a fake field list inside it must not shift fields. */
  CHECK(parse("7 (a) R 1 2 3 (b) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1) R 1 42 42 0 -1 4194304 10 0 0 0 1 2 0 0 39 "
              "-19 1 0 100",
              &nice) == PREEMPT_DAEMON_OK);
  CHECK_EQ_U64(nice, (unsigned long long)-19);
  CHECK(parse("7 () R 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 9", &nice) == PREEMPT_DAEMON_OK);
  CHECK_EQ_U64(nice, 0);
  /* Malformed: no ')', too few fields, not a number, out of range, a number cut by the read. */
  CHECK(parse("42 cat R 1 42", &nice) == PREEMPT_DAEMON_MALFORMED);
  CHECK(parse("42 (cat) R 1 42 42 0 -1", &nice) == PREEMPT_DAEMON_MALFORMED);
  CHECK(parse("42 (cat) R 1 42 42 0 -1 4194304 10 0 0 0 1 2 0 0 25 x5 1", &nice) == PREEMPT_DAEMON_MALFORMED);
  CHECK(parse("42 (cat) R 1 42 42 0 -1 4194304 10 0 0 0 1 2 0 0 25 20 1", &nice) == PREEMPT_DAEMON_MALFORMED);
  CHECK(parse("42 (cat) R 1 42 42 0 -1 4194304 10 0 0 0 1 2 0 0 25 -21 1", &nice) == PREEMPT_DAEMON_MALFORMED);
  CHECK(parse("", &nice) == PREEMPT_DAEMON_MALFORMED);
  /* This process, for real. */
  CHECK(preemptd_read_nice(getpid(), &nice) == PREEMPT_DAEMON_OK);
  CHECK(nice >= -20 && nice <= 19);
}

static void test_grant(void) {
  int32_t granted = 0, limit = 0;
  /* A user: the default is -nice and also the most it may have. */
  preempt_grant_priority(1000, 0, true, 20, &granted, &limit);
  CHECK(granted == 0 && limit == 0);
  preempt_grant_priority(1000, 5, false, 0, &granted, &limit);
  CHECK(granted == -5 && limit == -5);
  preempt_grant_priority(1000, 5, true, -20, &granted, &limit);
  CHECK(granted == -20 && limit == -5);
  preempt_grant_priority(1000, -10, true, 15, &granted, &limit);
  CHECK(granted == 10 && limit == 10);
  /* Root: anything up to MAX; without a request, still -nice. */
  preempt_grant_priority(0, 0, true, 20, &granted, &limit);
  CHECK(granted == 20 && limit == PREEMPT_PRIORITY_MAX);
  preempt_grant_priority(0, 3, false, 0, &granted, &limit);
  CHECK(granted == -3 && limit == PREEMPT_PRIORITY_MAX);
  /* A stub's own priority is clamped the same way, below too. */
  CHECK(preempt_clamp_priority(7, 0) == 0);
  CHECK(preempt_clamp_priority(-99, 0) == PREEMPT_PRIORITY_MIN);
  CHECK(preempt_clamp_priority(-3, 0) == -3);
}

int main(void) {
  test_parse_nice();
  test_grant();
  CHECK_DONE("test_preemptd_peer");
}
