/* daemon_protocol.h: what preemptd, the runtime in each application, and preemptctl exchange.
 * EffiSha §6.1 (kernel stubs in shared memory, states PREP..DONE), §6.4 (priority limits); FLEP §3 (launches
 * intercepted and scheduled by one scheduler per node). docs/daemon.md has the whole protocol in prose.
 *
 * Two channels:
 *  1. A Unix socket (SOCK_SEQPACKET, one message per packet), authenticated with SO_PEERCRED: registration,
 *     priority changes, and preemptctl's requests. The connection stays open for the client's lifetime;
 *     its end is how each side learns the other died.
 *  2. The hot path: a per-client shared page of kernel stubs (memfd, created by the daemon, mapped by that
 *     client alone) and futex wake-ups: the client rings the daemon's doorbell word, the daemon rings the
 *     client's wake word. No socket round trip per launch.
 *
 * Everything is little-endian, fixed-size, naturally aligned; the sizes are checked by static asserts.
 * Neither side trusts the other's bytes: every message goes through preempt_msg_decode, and the daemon
 * copies a stub out of the shared page and validates the copy (preempt_stub_validate) before using it. */
#ifndef PREEMPT_DAEMON_PROTOCOL_H
#define PREEMPT_DAEMON_PROTOCOL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h> /* ssize_t */

