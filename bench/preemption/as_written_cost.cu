// as_written_cost.cu: what routing through preempt's runtime adds to a launch it runs as written, on the GPU, in one process.
// Issue 39's "invisible when nothing is preempted" (FLEP §4.2, EffiSha §6.3: only a launch long enough to evict pays).
//
// as_written_storm.cu's launch loop (launch_storm's: 1,500 launches on each of four streams, then the streams
// synchronised) is linked in twice, built without the plugin (storm_original) and with it (storm_routed, whose
// launches preempt_launch_kernel runs as written), so both run in this process with the same CPU, GPU clocks and
// CUDA state: launch_storm itself compares two processes, whose launch rates differ by 10-30% from one process to
// the next in either build (bench/results/2026-11-29-h200-placement-probe-990d353/). Variants: the original loop,
// the routed loop, and the original loop with one runtime call added before each launch (cudaGetDevice,
// cudaStreamIsCapturing, cudaStreamGetPriority: calls the runtime's launch path makes). Rounds run every variant,
// in an order rotating from round to round; each variant's figure is the median over rounds of its time per launch
// divided by the original loop's in the same round. Linked with --wrap=preempt_launch_kernel to count the routed
// launches: a run whose paths were not the ones named, or whose sums are wrong, fails. Prints one JSON object per
// variant. Usage: as_written_cost [ROUNDS]
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "as_written_storm.h"
#include "preempt.h"

namespace {

constexpr int kStreams = 4;
constexpr int kLaunchesPerStream = kStormLaunchesPerStream;
constexpr size_t kCells = kStormCellsPerStream;

long long routed_calls = 0;

#define CHECK(call)                                                                                            \
  do {                                                                                                         \
    cudaError_t status_ = (call);                                                                              \
    if (status_ != cudaSuccess) {                                                                              \
      fprintf(stderr, "as_written_cost: %s: %s (line %d)\n", #call, cudaGetErrorString(status_), __LINE__); \
      exit(1);                                                                                                 \
    }                                                                                                          \
  } while (0)

struct Variant {
  const char *name;
  bool routed;
  int extra;  // as_written_storm.cu's
};
constexpr Variant kVariants[] = {
    {"original", false, 0}, {"routed", true, 0},           {"original + cudaGetDevice", false, 1},
    {"original + cudaStreamIsCapturing", false, 2},       {"original + cudaStreamGetPriority", false, 3},
};
constexpr int kVariantCount = sizeof kVariants / sizeof kVariants[0];

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

}  // namespace

extern "C" int __real_preempt_launch_kernel(preempt_kernel_desc *, preempt_dim3, preempt_dim3, void **, size_t, void *);
extern "C" int __wrap_preempt_launch_kernel(preempt_kernel_desc *kernel, preempt_dim3 grid, preempt_dim3 block,
                                            void **args, size_t shared, void *stream) {
  routed_calls++;
  return __real_preempt_launch_kernel(kernel, grid, block, args, shared, stream);
}

int main(int argc, char **argv) {
  const int rounds = argc > 1 ? atoi(argv[1]) : 21;
  if (rounds < 1) {
    fprintf(stderr, "usage: as_written_cost [ROUNDS >= 1]\n");
    return 2;
  }
  unsigned long long *cells = nullptr;
  CHECK(cudaMalloc(&cells, kCells * kStreams * sizeof *cells));
  cudaStream_t streams[kStreams];
  for (auto &stream : streams) CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  std::vector<unsigned long long> out(kCells * kStreams);
  bool correct = true;
  long long expected_routed = 0;
  // One pass of a variant: its seconds per launch, its sums checked.
  auto pass = [&](const Variant &variant) {
    CHECK(cudaMemset(cells, 0, out.size() * sizeof *cells));
    CHECK(cudaDeviceSynchronize());
    auto start = std::chrono::steady_clock::now();
    CHECK((variant.routed ? storm_routed : storm_original)(streams, kStreams, cells, kCells, variant.extra));
    for (auto &stream : streams) CHECK(cudaStreamSynchronize(stream));
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (variant.routed) expected_routed += kStreams * kLaunchesPerStream;
    CHECK(cudaMemcpy(out.data(), cells, out.size() * sizeof *cells, cudaMemcpyDeviceToHost));
    for (int s = 0; s < kStreams; ++s) {
      unsigned long long sum = 0;
      for (int k = 0; k < kLaunchesPerStream; ++k) sum += static_cast<unsigned long long>(k) * kStreams + s + 1;
      for (size_t cell = 0; cell < kCells; ++cell)
        if (out[s * kCells + cell] != sum * (cell / kStormBlock + 1)) correct = false;
    }
    return seconds / (kStreams * kLaunchesPerStream);
  };
  for (const Variant &variant : kVariants) pass(variant);  // first launches: lazy loading, the runtime's lookups
  std::vector<double> us[kVariantCount], ratio[kVariantCount];
  for (int round = 0; round < rounds; ++round) {
    double seconds[kVariantCount];
    for (int i = 0; i < kVariantCount; ++i) {
      int v = (i + round) % kVariantCount;
      seconds[v] = pass(kVariants[v]);
    }
    for (int v = 0; v < kVariantCount; ++v) {
      us[v].push_back(seconds[v] * 1e6);
      ratio[v].push_back(seconds[v] / seconds[0]);
    }
  }
  bool paths = routed_calls == expected_routed;
  const char *loading = getenv("CUDA_MODULE_LOADING");
  for (int v = 0; v < kVariantCount; ++v) {
    std::vector<double> added;
    for (int r = 0; r < rounds; ++r) added.push_back((us[v][r] - us[0][r]) * 1e3);
    printf("{\"module_loading\": \"%s\", \"variant\": \"%s\", \"rounds\": %d, \"launches_per_round\": %d, "
           "\"us_per_launch\": %.3f, \"min\": %.3f, \"max\": %.3f, \"x_original\": %.4f, \"x_min\": %.4f, "
           "\"x_max\": %.4f, \"added_ns\": %.0f, \"added_ns_min\": %.0f, \"added_ns_max\": %.0f, "
           "\"routed_calls\": %lld, \"expected_routed\": %lld, \"correct\": %s}\n",
           loading ? loading : "unset", kVariants[v].name, rounds, kStreams * kLaunchesPerStream, median(us[v]),
           *std::min_element(us[v].begin(), us[v].end()), *std::max_element(us[v].begin(), us[v].end()),
           median(ratio[v]), *std::min_element(ratio[v].begin(), ratio[v].end()),
           *std::max_element(ratio[v].begin(), ratio[v].end()), median(added),
           *std::min_element(added.begin(), added.end()), *std::max_element(added.begin(), added.end()), routed_calls,
           expected_routed, correct && paths ? "true" : "false");
  }
  if (!paths)
    fprintf(stderr, "as_written_cost: %lld launches went through the runtime, %lld expected\n", routed_calls,
            expected_routed);
  if (!correct) fprintf(stderr, "as_written_cost: a launch's output was wrong\n");
  return correct && paths ? 0 : 1;
}
