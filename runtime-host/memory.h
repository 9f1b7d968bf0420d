/* memory.h: internals of memory admission: the shared ledger segment, the process's reservations, the wrappers.
 * schedGPU §3.2 (daemonless shared-memory ledger), §4 (pre-allocation, post-free, shutdown), §5 (policies). */
#ifndef PREEMPT_MEMORY_H
#define PREEMPT_MEMORY_H

#include <pthread.h>
#include <stdint.h>

#include "daemon_socket.h" /* preempt_monotonic_ns */
#include "settings.h"
#include "preempt.h"
#include "preempt/daemon_protocol.h"
#include "preempt/mem_ledger.h"

#define PREEMPT_MEM_SEGMENT_MAGIC 0x534d5250u /* "PRMS" */
#define PREEMPT_MEM_SEGMENT_VERSION 3u
/* Waiters look for dead clients and for memory freed outside the ledger at least this often: a client killed
 * while others wait has its memory back in their hands within this, well inside schedGPU's 1 s. */
#define PREEMPT_MEM_POLL_NS 100000000LL
#define PREEMPT_MEM_MAX_DEVICES 64

/* What processes share, one per GPU (and user): /dev/shm/preempt-mem-<uid>-<GPU UUID>. */
typedef struct preempt_mem_shared {
  uint32_t magic, version;
  uint32_t size;            /* sizeof(preempt_mem_shared) */
  uint32_t wake;            /* futex: +1 and wake-all after anything that may let a waiter go */
  uint32_t generation;      /* +1 each time a damaged ledger is reinitialized: clients re-attach */
  uint32_t reinitializations;
  uint32_t owner_deaths;    /* times the lock was taken with EOWNERDEAD: a holder died inside it */
  uint32_t lost_wakeups;    /* grants a waiter found only when its poll timed out, no ring since it slept */
  pthread_mutex_t lock;     /* robust, process-shared: a holder that dies hands it on with EOWNERDEAD */
  preempt_mem_ledger ledger;
} preempt_mem_shared;

/* One process's view of one GPU's segment. */
typedef struct preempt_mem_segment {
  int fd;                   /* -1: not open */
  preempt_mem_shared *shared;
  char name[96];
  uint32_t generation;      /* of the ledger our slot belongs to */
  uint32_t client;          /* our slot; PREEMPT_MEM_NO_INDEX before attaching */
  uint64_t liveness_key;    /* the byte of the segment file we hold locked while we live */
  uint64_t held_bytes;      /* what this process holds in the ledger: restored into a reinitialized one */
  int32_t priority;
  uint64_t last_reclaim_ns;
} preempt_mem_segment;

/* Opens (creating if needed) the segment named `name`, initializing a new ledger with this capacity and
 * policy. 0, or -1 with the reason in `why`. */
int preempt_mem_segment_open(preempt_mem_segment *segment, const char *name, uint64_t capacity_bytes,
                             preempt_mem_policy policy, int32_t priority, char *why, size_t why_bytes);
void preempt_mem_segment_close(preempt_mem_segment *segment);
/* Takes the segment's lock: recovers from a holder that died (EOWNERDEAD: integrity check, reinitializing a
 * damaged ledger), and (re)attaches this process to the current ledger. 0, or -1 with the reason. */
int preempt_mem_segment_lock(preempt_mem_segment *segment, char *why, size_t why_bytes);
void preempt_mem_segment_unlock(preempt_mem_segment *segment);
/* Wakes every waiter; with the lock held or not. */
void preempt_mem_segment_ring(preempt_mem_segment *segment);
/* Detaches clients whose process has died (their liveness byte is no longer locked). Lock held. */
uint32_t preempt_mem_segment_reclaim_dead(preempt_mem_segment *segment);
/* Frees this process's slot with all it holds. Lock held. */
void preempt_mem_segment_detach(preempt_mem_segment *segment);


/* ---- the daemon-kept ledger (mem_daemon.c): preemptd's MEM_* messages over the process's one connection to it
 * (daemon_link.c), which kernel scheduling shares */

typedef struct preempt_mem_daemon {
  uint32_t generation;      /* the connection attached on: another one (after a loss) holds none of our bytes */
  int attached;
  int wants_readings;       /* the daemon has no NVML: RESERVEs carry the GPU's used memory */
  uint32_t client_id;
  int32_t priority;         /* granted */
} preempt_mem_daemon;

/* The GPU's reading, for a daemon without NVML: (total, used) of the current device; 0 on success. */
typedef int (*preempt_mem_reading)(uint64_t *total_bytes, uint64_t *used_bytes, void *argument);

/* Connects to preemptd at `path` and attaches. 0; 1 when no daemon listens there (no socket); -1 with `why`. */
int preempt_mem_daemon_attach(preempt_mem_daemon *daemon, const char *path, int priority_requested, int32_t priority,
                              char *why, size_t why_bytes);
