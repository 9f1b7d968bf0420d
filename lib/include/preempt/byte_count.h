/* byte_count.h: byte counts as users write them in the environment and on command lines ("16G", "100M").
 * Shared by memory admission's settings (schedGPU §4's budgets, PREEMPT_MEM_BUDGET) and its test programs. */
#ifndef PREEMPT_BYTE_COUNT_H
#define PREEMPT_BYTE_COUNT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Digits with an optional K, M, G or T (powers of 1024, either case) and nothing after. 0 and *bytes set,
 * or -1 for anything else, an overflow included. */
int preempt_parse_byte_count(const char *text, uint64_t *bytes);
/* The inverse, for messages: the largest of T, G, M, K that divides the count exactly ("40G", "768K"), else bytes. */
void preempt_format_byte_count(uint64_t bytes, char *text, size_t text_bytes);

#ifdef __cplusplus
}
#endif

#endif
