/* coexec_space.c: how many CTAs of one or two kernels an SM holds, and the co-execution configuration space.
 * FlexSched §4.3 (valid configurations, Eq. 1), §5.4.1 (the space from threads, registers and shared memory). */
#include "preempt/coexec.h"

const char *preempt_coexec_status_name(preempt_coexec_status status) {
  switch (status) {
  case PREEMPT_COEXEC_OK: return "ok";
  case PREEMPT_COEXEC_INVALID_ARGUMENT: return "invalid argument";
  case PREEMPT_COEXEC_DOES_NOT_FIT: return "does not fit";
  case PREEMPT_COEXEC_NO_SPACE: return "no co-execution space";
  case PREEMPT_COEXEC_BAD_SAMPLE: return "bad sample";
  }
  return "unknown status";
}

/* An SM's resources: what it has, what is left of it, or what one CTA takes. 64 bits so that a count of CTAs
 * times a CTA's share never overflows (a share is clamped to one more than the SM has, see cta_share). */
typedef struct sm_amounts {
  uint64_t threads, ctas, registers, shared;
} sm_amounts;

static sm_amounts sm_capacity(const preempt_sm_limits *limits) {
  sm_amounts capacity = {limits->max_threads, limits->max_ctas, limits->registers, limits->shared_bytes};
  return capacity;
}

static uint64_t round_up(uint64_t value, uint64_t unit) { return (value + unit - 1) / unit * unit; }

/* Beyond the SM's amount only "too much" matters; clamping keeps every later product inside 64 bits. */
static uint64_t clamp_above(uint64_t value, uint64_t limit) { return value > limit ? limit + 1 : value; }

/* The CUDA occupancy calculator's rounding: threads and registers are allocated per warp (registers in units
 * per warp), shared memory in units plus a per-CTA reserve. */
static preempt_coexec_status cta_share(const preempt_sm_limits *limits, const preempt_cta_footprint *cta,
                                       sm_amounts *share) {
  if (!limits || !cta || !share)
    return PREEMPT_COEXEC_INVALID_ARGUMENT;
  if (limits->max_threads == 0 || limits->max_ctas == 0 || limits->registers == 0 || limits->register_unit == 0 ||
      limits->shared_bytes == 0 || limits->shared_unit == 0 || limits->warp_size == 0)
    return PREEMPT_COEXEC_INVALID_ARGUMENT;
  if (cta->threads == 0 || cta->threads > limits->max_threads)
    return PREEMPT_COEXEC_INVALID_ARGUMENT;
  uint64_t warps = (cta->threads + (uint64_t)limits->warp_size - 1) / limits->warp_size;
  uint64_t registers_per_warp =
      round_up((uint64_t)cta->registers_per_thread * limits->warp_size, limits->register_unit);
  registers_per_warp = clamp_above(registers_per_warp, limits->registers);
  share->threads = clamp_above(warps * limits->warp_size, limits->max_threads);
  share->ctas = 1;
  share->registers = clamp_above(warps * registers_per_warp, limits->registers);
  share->shared = clamp_above(round_up(cta->shared_bytes, limits->shared_unit) + limits->shared_reserved,
                              limits->shared_bytes);
  return PREEMPT_COEXEC_OK;
}

/* Takes `count` CTAs' shares out of `room`; 0 when one resource runs short (room is then meaningless). */
static int take(sm_amounts *room, const sm_amounts *share, uint64_t count) {
  uint64_t *left[4] = {&room->threads, &room->ctas, &room->registers, &room->shared};
  const uint64_t each[4] = {share->threads, share->ctas, share->registers, share->shared};
  for (int resource = 0; resource < 4; resource++) {
    if (count * each[resource] > *left[resource])
      return 0;
    *left[resource] -= count * each[resource];
  }
  return 1;
}

/* The most CTAs of one share that `room` holds: the tightest resource decides (a share of 0 never does; the
 * CTA slots always bound it). */
static uint32_t ctas_in(const sm_amounts *room, const sm_amounts *share) {
  const uint64_t left[4] = {room->threads, room->ctas, room->registers, room->shared};
  const uint64_t each[4] = {share->threads, share->ctas, share->registers, share->shared};
  uint64_t most = UINT64_MAX;
  for (int resource = 0; resource < 4; resource++)
    if (each[resource] > 0 && left[resource] / each[resource] < most)
      most = left[resource] / each[resource];
  return (uint32_t)most; /* at most max_ctas, a uint32_t */
}

