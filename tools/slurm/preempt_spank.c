/* preempt_spank.c: the Slurm SPANK plugin: --gpu-priority, --gpu-mem and --gpu-preload for srun/sbatch/salloc, checked
 * against plugstack.conf's limits and told to preemptd as the job step's grant (JOB). Issue 43; EffiSha §6.4. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <slurm/slurm.h>
#include <slurm/spank.h>

#include "daemon_socket.h"
#include "preempt/byte_count.h"
#include "preempt/daemon_protocol.h"
#include "preempt/job_limits.h"

/* slurmstepd loads it by this name; version: the SPANK interface's. */
SPANK_PLUGIN(preempt, 1);

/* How long slurmstepd waits for preemptd's answer: a hung daemon delays a step by this, never forever. */
#define ANSWER_TIMEOUT_NS 2000000000ull

/* The options as this process saw them (srun, or slurmstepd, which gets them from srun). */
static bool asked_priority, asked_mem, asked_preload;
static int32_t priority_asked;
static uint64_t mem_asked;
static preempt_job_limits limits;
static bool granted;          /* slurmstepd told preemptd: it says the end too */
static uint32_t job_id, step_id;
/* Why the step may not run, written by slurmstepd and said to the user by each task (the job's own stderr). */
static char refusal[1024];

static int option_priority(int value, const char *argument, int remote) {
  (void)value;
  (void)remote;
  char *end = NULL;
  errno = 0;
  long parsed = argument ? strtol(argument, &end, 10) : 0;
  if (!argument || errno || end == argument || *end || parsed < PREEMPT_PRIORITY_MIN || parsed > PREEMPT_PRIORITY_MAX) {
    slurm_error("preempt: --gpu-priority takes an integer from %d to %d, got '%s'", PREEMPT_PRIORITY_MIN,
                PREEMPT_PRIORITY_MAX, argument ? argument : "");
    return ESPANK_BAD_ARG;
  }
  asked_priority = true;
  priority_asked = (int32_t)parsed;
  return ESPANK_SUCCESS;
}

static int option_mem(int value, const char *argument, int remote) {
  (void)value;
  (void)remote;
  if (!argument || preempt_parse_byte_count(argument, &mem_asked) != 0 || mem_asked == 0) {
    slurm_error("preempt: --gpu-mem takes a size in bytes with K, M, G or T (e.g. 16G), got '%s'",
                argument ? argument : "");
    return ESPANK_BAD_ARG;
  }
  asked_mem = true;
  return ESPANK_SUCCESS;
}

static int option_preload(int value, const char *argument, int remote) {
  (void)value;
  (void)argument;
  (void)remote;
  asked_preload = true;
  return ESPANK_SUCCESS;
}

/* Registered in slurm_spank_init, in every context: a spank_options table is not read by sbatch and salloc. */
static struct spank_option options[] = {
    {"gpu-priority", "N", "GPU priority of the job's kernels under preemptd, -20..20 (preempt)", 1, 0,
     option_priority},
    {"gpu-mem", "SIZE", "GPU memory the job's processes may hold together on a node, e.g. 16G (preempt)", 1, 0,
     option_mem},
    {"gpu-preload", NULL, "LD_PRELOAD preempt's memory library, for programs not built with preempt", 0, 0,
     option_preload},
    SPANK_OPTIONS_TABLE_END};

int slurm_spank_init(spank_t sp, int ac, char **av) {
  char why[600];
  spank_context_t context = spank_context();
  /* The contexts that take options: srun (local), sbatch and salloc (allocator), slurmstepd (remote). slurmd and the
   * job script contexts load the plugin too, but have no options to register. */
  bool takes_options = context == S_CTX_LOCAL || context == S_CTX_ALLOCATOR || context == S_CTX_REMOTE;
  for (size_t i = 0; takes_options && options[i].name; i++)
    if (spank_option_register(sp, &options[i]) != ESPANK_SUCCESS) {
      slurm_error("preempt: cannot register --%s", options[i].name);
      return ESPANK_ERROR;
    }
  /* Every context reads the arguments: a mistake in plugstack.conf shows in srun as well as in slurmd's log. */
  if (preempt_job_limits_parse(&limits, ac, av, why, sizeof why) != 0) {
    slurm_error("preempt: %s", why);
    return ESPANK_ERROR;
  }
  return ESPANK_SUCCESS;
}

