/* main.c: preemptd's options, start-up (socket, doorbell, daemonizing), its two threads, and a clean stop on SIGTERM.
 * FLEP §3 (one scheduler per node between every program and the GPUs); EffiSha §6.1 (the scheduler as its own process). */
#include "preemptd.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

static const char usage[] =
    "usage: preemptd [--foreground] [--socket PATH] [--policy NAME] [--memory-policy NAME] [--log FILE|-]\n"
    "                [--param NAME=VALUE]... [--no-leases] [--sharing auto|mps|time-slicing]\n"
    "\n"
    "Schedules the preemptible kernels of every process on this node, per GPU (docs/daemon.md).\n"
    "\n"
    "  --foreground   stay attached (containers, systemd Type=simple); otherwise fork, detach and,\n"
    "                 once the daemon serves, print its pid\n"
    "  --socket PATH  the Unix socket (default: $PREEMPT_DAEMON_SOCKET, else " PREEMPT_DAEMON_SOCKET_DEFAULT ")\n"
    "  --policy NAME  fifo, hpf, ffs, piv, dprr or flexsched (default hpf); preemptctl policy switches it later\n"
    "  --memory-policy NAME\n"
    "                 how memory requests that do not fit are served: fifo, mmu, priority-fifo or priority-mmu\n"
    "                 (default fifo; docs/memory.md). GPU sizes come from NVML (libnvidia-ml.so.1), else from\n"
    "                 the clients' own readings\n"
    "  --log FILE|-   decision log, one line per event and decision with a CLOCK_MONOTONIC time; lines other\n"
    "                 users' clients cause are limited to 20/s per user (the dropped ones are counted)\n"
    "  --unregistered-timeout SECONDS\n"
    "                 close a connection that neither registers nor attaches for memory within this (default 10;\n"
    "                 0: never). Connections: 256 in all, 64 per user other than root and the daemon's user\n"
    "  --param NAME=VALUE\n"
    "                 a scheduler tunable for every GPU (repeatable; preempt-sim's names and ranges):\n"
    "                 max_overhead (0..1, FFS; 0.1), ffs_min_epoch (TIME; 100us), hpf_spatial (0|1; 1),\n"
    "                 dprr_age_step (TIME; 1ms), dprr_age_cap (0..1000; 20), dprr_slice_unit (TIME; 500us),\n"
    "                 flexsched_period (TIME; 2ms), flexsched_slowdown ([0,1); 0 = throughput),\n"
    "                 flexsched_fixed (-1..63; -1 = search).\n"
    "                 TIME is microseconds, or NNms\n"
    "  --sharing auto|mps|time-slicing\n"
    "                 how processes share the GPUs (default auto: MPS when its control socket exists in\n"
    "                 $CUDA_MPS_PIPE_DIRECTORY, else /tmp/nvidia-mps; looked at again each second). Under\n"
    "                 time-slicing kernels of two processes never run at once: one process holds a GPU at a\n"
    "                 time, and HPF evicts every SM of the others when an urgent kernel arrives (docs/daemon.md)\n"
    "  --no-leases    grant no leases: every launch waits for the policy's decision, even on a GPU where no\n"
    "                 other process has work (default: such a process starts its launches at once and the\n"
    "                 daemon can still evict them; docs/daemon.md, \"Leases\")\n"
    "  --metrics [ADDR:]PORT\n"
    "                 serve Prometheus metrics at http://ADDR:PORT/metrics (ADDR: an IPv4 address, default\n"
    "                 127.0.0.1; PORT 0: any free port, said at start): per client and GPU the time run and\n"
    "                 waited, launches, evictions and their latency, memory held and waited for, with pid, uid,\n"
    "                 program and Slurm job; each GPU's policy, the sharing mode (docs/daemon.md, \"Metrics\")\n"
    "  --help         this text\n";

typedef struct options {
  bool foreground;
  bool no_leases;
  const char *sharing;
  const char *metrics;
  const char *socket;
  const char *policy;
  const char *log;
  const char *memory_policy;
  const char *unregistered_timeout;
  preempt_sched_params params;
} options;

/* Exit status 2 for anything wrong on the command line, as the usual tools do. */
static int bad_usage(const char *format, const char *what) {
  fprintf(stderr, "preemptd: ");
  fprintf(stderr, format, what);
  fprintf(stderr, "\ntry 'preemptd --help'\n");
  return 2;
}

