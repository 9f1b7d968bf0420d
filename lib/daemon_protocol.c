/* daemon_protocol.c: the codec and checks of preemptd's protocol (daemon_protocol.h): message decoding, stub checks,
 * the stub state moves, kernel keys. EffiSha §6.1 (stubs, states PREP..DONE), §6.4 (priority limits); FLEP §3. */
#include "preempt/daemon_protocol.h"

#include <math.h>
#include <stdint.h>
#include <stdalign.h>
#include <string.h>

/* ---------------------------------------------------------------- layout
 * Both sides are compiled separately (the daemon, every client, preemptctl), possibly by different compilers, so the
 * wire layout is pinned here: each size is the sum of the member sizes (no implicit padding whose bytes would be
 * unspecified on the wire or in the shared page) and equals the size the protocol documents. */
#define FIELD(type, member) sizeof(((type *)0)->member)
#define NO_PADDING(type, sum) _Static_assert(sizeof(type) == (sum), #type " has implicit padding")
#define SIZE_IS(type, bytes) _Static_assert(sizeof(type) == (bytes), #type " changed size: update the protocol version")

NO_PADDING(preempt_msg_header, 4 + 2 + 2 + 4 + 4);
NO_PADDING(preempt_msg_gpu, 16 + 4 + 8 * 4 + 4);
NO_PADDING(preempt_msg_register, sizeof(preempt_msg_header) + 4 * 4 + PREEMPT_DAEMON_PROGRAM_BYTES +
                                     PREEMPT_DAEMON_MAX_GPUS * sizeof(preempt_msg_gpu));
NO_PADDING(preempt_msg_registered, sizeof(preempt_msg_header) + 6 * 4);
NO_PADDING(preempt_msg_set_priority, sizeof(preempt_msg_header) + 2 * 4);
NO_PADDING(preempt_msg_priority, sizeof(preempt_msg_header) + 2 * 4);
NO_PADDING(preempt_msg_set_policy, sizeof(preempt_msg_header) + 16 + PREEMPT_DAEMON_POLICY_BYTES);
NO_PADDING(preempt_msg_job, sizeof(preempt_msg_header) + 6 * 4 + 8);
NO_PADDING(preempt_msg_status, sizeof(preempt_msg_header) + 2 * 4 + PREEMPT_DAEMON_TEXT_BYTES);
NO_PADDING(preempt_msg_list, sizeof(preempt_msg_header));
NO_PADDING(preempt_msg_listing, sizeof(preempt_msg_header) + 4 * 4 + 8);
NO_PADDING(preempt_listing_gpu, 16 + 2 * 4 + 2 * 8 + PREEMPT_DAEMON_POLICY_BYTES);
NO_PADDING(preempt_listing_client, 6 * 4 + 2 * 8 + PREEMPT_DAEMON_PROGRAM_BYTES + 2 * 4);
NO_PADDING(preempt_listing_kernel, 8 * 4 + 3 * 8 + PREEMPT_DAEMON_NAME_BYTES);
NO_PADDING(preempt_msg_mem_attach, sizeof(preempt_msg_header) + 2 * 4 + PREEMPT_DAEMON_PROGRAM_BYTES);
NO_PADDING(preempt_msg_mem_attached, sizeof(preempt_msg_header) + 4 * 4);
NO_PADDING(preempt_msg_mem_reserve, sizeof(preempt_msg_header) + 16 + 3 * 8 + 2 * 4);
NO_PADDING(preempt_msg_mem_release, sizeof(preempt_msg_header) + 16 + 8);
NO_PADDING(preempt_msg_mem_cancel, sizeof(preempt_msg_header) + 2 * 4);
NO_PADDING(preempt_msg_mem_reading, sizeof(preempt_msg_header) + 16 + 2 * 8);
NO_PADDING(preempt_msg_mem_query, sizeof(preempt_msg_header) + 16 + 2 * 8);
NO_PADDING(preempt_msg_mem_reply, sizeof(preempt_msg_header) + 4 * 4 + 5 * 8 + PREEMPT_DAEMON_POLICY_BYTES);
NO_PADDING(preempt_stub, 4 * 4 + 6 * 4 + 2 * 4 + 3 * 8 + PREEMPT_DAEMON_NAME_BYTES + 2 * 4 +
                             PREEMPT_DAEMON_SM_MASK_WORDS * 4 + 2 * 4 + 8 + 4 * 4 + 2 * 4 + 2 * 8);