#ifdef __cplusplus
extern "C" {
#endif

/* 2: LISTING kernel entries carry the FFS weight granted (104 bytes, were 96). 3: the memory ledger's messages
 * (MEM_*). 4: FlexSched co-execution (issue 7): REGISTER's GPUs carry their SM limits (56 bytes, were 24), stubs
 * carry the launch's CTA footprint, task count, the daemon's CTA quota and the client's progress samples (216
 * bytes, were 176), LISTING kernels the quota. 6: JOB (a Slurm job step's processes, their priority and memory limit,
 * from root; issue 43), LISTING clients carry their job and step (80 bytes, were 72), MEM_REPLY may say OVER_LIMIT.
 * Every message's header, and the shared page, carry the version, so
 * a daemon and a client or preemptctl of another version refuse each other at once. */
#define PREEMPT_DAEMON_PROTOCOL_VERSION 6u
#define PREEMPT_DAEMON_MAGIC 0x544d5250u /* "PRMT" */
/* Clients and preemptctl use $PREEMPT_DAEMON_SOCKET when set, else this. */
#define PREEMPT_DAEMON_SOCKET_DEFAULT "/run/preemptd/preemptd.sock"
/* Largest packet either side sends (the LIST reply is the largest). */
#define PREEMPT_DAEMON_MAX_MESSAGE 65536u

/* Priorities: larger is more urgent. A process's default is -nice (nice 0 -> 0,
 * nice 10 -> -10). A user other than root may ask for anything from MIN up to
 * its default and no higher (EffiSha §6.4); root may ask for up to MAX. */
#define PREEMPT_PRIORITY_MIN (-20)
#define PREEMPT_PRIORITY_MAX 20

/* EffiSha §6.4: default -nice; limit MAX for root, else the default; granted = clamp(request or default).
 * preemptd grants with it, and memory admission without a daemon applies the same rule to itself. */
void preempt_grant_priority(uid_t uid, int nice, int requested, int32_t request, int32_t *granted, int32_t *limit);
int32_t preempt_clamp_priority(int32_t priority, int32_t limit);

/* FFS share weights (FLEP §5.2.2's W_i): under FFS a kernel's epochs are its weight times a common unit, so
 * kernels of weights 2 and 1 get the GPU 2:1. A launch asks for 1..MAX in its stub (0 reads as 1); the
 * daemon clamps it to the client's weight limit: MAX for uid 0, else 1. A user other than root cannot raise
 * its share above the default, as with priorities (EffiSha §6.4). */
#define PREEMPT_WEIGHT_MAX 64

#define PREEMPT_DAEMON_MAX_GPUS 16
#define PREEMPT_STUBS_PER_CLIENT 64
#define PREEMPT_DAEMON_NAME_BYTES 48    /* kernel names, truncated, NUL-terminated */
#define PREEMPT_DAEMON_PROGRAM_BYTES 32 /* program names, truncated, NUL-terminated */
#define PREEMPT_DAEMON_POLICY_BYTES 16  /* "fifo", "hpf", "ffs", "piv", "dprr", "flexsched" */
#define PREEMPT_DAEMON_TEXT_BYTES 160   /* error messages */
#define PREEMPT_DAEMON_SM_MASK_WORDS 8  /* SM ids 0..255, as preempt.h's preempt_sm_mask */
/* Bounds of the SM limits a REGISTER may report and of a stub's footprint: beyond any GPU made, so a value past
 * them is a broken or hostile client, not a big GPU. */
#define PREEMPT_DAEMON_MAX_SM_THREADS 4096u
#define PREEMPT_DAEMON_MAX_SM_CTAS 64u        /* also the largest CTA quota */
#define PREEMPT_DAEMON_MAX_SM_REGISTERS (1u << 20)
#define PREEMPT_DAEMON_MAX_SHARED_BYTES (16u << 20) /* an SM's, and one CTA's static + dynamic */
#define PREEMPT_DAEMON_MAX_REGISTERS_PER_THREAD 255u

/* Status codes in replies and of the codec. */
typedef enum preempt_daemon_status {
  PREEMPT_DAEMON_OK = 0,
  PREEMPT_DAEMON_MALFORMED = 1,       /* wrong magic, size, enum value, unterminated string... */
  PREEMPT_DAEMON_BAD_VERSION = 2,     /* another protocol version */
  PREEMPT_DAEMON_NOT_PERMITTED = 3,   /* e.g. a policy switch by a user other than root or the daemon's */
  PREEMPT_DAEMON_UNKNOWN_POLICY = 4,
  PREEMPT_DAEMON_UNKNOWN_GPU = 5,
  PREEMPT_DAEMON_FULL = 6,            /* too many clients, GPUs, or kernels */
  PREEMPT_DAEMON_NOT_REGISTERED = 7,  /* a client request before REGISTER */
  PREEMPT_DAEMON_SYSTEM = 8,          /* a system call failed; the message has errno's text */
  PREEMPT_DAEMON_BUFFER_TOO_SMALL = 9,
} preempt_daemon_status;

const char *preempt_daemon_status_name(preempt_daemon_status status);

/* ---------------------------------------------------------------- socket messages */

typedef enum preempt_msg_type {
  /* client -> daemon */
  PREEMPT_MSG_REGISTER = 1,        /* reply: REGISTERED (+ two fds) or STATUS */
  PREEMPT_MSG_SET_PRIORITY = 2,    /* reply: PRIORITY or STATUS */
  /* client -> daemon, memory admission (schedGPU §3.1's client-server mode; docs/memory.md). A connection of
   * its own, not the REGISTER one: an LD_PRELOAD client has no kernels to register. */
  PREEMPT_MSG_MEM_ATTACH = 3,      /* reply: MEM_ATTACHED or STATUS */
  PREEMPT_MSG_MEM_RESERVE = 4,     /* reply: one MEM_REPLY, at once or when granted */
  PREEMPT_MSG_MEM_RELEASE = 5,     /* no reply */
  PREEMPT_MSG_MEM_CANCEL = 6,      /* no reply of its own: the RESERVE's MEM_REPLY says CANCELLED, or GRANTED if first */
  PREEMPT_MSG_MEM_QUERY = 7,       /* reply: MEM_REPLY (LEDGER) */
  PREEMPT_MSG_MEM_READING = 8,     /* no reply: a waiting client's reading, for a daemon without NVML */
  /* preemptctl -> daemon (any connection, registered or not) */
  PREEMPT_MSG_LIST = 10,           /* reply: LISTING */
  PREEMPT_MSG_SET_POLICY = 11,     /* reply: STATUS */
  PREEMPT_MSG_JOB = 12,            /* reply: STATUS; root and the daemon's user only */
  /* daemon -> client / preemptctl */
  PREEMPT_MSG_REGISTERED = 20,
  PREEMPT_MSG_PRIORITY = 21,
  PREEMPT_MSG_STATUS = 22,
  PREEMPT_MSG_LISTING = 23,
  PREEMPT_MSG_MEM_ATTACHED = 24,
  PREEMPT_MSG_MEM_REPLY = 25,
} preempt_msg_type;

typedef struct preempt_msg_header {
  uint32_t magic;       /* PREEMPT_DAEMON_MAGIC */
  uint16_t version;     /* PREEMPT_DAEMON_PROTOCOL_VERSION */
  uint16_t type;        /* preempt_msg_type */
  uint32_t length;      /* of the whole message, header included; must equal the packet's size */
  uint32_t request_id;  /* chosen by the requester, echoed in the reply */
} preempt_msg_header;

/* A GPU as the client's CUDA/HIP runtime sees it; the daemon keys GPUs by UUID,
 * so clients that number devices differently (CUDA_VISIBLE_DEVICES) agree. */
typedef struct preempt_msg_gpu {
  uint8_t uuid[16];
  uint32_t sm_count;    /* 1..256 */
  /* What one SM holds (coexec.h's preempt_sm_limits, same fields in the same order), for FlexSched's
   * configuration space (§4.3). All zero: unknown (a HIP runtime, or one that does not ask the driver), and
   * the daemon then never co-locates kernels on this GPU. Otherwise every field is nonzero except
   * shared_reserved, with max_threads <= 4096, max_ctas <= 64, registers <= 1 << 20, shared_bytes <= 16 MiB. */
  uint32_t max_threads;
  uint32_t max_ctas;
  uint32_t registers;
  uint32_t register_unit;
  uint32_t shared_bytes;
  uint32_t shared_unit;
  uint32_t shared_reserved;
  uint32_t warp_size;
  uint32_t reserved;    /* 0; keeps the entry a multiple of 8 bytes */
} preempt_msg_gpu;

typedef struct preempt_msg_register {
  preempt_msg_header header;
  int32_t priority;             /* requested, meaningful when priority_requested = 1 */
  uint32_t priority_requested;  /* 0: use the process's default (-nice) */
  uint32_t gpu_count;           /* 0..PREEMPT_DAEMON_MAX_GPUS entries of gpus are meaningful */
  uint32_t reserved;            /* 0 */
  char program[PREEMPT_DAEMON_PROGRAM_BYTES];
  preempt_msg_gpu gpus[PREEMPT_DAEMON_MAX_GPUS];
} preempt_msg_register;

/* Sent with SCM_RIGHTS carrying two fds, in this order: the client's stub page
 * (preempt_client_page, read-write) and the daemon's doorbell (preempt_doorbell_page). */
typedef struct preempt_msg_registered {
  preempt_msg_header header;
  uint32_t client_id;           /* unique for the daemon's lifetime, never 0 */
  int32_t priority;             /* granted: the request clamped to [MIN, limit] */
  int32_t priority_limit;       /* the most this client may ask for */
  uint32_t stub_count;          /* PREEMPT_STUBS_PER_CLIENT */
  uint32_t page_bytes;          /* sizeof(preempt_client_page) */
  uint32_t doorbell_bytes;      /* sizeof(preempt_doorbell_page) */
} preempt_msg_registered;

typedef struct preempt_msg_set_priority {
  preempt_msg_header header;
  int32_t priority;
  uint32_t reserved;
} preempt_msg_set_priority;

typedef struct preempt_msg_priority {
  preempt_msg_header header;
  int32_t priority;             /* granted */
  int32_t priority_limit;
} preempt_msg_priority;

typedef struct preempt_msg_set_policy {
  preempt_msg_header header;
  uint8_t uuid[16];             /* all zero: every GPU */
  char policy[PREEMPT_DAEMON_POLICY_BYTES];
} preempt_msg_set_policy;

/* JOB: what Slurm granted a job step (tools/slurm/preempt_spank.c, from slurmstepd as root). Every process whose
 * ancestors include `pid` (the step's slurmstepd) and whose uid is `uid` belongs to job_id.step_id: its priority is
 * at most `priority` (also its default), and the memory all the job's processes reserve on this node together
 * is at most mem_limit_bytes. A process's clients learn it when they REGISTER or MEM_ATTACH. */
#define PREEMPT_JOB_END 1u        /* the step ended: forget it (pid, priority and limit are 0) */
#define PREEMPT_JOB_PRIORITY 2u   /* priority is set; without it the processes keep the usual -nice rule */

typedef struct preempt_msg_job {
  preempt_msg_header header;
  uint32_t job_id;              /* never 0 */
  uint32_t step_id;             /* Slurm's, its special values (batch, extern, ...) included */
  uint32_t uid;                 /* the job's user */
  uint32_t pid;                 /* the step's slurmstepd; 0 with PREEMPT_JOB_END */
  int32_t priority;             /* MIN..MAX with PREEMPT_JOB_PRIORITY, else 0 */
  uint32_t flags;               /* PREEMPT_JOB_* */
  uint64_t mem_limit_bytes;     /* 0: no limit */
} preempt_msg_job;

typedef struct preempt_msg_status {
  preempt_msg_header header;
  int32_t status;               /* preempt_daemon_status */
  uint32_t reserved;
  char message[PREEMPT_DAEMON_TEXT_BYTES];
} preempt_msg_status;

typedef struct preempt_msg_list {
  preempt_msg_header header;
} preempt_msg_list;

/* LISTING: this fixed part, then gpu_count preempt_listing_gpu, client_count
 * preempt_listing_client and kernel_count preempt_listing_kernel, in that order. */
/* How the node's GPUs are shared between processes, as the daemon finds it (version 5, in version 4's reserved
 * word of LISTING): under MPS kernels of different processes run at once; without it the driver time-slices the
 * GPU between their contexts, and evicting some SMs makes no room for another process (docs/daemon.md). */
typedef enum preempt_sharing {
  PREEMPT_SHARING_TIMESLICE = 1,
  PREEMPT_SHARING_MPS = 2,
} preempt_sharing;

typedef struct preempt_msg_listing {
  preempt_msg_header header;
  uint32_t gpu_count, client_count, kernel_count;
  uint32_t sharing;             /* preempt_sharing */
  uint64_t uptime_us;
} preempt_msg_listing;

typedef struct preempt_listing_gpu {
  uint8_t uuid[16];
  uint32_t sm_count;
  uint32_t kernels;             /* not DONE */
  uint64_t decisions, evictions;
  char policy[PREEMPT_DAEMON_POLICY_BYTES];
} preempt_listing_gpu;

typedef struct preempt_listing_client {
  uint32_t client_id, pid, uid;
  int32_t priority, priority_limit;
  uint32_t lease;               /* version 5: the client page's lease word (bit i: its GPU i; docs/daemon.md, "Leases") */
  uint64_t launches, evictions;
  char program[PREEMPT_DAEMON_PROGRAM_BYTES];
  uint32_t job_id, step_id;     /* version 6: its Slurm job and step (JOB); 0, 0: none */
} preempt_listing_client;

typedef struct preempt_listing_kernel {
  uint32_t client_id;
  uint32_t stub;                /* index in the client's page */
  uint32_t gpu;                 /* index in this listing's GPUs */
  uint32_t state;               /* preempt_stub_state */
  int32_t priority;
  uint32_t evictions;
  uint32_t weight;              /* FFS weight granted: the stub's, clamped to the client's limit; 1..PREEMPT_WEIGHT_MAX */
  uint32_t quota;               /* CTAs per SM the daemon allows it on every SM (flexsched); 0: none */
  double waited_us, ran_us, predicted_us;
  char name[PREEMPT_DAEMON_NAME_BYTES];
} preempt_listing_kernel;

/* ---------------------------------------------------------------- memory admission (schedGPU §3.1, §5)
 * The daemon keeps one ledger per GPU (lib/mem_ledger.h), sized from NVML; the client asks before each allocation
 * and gives back after each free. A RESERVE that does not fit waits in the ledger's queue by the daemon's memory
 * policy; its one MEM_REPLY comes when it is granted. The client's timeout is its own: it sends CANCEL and reads
 * the RESERVE's reply, CANCELLED or (when the grant won the race) GRANTED. The connection's end releases
 * everything the client held and withdraws its request. */

/* MEM_ATTACHED flags */
#define PREEMPT_MEM_DAEMON_WANTS_READINGS 1u /* the daemon has no NVML: RESERVEs carry the client's reading */

/* MEM_RESERVE flags */
#define PREEMPT_MEM_RESERVE_NOW 1u         /* already allocated (a pitch that grew, memory held when the client
                                              moved ledgers): recorded at once, never queued, never refused */
