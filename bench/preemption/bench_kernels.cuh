// bench_kernels.cuh: the long (compute-bound, one value per block) and short kernels of the preemption benchmarks,
// their host-side expected values and the statistics both print. FLEP §6.3-6.4 / EffiSha §8 measure with such pairs.
#ifndef PREEMPT_BENCH_KERNELS_CUH
#define PREEMPT_BENCH_KERNELS_CUH
#include <errno.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#define CHECK_CUDA(call)                                                                           \
  do {                                                                                             \
    cudaError_t status_ = (call);                                                                  \
    if (status_ != cudaSuccess) {                                                                  \
      std::fprintf(stderr, "%s: %s failed at line %d: %s\n", program_invocation_short_name, #call, __LINE__,           \
                   cudaGetErrorString(status_));                                                   \
      std::exit(2);                                                                                \
    }                                                                                              \
  } while (0)

// A driver function the runtime API does not wrap (CUDA 12.4's ABI), e.g.
// cuStreamWaitValue32; exits when the driver lacks it.
template <class Function> static Function driver_function(const char *name) {
  void *function = nullptr;
  cudaDriverEntryPointQueryResult found;
  CHECK_CUDA(cudaGetDriverEntryPointByVersion(name, &function, 12040, cudaEnableDefault, &found));
  if (!function || found != cudaDriverEntryPointSuccess) {
    std::fprintf(stderr, "%s: no %s in the driver\n", program_invocation_short_name, name);
    std::exit(1);
  }
  return reinterpret_cast<Function>(function);
}

// Creates an empty file, the processes' "I am ready" signal to the scripts; says why when it cannot.
static bool touch_file(const char *path) {
  FILE *file = std::fopen(path, "w");
  if (!file) {
    std::perror(path);
    return false;
  }
  std::fclose(file);
  return true;
}

using Clock = std::chrono::steady_clock;
static double since_us(Clock::time_point start) {
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count();
}

// Compute-bound work whose length per block is `iterations`: the task length.
// Each block writes one value, so a task lost or run twice shows in the result.
__global__ void long_kernel(unsigned *out, unsigned iterations) {
  unsigned value = blockIdx.x * 2654435761u + threadIdx.x;
  for (unsigned i = 0; i < iterations; i++)
    value = value * 1664525u + 1013904223u;
  __shared__ unsigned partial[256];
  partial[threadIdx.x] = value;
  __syncthreads();
  if (threadIdx.x == 0) {
    unsigned sum = 0;
    for (int t = 0; t < 256; t++)
      sum += partial[t];
    out[blockIdx.x] += sum;
  }
}

__global__ void short_kernel(float *data, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    data[i] = data[i] * 0.5f + 1.0f;
}

static unsigned expected_block(unsigned block, unsigned iterations) {
  unsigned sum = 0;
  for (unsigned t = 0; t < 256; t++) {
    unsigned value = block * 2654435761u + t;
    for (unsigned i = 0; i < iterations; i++)
      value = value * 1664525u + 1013904223u;
    sum += value;
  }
  return sum;
}

struct Stats {
  double median, p99, min, max;
  size_t count;
};
static Stats stats(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  Stats s{0, 0, 0, 0, values.size()};
  if (values.empty())
    return s;
  s.median = values[values.size() / 2];
  s.p99 = values[std::min(values.size() - 1, (size_t)(values.size() * 0.99))];
  s.min = values.front();
  s.max = values.back();
  return s;
}
static std::string json(const char *name, const Stats &s) {
  char text[256];
  std::snprintf(text, sizeof text, "\"%s\": {\"median_us\": %.1f, \"p99_us\": %.1f, \"min_us\": %.1f, \"max_us\": %.1f, \"n\": %zu}",
                name, s.median, s.p99, s.min, s.max, s.count);
  return text;
}

// A zeroed device buffer of `count` elements.
template <class T> static T *zeroed_buffer(size_t count) {
  T *buffer;
  CHECK_CUDA(cudaMalloc(&buffer, count * sizeof(T)));
  CHECK_CUDA(cudaMemset(buffer, 0, count * sizeof(T)));
  return buffer;
}

// The pair benchmarks' streams: the long kernel's and an ordinary one at the lowest priority, an urgent one at the
// highest (CUDA's stream priorities, the rule the runtime keeps for converted launches).
struct PairStreams {
  cudaStream_t long_stream, plain, urgent;
};
static PairStreams pair_streams() {
  int lowest, highest;
  CHECK_CUDA(cudaDeviceGetStreamPriorityRange(&lowest, &highest));
  PairStreams streams;
  CHECK_CUDA(cudaStreamCreateWithPriority(&streams.long_stream, cudaStreamNonBlocking, lowest));
  CHECK_CUDA(cudaStreamCreateWithPriority(&streams.plain, cudaStreamNonBlocking, lowest));
  CHECK_CUDA(cudaStreamCreateWithPriority(&streams.urgent, cudaStreamNonBlocking, highest));
  return streams;
}

#endif
