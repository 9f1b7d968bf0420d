// intask_bench.cu: kernels whose CUDA blocks (tasks) are long, for in-task preemption (issue 8): yield points at
// the back-edge of CTA-uniform loops inside a task. Built three ways by bench/build_suite.sh: original (no plugin:
// writes the reference outputs and the baselines), preempt (plugin; in-task points on by default) and
// preempt_nointask (plugin, -mllvm -preempt-intask=0). Every result is integer arithmetic, so the builds must agree
// bit for bit. Prints one JSON line per mode.
//
// Usage: intask_bench check KERNEL N_EVICTIONS [REF_FILE]
//          original build: writes REF_FILE (default intask_KERNEL.ref); plugin build: launches the kernel again and
//          again, each launch evicted (preempt_evict(launch, NULL)) and resumed at random moments 0.2-3 ms apart
//          until N_EVICTIONS landed, and compares every launch's output with REF_FILE.
//        intask_bench latency KERNEL [M]    (plugin build: M=30 evictions at random moments; request returned ->
//                                            preempt_query says EVICTED, or DONE when the launch ended first;
//                                            with PREEMPT_TIME_EVICTIONS=1 also gpu_latency, each eviction on the
//                                            GPU's clock: preempt_get_eviction_time)
//        intask_bench time KERNEL           (median of 7 launches after 8 warm-ups, never evicted)
//        intask_bench long SECONDS READY_FILE STOP_FILE   (the persistent kernel with ~19 ms blocks, back to back)
//        intask_bench short TRIALS READY_FILE             (a short kernel on a high-priority stream, arriving at
//                                                          random moments; its turnaround)
//        intask_bench inproc TRIALS          (both in one process: the long kernel on a low-priority stream, the
//                                             short one on a high-priority stream; the plugin build evicts the long
//                                             launch when the short one arrives and resumes it after)
// KERNEL: stencil | gemm | persistent | solver | atomics | retile | retile128 (the last two at 256 and 128 threads a
// block, for the shared-memory liveness: checked by intask_check.sh, not timed). Environment: INTASK_SEED (random
// moments; printed), INTASK_GAP_MIN_US (shortest gap between evictions, also after a resume; default 200 us),
// INTASK_SCALE (multiplies every kernel's loop count, default 1), INTASK_LOOP_EXTRA (iterations added to the
// stencil's, the solver's, the atomics kernel's, the retile kernels' and the persistent kernel's hash loops, default
// 0), INTASK_LONG_MS (the long kernel's block length aimed at, default 19; calibrated by one timed launch) or
// INTASK_LONG_ITEMS (its work items per CTA, fixed).
#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#ifdef PREEMPT_API
#include "preempt.h"
#endif
#ifndef INTASK_BUILD
#define INTASK_BUILD "original"
#endif

#define CHECK_CUDA(call)                                                                                     \
  do {                                                                                                       \
    cudaError_t status_ = (call);                                                                            \
    if (status_ != cudaSuccess) {                                                                            \
      std::fprintf(stderr, "intask_bench: %s failed at line %d: %s\n", #call, __LINE__,                      \
                   cudaGetErrorString(status_));                                                             \
      std::exit(2);                                                                                          \
    }                                                                                                        \
  } while (0)

#ifdef PREEMPT_API
// Every preempt call but preempt_evict/preempt_resume on a finished launch must return PREEMPT_OK.
static bool preempt_ok(preempt_status status, const char *call, int line, bool finished_ok) {
  if (status == PREEMPT_OK || (finished_ok && status == PREEMPT_ERROR_FINISHED))
    return status == PREEMPT_OK;
  std::fprintf(stderr, "intask_bench: %s failed at line %d: status %d: %s\n", call, line, (int)status,
               preempt_last_error());
  std::exit(2);
}
#define CHECK_PREEMPT(call) preempt_ok((call), #call, __LINE__, false)
#define CHECK_PREEMPT_LIVE(call) preempt_ok((call), #call, __LINE__, true) // false: the launch had finished
#endif

using Clock = std::chrono::steady_clock;
static double since_us(Clock::time_point start) {
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count();
}

// ---------------------------------------------------------------------------------------------------------------
// Kernels. Loop trip counts depend only on arguments, blockIdx and constants (CTA-uniform). 256 threads a block.

constexpr int kThreads = 256;

// stencil: each block iterates `sweeps` sweeps of a 1D 3-point stencil over its own tile of 4 x 256 words in shared
// memory (double-buffered, periodic within the tile), a barrier per sweep.
constexpr int kStencilPer = 4, kStencilTile = kThreads * kStencilPer;
__global__ void __launch_bounds__(kThreads) intask_stencil(const unsigned *in, unsigned *out, unsigned sweeps) {
  __shared__ unsigned tile[2][kStencilTile];
  const unsigned base = blockIdx.x * kStencilTile;
  for (int k = 0; k < kStencilPer; k++)
    tile[0][threadIdx.x + k * kThreads] = in[base + threadIdx.x + k * kThreads];
  __syncthreads();
  for (unsigned s = 0; s < sweeps; s++) {
    const unsigned from = s & 1;
    for (int k = 0; k < kStencilPer; k++) {
      const unsigned i = threadIdx.x + k * kThreads;
      const unsigned left = tile[from][(i + kStencilTile - 1) % kStencilTile];
      const unsigned right = tile[from][(i + 1) % kStencilTile];
      const unsigned mid = tile[from][i];
      tile[from ^ 1][i] = (left + 2u * mid + right) ^ (mid >> 7) ^ s;
    }
    __syncthreads();
  }
  for (int k = 0; k < kStencilPer; k++)
    out[base + threadIdx.x + k * kThreads] = tile[sweeps & 1][threadIdx.x + k * kThreads];
}