/* The job's partition and QOS from slurmctld's record: the environment is the user's to change. slurmstepd runs
 * as root and links libslurmfull, which resolves these calls. */
static int job_placement(uint32_t job, char *partition, size_t partition_bytes, char *qos, size_t qos_bytes) {
  job_info_msg_t *info = NULL;
  if (slurm_load_job(&info, job, SHOW_DETAIL) != SLURM_SUCCESS || !info || info->record_count < 1) {
    if (info)
      slurm_free_job_info_msg(info);
    return -1;
  }
  snprintf(partition, partition_bytes, "%s", info->job_array[0].partition ? info->job_array[0].partition : "");
  snprintf(qos, qos_bytes, "%s", info->job_array[0].qos ? info->job_array[0].qos : "");
  slurm_free_job_info_msg(info);
  return 0;
}

/* A JOB about this step: each connection carries one request, so its id is always 1. */
static void job_message(preempt_msg_job *message, uint32_t flags) {
  memset(message, 0, sizeof *message);
  preempt_msg_header_init(&message->header, PREEMPT_MSG_JOB, sizeof *message, 1);
  message->job_id = job_id;
  message->step_id = step_id;
  message->flags = flags;
}

/* JOB to preemptd; 0, or -1 with `why`. absent: nobody listens on the socket. */
static int tell_daemon(const preempt_msg_job *message, bool *absent, char *why, size_t why_bytes) {
  const char *path = limits.socket[0] ? limits.socket : PREEMPT_DAEMON_SOCKET_DEFAULT;
  int fd = -1;
  int link = preempt_daemon_connect(path, &fd, why, why_bytes);
  *absent = link == PREEMPT_LINK_ABSENT;
  if (link != PREEMPT_LINK_OK) {
    if (*absent)
      snprintf(why, why_bytes, "preemptd does not run at %s", path);
    return -1;
  }
  uint64_t deadline = preempt_monotonic_ns() + ANSWER_TIMEOUT_NS;
  int result = -1;
  preempt_reply_buffer reply;
  size_t length = 0;
  preempt_msg decoded;
  const char *field = NULL;
  if (preempt_daemon_send(fd, message, sizeof *message, deadline) != 0) {
    snprintf(why, why_bytes, "sending to preemptd at %s: %s", path, strerror(errno));
  } else if (preempt_daemon_receive(fd, &reply, &length, NULL, NULL, deadline) != 0) {
    snprintf(why, why_bytes, "preemptd at %s did not answer within %llu s", path,
             (unsigned long long)(ANSWER_TIMEOUT_NS / 1000000000ull));
  } else if (preempt_msg_decode_why(reply.bytes, length, &decoded, &field) != PREEMPT_DAEMON_OK ||
             decoded.type != PREEMPT_MSG_STATUS) {
    snprintf(why, why_bytes, "preemptd at %s answered something else than STATUS (%s)", path,
             field ? field : "a reply of another type");
  } else if (decoded.body.status.status != PREEMPT_DAEMON_OK) {
    snprintf(why, why_bytes, "preemptd refused the job: %s", decoded.body.status.message);
  } else {
    result = 0;
  }
  close(fd);
  return result;
}

/* Prepends the memory library to LD_PRELOAD, keeping what the user preloads. */
static int set_preload(spank_t sp) {
  const char *library = limits.preload[0] ? limits.preload : PREEMPT_SPANK_DEFAULT_PRELOAD;
  if (access(library, R_OK) != 0) {
    snprintf(refusal, sizeof refusal, "--gpu-preload: %s: %s (plugstack.conf preload=)", library, strerror(errno));
    return -1;
  }
  char current[4096] = "", value[4096 + PREEMPT_JOB_LIMIT_PATH_BYTES + 2];
  if (spank_getenv(sp, "LD_PRELOAD", current, sizeof current) != ESPANK_SUCCESS)
    current[0] = '\0';
  snprintf(value, sizeof value, "%s%s%s", library, current[0] ? ":" : "", current);
  return spank_setenv(sp, "LD_PRELOAD", value, 1) == ESPANK_SUCCESS ? 0 : -1;
}

