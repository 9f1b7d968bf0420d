/* metrics_text.c: a metrics snapshot as Prometheus's text exposition format (version 0.0.4), labels escaped.
 * Issue 43 (per-client, per-job observability of a shared GPU); FLEP §3 (the node's one scheduler sees every launch). */
#include "preempt/metrics.h"
#include "preempt/utf8.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "preempt/job_limits.h"

const double preempt_metrics_bucket_le[PREEMPT_METRICS_BUCKETS] = {1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3,
                                                                   5e-3, 1e-2, 2.5e-2, 5e-2, 0.1,  0.25,   0.5,  1.0};

void preempt_metrics_observe(preempt_metrics_histogram *histogram, double seconds) {
  if (!(seconds >= 0))
    return; /* NaN or negative: a clock that went wrong, not an observation */
  for (int i = 0; i < PREEMPT_METRICS_BUCKETS; i++)
    if (seconds <= preempt_metrics_bucket_le[i]) {
      histogram->bucket[i]++;
      break;
    }
  histogram->count++;
  histogram->sum_seconds += seconds;
}

typedef struct writer {
  char *text;
  size_t length, capacity;
  bool failed;
} writer;

static void put(writer *w, const char *format, ...) __attribute__((format(printf, 2, 3)));
static void put(writer *w, const char *format, ...) {
  if (w->failed)
    return;
  for (;;) {
    va_list args;
    va_start(args, format);
    int n = vsnprintf(w->text + w->length, w->capacity - w->length, format, args);
    va_end(args);
    if (n < 0) {
      w->failed = true;
      return;
    }
    if ((size_t)n < w->capacity - w->length) {
      w->length += (size_t)n;
      return;
    }
    size_t capacity = (w->capacity + (size_t)n + 1) * 2;
    char *grown = realloc(w->text, capacity);
    if (!grown) {
      w->failed = true;
      return;
    }
    w->text = grown;
    w->capacity = capacity;
  }
}

/* A label value as the format wants it: backslash, double quote and newline escaped. A program names itself with any
 * bytes; Prometheus reads UTF-8, so a byte that does not start a well-formed sequence becomes U+FFFD. */
static void put_label_value(writer *w, const char *value, size_t bytes) {
  const unsigned char *p = (const unsigned char *)value, *end = p + strnlen(value, bytes);
  while (p < end) {
    unsigned char c = *p;
    if (c == '\\' || c == '"') {
      put(w, "\\%c", c);
      p++;
    } else if (c == '\n') {
      put(w, "\\n");
      p++;
    } else if (c < 0x80) {
      put(w, "%c", c);
      p++;
    } else {
      size_t need = preempt_utf8_sequence_length(p, (size_t)(end - p));
      if (need) {
        put(w, "%.*s", (int)need, (const char *)p);
        p += need;
      } else {
        put(w, "\xef\xbf\xbd");
        p++;
      }
    }
  }
}

static void put_who(writer *w, const preempt_metrics_who *who) {
  char job[16] = "", step[16] = "";
  if (who->job_id) {
    snprintf(job, sizeof job, "%u", (unsigned)who->job_id);
    preempt_job_step_name(who->step_id, step, sizeof step);
  }
  put(w, "client=\"%u\",pid=\"%u\",uid=\"%u\",program=\"", (unsigned)who->client_id, (unsigned)who->pid,
      (unsigned)who->uid);
  put_label_value(w, who->program, sizeof who->program);
  put(w, "\",slurm_job=\"%s\",slurm_step=\"%s\",gpu=\"", job, step);
  put_label_value(w, who->gpu, sizeof who->gpu);
  put(w, "\"");
}