// gemm: C (m x n) = A (m x k) * B (k x n), unsigned (wrapping) arithmetic; 64 x 64 tiles of C per block, 4 x 4 per
// thread, a K loop over 16-wide shared tiles with two barriers per step.
constexpr int kGemmTile = 64, kGemmK = 16;
__global__ void __launch_bounds__(kThreads) intask_gemm(const unsigned *a, const unsigned *b, unsigned *c,
                                                        unsigned n, unsigned k_total) {
  __shared__ unsigned as[kGemmK][kGemmTile];
  __shared__ unsigned bs[kGemmK][kGemmTile];
  const unsigned tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  const unsigned row0 = blockIdx.y * kGemmTile, col0 = blockIdx.x * kGemmTile;
  unsigned acc[4][4] = {};
  for (unsigned k0 = 0; k0 < k_total; k0 += kGemmK) {
    for (int l = 0; l < 4; l++) { // 1024 words of each tile, 4 per thread
      const unsigned e = threadIdx.x + l * kThreads;
      as[e % kGemmK][e / kGemmK] = a[(row0 + e / kGemmK) * k_total + k0 + e % kGemmK];
      bs[e / kGemmTile][e % kGemmTile] = b[(k0 + e / kGemmTile) * n + col0 + e % kGemmTile];
    }
    __syncthreads();
    for (int kk = 0; kk < kGemmK; kk++) {
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
  }
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 4; j++)
      c[(row0 + ty * 4 + i) * n + col0 + tx * 4 + j] = acc[i][j];
}

// persistent: one wave of CTAs; CTA b takes work items b, b + stride, ... < items (stride = the grid, an argument),
// each thread a hash chain of `steps` steps per item; no barrier. The output does not depend on the grid.
__device__ __host__ inline unsigned persistent_item(unsigned item, unsigned thread, unsigned steps) {
  unsigned value = item * 2654435761u + thread * 40503u + 1u;
  for (unsigned i = 0; i < steps; i++)
    value = value * 1664525u + (1013904223u ^ i);
  return value;
}
__global__ void __launch_bounds__(kThreads) intask_persistent(unsigned *out, unsigned items, unsigned stride,
                                                              unsigned steps) {
  for (unsigned item = blockIdx.x; item < items; item += stride)
    out[item * kThreads + threadIdx.x] = persistent_item(item, threadIdx.x, steps);
}

// solver: a Jacobi-style sweep over a per-block system of 1024 unknowns in shared memory (4 rows per thread,
// neighbours i-1 and i+1, a per-row divisor), `iterations` times with a barrier each, then a block reduction of the
// last step's change. Modular arithmetic: every iteration changes every value, so a lost or repeated one shows.
constexpr int kSolverPer = 4, kSolverN = kThreads * kSolverPer;
__global__ void __launch_bounds__(kThreads) intask_solver(const unsigned *rhs, unsigned *x_out, unsigned *residual,
                                                          unsigned iterations) {
  __shared__ unsigned x[2][kSolverN];
  __shared__ unsigned partial[kThreads];
  const unsigned base = blockIdx.x * kSolverN;
  unsigned b[kSolverPer], d[kSolverPer];
  for (int k = 0; k < kSolverPer; k++) {
    const unsigned i = threadIdx.x + k * kThreads;
    b[k] = rhs[base + i];
    d[k] = 3u + (b[k] % 13u);
    x[0][i] = b[k] >> 1;
  }
  __syncthreads();
  unsigned change = 0;
  for (unsigned it = 0; it < iterations; it++) {
    const unsigned from = it & 1;
    change = 0;
    for (int k = 0; k < kSolverPer; k++) {
      const unsigned i = threadIdx.x + k * kThreads;
      const unsigned old = x[from][i];
      const unsigned left = i > 0 ? x[from][i - 1] : 0u;
      const unsigned right = i + 1 < kSolverN ? x[from][i + 1] : 0u;
      const unsigned next = b[k] + 3u * left + 5u * right + old / d[k];
      x[from ^ 1][i] = next;
      change += next > old ? next - old : old - next;
    }
    __syncthreads();
  }
  partial[threadIdx.x] = change;
  __syncthreads();
  for (unsigned half = kThreads / 2; half > 0; half /= 2) {
    if (threadIdx.x < half)
      partial[threadIdx.x] += partial[threadIdx.x + half];
    __syncthreads();
  }
  for (int k = 0; k < kSolverPer; k++)
    x_out[base + threadIdx.x + k * kThreads] = x[iterations & 1][threadIdx.x + k * kThreads];
  if (threadIdx.x == 0)
    residual[blockIdx.x] = partial[0];
}

// atomics: each block runs `rounds` rounds of a hash chain per thread; every round each thread adds to one of 1024
// bins in shared memory (a shared atomic) and, one round in 16 on average, to one of 4096 bins in global memory (a
// global atomic, under a branch the threads disagree on); no barrier in the loop. Then the block writes its shared
// bins out. Sums wrap and do not depend on the order the atomics land in, so the builds agree bit for bit; an
// iteration lost or run twice on a resume changes a bin. (The CTA's context at its point: the shared bins and each
// thread's chain value.)
constexpr int kAtomicBins = 1024, kAtomicGlobalBins = 4096;
__global__ void __launch_bounds__(kThreads) intask_atomics(unsigned *block_bins, unsigned *global_bins,
                                                           unsigned rounds) {
  __shared__ unsigned bins[kAtomicBins];
  for (int k = 0; k < kAtomicBins / kThreads; k++)
    bins[threadIdx.x + k * kThreads] = 0;
  __syncthreads();
  unsigned value = blockIdx.x * 2654435761u + threadIdx.x * 40503u + 1u;
  for (unsigned r = 0; r < rounds; r++) {
    value = value * 1664525u + (1013904223u ^ r);
    atomicAdd(&bins[value >> 22], 1u + (value & 7u));
    if ((value & 15u) == 0)
      atomicAdd(&global_bins[(value >> 4) % kAtomicGlobalBins], value >> 12);
  }
  __syncthreads();
  for (int k = 0; k < kAtomicBins / kThreads; k++)
    block_bins[blockIdx.x * kAtomicBins + threadIdx.x + k * kThreads] = bins[threadIdx.x + k * kThreads];
}

