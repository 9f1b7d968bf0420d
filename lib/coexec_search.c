/* coexec_search.c: the online search of the co-execution space, fed the task execution rates it asks for.
 * FlexSched §4.4 (WS_TER, Eq. 3), §5.4.1 (hill climbing for throughput), §5.5 (latency-sensitive kernel). */
#include <float.h>
#include <math.h>

#include "preempt/coexec.h"

/* One term of Eq. 3. A kernel that made no progress in k makes any progress in j an unbounded gain; half of
 * DBL_MAX keeps that finite and still finite when the two terms are summed. */
static double rate_ratio(double rate_j, double rate_k) {
  if (rate_k == 0)
    return rate_j == 0 ? 1.0 : DBL_MAX / 2;
  return rate_j / rate_k;
}

/* Without operands there is no speedup: 0 is "not better", so a search fed nonsense never moves. */
double preempt_coexec_weighted_speedup(const preempt_coexec_rates *j, const preempt_coexec_rates *k) {
  if (!j || !k)
    return 0;
  return (rate_ratio(j->a, k->a) + rate_ratio(j->b, k->b)) / 2;
}

static int rate_is_sample(double rate) { return isfinite(rate) && rate >= 0; }

static preempt_coexec_step settle(preempt_coexec_search *search, uint32_t index) {
  search->settled = 1;
  search->current = index;
  preempt_coexec_step step = {PREEMPT_COEXEC_SETTLED, index};
  return step;
}

static preempt_coexec_step measure(preempt_coexec_search *search, uint32_t index) {
  search->current = index;
  preempt_coexec_step step = {PREEMPT_COEXEC_MEASURE, index};
  return step;
}

/* The neighbour of `index` in `direction`, or 0 when that walks off the space. */
static int neighbour(const preempt_coexec_search *search, uint32_t index, int32_t direction, uint32_t *next) {
  if (direction > 0 ? index + 1 >= search->count : index == 0)
    return 0;
  *next = direction > 0 ? index + 1 : index - 1;
  return 1;
}

preempt_coexec_status preempt_coexec_search_start(preempt_coexec_search *search, preempt_coexec_mode mode,
                                                  uint32_t count, uint32_t start, double min_rate_a,
                                                  preempt_coexec_step *first) {
  if (!search || !first || count == 0 || start >= count)
    return PREEMPT_COEXEC_INVALID_ARGUMENT;
  if (mode != PREEMPT_COEXEC_THROUGHPUT && mode != PREEMPT_COEXEC_LATENCY)
    return PREEMPT_COEXEC_INVALID_ARGUMENT;
  if (mode == PREEMPT_COEXEC_LATENCY && !(min_rate_a >= 0)) /* NaN fails too */
    return PREEMPT_COEXEC_INVALID_ARGUMENT;
  search->mode = mode;
  search->min_rate_a = min_rate_a;
  search->count = count;
  /* FlexSched §5.5: the latency-sensitive kernel starts with the most CTAs it can have and gives them up. */
  search->start = mode == PREEMPT_COEXEC_LATENCY ? count - 1 : start;
  search->best = search->start;
  search->direction = search->start == count - 1 ? -1 : +1;
  search->measured = 0;
  search->turned = 0;
  search->settled = 0;
  search->best_rates.a = search->best_rates.b = 0;
  /* A single configuration leaves nothing to compare: measuring it would only delay keeping it. */
  *first = count == 1 ? settle(search, 0) : measure(search, search->start);
  return PREEMPT_COEXEC_OK;
}

/* FlexSched §5.5: keep giving A's CTAs to B while A keeps its minimum rate; the first miss restores the last
 * configuration that met it. The most A can have is kept when even that misses: nothing does better for A. */
static preempt_coexec_step latency_feed(preempt_coexec_search *search, const preempt_coexec_rates *rates) {
  uint32_t next;
  if (rates->a < search->min_rate_a)
    return settle(search, search->best); /* best is still start when start itself misses */
  search->best = search->current;
  search->best_rates = *rates;
  if (!neighbour(search, search->current, search->direction, &next))
    return settle(search, search->current);
  return measure(search, next);
}

/* FlexSched §5.4.1: climb while WS_TER of the next configuration over the best so far exceeds one. A first
 * step that is not better only says that direction is downhill, so the other side of `start` gets one try,
 * compared against start's own rates (FlexSched Fig. 6, the (4,4) then (6,2) path). */
static preempt_coexec_step throughput_feed(preempt_coexec_search *search, const preempt_coexec_rates *rates) {
  uint32_t next;
  if (search->measured == 1) {
    search->best_rates = *rates;
  } else if (preempt_coexec_weighted_speedup(rates, &search->best_rates) > 1) {
    search->best = search->current;
    search->best_rates = *rates;
  } else {
    int first_step_failed = search->best == search->start;
    if (first_step_failed && !search->turned && neighbour(search, search->start, -search->direction, &next)) {
      search->turned = 1;
      search->direction = -search->direction;
      return measure(search, next);
    }
    return settle(search, search->best);
  }
  /* Reaching an end while still improving: the end is the best there is. */
  if (!neighbour(search, search->current, search->direction, &next))
    return settle(search, search->current);
  return measure(search, next);
}

preempt_coexec_status preempt_coexec_search_feed(preempt_coexec_search *search, const preempt_coexec_rates *rates,
                                                 preempt_coexec_step *next) {
  if (!search || !rates || !next || search->count == 0 || search->current >= search->count)
    return PREEMPT_COEXEC_INVALID_ARGUMENT;
  if (search->settled) {
    next->kind = PREEMPT_COEXEC_SETTLED;
    next->index = search->current;
    return PREEMPT_COEXEC_OK;
  }
  /* Checked before anything changes, so the caller may measure again and feed a good sample. */
  if (!rate_is_sample(rates->a) || !rate_is_sample(rates->b))
    return PREEMPT_COEXEC_BAD_SAMPLE;
  search->measured++;
  *next = search->mode == PREEMPT_COEXEC_LATENCY ? latency_feed(search, rates) : throughput_feed(search, rates);
  return PREEMPT_COEXEC_OK;
}
