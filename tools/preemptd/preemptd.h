/* preemptd.h: the daemon's one context object and the functions its files share.
 * FLEP §3 (one scheduler per node sees every launch) and §5 (policies per GPU); EffiSha §6.1 (stubs), §6.4 (limits). */
#ifndef PREEMPTD_H
#define PREEMPTD_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "preempt/daemon_protocol.h"
#include "preempt/duration_model.h"
#include "preempt/mem_ledger.h"
#include "preempt/metrics.h"
#include "preempt/schedule.h"

/* Connections, registered or not (preemptctl's too). More get FULL. */
#define PREEMPTD_MAX_CONNECTIONS 256
/* Connections one user other than root and the daemon's own may hold (connection_limits.c): one user's idle
 * sockets cannot take every slot, yet one user's 64 processes (one connection each: runtime-host/daemon_link.c)
 * are all scheduled. */
#define PREEMPTD_MAX_CONNECTIONS_PER_UID 64
/* Slots only root and the daemon's user may take: several users together still leave the administrator in. */
#define PREEMPTD_RESERVED_CONNECTIONS 8
/* Refused connections kept until their first request arrives, so FULL answers that request's id. */
#define PREEMPTD_MAX_REFUSING 16
/* Refusal entries one user may hold at once: one user's refused connections cannot keep another's FULL from
 * carrying its request's id. */
#define PREEMPTD_REFUSING_PER_UID 4
/* How long a refused connection may take to send its first request before it is closed without an answer. */
#define PREEMPTD_REFUSAL_WAIT_US 1000000.0
/* Default for --unregistered-timeout: a connection that neither REGISTERs nor MEM_ATTACHes within it is closed
 * (preemptctl's LIST takes milliseconds; a socket that never speaks holds a slot for nothing). */
#define PREEMPTD_UNREGISTERED_TIMEOUT_US 10000000.0
/* Log lines per second one unprivileged user's connections may cause, and the burst allowed (log_budget.c). */
#define PREEMPTD_LOG_LINES_PER_S 20.0
#define PREEMPTD_LOG_BURST 200.0
/* Users whose log budgets are tracked at once; a new one takes the slot of the longest idle. */
#define PREEMPTD_LOG_USERS 32
/* GPU table entries that one unprivileged user may be the only one to name (gpu_table.c): enough for a node of 8
 * GPUs, half the table, so the GPUs of other users always find room. */
#define PREEMPTD_GPUS_PER_UID (PREEMPTD_MAX_GPUS / 2)
/* Users whose latest memory reading a ledger keeps (memory_ledgers.c): external is the lowest recent one. */
#define PREEMPTD_MEM_READERS 8
/* Distinct GPUs: the LISTING carries at most this many. */
#define PREEMPTD_MAX_GPUS PREEMPT_DAEMON_MAX_GPUS
/* Kernel models (duration, eviction cost) kept per GPU, one per (user, kernel); a full table replaces the least
 * recently used model of the user holding the most, so no user pushes another below an equal share. */
#define PREEMPTD_MODELS_PER_GPU 256
/* Before a kernel's first measured run: long, so an unknown kernel never looks short (docs/daemon.md). */
#define PREEMPTD_UNKNOWN_DURATION_US 1e6
/* Before a kernel's first measured eviction: FLEP §6.3 measured overheads of tens of µs; 100 µs errs high. */
#define PREEMPTD_DEFAULT_EVICTION_COST_US 100.0
/* Ridge lambda of the duration models (FLEP §4.2 uses an L2 penalty; features are pre-scaled). */
#define PREEMPTD_DURATION_L2 1.0
/* The scheduler rescans at least this often even when no client rings: a lost ring costs 100 ms, not a hang. */
#define PREEMPTD_IDLE_WAIT_NS 100000000LL
/* Memory ledgers with waiters read NVML at least this often: memory freed outside them lets waiters go. */
#define PREEMPTD_MEM_POLL_US 100000.0
/* How old a client's reading may be when it arrives, for the ledger peak it is compared with: generous, since a
 * peak too high only makes external look smaller (an allocation that fails asks again), one too low holds
 * waiters back until the next reading. */