// retile: each iteration the CTA writes its 1024-word tile again with addresses fixed for 256 threads (thread t
// writes words t, t + 256, t + 512 and t + 768), meets at a barrier, and each thread folds four words of the tile
// into its value. Launched at 256 threads (`retile`) the CTA writes the tile whole before reading it, so a context
// saved at the loop's point leaves it out (passes/SharedLiveness.cpp); at 128 (`retile128`) half of the tile keeps
// what the CTA wrote before the loop, read again every iteration, and a context has to hold it.
constexpr int kRetileWords = 1024;
__global__ void __launch_bounds__(kThreads) intask_retile(const unsigned *in, unsigned *out, unsigned iterations) {
  __shared__ unsigned tile[kRetileWords];
  const unsigned base = blockIdx.x * kRetileWords;
  for (unsigned e = threadIdx.x; e < kRetileWords; e += blockDim.x)
    tile[e] = in[base + e] ^ 0x5bd1e995u;
  __syncthreads();
  unsigned value = threadIdx.x;
  for (unsigned it = 0; it < iterations; it++) {
    for (int l = 0; l < 4; l++) {
      const unsigned e = threadIdx.x + l * kThreads;
      tile[e] = in[base + e] + it * 40503u;
    }
    __syncthreads();
    for (int k = 0; k < 4; k++)
      value = value * 1664525u + tile[(threadIdx.x * 7u + k * 257u + it) % kRetileWords];
    __syncthreads();
  }
  out[blockIdx.x * kThreads + threadIdx.x] = value;
}

// The high-priority arrival: 32 blocks, microseconds.
constexpr int kShortBlocks = 32, kShortN = kShortBlocks * kThreads;
__global__ void intask_short(unsigned *data) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  data[i] = data[i] * 3u + 1u;
}

// ---------------------------------------------------------------------------------------------------------------
// Problems: device buffers, the launch, and the output to compare.

static unsigned env_unsigned(const char *name, unsigned fallback) {
  const char *text = std::getenv(name);
  return text && *text ? (unsigned)std::strtoul(text, nullptr, 10) : fallback;
}

static void fill(std::vector<unsigned> &values, unsigned seed) {
  unsigned state = seed;
  for (auto &v : values) {
    state = state * 1664525u + 1013904223u;
    v = state ^ (state >> 13);
  }
}

static unsigned *to_device(const std::vector<unsigned> &values) {
  unsigned *device;
  CHECK_CUDA(cudaMalloc(&device, values.size() * sizeof(unsigned)));
  CHECK_CUDA(cudaMemcpy(device, values.data(), values.size() * sizeof(unsigned), cudaMemcpyHostToDevice));
  return device;
}

struct Problem {
  std::string kernel;
  dim3 grid{1}, block{kThreads};
  unsigned loop = 0;          // the in-task loop's trip count (sweeps, K, items per CTA, iterations)
  unsigned *in0 = nullptr, *in1 = nullptr;
  unsigned *out0 = nullptr, *out1 = nullptr;
  size_t out0_words = 0, out1_words = 0;
  unsigned items = 0, steps = 0, n = 0;  // persistent: items and chain steps; gemm: n
  int ctas_per_sm = 0, sms = 0;

  void launch(cudaStream_t stream) {
    if (kernel == "stencil")
      intask_stencil<<<grid, block, 0, stream>>>(in0, out0, loop);
    else if (kernel == "gemm")
      intask_gemm<<<grid, block, 0, stream>>>(in0, in1, out0, n, loop);
    else if (kernel == "persistent")
      intask_persistent<<<grid, block, 0, stream>>>(out0, items, grid.x, steps);
    else if (kernel == "solver")
      intask_solver<<<grid, block, 0, stream>>>(in0, out0, out1, loop);
    else if (kernel == "retile" || kernel == "retile128")
      intask_retile<<<grid, block, 0, stream>>>(in0, out0, loop);
    else
      intask_atomics<<<grid, block, 0, stream>>>(out0, out1, loop);
    CHECK_CUDA(cudaGetLastError());
  }
  void clear(cudaStream_t stream) {
    CHECK_CUDA(cudaMemsetAsync(out0, 0, out0_words * sizeof(unsigned), stream));
    if (out1)
      CHECK_CUDA(cudaMemsetAsync(out1, 0, out1_words * sizeof(unsigned), stream));
  }
  std::vector<unsigned> output() {
    std::vector<unsigned> host(out0_words + out1_words);
    CHECK_CUDA(cudaMemcpy(host.data(), out0, out0_words * sizeof(unsigned), cudaMemcpyDeviceToHost));
    if (out1)
      CHECK_CUDA(cudaMemcpy(host.data() + out0_words, out1, out1_words * sizeof(unsigned), cudaMemcpyDeviceToHost));
    return host;
  }
  unsigned blocks() const { return grid.x * grid.y; }
  void release() {
    for (unsigned *buffer : {in0, in1, out0, out1})
      if (buffer)
        CHECK_CUDA(cudaFree(buffer));
    in0 = in1 = out0 = out1 = nullptr;
  }
};

