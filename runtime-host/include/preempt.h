/* preempt.h: the public C API of preempt's host runtime, the one header applications include.
 * FLEP §3-4 and EffiSha §5-6: persistent launches, temporal and spatial eviction, resumption, states. */
#ifndef PREEMPT_H
#define PREEMPT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Error codes of the runtime's own API. preempt_launch_kernel returns the GPU
 * API's code instead (cudaError_t / hipError_t), as the call it replaces did. */
typedef enum preempt_status {
  PREEMPT_OK = 0,
  PREEMPT_ERROR_INVALID_ARGUMENT = 1,
  PREEMPT_ERROR_GPU = 2,           /* the GPU API failed; the message has its text */
  PREEMPT_ERROR_OUT_OF_MEMORY = 3,
  PREEMPT_ERROR_UNSUPPORTED = 4,   /* e.g. a kernel built for another ABI version */
  PREEMPT_ERROR_FINISHED = 5,      /* the launch has finished: nothing left to evict or resume */
  PREEMPT_ERROR_NOT_READY = 6,     /* not known yet: ask again later */
} preempt_status;

typedef struct preempt_dim3 {
  unsigned int x, y, z;
} preempt_dim3;

/* One per kernel launched from a file compiled with the plugin; emitted by
 * the host pass (passes/LaunchRewrite.cpp), which must match this layout. */
typedef struct preempt_kernel_desc {
  uint32_t desc_version;      /* 1 */
  uint32_t gpu_api;           /* 1 = CUDA, 2 = HIP */
  uint32_t param_count;       /* parameters of the source kernel */
  uint32_t kernel_abi;        /* PREEMPT_KERNEL_ABI_VERSION the plugin was built with */
  const void *host_stub;      /* the kernel's handle for the GPU runtime API */
  const char *name;           /* device-side (mangled) name */
  void *runtime_state;        /* owned by the runtime; null until first launch */
} preempt_kernel_desc;

/* What the runtime found out about a kernel on the current device. */
typedef struct preempt_kernel_info {
  int converted;              /* 1: persistent-thread form, preemptible; 0: launched as written */
  uint32_t ctas_per_sm;       /* occupancy for the last launch configuration */
  uint32_t sm_count;
  uint32_t last_persistent_ctas; /* CTAs of the last persistent launch */
  uint64_t launches;          /* every launch, one-wave ones included */
  uint32_t check_interval;    /* tasks between yield checks in the last launch */
  double task_microseconds;   /* measured task length, 0 until measured */
  /* Launches of the converted kernel whose whole grid fitted in one wave of
   * persistent CTAs and so ran its unconverted copy, as written: fast, but
   * not evictable (no task boundary to yield at) and not tracked. Stays 0
   * under preemptd, with PREEMPT_ONE_WAVE=persistent, or for a kernel built
   * by a plugin that kept no copy. */
  uint64_t one_wave_launches;
  /* Launches that ran the unconverted copy as written because they were not
   * predicted to run PREEMPT_LONG_US or longer (docs/preemption.md,
   * "Launches as written"), and launches inside a stream capture, which the
   * graph captures as written. Neither is tracked nor evictable. */
  uint64_t short_launches;
  uint64_t capture_launches;
  /* Launches that ran as written because nothing in this process could
   * evict them: CUDA loads its modules lazily (no PREEMPT_STRESS, no
   * preemptd socket, no PREEMPT_EVICT_READY=1 at start), and every eviction
   * would be refused (docs/preemption.md, "What a process asks of CUDA"). */
  uint64_t unevictable_launches;
  /* Launches that ran the kernel's drain form (PREEMPT_FORM, docs/preemption.md):
   * the application's grid with a yield gate at each block's entry. */
  uint64_t drain_launches;
  /* In-task launches (PREEMPT_INTASK, docs/intask.md) that ran the kernel's
   * variant in constant chunks, and the shape chosen once both were timed:
   * 0 (not yet, or the kernel has one shape), 1 (chunks of a length set at
   * run time) or 2 (constant chunks). PREEMPT_INTASK_SHAPE can force one. */
  uint64_t intask_chunks_launches;
  int intask_shape;
  /* Persistent launches with prompt yield checks (PREEMPT_PROMPT,
   * docs/preemption.md, "Prompt checks"): each CTA read its yield bit as its
   * next batch was due, not one task ahead. */
  uint64_t prompt_launches;
} preempt_kernel_info;

