// preempt_bench.cu: eviction latency, high-priority turnaround and spatial vs temporal eviction on one GPU.
// FLEP §6.3-6.4, EffiSha §8: built twice (bench/build_suite.sh): without the plugin it measures the baselines,
// with it (PREEMPT_API defined) it evicts through preempt.h. Prints one JSON object.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <vector>

#ifdef PREEMPT_API
#include "preempt.h"
#endif

#include "bench_kernels.cuh"

int main() {
  const unsigned long_blocks = 132 * 8 * 400;  // 400 tasks per persistent CTA: a launch of 20-40 ms
  const unsigned latency_scale = 8;            // the eviction-latency launch: 8x longer
  const unsigned iterations = 20000;           // sets the task length, measured below
  const int short_blocks = 32, short_threads = 256, short_n = short_blocks * short_threads;
  const int trials = 25;

  unsigned *out = zeroed_buffer<unsigned>(latency_scale * long_blocks);
  float *data = zeroed_buffer<float>(short_n);
  const PairStreams streams = pair_streams();
  cudaStream_t long_stream = streams.long_stream, short_stream = streams.plain, urgent_stream = streams.urgent;
  cudaEvent_t long_done, short_done;
  CHECK_CUDA(cudaEventCreate(&long_done));
  CHECK_CUDA(cudaEventCreate(&short_done));
  int long_launches = 0;

  // Warm up both kernels (module load, occupancy, task-length sampling).
  long_kernel<<<long_blocks, 256, 0, long_stream>>>(out, iterations);
  long_launches++;
  short_kernel<<<short_blocks, short_threads, 0, short_stream>>>(data, short_n);
  CHECK_CUDA(cudaDeviceSynchronize());

  // Standalone times.
  std::vector<double> short_alone, long_alone;
  for (int t = 0; t < trials; t++) {
    auto start = Clock::now();
    short_kernel<<<short_blocks, short_threads, 0, short_stream>>>(data, short_n);
    CHECK_CUDA(cudaStreamSynchronize(short_stream));
    short_alone.push_back(since_us(start));
  }
  for (int t = 0; t < 3; t++) {
    auto start = Clock::now();
    long_kernel<<<long_blocks, 256, 0, long_stream>>>(out, iterations);
    long_launches++;
    CHECK_CUDA(cudaStreamSynchronize(long_stream));
    long_alone.push_back(since_us(start));
  }
  Stats long_stats = stats(long_alone);
  int ctas_per_sm = 0, sm_count = 0;
  CHECK_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&ctas_per_sm, long_kernel, 256, 0));
  CHECK_CUDA(cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, 0));
  // Each resident CTA runs tasks one after another: task length = time / tasks per CTA slot.
  double task_us = long_stats.median / ((double)long_blocks / (ctas_per_sm * sm_count));

  std::mt19937 random(12345);
  std::uniform_int_distribution<int> delay_us(1000, 10000); // the short kernel arrives mid-way
  // Asked once, before any timing: inside the timed region this query was the first CUDA call after the sleep, a
  // slow one (docs/preemption.md, "Stream priorities"), which the spatial rows paid and the temporal row did not.
  int short_per_sm = 0;
  CHECK_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&short_per_sm, short_kernel, short_threads, 0));
  // PREEMPT_BENCH_ONLY=latency: only the eviction-latency series (gpu_check.sh runs them once per forced form).
  const char *only = std::getenv("PREEMPT_BENCH_ONLY");
  const bool latency_only = only && std::string(only) == "latency";
  if (only && !latency_only) {
    std::fprintf(stderr, "preempt_bench: PREEMPT_BENCH_ONLY='%s': only 'latency' is known\n", only);
    return 2;
  }

  // A short kernel arriving while the long one runs: launch, wait a random
  // moment, then measure the short kernel's turnaround under `policy`.
  auto turnaround = [&](cudaStream_t stream, int policy) {
    std::vector<double> samples, pair_totals;
    for (int t = 0; t < trials; t++) {
      auto pair_start = Clock::now();
      long_kernel<<<long_blocks, 256, 0, long_stream>>>(out, iterations);
      long_launches++;
      CHECK_CUDA(cudaEventRecord(long_done, long_stream));
      std::this_thread::sleep_for(std::chrono::microseconds(delay_us(random)));
      auto start = Clock::now();
#ifdef PREEMPT_API
      preempt_launch_id launch = preempt_last_launch();
      if (policy == 1) {
        preempt_evict(launch, nullptr);
      } else if (policy == 2 || policy == 3) {
        // 2: just enough SMs for the short kernel, its blocks at its occupancy (FLEP §4.3); 3: one SM per block,
        // as the runtime's own eviction for a higher-priority stream does (runtime-host/priority.c).
        int needed = policy == 3 ? std::min(short_blocks, sm_count)
                                 : (short_blocks + short_per_sm - 1) / std::max(short_per_sm, 1);
        preempt_sm_mask mask = {};
        for (int sm = 0; sm < needed; sm++)
          mask.words[sm / 32] |= 1u << (sm % 32);
        preempt_evict(launch, &mask);
      }
#else
      (void)policy;
#endif
      short_kernel<<<short_blocks, short_threads, 0, stream>>>(data, short_n);
      CHECK_CUDA(cudaEventRecord(short_done, stream));
      CHECK_CUDA(cudaEventSynchronize(short_done));
      samples.push_back(since_us(start));
#ifdef PREEMPT_API
      if (policy != 0)
        preempt_resume(launch);
#endif
      CHECK_CUDA(cudaEventSynchronize(long_done));
      pair_totals.push_back(since_us(pair_start));
    }
    return std::make_pair(stats(samples), stats(pair_totals));
  };

  std::string report = "{";
  char text[512];
  std::snprintf(text, sizeof text, "\"long_kernel_us\": %.1f, \"task_us\": %.1f, \"ctas_per_sm\": %d, \"sms\": %d, ",
                long_stats.median, task_us, ctas_per_sm, sm_count);
  report += text;
  report += json("short_alone", stats(short_alone));
  if (latency_only) {
    report += ", \"latency_only\": true";
  } else {
    auto same = turnaround(short_stream, 0);
    report += ", " + json("short_same_priority", same.first) + ", " + json("pair_same_priority", same.second);
    auto prioritized = turnaround(urgent_stream, 0);
    report += ", " + json("short_stream_priority", prioritized.first) + ", " +
              json("pair_stream_priority", prioritized.second);
  }