#define PREEMPT_MEM_RESERVE_AFTER_OOM 2u   /* the allocation said out of memory although admitted: read the
                                              GPU's used memory before queueing */

typedef struct preempt_msg_mem_attach {
  preempt_msg_header header;
  int32_t priority;             /* requested, meaningful when priority_requested = 1 */
  uint32_t priority_requested;  /* 0: the process's default (-nice) */
  char program[PREEMPT_DAEMON_PROGRAM_BYTES];
} preempt_msg_mem_attach;

typedef struct preempt_msg_mem_attached {
  preempt_msg_header header;
  uint32_t client_id;
  int32_t priority, priority_limit; /* granted as for REGISTER (EffiSha §6.4) */
  uint32_t flags;               /* PREEMPT_MEM_DAEMON_* */
} preempt_msg_mem_attached;

typedef struct preempt_msg_mem_reserve {
  preempt_msg_header header;
  uint8_t uuid[16];             /* the GPU, as the client's runtime names it */
  uint64_t bytes;               /* 1 or more */
  /* The client's reading of the GPU (total, used), when the daemon asked for readings; else 0, 0. */
  uint64_t device_total_bytes, device_used_bytes;
  uint32_t flags;               /* PREEMPT_MEM_RESERVE_* */
  uint32_t reserved;            /* 0 */
} preempt_msg_mem_reserve;