// Default sizes: blocks of 1-3 ms on an H100 at full occupancy (measured: intask_check.sh's "time" lines).
// `long_items` > 0: the persistent kernel with that many items per CTA (the turnaround runs' long kernel).
static Problem make_problem(const std::string &kernel, unsigned long_items = 0) {
  Problem p;
  p.kernel = kernel;
  const unsigned scale = std::max(1u, env_unsigned("INTASK_SCALE", 1));
  // Iterations added to the stencil's, the solver's and the atomics kernel's loops and the persistent kernel's
  // steps: a count that is not a multiple of a constant chunk (InTaskYield.cpp) runs the loop's tail copy too
  // (intask_check.sh's checks).
  const unsigned extra = env_unsigned("INTASK_LOOP_EXTRA", 0);
  CHECK_CUDA(cudaDeviceGetAttribute(&p.sms, cudaDevAttrMultiProcessorCount, 0));
  if (kernel == "stencil") {
    p.grid = dim3(2048);
    p.loop = 6000 * scale + extra;
    std::vector<unsigned> in((size_t)p.blocks() * kStencilTile);
    fill(in, 1);
    p.in0 = to_device(in);
    p.out0_words = in.size();
    CHECK_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&p.ctas_per_sm, intask_stencil, kThreads, 0));
  } else if (kernel == "gemm") {
    const unsigned m = 2048;
    p.n = 2048;
    p.loop = 4096 * scale; // K
    p.grid = dim3(p.n / kGemmTile, m / kGemmTile);
    std::vector<unsigned> a((size_t)m * p.loop), b((size_t)p.loop * p.n);
    fill(a, 2);
    fill(b, 3);
    p.in0 = to_device(a);
    p.in1 = to_device(b);
    p.out0_words = (size_t)m * p.n;
    CHECK_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&p.ctas_per_sm, intask_gemm, kThreads, 0));
  } else if (kernel == "persistent") {
    CHECK_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&p.ctas_per_sm, intask_persistent, kThreads, 0));
    if (p.ctas_per_sm < 1) {
      std::fprintf(stderr, "intask_bench: intask_persistent has occupancy 0\n");
      std::exit(2);
    }
    p.grid = dim3(p.sms * p.ctas_per_sm); // one wave
    // A fixed number of items (132 SMs x 8 CTAs x items per CTA), whatever the grid: the output is the same.
    const unsigned per_cta = long_items ? long_items : 16 * scale;
    p.items = 132 * 8 * per_cta;
    p.steps = 8192 + extra;
    p.loop = (p.items + p.grid.x - 1) / p.grid.x;
    p.out0_words = (size_t)p.items * kThreads;
  } else if (kernel == "solver") {
    p.grid = dim3(2048);
    p.loop = 2000 * scale + extra;
    std::vector<unsigned> rhs((size_t)p.blocks() * kSolverN);
    fill(rhs, 4);
    p.in0 = to_device(rhs);
    p.out0_words = rhs.size();
    p.out1_words = p.blocks();
    CHECK_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&p.ctas_per_sm, intask_solver, kThreads, 0));
  } else if (kernel == "retile" || kernel == "retile128") {
    p.grid = dim3(2048);
    p.block = dim3(kernel == "retile" ? kThreads : kThreads / 2);
    p.loop = 3000 * scale + extra;
    std::vector<unsigned> in((size_t)p.blocks() * kRetileWords);
    fill(in, 5);
    p.in0 = to_device(in);
    p.out0_words = (size_t)p.blocks() * kThreads;
    CHECK_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&p.ctas_per_sm, intask_retile, p.block.x, 0));
  } else if (kernel == "atomics") {
    p.grid = dim3(2048);
    p.loop = 20000 * scale + extra;
    p.out0_words = (size_t)p.blocks() * kAtomicBins;
    p.out1_words = kAtomicGlobalBins;
    CHECK_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&p.ctas_per_sm, intask_atomics, kThreads, 0));
  } else {
    std::fprintf(stderr, "intask_bench: unknown kernel '%s' (stencil, gemm, persistent, solver, atomics, retile, "
                 "retile128)\n",
                 kernel.c_str());
    std::exit(2);
  }
  CHECK_CUDA(cudaMalloc(&p.out0, p.out0_words * sizeof(unsigned)));
  if (p.out1_words)
    CHECK_CUDA(cudaMalloc(&p.out1, p.out1_words * sizeof(unsigned)));
  return p;
}

// ---------------------------------------------------------------------------------------------------------------
// Statistics and JSON.

static std::string gpu_name() {
  cudaDeviceProp prop;
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  return prop.name;
}

static std::string samples_json(const std::vector<double> &values) {
  std::string text = "[";
  char number[32];
  for (size_t i = 0; i < values.size(); i++) {
    std::snprintf(number, sizeof number, "%s%.1f", i ? ", " : "", values[i]);
    text += number;
  }
  return text + "]";
}

// median, p99 (nearest rank: the ceil(0.99 n)-th smallest), mean, min, max and the samples, in `unit`.
static std::string stats_json(const char *name, std::vector<double> values, const char *unit = "us") {
  std::vector<double> sorted = values;
  std::sort(sorted.begin(), sorted.end());
  char text[512];
  if (sorted.empty()) {
    std::snprintf(text, sizeof text, "\"%s\": {\"n\": 0}", name);
    return text;
  }
  const size_t n = sorted.size();
  const size_t rank = (size_t)std::ceil(0.99 * n);
  double mean = 0;
  for (double v : sorted)
    mean += v / n;
  std::snprintf(text, sizeof text,
                "\"%s\": {\"unit\": \"%s\", \"n\": %zu, \"median\": %.3f, \"p99\": %.3f, \"mean\": %.3f, "
                "\"min\": %.3f, \"max\": %.3f, \"samples\": ",
                name, unit, n, sorted[(n - 1) / 2], sorted[std::max<size_t>(rank, 1) - 1], mean, sorted.front(),
                sorted.back());
  return text + samples_json(values) + "}";
}