#ifdef PREEMPT_API
  int short_wrong = 0;
  if (!latency_only) {
    auto temporal = turnaround(short_stream, 1);
    report += ", " + json("short_temporal_eviction", temporal.first) + ", " + json("pair_temporal", temporal.second);
    auto spatial = turnaround(short_stream, 2);
    report += ", " + json("short_spatial_eviction", spatial.first) + ", " + json("pair_spatial", spatial.second);
    auto spread = turnaround(short_stream, 3);
    report += ", " + json("short_spatial_spread", spread.first) + ", " + json("pair_spatial_spread", spread.second);
    // The runtime's own eviction for the higher-priority stream, done by the program: against (b), it tells the
    // runtime's automatic path from the stream's priority.
    auto spread_urgent = turnaround(urgent_stream, 3);
    report += ", " + json("short_spatial_spread_urgent_stream", spread_urgent.first);
  }

  // Eviction latency: from the request to every CTA gone (host-observed:
  // the launch reaches EVICTED), at random moments of a long launch, for the
  // long kernel's tasks and for tasks 10x shorter.
  // With PREEMPT_TIME_EVICTIONS=1 (gpu_check.sh's second run) each eviction is also read on the GPU's clock, from
  // the runtime's event after the request's words to the end of the launch's last grid: the device's part of the
  // host-observed latency.
  const char *time_evictions = std::getenv("PREEMPT_TIME_EVICTIONS");
  const bool gpu_timed = time_evictions && std::string(time_evictions) == "1";
  std::vector<double> gpu_latencies, call_us, query_us; // the last two: preempt_evict's own time, one query's
  auto eviction_latency = [&](unsigned blocks, unsigned task_iterations, unsigned *buffer) {
    std::vector<double> latencies;
    gpu_latencies.clear();
    call_us.clear();
    query_us.clear();
    long_kernel<<<blocks, 256, 0, long_stream>>>(buffer, task_iterations);
    preempt_launch_id launch = preempt_last_launch();
    std::uniform_int_distribution<int> gap_us(300, 2000);
    for (int e = 0; e < 80; e++) {
      std::this_thread::sleep_for(std::chrono::microseconds(gap_us(random)));
      preempt_launch_state state;
      auto start = Clock::now();
      if (preempt_evict(launch, nullptr) != PREEMPT_OK)
        break; // finished
      double called = since_us(start);
      int queries = 0;
      do {
        preempt_query(launch, &state);
        queries++;
      } while (state == PREEMPT_LAUNCH_EVICTING && since_us(start) < 1e6);
      if (state == PREEMPT_LAUNCH_EVICTED) {
        call_us.push_back(called);
        query_us.push_back((since_us(start) - called) / queries);
      }
      if (state == PREEMPT_LAUNCH_EVICTED) {
        latencies.push_back(since_us(start));
        if (latencies.back() > 10000) // an outlier: which eviction, to tell a one-time cost from a stall
          std::fprintf(stderr, "preempt_bench: eviction %d of 80 took %.0f us\n", e, latencies.back());
        double gpu_us = 0;
        preempt_status timed = PREEMPT_ERROR_NOT_READY;
        for (auto asked = Clock::now(); gpu_timed && timed == PREEMPT_ERROR_NOT_READY && since_us(asked) < 1e6;)
          timed = preempt_get_eviction_time(launch, &gpu_us);
        if (gpu_timed && timed == PREEMPT_OK)
          gpu_latencies.push_back(gpu_us);
      }
      preempt_resume(launch);
    }
    CHECK_CUDA(cudaStreamSynchronize(long_stream));
    return stats(latencies);
  };
  auto with_gpu_time = [&](const char *key, const Stats &host) {
    report += ", " + json(key, host);
    if (!gpu_latencies.empty())
      report += ", " + json((std::string(key) + "_gpu").c_str(), stats(gpu_latencies)) + ", " +
                json((std::string(key) + "_call").c_str(), stats(call_us)) + ", " +
                json((std::string(key) + "_query").c_str(), stats(query_us));
  };
  with_gpu_time("eviction_latency", eviction_latency(long_blocks * latency_scale, iterations, out));
  long_launches++; // its first long_blocks blocks add to the same cells as the others
  // Tasks 10x shorter, in buffers of their own, checked below: with the
  // adaptive check interval (a yield check per PREEMPT_CHECK_PERIOD_US, 20 us
  // by default), then with a check before every task (the latency floor, at
  // the overhead of a check per task). 8x more blocks than the long launch,
  // so that each run lasts long enough for at least 50 evictions.
  const unsigned short_task_blocks = long_blocks * latency_scale * 8;
  auto short_task_run = [&](const char *key, unsigned check_interval) {
    unsigned *short_task_out;
    CHECK_CUDA(cudaMalloc(&short_task_out, short_task_blocks * sizeof(unsigned)));
    CHECK_CUDA(cudaMemset(short_task_out, 0, short_task_blocks * sizeof(unsigned)));
    if (preempt_set_check_interval((const void *)long_kernel, check_interval) != PREEMPT_OK) {
      std::fprintf(stderr, "preempt_bench: preempt_set_check_interval failed: %s\n", preempt_last_error());
      std::exit(2);
    }
    with_gpu_time(key, eviction_latency(short_task_blocks, iterations / 10, short_task_out));
    std::vector<unsigned> short_result(short_task_blocks);
    CHECK_CUDA(cudaMemcpy(short_result.data(), short_task_out, short_result.size() * sizeof(unsigned),
                          cudaMemcpyDeviceToHost));
    for (size_t block = 0; block < short_result.size(); block += 997)
      short_wrong += short_result[block] != expected_block((unsigned)block, iterations / 10);
    CHECK_CUDA(cudaFree(short_task_out));
  };
  short_task_run("eviction_latency_short_tasks", 0);
  short_task_run("eviction_latency_short_tasks_every_task", 1);
  preempt_set_check_interval((const void *)long_kernel, 0);
  std::snprintf(text, sizeof text, ", \"short_task_wrong_blocks_sampled\": %d", short_wrong);
  report += text;

#endif
  CHECK_CUDA(cudaDeviceSynchronize());

  // Every long launch added each block's value once: check all of them.
  std::vector<unsigned> result(long_blocks);
  CHECK_CUDA(cudaMemcpy(result.data(), out, long_blocks * sizeof(unsigned), cudaMemcpyDeviceToHost));
  int wrong = 0;
  for (unsigned block = 0; block < long_blocks; block += 97)
    wrong += result[block] != expected_block(block, iterations) * (unsigned)long_launches;
#ifdef PREEMPT_API
  wrong += short_wrong;
#endif
  std::snprintf(text, sizeof text, ", \"long_launches\": %d, \"wrong_blocks_sampled\": %d}", long_launches, wrong);
  report += text;
  std::printf("%s\n", report.c_str());
  return wrong == 0 ? 0 : 3;
}