typedef struct preempt_msg_mem_release {
  preempt_msg_header header;
  uint8_t uuid[16];
  uint64_t bytes;               /* at most what the client holds on that GPU; more is a broken client */
} preempt_msg_mem_release;

typedef struct preempt_msg_mem_cancel {
  preempt_msg_header header;
  uint32_t reserve_request_id;  /* the waiting RESERVE's request_id */
  uint32_t reserved;            /* 0 */
} preempt_msg_mem_cancel;

/* Sent every 100 ms by a client whose RESERVE waits, when the daemon asked for readings: memory freed outside the
 * ledger (a program without admission ending) lets waiters go without NVML. */
typedef struct preempt_msg_mem_reading {
  preempt_msg_header header;
  uint8_t uuid[16];
  uint64_t device_total_bytes, device_used_bytes;
} preempt_msg_mem_reading;

/* A client that asks about a GPU is in its ledger from then on (as one that opened the shared segment is): the
 * GPU is added with the reading when the daemon has not seen it. */
typedef struct preempt_msg_mem_query {
  preempt_msg_header header;
  uint8_t uuid[16];
  uint64_t device_total_bytes, device_used_bytes; /* the client's reading; 0, 0: none */
} preempt_msg_mem_query;

typedef enum preempt_mem_reply_result {
  PREEMPT_MEM_REPLY_GRANTED = 0,    /* the bytes are the client's now */
  PREEMPT_MEM_REPLY_CANCELLED = 1,  /* withdrawn by CANCEL */
  PREEMPT_MEM_REPLY_NEVER_FITS = 2, /* more than the GPU's memory */
  PREEMPT_MEM_REPLY_FULL = 3,       /* no client slot or queue entry left, or a request already waiting */
  PREEMPT_MEM_REPLY_UNKNOWN_GPU = 4,/* neither NVML nor the client's reading gives the GPU's memory size */
  PREEMPT_MEM_REPLY_LEDGER = 5,     /* the answer to a QUERY */
  PREEMPT_MEM_REPLY_OVER_LIMIT = 6, /* the client's job would hold more than its memory limit (JOB) */
} preempt_mem_reply_result;