#define PREEMPTD_MEM_READING_AGE_US 1000000.0
/* Slurm job steps known at once (slurm_jobs.c): only root and the daemon's user add them, one per step running. */
#define PREEMPTD_MAX_JOBS 256
/* How far up a process's ancestors the daemon looks for its step's slurmstepd. */
#define PREEMPTD_JOB_ANCESTORS 64
/* A client-reported eviction time above this is a lie or a bug; the sample is dropped. */
#define PREEMPTD_MAX_EVICTION_NS 10000000000ULL

/* The daemon's own view of one stub of a client's page. The page is the client's to scribble on;
 * this record is what the daemon believes, and every change it sees is checked against it. */
typedef struct preemptd_stub_record {
  uint32_t seen;                 /* the stub's state as the daemon last saw or wrote it */
  uint32_t kernel_id;            /* scheduler id of the launch in this stub; 0: none */
  uint32_t gpu;                  /* daemon GPU index of that launch */
  uint32_t command_sequence;     /* last value written into the stub */
  bool last_command_all;         /* the last TOEVICT was for every SM */
  preempt_sm_set evicting_sms;   /* the SMs the last TOEVICT named: the only ones its acknowledgement frees */
  uint32_t evict_sms, evict_held; /* SMs the last eviction asked for / held then: the cost sample's scale */
  bool pending_evict;            /* evicted by the policy while the stub could not take a command (TORUN) */
  bool pending_run;              /* given SMs back while the stub could not take a command */
  preempt_sm_set pending_run_sms;
  uint32_t pending_quota;        /* the pending run is a QUOTA decision (FlexSched): its CTAs per SM; 0: a RUN */
  uint64_t progress_ns;          /* the last progress sample taken from the stub (its CLOCK_MONOTONIC ns) */
  uint64_t kernel_key;
  preempt_kernel_features features;
  char name[PREEMPT_DAEMON_NAME_BYTES];
  int32_t priority;              /* clamped */
  uint32_t weight;               /* FFS weight granted (clamped, >= 1), for LIST */
  double predicted_us;
  double torun_us;               /* when the daemon last said TORUN from READY (daemon clock) */
  double ran_us;                 /* measured running time of finished running periods */
  double running_since_us;       /* when the client said RUNNING; < 0: not running now */
  double ready_since_us;         /* when it last became READY (arrival, full eviction); 0: not waiting (metrics) */
  double evict_issued_us;        /* when the outstanding TOEVICT was written; 0: none (metrics) */
  bool deferred_logged;          /* an arrival that found the kernel table full was logged once */
  uint32_t evictions;
  /* Started by its client on a lease the daemon had already withdrawn (another client's launch came first):
   * told to leave every SM, outside the scheduler, until it is READY (then an arrival) or DONE (leases.c). */
  bool unscheduled;
} preemptd_stub_record;

/* What one client did on one GPU, for the metrics (metrics.c): counters that only grow while the client lives. */
typedef struct preemptd_usage {
  uint64_t launches, evictions;
  double run_us, wait_us;        /* finished periods; a running or waiting launch's open one is added at a scrape */
  preempt_metrics_histogram eviction_latency;
} preemptd_usage;