/* Asks for `bytes` on the GPU `uuid` and waits for the grant until the deadline (then withdraws the request).
 * 0 granted; 1 timed out; 2 never fits; 3 refused (*answer says why); 4 over the job's memory limit (a Slurm job's
 * --gpu-mem, kept by preemptd); -1 the daemon is gone (`why`). *answer is
 * the daemon's last word on the ledger. */
int preempt_mem_daemon_reserve(preempt_mem_daemon *daemon, const unsigned char uuid[16], uint64_t bytes, uint32_t flags,
                               preempt_mem_reading reading, void *reading_argument, uint64_t deadline_ns,
                               preempt_msg_mem_reply *answer, char *why, size_t why_bytes);
/* 0, or -1 when the daemon is gone. */
int preempt_mem_daemon_release(preempt_mem_daemon *daemon, const unsigned char uuid[16], uint64_t bytes);
/* The ledger of the GPU `uuid` (the reading adds a GPU the daemon has not seen). 0; 1 when the daemon cannot
 * tell (answer->result says why); -1 when the daemon is gone. */
int preempt_mem_daemon_query(preempt_mem_daemon *daemon, const unsigned char uuid[16], preempt_mem_reading reading,
                             void *reading_argument, preempt_msg_mem_reply *answer);
/* At exit: the connection's end gives back everything at once. */
void preempt_mem_daemon_close(preempt_mem_daemon *daemon);

/* ---- the process's admission state (mem_admission.c) */

/* What the wrappers tell admission about the GPU API they wrap. */
typedef struct preempt_mem_gpu {
  const char *api_name;
  int out_of_memory;        /* the API's code */
  int (*current_device)(int *device);
  int (*device_uuid)(int device, unsigned char uuid[16]);
  /* Of the current device. */
  int (*memory_info)(uint64_t *free_bytes, uint64_t *total_bytes);
  /* APIs that keep a last error (the runtime APIs): whether one is pending, and dropping it. NULL for the
   * driver API, which keeps none. */
  int (*error_pending)(void);
  void (*drop_last_error)(void);
} preempt_mem_gpu;

/* Where an allocation's bytes came from: the process's declared budget, or the ledger directly. */
typedef enum preempt_mem_charge { PREEMPT_MEM_CHARGE_LEDGER = 0, PREEMPT_MEM_CHARGE_BUDGET = 1 } preempt_mem_charge;

typedef struct preempt_mem_device {
  int opened;               /* 1: a ledger is in use; -1: failed (said once), allocations pass unadmitted */
  int on_daemon;            /* 1: preemptd keeps the ledger; 0: the shared segment */
  unsigned char uuid[16];
  uint64_t capacity_bytes;  /* the GPU's memory, as the API said when the device was opened */
  uint64_t daemon_held_bytes; /* what this process holds in preemptd's ledger: carried into the segment if it goes */
  uint64_t daemon_spare_bytes; /* of daemon_held_bytes, admitted ahead and not allocated (lib/mem_ahead.c) */
  uint64_t daemon_free_seen;   /* the daemon's last answer: capacity - external - reserved */
  uint32_t daemon_waiting_seen; /* and the requests waiting then */
  preempt_mem_segment segment;
  uint64_t budget_bytes;    /* reserved in the ledger by preempt_mem_budget / PREEMPT_MEM_BUDGET */
  uint64_t budget_used_bytes;
  int budget_from_environment_done;
} preempt_mem_device;

typedef struct preempt_mem_allocation {
  uint64_t address;         /* 0: empty; UINT64_MAX: deleted */
  uint64_t bytes;
  int device;               /* index in preempt_memory.devices (the API's device number) */
  preempt_mem_charge charge;
} preempt_mem_allocation;

/* How long a request with some ahead (PREEMPT_MEM_AHEAD) may wait before it goes again without. */
#define PREEMPT_MEM_AHEAD_WAIT_NS 2000000ull