/* The answer to a RESERVE or a QUERY, with the ledger as it stands after it. */
typedef struct preempt_msg_mem_reply {
  preempt_msg_header header;    /* request_id: the RESERVE's or QUERY's */
  uint32_t result;              /* preempt_mem_reply_result */
  uint32_t clients, waiting;    /* clients holding a slot in the GPU's ledger; requests queued now */
  uint32_t readings_from_nvml;  /* 1: capacity and external come from NVML; 0: from the clients' readings */
  uint64_t capacity_bytes, external_bytes, reserved_bytes; /* reserved: by every client, grants not taken included */
  uint64_t held_bytes;          /* by this client on this GPU */
  uint64_t dead_clients;        /* clients whose connection ended while they held memory or waited */
  char policy[PREEMPT_DAEMON_POLICY_BYTES]; /* preempt_mem_policy_name */
} preempt_msg_mem_reply;

#define PREEMPT_LISTING_MAX_CLIENTS 256
#define PREEMPT_LISTING_MAX_KERNELS 256

/* A decoded message. Decoding checks everything the type promises: magic,
 * version, type, length (exactly the type's size; for LISTING, the fixed part
 * plus its counts, each within its maximum), strings NUL-terminated within
 * their field, counts, enums and weights in range, reserved fields 0. */
