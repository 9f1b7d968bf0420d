/* schedule.h: the data a GPU scheduler works on (kernels, SMs, decisions) and the one policy interface.
 * FLEP §3, §5 (priority queues, T_e/T_w/T_r triplets), EffiSha §6.1 (kernel states) and §7 (policies). */
#ifndef PREEMPT_SCHEDULE_H
#define PREEMPT_SCHEDULE_H

#include <stdbool.h>
#include <stdint.h>

#include "preempt/coexec.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Times are microseconds as double: a kernel spatially squeezed onto part of
 * its SMs progresses at a fractional rate, and its completion time is not a
 * whole microsecond. */
typedef double preempt_usec;

typedef enum preempt_sched_status {
  PREEMPT_SCHED_OK = 0,
  PREEMPT_SCHED_INVALID_ARGUMENT = 1,
  PREEMPT_SCHED_FULL = 2,           /* a fixed-size table (kernels, decisions) is full */
  PREEMPT_SCHED_UNKNOWN_KERNEL = 3, /* no kernel with that id */
  PREEMPT_SCHED_UNKNOWN_POLICY = 4,
  PREEMPT_SCHED_BAD_DECISION = 5,   /* a policy asked for something the state forbids */
  PREEMPT_SCHED_NO_DATA = 6,        /* a model asked to predict before it has seen anything */
  PREEMPT_SCHED_OUT_OF_MEMORY = 7,
  PREEMPT_SCHED_UNKNOWN_PARAMETER = 8, /* preempt_sched_params_set: no tunable of that name */
} preempt_sched_status;

const char *preempt_sched_status_name(preempt_sched_status status);

/* EffiSha §6.1's kernel states, in their lifecycle order. */
typedef enum preempt_kernel_state {
  PREEMPT_KERNEL_PREP = 0,    /* stub taken, launch not reached yet */
  PREEMPT_KERNEL_READY = 1,   /* waiting for the GPU (never run, or evicted) */
  PREEMPT_KERNEL_TORUN = 2,   /* the scheduler said run; the client has not launched yet */
  PREEMPT_KERNEL_RUNNING = 3,
  PREEMPT_KERNEL_TOEVICT = 4, /* asked to leave every SM; draining its in-flight tasks */
  PREEMPT_KERNEL_DONE = 5,
} preempt_kernel_state;

const char *preempt_kernel_state_name(preempt_kernel_state state);

/* H100 has 132 SMs; 256 leaves room without making the state large. */
#define PREEMPT_SCHED_MAX_SMS 256
#define PREEMPT_SCHED_MAX_KERNELS 256
#define PREEMPT_SCHED_MAX_DECISIONS 64

typedef struct preempt_sm_set {
  uint64_t bits[PREEMPT_SCHED_MAX_SMS / 64];
} preempt_sm_set;

void preempt_sm_set_clear(preempt_sm_set *set);
void preempt_sm_set_add(preempt_sm_set *set, uint32_t sm);
bool preempt_sm_set_has(const preempt_sm_set *set, uint32_t sm);
uint32_t preempt_sm_set_count(const preempt_sm_set *set);

/* Policy-owned bookkeeping: only the policy writes these; the caller zeroes them on arrival. */
typedef struct preempt_kernel_policy_data {
  preempt_usec slice_end;          /* DPRR quota / FFS epoch end; 0 when not running */
  uint64_t round_turn;             /* FFS: when it joined the round-robin queue (a counter) */
  uint32_t dprr_queue;             /* DPRR: 0 = active queue, 1 = inactive */
  preempt_usec dprr_active_since;  /* DPRR: when it started waiting in the active queue (-1: not) */
  preempt_usec dprr_active_waited; /* DPRR: waiting in the active queue before active_since */
} preempt_kernel_policy_data;

/* A kernel launch as the scheduler sees it. */
typedef struct preempt_sched_kernel {
  uint32_t id;                   /* unique per launch, never 0 */
  uint32_t client_id;
  int32_t priority;              /* larger is more urgent (EffiSha §7 and FLEP §3 both) */
  uint32_t weight;               /* FFS share weight (FLEP §5.2.2 W_i), >= 1 */
  preempt_usec predicted;        /* T_e: predicted standalone duration, never updated */
  preempt_usec remaining;        /* T_r: predicted remaining standalone time */
  preempt_usec waited;           /* T_w: time spent active but not running */
  preempt_usec arrival;
  preempt_usec eviction_cost;    /* estimated cost of evicting it from every SM (FLEP §4.2) */
  uint32_t sms_needed;           /* SMs that hold all its CTAs; >= sm_count means the whole GPU */
  preempt_kernel_state state;
  preempt_sm_set sms;            /* SMs it holds (running or draining) */
  uint32_t evictions;
  /* FlexSched co-execution (§4.2-§4.4). cta_quota is what the last QUOTA decision gave it (0: none, its SMs at
   * full occupancy); the rest is the caller's: the CTA footprint from the launch (registers_per_thread 0 =
   * unknown: never co-located), its task count, and the latest progress sample (tasks taken so far, at
   * progress_at on the scheduler's clock; progress_at 0 = no sample yet). */
  uint32_t cta_quota;
  preempt_cta_footprint footprint;
  uint32_t task_count;
  uint64_t progress_tasks;
  preempt_usec progress_at;
  preempt_kernel_policy_data policy;
} preempt_sched_kernel;