/* A converted launch: valid from its launch until the runtime reuses its
 * control block, which happens only after it has finished. 0 is no launch. */
typedef uint64_t preempt_launch_id;

/* SM ids (%smid), one bit each; ids need not be dense, so size a mask by the
 * largest id, not by the SM count. */
#define PREEMPT_SM_MASK_WORDS 8
typedef struct preempt_sm_mask {
  uint32_t words[PREEMPT_SM_MASK_WORDS];
} preempt_sm_mask;

typedef enum preempt_launch_state {
  PREEMPT_LAUNCH_RUNNING = 0,
  /* Eviction requested: CTAs on the named SMs leave after their current
   * task. A spatial eviction stays in this state until resumed. */
  PREEMPT_LAUNCH_EVICTING = 1,
  PREEMPT_LAUNCH_EVICTED = 2, /* evicted from every SM and no CTA left running */
  PREEMPT_LAUNCH_DONE = 3,    /* every task finished */
} preempt_launch_state;

/* The host pass calls this in place of cudaLaunchKernel / hipLaunchKernel,
 * with the same arguments but the descriptor first. `stream` is a
 * cudaStream_t / hipStream_t. Returns the GPU API's error code.
 * A converted kernel's launch whose whole grid fits in one wave of
 * persistent CTAs (blocks <= CTAs per SM x SMs) runs the kernel's
 * unconverted copy, as written: no CTA would ever reach a task boundary at
 * which to yield. Such a launch is not tracked and cannot be evicted.
 * PREEMPT_ONE_WAVE=persistent (default "original") runs it in the persistent
 * form instead, as does preemptd when it schedules the process. */
int preempt_launch_kernel(preempt_kernel_desc *kernel, preempt_dim3 grid, preempt_dim3 block, void **args,
                          size_t dynamic_shared_bytes, void *stream);

preempt_status preempt_get_kernel_info(preempt_kernel_desc *kernel, preempt_kernel_info *info);

/* The id of this thread's last launch if it was converted and ran in the
 * persistent form, else 0 (a one-wave launch ran the kernel as written:
 * preempt_kernel_info.one_wave_launches). */
preempt_launch_id preempt_last_launch(void);

/* Asks the launch's CTAs on the SMs in `sms` (NULL: every SM) to leave after
 * their current task; returns at once. Work the application queued after the
 * launch in its stream still waits for every task: resume the launch, or that
 * stream never moves on. Evicting more SMs later adds to the set. */
preempt_status preempt_evict(preempt_launch_id launch, const preempt_sm_mask *sms);

/* Clears the eviction and relaunches CTAs to refill the SMs that were evicted
 * (all of them after a temporal eviction). Unfinished tasks run exactly once. */
preempt_status preempt_resume(preempt_launch_id launch);

preempt_status preempt_query(preempt_launch_id launch, preempt_launch_state *state);

/* How long the launch's last eviction from every SM took on the GPU, in
 * microseconds: from an event the runtime records on its control stream right
 * after the eviction's words to the end of the launch's last grid (the first
 * wave or the latest relaunch), both on the GPU's event clock (about 0.5 us
 * resolution). The host's part is left out: the request's own call, and how
 * soon a query sees the end (preempt_query's answer comes a few microseconds
 * to, when the host thread stalls, milliseconds later). 0 when every CTA had
 * left before the words landed. Needs PREEMPT_TIME_EVICTIONS=1 in the
 * environment, which times two of each launch's events (about 1.4 us of
 * stream time each on the H100): else PREEMPT_ERROR_UNSUPPORTED. NOT_READY
 * until every CTA is gone, and for a launch no eviction of this process has
 * stopped since it last ran (one preemptd held before its first run). The
 * time stays readable after the launch finishes (CTAs that finish the last
 * tasks on their way out), until a newer launch takes its control block:
 * FINISHED then, and for a launch that finished without such an eviction. */