NO_PADDING(preempt_client_page, 4 * 4 + PREEMPT_STUBS_PER_CLIENT * sizeof(preempt_stub));
NO_PADDING(preempt_doorbell_page, 16 * 4);

SIZE_IS(preempt_msg_header, 16);
SIZE_IS(preempt_msg_gpu, 56);
SIZE_IS(preempt_msg_register, 960);
SIZE_IS(preempt_msg_listing, 40);
SIZE_IS(preempt_listing_gpu, 56);
SIZE_IS(preempt_listing_client, 80);
SIZE_IS(preempt_msg_job, 48);
SIZE_IS(preempt_listing_kernel, 104);
SIZE_IS(preempt_stub, 216);
SIZE_IS(preempt_msg_mem_reserve, 64);
SIZE_IS(preempt_msg_mem_reply, 88);
SIZE_IS(preempt_client_page, 13840);

/* The LISTING arrays are read in place: each part must keep the next one 8-byte aligned (their 64-bit fields). */
_Static_assert(sizeof(preempt_msg_listing) % 8 == 0 && sizeof(preempt_listing_gpu) % 8 == 0 &&
                   sizeof(preempt_listing_client) % 8 == 0 && sizeof(preempt_listing_kernel) % 8 == 0,
               "LISTING parts must keep 8-byte alignment");
_Static_assert(alignof(preempt_listing_gpu) <= 8 && alignof(preempt_listing_client) <= 8 &&
                   alignof(preempt_listing_kernel) <= 8,
               "LISTING entries need at most the packet's 8-byte alignment");
/* The 64-bit stub fields sit on 8-byte boundaries in the shared page, so atomic or plain accesses never tear. */
_Static_assert(FIELD(preempt_client_page, stubs) % 8 == 0 && offsetof(preempt_client_page, stubs) % 8 == 0 &&
                   sizeof(preempt_stub) % 8 == 0 && offsetof(preempt_stub, shared_bytes) % 8 == 0 &&
                   offsetof(preempt_stub, last_eviction_ns) % 8 == 0 &&
                   offsetof(preempt_stub, progress_tasks) % 8 == 0 && offsetof(preempt_stub, progress_ns) % 8 == 0,
               "stub 64-bit fields misaligned");
/* Version 4 appended its fields: everything a version 3 stub had keeps its offset (the client side's code, and
 * any tool reading a page dump, index the same bytes). */
_Static_assert(offsetof(preempt_stub, registers_per_thread) == 176 && offsetof(preempt_stub, command_quota) == 192 &&
                   offsetof(preempt_stub, progress_tasks) == 200 && offsetof(preempt_stub, progress_ns) == 208,
               "version 4 stub fields moved");
/* The REGISTER limits are coexec.h's preempt_sm_limits, field for field, so the daemon can copy them as one. */
_Static_assert(offsetof(preempt_msg_gpu, warp_size) - offsetof(preempt_msg_gpu, max_threads) == 7 * 4,
               "preempt_msg_gpu limits are not contiguous");
/* The FFS weight took the place of a reserved word: the offsets around it, and so the page, stay as they were. */
_Static_assert(offsetof(preempt_stub, weight) == offsetof(preempt_stub, evictions_done) + 4 &&
                   offsetof(preempt_stub, last_eviction_ns) == offsetof(preempt_stub, weight) + 4 &&
                   FIELD(preempt_stub, weight) == 4,
               "preempt_stub.weight moved");
_Static_assert(PREEMPT_DAEMON_SM_MASK_WORDS * 32 == 256, "the SM mask covers SM ids 0..255");
/* The refusal text of a listing weight spells the range out. */
_Static_assert(PREEMPT_WEIGHT_MAX == 64, "update \"LISTING kernel weight not in 1..64\" below");
_Static_assert(PREEMPT_DAEMON_MAX_SM_CTAS == 64, "update \"LISTING kernel quota over 64\" below");
/* The largest LISTING must fit the largest packet. */
_Static_assert(sizeof(preempt_msg_listing) + PREEMPT_DAEMON_MAX_GPUS * sizeof(preempt_listing_gpu) +
                       PREEMPT_LISTING_MAX_CLIENTS * sizeof(preempt_listing_client) +
                       PREEMPT_LISTING_MAX_KERNELS * sizeof(preempt_listing_kernel) <=
                   PREEMPT_DAEMON_MAX_MESSAGE,
               "the largest LISTING does not fit PREEMPT_DAEMON_MAX_MESSAGE");