/* What runs where. An SM draining an eviction is still held by its owner
 * until the eviction finishes; nothing else may be placed on it.
 * Kernels under a CTA quota (QUOTA decisions) share SMs: each holds every SM in its own `sms`, sm_owner names
 * the first of them to get there (ownership passes to another holder when the owner leaves), and sm_draining
 * follows the owner. 0 in sm_owner therefore still means that nobody holds the SM. */
typedef struct preempt_sched_gpu {
  uint32_t sm_count;
  uint32_t sm_owner[PREEMPT_SCHED_MAX_SMS];  /* kernel id, 0 when idle */
  bool sm_draining[PREEMPT_SCHED_MAX_SMS];
  preempt_sm_limits limits;                  /* what one SM holds (FlexSched §4.3); all zero: unknown */
  /* Without MPS the driver time-slices between processes' contexts (FLEP §6.3, FlexSched §2): kernels of two
   * clients never run at once, so one client holds the GPU at a time, every eviction is of every SM, and a full
   * eviction frees its SMs at once (the evicted kernel's CTAs leave while the next client's context runs). */
  bool time_slicing;
} preempt_sched_gpu;

/* Tunables of all policies; preempt_sched_params_default fills the papers' values. */
typedef struct preempt_sched_params {
  double max_overhead;             /* FFS: share of time eviction cost may take (FLEP §6.3.3: 0.10) */
  preempt_usec ffs_min_epoch;      /* FFS: floor on T when eviction cost is ~0 */
  bool hpf_spatial;                /* HPF: evict only the SMs a waiting kernel needs (FLEP §6.4) */
  preempt_usec dprr_age_step;      /* DPRR: +1 dynamic priority per this much waiting (EffiSha §7: 1 ms) */
  int32_t dprr_age_cap;            /* DPRR: most the dynamic priority rises (EffiSha §7: 20) */
  preempt_usec dprr_slice_unit;    /* DPRR: slice = (p + 1) * unit (EffiSha §7: (p+1)/2 ms) */
  preempt_usec flexsched_period;   /* flexsched: one measurement window, and the settle window before it (2 ms) */
  double flexsched_slowdown;       /* flexsched: 0 = throughput (§5.4); else latency (§5.5): minimum TER fraction */
  int32_t flexsched_fixed;         /* flexsched: -1 = search; N = always configuration min(N, count - 1) */
} preempt_sched_params;

void preempt_sched_params_default(preempt_sched_params *params);

/* Sets one tunable from text, by its field name: what preempt-sim's "param NAME=VALUE" and preemptd's
 * --param NAME=VALUE take.
 *   max_overhead                                  a number strictly between 0 and 1
 *   ffs_min_epoch, dprr_age_step, dprr_slice_unit  a time > 0: microseconds, optionally with "us", or "ms"
 *   flexsched_period                              a time > 0
 *   hpf_spatial                                   0 or 1
 *   dprr_age_cap                                  an integer 0..1000
 *   flexsched_slowdown                            a number in [0, 1)
 *   flexsched_fixed                               an integer -1..63
 * The whole value must be the number (no leading blanks, nothing after it but the unit); NaN and infinities
 * are refused. Returns OK (and *why = NULL), UNKNOWN_PARAMETER, or INVALID_ARGUMENT (a bad value, or a NULL
 * argument); on failure *params is unchanged and *why (when why is not NULL) is a static message meant to be
 * followed by the quoted name (UNKNOWN_PARAMETER) or the quoted value (INVALID_ARGUMENT), e.g.
 * `hpf_spatial must be 0 or 1, got "2"`. */
preempt_sched_status preempt_sched_params_set(preempt_sched_params *params, const char *name, const char *value,
                                              const char **why);

/* FlexSched's own bookkeeping (schedule_flexsched.c), policy-owned like policy_turn_counter: the pair that co-runs,
 * the search over its configuration space, and the measurement window under way. */