static std::string head_json(const char *mode, const Problem *p) {
  char text[512];
  if (p)
    std::snprintf(text, sizeof text,
                  "{\"mode\": \"%s\", \"kernel\": \"%s\", \"build\": \"%s\", \"gpu\": \"%s\", \"blocks\": %u, "
                  "\"threads\": %d, \"loop_count\": %u, \"ctas_per_sm\": %d, \"sms\": %d",
                  mode, p->kernel.c_str(), INTASK_BUILD, gpu_name().c_str(), p->blocks(),
                  (int)(p->block.x * p->block.y * p->block.z), p->loop,
                  p->ctas_per_sm, p->sms);
  else
    std::snprintf(text, sizeof text, "{\"mode\": \"%s\", \"build\": \"%s\", \"gpu\": \"%s\"", mode, INTASK_BUILD,
                  gpu_name().c_str());
  return text;
}

static unsigned seed_from_env() {
  const char *text = std::getenv("INTASK_SEED");
  if (text && *text)
    return (unsigned)std::strtoul(text, nullptr, 10);
  return std::random_device{}();
}

// ---------------------------------------------------------------------------------------------------------------
// Eviction at random moments (plugin build).

#ifdef PREEMPT_API
struct EvictionLog {
  int requests = 0;             // preempt_evict returned OK: the launch was running when asked
  int evicted = 0;              // of them, reached EVICTED (else the launch finished first: DONE)
  std::vector<double> latency;  // request returned -> EVICTED or DONE, us
  std::vector<double> since_resume; // for each request: us since the launch (re)started running (launch or resume)
  // For each request: the longest step of the host's wait, one preempt_query call and the loop around it, us. A
  // slow eviction with a long step spent that time on the host (the runtime's lock, the thread descheduled), not
  // waiting for the GPU.
  std::vector<double> longest_step;
  // PREEMPT_TIME_EVICTIONS=1 only: each eviction (EVICTED, not DONE) on the GPU's clock, us: from the runtime's event
  // after the eviction's words to the end of the launch's last grid (preempt_get_eviction_time).
  std::vector<double> gpu_latency;
};

// PREEMPT_TIME_EVICTIONS=1, as the runtime reads it once per process.
static bool timing_evictions() {
  static const bool timing = [] {
    const char *text = std::getenv("PREEMPT_TIME_EVICTIONS");
    return text && std::string(text) == "1";
  }();
  return timing;
}

// Evicts `launch` (every SM) at random moments `gap` apart until it finishes or `limit` requests landed; after each,
// waits for EVICTED (or DONE) and resumes. Exits on any error or an eviction longer than 10 s.
static void evict_until_done(preempt_launch_id launch, std::mt19937 &random, EvictionLog &log, int limit) {
  // INTASK_GAP_MIN_US (default 200): the shortest gap, also after a resume.
  const char *gap_text = std::getenv("INTASK_GAP_MIN_US");
  const int gap_min = gap_text && *gap_text ? std::max(1, std::min(2999, std::atoi(gap_text))) : 200;
  std::uniform_int_distribution<int> gap_us(gap_min, 3000);
  preempt_launch_state state = PREEMPT_LAUNCH_RUNNING;
  int landed = 0;
  auto running_since = Clock::now();
  while (landed < limit) {
    std::this_thread::sleep_for(std::chrono::microseconds(gap_us(random)));
    CHECK_PREEMPT(preempt_query(launch, &state));
    if (state == PREEMPT_LAUNCH_DONE)
      return;
    if (!CHECK_PREEMPT_LIVE(preempt_evict(launch, nullptr)))
      return; // finished meanwhile
    auto start = Clock::now();
    log.since_resume.push_back(std::chrono::duration<double, std::micro>(start - running_since).count());
    double longest_step = 0, step_start = 0;
    do {
      CHECK_PREEMPT(preempt_query(launch, &state));
      const double now_us = since_us(start);
      longest_step = std::max(longest_step, now_us - step_start);
      step_start = now_us;
      if (now_us > 10e6) {
        std::fprintf(stderr, "intask_bench: launch not evicted 10 s after the request (state %d)\n", (int)state);
        std::exit(2);
      }
    } while (state != PREEMPT_LAUNCH_EVICTED && state != PREEMPT_LAUNCH_DONE);
    log.latency.push_back(since_us(start));
    log.longest_step.push_back(longest_step);
    log.requests++;
    landed++;
    if (state == PREEMPT_LAUNCH_DONE)
      return;
    log.evicted++;
    if (timing_evictions()) {
      // NOT_READY only while the control stream has not reached the request's event (the grid ended by itself
      // first): ask again, for 1 s at most.
      double gpu_us = 0;
      preempt_status timed = PREEMPT_ERROR_NOT_READY;
      for (auto asked = Clock::now(); timed == PREEMPT_ERROR_NOT_READY && since_us(asked) < 1e6;)
        timed = preempt_get_eviction_time(launch, &gpu_us);
      CHECK_PREEMPT(timed);
      log.gpu_latency.push_back(gpu_us);
    }
    CHECK_PREEMPT_LIVE(preempt_resume(launch));
    running_since = Clock::now();
  }
}

// The launch just made on this thread; 0 (one-wave launch run as written) is an error: nothing to evict.
static preempt_launch_id last_launch_or_exit(const Problem &p) {
  preempt_launch_id launch = preempt_last_launch();
  if (!launch) {
    std::fprintf(stderr,
                 "intask_bench: %s's launch is not evictable (a one-wave launch runs as written: set "
                 "PREEMPT_ONE_WAVE=persistent)\n",
                 p.kernel.c_str());
    std::exit(2);
  }
  return launch;
}
#endif

