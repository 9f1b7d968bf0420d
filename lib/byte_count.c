/* byte_count.c: parses byte counts with a binary-unit suffix ("16G").
 * Memory admission's settings (schedGPU §4, PREEMPT_MEM_BUDGET) and its test programs read sizes this way. */
#include "preempt/byte_count.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

int preempt_parse_byte_count(const char *text, uint64_t *bytes) {
  char *end;
  errno = 0;
  unsigned long long value = strtoull(text, &end, 10);
  if (errno || end == text)
    return -1;
  int shift = 0;
  switch (*end) {
  case 'K': case 'k': shift = 10; end++; break;
  case 'M': case 'm': shift = 20; end++; break;
  case 'G': case 'g': shift = 30; end++; break;
  case 'T': case 't': shift = 40; end++; break;
  default: break;
  }
  if (*end || (shift && value > (UINT64_MAX >> shift)))
    return -1;
  *bytes = (uint64_t)value << shift;
  return 0;
}

void preempt_format_byte_count(uint64_t bytes, char *text, size_t text_bytes) {
  static const char units[] = "TGMK";
  for (int i = 0; i < 4; i++) {
    int shift = 10 * (4 - i);
    if (bytes && bytes % (1ull << shift) == 0) {
      snprintf(text, text_bytes, "%llu%c", (unsigned long long)(bytes >> shift), units[i]);
      return;
    }
  }
  snprintf(text, text_bytes, "%llu", (unsigned long long)bytes);
}
