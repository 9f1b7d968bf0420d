/* schedule_internal.h: ordering and placement helpers the policy files share (not a public interface).
 * FLEP §5.2 (priority queues ordered by a key) and EffiSha §7 (waiting queues ordered by priority). */
#ifndef PREEMPT_SCHEDULE_INTERNAL_H
#define PREEMPT_SCHEDULE_INTERNAL_H

#include <stddef.h>

#include "preempt/schedule.h"

/* Negative when a should be served before b. */
typedef int (*preempt_sched_order_fn)(const preempt_sched_state *state, const preempt_sched_kernel *a,
                                      const preempt_sched_kernel *b);

/* Indices of READY kernels, best first. Returns how many. */
/* Highest priority first, then earliest arrival, then launch order (id): PIV's queue (EffiSha §7, which says
 * nothing of ties) and flexsched's waiting order. */
int preempt_sched_by_priority_then_arrival(const preempt_sched_state *state, const preempt_sched_kernel *a,
                                           const preempt_sched_kernel *b);
uint32_t preempt_sched_ready_in_order(const preempt_sched_state *state, preempt_sched_order_fn order,
                                      uint32_t indices[PREEMPT_SCHED_MAX_KERNELS]);

/* Time-slicing only (gpu.time_slicing): whether a kernel of another client holds SMs, or is started by a RUN
 * already in `out`; contexts of two processes never run at once, so a kernel of `client_id` would only share
 * time slices with it. Always false under MPS. */
bool preempt_sched_other_client_holds(const preempt_sched_state *state, uint32_t client_id,
                                      const preempt_sched_decisions *out);

/* Runs kernels of `order` on free SMs not yet in `claimed`, in order, and stops at
 * the first one that does not fit: letting a later kernel past it would delay it.
 * On return *first_unplaced is the position in `order` where it stopped (count if none). */
preempt_sched_status preempt_sched_start_in_order(preempt_sched_state *state, const uint32_t *order,
                                                  uint32_t count, preempt_sm_set *claimed,
                                                  preempt_sched_decisions *out, uint32_t *first_unplaced);

/* SMs held by kernels but draining an eviction: they will be free soon. */
uint32_t preempt_sched_draining_count(const preempt_sched_state *state);
/* SMs the kernel holds that are not draining. */
uint32_t preempt_sched_working_sms(const preempt_sched_state *state, const preempt_sched_kernel *kernel);
/* True when some kernel other than `except_id` is READY. */
bool preempt_sched_any_ready_other_than(const preempt_sched_state *state, uint32_t except_id);

/* Time-sliced policies (FFS, DPRR): the next running kernel at or after
 * *index whose slice has ended, or NULL. */
preempt_sched_kernel *preempt_sched_next_expired(preempt_sched_state *state, uint32_t *index);

/* A kernel whose slice ended is evicted when another one waits (*evicted
 * true), else it keeps the GPU: evicting a kernel that is alone only costs. */
preempt_sched_status preempt_sched_evict_if_others_wait(preempt_sched_state *state, preempt_sched_kernel *kernel,
                                                        preempt_sched_decisions *out, bool *evicted);

#endif