/* slurmstepd (root), once per step, after the options: checks them and tells preemptd. */
int slurm_spank_init_post_opt(spank_t sp, int ac, char **av) {
  (void)ac;
  (void)av;
  if (spank_context() != S_CTX_REMOTE)
    return ESPANK_SUCCESS;
  uid_t uid = 0;
  if (spank_get_item(sp, S_JOB_ID, &job_id) != ESPANK_SUCCESS ||
      spank_get_item(sp, S_JOB_STEPID, &step_id) != ESPANK_SUCCESS ||
      spank_get_item(sp, S_JOB_UID, &uid) != ESPANK_SUCCESS) {
    slurm_error("preempt: cannot read the job's id, step and user");
    return ESPANK_ERROR;
  }
  char partition[128] = "", qos[128] = "", why[600];
  bool has_rules = limits.count > 1;
  if (has_rules && job_placement(job_id, partition, sizeof partition, qos, sizeof qos) != 0) {
    snprintf(refusal, sizeof refusal, "job %u: cannot read its partition and QOS from slurmctld: %s", job_id,
             slurm_strerror(slurm_get_errno()));
    return ESPANK_SUCCESS; /* the tasks say it and fail */
  }
  preempt_job_grant_limits grant;
  preempt_job_limits_for(&limits, partition, qos, &grant);
  if (preempt_job_request_check(&grant, asked_priority, priority_asked, asked_mem, mem_asked, why, sizeof why) != 0) {
    snprintf(refusal, sizeof refusal, "%s", why);
    slurm_info("preempt: job %u.%u refused: %s", job_id, step_id, why);
    return ESPANK_SUCCESS;
  }
  preempt_msg_job message;
  job_message(&message, 0);
  message.uid = (uint32_t)uid;
  message.pid = (uint32_t)getpid(); /* slurmstepd: every task and its children descend from it */
  if (asked_priority) {
    message.flags |= PREEMPT_JOB_PRIORITY;
    message.priority = priority_asked;
  }
  /* The job's grant: what it asked, or the most its rule allows when it did not ask. */
  message.mem_limit_bytes = asked_mem ? mem_asked : grant.max_mem_bytes;
  bool absent = false;
  if (tell_daemon(&message, &absent, why, sizeof why) != 0) {
    /* A job that asked for something preempt must enforce does not run without it; one that asked nothing runs
     * as it would without preempt, and the node's log says why its processes are not known as the job's. */
    if (asked_priority || asked_mem || asked_preload)
      snprintf(refusal, sizeof refusal, "cannot grant --gpu-priority/--gpu-mem: %s", why);
    else
      slurm_info("preempt: job %u.%u not told to preemptd: %s", job_id, step_id, why);
    if (!absent && !refusal[0])
      slurm_error("preempt: job %u.%u: %s", job_id, step_id, why);
    return ESPANK_SUCCESS;
  }
  granted = true;
  char text[32];
  if (limits.socket[0])
    spank_setenv(sp, "PREEMPT_DAEMON_SOCKET", limits.socket, 1);
  if (asked_priority) {
    snprintf(text, sizeof text, "%d", (int)priority_asked);
    spank_setenv(sp, "PREEMPT_PRIORITY", text, 1);
  }
  if (asked_preload && set_preload(sp) != 0 && !refusal[0])
    snprintf(refusal, sizeof refusal, "--gpu-preload: cannot set LD_PRELOAD");
  return ESPANK_SUCCESS;
}

/* Each task, as the user, just before it runs the program: its stderr is the job's, where the refusal belongs. */
int slurm_spank_task_init(spank_t sp, int ac, char **av) {
  (void)sp;
  (void)ac;
  (void)av;
  if (!refusal[0])
    return ESPANK_SUCCESS;
  fprintf(stderr, "preempt: %s\n", refusal);
  fflush(stderr);
  /* slurmstepd logs a failed task_init and runs the program anyway (Slurm 22.05): the task ends here instead, exit
   * status 1, before the program could run outside its grant. */
  _exit(1);
}

/* slurmstepd, at the step's end: preemptd forgets it (it would anyway once slurmstepd exits). */
int slurm_spank_exit(spank_t sp, int ac, char **av) {
  (void)sp;
  (void)ac;
  (void)av;
  if (spank_context() != S_CTX_REMOTE || !granted)
    return ESPANK_SUCCESS;
  preempt_msg_job message;
  job_message(&message, PREEMPT_JOB_END);
  bool absent = false;
  char why[600];
  if (tell_daemon(&message, &absent, why, sizeof why) != 0)
    slurm_info("preempt: end of job %u.%u not told to preemptd: %s", job_id, step_id, why);
  granted = false;
  return ESPANK_SUCCESS;
}
