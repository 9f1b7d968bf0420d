// persistent_shapes.cu: whether a persistent grid's task order, dynamic fetch or tagged counter costs bandwidth.
// Issue 3 overhead (FLEP §4.1 persistent threads): isolates the loop shapes from preempt's own helpers.
//
// vector_add's streaming add (2^25 floats, blocks of 256) as: the original
// grid; a persistent grid (occupancy-sized) taking tasks interleaved, as one
// contiguous range per CTA, or round-robin chunks; a dynamic fetch of chunks
// from an atomic counter reset before each launch; and the same fetch from a
// generation-tagged 64-bit counter never reset (preempt's scheme: the first
// CTA of a launch installs its generation). Prints us per launch, median of 9
// rounds of 20 launches, each round's launches preceded, for the dynamic
// shapes, by the counter's reset (a memset and an empty launch, also timed
// alone).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <vector>

namespace {

constexpr size_t kN = (size_t(1) << 25) + 333;
constexpr int kBlock = 256;

__global__ void original(const float *a, const float *b, float *c, size_t n) {
  size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n)
    c[i] = a[i] + b[i];
}

__device__ void run_task(const float *a, const float *b, float *c, size_t n, unsigned task) {
  size_t i = size_t(task) * blockDim.x + threadIdx.x;
  if (i < n)
    c[i] = a[i] + b[i];
}

enum Order { kInterleaved, kRange, kChunks };

__global__ void persistent(const float *a, const float *b, float *c, size_t n, unsigned tasks, int order,
                           unsigned chunk) {
  unsigned ctas = gridDim.x;
  if (order == kInterleaved) {
    for (unsigned task = blockIdx.x; task < tasks; task += ctas)
      run_task(a, b, c, n, task);
  } else if (order == kRange) {
    unsigned per_cta = (tasks + ctas - 1) / ctas;
    for (unsigned task = blockIdx.x * per_cta; task < min(tasks, (blockIdx.x + 1) * per_cta); task++)
      run_task(a, b, c, n, task);
  } else {
    for (unsigned first = blockIdx.x * chunk; first < tasks; first += ctas * chunk)
      for (unsigned task = first; task < min(tasks, first + chunk); task++)
        run_task(a, b, c, n, task);
  }
}

// preempt's tagged add (runtime-dev/task_loop.cu), reduced to plain CUDA.
__device__ unsigned tagged_add(unsigned long long *word, unsigned generation, unsigned amount) {
  const unsigned long long tag = (unsigned long long)generation << 32, tag_mask = 0xffffffff00000000ull;
  unsigned long long before = atomicAdd(word, (unsigned long long)amount);
  if ((before & tag_mask) == tag)
    return (unsigned)before;
  for (;;) {
    unsigned long long seen = *(volatile unsigned long long *)word;
    if ((seen & tag_mask) == tag) {
      before = atomicAdd(word, (unsigned long long)amount);
      if ((before & tag_mask) == tag)
        return (unsigned)before;
      continue;
    }
    if (atomicCAS(word, seen, tag | amount) == seen)
      return 0;
  }
}

// Chunks fetched from a counter: a plain one (`word` null), reset before each
// launch, or a generation-tagged one never reset.
__global__ void fetched_chunks(const float *a, const float *b, float *c, size_t n, unsigned tasks, unsigned chunk,
                               unsigned *counter, unsigned long long *word, unsigned generation) {
  __shared__ unsigned first;
  for (;;) {
    if (threadIdx.x == 0)
      first = word ? tagged_add(word, generation, chunk) : atomicAdd(counter, chunk);
    __syncthreads();
    unsigned start = first;
    __syncthreads();
    if (start >= tasks)
      break;
    for (unsigned task = start; task < min(tasks, start + chunk); task++)
      run_task(a, b, c, n, task);
  }
}

__global__ void empty() {}

} // namespace

int main() {
  float *a, *b, *c;
  unsigned *counter;
  unsigned long long *word;
  if (cudaMalloc(&a, kN * 4) || cudaMalloc(&b, kN * 4) || cudaMalloc(&c, kN * 4) || cudaMalloc(&counter, 4) ||
      cudaMalloc(&word, 8) || cudaMemset(a, 0, kN * 4) || cudaMemset(b, 0, kN * 4) || cudaMemset(word, 0, 8)) {
    std::fprintf(stderr, "persistent_shapes: out of GPU memory\n");
    return 1;
  }
  unsigned tasks = (kN + kBlock - 1) / kBlock;
  int sms = 0, per_sm = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, persistent, kBlock, 0);
  unsigned ctas = sms * per_sm;
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  auto time = [&](auto launch) {
    std::vector<float> per_launch;
    for (int round = 0; round < 9; round++) {
      cudaEventRecord(start);
      for (int k = 0; k < 20; k++)
        launch();
      cudaEventRecord(stop);
      cudaEventSynchronize(stop);
      float ms = 0;
      cudaEventElapsedTime(&ms, start, stop);
      per_launch.push_back(ms * 1000 / 20);
    }
    std::sort(per_launch.begin(), per_launch.end());
    return per_launch[4];
  };
  auto reset = [&] {
    cudaMemsetAsync(counter, 0, 4);
    empty<<<1, 1>>>();
  };
  std::printf("%u persistent CTAs, %u tasks; us per launch:\n", ctas, tasks);
  std::printf("original grid: %.1f\n", time([&] { original<<<tasks, kBlock>>>(a, b, c, kN); }));
  std::printf("persistent, interleaved: %.1f\n",
              time([&] { persistent<<<ctas, kBlock>>>(a, b, c, kN, tasks, kInterleaved, 1); }));
  std::printf("persistent, one range per CTA: %.1f\n",
              time([&] { persistent<<<ctas, kBlock>>>(a, b, c, kN, tasks, kRange, 1); }));
  for (unsigned chunk : {4u, 16u, 64u})
    std::printf("persistent, round-robin chunks of %u: %.1f\n", chunk,
                time([&] { persistent<<<ctas, kBlock>>>(a, b, c, kN, tasks, kChunks, chunk); }));
  std::printf("counter reset alone (memset + empty launch): %.1f\n", time(reset));
  for (unsigned chunk : {4u, 16u, 64u})
    std::printf("reset + dynamic chunks of %u: %.1f\n", chunk, time([&] {
                  reset();
                  fetched_chunks<<<ctas, kBlock>>>(a, b, c, kN, tasks, chunk, counter, nullptr, 0);
                }));
  unsigned generation = 1;
  for (unsigned chunk : {4u, 16u})
    std::printf("reset + tagged chunks of %u: %.1f\n", chunk, time([&] {
                  reset();
                  fetched_chunks<<<ctas, kBlock>>>(a, b, c, kN, tasks, chunk, counter, word, ++generation);
                }));
  cudaError_t status = cudaDeviceSynchronize();
  if (status != cudaSuccess) {
    std::fprintf(stderr, "persistent_shapes: %s\n", cudaGetErrorString(status));
    return 1;
  }
  return 0;
}
