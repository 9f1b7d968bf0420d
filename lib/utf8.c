/* utf8.c: the length of a well-formed UTF-8 sequence (Unicode's Table 3-7), the one check the tools' JSON and
 * preemptd's Prometheus labels share. Serves text other users' processes name (FLEP §3: one daemon per node). */
#include "preempt/utf8.h"

size_t preempt_utf8_sequence_length(const unsigned char *p, size_t available) {
  unsigned char lead = p[0], low = 0x80, high = 0xbf;
  size_t length;
  if (lead >= 0xc2 && lead <= 0xdf)
    length = 2;
  else if (lead >= 0xe0 && lead <= 0xef)
    length = 3;
  else if (lead >= 0xf0 && lead <= 0xf4)
    length = 4;
  else
    return 0;
  if (available < length)
    return 0;
  /* The second byte's range depends on the lead: that one check refuses overlong forms, surrogates and code points
   * past U+10FFFF. */
  if (lead == 0xe0)
    low = 0xa0; /* below it the code point fits in two bytes */
  else if (lead == 0xed)
    high = 0x9f; /* above it U+D800..U+DFFF */
  else if (lead == 0xf0)
    low = 0x90; /* below it the code point fits in three bytes */
  else if (lead == 0xf4)
    high = 0x8f; /* above it past U+10FFFF */
  if (p[1] < low || p[1] > high)
    return 0;
  for (size_t i = 2; i < length; i++)
    if ((p[i] & 0xc0) != 0x80)
      return 0;
  return length;
}