preempt_status preempt_get_eviction_time(preempt_launch_id launch, double *gpu_microseconds);

/* The same for every unfinished converted launch the calling process made on
 * `stream` (a cudaStream_t; 0 is the legacy default stream) on the current
 * device, one-wave launches (which ran as written) excepted. */
preempt_status preempt_evict_stream(void *stream, const preempt_sm_mask *sms);
preempt_status preempt_resume_stream(void *stream);

/* Co-execution (FlexSched §4.2; docs/coexec.md): keeps at most `ctas_per_sm`
 * of the launch's CTAs on every SM, whatever the hardware's placement. A
 * lower quota sends the excess away after their current batch; a higher one
 * launches more CTAs, which leave at once where the SM already holds its
 * quota. A launch that never had a quota is first evicted from every SM and
 * relaunched under it. Refused (UNSUPPORTED) for drained launches, launches
 * preemptd schedules (its flexsched policy sets their quotas), and where an
 * eviction would be; 0 is INVALID_ARGUMENT: preempt_evict gives every SM up. */
preempt_status preempt_set_quota(preempt_launch_id launch, uint32_t ctas_per_sm);

typedef struct preempt_progress {
  uint64_t tasks_taken;   /* task ids handed out so far: FlexSched's TaskCont (Eq. 2) */
  uint32_t task_count;    /* of the launch */
  uint32_t quota;         /* CTAs per SM, 0: none */
  uint32_t resident_ctas; /* quota launches: CTAs counted on their SMs now (0 otherwise) */
  uint32_t most_resident; /* the most on one SM */
  uint32_t occupied_sms;  /* SMs holding at least one */
  uint32_t reserved;
} preempt_progress;

/* Reads the launch's progress from the device (a small copy on the runtime's
 * control stream; it waits for it). FINISHED once the launch has finished. */
preempt_status preempt_get_progress(preempt_launch_id launch, preempt_progress *progress);

/* Yield checks: every `tasks` tasks for this kernel (its <<<>>> handle, e.g.
 * `(const void *)my_kernel`); 0 returns it to the adaptive default, which
 * aims at a check every PREEMPT_CHECK_PERIOD_US microseconds (default 20) from
 * the task length measured on the kernel's first launch (EffiSha §6.3). The
 * environment variable PREEMPT_CHECK_INTERVAL fixes it for every kernel. */
preempt_status preempt_set_check_interval(const void *kernel, uint32_t tasks);

/* The last error this thread met in the runtime, with the GPU API's text, or
 * "" when none. Errors are also printed to stderr unless PREEMPT_QUIET=1. */
const char *preempt_last_error(void);

/* preemptd, the node's scheduling daemon (docs/daemon.md). When it runs, the
 * first converted launch registers with it (PREEMPT_DAEMON=off: never; the
 * socket is $PREEMPT_DAEMON_SOCKET, else /run/preemptd/preemptd.sock), and
 * each converted launch is held until the daemon runs it: the launch call
 * stays asynchronous and stream order is kept, but preempt_query reads
 * EVICTING/EVICTED while the daemon holds or has evicted a launch, and
 * preempt_resume leaves such a launch to the daemon (PREEMPT_OK, nothing
 * done). Without a daemon nothing changes.
 *
 * Asks for this process's priority, -20..20, larger is more urgent
 * (PREEMPT_PRIORITY sets it from the environment; this call wins). The
 * daemon may clamp it: a user other than root gets at most its default,
 * -nice (EffiSha §6.4). When registered, waits (1 s at most) for the daemon's
 * answer; before registration, remembers it for then. Read what was granted
 * with preempt_get_priority. PREEMPT_ERROR_INVALID_ARGUMENT outside -20..20,
 * else PREEMPT_OK (even if the daemon did not answer). */
