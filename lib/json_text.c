/* json_text.c: writes text as a JSON string, escaping what RFC 8259 requires and replacing bytes that are not UTF-8.
 * Serves the tools' JSON output: preemptctl's listing (FLEP §3), preempt-report (CTXBack Fig. 7), preempt-sim. */
#include "preempt/json_text.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "preempt/utf8.h"

/* What an ASCII byte is written as inside the quotes, or NULL when it stands for itself. */
static const char *ascii_escape(unsigned char c, char buffer[7]) {
  switch (c) {
  case '"':
    return "\\\"";
  case '\\':
    return "\\\\";
  case '\b':
    return "\\b";
  case '\t':
    return "\\t";
  case '\n':
    return "\\n";
  case '\f':
    return "\\f";
  case '\r':
    return "\\r";
  default:
    break;
  }
  if (c >= 0x20)
    return NULL;
  static const char digits[] = "0123456789abcdef";
  buffer[0] = '\\';
  buffer[1] = 'u';
  buffer[2] = '0';
  buffer[3] = '0';
  buffer[4] = digits[c >> 4];
  buffer[5] = digits[c & 15];
  buffer[6] = 0;
  return buffer;
}

int preempt_json_write_string(FILE *out, const char *text) {
  if (!text) {
    fputs("null", out);
    return ferror(out) ? -1 : 0;
  }
  putc('"', out);
  const unsigned char *p = (const unsigned char *)text, *run = p; /* run: bytes that stand for themselves, unwritten */
  while (*p) {
    char buffer[7];
    const char *escape;
    size_t length = 1;
    if (*p < 0x80) {
      escape = ascii_escape(*p, buffer);
    } else {
      length = preempt_utf8_sequence_length(p, SIZE_MAX);
      escape = length ? NULL : "\\ufffd";
      if (!length)
        length = 1; /* only this byte: the next one may start a good sequence */
    }
    if (escape) {
      fwrite(run, 1, (size_t)(p - run), out);
      fputs(escape, out);
      run = p + length;
    }
    p += length;
  }
  fwrite(run, 1, (size_t)(p - run), out);
  putc('"', out);
  /* The error flag, not the calls' results: after a refused write glibc's fwrite on an unbuffered stream can still
   * return the full count. */
  return ferror(out) ? -1 : 0;
}