/* --param NAME=VALUE: 0, or 2 with the library's message (the names and ranges preempt-sim takes). */
static int set_param(preempt_sched_params *params, const char *text) {
  const char *equals = strchr(text, '=');
  char name[64];
  if (!equals || equals == text)
    return bad_usage("--param needs NAME=VALUE, got '%s'", text);
  /* A name longer than any tunable's is kept whole enough to be refused as unknown. */
  size_t length = (size_t)(equals - text) < sizeof name ? (size_t)(equals - text) : sizeof name - 1;
  memcpy(name, text, length);
  name[length] = '\0';
  const char *why = NULL;
  preempt_sched_status status = preempt_sched_params_set(params, name, equals + 1, &why);
  if (status == PREEMPT_SCHED_OK)
    return 0;
  char message[256];
  snprintf(message, sizeof message, "--param %s: %s \"%s\"", text, why ? why : "refused",
           status == PREEMPT_SCHED_UNKNOWN_PARAMETER ? name : equals + 1);
  return bad_usage("%s", message);
}

/* 0: parsed; 1: --help printed; 2: bad usage (reported). */
static int parse_options(int argc, char **argv, options *out) {
  memset(out, 0, sizeof *out);
  out->policy = "hpf";
  preempt_sched_params_default(&out->params);
  for (int i = 1; i < argc; i++) {
    const char *arg = argv[i];
    if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
      fputs(usage, stdout);
      return 1;
    }
    if (strcmp(arg, "--foreground") == 0) {
      out->foreground = true;
      continue;
    }
    if (strcmp(arg, "--no-leases") == 0) {
      out->no_leases = true;
      continue;
    }
    static const char *const valued[] = {"--socket", "--policy", "--log", "--param", "--memory-policy",
                                         "--unregistered-timeout", "--sharing", "--metrics"};
    const char *param = NULL;
    const char **targets[] = {&out->socket,        &out->policy,  &out->log, &param, &out->memory_policy,
                              &out->unregistered_timeout, &out->sharing, &out->metrics};
    bool matched = false;
    for (int v = 0; v < (int)(sizeof valued / sizeof valued[0]) && !matched; v++) {
      size_t n = strlen(valued[v]);
      if (strncmp(arg, valued[v], n) != 0 || (arg[n] != '\0' && arg[n] != '='))
        continue;
      matched = true;
      const char *value = arg[n] == '=' ? arg + n + 1 : (i + 1 < argc ? argv[++i] : NULL);
      if (!value || value[0] == '\0')
        return bad_usage("%s needs a value", valued[v]);
      *targets[v] = value;
    }
    if (param && set_param(&out->params, param) != 0)
      return 2;
    if (!matched)
      return bad_usage(arg[0] == '-' ? "unknown option '%s'" : "unexpected argument '%s'", arg);
  }
  return 0;
}

/* The socket path, absolute: a daemon chdirs to / and must still unlink it on exit. */
static preempt_daemon_status socket_path(const char *given, char *out, size_t out_bytes) {
  const char *env = getenv("PREEMPT_DAEMON_SOCKET");
  const char *path = given ? given : (env && env[0] ? env : PREEMPT_DAEMON_SOCKET_DEFAULT);
  int written;
  if (path[0] == '/') {
    written = snprintf(out, out_bytes, "%s", path);
  } else {
    char cwd[4096];
    if (!getcwd(cwd, sizeof cwd))
      return PREEMPT_DAEMON_SYSTEM;
    written = snprintf(out, out_bytes, "%s/%s", cwd, path);
  }
  return written > 0 && (size_t)written < out_bytes ? PREEMPT_DAEMON_OK : PREEMPT_DAEMON_MALFORMED;
}

/* SIGTERM and SIGINT arrive through a signalfd the socket thread polls: no handler, no global flag. */
static preempt_daemon_status signals_setup(int *out_fd) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  /* Blocked before any thread exists, so every thread inherits the mask and only the signalfd sees them. */
  if (pthread_sigmask(SIG_BLOCK, &set, NULL) != 0)
    return PREEMPT_DAEMON_SYSTEM;
  int fd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
  if (fd < 0)
    return PREEMPT_DAEMON_SYSTEM;
  /* A client that dies mid-reply must not kill the daemon (sends also pass MSG_NOSIGNAL). */
  signal(SIGPIPE, SIG_IGN);
  *out_fd = fd;
  return PREEMPT_DAEMON_OK;
}