typedef enum preempt_flexsched_phase {
  PREEMPT_FLEXSCHED_IDLE = 0,      /* no pair: nothing or one kernel runs, or kernels run one at a time */
  PREEMPT_FLEXSCHED_SETTLE = 1,    /* a configuration was just applied; the timer ends its settle window */
  PREEMPT_FLEXSCHED_MEASURE = 2,   /* the window whose rates the search is fed */
  PREEMPT_FLEXSCHED_SETTLED = 3,   /* the search is over; no timer */
  PREEMPT_FLEXSCHED_EVICTING = 4,  /* latency mode: the batch kernel leaves so A runs alone */
  PREEMPT_FLEXSCHED_ALONE_SETTLE = 5,  /* latency mode: A alone, settling */
  PREEMPT_FLEXSCHED_ALONE_MEASURE = 6, /* latency mode: A alone, its alone rate R measured */
} preempt_flexsched_phase;

/* One measured configuration (or A's alone rate), kept for the caller to report: the policy itself never logs. */
typedef struct preempt_flexsched_measurement {
  uint32_t a, b;                   /* the pair (b 0: A measured alone) */
  uint32_t config;                 /* index into the pair's space */
  preempt_coexec_config ctas;      /* CTAs per SM of A and B in it */
  preempt_coexec_rates rates;      /* tasks per µs */
  double weighted_speedup;         /* Eq. 3 against the search's best so far; 1 for the first or a fixed one */
  bool stale_a, stale_b;           /* no fresh sample after the retries: that rate was taken as 0 */
} preempt_flexsched_measurement;

typedef struct preempt_flexsched_data {
  preempt_flexsched_phase phase;
  uint32_t a, b;                   /* kernel ids: A ran first (or is latency-sensitive), B joined; 0: none */
  bool latency;                    /* the pair's search is a LATENCY one (§5.5) */
  bool fixed;                      /* flexsched_fixed chose the configuration: measured once, never searched */
  preempt_coexec_space space;
  preempt_coexec_search search;
  uint32_t config;                 /* the configuration applied now (index into space) */
  preempt_usec window_start;       /* when the current window began */
  uint64_t start_tasks_a, start_tasks_b; /* the samples a measurement window starts from */
  preempt_usec start_at_a, start_at_b;   /* 0: none yet */
  uint32_t retries;                /* windows waited for fresh samples in this configuration (at most 3) */
  uint32_t alone_kernel;           /* whose alone rate alone_rate_a is (latency mode); 0: none measured */
  double alone_rate_a;             /* R, tasks per µs */
  /* For the caller's log: each counter moves when the policy measured a configuration, settled, or measured
   * A alone; `last` is that measurement (the settled configuration is `config` of the pair a, b). */
  uint64_t measurement_serial, settled_serial, alone_serial;
  preempt_flexsched_measurement last;
} preempt_flexsched_data;

typedef struct preempt_sched_state {
  preempt_usec now;
  preempt_sched_gpu gpu;
  preempt_sched_params params;
  uint32_t kernel_count;           /* including DONE ones until removed */
  preempt_sched_kernel kernels[PREEMPT_SCHED_MAX_KERNELS];
  uint64_t policy_turn_counter;    /* FFS: policy-owned */
  preempt_flexsched_data flexsched; /* flexsched: policy-owned */
} preempt_sched_state;

typedef enum preempt_sched_event_kind {
  PREEMPT_EVENT_ARRIVAL = 0,
  PREEMPT_EVENT_COMPLETION = 1,
  PREEMPT_EVENT_EVICTION_DONE = 2, /* some or all of the kernel's SMs are free now */
  PREEMPT_EVENT_TIMER = 3,
} preempt_sched_event_kind;

const char *preempt_sched_event_name(preempt_sched_event_kind kind);

typedef struct preempt_sched_event {
  preempt_sched_event_kind kind;
  uint32_t kernel_id;              /* 0 for TIMER */
} preempt_sched_event;

typedef enum preempt_sched_action {
  PREEMPT_ACTION_NOTHING = 0,
  PREEMPT_ACTION_RUN = 1,          /* launch or resume kernel_id on `sms` (all of them when all_sms) */
  PREEMPT_ACTION_EVICT = 2,        /* evict kernel_id from `sms` (every SM it holds when all_sms) */
  /* FlexSched §4.2: run kernel_id on every SM with at most `quota` CTAs per SM (READY -> TORUN, or a RUNNING
   * kernel's new quota); it may share SMs with other kernels under a quota. */
  PREEMPT_ACTION_QUOTA = 3,
} preempt_sched_action;