// ---------------------------------------------------------------------------------------------------------------
// Modes.

static int mode_check(const std::string &kernel, int wanted, std::string ref_file) {
  if (ref_file.empty())
    ref_file = "intask_" + kernel + ".ref";
  Problem p = make_problem(kernel);
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
#ifndef PREEMPT_API
  (void)wanted;
  p.clear(stream);
  p.launch(stream);
  CHECK_CUDA(cudaStreamSynchronize(stream));
  std::vector<unsigned> result = p.output();
  FILE *file = std::fopen(ref_file.c_str(), "wb");
  if (!file || std::fwrite(result.data(), sizeof(unsigned), result.size(), file) != result.size() ||
      std::fclose(file) != 0) {
    std::perror(ref_file.c_str());
    return 2;
  }
  std::printf("%s, \"reference\": \"%s\", \"bytes\": %zu}\n", head_json("check", &p).c_str(), ref_file.c_str(),
              result.size() * sizeof(unsigned));
  return 0;
#else
  std::vector<unsigned> reference(p.out0_words + p.out1_words);
  FILE *file = std::fopen(ref_file.c_str(), "rb");
  if (!file || std::fread(reference.data(), sizeof(unsigned), reference.size(), file) != reference.size()) {
    std::fprintf(stderr, "intask_bench: cannot read %zu bytes of %s (run the original build's check first)\n",
                 reference.size() * sizeof(unsigned), ref_file.c_str());
    return 2;
  }
  std::fclose(file);
  const unsigned seed = seed_from_env();
  std::mt19937 random(seed);
  EvictionLog log;
  long long mismatches = 0, first_mismatch = -1;
  int launches = 0;
  std::vector<int> per_launch;
  auto start = Clock::now();
  // Launches until `wanted` evictions landed (each launch evicted as often as it lasts), at most 100 s.
  while (log.requests < wanted && since_us(start) < 100e6) {
    p.clear(stream);
    p.launch(stream);
    launches++;
    preempt_launch_id launch = last_launch_or_exit(p);
    const int before = log.requests;
    evict_until_done(launch, random, log, wanted - log.requests);
    per_launch.push_back(log.requests - before);
    CHECK_CUDA(cudaStreamSynchronize(stream));
    std::vector<unsigned> result = p.output();
    for (size_t i = 0; i < result.size(); i++)
      if (result[i] != reference[i]) {
        if (first_mismatch < 0)
          first_mismatch = (long long)i;
        mismatches++;
      }
  }
  std::printf("%s, \"seed\": %u, \"launches\": %d, \"evictions\": %d, \"evicted\": %d, \"wanted\": %d, "
              "\"max_evictions_per_launch\": %d, \"mismatches\": %lld, \"first_mismatch_word\": %lld, "
              "\"words_per_launch\": %zu, \"intask_env\": \"%s\"}\n",
              head_json("check", &p).c_str(), seed, launches, log.requests, log.evicted, wanted,
              per_launch.empty() ? 0 : *std::max_element(per_launch.begin(), per_launch.end()), mismatches,
              first_mismatch, reference.size(), std::getenv("PREEMPT_INTASK") ? std::getenv("PREEMPT_INTASK") : "");
  return mismatches == 0 && log.requests >= wanted ? 0 : 1;
#endif
}

static int mode_latency(const std::string &kernel, int wanted) {
#ifndef PREEMPT_API
  (void)kernel;
  (void)wanted;
  std::fprintf(stderr, "intask_bench: latency needs the plugin build\n");
  return 2;
#else
  Problem p = make_problem(kernel);
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  p.launch(stream); // warm-up: module, occupancy, the runtime's task-length measurement
  CHECK_CUDA(cudaStreamSynchronize(stream));
  p.launch(stream);
  CHECK_CUDA(cudaStreamSynchronize(stream));
  const unsigned seed = seed_from_env();
  std::mt19937 random(seed);
  EvictionLog log;
  int launches = 0;
  auto start = Clock::now();
  while (log.requests < wanted && since_us(start) < 100e6) {
    p.launch(stream);
    launches++;
    evict_until_done(last_launch_or_exit(p), random, log, wanted - log.requests);
    CHECK_CUDA(cudaStreamSynchronize(stream));
  }
  // since_resume and longest_step: unsorted, in request order like latency's samples (do slow evictions follow a
  // resume closely? did the host spend them?).
  std::printf("%s, \"seed\": %u, \"launches\": %d, \"evictions\": %d, \"evicted\": %d, \"done_first\": %d, "
              "\"intask_env\": \"%s\", %s, %s, \"since_resume_us\": %s, \"longest_step_us\": %s}\n",
              head_json("latency", &p).c_str(), seed, launches, log.requests, log.evicted,
              log.requests - log.evicted, std::getenv("PREEMPT_INTASK") ? std::getenv("PREEMPT_INTASK") : "",
              stats_json("latency", log.latency).c_str(), stats_json("gpu_latency", log.gpu_latency).c_str(),
              samples_json(log.since_resume).c_str(),
              samples_json(log.longest_step).c_str());
  return log.requests >= wanted ? 0 : 1;
#endif
}