typedef struct preemptd_client {
  int fd;                        /* -1: a free slot */
  bool registered;               /* has a page, stubs, scheduler kernels */
  bool trusted;                  /* root or the daemon's user: its GPU facts (SM count, memory size) are believed */
  int nice;                      /* the peer's nice when it connected (peer.c): priorities come from it */
  int nice_error;                /* nonzero: that nice could not be read (errno); REGISTER and MEM_ATTACH refused */
  double connected_us;           /* daemon clock: an unregistered connection is closed after the timeout */
  bool broken;                   /* reclaimed by the scheduler; the socket thread closes the connection */
  uint32_t id;                   /* registered clients only */
  pid_t pid;
  uid_t uid;
  int32_t priority, priority_limit;
  /* The Slurm job and step the process runs in (slurm_jobs.c, from root's JOB grants); 0, 0: none known. */
  uint32_t job_id, step_id;
  uint64_t job_mem_limit_bytes;  /* the job's memory limit on this node; 0: none */
  bool job_priority_set;         /* the step has a priority: default and limit instead of -nice */
  int32_t job_priority;
  char program[PREEMPT_DAEMON_PROGRAM_BYTES];
  uint32_t gpu_count;
  uint32_t gpus[PREEMPT_DAEMON_MAX_GPUS]; /* the client's GPU index -> the daemon's */
  preempt_client_page *page;     /* mapped; NULL when not registered */
  uint32_t lease;                /* the page's lease word as last written (leases.c) */
  uint64_t launches, evictions;
  preemptd_usage usage[PREEMPTD_MAX_GPUS]; /* by the daemon's GPU index */
  preemptd_stub_record stubs[PREEMPT_STUBS_PER_CLIENT];
  /* Memory admission (MEM_ATTACH), independent of REGISTER: a connection may do either or both. */
  bool mem_attached;
  int32_t mem_priority, mem_priority_limit;
  uint32_t mem_slot[PREEMPTD_MAX_GPUS]; /* its slot in each memory GPU's ledger; PREEMPT_MEM_NO_INDEX: none yet */
  bool mem_waiting;              /* one RESERVE waits in a ledger's queue */
  bool mem_wait_logged;          /* it did not fit at once: its grant is logged too */
  uint32_t mem_wait_gpu, mem_wait_entry, mem_wait_request_id;
  uint64_t mem_wait_bytes;
  double mem_wait_since_us;
} preemptd_client;

/* NVML, loaded when the daemon starts (nvml.c); library NULL without it, and why says why. */
typedef struct preemptd_nvml {
  void *library;
  void *shutdown, *handle_by_uuid, *memory_info, *error_string; /* dlsym'd, cast at the call */
  char why[160];
} preemptd_nvml;

/* The SM count of each GPU as the CUDA driver reports it (driver_probe.c), read once at start; count 0 and `why`
 * without a driver. A client's report that disagrees is refused (gpu_table.c). */
typedef struct preemptd_driver_gpu {
  uint8_t uuid[16];
  uint32_t sm_count;
} preemptd_driver_gpu;

typedef struct preemptd_driver_gpus {
  uint32_t count;
  uint32_t probe_ms; /* how long the probe took, for the log */
  preemptd_driver_gpu gpus[PREEMPTD_MAX_GPUS];
  char why[160];
} preemptd_driver_gpus;

/* One GPU's memory ledger (memory_ledgers.c), keyed by UUID like the schedulers' GPUs but kept apart from
 * them: a memory client need not register kernels, nor say how many SMs its GPU has. */
/* One user's latest reading of a GPU without NVML (memory_ledgers.c). */
typedef struct preemptd_mem_sample {
  uid_t uid;
  uint64_t total_bytes, used_bytes;
  double at_us;                  /* 0: an empty entry */
} preemptd_mem_sample;

typedef struct preemptd_mem_gpu {
  uint8_t uuid[16];
  bool capacity_trusted;         /* from NVML or from a client of root or the daemon's user */
  preemptd_mem_sample readings[PREEMPTD_MEM_READERS];
  preempt_mem_ledger *ledger;    /* malloc'd */
  void *nvml_device;             /* NULL: capacity and external come from the clients' readings */
  double last_reading_us;
  /* The most the ledger held over the last PREEMPTD_MEM_READING_AGE_US: a client's reading was taken before its
   * message arrived, when the ledger may have held more than now (a release since), so external is its used
   * memory less this peak, never less what the ledger holds when the message arrives. */
  uint64_t peak_used_bytes;
  double peak_since_us;          /* when a level of peak_used_bytes or more was last held */
  uint64_t last_used_bytes;      /* what the ledger held after its last change */
} preemptd_mem_gpu;

/* One user's model of one kernel on one GPU: trained only by that user's clients (uid from SO_PEERCRED), so
 * the run and eviction times one user's clients report never reach another user's predictions. */
typedef struct preemptd_kernel_model {
  uid_t uid;                     /* the user whose clients train it */
  uint64_t key;                  /* kernel_key (FNV-1a of the name) */
  uint64_t last_used;
  preempt_duration_model duration;
  preempt_eviction_cost_model eviction;
} preemptd_kernel_model;

/* A GPU's models, at most PREEMPTD_MODELS_PER_GPU; a new one in a full table replaces the least recently used
 * model of the user holding the most (kernel_models.c). */