static void family(writer *w, const char *name, const char *type, const char *help) {
  put(w, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

int preempt_metrics_format(const preempt_metrics_snapshot *s, char **text, size_t *length) {
  writer w = {NULL, 0, 0, false};
  family(&w, "preempt_sharing_mode_info", "gauge", "How processes share the node's GPUs: mps or time-slicing.");
  put(&w, "preempt_sharing_mode_info{mode=\"");
  put_label_value(&w, s->sharing, sizeof s->sharing);
  put(&w, "\"} 1\n");
  family(&w, "preempt_clients", "gauge", "Registered clients (processes scheduled by preemptd).");
  put(&w, "preempt_clients %u\n", (unsigned)s->clients);

  family(&w, "preempt_gpu_policy_info", "gauge", "The scheduling policy of each GPU.");
  for (uint32_t i = 0; i < s->gpu_count; i++) {
    put(&w, "preempt_gpu_policy_info{gpu=\"");
    put_label_value(&w, s->gpus[i].gpu, sizeof s->gpus[i].gpu);
    put(&w, "\",policy=\"");
    put_label_value(&w, s->gpus[i].policy, sizeof s->gpus[i].policy);
    put(&w, "\"} 1\n");
  }
  family(&w, "preempt_gpu_decisions_total", "counter", "Scheduling decisions taken for each GPU.");
  for (uint32_t i = 0; i < s->gpu_count; i++)
    put(&w, "preempt_gpu_decisions_total{gpu=\"%s\"} %llu\n", s->gpus[i].gpu,
        (unsigned long long)s->gpus[i].decisions);
  family(&w, "preempt_gpu_evictions_total", "counter", "Evictions preemptd asked for on each GPU.");
  for (uint32_t i = 0; i < s->gpu_count; i++)
    put(&w, "preempt_gpu_evictions_total{gpu=\"%s\"} %llu\n", s->gpus[i].gpu,
        (unsigned long long)s->gpus[i].evictions);

  static const struct {
    const char *name, *type, *help;
  } per_client[] = {
      {"preempt_client_priority", "gauge", "The priority the client was granted (a Slurm job's, for its processes)."},
      {"preempt_client_launches_total", "counter", "Launches of the client on the GPU that preemptd scheduled."},
      {"preempt_client_gpu_run_seconds_total", "counter", "Time the client's kernels ran on the GPU."},
      {"preempt_client_gpu_wait_seconds_total", "counter",
       "Time the client's kernels waited for the GPU (held at launch, or evicted, until told to run)."},
      {"preempt_client_evictions_total", "counter", "Evictions preemptd asked of the client's kernels on the GPU."},
  };
  for (size_t f = 0; f < sizeof per_client / sizeof per_client[0]; f++) {
    family(&w, per_client[f].name, per_client[f].type, per_client[f].help);
    for (uint32_t i = 0; i < s->client_gpu_count; i++) {
      const preempt_metrics_client_gpu *c = &s->client_gpus[i];
      put(&w, "%s{", per_client[f].name);
      put_who(&w, &c->who);
      if (f == 0)
        put(&w, "} %d\n", (int)c->priority);
      else if (f == 1)
        put(&w, "} %llu\n", (unsigned long long)c->launches);
      else if (f == 2)
        put(&w, "} %.6f\n", c->run_seconds);
      else if (f == 3)
        put(&w, "} %.6f\n", c->wait_seconds);
      else
        put(&w, "} %llu\n", (unsigned long long)c->evictions);
    }
  }
  const char *latency = "preempt_client_eviction_latency_seconds";
  family(&w, latency, "histogram",
         "From preemptd's eviction command to the client's acknowledgement (its CTAs gone from the SMs asked).");
  for (uint32_t i = 0; i < s->client_gpu_count; i++) {
    const preempt_metrics_client_gpu *c = &s->client_gpus[i];
    uint64_t cumulative = 0;
    for (int b = 0; b < PREEMPT_METRICS_BUCKETS; b++) {
      cumulative += c->eviction_latency.bucket[b];
      put(&w, "%s_bucket{", latency);
      put_who(&w, &c->who);
      put(&w, ",le=\"%g\"} %llu\n", preempt_metrics_bucket_le[b], (unsigned long long)cumulative);
    }
    put(&w, "%s_bucket{", latency);
    put_who(&w, &c->who);
    put(&w, ",le=\"+Inf\"} %llu\n", (unsigned long long)c->eviction_latency.count);
    put(&w, "%s_sum{", latency);
    put_who(&w, &c->who);
    put(&w, "} %.6f\n", c->eviction_latency.sum_seconds);
    put(&w, "%s_count{", latency);
    put_who(&w, &c->who);
    put(&w, "} %llu\n", (unsigned long long)c->eviction_latency.count);
  }

  static const struct {
    const char *name, *help;
  } memory[] = {
      {"preempt_client_memory_reserved_bytes",
       "GPU memory the client holds in preemptd's ledger of the GPU (memory admission)."},
      {"preempt_client_memory_waiting_bytes", "GPU memory the client waits for in the ledger's queue (0: none)."},
  };
  for (size_t f = 0; f < sizeof memory / sizeof memory[0]; f++) {
    family(&w, memory[f].name, "gauge", memory[f].help);
    for (uint32_t i = 0; i < s->memory_count; i++) {
      put(&w, "%s{", memory[f].name);
      put_who(&w, &s->memory[i].who);
      put(&w, "} %llu\n",
          (unsigned long long)(f == 0 ? s->memory[i].reserved_bytes : s->memory[i].waiting_bytes));
    }
  }
  if (w.failed) {
    free(w.text);
    return -1;
  }
  *text = w.text;
  *length = w.length;
  return 0;
}