static int mode_time(const std::string &kernel) {
  Problem p = make_problem(kernel);
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaEvent_t begin, end;
  CHECK_CUDA(cudaEventCreate(&begin));
  CHECK_CUDA(cudaEventCreate(&end));
  // The runtime measures task length on the first two launches, then times each in-task shape twice where the
  // kernel has two (docs/intask.md "Two shapes"): seven launches, each read once it has ended, so eight warm-ups.
  for (int warm = 0; warm < 8; warm++) {
    p.launch(stream);
    CHECK_CUDA(cudaStreamSynchronize(stream));
  }
  std::vector<double> ms;
  for (int r = 0; r < 7; r++) {
    CHECK_CUDA(cudaEventRecord(begin, stream));
    p.launch(stream);
    CHECK_CUDA(cudaEventRecord(end, stream));
    CHECK_CUDA(cudaEventSynchronize(end));
    float elapsed;
    CHECK_CUDA(cudaEventElapsedTime(&elapsed, begin, end));
    ms.push_back(elapsed);
  }
  std::vector<double> sorted = ms;
  std::sort(sorted.begin(), sorted.end());
  const unsigned slots = (unsigned)std::max(1, p.ctas_per_sm * p.sms);
  const unsigned waves = (p.blocks() + slots - 1) / slots;
  std::printf("%s, \"waves\": %u, \"block_ms_estimate\": %.3f, \"intask_env\": \"%s\", %s}\n",
              head_json("time", &p).c_str(), waves, sorted[3] / waves,
              std::getenv("PREEMPT_INTASK") ? std::getenv("PREEMPT_INTASK") : "", stats_json("time", ms, "ms").c_str());
  return 0;
}

// The long kernel of the turnaround runs: the persistent kernel with INTASK_LONG_ITEMS items per CTA, or, by default,
// as many as make its blocks (one wave: its launch) last INTASK_LONG_MS (default 19) ms, from one timed launch of 16.
static Problem long_problem(cudaStream_t stream) {
  unsigned items = env_unsigned("INTASK_LONG_ITEMS", 0);
  if (!items) {
    Problem probe = make_problem("persistent", 16);
    cudaEvent_t begin, end;
    CHECK_CUDA(cudaEventCreate(&begin));
    CHECK_CUDA(cudaEventCreate(&end));
    probe.launch(stream); // warm-up
    CHECK_CUDA(cudaEventRecord(begin, stream));
    probe.launch(stream);
    CHECK_CUDA(cudaEventRecord(end, stream));
    CHECK_CUDA(cudaEventSynchronize(end));
    float ms;
    CHECK_CUDA(cudaEventElapsedTime(&ms, begin, end));
    items = std::max(1u, (unsigned)std::lround(16.0 * env_unsigned("INTASK_LONG_MS", 19) / std::max(ms, 0.01f)));
    probe.release();
    CHECK_CUDA(cudaEventDestroy(begin));
    CHECK_CUDA(cudaEventDestroy(end));
  }
  return make_problem("persistent", items);
}

static bool file_exists(const char *path) {
  struct stat info;
  return path && stat(path, &info) == 0;
}

// The long side of a cross-process pair: the persistent kernel with long blocks, back to back.
static int mode_long(double seconds, const char *ready_file, const char *stop_file) {
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  Problem p = long_problem(stream);
  p.launch(stream);
  CHECK_CUDA(cudaStreamSynchronize(stream));
  FILE *ready = std::fopen(ready_file, "w");
  if (!ready) {
    std::perror(ready_file);
    return 2;
  }
  std::fclose(ready);
  std::vector<double> durations;
  auto start = Clock::now();
  while (since_us(start) < seconds * 1e6 && !file_exists(stop_file)) {
    auto launch_start = Clock::now();
    p.launch(stream);
    CHECK_CUDA(cudaStreamSynchronize(stream));
    durations.push_back(since_us(launch_start) / 1000);
  }
  std::vector<unsigned> result = p.output(); // every launch writes the same values: sample some items
  unsigned wrong = 0;
  for (unsigned item = 0; item < p.items; item += 997)
    for (unsigned t = 0; t < kThreads; t += 51)
      wrong += result[(size_t)item * kThreads + t] != persistent_item(item, t, p.steps);
  std::printf("%s, \"role\": \"long\", \"items_per_cta\": %u, \"wrong_sampled\": %u, %s}\n",
              head_json("long", &p).c_str(), p.loop, wrong, stats_json("launch", durations, "ms").c_str());
  return wrong ? 1 : 0;
}