typedef struct preemptd_model_table {
  uint32_t count;
  uint64_t clock;                /* last_used stamps */
  preemptd_kernel_model *models; /* PREEMPTD_MODELS_PER_GPU, malloc'd */
} preemptd_model_table;

typedef struct preemptd_gpu {
  uint8_t uuid[16];
  uint32_t sm_count;
  bool sm_trusted;               /* sm_count came from root or the daemon's user, not only from other users */
  uid_t creator;                 /* the user whose REGISTER created (or last re-created) the entry */
  bool limits_conflict_logged;   /* a client reported other SM limits than the ones kept: said once */
  /* flexsched's measurement, settle and alone-rate counters (preempt_flexsched_data) already logged */
  uint64_t flexsched_measurements_logged, flexsched_settles_logged, flexsched_alones_logged;
  const preempt_sched_policy *policy;
  preempt_sched_state *sched;    /* malloc'd: 40 KB, one per GPU */
  preempt_usec timer_at;         /* the policy's next TIMER, daemon microseconds; 0: none */
  uint64_t decisions, evictions;
  preemptd_model_table models;
} preemptd_gpu;

/* Everything the daemon has. Fields above `lock` are set before the threads start and only read after;
 * the rest is shared by the socket thread and the scheduler thread under `lock`. */
/* A connection refused for want of a slot: answered FULL with its first request's id (connection_limits.c). */
typedef struct preemptd_refusal {
  int fd;                        /* -1: free */
  uid_t uid;
  double deadline_us;
  char why[PREEMPT_DAEMON_TEXT_BYTES];
} preemptd_refusal;

/* One user's budget of log lines (log_budget.c): a token bucket. */
typedef struct preemptd_log_budget {
  uid_t uid;
  bool in_use;
  double tokens, refilled_us;
  uint64_t suppressed;           /* lines dropped since the last one written */
} preemptd_log_budget;

/* A Slurm job step, as root's JOB said it (slurm_jobs.c). */
typedef struct preemptd_job {
  bool in_use;
  uint32_t job_id, step_id;
  uid_t uid;
  pid_t pid;                     /* the step's slurmstepd */
  int pidfd;                     /* of that process: its exit, a crash included, ends the entry */
  bool priority_set;
  int32_t priority;
  uint64_t mem_limit_bytes;
} preemptd_job;

/* --sharing: how processes share the GPUs (sharing.c). */
typedef enum preemptd_sharing {
  PREEMPTD_SHARING_AUTO = 0,         /* MPS when its control socket exists, else time-slicing; looked at again */
  PREEMPTD_SHARING_MPS = 1,
  PREEMPTD_SHARING_TIME_SLICING = 2,
} preemptd_sharing;

typedef struct preemptd_context {
  char socket_path[108];
  int listen_fd;
  int signal_fd;                 /* SIGTERM, SIGINT */
  uid_t euid;                    /* the daemon's: may switch policies like root */
  FILE *log;                     /* decision log; NULL: none */
  const char *log_name;
  double start_us;               /* CLOCK_MONOTONIC at start: the schedulers' clock starts at 0 */
  preempt_sched_params params;   /* --param: every GPU's scheduler state starts with these */
  double unregistered_timeout_us; /* --unregistered-timeout */
  int doorbell_fd;
  preempt_doorbell_page *doorbell;

  pthread_mutex_t lock;
  bool stopping;
  bool rescan;                   /* a scan found something it could not finish: scan again at once */
  bool leases;                   /* grant leases (leases.c); --no-leases: every launch waits for a decision */
  preemptd_sharing sharing;      /* --sharing (sharing.c) */
  bool sharing_checked, sharing_detected_time_slicing;
  double sharing_checked_us;
  const preempt_sched_policy *default_policy; /* for GPUs not seen yet */
  uint32_t next_client_id, next_kernel_id;
  uint32_t gpu_count;
  preemptd_gpu gpus[PREEMPTD_MAX_GPUS];
  preemptd_client clients[PREEMPTD_MAX_CONNECTIONS];
  preemptd_refusal refusing[PREEMPTD_MAX_REFUSING]; /* socket thread only */
  preemptd_log_budget log_budgets[PREEMPTD_LOG_USERS];
  preemptd_nvml nvml;            /* opened before the threads start */
  preemptd_driver_gpus driver;   /* probed before the threads start; read-only after */
  preempt_mem_policy mem_policy; /* --memory-policy: for ledgers created from now on */
  uint32_t mem_gpu_count;
  preemptd_mem_gpu mem_gpus[PREEMPTD_MAX_GPUS];
  preemptd_job jobs[PREEMPTD_MAX_JOBS];
  void *metrics_server;          /* the HTTP server (metrics_http.c), its own threads; NULL: no --metrics */
} preemptd_context;