typedef struct preempt_msg {
  preempt_msg_type type;
  uint32_t request_id;
  union {
    preempt_msg_register register_request;
    preempt_msg_registered registered;
    preempt_msg_set_priority set_priority;
    preempt_msg_priority priority;
    preempt_msg_set_policy set_policy;
    preempt_msg_job job;
    preempt_msg_mem_attach mem_attach;
    preempt_msg_mem_attached mem_attached;
    preempt_msg_mem_reserve mem_reserve;
    preempt_msg_mem_release mem_release;
    preempt_msg_mem_cancel mem_cancel;
    preempt_msg_mem_query mem_query;
    preempt_msg_mem_reading mem_reading;
    preempt_msg_mem_reply mem_reply;
    preempt_msg_status status;
    preempt_msg_listing listing;   /* the fixed part; the arrays stay in the packet (see below) */
  } body;
  /* LISTING only: the arrays, pointing into the decoded packet. */
  const preempt_listing_gpu *listing_gpus;
  const preempt_listing_client *listing_clients;
  const preempt_listing_kernel *listing_kernels;
} preempt_msg;

/* Validates `length` bytes and fills `out`; PREEMPT_DAEMON_OK or why not
 * (MALFORMED, BAD_VERSION). Never reads outside [bytes, bytes + length). The
 * packet must stay alive while out's listing pointers are used, and be
 * aligned to 8 bytes. */
preempt_daemon_status preempt_msg_decode(const void *bytes, size_t length, preempt_msg *out);
/* The same; when the bytes are refused, *why (if `why` is not NULL) names the first thing found wrong, a static
 * string such as "LISTING kernel weight not in 1..64", for error messages; NULL when accepted. */
preempt_daemon_status preempt_msg_decode_why(const void *bytes, size_t length, preempt_msg *out, const char **why);

/* Fills the header of a fixed-size message of `type` in place. */
void preempt_msg_header_init(preempt_msg_header *header, preempt_msg_type type, uint32_t length, uint32_t request_id);

/* Copies `text` into a fixed field, truncating, always NUL-terminated, zero-padded. */
void preempt_copy_name(char *field, size_t field_bytes, const char *text);

/* ---------------------------------------------------------------- the shared page */