// The short side: launches on a high-priority stream at random moments, timed launch -> stream done.
static int mode_short(int trials, const char *ready_file) {
  unsigned *data;
  CHECK_CUDA(cudaMalloc(&data, kShortN * sizeof(unsigned)));
  CHECK_CUDA(cudaMemset(data, 0, kShortN * sizeof(unsigned)));
  int lowest, highest;
  CHECK_CUDA(cudaDeviceGetStreamPriorityRange(&lowest, &highest));
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreateWithPriority(&stream, cudaStreamNonBlocking, highest));
  int launches = 0;
  for (; launches < 3; launches++)
    intask_short<<<kShortBlocks, kThreads, 0, stream>>>(data);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaStreamSynchronize(stream));
  auto waiting = Clock::now();
  while (ready_file && !file_exists(ready_file)) {
    if (since_us(waiting) > 90e6) {
      std::fprintf(stderr, "intask_bench: %s never appeared\n", ready_file);
      return 2;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  const unsigned seed = seed_from_env();
  std::mt19937 random(seed);
  std::uniform_int_distribution<int> delay_us(2000, 20000); // random moments of the ~19 ms launches
  std::vector<double> turnaround;
  for (int t = 0; t < trials; t++, launches++) {
    std::this_thread::sleep_for(std::chrono::microseconds(delay_us(random)));
    auto start = Clock::now();
    intask_short<<<kShortBlocks, kThreads, 0, stream>>>(data);
    CHECK_CUDA(cudaGetLastError());
    CHECK_CUDA(cudaStreamSynchronize(stream));
    turnaround.push_back(since_us(start));
  }
  std::vector<unsigned> result(kShortN);
  CHECK_CUDA(cudaMemcpy(result.data(), data, kShortN * sizeof(unsigned), cudaMemcpyDeviceToHost));
  unsigned expected = 0;
  for (int k = 0; k < launches; k++)
    expected = expected * 3u + 1u;
  int wrong = 0;
  for (unsigned v : result)
    wrong += v != expected;
  std::printf("%s, \"role\": \"short\", \"seed\": %u, \"launches\": %d, \"wrong\": %d, %s}\n",
              head_json("short", nullptr).c_str(), seed, launches, wrong, stats_json("turnaround", turnaround).c_str());
  return wrong ? 1 : 0;
}

// Both in one process: the long kernel on a low-priority stream, launched afresh whenever it has finished; the short
// one arrives at random moments on a high-priority stream. Plugin build: the long launch is evicted first, and
// resumed once the short one is done.
static int mode_inproc(int trials) {
  unsigned *data;
  CHECK_CUDA(cudaMalloc(&data, kShortN * sizeof(unsigned)));
  CHECK_CUDA(cudaMemset(data, 0, kShortN * sizeof(unsigned)));
  int lowest, highest;
  CHECK_CUDA(cudaDeviceGetStreamPriorityRange(&lowest, &highest));
  cudaStream_t long_stream, short_stream;
  CHECK_CUDA(cudaStreamCreateWithPriority(&long_stream, cudaStreamNonBlocking, lowest));
  CHECK_CUDA(cudaStreamCreateWithPriority(&short_stream, cudaStreamNonBlocking, highest));
  Problem p = long_problem(long_stream);
  cudaEvent_t long_done;
  CHECK_CUDA(cudaEventCreateWithFlags(&long_done, cudaEventDisableTiming));
  p.launch(long_stream);
  intask_short<<<kShortBlocks, kThreads, 0, short_stream>>>(data);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaDeviceSynchronize());
  int short_launches = 1, long_launches = 1;
  const unsigned seed = seed_from_env();
  std::mt19937 random(seed);
  std::uniform_int_distribution<int> delay_us(2000, 15000);
  std::vector<double> turnaround;
  for (int t = 0; t < trials; t++) {
    // A fresh long launch each time: the arrival lands 2-15 ms into it.
    p.launch(long_stream);
    long_launches++;
    CHECK_CUDA(cudaEventRecord(long_done, long_stream));
#ifdef PREEMPT_API
    preempt_launch_id launch = last_launch_or_exit(p);
#endif
    std::this_thread::sleep_for(std::chrono::microseconds(delay_us(random)));
    auto start = Clock::now();
#ifdef PREEMPT_API
    const bool evicting = CHECK_PREEMPT_LIVE(preempt_evict(launch, nullptr));
#endif
    intask_short<<<kShortBlocks, kThreads, 0, short_stream>>>(data);
    CHECK_CUDA(cudaGetLastError());
    short_launches++;
    CHECK_CUDA(cudaStreamSynchronize(short_stream));
    turnaround.push_back(since_us(start));
#ifdef PREEMPT_API
    if (evicting) {
      preempt_launch_state state;
      do // resume only once evicted (or done): a resume before EVICTED would relaunch nothing yet
        CHECK_PREEMPT(preempt_query(launch, &state));
      while (state == PREEMPT_LAUNCH_EVICTING);
      CHECK_PREEMPT_LIVE(preempt_resume(launch));
    }
#endif
    CHECK_CUDA(cudaEventSynchronize(long_done));
  }
  std::vector<unsigned> result(kShortN);
  CHECK_CUDA(cudaMemcpy(result.data(), data, kShortN * sizeof(unsigned), cudaMemcpyDeviceToHost));
  unsigned expected = 0;
  for (int k = 0; k < short_launches; k++)
    expected = expected * 3u + 1u;
  int wrong = 0;
  for (unsigned v : result)
    wrong += v != expected;
  std::vector<unsigned> long_result = p.output();
  for (unsigned item = 0; item < p.items; item += 997)
    for (unsigned th = 0; th < kThreads; th += 51)
      wrong += long_result[(size_t)item * kThreads + th] != persistent_item(item, th, p.steps);
  std::printf("%s, \"seed\": %u, \"long_launches\": %d, \"wrong\": %d, \"intask_env\": \"%s\", %s}\n",
              head_json("inproc", &p).c_str(), seed, long_launches, wrong,
              std::getenv("PREEMPT_INTASK") ? std::getenv("PREEMPT_INTASK") : "",
              stats_json("turnaround", turnaround).c_str());
  return wrong ? 1 : 0;
}

int main(int argc, char **argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "check" && (argc == 4 || argc == 5))
    return mode_check(argv[2], std::atoi(argv[3]), argc == 5 ? argv[4] : "");
  if (mode == "latency" && (argc == 3 || argc == 4))
    return mode_latency(argv[2], argc == 4 ? std::atoi(argv[3]) : 30);
  if (mode == "time" && argc == 3)
    return mode_time(argv[2]);
  if (mode == "long" && argc == 5)
    return mode_long(std::atof(argv[2]), argv[3], argv[4]);
  if (mode == "short" && argc == 4)
    return mode_short(std::atoi(argv[2]), argv[3]);
  if (mode == "inproc" && argc == 3)
    return mode_inproc(std::atoi(argv[2]));
  std::fprintf(stderr, "usage: intask_bench check KERNEL N_EVICTIONS [REF_FILE] | latency KERNEL [M] | time KERNEL |\n"
                       "       long SECONDS READY_FILE STOP_FILE | short TRIALS READY_FILE | inproc TRIALS\n"
                       "KERNEL: stencil | gemm | persistent | solver | atomics | retile | retile128\n");
  return 2;
}
