/* json_text.h: text as one JSON string (RFC 8259), valid JSON whatever bytes the text holds.
 * Serves the tools' JSON output: preemptctl's listing (FLEP §3), preempt-report (CTXBack Fig. 7), preempt-sim. */
#ifndef PREEMPT_JSON_TEXT_H
#define PREEMPT_JSON_TEXT_H

#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Writes `text` to `out` as a JSON string, quotes included. Names come from other users' processes and from input
 * files, so no byte may break the document:
 *   - '"' and '\' are escaped; control characters below 0x20 become \b \t \n \f \r, or \u00xx (lower-case hex) for
 *     the others; DEL and the rest of ASCII stand for themselves;
 *   - a well-formed UTF-8 sequence (RFC 3629) is written unchanged;
 *   - every byte that is not part of one becomes \ufffd, one per byte: a stray continuation byte, a lead byte whose
 *     sequence is cut short (so "\xe2\x82" gives two), an overlong form (0xc0, 0xc1, "\xe0\x80\x80" gives three),
 *     an encoded surrogate U+D800..U+DFFF, a code point past U+10FFFF, and 0xf5..0xff.
 * A NULL text is written as null, JSON's word for no value, so a caller with an optional string needs no branch.
 * Returns 0, or -1 when `out` is in error afterwards (ferror(out)): it refused one of these writes, or an earlier one,
 * which left a hole in the document just the same. errno is as stdio left it. */
int preempt_json_write_string(FILE *out, const char *text);

#ifdef __cplusplus
}
#endif

#endif