/* EffiSha §6.1's states, plus FREE. Who may move a stub from each state
 * (everyone else only reads it):
 *   FREE    -> PREP     client (compare-and-swap): it takes the stub for a launch
 *   PREP    -> READY    client (release store), after filling the launch fields; then rings the doorbell
 *   PREP    -> RUNNING  client (release store), on a lease (preempt_client_page.lease): it started the
 *                       launch itself; then rings the doorbell
 *   READY   -> TORUN    daemon: run it (SMs in command_mask, all when command_all); then wakes the client
 *   TORUN   -> RUNNING  client, once it has launched or resumed the kernel; rings the doorbell
 *   RUNNING -> TOEVICT  daemon (compare-and-swap): leave the SMs in command_mask (all when command_all)
 *   RUNNING -> TORUN    daemon (compare-and-swap): after a partial eviction, take back the SMs in command_mask
 *   RUNNING -> DONE     client (compare-and-swap): every task finished; rings the doorbell
 *   TOEVICT -> READY    client: a full eviction finished (no CTA left); rings the doorbell
 *   TOEVICT -> RUNNING  client: a partial eviction was issued (it keeps running on its other SMs)
 *   TOEVICT -> DONE     client: it finished before it could be evicted
 *   DONE    -> FREE     daemon, after accounting for it
 * The daemon writes command_* before its store of TORUN/TOEVICT (release);
 * the client reads them after its acquire load of the state. A value outside
 * this enum, or a move not in this table, marks the client as broken: the
 * daemon disconnects it and reclaims its stubs. */
typedef enum preempt_stub_state {
  PREEMPT_STUB_FREE = 0,
  PREEMPT_STUB_PREP = 1,
  PREEMPT_STUB_READY = 2,
  PREEMPT_STUB_TORUN = 3,
  PREEMPT_STUB_RUNNING = 4,
  PREEMPT_STUB_TOEVICT = 5,
  PREEMPT_STUB_DONE = 6,
} preempt_stub_state;

const char *preempt_stub_state_name(uint32_t state);

/* One launch. Field groups say who writes them and when. */
typedef struct preempt_stub {
  uint32_t state;               /* preempt_stub_state; only through __atomic builtins */
  uint32_t launch_sequence;     /* client: +1 per launch that takes this stub */
  /* client, in PREP only */
  uint32_t gpu;                 /* index into the client's REGISTER gpus */
  int32_t priority;             /* requested; the daemon clamps it to the client's limit */
  uint32_t grid[3], block[3];   /* the original launch */
  uint32_t persistent_ctas;     /* CTAs of the persistent grid */
  uint32_t ctas_per_sm;         /* occupancy; SMs needed = ceil(persistent_ctas / ctas_per_sm) */
  uint64_t shared_bytes;        /* dynamic shared memory per CTA */
  uint64_t input_bytes;         /* FLEP §4.2's input size, when the client knows it; else 0 */
  uint64_t kernel_key;          /* FNV-1a of the full kernel name: the daemon's per-kernel model key */
  char name[PREEMPT_DAEMON_NAME_BYTES];
  /* daemon, before storing TORUN or TOEVICT */
  uint32_t command_sequence;    /* +1 per command: tells a new command from one already carried out */
  uint32_t command_all;         /* 1: every SM */
  uint32_t command_mask[PREEMPT_DAEMON_SM_MASK_WORDS];
  /* client, before storing READY (after TOEVICT) or DONE */
  uint32_t evictions_done;      /* evictions carried out for this launch */
  /* client, written in PREP (it sits here for the layout): the FFS share weight it asks for, 1..PREEMPT_WEIGHT_MAX
   * (0 reads as 1); the daemon clamps it to the client's weight limit (PREEMPT_WEIGHT_MAX for uid 0, else 1) */
  uint32_t weight;
  /* client, before storing READY (after TOEVICT) or DONE */
  uint64_t last_eviction_ns;    /* request to no CTA left, measured by the client: the daemon's eviction cost samples */
  /* Protocol 4, FlexSched co-execution (§4.3, §4.4): appended so that every field above keeps its offset. */
  /* client, in PREP: one CTA's footprint (the configuration space's input) and the launch's task count.
   * registers_per_thread 0: footprint unknown (HIP, an older runtime); the daemon never co-locates it. */
  uint32_t registers_per_thread; /* 0..255 */
  uint32_t static_shared_bytes; /* static shared memory per CTA; plus shared_bytes (dynamic): at most 16 MiB */
  uint32_t task_count;          /* tasks of the launch (>= 1 when registers_per_thread != 0) */
  uint32_t reserved_client;     /* 0 */
  /* daemon, before storing TORUN: CTAs per SM the kernel may hold on every SM; 0 = no quota (its SMs at full
   * occupancy, as before version 4) */
  uint32_t command_quota;
  uint32_t reserved_daemon;     /* 0 */
  /* client, at any time while RUNNING, plain stores: FlexSched's TER samples (Eq. 2). The daemon reads them
   * racily as untrusted samples: progress_ns, then progress_tasks, then progress_ns again, and it drops a sample
   * whose progress_ns changed in between. */
  uint64_t progress_tasks;      /* tasks taken so far by the launch */
  uint64_t progress_ns;         /* CLOCK_MONOTONIC nanoseconds when progress_tasks was read; 0: no sample yet */
} preempt_stub;