/* The most CTAs of `other` beside `count` CTAs of `fixed`, 0 when even those do not fit. */
static uint32_t ctas_beside(const preempt_sm_limits *limits, const sm_amounts *fixed, uint32_t count,
                            const sm_amounts *other) {
  sm_amounts room = sm_capacity(limits);
  if (!take(&room, fixed, count))
    return 0;
  return ctas_in(&room, other);
}

preempt_coexec_status preempt_coexec_ctas_alone(const preempt_sm_limits *limits, const preempt_cta_footprint *cta,
                                                uint32_t *ctas) {
  if (!ctas)
    return PREEMPT_COEXEC_INVALID_ARGUMENT;
  *ctas = 0;
  sm_amounts share;
  preempt_coexec_status status = cta_share(limits, cta, &share);
  if (status != PREEMPT_COEXEC_OK)
    return status;
  sm_amounts room = sm_capacity(limits);
  *ctas = ctas_in(&room, &share);
  return *ctas > 0 ? PREEMPT_COEXEC_OK : PREEMPT_COEXEC_DOES_NOT_FIT;
}

int preempt_coexec_fits(const preempt_sm_limits *limits, const preempt_cta_footprint *a, uint32_t ctas_a,
                        const preempt_cta_footprint *b, uint32_t ctas_b) {
  sm_amounts share_a, share_b;
  if (cta_share(limits, a, &share_a) != PREEMPT_COEXEC_OK || cta_share(limits, b, &share_b) != PREEMPT_COEXEC_OK)
    return 0;
  sm_amounts room = sm_capacity(limits);
  return take(&room, &share_a, ctas_a) && take(&room, &share_b, ctas_b);
}

/* FlexSched §4.3: a valid configuration keeps every CTA resident and exhausts the SM so that no further CTA
 * of either kernel fits. Those are the corners of a staircase: with b the most CTAs of B beside a CTAs of A,
 * pushing a up as far as b allows gives a corner, and the next corner starts one CTA of A further. Walking
 * corner to corner costs one step per configuration, however many CTA slots the SM has. */
preempt_coexec_status preempt_coexec_space_build(const preempt_sm_limits *limits, const preempt_cta_footprint *a,
                                                 const preempt_cta_footprint *b, preempt_coexec_space *space) {
  if (!space)
    return PREEMPT_COEXEC_INVALID_ARGUMENT;
  space->count = 0;
  sm_amounts share_a, share_b;
  preempt_coexec_status status = cta_share(limits, a, &share_a);
  if (status == PREEMPT_COEXEC_OK)
    status = cta_share(limits, b, &share_b);
  if (status != PREEMPT_COEXEC_OK)
    return status;
  sm_amounts room = sm_capacity(limits);
  if (ctas_in(&room, &share_a) == 0 || ctas_in(&room, &share_b) == 0)
    return PREEMPT_COEXEC_DOES_NOT_FIT;
  uint32_t count = 0;
  for (uint32_t ctas_a = 1;; ctas_a++) {
    uint32_t ctas_b = ctas_beside(limits, &share_a, ctas_a, &share_b);
    if (ctas_b == 0)
      break;
    ctas_a = ctas_beside(limits, &share_b, ctas_b, &share_a);
    if (count == PREEMPT_COEXEC_MAX_CONFIGS)
      return PREEMPT_COEXEC_INVALID_ARGUMENT; /* a truncated space would hide its best configurations */
    space->configs[count].ctas_a = ctas_a;
    space->configs[count].ctas_b = ctas_b;
    count++;
  }
  if (count == 0)
    return PREEMPT_COEXEC_NO_SPACE;
  space->count = count;
  return PREEMPT_COEXEC_OK;
}

/* FlexSched Fig. 6: the kernel that stays keeps the CTAs it has (no eviction to begin with) and the newcomer
 * takes the room that is left, so start where A has at most what it runs now. */
uint32_t preempt_coexec_space_index_for_a(const preempt_coexec_space *space, uint32_t ctas_a) {
  uint32_t index = 0;
  if (!space)
    return 0;
  for (uint32_t i = 0; i < space->count && i < PREEMPT_COEXEC_MAX_CONFIGS; i++)
    if (space->configs[i].ctas_a <= ctas_a)
      index = i;
  return index;
}