preempt_status preempt_set_priority(int priority);

/* The priority the daemon granted this process and the most it may ask for
 * (either pointer may be NULL); PREEMPT_ERROR_UNSUPPORTED while not
 * registered with a daemon. */
preempt_status preempt_get_priority(int *granted, int *limit);

/* Releases every device resource the runtime holds; launches after it start
 * afresh. Call after the GPU work is done (or let process exit do it).
 * Launches preemptd still holds run at once, unscheduled, and the runtime
 * leaves the daemon. */
preempt_status preempt_shutdown(void);

/* Memory admission (schedGPU, docs/memory.md). Every device allocation of a program built with the plugin
 * (cudaMalloc and its kin, the cuMemAlloc family; routed by the host pass), or of any program run with
 * LD_PRELOAD=libpreempt_mem.so and the shared CUDA runtime, is first admitted against a ledger of the GPU's
 * memory shared by every such process of the user: one that does not fit waits, served by the policy
 * (PREEMPT_MEM_POLICY=fifo|mmu|priority-fifo|priority-mmu; the process that creates the ledger sets it),
 * until it fits or PREEMPT_MEM_TIMEOUT_MS (default 60000; -1: no limit; 0: never wait) passes, when the
 * allocation fails with the API's out-of-memory error. PREEMPT_MEM=off turns it off.
 *
 * Declares a budget for the current device (schedGPU's explicit mode): reserves `bytes` in the ledger at
 * once, waiting as an allocation would; allocations then draw from it without waiting, and frees return to
 * it. A smaller budget (0) gives back the part no allocation uses. PREEMPT_MEM_BUDGET=bytes (K/M/G/T
 * suffixes) declares one for every device before its first allocation. PREEMPT_ERROR_OUT_OF_MEMORY on
 * timeout or when larger than the GPU, PREEMPT_ERROR_UNSUPPORTED when admission is off or unavailable. */
preempt_status preempt_mem_budget(size_t bytes);

typedef struct preempt_mem_info {
  uint64_t capacity_bytes;    /* the GPU's memory */
  uint64_t external_bytes;    /* used outside the ledger when last looked at (contexts, other programs) */
  uint64_t reserved_bytes;    /* admitted to the ledger's clients */
  uint64_t free_bytes;        /* capacity - external - reserved */
  uint64_t held_bytes;        /* admitted to this process (its budget included) */
  uint64_t budget_bytes, budget_used_bytes;
  uint64_t dead_clients;      /* clients found dead and reclaimed, over the ledger's life */
  uint32_t clients, waiting;  /* processes in the ledger; requests waiting now */
  uint32_t reinitializations; /* times a damaged ledger was started again */
  uint32_t lock_owner_deaths; /* times a process died holding the ledger's lock (and the next one recovered) */
  uint32_t lost_wakeups;      /* grants a waiter found only at its next poll (every 100 ms): nobody woke it */
  char policy[16];
  char ledger[16];            /* who keeps it: "preemptd" (its socket answered) or "shared" (daemonless segment) */
  uint64_t ahead_bytes;       /* of held_bytes, admitted ahead and not allocated (preemptd only; PREEMPT_MEM_AHEAD) */
} preempt_mem_info;

/* The current device's ledger as this process sees it. Under preemptd, lock_owner_deaths, lost_wakeups and
 * reinitializations are 0 (the daemon keeps the ledger in its own memory), and dead_clients counts connections
 * that ended holding memory or waiting. */
preempt_status preempt_mem_get_info(preempt_mem_info *info);

#ifdef __cplusplus
}
#endif
#endif