/* ---- sharing (sharing.c) */
/* "auto", "mps" or "time-slicing": 0, or -1 for anything else. */
int preemptd_sharing_parse(const char *text, preemptd_sharing *out);
/* Whether processes' contexts time-slice on this node's GPUs (no MPS): --sharing, else detected (MPS's control
 * socket, looked at again at most once a second, or now with look_now; a change is logged). Context locked. */
bool preemptd_time_slicing(preemptd_context *ctx, bool look_now);

/* ---- time and log (decision_log.c) */
double preemptd_monotonic_us(void);
/* The schedulers' clock: microseconds since the daemon started. */
double preemptd_now_us(const preemptd_context *ctx);
/* One line, prefixed with the CLOCK_MONOTONIC time in seconds; flushed at once (tests read it live). */
void preemptd_log(preemptd_context *ctx, const char *format, ...) __attribute__((format(printf, 2, 3)));
/* A line caused by a client: written while its user's budget lasts (root and the daemon's user: always); dropped
 * lines are counted and said in the next line written for that user (log_budget.c). */
void preemptd_log_client(preemptd_context *ctx, preemptd_client *client, const char *format, ...)
    __attribute__((format(printf, 3, 4)));
void preemptd_log_uid(preemptd_context *ctx, uid_t uid, const char *format, ...) __attribute__((format(printf, 3, 4)));
/* "all" or "0-3,7" into `text`. */
void preemptd_format_sms(const preempt_sm_set *sms, bool all, char *text, size_t text_bytes);

/* ---- Slurm job steps (slurm_jobs.c), under the lock */
/* JOB from a connection: a grant or an end, from root or the daemon's user only; answered with STATUS. */
preempt_daemon_status preemptd_job_message(preemptd_context *ctx, preemptd_client *client, const preempt_msg_job *m,
                                           uint32_t request_id);
/* The priority a REGISTER or MEM_ATTACH is granted: EffiSha §6.4's -nice rule, or, for a process in a Slurm step
 * with a priority, that priority as default and limit (root keeps its limit). Fills the client's job fields. */
void preemptd_job_grant_priority(preemptd_context *ctx, preemptd_client *client, bool requested, int32_t request,
                                 int32_t *granted, int32_t *limit);
/* Bytes the clients of `job_id` hold in every memory ledger, for its limit. */
uint64_t preemptd_job_held_bytes(const preemptd_context *ctx, uint32_t job_id);
void preemptd_jobs_init(preemptd_context *ctx);
void preemptd_jobs_free(preemptd_context *ctx);

/* ---- metrics (metrics.c: the snapshot; metrics_http.c: the endpoint) */
/* Copies what the metrics show, under the lock, into `out` (its arrays malloc'd; preemptd_metrics_release frees
 * them). SYSTEM without memory. */
preempt_daemon_status preemptd_metrics_snapshot(preemptd_context *ctx, preempt_metrics_snapshot *out);
void preemptd_metrics_release(preempt_metrics_snapshot *snapshot);
/* --metrics [ADDR:]PORT: MALFORMED with `why` unless ADDR is an IPv4 address (default 127.0.0.1) and PORT 0..65535. */
preempt_daemon_status preemptd_metrics_parse_address(const char *text, char *address, size_t address_bytes,
                                                     uint16_t *port, char *why, size_t why_bytes);
/* Serves GET /metrics on address:port from libmicrohttpd's own thread; *bound_port is the port taken (port 0: one
 * the kernel chose). SYSTEM with `why` when it cannot listen. */
preempt_daemon_status preemptd_metrics_start(preemptd_context *ctx, const char *address, uint16_t port,
                                             uint16_t *bound_port, char *why, size_t why_bytes);
void preemptd_metrics_stop(preemptd_context *ctx);

