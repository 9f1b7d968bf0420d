/* coexec.h: co-execution of two converted kernels on every SM: the configuration space and its online search.
 * FlexSched §4.3 (co-execution configuration space), §4.4 (TER, WS_TER), §5.4.1 (hill climbing), §5.5 (latency). */
#ifndef PREEMPT_COEXEC_H
#define PREEMPT_COEXEC_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum preempt_coexec_status {
  PREEMPT_COEXEC_OK = 0,
  PREEMPT_COEXEC_INVALID_ARGUMENT = 1, /* NULL, a zero limit, a footprint that is not a CTA */
  PREEMPT_COEXEC_DOES_NOT_FIT = 2,     /* a kernel's CTA does not fit an SM on its own */
  PREEMPT_COEXEC_NO_SPACE = 3,         /* no configuration with at least one CTA of each kernel */
  PREEMPT_COEXEC_BAD_SAMPLE = 4,       /* a rate that is negative, NaN or infinite */
} preempt_coexec_status;

const char *preempt_coexec_status_name(preempt_coexec_status status);

/* What one SM of the GPU at hand holds, and how it rounds allocations (the CUDA occupancy calculator's
 * inputs; H100: 2048 threads, 32 CTAs, 65536 registers allocated per warp in units of 256, 233472 bytes of
 * shared memory in units of 128 with 1024 reserved per CTA, warps of 32). */
typedef struct preempt_sm_limits {
  uint32_t max_threads;       /* resident threads per SM */
  uint32_t max_ctas;          /* resident CTAs per SM */
  uint32_t registers;         /* 32-bit registers per SM */
  uint32_t register_unit;     /* a warp's registers are allocated in multiples of this */
  uint32_t shared_bytes;      /* shared memory per SM usable by CTAs, reserved bytes included */
  uint32_t shared_unit;       /* a CTA's shared memory is allocated in multiples of this */
  uint32_t shared_reserved;   /* bytes the system reserves per resident CTA */
  uint32_t warp_size;
} preempt_sm_limits;

/* One CTA of a kernel: its threads, registers per thread, and shared memory (static + dynamic). */
typedef struct preempt_cta_footprint {
  uint32_t threads;
  uint32_t registers_per_thread;
  uint32_t shared_bytes;
} preempt_cta_footprint;

/* How many CTAs of one kernel an SM holds alone (its occupancy), or 0 with DOES_NOT_FIT. */
preempt_coexec_status preempt_coexec_ctas_alone(const preempt_sm_limits *limits, const preempt_cta_footprint *cta,
                                                uint32_t *ctas);

/* Whether `ctas_a` CTAs of A and `ctas_b` of B fit one SM together (each resource summed). */
int preempt_coexec_fits(const preempt_sm_limits *limits, const preempt_cta_footprint *a, uint32_t ctas_a,
                        const preempt_cta_footprint *b, uint32_t ctas_b);

/* One co-execution configuration: CTAs of each kernel on every SM (FlexSched's |BSU_1|, |BSU_2|). */
typedef struct preempt_coexec_config {
  uint32_t ctas_a, ctas_b;
} preempt_coexec_config;

#define PREEMPT_COEXEC_MAX_CONFIGS 64

/* FlexSched §4.3, Eq. 1: every (a, b) with a >= 1, b >= 1 that fits and is maximal (neither one more CTA of A
 * nor one more of B fits), in increasing a (so decreasing b). Each a appears at most once, with the largest b
 * that fits beside it; an a whose largest b equals that of a+1 is not maximal and is left out. */
typedef struct preempt_coexec_space {
  uint32_t count;
  preempt_coexec_config configs[PREEMPT_COEXEC_MAX_CONFIGS];
} preempt_coexec_space;

preempt_coexec_status preempt_coexec_space_build(const preempt_sm_limits *limits, const preempt_cta_footprint *a,
                                                 const preempt_cta_footprint *b, preempt_coexec_space *space);