#define MAX_SMS 256u

const char *preempt_daemon_status_name(preempt_daemon_status status) {
  switch (status) {
  case PREEMPT_DAEMON_OK: return "ok";
  case PREEMPT_DAEMON_MALFORMED: return "malformed message";
  case PREEMPT_DAEMON_BAD_VERSION: return "another protocol version";
  case PREEMPT_DAEMON_NOT_PERMITTED: return "not permitted";
  case PREEMPT_DAEMON_UNKNOWN_POLICY: return "unknown policy";
  case PREEMPT_DAEMON_UNKNOWN_GPU: return "unknown GPU";
  case PREEMPT_DAEMON_FULL: return "table full";
  case PREEMPT_DAEMON_NOT_REGISTERED: return "not registered";
  case PREEMPT_DAEMON_SYSTEM: return "system error";
  case PREEMPT_DAEMON_BUFFER_TOO_SMALL: return "buffer too small";
  }
  return "unknown status";
}

/* ---------------------------------------------------------------- decoding */

/* A fixed char field is usable as a C string only if its NUL lies inside it; the reader must never run past it. */
static int terminated(const char *field, size_t bytes) { return memchr(field, 0, bytes) != NULL; }

static int priority_ok(int32_t priority) {
  return priority >= PREEMPT_PRIORITY_MIN && priority <= PREEMPT_PRIORITY_MAX;
}

/* A grant is a request clamped to [MIN, limit] and the limit is itself a priority, so priority <= limit. */
static int grant_ok(int32_t priority, int32_t limit) {
  return priority_ok(priority) && priority_ok(limit) && priority <= limit;
}

/* Times are shown and turned into JSON by preemptctl: NaN, infinities and negative times are malformed. */
static int time_ok(double us) { return isfinite(us) && us >= 0; }

/* The checks below return NULL when the body is sound, else a static text naming the first bad field: the status
 * code alone ("malformed message") does not tell a user which of a reply's hundreds of fields was wrong. */

/* A GPU's SM limits: all zero (unknown: the daemon never co-locates kernels there), or a plausible SM. A zero in
 * one field only would make the configuration space divide by it or treat a resource as absent. */
static const char *check_sm_limits(const preempt_msg_gpu *g) {
  if (g->max_threads == 0 && g->max_ctas == 0 && g->registers == 0 && g->register_unit == 0 && g->shared_bytes == 0 &&
      g->shared_unit == 0 && g->shared_reserved == 0 && g->warp_size == 0)
    return NULL;
  /* shared_reserved may be 0: GPUs before compute capability 8.0 reserve nothing per CTA. */
  if (g->max_threads == 0 || g->max_ctas == 0 || g->registers == 0 || g->register_unit == 0 || g->shared_bytes == 0 ||
      g->shared_unit == 0 || g->warp_size == 0)
    return "REGISTER GPU SM limits partly zero";
  if (g->max_threads > PREEMPT_DAEMON_MAX_SM_THREADS || g->max_ctas > PREEMPT_DAEMON_MAX_SM_CTAS ||
      g->registers > PREEMPT_DAEMON_MAX_SM_REGISTERS || g->shared_bytes > PREEMPT_DAEMON_MAX_SHARED_BYTES)
    return "REGISTER GPU SM limits out of range";
  return NULL;
}
static const char *check_register(const preempt_msg_register *m) {
  /* priority is only meaningful when requested, but a zeroed field is in range too, so it is always checked. */
  if (m->priority_requested > 1)
    return "REGISTER priority_requested not 0 or 1";
  if (!priority_ok(m->priority))
    return "REGISTER priority out of range";
  if (m->reserved != 0)
    return "REGISTER reserved field not 0";
  if (m->gpu_count > PREEMPT_DAEMON_MAX_GPUS)
    return "REGISTER gpu_count over its maximum";
  if (!terminated(m->program, sizeof m->program))
    return "REGISTER program not NUL-terminated";
  /* Entries past gpu_count are not meaningful and stay unchecked: the daemon never reads them. */
  for (uint32_t i = 0; i < m->gpu_count; i++) {
    if (m->gpus[i].sm_count < 1 || m->gpus[i].sm_count > MAX_SMS)
      return "REGISTER GPU sm_count not in 1..256";
    if (m->gpus[i].reserved != 0)
      return "REGISTER GPU reserved field not 0";
    const char *limits = check_sm_limits(&m->gpus[i]);
    if (limits)
      return limits;
  }
  return NULL;
}