/* ---- the listening socket (listen_socket.c) */
preempt_daemon_status preemptd_listen(const char *path, int *out_fd, char *why, size_t why_bytes);

/* ---- shared memory (shared_pages.c) */
preempt_daemon_status preemptd_doorbell_create(int *out_fd, preempt_doorbell_page **out_page);
preempt_daemon_status preemptd_page_create(uint32_t client_id, int *out_fd, preempt_client_page **out_page);
void preemptd_page_release(preempt_client_page *page);
void preemptd_ring_doorbell(preemptd_context *ctx);

/* ---- who the peer is (peer.c) */
/* Root or the daemon's user: believed about GPUs, never capped. */
bool preemptd_uid_trusted(const preemptd_context *ctx, uid_t uid);
/* pid, uid and nice of the process that connected, taken now: SO_PEERCRED, then a pidfd of that very process
 * (SO_PEERPIDFD, else pidfd_open) that must still be alive after /proc/<pid>/stat was read, so a pid reused by
 * another process cannot lend its nice value. SYSTEM (errno set) when the peer is gone; *nice_error: the errno of a
 * /proc read that failed (hidepid, say), 0 when *nice is set. */
preempt_daemon_status preemptd_peer_identify(int fd, pid_t *pid, uid_t *uid, int *nice, int *nice_error);
/* nice from the text of /proc/<pid>/stat: the comm field may hold spaces and ')', so the
 * fields are counted after the last ')'. */
preempt_daemon_status preemptd_parse_nice(const char *stat_text, size_t length, int *nice);
preempt_daemon_status preemptd_read_nice(pid_t pid, int *nice);
/* The parent's pid, field 4 of the same line (0: none). */
preempt_daemon_status preemptd_parse_ppid(const char *stat_text, size_t length, pid_t *ppid);
preempt_daemon_status preemptd_read_ppid(pid_t pid, pid_t *ppid);
/* Whether the process of a pidfd is still alive (a pidfd polls readable once it has exited). */
bool preemptd_pidfd_alive(int pidfd);

/* ---- connection limits (connection_limits.c), socket thread, under the lock */
/* Whether a new connection of `uid` may take a slot; if not, `why` says which limit, for its FULL. */
bool preemptd_connection_allowed(const preemptd_context *ctx, uid_t uid, char *why, size_t why_bytes);
/* Keeps a refused connection until its first request, to answer FULL with that request's id; closes it now when
 * no refusal entry is free. */
void preemptd_refusal_add(preemptd_context *ctx, int fd, uid_t uid, const char *why);
/* A refused connection sent something (or hung up): answered and closed. */
void preemptd_refusal_serve(preemptd_context *ctx, uint32_t index);
/* Closes refused connections past their wait and unregistered ones past --unregistered-timeout; returns the poll
 * timeout in ms until the next such deadline (-1: none). */
int preemptd_connection_deadlines(preemptd_context *ctx, void (*close_client)(preemptd_context *, preemptd_client *,
                                                                              const char *));

/* ---- GPUs and kernel models (gpu_table.c) */
/* Index of the GPU with this UUID, or -1. */
int preemptd_gpu_find(const preemptd_context *ctx, const uint8_t uuid[16]);
/* A UUID as the log writes it: 32 lowercase hex digits. */
void preemptd_uuid_hex(const uint8_t uuid[16], char text[33]);
/* Registered clients naming GPU `index`, `except` left out (NULL: none). */
uint32_t preemptd_gpu_users(const preemptd_context *ctx, uint32_t index, const preemptd_client *except);
/* Whether every GPU of this client's REGISTER can be taken, `why` saying the field otherwise: MALFORMED (sm_count
 * out of range, or differing from what root or the daemon's user, or the clients still connected on that GPU,
 * reported), FULL (no room: entries nobody names are reused; or an unprivileged user would be the only one to name
 * more than PREEMPTD_GPUS_PER_UID). SM limits never refuse a client: the first nonzero ones reported for a UUID are
 * kept (preemptd_gpu_add). */
preempt_daemon_status preemptd_gpus_check(const preemptd_context *ctx, const preemptd_client *client,
                                          const preempt_msg_gpu *gpus, uint32_t count, char *why, size_t why_bytes);
