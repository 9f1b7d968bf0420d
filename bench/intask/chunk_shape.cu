// chunk_shape.cu: what the shape of an in-task check costs a loop, written by hand (no plugin), on the in-task
// bench's stencil (issue 8, docs/intask.md "Tried 2026-11-24"). Never evicted: the eviction word stays 0.
//
// Shapes, each a kernel (the save path only stores the sweep reached and leaves):
//   plain       the loop as written (the baseline of each round)
//   runtime     the pass's strip-mining: chunk_last = s + min(remaining - 1, last - s), an inner loop to it, then
//               a check: thread 0 tests the word it read at the previous check, sets the next count from the
//               time (preempt_intask_next_iterations), two barriers, every thread reads the count back
//   runtime_fold the same chunks; the check has no barrier of its own: thread 0 writes its answer to one of two
//               slots and every thread reads the other, written a check earlier. Right because every sweep
//               passes the loop's own barrier (an answer is read one chunk after it is written)
//   const<K>    full chunks of exactly K sweeps (a constant trip count: no remainder dispatch), a count-down of
//               chunks to the check (as `runtime`, counting chunks), then the last < K sweeps without a check
//   const<K>_fold  const<K> with the folded check
//
// Built by bench/build_suite.sh into build/bench/original/chunk_shape. Usage: chunk_shape ROUNDS [SWEEPS]: prints,
// per shape, the median over rounds of its time over plain's in the same round (median of 5 launches each), with
// min..max, and checks every shape's output equals plain's.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "preempt/intask_period.h"

#define CHECK_CUDA(call)                                                                                     \
  do {                                                                                                       \
    cudaError_t status_ = (call);                                                                            \
    if (status_ != cudaSuccess) {                                                                            \
      std::fprintf(stderr, "chunk_shape: %s failed at line %d: %s\n", #call, __LINE__,                       \
                   cudaGetErrorString(status_));                                                             \
      std::exit(2);                                                                                          \
    }                                                                                                        \
  } while (0)

constexpr int kThreads = 256, kPer = 4, kTile = kThreads * kPer;
constexpr unsigned kPeriodNs = 10000;

struct Control {
  unsigned evict; // never set: the shapes' cost when never evicted
};

__device__ __forceinline__ unsigned now_ns() { return (unsigned)__nvvm_read_ptx_sreg_globaltimer(); }

__device__ __forceinline__ void sweep(unsigned (*tile)[kTile], unsigned s) {
  const unsigned from = s & 1;
  for (int k = 0; k < kPer; k++) {
    const unsigned i = threadIdx.x + k * kThreads;
    const unsigned left = tile[from][(i + kTile - 1) % kTile];
    const unsigned right = tile[from][(i + 1) % kTile];
    const unsigned mid = tile[from][i];
    tile[from ^ 1][i] = (left + 2u * mid + right) ^ (mid >> 7) ^ s;
  }
  __syncthreads();
}

__device__ __forceinline__ void load_tile(unsigned (*tile)[kTile], const unsigned *in) {
  const unsigned base = blockIdx.x * kTile;
  for (int k = 0; k < kPer; k++)
    tile[0][threadIdx.x + k * kThreads] = in[base + threadIdx.x + k * kThreads];
  __syncthreads();
}

__device__ __forceinline__ void store_tile(unsigned (*tile)[kTile], unsigned *out, unsigned sweeps) {
  const unsigned base = blockIdx.x * kTile;
  for (int k = 0; k < kPer; k++)
    out[base + threadIdx.x + k * kThreads] = tile[sweeps & 1][threadIdx.x + k * kThreads];
}

__device__ __forceinline__ unsigned read_word(const Control *control) {
  return __scoped_atomic_load_n(&control->evict, __ATOMIC_RELAXED, __MEMORY_SCOPE_DEVICE);
}

// Thread 0's part of a check: 0 to leave, else the next count (of sweeps or chunks).
__device__ __forceinline__ unsigned decide(unsigned evict_seen, unsigned count, unsigned &last_check) {
  if (evict_seen)
    return 0;
  unsigned now = now_ns();
  unsigned next = preempt_intask_next_iterations(count, kPeriodNs, last_check, now);
  last_check = now;
  return next;
}

