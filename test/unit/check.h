/* check.h: the assertion macro of preempt's C unit tests; a failed check prints where and why, the test exits 1.
 * Plain C so that lib/ and runtime-host/ are tested without any framework. */
#ifndef PREEMPT_TEST_CHECK_H
#define PREEMPT_TEST_CHECK_H

#include <stdio.h>

static int check_failures;

#define CHECK(condition)                                                                       \
  do {                                                                                         \
    if (!(condition)) {                                                                        \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #condition);           \
      check_failures++;                                                                        \
    }                                                                                          \
  } while (0)

#define CHECK_EQ_U64(actual, expected)                                                          \
  do {                                                                                         \
    unsigned long long actual_value = (unsigned long long)(actual);                            \
    unsigned long long expected_value = (unsigned long long)(expected);                        \
    if (actual_value != expected_value) {                                                      \
      fprintf(stderr, "%s:%d: %s is %llu, expected %llu\n", __FILE__, __LINE__, #actual,       \
              actual_value, expected_value);                                                   \
      check_failures++;                                                                        \
    }                                                                                          \
  } while (0)

#define CHECK_DONE(name)                                                                       \
  do {                                                                                         \
    printf("%s: %s\n", name, check_failures ? "FAILED" : "all checks passed");                 \
    return check_failures ? 1 : 0;                                                             \
  } while (0)

#endif
