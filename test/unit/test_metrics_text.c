/* test_metrics_text.c: lib/metrics_text.c alone: label escaping (quote, backslash, newline, bad UTF-8), the
 * histogram's buckets (cumulative, +Inf = count), a job's labels, and every family's HELP and TYPE. Issue 43. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "preempt/metrics.h"

static char *format(const preempt_metrics_snapshot *s) {
  char *text = NULL;
  size_t length = 0;
  CHECK(preempt_metrics_format(s, &text, &length) == 0);
  CHECK(text != NULL && strlen(text) == length);
  return text;
}

static void test_families_and_labels(void) {
  preempt_metrics_client_gpu client;
  memset(&client, 0, sizeof client);
  client.who = (preempt_metrics_who){.client_id = 3, .pid = 1234, .uid = 65534, .job_id = 42, .step_id = 0xfffffffbu};
  /* a quote, a backslash, a newline, a lone continuation byte and a cut-short 3-byte sequence, then é */
  memcpy(client.who.program, "a\"b\\c\nd\x80" "e\xe2\x82" "\xc3\xa9", 14);
  memcpy(client.who.gpu, "000102030405060708090a0b0c0d0e0f", 33);
  client.priority = -3;
  client.launches = 5;
  client.evictions = 2;
  client.run_seconds = 1.5;
  client.wait_seconds = 0.25;
  preempt_metrics_observe(&client.eviction_latency, 20e-6);  /* (10 us, 25 us] */
  preempt_metrics_observe(&client.eviction_latency, 1e-3);   /* exactly a bound: in its bucket */
  preempt_metrics_observe(&client.eviction_latency, 3.0);    /* past the last bound: +Inf only */
  preempt_metrics_observe(&client.eviction_latency, -1.0);   /* a clock gone wrong: not counted */
  CHECK_EQ_U64(client.eviction_latency.count, 3);
  preempt_metrics_client_memory memory;
  memset(&memory, 0, sizeof memory);
  memory.who = client.who;
  memory.reserved_bytes = 1 << 20;
  memory.waiting_bytes = 4096;
  preempt_metrics_snapshot s;
  memset(&s, 0, sizeof s);
  strcpy(s.sharing, "time-slicing");
  s.clients = 1;
  s.gpu_count = 1;
  strcpy(s.gpus[0].gpu, "000102030405060708090a0b0c0d0e0f");
  strcpy(s.gpus[0].policy, "hpf");
  s.gpus[0].decisions = 9;
  s.client_gpu_count = 1;
  s.client_gpus = &client;
  s.memory_count = 1;
  s.memory = &memory;
  char *text = format(&s);
  const char *labels = "{client=\"3\",pid=\"1234\",uid=\"65534\",program=\"a\\\"b\\\\c\\nd\xef\xbf\xbd" "e\xef\xbf\xbd"
                       "\xef\xbf\xbd\xc3\xa9\",slurm_job=\"42\",slurm_step=\"batch\",gpu=\"000102030405060708090a0b0c0d0e0f\"";
  char line[512];
  static const char *const expected[] = {
      "preempt_sharing_mode_info{mode=\"time-slicing\"} 1\n",
      "preempt_clients 1\n",
      "preempt_gpu_policy_info{gpu=\"000102030405060708090a0b0c0d0e0f\",policy=\"hpf\"} 1\n",
      "preempt_gpu_decisions_total{gpu=\"000102030405060708090a0b0c0d0e0f\"} 9\n",
  };
  for (size_t i = 0; i < sizeof expected / sizeof expected[0]; i++)
    CHECK(strstr(text, expected[i]) != NULL);
  static const struct {
    const char *name, *tail;
  } series[] = {
      {"preempt_client_priority", "} -3\n"},
      {"preempt_client_launches_total", "} 5\n"},
      {"preempt_client_evictions_total", "} 2\n"},
      {"preempt_client_gpu_run_seconds_total", "} 1.500000\n"},
      {"preempt_client_gpu_wait_seconds_total", "} 0.250000\n"},
      {"preempt_client_eviction_latency_seconds_bucket", ",le=\"1e-05\"} 0\n"},
      {"preempt_client_eviction_latency_seconds_bucket", ",le=\"2.5e-05\"} 1\n"},
      {"preempt_client_eviction_latency_seconds_bucket", ",le=\"0.0005\"} 1\n"},
      {"preempt_client_eviction_latency_seconds_bucket", ",le=\"0.001\"} 2\n"},
      {"preempt_client_eviction_latency_seconds_bucket", ",le=\"1\"} 2\n"},
      {"preempt_client_eviction_latency_seconds_bucket", ",le=\"+Inf\"} 3\n"},
      {"preempt_client_eviction_latency_seconds_count", "} 3\n"},
      {"preempt_client_eviction_latency_seconds_sum", "} 3.001020\n"},
      {"preempt_client_memory_reserved_bytes", "} 1048576\n"},
      {"preempt_client_memory_waiting_bytes", "} 4096\n"},
  };
  for (size_t i = 0; i < sizeof series / sizeof series[0]; i++) {
    snprintf(line, sizeof line, "\n%s%s%s", series[i].name, labels, series[i].tail);
    if (!strstr(text, line)) {
      fprintf(stderr, "missing: %s", line + 1);
      CHECK(!"every series with its labels escaped");
    }
  }
  /* Each family once, with HELP and TYPE before its samples. */
  static const char *const families[][2] = {
      {"preempt_sharing_mode_info", "gauge"},        {"preempt_clients", "gauge"},
      {"preempt_gpu_policy_info", "gauge"},          {"preempt_gpu_decisions_total", "counter"},
      {"preempt_gpu_evictions_total", "counter"},    {"preempt_client_priority", "gauge"},
      {"preempt_client_launches_total", "counter"},  {"preempt_client_gpu_run_seconds_total", "counter"},
      {"preempt_client_gpu_wait_seconds_total", "counter"}, {"preempt_client_evictions_total", "counter"},
      {"preempt_client_eviction_latency_seconds", "histogram"}, {"preempt_client_memory_reserved_bytes", "gauge"},
      {"preempt_client_memory_waiting_bytes", "gauge"}};
  for (size_t i = 0; i < sizeof families / sizeof families[0]; i++) {
    snprintf(line, sizeof line, "# TYPE %s %s\n", families[i][0], families[i][1]);
    const char *type = strstr(text, line);
    CHECK(type != NULL && strstr(type + 1, line) == NULL);
    snprintf(line, sizeof line, "# HELP %s ", families[i][0]);
    const char *help = strstr(text, line);
    CHECK(help != NULL && type != NULL && help < type);
  }
  free(text);
}

/* A client without a job: both labels empty, not "0". */
static void test_no_job(void) {
  preempt_metrics_client_gpu client;
  memset(&client, 0, sizeof client);
  client.who = (preempt_metrics_who){.client_id = 1, .pid = 7, .uid = 0};
  strcpy(client.who.program, "app");
  strcpy(client.who.gpu, "ff");
  preempt_metrics_snapshot s;
  memset(&s, 0, sizeof s);
  strcpy(s.sharing, "mps");
  s.client_gpu_count = 1;
  s.client_gpus = &client;
  char *text = format(&s);
  CHECK(strstr(text, "preempt_client_launches_total{client=\"1\",pid=\"7\",uid=\"0\",program=\"app\",slurm_job=\"\",slurm_step=\"\","
                     "gpu=\"ff\"} 0\n") != NULL);
  free(text);
}

int main(void) {
  test_families_and_labels();
  test_no_job();
  CHECK_DONE("test_metrics_text");
}