/* fork, setsid, chdir /, stdin and stdout to /dev/null. The parent waits on a pipe until the daemon says it
 * is ready (logged its start, scheduler running: `detach_done`), then prints the daemon's pid and exits 0; if
 * the daemon dies first the parent exits 1. So a script that runs `preemptd` finds a daemon that serves and
 * a log that already has its start line. stderr stays open until then so set-up errors still reach the user. */
static preempt_daemon_status daemonize(int *ready_fd) {
  int ready_pipe[2];
  if (pipe2(ready_pipe, O_CLOEXEC) != 0)
    return PREEMPT_DAEMON_SYSTEM;
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) {
    close(ready_pipe[0]);
    close(ready_pipe[1]);
    return PREEMPT_DAEMON_SYSTEM;
  }
  if (pid > 0) {
    close(ready_pipe[1]);
    char ready = 0;
    ssize_t got;
    do
      got = read(ready_pipe[0], &ready, 1);
    while (got < 0 && errno == EINTR);
    if (got != 1) {
      fprintf(stderr, "preemptd: the daemon (pid %d) exited before it was ready\n", (int)pid);
      _exit(1);
    }
    printf("%d\n", (int)pid);
    fflush(stdout);
    _exit(0);
  }
  close(ready_pipe[0]);
  *ready_fd = ready_pipe[1];
  if (setsid() < 0 || chdir("/") != 0)
    return PREEMPT_DAEMON_SYSTEM;
  int null = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null < 0)
    return PREEMPT_DAEMON_SYSTEM;
  for (int fd = 0; fd <= 1; fd++)
    if (dup2(null, fd) < 0)
      return PREEMPT_DAEMON_SYSTEM;
  close(null);
  return PREEMPT_DAEMON_OK;
}

/* The detached daemon is ready: stderr goes to /dev/null and the waiting parent is released. */
static void detach_done(int *ready_fd) {
  if (*ready_fd < 0)
    return;
  int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
  if (null >= 0) {
    fflush(stderr);
    dup2(null, STDERR_FILENO);
    close(null);
  }
  char ready = 1;
  ssize_t put;
  do
    put = write(*ready_fd, &ready, 1);
  while (put < 0 && errno == EINTR);
  close(*ready_fd);
  *ready_fd = -1;
}

static void shutdown_context(preemptd_context *ctx) {
  for (uint32_t i = 0; i < PREEMPTD_MAX_CONNECTIONS; i++) {
    preemptd_client *client = &ctx->clients[i];
    if (client->fd < 0)
      continue;
    preemptd_page_release(client->page); /* clients keep their mappings; they see the socket close */
    close(client->fd);
    client->fd = -1;
  }
  preemptd_gpus_free(ctx);
  preemptd_mem_free(ctx);
  preemptd_jobs_free(ctx);
  preemptd_log(ctx, "stop");
  if (ctx->log && ctx->log != stdout)
    fclose(ctx->log);
}