static const char *check_registered(const preempt_msg_registered *m) {
  if (m->client_id == 0)
    return "REGISTERED client_id 0";
  if (!grant_ok(m->priority, m->priority_limit))
    return "REGISTERED priority out of range or above its limit";
  /* The client maps exactly these sizes; any other value means the two sides disagree on the layout. */
  if (m->stub_count != PREEMPT_STUBS_PER_CLIENT || m->page_bytes != sizeof(preempt_client_page) ||
      m->doorbell_bytes != sizeof(preempt_doorbell_page))
    return "REGISTERED page sizes differ from this build's";
  return NULL;
}

static const char *check_set_priority(const preempt_msg_set_priority *m) {
  if (!priority_ok(m->priority))
    return "SET_PRIORITY priority out of range";
  return m->reserved != 0 ? "SET_PRIORITY reserved field not 0" : NULL;
}

static const char *check_priority(const preempt_msg_priority *m) {
  return grant_ok(m->priority, m->priority_limit) ? NULL : "PRIORITY priority out of range or above its limit";
}

static const char *check_set_policy(const preempt_msg_set_policy *m) {
  return terminated(m->policy, sizeof m->policy) ? NULL : "SET_POLICY policy not NUL-terminated";
}

static const char *check_job(const preempt_msg_job *m) {
  if (m->job_id == 0)
    return "JOB job_id 0";
  if (m->flags & ~(PREEMPT_JOB_END | PREEMPT_JOB_PRIORITY))
    return "JOB unknown flags";
  if (m->flags & PREEMPT_JOB_END)
    return m->pid == 0 && m->priority == 0 && m->mem_limit_bytes == 0 && !(m->flags & PREEMPT_JOB_PRIORITY)
               ? NULL
               : "JOB end with a pid, priority or memory limit";
  if (m->pid == 0 || m->pid > (uint32_t)INT32_MAX)
    return "JOB pid not a process id";
  if (m->flags & PREEMPT_JOB_PRIORITY)
    return priority_ok(m->priority) ? NULL : "JOB priority out of range";
  return m->priority != 0 ? "JOB priority given without its flag" : NULL;
}

static const char *check_status(const preempt_msg_status *m) {
  if (m->status < PREEMPT_DAEMON_OK || m->status > PREEMPT_DAEMON_BUFFER_TOO_SMALL)
    return "STATUS status unknown";
  if (m->reserved != 0)
    return "STATUS reserved field not 0";
  return terminated(m->message, sizeof m->message) ? NULL : "STATUS message not NUL-terminated";
}

static const char *check_mem_attach(const preempt_msg_mem_attach *m) {
  if (m->priority_requested > 1)
    return "MEM_ATTACH priority_requested not 0 or 1";
  if (!priority_ok(m->priority))
    return "MEM_ATTACH priority out of range";
  return terminated(m->program, sizeof m->program) ? NULL : "MEM_ATTACH program not NUL-terminated";
}

static const char *check_mem_attached(const preempt_msg_mem_attached *m) {
  if (m->client_id == 0)
    return "MEM_ATTACHED client_id 0";
  if (!grant_ok(m->priority, m->priority_limit))
    return "MEM_ATTACHED priority out of range or above its limit";
  return (m->flags & ~PREEMPT_MEM_DAEMON_WANTS_READINGS) ? "MEM_ATTACHED unknown flags" : NULL;
}

static const char *check_mem_reserve(const preempt_msg_mem_reserve *m) {
  if (m->bytes == 0)
    return "MEM_RESERVE of 0 bytes";
  if (m->device_used_bytes > m->device_total_bytes)
    return "MEM_RESERVE reading with more used than total";
  if (m->flags & ~(PREEMPT_MEM_RESERVE_NOW | PREEMPT_MEM_RESERVE_AFTER_OOM))
    return "MEM_RESERVE unknown flags";
  return m->reserved != 0 ? "MEM_RESERVE reserved field not 0" : NULL;
}

static const char *check_mem_release(const preempt_msg_mem_release *m) {
  return m->bytes == 0 ? "MEM_RELEASE of 0 bytes" : NULL;
}

