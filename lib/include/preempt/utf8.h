/* utf8.h: the length of a well-formed UTF-8 sequence, for text that other users' processes name and tools print.
 * Serves the tools' JSON (json_text.c) and preemptd's Prometheus labels (metrics_text.c, FLEP §3). */
#ifndef PREEMPT_UTF8_H
#define PREEMPT_UTF8_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The length (2..4) of the well-formed UTF-8 sequence (RFC 3629) that starts with the byte 0x80 or above at `p`,
 * reading at most `available` bytes, or 0: a stray continuation byte, a lead byte whose sequence is cut short, an
 * overlong form, an encoded surrogate U+D800..U+DFFF, a code point past U+10FFFF, 0xf5..0xff. A NUL is no
 * continuation byte, so a NUL-terminated string may pass SIZE_MAX. */
size_t preempt_utf8_sequence_length(const unsigned char *p, size_t available);

#ifdef __cplusplus
}
#endif

#endif