/* The configuration to start a search at when A already runs with `ctas_a` CTAs per SM (FlexSched Fig. 6: the
 * kernel that stays keeps its CTAs and the newcomer fills the room): the index whose ctas_a is the largest not
 * above `ctas_a`, else 0. */
uint32_t preempt_coexec_space_index_for_a(const preempt_coexec_space *space, uint32_t ctas_a);

/* Task execution rates of the two kernels measured over one configuration (FlexSched Eq. 2: tasks per
 * microsecond, from the task counters). */
typedef struct preempt_coexec_rates {
  double a, b;
} preempt_coexec_rates;

/* FlexSched Eq. 3: WS_TER of configuration j over configuration k, (TER_a(j)/TER_a(k) + TER_b(j)/TER_b(k)) / 2.
 * A rate of 0 in k: that term is 1 if j's is 0 too, else large (j strictly better). */
double preempt_coexec_weighted_speedup(const preempt_coexec_rates *j, const preempt_coexec_rates *k);

typedef enum preempt_coexec_mode {
  PREEMPT_COEXEC_THROUGHPUT = 0, /* §5.4.1: hill climbing on WS_TER */
  PREEMPT_COEXEC_LATENCY = 1,    /* §5.5: A is latency-sensitive and must keep TER_a >= min_rate_a */
} preempt_coexec_mode;

typedef enum preempt_coexec_step_kind {
  PREEMPT_COEXEC_MEASURE = 0, /* run configuration `index` and report its rates */
  PREEMPT_COEXEC_SETTLED = 1, /* the search is over: keep configuration `index` */
} preempt_coexec_step_kind;

typedef struct preempt_coexec_step {
  preempt_coexec_step_kind kind;
  uint32_t index; /* into the space */
} preempt_coexec_step;

/* The search as a state machine over plain data: start it, run the configuration it names, feed it that
 * configuration's rates, repeat until SETTLED. It never asks for a configuration twice except to return to
 * the best one.
 *
 * THROUGHPUT (§5.4.1): from `start`, measure the next configuration in one direction (toward more CTAs of A
 * first, unless start is the last index); while WS_TER(next over current) > 1 keep going; at the first step
 * that is not better, settle on the last better one. If the very first step in that direction is not better,
 * try the other direction from `start` once, the same way. Ends at either end of the space too.
 * LATENCY (§5.5): `start` is ignored; begin at the configuration with the most CTAs of A (the last index), and
 * while TER_a >= min_rate_a move to the next one with fewer CTAs of A; the first configuration that violates it
 * sends the search back to the previous one (SETTLED). If even the last index violates it, SETTLED on the last
 * index (the most A can have beside B). */
typedef struct preempt_coexec_search {
  preempt_coexec_mode mode;
  double min_rate_a;
  uint32_t count;            /* configurations in the space */
  uint32_t start;
  uint32_t current;          /* the index being measured */
  uint32_t best;             /* the best measured so far (the one compared against) */
  int32_t direction;         /* +1 toward more CTAs of A, -1 toward fewer */
  uint32_t measured;         /* configurations measured so far */
  uint32_t turned;           /* 1 once the other direction has been tried */
  uint32_t settled;
  preempt_coexec_rates best_rates;
} preempt_coexec_search;

/* Starts a search over `count` configurations (count >= 1, start < count; LATENCY needs min_rate_a >= 0).
 * *first is the first configuration to measure (or SETTLED at once when count is 1). */
preempt_coexec_status preempt_coexec_search_start(preempt_coexec_search *search, preempt_coexec_mode mode,
                                                  uint32_t count, uint32_t start, double min_rate_a,
                                                  preempt_coexec_step *first);

/* Feeds the rates measured over the configuration the last step named; *next is what to do now. After
 * SETTLED, further calls return SETTLED on the same index. */
preempt_coexec_status preempt_coexec_search_feed(preempt_coexec_search *search, const preempt_coexec_rates *rates,
                                                 preempt_coexec_step *next);

#ifdef __cplusplus
}
#endif
#endif
