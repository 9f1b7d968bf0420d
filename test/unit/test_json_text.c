/* test_json_text.c: lib/json_text.c alone: escapes, UTF-8 kept, one U+FFFD per bad byte, null, and write errors.
 * Serves the tools' JSON output (preemptctl, preempt-report, preempt-sim). With --cases it prints every case for
 * test/lit/unit/test_json_text.test's python round trip. */
#define _GNU_SOURCE /* open_memstream, fopencookie */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "check.h"
#include "preempt/json_text.h"

#define FFFD "\\ufffd"

/* Expected outputs worked out by hand from the rules in json_text.h, not taken from the program. */
typedef struct json_case {
  const char *input, *expected;
} json_case;

static const json_case cases[] = {
    /* ASCII: only '"' and '\' need a backslash; DEL and space stand for themselves */
    {"", "\"\""},
    {"kernel_1 (a+b)", "\"kernel_1 (a+b)\""},
    {"a\"b\\c/d", "\"a\\\"b\\\\c/d\""},
    {" \x7f~", "\" \x7f~\""},
    /* control characters: the five with a short form, then \u00xx */
    {"\b\t\n\f\r", "\"\\b\\t\\n\\f\\r\""},
    {"\x01\x0b\x1b[31m\x1f", "\"\\u0001\\u000b\\u001b[31m\\u001f\""},
    /* well-formed UTF-8, at the edges of each length and around the surrogates */
    {"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\""},
    {"\xc2\x80\xdf\xbf", "\"\xc2\x80\xdf\xbf\""},                           /* U+0080, U+07FF */
    {"\xe0\xa0\x80\xed\x9f\xbf", "\"\xe0\xa0\x80\xed\x9f\xbf\""},           /* U+0800, U+D7FF */
    {"\xee\x80\x80\xef\xbf\xbf", "\"\xee\x80\x80\xef\xbf\xbf\""},           /* U+E000, U+FFFF */
    {"\xf0\x90\x80\x80\xf4\x8f\xbf\xbf", "\"\xf0\x90\x80\x80\xf4\x8f\xbf\xbf\""}, /* U+10000, U+10FFFF */
    /* overlong forms: every byte replaced */
    {"\xc0\x80", "\"" FFFD FFFD "\""},
    {"\xc1\xbf", "\"" FFFD FFFD "\""},
    {"\xe0\x80\xaf", "\"" FFFD FFFD FFFD "\""},
    {"\xe0\x9f\xbf", "\"" FFFD FFFD FFFD "\""},
    {"\xf0\x8f\xbf\xbf", "\"" FFFD FFFD FFFD FFFD "\""},
    /* surrogates U+D800 and U+DFFF, and a CESU-8 pair */
    {"\xed\xa0\x80", "\"" FFFD FFFD FFFD "\""},
    {"\xed\xbf\xbf", "\"" FFFD FFFD FFFD "\""},
    {"\xed\xa0\xbd\xed\xb8\x80", "\"" FFFD FFFD FFFD FFFD FFFD FFFD "\""},
    /* past U+10FFFF: U+110000, a lead that could only start one, and bytes UTF-8 never uses */
    {"\xf4\x90\x80\x80", "\"" FFFD FFFD FFFD FFFD "\""},
    {"\xf5\x80\x80\x80", "\"" FFFD FFFD FFFD FFFD "\""},
    {"a\xfe\xffz", "\"a" FFFD FFFD "z\""},
    /* cut short: by the end, by ASCII, by another lead (which then starts a good sequence) */
    {"a\xe2\x82", "\"a" FFFD FFFD "\""},
    {"\xf0\x9f\x98", "\"" FFFD FFFD FFFD "\""},
    {"\xc3", "\"" FFFD "\""},
    {"\xe2\x82z", "\"" FFFD FFFD "z\""},
    {"\xe2\xc3\xa9", "\"" FFFD "\xc3\xa9\""},
    /* stray continuation bytes, alone and after a complete sequence */
    {"\x80", "\"" FFFD "\""},
    {"\xbf\xbf", "\"" FFFD FFFD "\""},
    {"\xc3\xa9\xa9", "\"\xc3\xa9" FFFD "\""},
    /* the classes together, each escape next to the others */
    {"\"\xff\n\xc3\xa9\\", "\"\\\"" FFFD "\\n\xc3\xa9\\\\\""},
};

