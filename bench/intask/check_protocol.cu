// check_protocol.cu: what an in-task eviction check costs gemm's K loop, under two ways for the CTA to agree.
// Issue 8's overhead goal (docs/intask.md, "Where the check's cost goes"); hand-written kernels, no plugin.
//
// The bench's gemm (intask_bench.cu) with a check every EVERY K steps:
//   none     no check (the baseline);
//   barrier  today's protocol (runtime-dev/task_loop.cu): thread 0 reads the eviction word and the global timer, a
//            barrier, thread 0 writes the answer, a barrier, every thread reads it (through redux.sync);
//   flags    no barrier of its own: the loop meets at __syncthreads every K step anyway, so thread 0 writes the
//            word it read into one of two shared slots and every thread acts on the other slot, which thread 0
//            wrote at the previous check (a barrier lies between the write and every read, and between every read
//            and the next write of that slot). The CTA leaves one check later than it could.
// The word is never set: every launch runs to the end, and each mode's output must equal `none`'s.
// Usage: check_protocol [ROUNDS] [EVERY,...]   (defaults 5 and 1,2,3,6). Prints a markdown table: per-round ratio of
// each mode's median launch time to `none`'s in the same round, median (min..max).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#define CHECK_CUDA(call)                                                                                     \
  do {                                                                                                       \
    cudaError_t status_ = (call);                                                                            \
    if (status_ != cudaSuccess) {                                                                            \
      std::fprintf(stderr, "check_protocol: %s failed at line %d: %s\n", #call, __LINE__,                     \
                   cudaGetErrorString(status_));                                                             \
      std::exit(2);                                                                                          \
    }                                                                                                        \
  } while (0)

enum Mode { kNone, kBarrier, kFlags };
constexpr int kThreads = 256, kTile = 64, kK = 16;

__device__ __forceinline__ unsigned read_word(const unsigned *word) {
  return __scoped_atomic_load_n(word, __ATOMIC_RELAXED, __MEMORY_SCOPE_DEVICE);
}
__device__ __forceinline__ unsigned global_time_ns() {
  unsigned long long now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  return (unsigned)now;
}

// Stands for the check's use of the time since the last check (intask_period.h adapts the interval with it): a
// test that never holds (4 s between checks) but keeps the timer's read and the arithmetic in the check.
__device__ __forceinline__ bool stalled(unsigned now, unsigned last_ns) {
  return last_ns != 0 && now - last_ns > 4000000000u;
}

template <Mode mode>
__global__ void __launch_bounds__(kThreads) gemm_checked(const unsigned *a, const unsigned *b, unsigned *c, unsigned n,
                                                         unsigned k_total, const unsigned *evict_word,
                                                         unsigned every, unsigned *last_check) {
  __shared__ unsigned as[kK][kTile];
  __shared__ unsigned bs[kK][kTile];
  __shared__ unsigned answer[2];
  const unsigned tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  const unsigned row0 = blockIdx.y * kTile, col0 = blockIdx.x * kTile;
  unsigned acc[4][4] = {};
  unsigned until_check = every, parity = 0, last_ns = 0;
  if (mode == kFlags && threadIdx.x == 0)
    answer[0] = answer[1] = 0;
  for (unsigned k0 = 0; k0 < k_total; k0 += kK) {
    for (int l = 0; l < 4; l++) {
      const unsigned e = threadIdx.x + l * kThreads;
      as[e % kK][e / kK] = a[(row0 + e / kK) * k_total + k0 + e % kK];
      bs[e / kTile][e % kTile] = b[(k0 + e / kTile) * n + col0 + e % kTile];
    }
    __syncthreads();
    for (int kk = 0; kk < kK; kk++) {
      unsigned ar[4], br[4];
      for (int i = 0; i < 4; i++) {
        ar[i] = as[kk][ty * 4 + i];
        br[i] = bs[kk][tx * 4 + i];
      }
      for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++)
          acc[i][j] += ar[i] * br[j];
    }
    __syncthreads();
    if (mode != kNone && --until_check == 0) {
      until_check = every;
      unsigned leave;
      if (mode == kBarrier) {
        unsigned next = 0;
        if (threadIdx.x == 0) {
          unsigned now = global_time_ns();
          next = read_word(evict_word) || stalled(now, last_ns) ? 0u : every;
          last_ns = now;
        }
        __syncthreads();
        if (threadIdx.x == 0)
          answer[0] = next;
        __syncthreads();
        leave = __reduce_max_sync(0xffffffffu, answer[0]) == 0;
      } else {
        leave = __reduce_max_sync(0xffffffffu, answer[parity]);
        if (threadIdx.x == 0) {
          unsigned now = global_time_ns();
          answer[parity ^ 1] = read_word(evict_word) || stalled(now, last_ns);
          last_ns = now;
        }
        parity ^= 1;
      }
      if (leave)
        return;
    }
  }
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 4; j++)
      c[(row0 + ty * 4 + i) * n + col0 + tx * 4 + j] = acc[i][j];
  if (threadIdx.x == 0 && mode != kNone)
    last_check[blockIdx.y * gridDim.x + blockIdx.x] = last_ns;
}

