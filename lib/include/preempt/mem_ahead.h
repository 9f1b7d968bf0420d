/* mem_ahead.h: reserve-ahead for memory admission through preemptd: how much more than an allocation needs a process
 * asks the daemon for, and how much of what it holds unallocated it gives back (schedGPU §4's pre-allocation step). */
#ifndef PREEMPT_MEM_AHEAD_H
#define PREEMPT_MEM_AHEAD_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What one process may hold admitted but unallocated: the setting (PREEMPT_MEM_AHEAD), at most 1/2048 of the
 * GPU's memory, so that 48 processes (MPS's client limit) keep at most ~2.3% of it from the others. */
uint64_t preempt_mem_ahead_size(uint64_t setting, uint64_t capacity);

/* The bytes to ask for beyond `need`: preempt_mem_ahead_size, or 0 when the daemon's last answer said that anyone
 * waits, or left less than `need` plus it plus an eighth of the GPU free (a bigger request must never be what
 * makes a process wait), or when there was no answer yet (free_seen 0). */
uint64_t preempt_mem_ahead_ask(uint64_t setting, uint64_t capacity, uint64_t free_seen, uint32_t waiting_seen,
                               uint64_t need);

/* Of `spare` held unallocated, what to give back now: all of it when anyone waited at the last answer, the part
 * above one ahead size once it passes two (hysteresis: an allocate-free loop sends nothing), else 0. */
uint64_t preempt_mem_ahead_excess(uint64_t setting, uint64_t capacity, uint64_t spare, uint32_t waiting_seen);

#ifdef __cplusplus
}
#endif

#endif