#define CASE_COUNT (sizeof cases / sizeof cases[0])

/* What the escaper wrote for `text`, NUL-terminated; NULL if it reported an error. */
static char *escaped(const char *text) {
  char *output = NULL;
  size_t length = 0;
  FILE *out = open_memstream(&output, &length);
  if (!out)
    return NULL;
  int status = preempt_json_write_string(out, text);
  fclose(out);
  if (status != 0) {
    free(output);
    return NULL;
  }
  return output;
}

static void test_cases(void) {
  for (size_t i = 0; i < CASE_COUNT; i++) {
    char *output = escaped(cases[i].input);
    if (!output || strcmp(output, cases[i].expected) != 0) {
      fprintf(stderr, "case %zu: wrote %s, expected %s\n", i, output ? output : "(error)", cases[i].expected);
      check_failures++;
    }
    free(output);
  }
}

static void test_null(void) {
  char *output = escaped(NULL);
  CHECK(output && strcmp(output, "null") == 0);
  free(output);
}

/* A stream that refuses one write, its `refuse`-th (from 1; 0 refuses none), and takes the others, as after a
 * transient error: the document has a hole although later writes succeed, and glibc's fwrite may even return the full
 * count for the refused one. */
typedef struct flaky_stream {
  size_t calls, refuse;
} flaky_stream;

static ssize_t flaky_write(void *cookie, const char *bytes, size_t size) {
  (void)bytes;
  flaky_stream *stream = cookie;
  return ++stream->calls == stream->refuse ? -1 : (ssize_t)size;
}

/* The escaper's status with the `refuse`-th write refused; *calls: how many writes it made. */
static int write_refusing(const char *text, size_t refuse, size_t *calls) {
  flaky_stream stream = {0, refuse};
  FILE *out = fopencookie(&stream, "w", (cookie_io_functions_t){.write = flaky_write});
  if (!out)
    return -2;
  setvbuf(out, NULL, _IONBF, 0); /* each of the escaper's writes reaches the stream at once, not at fclose */
  int status = preempt_json_write_string(out, text);
  fclose(out);
  *calls = stream.calls;
  return status;
}

/* Whichever write is refused (the opening quote, a run of plain bytes, an escape, the closing quote), the escaper
 * says so. */
static void test_write_errors(void) {
  static const char *const texts[] = {NULL, "", "plain", "a\"b\n\xff\xc3\xa9z", "\x1f\xe2\x82"};
  for (size_t t = 0; t < sizeof texts / sizeof texts[0]; t++) {
    size_t writes = 0, calls = 0;
    CHECK(write_refusing(texts[t], 0, &writes) == 0);
    CHECK(writes > 0);
    for (size_t refuse = 1; refuse <= writes; refuse++)
      if (write_refusing(texts[t], refuse, &calls) != -1) {
        fprintf(stderr, "text %zu: no error with write %zu of %zu refused\n", t, refuse, writes);
        check_failures++;
      }
  }
  /* A stream an earlier write left in error already holds a broken document: -1 too. */
  flaky_stream stream = {0, 1};
  FILE *out = fopencookie(&stream, "w", (cookie_io_functions_t){.write = flaky_write});
  CHECK(out != NULL);
  if (out) {
    setvbuf(out, NULL, _IONBF, 0);
    CHECK(putc('{', out) == EOF);
    CHECK(preempt_json_write_string(out, "plain") == -1);
    fclose(out);
  }
}

/* One JSON object a line: the input's bytes in hex, and the escaper's output as the value of "json". */
static int print_cases(void) {
  for (size_t i = 0; i < CASE_COUNT; i++) {
    printf("{\"hex\":\"");
    for (const unsigned char *p = (const unsigned char *)cases[i].input; *p; p++)
      printf("%02x", *p);
    printf("\",\"json\":");
    if (preempt_json_write_string(stdout, cases[i].input) != 0)
      return 1;
    printf("}\n");
  }
  return fflush(stdout) == 0 && !ferror(stdout) ? 0 : 1;
}

int main(int argc, char **argv) {
  if (argc == 2 && strcmp(argv[1], "--cases") == 0)
    return print_cases();
  test_cases();
  test_null();
  test_write_errors();
  CHECK_DONE("test_json_text");
}