/* Adds all[which] of a REGISTER that preemptd_gpus_check let through: its index in *index. */
preempt_daemon_status preemptd_gpu_add(preemptd_context *ctx, const preemptd_client *client, const preempt_msg_gpu *all,
                                       uint32_t all_count, uint32_t which, uint32_t *index);
void preemptd_gpus_free(preemptd_context *ctx);
/* Switches a GPU's policy: kernels stay, the policy's bookkeeping restarts, the new policy decides at once. */
preempt_daemon_status preemptd_gpu_set_policy(preemptd_context *ctx, uint32_t gpu, const preempt_sched_policy *policy);

/* ---- kernel models (kernel_models.c) */
preempt_daemon_status preemptd_models_init(preemptd_model_table *table);
void preemptd_models_free(preemptd_model_table *table);
/* T_e and the whole-kernel eviction cost for a launch of the user `uid` (FLEP §4.2), from that user's model of
 * the kernel on this GPU; the defaults (PREEMPTD_UNKNOWN_DURATION_US, PREEMPTD_DEFAULT_EVICTION_COST_US) without
 * one. MALFORMED: features the model refuses. */
preempt_daemon_status preemptd_predict(preemptd_model_table *table, uid_t uid, uint64_t key,
                                       const preempt_kernel_features *features, double *duration_us,
                                       double *eviction_cost_us);
/* A measured run or eviction of a launch by the user `uid`: trains that user's model only. */
preempt_daemon_status preemptd_learn_duration(preemptd_model_table *table, uid_t uid, uint64_t key,
                                              const preempt_kernel_features *features, double ran_us);
preempt_daemon_status preemptd_learn_eviction(preemptd_model_table *table, uid_t uid, uint64_t key, double cost_us,
                                              uint32_t sms_evicted, uint32_t sms_held);

/* ---- decisions (decisions.c) */
/* Moves the GPU's scheduler clock to now (FLEP §5.1's T_r, T_w). Call before changing its state. */
preempt_daemon_status preemptd_gpu_advance(preemptd_context *ctx, uint32_t gpu);
/* Runs the GPU's policy on one event, applies its decisions and writes them into the stubs, then
 * drops DONE kernels from the scheduler's table. */
preempt_daemon_status preemptd_gpu_decide(preemptd_context *ctx, uint32_t gpu, preempt_sched_event_kind kind,
                                          uint32_t kernel_id);
/* A command the stub could not take when it was decided (it was TORUN or TOEVICT): write it now that
 * the stub is RUNNING again. */
preempt_daemon_status preemptd_flush_pending(preemptd_context *ctx, preemptd_client *client, uint32_t stub);
/* RUNNING -> TOEVICT from every SM for a launch the scheduler does not hold (one started on a withdrawn lease).
 * Returns whether the command is in the stub. */
bool preemptd_issue_evict_all(preemptd_context *ctx, preemptd_client *client, uint32_t stub);

/* ---- pages to events (stub_scan.c) */
/* Scans every registered client's page; a client found breaking the protocol is reclaimed there. */
preempt_daemon_status preemptd_scan_all(preemptd_context *ctx);
/* One client's page, e.g. a last look before reclaiming it: a launch that finished just before its
 * process exited is a completion (its time trains the model), not a reclaimed kernel. */
preempt_daemon_status preemptd_scan_one(preemptd_context *ctx, preemptd_client *client);

/* ---- leases (leases.c) */
/* Grants each client a lease on every GPU where no other client has work, withdraws the rest, writing only
 * words that change. Call after anything that changes who has work (a scan, a registration, a reclaim). */
void preemptd_update_leases(preemptd_context *ctx);
/* Whether the daemon last granted `client` a lease on its GPU index `client_gpu`. */
bool preemptd_client_leased(const preemptd_client *client, uint32_t client_gpu);

/* ---- the end of a client (reclaim.c) */
/* Completes the client's kernels (their SMs free at once), lets each GPU's policy hand them out,
 * unmaps the page. The connection stays for the caller to close. */
preempt_daemon_status preemptd_reclaim(preemptd_context *ctx, preemptd_client *client, const char *why);
/* A client that broke the protocol: reclaimed now, told why, and its connection shut down (the socket
 * thread sees the hang-up and frees the slot). */
