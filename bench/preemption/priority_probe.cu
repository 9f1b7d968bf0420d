// priority_probe.cu: why a short kernel on a high-priority stream turns around slower than on an ordinary one once
// SMs of a converted persistent grid are freed for it (issue 42; preempt_bench's rows (e) and (f)). Built with the
// plugin and PREEMPT_API (bench/build_suite.sh); prints one JSON object per variant.
#include <cstdio>
#include <random>
#include <thread>

#include "preempt.h"

#include "bench_kernels.cuh"

int main() {
  const unsigned long_blocks = 132 * 8 * 400, iterations = 20000;
  const int short_blocks = 32, short_threads = 256, short_n = short_blocks * short_threads, trials = 25;
  unsigned *out = zeroed_buffer<unsigned>(long_blocks);
  float *data = zeroed_buffer<float>(short_n);
  const PairStreams streams = pair_streams();
  cudaStream_t long_stream = streams.long_stream, plain_stream = streams.plain, urgent_stream = streams.urgent;
  cudaEvent_t long_done, short_done;
  CHECK_CUDA(cudaEventCreate(&long_done));
  CHECK_CUDA(cudaEventCreate(&short_done));
  long_kernel<<<long_blocks, 256, 0, long_stream>>>(out, iterations);
  short_kernel<<<short_blocks, short_threads, 0, plain_stream>>>(data, short_n);
  CHECK_CUDA(cudaDeviceSynchronize());
  unsigned long_launches = 1;

  // routed: the short kernel through <<<>>> (the runtime's launch path, and its priority rule); else through
  // cudaLaunchKernelEx, which the runtime does not route: the launch CUDA alone makes.
  auto launch_short = [&](cudaStream_t stream, bool routed) {
    if (routed) {
      short_kernel<<<short_blocks, short_threads, 0, stream>>>(data, short_n);
      return;
    }
    cudaLaunchConfig_t config = {};
    config.gridDim = dim3(short_blocks);
    config.blockDim = dim3(short_threads);
    config.stream = stream;
    int n = short_n;
    CHECK_CUDA(cudaLaunchKernelEx(&config, short_kernel, data, n));
  };
  std::mt19937 random(12345);
  std::uniform_int_distribution<int> delay_us(1000, 10000);
  // evict: 0 none, 1 every SM, 2 one SM per short block.
  auto run = [&](const char *name, cudaStream_t stream, bool routed, int evict) {
    std::vector<double> turnaround, launched;
    for (int t = 0; t < trials; t++) {
      long_kernel<<<long_blocks, 256, 0, long_stream>>>(out, iterations);
      long_launches++;
      CHECK_CUDA(cudaEventRecord(long_done, long_stream));
      std::this_thread::sleep_for(std::chrono::microseconds(delay_us(random)));
      auto start = Clock::now();
      preempt_launch_id launch = preempt_last_launch();
      if (evict) {
        preempt_sm_mask mask = {};
        for (int sm = 0; sm < (evict == 1 ? 32 * PREEMPT_SM_MASK_WORDS : short_blocks); sm++)
          mask.words[sm / 32] |= 1u << (sm % 32);
        preempt_evict(launch, &mask);
      }
      launch_short(stream, routed);
      launched.push_back(since_us(start));
      CHECK_CUDA(cudaEventRecord(short_done, stream));
      CHECK_CUDA(cudaEventSynchronize(short_done));
      turnaround.push_back(since_us(start));
      if (evict)
        preempt_resume(launch);
      CHECK_CUDA(cudaEventSynchronize(long_done));
    }
    std::printf("{\"variant\": \"%s\", %s, %s}\n", name, json("turnaround", stats(turnaround)).c_str(),
                json("host_until_launched", stats(launched)).c_str());
    std::fflush(stdout);
  };
  for (int round = 0; round < 2; round++) {
    run("spread_plain_routed", plain_stream, true, 2);
    run("spread_urgent_routed", urgent_stream, true, 2);
    run("spread_plain_ex", plain_stream, false, 2);
    run("spread_urgent_ex", urgent_stream, false, 2);
    run("temporal_plain_routed", plain_stream, true, 1);
    run("temporal_urgent_routed", urgent_stream, true, 1);
    run("temporal_urgent_ex", urgent_stream, false, 1);
    run("auto_urgent_routed", urgent_stream, true, 0);
  }
  CHECK_CUDA(cudaDeviceSynchronize());
  std::vector<unsigned> result(long_blocks);
  CHECK_CUDA(cudaMemcpy(result.data(), out, result.size() * sizeof(unsigned), cudaMemcpyDeviceToHost));
  int wrong = 0;
  for (unsigned block = 0; block < long_blocks; block += 997)
    wrong += result[block] != long_launches * expected_block(block, iterations);
  std::printf("{\"long_launches\": %u, \"wrong_blocks_sampled\": %d}\n", long_launches, wrong);
  return wrong != 0;
}
