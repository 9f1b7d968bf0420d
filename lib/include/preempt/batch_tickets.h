/* batch_tickets.h: which tasks a fetched ticket names: strided batches that keep running CTAs on neighbouring tasks.
 * FLEP §4.1 (amortizing factor L: tasks per fetch and per yield check), EffiSha §6.3; issue 3's overhead goal. */
#ifndef PREEMPT_BATCH_TICKETS_H
#define PREEMPT_BATCH_TICKETS_H

/* Shared, header-only, by the device task loop (runtime-dev/task_loop.cu) and
 * the host's unit test: both must map tickets to tasks identically. */
#if defined(__CUDA__) || defined(__HIP__)
#define PREEMPT_TICKET_FN static __attribute__((host, device)) __attribute__((always_inline)) inline
#else
#define PREEMPT_TICKET_FN static inline
#endif

/* A CTA takes a batch by taking the next ticket from the launch's counter: one
 * atomic per batch. The tickets come in rounds of `stride` (the launch's full
 * persistent CTA count); ticket p of a round starting at task `base` with batch
 * size b names the tasks base + p, base + p + stride, ..., b of them: while
 * the CTAs go through their batches side by side, they run neighbouring tasks,
 * as the hardware dispatches an original grid. Contiguous batches (task p*b
 * onwards) spread the running CTAs over stride * b tasks and cost streaming
 * kernels up to 7% of their time on the H100 (bench/preemption/overhead_parts.cu).
 *
 * The batch size is the check interval while at least two full rounds' worth of
 * tasks are left, then half of what is left per CTA (guided self-scheduling),
 * at least 1: the last batches are short, so no CTA holds up the end.
 * A batch, once taken, is run whole (its yield check comes before the fetch). */
/* The most tasks per batch (and per yield check) the runtime asks for. */
#define PREEMPT_MAX_CHECK_INTERVAL 1024u

typedef struct preempt_ticket_batch {
  unsigned int first; /* first task id */
  unsigned int count; /* tasks: first, first + stride, ... (0: no task left) */
} preempt_ticket_batch;

PREEMPT_TICKET_FN unsigned int preempt_ticket_round_size(unsigned int left, unsigned int stride,
                                                         unsigned int interval) {
  unsigned int guided = left / (2u * stride);
  if (guided < 1u)
    guided = 1u;
  return guided < interval ? guided : interval;
}

/* The check interval a launch really uses: at least 1, at most
 * PREEMPT_MAX_CHECK_INTERVAL, and small enough that stride * interval stays
 * below 2^24 (the bound preempt_ticket_batch_of needs). */
PREEMPT_TICKET_FN unsigned int preempt_ticket_interval(unsigned int interval, unsigned int stride) {
  unsigned int most = (1u << 24) / (stride ? stride : 1u);
  if (most > PREEMPT_MAX_CHECK_INTERVAL)
    most = PREEMPT_MAX_CHECK_INTERVAL;
  if (most < 1u)
    most = 1u;
  if (interval < 1u)
    interval = 1u;
  return interval < most ? interval : most;
}

/* `interval` and `stride` at least 1, stride * interval below 2^24 (the
 * runtime caps the interval at 1024 and a GPU holds far fewer than 2^14 CTAs),
 * task_count at most PREEMPT_MAX_TASKS (task_grid.h): every sum below then
 * fits 32 bits, and the divisions stay 32-bit, cheap on a GPU. */
PREEMPT_TICKET_FN preempt_ticket_batch preempt_ticket_batch_of(unsigned int ticket, unsigned int task_count,
                                                               unsigned int stride, unsigned int interval) {
  preempt_ticket_batch batch = {0u, 0u};
  unsigned int round_tasks = stride * interval;
  /* Rounds of full batches come first: while 2 * round_tasks are left. */
  unsigned int full_rounds = task_count / round_tasks;
  full_rounds = full_rounds >= 2u ? full_rounds - 1u : 0u;
  unsigned int round = ticket / stride;
  unsigned int base, size;
  if (round < full_rounds) {
    base = round * round_tasks;
    size = interval;
  } else {
    unsigned int walked = full_rounds;
    base = full_rounds * round_tasks;
    for (;;) {
      if (base >= task_count)
        return batch;
      size = preempt_ticket_round_size(task_count - base, stride, interval);
      if (walked == round)
        break;
      base += size * stride;
      walked++;
    }
  }
  unsigned int lane = ticket - round * stride;
  if (lane >= task_count - base)
    return batch;
  unsigned int first = base + lane;
  unsigned int reach = (task_count - first - 1u) / stride + 1u; /* tasks left on this lane */
  batch.first = first;
  batch.count = reach < size ? reach : size;
  return batch;
}

#endif