__global__ void __launch_bounds__(kThreads) shape_plain(const unsigned *in, unsigned *out, unsigned sweeps,
                                                        Control *) {
  __shared__ unsigned tile[2][kTile];
  load_tile(tile, in);
  for (unsigned s = 0; s < sweeps; s++)
    sweep(tile, s);
  store_tile(tile, out, sweeps);
}

// The check with two barriers of its own (task_loop.cu's __preempt_intask_check).
__device__ __forceinline__ unsigned check_barriers(unsigned *answer, unsigned evict_seen, unsigned count,
                                                   unsigned &last_check) {
  unsigned next = 0;
  if (threadIdx.x == 0)
    next = decide(evict_seen, count, last_check);
  __syncthreads();
  if (threadIdx.x == 0)
    *answer = next;
  __syncthreads();
  return *answer;
}

// The folded check: thread 0 writes slot `parity`, everyone reads the other, written one check earlier.
__device__ __forceinline__ unsigned check_folded(unsigned *slots, unsigned parity, unsigned evict_seen,
                                                 unsigned count, unsigned &last_check) {
  if (threadIdx.x == 0)
    slots[parity] = decide(evict_seen, count, last_check);
  return slots[parity ^ 1];
}

// Each thread's check state (thread 0's is the one that counts) and the check, as every shape makes it: thread 0
// reads the word for the next check and decides on the one it read at the last (0: leave, else the next count).
template <bool Fold> struct Checker {
  unsigned last_check, evict_seen = 0, parity = 0;
  __device__ explicit Checker(unsigned *answer) : last_check(threadIdx.x == 0 ? now_ns() : 0) {
    if (Fold && threadIdx.x == 0)
      answer[0] = answer[1] = 1;
  }
  __device__ unsigned check(unsigned *answer, Control *control, unsigned count) {
    unsigned evict_next = threadIdx.x == 0 ? read_word(control) : 0;
    unsigned next = Fold ? check_folded(answer, parity, evict_seen, count, last_check)
                         : check_barriers(answer, evict_seen, count, last_check);
    parity ^= 1;
    evict_seen = evict_next;
    return next;
  }
};

template <bool Fold>
__global__ void __launch_bounds__(kThreads) shape_runtime(const unsigned *in, unsigned *out, unsigned sweeps,
                                                          Control *control) {
  __shared__ unsigned tile[2][kTile];
  __shared__ unsigned answer[2];
  load_tile(tile, in);
  Checker<Fold> checker(answer);
  if (sweeps == 0) {
    store_tile(tile, out, sweeps);
    return;
  }
  const unsigned last = sweeps - 1;
  unsigned s = 0, remaining = 1;
  for (;;) {
    const unsigned chunk_last = s + min(remaining - 1, last - s);
    for (;; s++) {
      sweep(tile, s);
      if (s == chunk_last)
        break;
    }
    if (s == last)
      break;
    s++;
    if ((remaining = checker.check(answer, control, remaining)) == 0) {
      out[blockIdx.x * kTile + threadIdx.x] = s; // the save: never taken here
      return;
    }
  }
  store_tile(tile, out, sweeps);
}

template <unsigned K, bool Fold>
__global__ void __launch_bounds__(kThreads) shape_const(const unsigned *in, unsigned *out, unsigned sweeps,
                                                        Control *control) {
  __shared__ unsigned tile[2][kTile];
  __shared__ unsigned answer[2];
  load_tile(tile, in);
  Checker<Fold> checker(answer);
  unsigned s = 0, chunks = 1, chunks_left = 1;
  for (; sweeps - s >= K;) {
#pragma unroll 4
    for (unsigned j = 0; j < K; j++)
      sweep(tile, s + j);
    s += K;
    if (--chunks_left == 0) {
      if ((chunks = checker.check(answer, control, chunks)) == 0) {
        out[blockIdx.x * kTile + threadIdx.x] = s;
        return;
      }
      chunks_left = chunks;
    }
  }
  for (; s < sweeps; s++)
    sweep(tile, s);
  store_tile(tile, out, sweeps);
}