static const char *check_mem_cancel(const preempt_msg_mem_cancel *m) {
  return m->reserved != 0 ? "MEM_CANCEL reserved field not 0" : NULL;
}

static const char *check_mem_reading(const preempt_msg_mem_reading *m) {
  if (m->device_total_bytes == 0)
    return "MEM_READING total of 0 bytes";
  return m->device_used_bytes > m->device_total_bytes ? "MEM_READING with more used than total" : NULL;
}

static const char *check_mem_query(const preempt_msg_mem_query *m) {
  /* Any UUID: an unknown one is answered, not refused. */
  return m->device_used_bytes > m->device_total_bytes ? "MEM_QUERY reading with more used than total" : NULL;
}

static const char *check_mem_reply(const preempt_msg_mem_reply *m) {
  if (m->result > PREEMPT_MEM_REPLY_OVER_LIMIT)
    return "MEM_REPLY result unknown";
  if (m->readings_from_nvml > 1)
    return "MEM_REPLY readings_from_nvml not 0 or 1";
  if (m->held_bytes > m->reserved_bytes)
    return "MEM_REPLY holds more than the ledger has reserved";
  return terminated(m->policy, sizeof m->policy) ? NULL : "MEM_REPLY policy not NUL-terminated";
}

static const char *check_listing_gpu(const preempt_listing_gpu *g) {
  if (g->sm_count < 1 || g->sm_count > MAX_SMS)
    return "LISTING GPU sm_count not in 1..256";
  return terminated(g->policy, sizeof g->policy) ? NULL : "LISTING GPU policy not NUL-terminated";
}

static const char *check_listing_client(const preempt_listing_client *c) {
  if (c->client_id == 0)
    return "LISTING client client_id 0";
  if (!grant_ok(c->priority, c->priority_limit))
    return "LISTING client priority out of range or above its limit";
  return terminated(c->program, sizeof c->program) ? NULL : "LISTING client program not NUL-terminated";
}

static const char *check_listing_kernel(const preempt_listing_kernel *k, uint32_t gpu_count) {
  if (k->client_id == 0)
    return "LISTING kernel client_id 0";
  if (k->stub >= PREEMPT_STUBS_PER_CLIENT)
    return "LISTING kernel stub past the page's stubs";
  /* gpu indexes this listing's own GPU array, so a reader may use it as an index once decoded. */
  if (k->gpu >= gpu_count)
    return "LISTING kernel gpu not one of the listing's GPUs";
  if (k->state > PREEMPT_STUB_DONE)
    return "LISTING kernel state unknown";
  if (!priority_ok(k->priority))
    return "LISTING kernel priority out of range";
  /* The weight granted, not the one asked for: the daemon reads a stub's 0 as 1 and clamps to the client's limit,
   * so 0 (unlike in a stub) is as wrong here as anything above PREEMPT_WEIGHT_MAX. */
  if (k->weight < 1 || k->weight > PREEMPT_WEIGHT_MAX)
    return "LISTING kernel weight not in 1..64";
  if (k->quota > PREEMPT_DAEMON_MAX_SM_CTAS)
    return "LISTING kernel quota over 64";
  if (!time_ok(k->waited_us) || !time_ok(k->ran_us) || !time_ok(k->predicted_us))
    return "LISTING kernel time negative or not finite";
  return terminated(k->name, sizeof k->name) ? NULL : "LISTING kernel name not NUL-terminated";
}