typedef struct preempt_client_page {
  uint32_t page_version;        /* PREEMPT_DAEMON_PROTOCOL_VERSION, written by the daemon */
  uint32_t client_id;
  uint32_t client_wake;         /* futex: the daemon adds 1 and wakes after every command; the client's
                                   own threads may ring it too, to wake its agent (only a counter) */
  /* Written by the daemon only (release store): bit i set = a lease on the
   * client's GPU i: no other client has a launch there, so the client may
   * start a launch at once and publish it RUNNING (PREP -> RUNNING) instead
   * of READY, and run short launches without a stub. Cleared when another
   * client's launch arrives there; a launch started on a lease the daemon
   * had already cleared is evicted at once and then held (docs/daemon.md,
   * "Leases"). 0 from a daemon that grants none. */
  uint32_t lease;
  preempt_stub stubs[PREEMPT_STUBS_PER_CLIENT];
} preempt_client_page;

/* One per daemon, mapped read-write by every client: any client may ring it,
 * so it carries nothing but a counter, and a ring only makes the daemon scan
 * the pages again. */
typedef struct preempt_doorbell_page {
  uint32_t doorbell;            /* futex: a client adds 1 and wakes after every move it makes */
  uint32_t reserved[15];
} preempt_doorbell_page;

/* The daemon's check of a stub it copied out of a client's page, once the copy
 * says READY: gpu < gpu_count, every grid and block dimension >= 1, block
 * threads <= 1024, persistent_ctas >= 1, ctas_per_sm >= 1, name NUL-terminated,
 * weight <= PREEMPT_WEIGHT_MAX (0 is allowed: it reads as 1), registers_per_thread <= 255,
 * static_shared_bytes + shared_bytes <= 16 MiB, task_count >= 1 when registers_per_thread != 0.
 * Fixes nothing in place; MALFORMED names the first bad field in `why`. */
preempt_daemon_status preempt_stub_validate(const preempt_stub *copy, uint32_t gpu_count, const char **why);

/* Whether moving a stub from `from` to `to` is allowed for the client (by_daemon = 0) or the daemon. */
int preempt_stub_move_allowed(uint32_t from, uint32_t to, int by_daemon);

/* FNV-1a 64 of a string (kernel_key). */
uint64_t preempt_kernel_key(const char *name);

/* Receives one packet with recvmsg (`flags` | MSG_CMSG_CLOEXEC) into `buffer`, keeping up to `max_fds` of
 * the descriptors sent with it in `fds` (*fd_count of them) and closing the rest; at most
 * PREEMPT_RECEIVE_MAX_FDS arrive, more are dropped by the kernel (MSG_CTRUNC). Returns the packet's length
 * (0: the peer closed, when no descriptor came either), or -1 with errno; *message_flags gets msg_flags
 * (MSG_TRUNC, MSG_CTRUNC). Shared by preemptd, the runtime's client, preemptctl and the test client. */
#define PREEMPT_RECEIVE_MAX_FDS 8
ssize_t preempt_receive_packet(int socket_fd, void *buffer, size_t capacity, int flags, int *fds, int max_fds,
                               int *fd_count, int *message_flags);

/* Futex helpers on a word in shared memory (not FUTEX_PRIVATE: the word is
 * shared between processes). wait returns 0 when woken or the value differed,
 * 1 on timeout (timeout_ns < 0: none), -1 with errno on other failures. */
int preempt_futex_wait(uint32_t *word, uint32_t expected, int64_t timeout_ns);
/* Adds 1 to the word and wakes every waiter. */
void preempt_futex_ring(uint32_t *word);

#ifdef __cplusplus
}
#endif
#endif