using Kernel = void (*)(const unsigned *, unsigned *, unsigned, Control *);
struct Shape {
  const char *name;
  Kernel kernel;
};

int main(int argc, char **argv) {
  int rounds = argc > 1 ? std::atoi(argv[1]) : 5;
  unsigned sweeps = argc > 2 ? (unsigned)std::atoi(argv[2]) : 2048;
  if (rounds < 1) {
    std::fprintf(stderr, "usage: chunk_shape ROUNDS [SWEEPS]\n");
    return 2;
  }
  const Shape shapes[] = {
      {"plain", shape_plain},
      {"runtime", shape_runtime<false>},
      {"runtime_fold", shape_runtime<true>},
      {"const4", shape_const<4, false>},
      {"const4_fold", shape_const<4, true>},
      {"const16", shape_const<16, false>},
      {"const16_fold", shape_const<16, true>},
  };
  const int shape_count = sizeof shapes / sizeof shapes[0];
  cudaDeviceProp prop;
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  int per_sm = 0;
  CHECK_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, shape_plain, kThreads, 0));
  const unsigned blocks = 2u * per_sm * prop.multiProcessorCount;
  const size_t words = (size_t)blocks * kTile;
  std::vector<unsigned> host_in(words), reference(words), result(words);
  for (size_t i = 0; i < words; i++)
    host_in[i] = (unsigned)(i * 2654435761u + 12345u);
  unsigned *in, *out;
  Control *control;
  CHECK_CUDA(cudaMalloc(&in, words * 4));
  CHECK_CUDA(cudaMalloc(&out, words * 4));
  CHECK_CUDA(cudaMalloc(&control, sizeof(Control)));
  CHECK_CUDA(cudaMemset(control, 0, sizeof(Control)));
  CHECK_CUDA(cudaMemcpy(in, host_in.data(), words * 4, cudaMemcpyHostToDevice));
  cudaEvent_t start, stop;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&stop));
  bool all_equal = true;
  for (int i = 0; i < shape_count; i++) {
    CHECK_CUDA(cudaMemset(out, 0, words * 4));
    shapes[i].kernel<<<blocks, kThreads>>>(in, out, sweeps, control);
    CHECK_CUDA(cudaGetLastError());
    CHECK_CUDA(cudaDeviceSynchronize());
    CHECK_CUDA(cudaMemcpy(i == 0 ? reference.data() : result.data(), out, words * 4, cudaMemcpyDeviceToHost));
    if (i > 0 && result != reference) {
      std::printf("%s: output differs from plain\n", shapes[i].name);
      all_equal = false;
    }
  }
  std::vector<std::vector<double>> ratios(shape_count);
  for (int round = 0; round < rounds; round++) {
    double base = 0;
    for (int i = 0; i < shape_count; i++) {
      std::vector<float> times;
      for (int launch = 0; launch < 5; launch++) {
        CHECK_CUDA(cudaEventRecord(start));
        shapes[i].kernel<<<blocks, kThreads>>>(in, out, sweeps, control);
        CHECK_CUDA(cudaEventRecord(stop));
        CHECK_CUDA(cudaEventSynchronize(stop));
        float ms = 0;
        CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
        times.push_back(ms);
      }
      std::sort(times.begin(), times.end());
      double median = times[2];
      if (i == 0)
        base = median;
      ratios[i].push_back(median / base);
      if (round == 0)
        std::printf("%s: %.3f ms (round 1)\n", shapes[i].name, median);
    }
  }
  std::printf("%s, %u blocks of %d threads, %u sweeps; ratio to plain, median (min..max) over %d rounds\n",
              prop.name, blocks, kThreads, sweeps, rounds);
  for (int i = 1; i < shape_count; i++) {
    std::vector<double> r = ratios[i];
    std::sort(r.begin(), r.end());
    std::printf("%-14s %.3f (%.3f..%.3f)\n", shapes[i].name, r[r.size() / 2], r.front(), r.back());
  }
  std::printf("outputs %s\n", all_equal ? "equal" : "DIFFER");
  return all_equal ? 0 : 1;
}