static preempt_daemon_status decode_listing(const unsigned char *bytes, size_t length, preempt_msg *out,
                                            const char **why) {
  /* The arrays are handed out in place as typed pointers: they need the packet's 8-byte alignment. */
  if ((uintptr_t)bytes % 8 != 0) {
    *why = "LISTING not 8-byte aligned in memory";
    return PREEMPT_DAEMON_MALFORMED;
  }
  if (length < sizeof(preempt_msg_listing)) {
    *why = "LISTING shorter than its fixed part";
    return PREEMPT_DAEMON_MALFORMED;
  }
  preempt_msg_listing *fixed = &out->body.listing;
  memcpy(fixed, bytes, sizeof *fixed);
  if (fixed->sharing != PREEMPT_SHARING_TIMESLICE && fixed->sharing != PREEMPT_SHARING_MPS)
    *why = "LISTING sharing neither time-slicing (1) nor MPS (2)";
  else if (fixed->gpu_count > PREEMPT_DAEMON_MAX_GPUS || fixed->client_count > PREEMPT_LISTING_MAX_CLIENTS ||
           fixed->kernel_count > PREEMPT_LISTING_MAX_KERNELS)
    *why = "LISTING count over its maximum";
  if (*why)
    return PREEMPT_DAEMON_MALFORMED;
  /* Counts are bounded above, so this cannot overflow. */
  size_t gpus_at = sizeof *fixed;
  size_t clients_at = gpus_at + (size_t)fixed->gpu_count * sizeof(preempt_listing_gpu);
  size_t kernels_at = clients_at + (size_t)fixed->client_count * sizeof(preempt_listing_client);
  size_t end = kernels_at + (size_t)fixed->kernel_count * sizeof(preempt_listing_kernel);
  if (end != length) {
    /* Also what a LISTING of another layout with the same version would look like (an entry size changed). */
    *why = "LISTING length does not match its counts";
    return PREEMPT_DAEMON_MALFORMED;
  }
  const preempt_listing_gpu *gpus = (const preempt_listing_gpu *)(const void *)(bytes + gpus_at);
  const preempt_listing_client *clients = (const preempt_listing_client *)(const void *)(bytes + clients_at);
  const preempt_listing_kernel *kernels = (const preempt_listing_kernel *)(const void *)(bytes + kernels_at);
  for (uint32_t i = 0; i < fixed->gpu_count && !*why; i++)
    *why = check_listing_gpu(&gpus[i]);
  for (uint32_t i = 0; i < fixed->client_count && !*why; i++)
    *why = check_listing_client(&clients[i]);
  for (uint32_t i = 0; i < fixed->kernel_count && !*why; i++)
    *why = check_listing_kernel(&kernels[i], fixed->gpu_count);
  if (*why)
    return PREEMPT_DAEMON_MALFORMED;
  /* Empty arrays get NULL rather than a pointer one past the packet, so nobody dereferences it by mistake. */
  out->listing_gpus = fixed->gpu_count ? gpus : NULL;
  out->listing_clients = fixed->client_count ? clients : NULL;
  out->listing_kernels = fixed->kernel_count ? kernels : NULL;
  return PREEMPT_DAEMON_OK;
}

/* Fixed-size bodies are copied with memcpy: the packet may be misaligned, and the copy is what gets checked, so a
 * peer cannot change the bytes between the check and their use (the shared page's lesson applied to buffers too). */
#define DECODE_FIXED(member, check)                                                                                    \
  do {                                                                                                                 \
    if (length != sizeof out->body.member) {                                                                           \
      *why = "length is not the size of its type";                                                                     \
      return PREEMPT_DAEMON_MALFORMED;                                                                                 \
    }                                                                                                                  \
    memcpy(&out->body.member, bytes, sizeof out->body.member);                                                         \
    *why = check(&out->body.member);                                                                                   \
    return *why ? PREEMPT_DAEMON_MALFORMED : PREEMPT_DAEMON_OK;                                                        \
  } while (0)