int main(int argc, char **argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 5;
  std::vector<unsigned> everies;
  for (const char *p = argc > 2 ? argv[2] : "1,2,3,6"; *p;) {
    everies.push_back((unsigned)std::strtoul(p, const_cast<char **>(&p), 10));
    if (*p == ',')
      p++;
  }
  const unsigned m = 2048, n = 2048, k = 4096;
  std::vector<unsigned> host_a((size_t)m * k), host_b((size_t)k * n);
  unsigned state = 2;
  for (auto *values : {&host_a, &host_b})
    for (auto &v : *values) {
      state = state * 1664525u + 1013904223u;
      v = state ^ (state >> 13);
    }
  unsigned *a, *b, *c, *word, *last;
  CHECK_CUDA(cudaMalloc(&a, host_a.size() * 4));
  CHECK_CUDA(cudaMalloc(&b, host_b.size() * 4));
  CHECK_CUDA(cudaMalloc(&c, (size_t)m * n * 4));
  CHECK_CUDA(cudaMalloc(&word, 4));
  CHECK_CUDA(cudaMalloc(&last, (m / kTile) * (n / kTile) * 4));
  CHECK_CUDA(cudaMemcpy(a, host_a.data(), host_a.size() * 4, cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(b, host_b.data(), host_b.size() * 4, cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemset(word, 0, 4));
  const dim3 grid(n / kTile, m / kTile);
  auto launch = [&](Mode mode, unsigned every) {
    if (mode == kNone)
      gemm_checked<kNone><<<grid, kThreads>>>(a, b, c, n, k, word, every, last);
    else if (mode == kBarrier)
      gemm_checked<kBarrier><<<grid, kThreads>>>(a, b, c, n, k, word, every, last);
    else
      gemm_checked<kFlags><<<grid, kThreads>>>(a, b, c, n, k, word, every, last);
    CHECK_CUDA(cudaGetLastError());
  };
  auto output = [&] {
    std::vector<unsigned> host((size_t)m * n);
    CHECK_CUDA(cudaMemcpy(host.data(), c, host.size() * 4, cudaMemcpyDeviceToHost));
    return host;
  };
  // Correctness first: every mode and interval gives `none`'s output.
  launch(kNone, 1);
  CHECK_CUDA(cudaDeviceSynchronize());
  const std::vector<unsigned> reference = output();
  int mismatched = 0;
  for (Mode mode : {kBarrier, kFlags})
    for (unsigned every : everies) {
      CHECK_CUDA(cudaMemset(c, 0, (size_t)m * n * 4));
      launch(mode, every);
      CHECK_CUDA(cudaDeviceSynchronize());
      if (output() != reference) {
        std::fprintf(stderr, "check_protocol: mode %d every %u: output differs from no check\n", (int)mode, every);
        mismatched++;
      }
    }
  if (mismatched)
    return 1;
  cudaEvent_t start, stop;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&stop));
  auto median_ms = [&](Mode mode, unsigned every) {
    std::vector<float> times;
    for (int i = 0; i < 7; i++) {
      CHECK_CUDA(cudaEventRecord(start));
      launch(mode, every);
      CHECK_CUDA(cudaEventRecord(stop));
      CHECK_CUDA(cudaEventSynchronize(stop));
      float ms;
      CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
      times.push_back(ms);
    }
    std::sort(times.begin(), times.end());
    return times[times.size() / 2];
  };
  for (int warm = 0; warm < 3; warm++)
    launch(kNone, 1);
  // ratios[mode][every index] over rounds
  std::vector<std::vector<std::vector<double>>> ratios(3, std::vector<std::vector<double>>(everies.size()));
  std::vector<double> none_ms;
  for (int round = 0; round < rounds; round++) {
    double base = median_ms(kNone, 1);
    none_ms.push_back(base);
    for (size_t e = 0; e < everies.size(); e++)
      for (Mode mode : {kBarrier, kFlags})
        ratios[mode][e].push_back(median_ms(mode, everies[e]) / base);
  }
  cudaDeviceProp properties;
  CHECK_CUDA(cudaGetDeviceProperties(&properties, 0));
  std::sort(none_ms.begin(), none_ms.end());
  std::printf("gemm 2048 x 2048 x 4096 on %s; no check: %.3f ms (median of %d rounds' medians of 7 launches).\n"
              "Per-round ratio to no check, median (min..max); every: K steps between checks.\n\n"
              "| every | barrier | flags |\n|---|---|---|\n",
              properties.name, none_ms[none_ms.size() / 2], rounds);
  for (size_t e = 0; e < everies.size(); e++) {
    std::printf("| %u |", everies[e]);
    for (Mode mode : {kBarrier, kFlags}) {
      std::vector<double> &r = ratios[mode][e];
      std::sort(r.begin(), r.end());
      std::printf(" %.3f (%.3f..%.3f) |", r[r.size() / 2], r.front(), r.back());
    }
    std::printf("\n");
  }
  return 0;
}