preempt_daemon_status preemptd_client_broken(preemptd_context *ctx, preemptd_client *client, const char *why);
preemptd_client *preemptd_client_by_id(preemptd_context *ctx, uint32_t client_id);

/* ---- replies (replies.c) */
/* A reply with up to two descriptors (SCM_RIGHTS); never blocks. */
preempt_daemon_status preemptd_send_fds(int fd, const void *bytes, size_t length, const int *fds, int fd_count);
/* A STATUS packet; never blocks (a client that does not read loses the reply, not the daemon its thread). */
preempt_daemon_status preemptd_send_status(int fd, uint32_t request_id, preempt_daemon_status status,
                                           const char *text);

/* Any reply without descriptors; never blocks. */
preempt_daemon_status preemptd_send(int fd, const void *bytes, size_t length);

/* ---- NVML (nvml.c) */
/* driver_probe.c: forks a child that asks libcuda.so.1; call before any thread starts. */
preempt_daemon_status preemptd_driver_probe(preemptd_driver_gpus *gpus);
uint32_t preemptd_driver_sm_count(const preemptd_driver_gpus *gpus, const uint8_t uuid[16]); /* 0: unknown */

preempt_daemon_status preemptd_nvml_open(preemptd_nvml *nvml);
void preemptd_nvml_close(preemptd_nvml *nvml);
/* UNKNOWN_GPU when NVML does not know the UUID; SYSTEM without NVML. */
preempt_daemon_status preemptd_nvml_device(preemptd_nvml *nvml, const uint8_t uuid[16], void **device);
preempt_daemon_status preemptd_nvml_memory(preemptd_nvml *nvml, void *device, uint64_t *total_bytes,
                                           uint64_t *used_bytes);

/* ---- memory ledgers (memory_ledgers.c), under the lock; each returns whether its reply went out */
preempt_daemon_status preemptd_mem_attach(preemptd_context *ctx, preemptd_client *client,
                                          const preempt_msg_mem_attach *request, uint32_t request_id);
preempt_daemon_status preemptd_mem_reserve(preemptd_context *ctx, preemptd_client *client,
                                           const preempt_msg_mem_reserve *request, uint32_t request_id);
/* *hang_up for a release of more than the client holds. */
preempt_daemon_status preemptd_mem_release(preemptd_context *ctx, preemptd_client *client,
                                           const preempt_msg_mem_release *request, bool *hang_up);
preempt_daemon_status preemptd_mem_cancel(preemptd_context *ctx, preemptd_client *client,
                                          const preempt_msg_mem_cancel *request);
preempt_daemon_status preemptd_mem_query(preemptd_context *ctx, preemptd_client *client,
                                         const preempt_msg_mem_query *request, uint32_t request_id);
preempt_daemon_status preemptd_mem_reading(preemptd_context *ctx, preemptd_client *client,
                                           const preempt_msg_mem_reading *request);
/* The connection ended: everything the client held or waited for goes back, and waiters that now fit are told. */
void preemptd_mem_detach(preemptd_context *ctx, preemptd_client *client);
/* Rereads NVML for ledgers with waiters, at most every PREEMPTD_MEM_POLL_US. */
void preemptd_mem_poll(preemptd_context *ctx);
void preemptd_mem_free(preemptd_context *ctx);

/* ---- LIST (listing.c) */
preempt_daemon_status preemptd_build_listing(preemptd_context *ctx, uint32_t request_id, void *buffer,
                                             size_t capacity, size_t *length);

/* ---- threads (scheduler.c, clients.c) */
void *preemptd_scheduler_thread(void *context);
/* The socket loop, on the main thread; returns when a signal asks the daemon to stop. */
preempt_daemon_status preemptd_serve(preemptd_context *ctx);
/* One round of it: waits at most max_wait_ms (-1: until the next deadline or event), serves what is ready; *stop
 * when a signal asked the daemon to stop. The fuzz harness (test/fuzz/fuzz_daemon_sessions.c) drives it. */
preempt_daemon_status preemptd_serve_step(preemptd_context *ctx, int max_wait_ms, bool *stop);
/* One round of the scheduler thread, under the lock: scans, due timers, memory polls; returns how long it may
 * sleep (ns). */
int64_t preemptd_scheduler_step(preemptd_context *ctx);

#endif