int main(int argc, char **argv) {
  options opts;
  int parsed = parse_options(argc, argv, &opts);
  if (parsed != 0)
    return parsed == 1 ? 0 : 2;
  preemptd_context *ctx = calloc(1, sizeof *ctx);
  if (!ctx) {
    fprintf(stderr, "preemptd: out of memory\n");
    return 1;
  }
  ctx->listen_fd = ctx->signal_fd = ctx->doorbell_fd = -1;
  for (uint32_t i = 0; i < PREEMPTD_MAX_CONNECTIONS; i++)
    ctx->clients[i].fd = -1;
  for (uint32_t i = 0; i < PREEMPTD_MAX_REFUSING; i++)
    ctx->refusing[i].fd = -1;
  preemptd_jobs_init(ctx);
  ctx->params = opts.params;
  ctx->leases = !opts.no_leases;
  if (opts.sharing && preemptd_sharing_parse(opts.sharing, &ctx->sharing) != 0)
    return bad_usage("--sharing takes auto, mps or time-slicing, got '%s'", opts.sharing);
  ctx->unregistered_timeout_us = PREEMPTD_UNREGISTERED_TIMEOUT_US;
  if (opts.unregistered_timeout) {
    char *end = NULL;
    double seconds = strtod(opts.unregistered_timeout, &end);
    if (end == opts.unregistered_timeout || *end != '\0' || !(seconds >= 0 && seconds <= 86400))
      return bad_usage("--unregistered-timeout takes seconds from 0 to 86400, got '%s'", opts.unregistered_timeout);
    ctx->unregistered_timeout_us = seconds * 1e6;
  }
  if (preempt_sched_policy_by_name(opts.policy, &ctx->default_policy) != PREEMPT_SCHED_OK)
    return bad_usage("unknown policy '%s' (fifo, hpf, ffs, piv, dprr, flexsched)", opts.policy);
  ctx->mem_policy = PREEMPT_MEM_POLICY_FIFO;
  if (opts.memory_policy && preempt_mem_policy_parse(opts.memory_policy, &ctx->mem_policy) != 0)
    return bad_usage("unknown memory policy '%s' (fifo, mmu, priority-fifo, priority-mmu)", opts.memory_policy);
  char metrics_address[64], metrics_why[256];
  uint16_t metrics_port = 0;
  if (opts.metrics && preemptd_metrics_parse_address(opts.metrics, metrics_address, sizeof metrics_address,
                                                     &metrics_port, metrics_why, sizeof metrics_why) !=
                          PREEMPT_DAEMON_OK)
    return bad_usage("%s", metrics_why);
  if (socket_path(opts.socket, ctx->socket_path, sizeof ctx->socket_path) != PREEMPT_DAEMON_OK)
    return bad_usage("socket path '%s' is too long for a Unix socket", opts.socket ? opts.socket : "(default)");
  if (opts.log) {
    ctx->log = strcmp(opts.log, "-") == 0 ? stdout : fopen(opts.log, "ae");
    if (!ctx->log) {
      fprintf(stderr, "preemptd: cannot open log %s: %s\n", opts.log, strerror(errno));
      return 1;
    }
  }
  char why[256];
  if (signals_setup(&ctx->signal_fd) != PREEMPT_DAEMON_OK ||
      preemptd_doorbell_create(&ctx->doorbell_fd, &ctx->doorbell) != PREEMPT_DAEMON_OK) {
    fprintf(stderr, "preemptd: cannot set up: %s\n", strerror(errno));
    return 1;
  }
  if (preemptd_listen(ctx->socket_path, &ctx->listen_fd, why, sizeof why) != PREEMPT_DAEMON_OK) {
    fprintf(stderr, "preemptd: %s\n", why);
    return 1;
  }
  int ready_fd = -1;
  if (!opts.foreground && daemonize(&ready_fd) != PREEMPT_DAEMON_OK) {
    fprintf(stderr, "preemptd: cannot detach: %s\n", strerror(errno));
    unlink(ctx->socket_path);
    return 1;
  }
  ctx->euid = geteuid();
  ctx->start_us = preemptd_monotonic_us();
  if (pthread_mutex_init(&ctx->lock, NULL) != 0) {
    fprintf(stderr, "preemptd: cannot create the lock\n");
    unlink(ctx->socket_path);
    return 1;
  }
  /* The tunables under their --param names (times in microseconds), so a line reads back as --param options. */
  preemptd_log(ctx,
               "start pid=%d socket=%s policy=%s max_overhead=%.15g ffs_min_epoch=%.15g hpf_spatial=%d "
               "dprr_age_step=%.15g "
               "dprr_age_cap=%d dprr_slice_unit=%.15g flexsched_period=%.15g flexsched_slowdown=%.15g "
               "flexsched_fixed=%d",
               (int)getpid(), ctx->socket_path, ctx->default_policy->name, ctx->params.max_overhead,
               ctx->params.ffs_min_epoch, ctx->params.hpf_spatial ? 1 : 0, ctx->params.dprr_age_step,
               (int)ctx->params.dprr_age_cap, ctx->params.dprr_slice_unit, ctx->params.flexsched_period,
               ctx->params.flexsched_slowdown, (int)ctx->params.flexsched_fixed);
  /* Decisions differ by mode (docs/daemon.md, "Time-slicing or MPS"): which one, and whether it was detected. */
  static const char *const sharing_names[] = {"auto", "mps", "time-slicing"};
  preemptd_log(ctx, "sharing %s (--sharing %s)", preemptd_time_slicing(ctx, true) ? "time-slicing" : "mps",
               sharing_names[ctx->sharing]);
  /* SM counts from the driver, not from whichever user registers first (issue 41); without a driver, said. */
  if (preemptd_driver_probe(&ctx->driver) == PREEMPT_DAEMON_OK)
    preemptd_log(ctx, "driver: %u GPU(s) in %u ms: clients must report their SM counts", ctx->driver.count,
                 ctx->driver.probe_ms);
  else
    preemptd_log(ctx, "driver=none (%s): SM counts from the clients' reports (root's over other users')",
                 ctx->driver.why);
  for (uint32_t i = 0; i < ctx->driver.count; i++) {
    char uuid[33];
    preemptd_uuid_hex(ctx->driver.gpus[i].uuid, uuid);
    preemptd_log(ctx, "driver: gpu uuid=%s sms=%u", uuid, ctx->driver.gpus[i].sm_count);
  }
  /* Without NVML the daemon still keeps ledgers, sized and corrected by the clients' readings: said, not hidden. */
  if (preemptd_nvml_open(&ctx->nvml) == PREEMPT_DAEMON_OK)
    preemptd_log(ctx, "memory policy=%s nvml=libnvidia-ml.so.1", preempt_mem_policy_name(ctx->mem_policy));
  else
    preemptd_log(ctx, "memory policy=%s nvml=none (%s): GPU sizes and outside use from the clients' readings",
                 preempt_mem_policy_name(ctx->mem_policy), ctx->nvml.why);
  /* After daemonizing: the server's thread must be the detached process's. */
  uint16_t bound_port = 0;
  if (opts.metrics &&
      preemptd_metrics_start(ctx, metrics_address, metrics_port, &bound_port, metrics_why, sizeof metrics_why) !=
          PREEMPT_DAEMON_OK) {
    fprintf(stderr, "preemptd: %s\n", metrics_why);
    unlink(ctx->socket_path);
    return 1;
  }
  if (opts.metrics)
    preemptd_log(ctx, "metrics on http://%s:%u/metrics", metrics_address, (unsigned)bound_port);
  pthread_t scheduler;
  if (pthread_create(&scheduler, NULL, preemptd_scheduler_thread, ctx) != 0) {
    fprintf(stderr, "preemptd: cannot start the scheduler thread\n");
    unlink(ctx->socket_path);
    return 1;
  }
  /* Before detach_done, while a detached daemon's stderr is still its starter's: with PORT 0 this line is the only
   * place (with --log) that says which port the kernel chose. */
  if (opts.metrics)
    fprintf(stderr, "preemptd: metrics on http://%s:%u/metrics\n", metrics_address, (unsigned)bound_port);
  /* Tests and scripts wait for this line (a detached daemon's parent waits for `detach_done` instead, and
   * prints the pid): the socket accepts and the scheduler runs. */
  detach_done(&ready_fd);
  fprintf(stderr, "preemptd: listening on %s (policy %s)\n", ctx->socket_path, ctx->default_policy->name);
  preempt_daemon_status status = preemptd_serve(ctx);
  /* Stop accepting first: a client that connects now would be dropped, so let it find no socket (it
   * retries until the next daemon is up). */
  close(ctx->listen_fd);
  ctx->listen_fd = -1;
  unlink(ctx->socket_path);
  if (status != PREEMPT_DAEMON_OK) {
    fprintf(stderr, "preemptd: the socket loop failed: %s\n", strerror(errno));
    pthread_mutex_lock(&ctx->lock);
    ctx->stopping = true;
    pthread_mutex_unlock(&ctx->lock);
    preemptd_ring_doorbell(ctx);
  }
  pthread_join(scheduler, NULL);
  preemptd_metrics_stop(ctx); /* its thread reads the clients shutdown_context closes */
  shutdown_context(ctx);
  free(ctx);
  return status == PREEMPT_DAEMON_OK ? 0 : 1;
}