static preempt_daemon_status decode(const unsigned char *bytes, size_t length, preempt_msg *out, const char **why) {
  preempt_msg_header header;
  if (length < sizeof header) {
    *why = "shorter than a header";
    return PREEMPT_DAEMON_MALFORMED;
  }
  memcpy(&header, bytes, sizeof header);
  if (header.magic != PREEMPT_DAEMON_MAGIC) {
    *why = "wrong magic";
    return PREEMPT_DAEMON_MALFORMED;
  }
  /* Checked before anything whose layout another version may change: a peer of another version is told so rather
   * than that its message is malformed. */
  if (header.version != PREEMPT_DAEMON_PROTOCOL_VERSION) {
    *why = "another protocol version";
    return PREEMPT_DAEMON_BAD_VERSION;
  }
  if (header.length != length || length > PREEMPT_DAEMON_MAX_MESSAGE) {
    *why = "header length is not the packet's, or over the largest message";
    return PREEMPT_DAEMON_MALFORMED;
  }
  out->type = (preempt_msg_type)header.type;
  out->request_id = header.request_id;
  switch (header.type) {
  case PREEMPT_MSG_REGISTER:
    DECODE_FIXED(register_request, check_register);
  case PREEMPT_MSG_SET_PRIORITY:
    DECODE_FIXED(set_priority, check_set_priority);
  case PREEMPT_MSG_LIST:
    /* No body: the header alone, which is all LIST is. The union member holding it is listing's header. */
    if (length != sizeof(preempt_msg_list)) {
      *why = "length is not the size of its type";
      return PREEMPT_DAEMON_MALFORMED;
    }
    memcpy(&out->body.listing.header, bytes, sizeof(preempt_msg_list));
    return PREEMPT_DAEMON_OK;
  case PREEMPT_MSG_SET_POLICY:
    DECODE_FIXED(set_policy, check_set_policy);
  case PREEMPT_MSG_JOB:
    DECODE_FIXED(job, check_job);
  case PREEMPT_MSG_REGISTERED:
    DECODE_FIXED(registered, check_registered);
  case PREEMPT_MSG_PRIORITY:
    DECODE_FIXED(priority, check_priority);
  case PREEMPT_MSG_STATUS:
    DECODE_FIXED(status, check_status);
  case PREEMPT_MSG_LISTING:
    return decode_listing(bytes, length, out, why);
  case PREEMPT_MSG_MEM_ATTACH:
    DECODE_FIXED(mem_attach, check_mem_attach);
  case PREEMPT_MSG_MEM_ATTACHED:
    DECODE_FIXED(mem_attached, check_mem_attached);
  case PREEMPT_MSG_MEM_RESERVE:
    DECODE_FIXED(mem_reserve, check_mem_reserve);
  case PREEMPT_MSG_MEM_RELEASE:
    DECODE_FIXED(mem_release, check_mem_release);
  case PREEMPT_MSG_MEM_CANCEL:
    DECODE_FIXED(mem_cancel, check_mem_cancel);
  case PREEMPT_MSG_MEM_QUERY:
    DECODE_FIXED(mem_query, check_mem_query);
  case PREEMPT_MSG_MEM_READING:
    DECODE_FIXED(mem_reading, check_mem_reading);
  case PREEMPT_MSG_MEM_REPLY:
    DECODE_FIXED(mem_reply, check_mem_reply);
  }
  *why = "unknown message type";
  return PREEMPT_DAEMON_MALFORMED;
}

preempt_daemon_status preempt_msg_decode_why(const void *bytes, size_t length, preempt_msg *out, const char **why) {
  const char *reason = NULL;
  preempt_daemon_status status;
  if (!out) {
    reason = "no output";
    status = PREEMPT_DAEMON_MALFORMED;
  } else {
    memset(out, 0, sizeof *out);
    if (!bytes) {
      reason = "no bytes";
      status = PREEMPT_DAEMON_MALFORMED;
    } else {
      status = decode(bytes, length, out, &reason);
    }
    /* A rejected message leaves nothing half-filled behind for a careless caller to act on. */
    if (status != PREEMPT_DAEMON_OK)
      memset(out, 0, sizeof *out);
  }
  if (why)
    *why = status == PREEMPT_DAEMON_OK ? NULL : reason ? reason : "malformed";
  return status;
}

preempt_daemon_status preempt_msg_decode(const void *bytes, size_t length, preempt_msg *out) {
  return preempt_msg_decode_why(bytes, length, out, NULL);
}

void preempt_msg_header_init(preempt_msg_header *header, preempt_msg_type type, uint32_t length,
                             uint32_t request_id) {
  header->magic = PREEMPT_DAEMON_MAGIC;
  header->version = PREEMPT_DAEMON_PROTOCOL_VERSION;
  header->type = (uint16_t)type;
  header->length = length;
  header->request_id = request_id;
}

void preempt_copy_name(char *field, size_t field_bytes, const char *text) {
  if (!field || field_bytes == 0)
    return;
  /* A loop, not strnlen (POSIX, and this file is plain C11): it reads no byte of `text` past its NUL. */
  size_t length = 0;
  while (text && length < field_bytes - 1 && text[length])
    length++;
  if (length)
    memcpy(field, text, length);
  /* Zero padding, not just one NUL: the rest of the field goes on the wire or into the page and must not leak. */
  memset(field + length, 0, field_bytes - length);
}

/* ---------------------------------------------------------------- stubs */

const char *preempt_stub_state_name(uint32_t state) {
  static const char *const names[] = {"FREE", "PREP", "READY", "TORUN", "RUNNING", "TOEVICT", "DONE"};
  return state < sizeof names / sizeof names[0] ? names[state] : "?";
}