typedef struct preempt_sched_decision {
  preempt_sched_action action;
  uint32_t kernel_id;
  bool all_sms;
  preempt_sm_set sms;
  uint32_t quota;                  /* QUOTA: CTAs per SM, >= 1 */
} preempt_sched_decision;

typedef struct preempt_sched_decisions {
  uint32_t count;
  preempt_sched_decision items[PREEMPT_SCHED_MAX_DECISIONS];
  preempt_usec timer_at;           /* when the policy wants a TIMER event; 0 for none */
} preempt_sched_decisions;

/* A policy reads the state and the event and appends decisions. It may write
 * only kernel.policy and the policy-owned parts of the state (policy_turn_counter, flexsched); the caller
 * applies the decisions (preempt_sched_apply) and owns everything else (cta_quota, progress samples...). */
typedef struct preempt_sched_policy {
  const char *name;
  preempt_sched_status (*decide)(preempt_sched_state *state, const preempt_sched_event *event,
                                 preempt_sched_decisions *out);
} preempt_sched_policy;

extern const preempt_sched_policy preempt_policy_fifo;
extern const preempt_sched_policy preempt_policy_hpf;
extern const preempt_sched_policy preempt_policy_ffs;
extern const preempt_sched_policy preempt_policy_piv;
extern const preempt_sched_policy preempt_policy_dprr;
extern const preempt_sched_policy preempt_policy_flexsched;

/* "fifo", "hpf", "ffs", "piv", "dprr" or "flexsched". */
preempt_sched_status preempt_sched_policy_by_name(const char *name, const preempt_sched_policy **out);

/* --- state helpers shared by the policies, the simulator and the daemon --- */

preempt_sched_status preempt_sched_state_init(preempt_sched_state *state, uint32_t sm_count,
                                              const preempt_sched_params *params);
/* Adds a READY kernel at state->now; `kernel` gives id, client, priority, weight,
 * predicted, eviction_cost, sms_needed, footprint, task_count; the rest is reset. */
preempt_sched_status preempt_sched_add_kernel(preempt_sched_state *state, const preempt_sched_kernel *kernel);
preempt_sched_kernel *preempt_sched_find(preempt_sched_state *state, uint32_t kernel_id);
/* SMs the kernel uses at full speed: min(sms_needed, sm_count), at least 1. */
uint32_t preempt_sched_sms_wanted(const preempt_sched_state *state, const preempt_sched_kernel *kernel);
/* SMs nobody holds. */
void preempt_sched_free_sms(const preempt_sched_state *state, preempt_sm_set *out);

/* Moves the clock to `now`: a kernel holding SMs loses predicted remaining time
 * at held/wanted of full speed (draining SMs still finish their tasks), a READY
 * one accumulates waiting time (FLEP §5.1's T_r and T_w). */
preempt_sched_status preempt_sched_advance(preempt_sched_state *state, preempt_usec now);

/* Appends one decision; PREEMPT_SCHED_FULL when out has no room. */
preempt_sched_status preempt_sched_push(preempt_sched_decisions *out, preempt_sched_action action,
                                        uint32_t kernel_id, const preempt_sm_set *sms_or_null_for_all);

/* Appends a QUOTA decision (quota >= 1); PREEMPT_SCHED_FULL when out has no room. */
preempt_sched_status preempt_sched_push_quota(preempt_sched_decisions *out, uint32_t kernel_id, uint32_t quota);

/* Applies a decision: RUN takes free SMs and makes the kernel RUNNING (via
 * TORUN, which the daemon holds until the client launches) with no quota; QUOTA gives a READY or RUNNING kernel
 * every SM (shared with other quota kernels) and sets its cta_quota; EVICT marks SMs draining (and the kernel
 * TOEVICT when it loses every SM; a kernel under a quota is evicted from every SM only). */
preempt_sched_status preempt_sched_apply(preempt_sched_state *state, const preempt_sched_decision *decision);
/* Releases a kernel's draining SMs once its eviction finished; READY when it holds nothing else. */
preempt_sched_status preempt_sched_eviction_done(preempt_sched_state *state, uint32_t kernel_id);
/* Marks a kernel DONE and frees every SM it held. */
preempt_sched_status preempt_sched_complete(preempt_sched_state *state, uint32_t kernel_id);
/* Drops a DONE kernel from the table (which is fixed-size: a long-running caller such as the daemon
 * must, or the table fills); the others keep their order. BAD_DECISION when the kernel is not DONE. */
preempt_sched_status preempt_sched_remove_kernel(preempt_sched_state *state, uint32_t kernel_id);

#ifdef __cplusplus
}
#endif
#endif
