// as_written_cost.cu: what routing through preempt's runtime adds to a launch it runs as written, on the GPU, in one process.
// Issue 39's "invisible when nothing is preempted" (FLEP §4.2, EffiSha §6.3: only a launch long enough to evict pays).
//
// Built with the plugin, so `k<<<...>>>` goes through preempt_launch_kernel, which runs this one-wave launch as
// written. The same kernel is also launched through a pointer to cudaLaunchKernel, which the plugin cannot see
// (passes/LaunchRewrite.cpp routes direct calls only): the program's own call, no runtime. launch_storm's pattern,
// 1,500 launches on each of four streams, then the streams synchronised; rounds alternate which path goes first,
// so that the process, its CPU and the GPU's clocks are the same for both. launch_storm itself compares two
// processes, whose own launch rates differ by 10-30% from one process to the next in either build
// (bench/results/2026-11-29-h200-placement-probe-990d353/). Linked with --wrap=preempt_launch_kernel to count
// the routed launches: a run where the paths were not the ones named fails. Prints one JSON object.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "preempt.h"

namespace {

constexpr int kStreams = 4;
constexpr int kLaunchesPerStream = 1500;
constexpr dim3 kGrid(37, 3, 2);  // 222 blocks: one wave, so the runtime runs it as written
constexpr int kBlock = 64;
constexpr size_t kCells = size_t(37) * 3 * 2 * kBlock;

__global__ void add_launch_number(unsigned long long *cells, unsigned long long launch) {
  unsigned block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  cells[block * blockDim.x + threadIdx.x] += launch * (block + 1);
}

long long routed_calls = 0;

#define CHECK(call)                                                                         \
  do {                                                                                      \
    cudaError_t status_ = (call);                                                           \
    if (status_ != cudaSuccess) {                                                           \
      fprintf(stderr, "as_written_cost: %s: %s (line %d)\n", #call, cudaGetErrorString(status_), __LINE__); \
      exit(1);                                                                              \
    }                                                                                       \
  } while (0)

using LaunchCall = cudaError_t (*)(const void *, dim3, dim3, void **, size_t, cudaStream_t);
// volatile: read at run time, so no pass sees a call to cudaLaunchKernel here.
LaunchCall volatile direct_launch = static_cast<LaunchCall>(&::cudaLaunchKernel);

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
  // One pass of launch_storm's pattern; its seconds per launch, its output checked.
  auto storm = [&](bool routed) {
    CHECK(cudaMemset(cells, 0, out.size() * sizeof *cells));
    CHECK(cudaDeviceSynchronize());
    auto start = std::chrono::steady_clock::now();
    for (int k = 0; k < kLaunchesPerStream; ++k)
      for (int s = 0; s < kStreams; ++s) {
        unsigned long long *buffer = cells + s * kCells, launch = k * kStreams + s + 1;
        if (routed) {
          add_launch_number<<<kGrid, kBlock, 0, streams[s]>>>(buffer, launch);
          CHECK(cudaGetLastError());
        } else {
          void *args[] = {&buffer, &launch};
          CHECK(direct_launch(reinterpret_cast<const void *>(add_launch_number), kGrid, dim3(kBlock), args, 0,
                              streams[s]));
        }
      }
    for (auto &stream : streams) CHECK(cudaStreamSynchronize(stream));
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    CHECK(cudaMemcpy(out.data(), cells, out.size() * sizeof *cells, cudaMemcpyDeviceToHost));
    for (int s = 0; s < kStreams; ++s) {
      unsigned long long sum = 0;
      for (int k = 0; k < kLaunchesPerStream; ++k) sum += static_cast<unsigned long long>(k) * kStreams + s + 1;
      for (size_t cell = 0; cell < kCells; ++cell)
        if (out[s * kCells + cell] != sum * (cell / kBlock + 1)) correct = false;
    }
    return seconds / (kStreams * kLaunchesPerStream);
  };
  storm(true);  // first launches: lazy loading, the runtime's lookups
  storm(false);
  long long routed_before = routed_calls;
  std::vector<double> routed_us, direct_us, ratios;
  for (int round = 0; round < rounds; ++round) {
    double routed, direct;
    if (round % 2) {
      direct = storm(false);
      routed = storm(true);
    } else {
      routed = storm(true);
      direct = storm(false);
    }
    routed_us.push_back(routed * 1e6);
    direct_us.push_back(direct * 1e6);
    ratios.push_back(routed / direct);
  }
  long long expected = static_cast<long long>(rounds) * kStreams * kLaunchesPerStream;
  bool paths = routed_calls - routed_before == expected;
  auto spread = [](const std::vector<double> &v) {
    return std::make_pair(*std::min_element(v.begin(), v.end()), *std::max_element(v.begin(), v.end()));
  };
  auto [routed_lo, routed_hi] = spread(routed_us);
  auto [direct_lo, direct_hi] = spread(direct_us);
  auto [ratio_lo, ratio_hi] = spread(ratios);
  const char *loading = getenv("CUDA_MODULE_LOADING");
  printf("{\"module_loading\": \"%s\", \"rounds\": %d, \"launches_per_round\": %d, \"direct_us_per_launch\": %.3f, \"direct_min\": %.3f, "
         "\"direct_max\": %.3f, \"routed_us_per_launch\": %.3f, \"routed_min\": %.3f, \"routed_max\": %.3f, "
         "\"ratio\": %.4f, \"ratio_min\": %.4f, \"ratio_max\": %.4f, \"routed_calls\": %lld, \"expected_routed\": %lld, "
         "\"correct\": %s}\n",
         loading ? loading : "unset", rounds, kStreams * kLaunchesPerStream, median(direct_us), direct_lo, direct_hi, median(routed_us), routed_lo,
         routed_hi, median(ratios), ratio_lo, ratio_hi, routed_calls - routed_before, expected,
         correct && paths ? "true" : "false");
  if (!paths) fprintf(stderr, "as_written_cost: %lld launches went through the runtime, %lld expected\n",
                      routed_calls - routed_before, expected);
  if (!correct) fprintf(stderr, "as_written_cost: a launch's output was wrong\n");
  return correct && paths ? 0 : 1;
}