preempt_daemon_status preempt_stub_validate(const preempt_stub *copy, uint32_t gpu_count, const char **why) {
  const char *bad = NULL;
  if (!copy)
    bad = "stub";
  else if (copy->gpu >= gpu_count)
    bad = "gpu";
  else if (copy->grid[0] < 1 || copy->grid[1] < 1 || copy->grid[2] < 1)
    bad = "grid";
  else if (copy->block[0] < 1 || copy->block[1] < 1 || copy->block[2] < 1)
    bad = "block";
  /* 64-bit product: three 32-bit dimensions could wrap a 32-bit one back under the limit. */
  else if ((uint64_t)copy->block[0] * copy->block[1] * copy->block[2] > 1024)
    bad = "block threads";
  else if (copy->persistent_ctas < 1)
    bad = "persistent_ctas";
  else if (copy->ctas_per_sm < 1)
    bad = "ctas_per_sm";
  else if (!terminated(copy->name, sizeof copy->name))
    bad = "name";
  else if (copy->weight > PREEMPT_WEIGHT_MAX)
    bad = "weight";
  else if (copy->registers_per_thread > PREEMPT_DAEMON_MAX_REGISTERS_PER_THREAD)
    bad = "registers_per_thread";
  /* 64-bit sum: the dynamic size is 64-bit and a huge one must not wrap under the limit. */
  else if ((uint64_t)copy->static_shared_bytes + copy->shared_bytes > PREEMPT_DAEMON_MAX_SHARED_BYTES ||
           copy->shared_bytes > PREEMPT_DAEMON_MAX_SHARED_BYTES)
    bad = "shared memory";
  /* A known footprint feeds the co-execution rates (tasks per µs): a launch of no tasks has none to report. */
  else if (copy->registers_per_thread != 0 && copy->task_count < 1)
    bad = "task_count";
  if (why)
    *why = bad;
  return bad ? PREEMPT_DAEMON_MALFORMED : PREEMPT_DAEMON_OK;
}

int preempt_stub_move_allowed(uint32_t from, uint32_t to, int by_daemon) {
  /* The header's table, one bit per destination state: allowed[by_daemon][from] has bit `to` set. */
#define BIT(state) (1u << PREEMPT_STUB_##state)
  static const unsigned allowed[2][PREEMPT_STUB_DONE + 1] = {
      [0] =
          {
              [PREEMPT_STUB_FREE] = BIT(PREP),
              [PREEMPT_STUB_PREP] = BIT(READY) | BIT(RUNNING),
              [PREEMPT_STUB_TORUN] = BIT(RUNNING),
              [PREEMPT_STUB_RUNNING] = BIT(DONE),
              [PREEMPT_STUB_TOEVICT] = BIT(READY) | BIT(RUNNING) | BIT(DONE),
          },
      [1] =
          {
              [PREEMPT_STUB_READY] = BIT(TORUN),
              [PREEMPT_STUB_RUNNING] = BIT(TOEVICT) | BIT(TORUN),
              [PREEMPT_STUB_DONE] = BIT(FREE),
          },
  };
#undef BIT
  if (from > PREEMPT_STUB_DONE || to > PREEMPT_STUB_DONE)
    return 0;
  return (allowed[by_daemon ? 1 : 0][from] >> to) & 1u;
}

uint64_t preempt_kernel_key(const char *name) {
  /* FNV-1a 64: offset basis and prime from the FNV reference; byte-wise, so it is the same on every host. */
  uint64_t hash = UINT64_C(0xcbf29ce484222325);
  if (name)
    for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
      hash ^= *p;
      hash *= UINT64_C(0x100000001b3);
    }
  return hash;
}

int32_t preempt_clamp_priority(int32_t priority, int32_t limit) {
  if (priority > limit)
    priority = limit;
  if (priority < PREEMPT_PRIORITY_MIN)
    priority = PREEMPT_PRIORITY_MIN;
  return priority;
}

void preempt_grant_priority(uid_t uid, int nice, int requested, int32_t request, int32_t *granted, int32_t *limit) {
  int32_t fallback = -nice; /* nice -20..19 -> 20..-19: always inside [MIN, MAX] */
  *limit = uid == 0 ? PREEMPT_PRIORITY_MAX : fallback;
  *granted = preempt_clamp_priority(requested ? request : fallback, *limit);
}