/* The memory module's one context object. */
typedef struct preempt_memory {
  pthread_mutex_t lock;     /* this struct; the segments' own locks are taken inside it */
  int configured;
  int enabled;              /* PREEMPT_MEM != off */
  int64_t timeout_ms;       /* PREEMPT_MEM_TIMEOUT_MS; < 0: wait for ever */
  preempt_mem_policy policy;/* PREEMPT_MEM_POLICY: for ledgers this process creates */
  int32_t priority;         /* PREEMPT_PRIORITY, clamped as preemptd would */
  uint64_t environment_budget; /* PREEMPT_MEM_BUDGET */
  uint64_t ahead_bytes;     /* PREEMPT_MEM_AHEAD: reserve-ahead through preemptd (lib/mem_ahead.c); 0 off */
  char segment_prefix[PREEMPT_SETTING_TEXT_BYTES]; /* PREEMPT_MEM_SEGMENT (under 64 bytes: settings.c) */
  int priority_requested;   /* PREEMPT_PRIORITY was given: preemptd is asked for priority_asked */
  int32_t priority_asked;
  int daemon_wanted;        /* PREEMPT_MEM_LEDGER=auto (the default): preemptd's ledger when it answers */
  int daemon_state;         /* 0: not tried yet; 1: attached; -1: none, or gone (the shared segment from then on) */
  char daemon_socket[108];  /* PREEMPT_DAEMON_SOCKET, else the default */
  int daemon_socket_named;  /* PREEMPT_DAEMON_SOCKET was set: a daemon missing there is worth a message */
  preempt_mem_daemon daemon;
  int exit_hook;
  preempt_mem_device devices[PREEMPT_MEM_MAX_DEVICES];
  preempt_mem_allocation *table;
  uint64_t table_capacity, table_count, table_deleted;
  uint64_t hold_lock_ns;    /* PREEMPT_MEM_TEST_HOLD_NS: test-only, sleeps inside the ledger's lock */
} preempt_memory;

preempt_memory *preempt_memory_context(void);

/* Pre-allocation (schedGPU §4): admits `bytes` on the current device, waiting by the policy until the
 * deadline (preempt_mem_deadline_ns). 0 with *device and *charge set, or the API's out-of-memory code (said
 * on stderr). When admission is off or cannot run, 0 with *device = -1: allocate unadmitted. */
int preempt_mem_admit_until(const preempt_mem_gpu *gpu, uint64_t bytes, int *device, preempt_mem_charge *charge,
                            uint64_t deadline_ns);
/* Post-free: gives admitted bytes back. */
void preempt_mem_give_back(int device, uint64_t bytes, preempt_mem_charge charge);
/* The real allocation said out of memory although admitted: memory was taken outside the ledger. Gives the
 * admission back, learns the GPU's used memory, and admits again (waiting); same results as admit. */
int preempt_mem_readmit_after_oom(const preempt_mem_gpu *gpu, uint64_t bytes, int *device,
                                  preempt_mem_charge *charge, uint64_t deadline_ns);
/* The allocation grew or shrank after the fact (pitched allocations): the ledger follows without waiting. */
void preempt_mem_adjust(int device, uint64_t admitted_bytes, uint64_t actual_bytes, preempt_mem_charge charge);
/* When an admission's wait ends if started now. */
uint64_t preempt_mem_deadline_ns(void);

void preempt_mem_record(uint64_t address, uint64_t bytes, int device, preempt_mem_charge charge);
/* Removes the allocation and returns it, or 0 when the address is not one this process admitted. */
int preempt_mem_forget(uint64_t address, preempt_mem_allocation *allocation);

/* One real allocation call with its arguments: returns the API's code and sets *address and *actual_bytes
 * (what it really took, for pitched allocations). */
typedef int (*preempt_mem_real_allocation)(void *call, uint64_t *address, uint64_t *actual_bytes);
/* Admits `bytes`, allocates, records the allocation; an allocation that says out of memory although admitted
 * (memory taken outside the ledger since it was last looked at) is admitted again and retried until the
 * deadline. Returns the API's code. Every wrapper of every API goes through this. */
int preempt_mem_allocate(const preempt_mem_gpu *gpu, uint64_t bytes, preempt_mem_real_allocation allocate,
                         void *call);
/* After a successful release of `address`: gives back what its allocation was admitted. */
void preempt_mem_freed(uint64_t address);
/* The device is about to be reset (cudaDeviceReset), which frees every allocation the process has on it: each
 * leaves the table and its bytes go back, so that the ledger does not go on counting memory nobody holds. */
void preempt_mem_device_reset(int device);
/* A stream-ordered release: the allocation leaves the table now (its address may be reused at once) and its
 * bytes go back when the stream reaches the release: call preempt_mem_give_back_taken from a host function
 * enqueued there, or at once when none can be. NULL when the address was not admitted. */
preempt_mem_allocation *preempt_mem_take(uint64_t address);
void preempt_mem_give_back_taken(void *taken);
/* Bytes a pitched allocation may take before the API says its pitch: rows padded to 512 bytes; the ledger
 * is corrected to pitch x rows afterwards. */
uint64_t preempt_mem_pitched_estimate(uint64_t width, uint64_t rows);

/* The public API's bodies, for the API the caller wraps (preempt.h's preempt_mem_budget, preempt_mem_get_info). */
preempt_status preempt_mem_budget_with(const preempt_mem_gpu *gpu, size_t bytes);
preempt_status preempt_mem_get_info_with(const preempt_mem_gpu *gpu, preempt_mem_info *info);

#endif
