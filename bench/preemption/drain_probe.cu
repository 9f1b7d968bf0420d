// drain_probe.cu: would a "drain form" (the original grid plus an entry check) preempt at lower cost than
// persistent threads? Overhead, eviction latency and correctness on the suite's worst four programs.
// Issue 3 (overhead goal <= 3% worst); design notes and limits: bench/preemption/drain_probe.md.
//
// Build (from the repository root; bench/build_suite.sh also builds it, into build/bench/original/):
//   /usr/local/cuda/bin/nvcc -O3 -arch=sm_90 -std=c++17 bench/preemption/drain_probe.cu -o build-drain/drain_probe
// Run on the GPU machine (build-drain/ carried; expected 15-30 s on an H100, --quick about 10 s; a watchdog
// ends it at 75 s with what it has printed):
//   build-drain/drain_probe --detail "$OUT/drain_probe_evictions.jsonl" | tee "$OUT/drain_probe.txt";
//   echo "exit=${PIPESTATUS[0]}"
// stdout: JSON lines (one per form and program, one per program and evicted form), then a table and a
// closing "RESULT:" line; stderr: progress lines and any failed check.
// Options: --quick (5 runs, fewer evictions), --runs N, --only NAME, --detail FILE (one JSON line per
// eviction and per checked sequence), --deadline S (watchdog, default 75 s), --seed N.
// Exit status: 0 all checks passed; 1 usage; 2 CUDA error; 3 an output or bookkeeping check failed;
// 4 an eviction protocol error (a stream never held or never finished); 5 the watchdog fired.
//
// What it does, per program (transpose, reduction, pipeline, float_atomics: the suite's kernels, sizes and
// launch sequences, bench/suite/*.cu), no preempt runtime or plugin involved:
//  1. Overhead, never evicted. Every kernel of the program in one form at a time: the original, and the
//     original grid with an entry check of the block's SM's yield word (one word per %smid, 128 bytes apart,
//     read with ld.relaxed.gpu): every thread reads + __syncthreads_or (all_or); every thread reads and
//     decides alone (all_nobar, cost only: the warps of a block may decide differently); thread 0 reads +
//     shared flag + __syncthreads (t0_bar); lane 0 of each warp reads + __shfl_sync (warp_shfl, cost only
//     for kernels with barriers); "fused" (kernels with barriers: every thread reads at entry and the body's
//     first __syncthreads becomes __syncthreads_or, so no barrier is added and the read overlaps the loads
//     before it; barrier-free kernels: warp_shfl with one record per warp, which is safe there); fused plus
//     the stream order an eviction needs (an untimed event and a cuStreamWaitValue32 after each launch:
//     fused_ordered), and that plus the globaltimer stamps the eviction test reads (fused_ordered_stamped).
//     CUDA events around the program's whole launch sequence, as the suite's time_reps(); median of --runs
//     runs per form, the forms interleaved run by run (rotating order) to cancel drift; ratio = form / original.
//     Each form's output is compared with the original's (bit for bit; float_atomics within 1e-5, its float
//     atomics vary run to run), and the original's with a CPU reference like the suite's.
//  2. Eviction and resumption (fused and t0_bar). The sequence is enqueued with an untimed event and a
//     wait for the program's "evicting" word to be 0 after each launch. At random moments the host sets
//     "evicting" and the SM words (every SM, or a random half: spatial) from an urgent stream, by a
//     cudaMemcpyAsync of the word image or by cuStreamBatchMemOp writes, alternately. Blocks in flight
//     finish; later blocks find their SM's word set, set their bit in the launch's bitmap (atomicOr, one
//     thread) and return. The stream holds at the wait behind the evicted launch. Latency = host clock from
//     the request's submission until the host sees the evicted launch's event (median/p99 over the
//     evictions), and on the device, first skip to last block end (%globaltimer). Resumption: the host reads
//     the bitmap, lists the undone blocks (undone_units(), self-tested at start), launches one CTA per undone
//     unit running the same body with that index, clears the words and then "evicting" (stream order). After
//     each sequence: the output equals the uninterrupted original's, and every launch's bitmap is empty
//     unless it was resumed, and then unchanged since.
#include <cuda.h>
#include <cuda_runtime.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

namespace {

enum ExitCode { kExitOk = 0, kExitUsage = 1, kExitCuda = 2, kExitMismatch = 3, kExitProtocol = 4, kExitWatchdog = 5 };

// Exits at once (no CUDA teardown: a stream may be held by a wait).
[[noreturn]] __attribute__((format(printf, 2, 3))) void die(int code, const char* fmt, ...) {
  fflush(stdout);
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "drain_probe: FATAL: ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
  fflush(stderr);
  _exit(code);
}

#define CK(call)                                                                                            \
  do {                                                                                                      \
    cudaError_t ck_ = (call);                                                                               \
    if (ck_ != cudaSuccess)                                                                                 \
      die(kExitCuda, "%s at line %d: %s (%s)", #call, __LINE__, cudaGetErrorString(ck_), cudaGetErrorName(ck_)); \
  } while (0)
#define CKD(call)                                                             \
  do {                                                                        \
    CUresult ckd_ = (call);                                                   \
    if (ckd_ != CUDA_SUCCESS) die(kExitCuda, "%s at line %d: CUresult %d", #call, __LINE__, (int)ckd_); \
  } while (0)
// The thread's last error, less cudaErrorNotReady: cudaEventQuery answers that while polling, and it is not
// an error (whether the runtime records it as the last error is not documented either way).
#define LAUNCHED()                                                                                           \
  do {                                                                                                       \
    cudaError_t le_ = cudaGetLastError();                                                                    \
    if (le_ != cudaSuccess && le_ != cudaErrorNotReady)                                                      \
      die(kExitCuda, "last error at line %d: %s (%s)", __LINE__, cudaGetErrorString(le_), cudaGetErrorName(le_)); \
  } while (0)

using Clock = std::chrono::steady_clock;
double us_since(Clock::time_point t) { return std::chrono::duration<double, std::micro>(Clock::now() - t).count(); }

inline unsigned div_up(size_t a, size_t b) { return static_cast<unsigned>((a + b - 1) / b); }

// The suite's generator (bench/suite/common.h), so inputs are the suite's.
struct Rng {
  uint64_t state;
  explicit Rng(uint64_t seed) : state(seed) {}
  uint64_t next_u64() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  uint32_t next_u32() { return static_cast<uint32_t>(next_u64() >> 32); }
  float unit() { return static_cast<float>(next_u32() >> 8) * (1.0f / 16777216.0f); }
};

// ---------------------------------------------------------------------------------------------------------
// Bitmap of undone units -> list of unit indices (the host half of resumption).
// A launch's bitmap has one bit per unit (a block, or a warp of a block for barrier-free kernels in the
// warp-granular forms), bit u in word u / 32 at position u % 32, and `words` words in all (the per-launch
// stride, at least ceil(units / 32)). Appends every set bit's index to `out` in increasing order. Returns
// false, and sets `why`, if a bit at or beyond `units` is set: no block may record an index it does not have.
bool undone_units(const uint32_t* bitmap, size_t words, unsigned units, std::vector<unsigned>& out, std::string* why) {
  out.clear();
  for (size_t w = 0; w < words; ++w) {
    uint32_t bits = bitmap[w];
    while (bits) {
      const unsigned bit = static_cast<unsigned>(__builtin_ctz(bits));
      bits &= bits - 1;
      const uint64_t unit = static_cast<uint64_t>(w) * 32 + bit;
      if (unit >= units) {
        if (why) *why = "bit " + std::to_string(unit) + " set, beyond the launch's " + std::to_string(units) + " units";
        return false;
      }
      out.push_back(static_cast<unsigned>(unit));
    }
  }
  return true;
}

// Checks undone_units against a plain per-bit loop on fixed and random bitmaps. Returns the number of failures.
int selftest_undone_units() {
  int failures = 0;
  auto expect = [&](const std::vector<uint32_t>& bm, unsigned units, bool ok, const std::vector<unsigned>& want,
                    const char* what) {
    std::vector<unsigned> got;
    bool r = undone_units(bm.data(), bm.size(), units, got, nullptr);
    if (r != ok || (ok && got != want)) {
      ++failures;
      fprintf(stderr, "drain_probe: selftest '%s' failed\n", what);
    }
  };
  expect({0, 0, 0}, 70, true, {}, "empty");
  expect({1u, 0, 0}, 70, true, {0}, "first");
  expect({0x80000000u, 1u, 0}, 70, true, {31, 32}, "word boundary");
  expect({0, 0, 1u << 5}, 70, true, {69}, "last unit");
  expect({0, 0, 1u << 6}, 70, false, {}, "one past the last unit");
  expect({0, 0, 0, 1u}, 70, false, {}, "bit in a padding word");
  {
    std::vector<uint32_t> all(3, 0xffffffffu);
    all[2] = (1u << 6) - 1;  // units 64..69
    std::vector<unsigned> want(70);
    for (unsigned i = 0; i < 70; ++i) want[i] = i;
    expect(all, 70, true, want, "all 70");
  }
  std::mt19937_64 gen(12345);
  for (int trial = 0; trial < 200; ++trial) {
    const unsigned units = 1 + static_cast<unsigned>(gen() % 5000);
    const size_t words = (units + 31) / 32 + gen() % 3;
    std::vector<uint32_t> bm(words, 0);
    std::vector<unsigned> want;
    const unsigned density = static_cast<unsigned>(gen() % 101);  // percent
    for (unsigned u = 0; u < units; ++u)
      if (gen() % 100 < density) {
        bm[u / 32] |= 1u << (u % 32);
        want.push_back(u);
      }
    expect(bm, units, true, want, "random");
  }
  return failures;
}

// ---------------------------------------------------------------------------------------------------------
// Device side: the gate every drain form puts in front of (or into) the original body.

constexpr unsigned kWordStride = 32;   // uint32 per 128-byte line: one yield word per SM id, each its own line
constexpr unsigned kStampStride = 16;  // uint64 per 128-byte line
constexpr unsigned kWarpsPerBlock = 8; // every barrier-free kernel here runs blocks of 256 threads
// Word and stamp arrays are allocated for this many SM ids (zeroed), whatever %nsmid says, so that an SM id
// beyond the measured range reads a clear word and stamps into padding instead of out of bounds.
constexpr unsigned kMaxSlots = 4096;

enum Mode : int {
  kOriginal = 0,  // the suite's kernel as written
  kAllOr,         // every thread reads its SM's word; __syncthreads_or decides for the block
  kAllNoBar,      // every thread reads and decides alone (cost only: warps of a block may disagree)
  kT0Bar,         // thread 0 reads; shared flag; __syncthreads
  kWarpShfl,      // lane 0 reads; __shfl_sync; each warp decides (safe only where warps never meet)
  kFused,         // barrier kernels: read at entry, decide at the body's first barrier; others: kWarpShfl
  kResumeBlock,   // resumption: CTA i runs the block list[i], no check
  kResumeWarp,    // resumption of warp units: CTA i (32 threads) runs warp list[i] % 8 of block list[i] / 8
};

struct Drain {
  const unsigned* words;            // yield words, word of SM s at s * kWordStride
  unsigned* bitmap;                 // this launch's undone units
  const unsigned* list;             // resumption: the units to run
  unsigned long long* skip_min;     // stamps per SM id (at s * kStampStride): first skip,
  unsigned long long* skip_max;     //   last skip,
  unsigned long long* end_max;      //   last block (or warp) end, skips included
  unsigned grid_x;                  // the original grid's x extent (2D block index from a linear one)
};

__device__ __forceinline__ unsigned sm_id() {
  unsigned s;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(s));
  return s;
}
__device__ __forceinline__ unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
__device__ __forceinline__ unsigned load_relaxed_gpu(const unsigned* p) {
  unsigned v;
  asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p));
  return v;
}
__device__ __forceinline__ unsigned sm_word(const Drain& d) { return load_relaxed_gpu(d.words + sm_id() * kWordStride); }

template <bool S>
__device__ __forceinline__ void record_skip(const Drain& d, unsigned unit) {
  atomicOr(d.bitmap + (unit >> 5), 1u << (unit & 31u));
  if constexpr (S) {
    const unsigned s = sm_id() * kStampStride;
    const unsigned long long t = global_ns();
    atomicMin(d.skip_min + s, t);
    atomicMax(d.skip_max + s, t);
    atomicMax(d.end_max + s, t);
  }
}

// The block's (or, for kResumeWarp, the warp unit's) coordinates: linear block index, thread index within the
// original block, the original block's size.
template <int M>
__device__ __forceinline__ void unit_coords(const Drain& d, unsigned& block, unsigned& tid, unsigned& bdim) {
  if constexpr (M == kResumeWarp) {
    const unsigned unit = d.list[blockIdx.x];
    block = unit / kWarpsPerBlock;
    tid = (unit % kWarpsPerBlock) * 32u + threadIdx.x;
    bdim = kWarpsPerBlock * 32u;
  } else if constexpr (M == kResumeBlock) {
    block = d.list[blockIdx.x];
    tid = threadIdx.x;
    bdim = blockDim.x;
  } else {
    block = blockIdx.x;
    tid = threadIdx.x;
    bdim = blockDim.x;
  }
}

// At the block's entry. Returns true if the calling thread must return at once (its block or warp skipped and
// was recorded). For kFused in a kernel with barriers it only starts the read (`pending`), which
// gate_first_barrier() decides on. `tid` is the thread's linear index in the block.
template <int M, bool kBarrierKernel, bool S>
__device__ __forceinline__ bool gate_entry(const Drain& d, unsigned* sflag, unsigned block, unsigned tid,
                                           unsigned& pending) {
  if constexpr (M == kAllOr) {
    if (__syncthreads_or(static_cast<int>(sm_word(d) != 0))) {
      if (tid == 0) record_skip<S>(d, block);
      return true;
    }
  } else if constexpr (M == kAllNoBar) {
    if (sm_word(d)) {
      if ((tid & 31u) == 0) record_skip<S>(d, block);
      return true;
    }
  } else if constexpr (M == kT0Bar) {
    if (tid == 0) *sflag = sm_word(d);
    __syncthreads();
    if (*sflag) {
      if (tid == 0) record_skip<S>(d, block);
      return true;
    }
  } else if constexpr (M == kWarpShfl || (M == kFused && !kBarrierKernel)) {
    unsigned w = 0;
    if ((tid & 31u) == 0) w = sm_word(d);
    w = __shfl_sync(0xffffffffu, w, 0);
    if (w) {
      if ((tid & 31u) == 0) record_skip<S>(d, kBarrierKernel ? block : block * kWarpsPerBlock + tid / 32u);
      return true;
    }
  } else if constexpr (M == kFused) {
    pending = sm_word(d);
  }
  return false;
}

// Replaces the body's first __syncthreads(). Only kFused decides here; nothing before that barrier in these
// kernels writes global memory (loads, shared stores), so a block that skips here has done nothing visible.
template <int M, bool S>
__device__ __forceinline__ bool gate_first_barrier(const Drain& d, unsigned block, unsigned tid, unsigned pending) {
  if constexpr (M == kFused) {
    if (__syncthreads_or(static_cast<int>(pending != 0))) {
      if (tid == 0) record_skip<S>(d, block);
      return true;
    }
    return false;
  } else {
    __syncthreads();
    return false;
  }
}

// Stamped forms only: the end of a block (kernels with barriers) or of a warp (barrier-free kernels, where
// the warps of a block may have decided apart).
template <bool S, bool kBarrierKernel>
__device__ __forceinline__ void stamp_end(const Drain& d, unsigned tid) {
  if constexpr (S) {
    if constexpr (kBarrierKernel) {
      __syncthreads();
      if (tid == 0) atomicMax(d.end_max + sm_id() * kStampStride, global_ns());
    } else {
      __syncwarp();
      if ((tid & 31u) == 0) atomicMax(d.end_max + sm_id() * kStampStride, global_ns());
    }
  }
}

__global__ void read_nsmid(unsigned* out) {
  unsigned n;
  asm volatile("mov.u32 %0, %%nsmid;" : "=r"(n));
  if (threadIdx.x == 0) atomicMax(out, n);
  if (threadIdx.x == 0) atomicMax(out + 1, sm_id() + 1);
}

// ---------------------------------------------------------------------------------------------------------
// Kernels: bodies as in bench/suite (the original form compiles to the suite's code, with an unused Drain
// parameter), blockIdx and threadIdx read through unit_coords so the same body serves resumption.

namespace tp {  // bench/suite/transpose.cu
constexpr int kRows = 6000;
constexpr int kCols = 4000;
constexpr int kTile = 32;
constexpr int kBlockRows = 8;
constexpr int kLaunches = 161;

template <int M, bool S>
__global__ void transpose_add1(const uint32_t* __restrict__ in, uint32_t* __restrict__ out, int rows, int cols, Drain d) {
  __shared__ uint32_t tile[kTile][kTile + 1];
  __shared__ unsigned gate_flag;
  unsigned bx, by;
  if constexpr (M == kResumeBlock) {
    const unsigned lin = d.list[blockIdx.x];
    bx = lin % d.grid_x;
    by = lin / d.grid_x;
  } else {
    bx = blockIdx.x;
    by = blockIdx.y;
  }
  const unsigned block = bx + by * d.grid_x;
  const unsigned tid = threadIdx.x + threadIdx.y * kTile;
  unsigned pending = 0;
  if (gate_entry<M, true, S>(d, &gate_flag, block, tid, pending)) return;
  int x = bx * kTile + threadIdx.x;  // column of `in`
  int y = by * kTile + threadIdx.y;  // row of `in`
  for (int j = 0; j < kTile; j += kBlockRows)
    if (x < cols && y + j < rows) tile[threadIdx.y + j][threadIdx.x] = in[static_cast<size_t>(y + j) * cols + x];
  if (gate_first_barrier<M, S>(d, block, tid, pending)) return;

  x = by * kTile + threadIdx.x;  // column of `out` = row of `in`
  y = bx * kTile + threadIdx.y;  // row of `out` = column of `in`
  for (int j = 0; j < kTile; j += kBlockRows)
    if (x < rows && y + j < cols) out[static_cast<size_t>(y + j) * rows + x] = tile[threadIdx.x][threadIdx.y + j] + 1u;
  stamp_end<S, true>(d, tid);
}
}  // namespace tp

namespace rd {  // bench/suite/reduction.cu
constexpr size_t kN = (size_t(1) << 26) - 12345;
constexpr int kBlock = 256;
constexpr int kPerThread = 4;
constexpr int kTile = kBlock * kPerThread;
constexpr int kFinalBlock = 1024;
constexpr int kPasses = 128;

// The suite's block_tree_sum with its first barrier gated. Returns false if the block skipped there.
template <int kThreads, int M, bool S>
__device__ __forceinline__ bool block_tree_sum(float* sh, float v, const Drain& d, unsigned block, unsigned pending,
                                               float& total) {
  const unsigned t = threadIdx.x;
  sh[t] = v;
  if (gate_first_barrier<M, S>(d, block, t, pending)) return false;
  for (unsigned s = kThreads / 2; s > 0; s >>= 1) {
    if (t < s) sh[t] += sh[t + s];
    __syncthreads();
  }
  total = sh[0];
  return true;
}

template <int M, bool S>
__global__ void block_sums(const float* __restrict__ x, size_t n, size_t rotation, float* __restrict__ partial, Drain d) {
  __shared__ float sh[kBlock];
  __shared__ unsigned gate_flag;
  unsigned block, tid, bdim;
  unit_coords<M>(d, block, tid, bdim);
  unsigned pending = 0;
  if (gate_entry<M, true, S>(d, &gate_flag, block, tid, pending)) return;
  const size_t base = static_cast<size_t>(block) * kTile;
  float v = 0.0f;
  for (int j = 0; j < kPerThread; ++j) {
    size_t i = base + j * kBlock + threadIdx.x;
    if (i < n) {
      size_t src = i + rotation;
      if (src >= n) src -= n;
      v += x[src];
    }
  }
  float total;
  if (!block_tree_sum<kBlock, M, S>(sh, v, d, block, pending, total)) return;
  if (threadIdx.x == 0) partial[block] = total;
  stamp_end<S, true>(d, tid);
}

template <int M, bool S>
__global__ void finish_sum(const float* __restrict__ partial, int count, float* __restrict__ result, Drain d) {
  __shared__ float sh[kFinalBlock];
  __shared__ unsigned gate_flag;
  unsigned block, tid, bdim;
  unit_coords<M>(d, block, tid, bdim);
  unsigned pending = 0;
  if (gate_entry<M, true, S>(d, &gate_flag, block, tid, pending)) return;
  float v = 0.0f;
  for (int i = threadIdx.x; i < count; i += kFinalBlock) v += partial[i];
  float total;
  if (!block_tree_sum<kFinalBlock, M, S>(sh, v, d, block, pending, total)) return;
  if (threadIdx.x == 0) *result = total;
  stamp_end<S, true>(d, tid);
}

size_t rotation_of(int pass) { return (static_cast<size_t>(pass) * 7919 * 1031) % kN; }
}  // namespace rd

namespace pl {  // bench/suite/pipeline.cu
constexpr size_t kN = (size_t(1) << 24) + 99;
constexpr int kBlock = 256;
constexpr int kRounds = 40;
constexpr int kMaxRadius = 8;
constexpr size_t kSampleStride = 1021;

int radius_of(int round) { return 1 + round % kMaxRadius; }
int float_shift_of(int round) { return round & 7; }
int int_shift_of(int round) { return 16 - (round & 7); }

template <typename T, int M, bool S>
__global__ void decode_field(const uint32_t* __restrict__ raw, T* __restrict__ out, size_t n, int shift, T scale, Drain d) {
  __shared__ unsigned gate_flag;
  unsigned block, tid, bdim;
  unit_coords<M>(d, block, tid, bdim);
  unsigned pending = 0;
  if (gate_entry<M, false, S>(d, &gate_flag, block, tid, pending)) return;
  const size_t i = static_cast<size_t>(block) * bdim + tid;
  if (i < n) out[i] = static_cast<T>((raw[i] >> shift) & 0xFFFFu) * scale;
  stamp_end<S, false>(d, tid);
}

__host__ __device__ inline size_t clamp_index(long long i, size_t n) {
  return i < 0 ? 0 : (static_cast<size_t>(i) >= n ? n - 1 : static_cast<size_t>(i));
}

template <int M, bool S>
__global__ void box_filter(const float* __restrict__ in, float* __restrict__ out, size_t n, int r, Drain d) {
  extern __shared__ float window[];
  __shared__ unsigned gate_flag;
  unsigned block, tid, bdim;
  unit_coords<M>(d, block, tid, bdim);
  unsigned pending = 0;
  if (gate_entry<M, true, S>(d, &gate_flag, block, tid, pending)) return;
  const long long base = static_cast<long long>(block) * blockDim.x;
  const int width = static_cast<int>(blockDim.x) + 2 * r;
  for (int j = threadIdx.x; j < width; j += blockDim.x) window[j] = in[clamp_index(base + j - r, n)];
  if (gate_first_barrier<M, S>(d, block, tid, pending)) return;
  const size_t i = static_cast<size_t>(base) + threadIdx.x;
  if (i < n) {
    float sum = 0.0f;
    for (int dd = 0; dd <= 2 * r; ++dd) sum += window[threadIdx.x + dd];
    out[i] = sum / static_cast<float>(2 * r + 1);
  }
  stamp_end<S, true>(d, tid);
}

template <int M, bool S>
__global__ void combine(const float* __restrict__ g, const int* __restrict__ q, float* __restrict__ acc, size_t n, Drain d) {
  __shared__ unsigned gate_flag;
  unsigned block, tid, bdim;
  unit_coords<M>(d, block, tid, bdim);
  unsigned pending = 0;
  if (gate_entry<M, false, S>(d, &gate_flag, block, tid, pending)) return;
  const size_t i = static_cast<size_t>(block) * bdim + tid;
  if (i < n) acc[i] = fmaf(g[i], static_cast<float>(q[i] % 5 + 1), acc[i]);
  stamp_end<S, false>(d, tid);
}
}  // namespace pl

namespace fa {  // bench/suite/float_atomics.cu
constexpr int kLogN = 24;
constexpr size_t kN = size_t(1) << kLogN;
constexpr int kLogBins = 19;
constexpr size_t kBins = size_t(1) << kLogBins;
constexpr int kBlock = 256;
constexpr int kSharedBins = 256;
constexpr int kPerThread = 16;
constexpr int kPerBlock = kBlock * kPerThread;
constexpr int kPasses = 48;

__host__ __device__ inline uint32_t global_bin(uint32_t i) {
  uint32_t h = (i * 0x9E3779B1u) & ((1u << kLogN) - 1);
  h ^= h >> 7;
  return h & ((1u << kLogBins) - 1);
}
__host__ __device__ inline uint32_t shared_bin(uint32_t i) { return (i * 0x9E37u + (i >> 12)) & (kSharedBins - 1); }

template <int M, bool S>
__global__ void scatter_add(const float* __restrict__ v, size_t n, float scale, float* __restrict__ bins, Drain d) {
  __shared__ unsigned gate_flag;
  unsigned block, tid, bdim;
  unit_coords<M>(d, block, tid, bdim);
  unsigned pending = 0;
  if (gate_entry<M, false, S>(d, &gate_flag, block, tid, pending)) return;
  const size_t i = static_cast<size_t>(block) * bdim + tid;
  if (i < n) atomicAdd(&bins[global_bin(static_cast<uint32_t>(i))], v[i] * scale);
  stamp_end<S, false>(d, tid);
}

template <int M, bool S>
__global__ void block_histogram(const float* __restrict__ v, float* __restrict__ block_hist, Drain d) {
  __shared__ float local[kSharedBins];
  __shared__ unsigned gate_flag;
  unsigned block, tid, bdim;
  unit_coords<M>(d, block, tid, bdim);
  unsigned pending = 0;
  if (gate_entry<M, true, S>(d, &gate_flag, block, tid, pending)) return;
  for (int b = threadIdx.x; b < kSharedBins; b += blockDim.x) local[b] = 0.0f;
  if (gate_first_barrier<M, S>(d, block, tid, pending)) return;
  const size_t base = static_cast<size_t>(block) * kPerBlock;
  for (int j = 0; j < kPerThread; ++j) {
    const size_t i = base + static_cast<size_t>(j) * blockDim.x + threadIdx.x;
    atomicAdd(&local[shared_bin(static_cast<uint32_t>(i))], v[i]);
  }
  __syncthreads();
  for (int b = threadIdx.x; b < kSharedBins; b += blockDim.x) block_hist[block * kSharedBins + b] = local[b];
  stamp_end<S, true>(d, tid);
}
}  // namespace fa

// ---------------------------------------------------------------------------------------------------------
// Host: picking the instantiation for a launch.

template <int V>
using IC = std::integral_constant<int, V>;

// Calls f(IC<M>, bool_constant<S>) for the kernel instantiation of `mode` (stamped: only t0_bar and fused,
// the forms the eviction test runs). kWarpUnits: a barrier-free kernel (has a warp-granular resumption).
template <bool kWarpUnits, class Fn>
void dispatch(int mode, bool stamped, Fn&& f) {
  if (stamped && mode != kT0Bar && mode != kFused) die(kExitUsage, "no stamped instantiation of mode %d", mode);
  switch (mode) {
    case kOriginal: f(IC<kOriginal>{}, std::false_type{}); return;
    case kAllOr: f(IC<kAllOr>{}, std::false_type{}); return;
    case kAllNoBar: f(IC<kAllNoBar>{}, std::false_type{}); return;
    case kT0Bar:
      if (stamped) f(IC<kT0Bar>{}, std::true_type{});
      else f(IC<kT0Bar>{}, std::false_type{});
      return;
    case kWarpShfl: f(IC<kWarpShfl>{}, std::false_type{}); return;
    case kFused:
      if (stamped) f(IC<kFused>{}, std::true_type{});
      else f(IC<kFused>{}, std::false_type{});
      return;
    case kResumeBlock: f(IC<kResumeBlock>{}, std::false_type{}); return;
    case kResumeWarp:
      if constexpr (kWarpUnits) {
        f(IC<kResumeWarp>{}, std::false_type{});
        return;
      }
      break;
    default: break;
  }
  die(kExitUsage, "no instantiation of mode %d here", mode);
}

// Barrier-free kernels record one unit per warp in these forms.
bool warp_granular(int mode) { return mode == kWarpShfl || mode == kFused; }

template <class T>
T* dalloc(size_t n) {
  T* p = nullptr;
  CK(cudaMalloc(&p, n * sizeof(T)));
  return p;
}
template <class T>
T* halloc(size_t n) {  // pinned
  T* p = nullptr;
  CK(cudaMallocHost(&p, n * sizeof(T)));
  return p;
}

// ---------------------------------------------------------------------------------------------------------
// Programs: the suite's launch sequences, launch by launch.

class Program {
 public:
  virtual ~Program() {}
  virtual const char* name() const = 0;
  virtual int launches() const = 0;
  virtual unsigned max_units() const = 0;  // the most units of any launch, any form
  virtual const char* kernel_of(int k) const = 0;
  virtual unsigned units(int k, int mode) const = 0;
  virtual bool warp_units(int k, int mode) const = 0;  // resumption per warp (kResumeWarp) for this launch
  virtual void reset(cudaStream_t s) = 0;               // the suite's untimed reset
  virtual void enqueue(int k, int mode, bool stamped, Drain d, cudaStream_t s) = 0;
  // Runs `count` units of launch k listed at d.list (recorded by form `mode`).
  virtual void resume(int k, int mode, Drain d, unsigned count, cudaStream_t s) = 0;
  virtual std::vector<unsigned char> output() = 0;  // after the stream is idle
  // Same result as the reference run? float_atomics compares within 1e-5; the others byte for byte.
  virtual bool same(const std::vector<unsigned char>& ref, const std::vector<unsigned char>& got, std::string& why) const {
    if (ref.size() != got.size()) {
      why = "size differs";
      return false;
    }
    if (memcmp(ref.data(), got.data(), ref.size()) == 0) return true;
    for (size_t i = 0; i < ref.size(); ++i)
      if (ref[i] != got[i]) {
        why = "first differing byte at offset " + std::to_string(i);
        return false;
      }
    return true;
  }
  // The original's output against a CPU reference (as the suite checks it).
  virtual bool cpu_check(const std::vector<unsigned char>& out, std::string& why) const = 0;

  std::vector<unsigned char> ref;  // the original form's output, uninterrupted (set by the overhead phase)
};

class Transpose : public Program {
 public:
  Transpose() : elems_(static_cast<size_t>(tp::kRows) * tp::kCols), hin_(elems_) {
    Rng rng(0x5EED0009);
    for (uint32_t& v : hin_) v = rng.next_u32();
    d_in_ = dalloc<uint32_t>(elems_);
    d_t_ = dalloc<uint32_t>(elems_);
    d_u_ = dalloc<uint32_t>(elems_);
    CK(cudaMemcpy(d_in_, hin_.data(), elems_ * 4, cudaMemcpyHostToDevice));
  }
  const char* name() const override { return "transpose"; }
  int launches() const override { return tp::kLaunches; }
  unsigned max_units() const override { return grid(0).x * grid(0).y; }
  const char* kernel_of(int) const override { return "transpose_add1"; }
  unsigned units(int k, int) const override { return grid(k).x * grid(k).y; }
  bool warp_units(int, int) const override { return false; }
  void reset(cudaStream_t s) override {
    CK(cudaMemsetAsync(d_t_, 0, elems_ * 4, s));
    CK(cudaMemsetAsync(d_u_, 0, elems_ * 4, s));
  }
  void enqueue(int k, int mode, bool stamped, Drain d, cudaStream_t s) override {
    const dim3 g = grid(k), b(tp::kTile, tp::kBlockRows);
    d.grid_x = g.x;
    dispatch<false>(mode, stamped, [&](auto m, auto st) {
      constexpr int M = decltype(m)::value;
      constexpr bool S = decltype(st)::value;
      if (k % 2 == 0)
        tp::transpose_add1<M, S><<<g, b, 0, s>>>(k == 0 ? d_in_ : d_u_, d_t_, tp::kRows, tp::kCols, d);
      else
        tp::transpose_add1<M, S><<<g, b, 0, s>>>(d_t_, d_u_, tp::kCols, tp::kRows, d);
    });
    LAUNCHED();
  }
  void resume(int k, int, Drain d, unsigned count, cudaStream_t s) override {
    const dim3 b(tp::kTile, tp::kBlockRows);
    d.grid_x = grid(k).x;
    if (k % 2 == 0)
      tp::transpose_add1<kResumeBlock, false><<<count, b, 0, s>>>(k == 0 ? d_in_ : d_u_, d_t_, tp::kRows, tp::kCols, d);
    else
      tp::transpose_add1<kResumeBlock, false><<<count, b, 0, s>>>(d_t_, d_u_, tp::kCols, tp::kRows, d);
    LAUNCHED();
  }
  std::vector<unsigned char> output() override {
    std::vector<unsigned char> out(elems_ * 4);
    CK(cudaMemcpy(out.data(), d_t_, out.size(), cudaMemcpyDeviceToHost));
    return out;
  }
  bool cpu_check(const std::vector<unsigned char>& bytes, std::string& why) const override {
    const uint32_t* out = reinterpret_cast<const uint32_t*>(bytes.data());
    for (int r = 0; r < tp::kCols; ++r)
      for (int c = 0; c < tp::kRows; ++c) {
        const uint32_t want = hin_[static_cast<size_t>(c) * tp::kCols + r] + tp::kLaunches;
        if (out[static_cast<size_t>(r) * tp::kRows + c] != want) {
          why = "out[" + std::to_string(r) + "][" + std::to_string(c) + "] wrong";
          return false;
        }
      }
    return true;
  }

 private:
  static dim3 grid(int k) {
    return k % 2 == 0 ? dim3(div_up(tp::kCols, tp::kTile), div_up(tp::kRows, tp::kTile))
                      : dim3(div_up(tp::kRows, tp::kTile), div_up(tp::kCols, tp::kTile));
  }
  size_t elems_;
  std::vector<uint32_t> hin_;
  uint32_t *d_in_, *d_t_, *d_u_;
};

class Reduction : public Program {
 public:
  Reduction() : hx_(rd::kN) {
    Rng rng(0x5EED0005);
    for (float& v : hx_) v = rng.unit();
    blocks_ = static_cast<int>(div_up(rd::kN, rd::kTile));
    dx_ = dalloc<float>(rd::kN);
    d_partial_ = dalloc<float>(blocks_);
    d_results_ = dalloc<float>(rd::kPasses);
    CK(cudaMemcpy(dx_, hx_.data(), rd::kN * 4, cudaMemcpyHostToDevice));
  }
  const char* name() const override { return "reduction"; }
  int launches() const override { return 2 * rd::kPasses; }
  unsigned max_units() const override { return static_cast<unsigned>(blocks_); }
  const char* kernel_of(int k) const override { return k % 2 == 0 ? "block_sums" : "finish_sum"; }
  unsigned units(int k, int) const override { return k % 2 == 0 ? static_cast<unsigned>(blocks_) : 1u; }
  bool warp_units(int, int) const override { return false; }
  void reset(cudaStream_t s) override {
    CK(cudaMemsetAsync(d_results_, 0xFF, rd::kPasses * sizeof(float), s));
    CK(cudaMemsetAsync(d_partial_, 0xFF, blocks_ * sizeof(float), s));
  }
  void enqueue(int k, int mode, bool stamped, Drain d, cudaStream_t s) override {
    const int p = k / 2;
    d.grid_x = k % 2 == 0 ? blocks_ : 1;
    dispatch<false>(mode, stamped, [&](auto m, auto st) {
      constexpr int M = decltype(m)::value;
      constexpr bool S = decltype(st)::value;
      if (k % 2 == 0)
        rd::block_sums<M, S><<<blocks_, rd::kBlock, 0, s>>>(dx_, rd::kN, rd::rotation_of(p), d_partial_, d);
      else
        rd::finish_sum<M, S><<<1, rd::kFinalBlock, 0, s>>>(d_partial_, blocks_, d_results_ + p, d);
    });
    LAUNCHED();
  }
  void resume(int k, int, Drain d, unsigned count, cudaStream_t s) override {
    const int p = k / 2;
    if (k % 2 == 0)
      rd::block_sums<kResumeBlock, false><<<count, rd::kBlock, 0, s>>>(dx_, rd::kN, rd::rotation_of(p), d_partial_, d);
    else
      rd::finish_sum<kResumeBlock, false><<<count, rd::kFinalBlock, 0, s>>>(d_partial_, blocks_, d_results_ + p, d);
    LAUNCHED();
  }
  std::vector<unsigned char> output() override {
    std::vector<unsigned char> out((rd::kPasses + blocks_) * sizeof(float));
    CK(cudaMemcpy(out.data(), d_results_, rd::kPasses * sizeof(float), cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(out.data() + rd::kPasses * sizeof(float), d_partial_, blocks_ * sizeof(float), cudaMemcpyDeviceToHost));
    return out;
  }
  bool cpu_check(const std::vector<unsigned char>& bytes, std::string& why) const override {
    const float* results = reinterpret_cast<const float*>(bytes.data());
    const float* partial = results + rd::kPasses;
    double total = 0.0;
    for (float v : hx_) total += v;
    for (int p = 0; p < rd::kPasses; ++p)
      if (!(std::fabs(results[p] - total) <= 1e-5 * total)) {
        why = "pass " + std::to_string(p) + " total " + std::to_string(results[p]) + " want " + std::to_string(total);
        return false;
      }
    const size_t rot = rd::rotation_of(rd::kPasses - 1);
    for (int b = 0; b < blocks_; b += (b + 61 < blocks_ ? 61 : std::max(1, blocks_ - 1 - b))) {
      double want = 0.0;
      for (size_t i = static_cast<size_t>(b) * rd::kTile; i < std::min(rd::kN, static_cast<size_t>(b + 1) * rd::kTile); ++i)
        want += hx_[(i + rot) % rd::kN];
      if (!(std::fabs(partial[b] - want) <= 1e-5 * want)) {
        why = "last pass block " + std::to_string(b) + " partial";
        return false;
      }
    }
    return true;
  }

 private:
  std::vector<float> hx_;
  int blocks_;
  float *dx_, *d_partial_, *d_results_;
};

class Pipeline : public Program {
 public:
  Pipeline() : hraw_(pl::kN) {
    Rng rng(0x5EED000C);
    for (uint32_t& v : hraw_) v = rng.next_u32();
    d_raw_ = dalloc<uint32_t>(pl::kN);
    d_f_ = dalloc<float>(pl::kN);
    d_q_ = dalloc<int>(pl::kN);
    d_g_ = dalloc<float>(pl::kN);
    d_acc_ = dalloc<float>(pl::kN);
    CK(cudaMemcpy(d_raw_, hraw_.data(), pl::kN * 4, cudaMemcpyHostToDevice));
    grid_ = div_up(pl::kN, pl::kBlock);
  }
  const char* name() const override { return "pipeline"; }
  int launches() const override { return 4 * pl::kRounds; }
  unsigned max_units() const override { return grid_ * kWarpsPerBlock; }
  const char* kernel_of(int k) const override {
    static const char* names[] = {"decode_field<float>", "decode_field<int>", "box_filter", "combine"};
    return names[k % 4];
  }
  unsigned units(int k, int mode) const override { return grid_ * (warp_units(k, mode) ? kWarpsPerBlock : 1u); }
  bool warp_units(int k, int mode) const override { return k % 4 != 2 && warp_granular(mode); }
  void reset(cudaStream_t s) override { CK(cudaMemsetAsync(d_acc_, 0, pl::kN * sizeof(float), s)); }
  void enqueue(int k, int mode, bool stamped, Drain d, cudaStream_t s) override {
    d.grid_x = grid_;
    launch(k, mode, stamped, d, s, grid_, pl::kBlock);
  }
  void resume(int k, int mode, Drain d, unsigned count, cudaStream_t s) override {
    d.grid_x = grid_;
    if (warp_units(k, mode)) launch(k, kResumeWarp, false, d, s, count, 32);
    else launch(k, kResumeBlock, false, d, s, count, pl::kBlock);
  }
  std::vector<unsigned char> output() override {
    std::vector<unsigned char> out(pl::kN * sizeof(float));
    CK(cudaMemcpy(out.data(), d_acc_, out.size(), cudaMemcpyDeviceToHost));
    return out;
  }
  bool cpu_check(const std::vector<unsigned char>& bytes, std::string& why) const override {
    const float* acc = reinterpret_cast<const float*>(bytes.data());
    const float kFloatScale = 1.0f / 65536.0f;
    auto check_elem = [&](size_t i) {
      float want = 0.0f;
      for (int k = 0; k < pl::kRounds; ++k) {
        const int r = pl::radius_of(k);
        float sum = 0.0f;
        for (int dd = -r; dd <= r; ++dd) {
          uint32_t raw = hraw_[pl::clamp_index(static_cast<long long>(i) + dd, pl::kN)];
          sum += static_cast<float>((raw >> pl::float_shift_of(k)) & 0xFFFFu) * kFloatScale;
        }
        const float g = sum / static_cast<float>(2 * r + 1);
        const int q = static_cast<int>((hraw_[i] >> pl::int_shift_of(k)) & 0xFFFFu);
        want = std::fmaf(g, static_cast<float>(q % 5 + 1), want);
      }
      if (!(std::fabs(acc[i] - want) <= 1e-6 * std::fabs(want))) {
        why = "acc[" + std::to_string(i) + "]";
        return false;
      }
      return true;
    };
    for (size_t i = 0; i < pl::kN; i += pl::kSampleStride)
      if (!check_elem(i)) return false;
    for (size_t i = pl::kN - pl::kMaxRadius - 1; i < pl::kN; ++i)
      if (!check_elem(i)) return false;
    return true;
  }

 private:
  void launch(int k, int mode, bool stamped, const Drain& d, cudaStream_t s, unsigned g, unsigned b) {
    const int round = k / 4;
    const float kFloatScale = 1.0f / 65536.0f;
    switch (k % 4) {
      case 0:
        dispatch<true>(mode, stamped, [&](auto m, auto st) {
          constexpr int M = decltype(m)::value;
          constexpr bool S = decltype(st)::value;
          pl::decode_field<float, M, S><<<g, b, 0, s>>>(d_raw_, d_f_, pl::kN, pl::float_shift_of(round), kFloatScale, d);
        });
        break;
      case 1:
        dispatch<true>(mode, stamped, [&](auto m, auto st) {
          constexpr int M = decltype(m)::value;
          constexpr bool S = decltype(st)::value;
          pl::decode_field<int, M, S><<<g, b, 0, s>>>(d_raw_, d_q_, pl::kN, pl::int_shift_of(round), 1, d);
        });
        break;
      case 2: {
        const int r = pl::radius_of(round);
        const size_t smem = (pl::kBlock + 2 * r) * sizeof(float);
        dispatch<false>(mode, stamped, [&](auto m, auto st) {
          constexpr int M = decltype(m)::value;
          constexpr bool S = decltype(st)::value;
          pl::box_filter<M, S><<<g, b, smem, s>>>(d_f_, d_g_, pl::kN, r, d);
        });
        break;
      }
      default:
        dispatch<true>(mode, stamped, [&](auto m, auto st) {
          constexpr int M = decltype(m)::value;
          constexpr bool S = decltype(st)::value;
          pl::combine<M, S><<<g, b, 0, s>>>(d_g_, d_q_, d_acc_, pl::kN, d);
        });
        break;
    }
    LAUNCHED();
  }
  std::vector<uint32_t> hraw_;
  uint32_t* d_raw_;
  float *d_f_, *d_g_, *d_acc_;
  int* d_q_;
  unsigned grid_;
};

class FloatAtomics : public Program {
 public:
  FloatAtomics() : hv_(fa::kN) {
    Rng rng(0x5EED000D);
    for (float& x : hv_) x = 1.0f + std::ldexp(static_cast<float>(rng.next_u32() >> 9), -23);
    hist_blocks_ = static_cast<unsigned>(fa::kN / fa::kPerBlock);
    grid_ = div_up(fa::kN, fa::kBlock);
    dv_ = dalloc<float>(fa::kN);
    d_bins_ = dalloc<float>(fa::kPasses * fa::kBins);
    d_hist_ = dalloc<float>(static_cast<size_t>(hist_blocks_) * fa::kSharedBins);
    CK(cudaMemcpy(dv_, hv_.data(), fa::kN * 4, cudaMemcpyHostToDevice));
  }
  const char* name() const override { return "float_atomics"; }
  int launches() const override { return 2 * fa::kPasses; }
  unsigned max_units() const override { return grid_ * kWarpsPerBlock; }
  const char* kernel_of(int k) const override { return k % 2 == 0 ? "scatter_add" : "block_histogram"; }
  unsigned units(int k, int mode) const override {
    return k % 2 == 0 ? grid_ * (warp_units(k, mode) ? kWarpsPerBlock : 1u) : hist_blocks_;
  }
  bool warp_units(int k, int mode) const override { return k % 2 == 0 && warp_granular(mode); }
  void reset(cudaStream_t s) override {
    CK(cudaMemsetAsync(d_bins_, 0, fa::kPasses * fa::kBins * sizeof(float), s));
    CK(cudaMemsetAsync(d_hist_, 0xFF, static_cast<size_t>(hist_blocks_) * fa::kSharedBins * sizeof(float), s));
  }
  void enqueue(int k, int mode, bool stamped, Drain d, cudaStream_t s) override {
    d.grid_x = k % 2 == 0 ? grid_ : hist_blocks_;
    launch(k, mode, stamped, d, s, k % 2 == 0 ? grid_ : hist_blocks_, fa::kBlock);
  }
  void resume(int k, int mode, Drain d, unsigned count, cudaStream_t s) override {
    d.grid_x = k % 2 == 0 ? grid_ : hist_blocks_;
    if (warp_units(k, mode)) launch(k, kResumeWarp, false, d, s, count, 32);
    else launch(k, kResumeBlock, false, d, s, count, fa::kBlock);
  }
  std::vector<unsigned char> output() override {
    const size_t bins = fa::kPasses * fa::kBins * sizeof(float);
    const size_t hist = static_cast<size_t>(hist_blocks_) * fa::kSharedBins * sizeof(float);
    std::vector<unsigned char> out(bins + hist);
    CK(cudaMemcpy(out.data(), d_bins_, bins, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(out.data() + bins, d_hist_, hist, cudaMemcpyDeviceToHost));
    return out;
  }
  // Float atomics add in a different order each run (the suite's tolerance, 1e-5 relative); a unit run twice
  // or not at all changes a bin by about 1/32 (global bins) or 1/16 (shared bins).
  bool same(const std::vector<unsigned char>& ref, const std::vector<unsigned char>& got, std::string& why) const override {
    if (ref.size() != got.size()) {
      why = "size differs";
      return false;
    }
    const float* a = reinterpret_cast<const float*>(ref.data());
    const float* b = reinterpret_cast<const float*>(got.data());
    for (size_t i = 0; i < ref.size() / 4; ++i)
      if (!(std::fabs(static_cast<double>(a[i]) - b[i]) <= 1e-5 * std::fabs(static_cast<double>(a[i])))) {
        why = "value " + std::to_string(i) + ": " + std::to_string(b[i]) + " vs " + std::to_string(a[i]);
        return false;
      }
    return true;
  }
  bool cpu_check(const std::vector<unsigned char>& bytes, std::string& why) const override {
    const float* bins = reinterpret_cast<const float*>(bytes.data());
    const float* hist = bins + fa::kPasses * fa::kBins;
    std::vector<double> base(fa::kBins, 0.0);
    for (size_t i = 0; i < fa::kN; ++i) base[fa::global_bin(static_cast<uint32_t>(i))] += hv_[i];
    for (int p = 0; p < fa::kPasses; ++p)
      for (size_t b = 0; b < fa::kBins; ++b) {
        const double want = (p + 1) * base[b];
        if (!(std::fabs(bins[p * fa::kBins + b] - want) <= 1e-5 * want)) {
          why = "pass " + std::to_string(p) + " bin " + std::to_string(b);
          return false;
        }
      }
    std::vector<double> want(static_cast<size_t>(hist_blocks_) * fa::kSharedBins, 0.0);
    for (size_t i = 0; i < fa::kN; ++i) want[i / fa::kPerBlock * fa::kSharedBins + fa::shared_bin(static_cast<uint32_t>(i))] += hv_[i];
    for (size_t k = 0; k < want.size(); ++k)
      if (!(std::fabs(hist[k] - want[k]) <= 1e-5 * want[k])) {
        why = "shared bin " + std::to_string(k);
        return false;
      }
    return true;
  }

 private:
  void launch(int k, int mode, bool stamped, const Drain& d, cudaStream_t s, unsigned g, unsigned b) {
    const int p = k / 2;
    if (k % 2 == 0) {
      dispatch<true>(mode, stamped, [&](auto m, auto st) {
        constexpr int M = decltype(m)::value;
        constexpr bool S = decltype(st)::value;
        fa::scatter_add<M, S><<<g, b, 0, s>>>(dv_, fa::kN, static_cast<float>(p + 1), d_bins_ + p * fa::kBins, d);
      });
    } else {
      dispatch<false>(mode, stamped, [&](auto m, auto st) {
        constexpr int M = decltype(m)::value;
        constexpr bool S = decltype(st)::value;
        fa::block_histogram<M, S><<<g, b, 0, s>>>(dv_, d_hist_, d);
      });
    }
    LAUNCHED();
  }
  std::vector<float> hv_;
  unsigned hist_blocks_, grid_;
  float *dv_, *d_bins_, *d_hist_;
};

// ---------------------------------------------------------------------------------------------------------
// Statistics and output.

struct Stats {
  size_t n = 0;
  double median = NAN, p99 = NAN, min = NAN, max = NAN;
};
Stats stats_of(std::vector<double> v) {
  Stats s;
  s.n = v.size();
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  s.median = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  s.p99 = v[static_cast<size_t>(std::ceil(0.99 * n)) - 1];  // nearest rank: the max below 100 samples
  s.min = v.front();
  s.max = v.back();
  return s;
}
std::string num(double x, int prec = 3) {
  if (std::isnan(x)) return "null";
  char buf[64];
  snprintf(buf, sizeof buf, "%.*f", prec, x);
  return buf;
}
std::string stats_json(const Stats& s, int prec = 1) {
  return "{\"n\":" + std::to_string(s.n) + ",\"median\":" + num(s.median, prec) + ",\"p99\":" + num(s.p99, prec) +
         ",\"max\":" + num(s.max, prec) + "}";
}

struct Form {
  const char* name;
  int mode;
  bool ordered;  // an untimed event and a wait on the evicting word after each launch
  bool stamped;
  bool safe;     // may be evicted (block-consistent decisions, records that resume exactly the undone work)
};

const Form kForms[] = {
    {"original", kOriginal, false, false, true},
    {"all_or", kAllOr, false, false, true},
    {"all_nobar", kAllNoBar, false, false, false},
    {"t0_bar", kT0Bar, false, false, true},
    {"warp_shfl", kWarpShfl, false, false, false},
    {"fused", kFused, false, false, true},
    {"fused_ordered", kFused, true, false, true},
    {"fused_ordered_stamped", kFused, true, true, true},
};
constexpr int kNumForms = sizeof(kForms) / sizeof(kForms[0]);

struct EvictionForm {
  const char* name;
  int mode;
  int temporal;  // evictions wanted
  int spatial;
};

struct Options {
  bool quick = false;
  int runs = 11;
  const char* only = nullptr;
  const char* detail = nullptr;
  double deadline_s = 75;
  uint64_t seed = 0xD8A1F00Dull;
};

typedef CUresult (*WaitValueFn)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);
typedef CUresult (*WriteValueFn)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);
typedef CUresult (*BatchMemOpFn)(CUstream, unsigned int, CUstreamBatchMemOpParams*, unsigned int);

template <class Fn>
Fn driver_function(const char* name) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found;
  CK(cudaGetDriverEntryPointByVersion(name, &fn, 12040, cudaEnableDefault, &found));
  if (!fn || found != cudaDriverEntryPointSuccess) die(kExitCuda, "no %s in the driver", name);
  return reinterpret_cast<Fn>(fn);
}

CUdeviceptr dptr(const void* p) { return static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(p)); }

// Results kept for the closing table.
struct OverheadRow {
  std::string program;
  double original_ms;
  double ratio[kNumForms];
  bool output_ok[kNumForms];
};
struct EvictionRow {
  std::string program, form;
  int temporal = 0, spatial = 0, idle = 0, late = 0, sequences = 0, output_failures = 0, bookkeeping_failures = 0;
  int multi_launch = 0;  // evictions where more than one launch had skipped units (see evictions())
  Stats latency, latency_copy, latency_batch, drain, skip_span, skipped;
};

class Probe {
 public:
  explicit Probe(const Options& o) : opt_(o), gen_(o.seed) {}

  void init() {
    t_init_ = Clock::now();
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    gpu_ = prop.name;
    sms_ = prop.multiProcessorCount;
    int lowest = 0, highest = 0;
    CK(cudaDeviceGetStreamPriorityRange(&lowest, &highest));
    CK(cudaStreamCreateWithFlags(&app_, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithPriority(&urgent_, cudaStreamNonBlocking, highest));
    wait_ = driver_function<WaitValueFn>("cuStreamWaitValue32");
    write_ = driver_function<WriteValueFn>("cuStreamWriteValue32");
    batch_ = driver_function<BatchMemOpFn>("cuStreamBatchMemOp");

    unsigned* d_n = dalloc<unsigned>(2);
    CK(cudaMemset(d_n, 0, 8));
    read_nsmid<<<sms_ * 8, 64>>>(d_n);
    LAUNCHED();
    unsigned hn[2];
    CK(cudaMemcpy(hn, d_n, 8, cudaMemcpyDeviceToHost));
    nsmid_ = hn[0];
    nslots_ = std::max(hn[0], hn[1]);
    if (nslots_ == 0 || nslots_ > kMaxSlots) die(kExitCuda, "implausible %%nsmid %u / max smid + 1 %u", hn[0], hn[1]);

    words_bytes_ = static_cast<size_t>(nslots_) * kWordStride * sizeof(unsigned);
    d_words_ = dalloc<unsigned>(kMaxSlots * kWordStride);
    CK(cudaMemset(d_words_, 0, kMaxSlots * kWordStride * sizeof(unsigned)));
    d_evicting_ = dalloc<unsigned>(kWordStride);
    CK(cudaMemset(d_evicting_, 0, kWordStride * sizeof(unsigned)));
    const size_t stamp_n = static_cast<size_t>(nslots_) * kStampStride;  // what is read and reset
    const size_t stamp_alloc = static_cast<size_t>(kMaxSlots) * kStampStride;
    d_skip_min_ = dalloc<unsigned long long>(stamp_alloc);
    d_skip_max_ = dalloc<unsigned long long>(stamp_alloc);
    d_end_max_ = dalloc<unsigned long long>(stamp_alloc);
    CK(cudaMemset(d_skip_min_, 0xFF, stamp_alloc * 8));
    CK(cudaMemset(d_skip_max_, 0, stamp_alloc * 8));
    CK(cudaMemset(d_end_max_, 0, stamp_alloc * 8));
    h_ones_ = halloc<unsigned>(nslots_ * kWordStride);
    h_zero_ = halloc<unsigned>(nslots_ * kWordStride);
    h_spatial_ = halloc<unsigned>(nslots_ * kWordStride);
    memset(h_ones_, 0, words_bytes_);
    memset(h_zero_, 0, words_bytes_);
    for (unsigned s = 0; s < nslots_; ++s) h_ones_[s * kWordStride] = 1;
    h_stamps_ = halloc<unsigned long long>(3 * stamp_n);
    CK(cudaEventCreate(&t_start_));
    CK(cudaEventCreate(&t_stop_));
    CK(cudaDeviceSynchronize());

    printf("{\"probe\":\"drain\",\"gpu\":\"%s\",\"sms\":%d,\"nsmid\":%u,\"word_slots\":%u,\"runs\":%d,\"quick\":%s,"
           "\"seed\":%llu,\"stream_priority_urgent\":%d,\"CUDA_MODULE_LOADING\":\"%s\",\"CUDA_DEVICE_MAX_CONNECTIONS\":\"%s\"}\n",
           gpu_.c_str(), sms_, nsmid_, nslots_, opt_.runs, opt_.quick ? "true" : "false",
           static_cast<unsigned long long>(opt_.seed), highest, getenv("CUDA_MODULE_LOADING"),
           getenv("CUDA_DEVICE_MAX_CONNECTIONS"));
    fflush(stdout);
  }

  // Phase 1, per program: the reference output and the overhead of every form.
  void overhead_phase(Program& p) {
    const auto t = Clock::now();
    setup_program(p);
    overhead(p);
    teardown_program();
    fprintf(stderr, "drain_probe: %s overhead done in %.1f s (%.1f s since start)\n", p.name(), us_since(t) / 1e6,
            us_since(t_init_) / 1e6);
  }

  // Phase 2, per program and evicted form.
  void eviction_phase(Program& p, const EvictionForm& ef) {
    const auto t = Clock::now();
    setup_program(p);
    evictions(p, ef);
    teardown_program();
    fprintf(stderr, "drain_probe: %s/%s evictions done in %.1f s (%.1f s since start)\n", p.name(), ef.name,
            us_since(t) / 1e6, us_since(t_init_) / 1e6);
  }

  int finish() {
    // The closing table.
    printf("\n== drain_probe summary: %s, %d SMs ==\n", gpu_.c_str(), sms_);
    printf("Overhead when never evicted: form / original, median of %d runs of the suite's launch sequence\n", opt_.runs);
    printf("(* cost only: its blocks may decide apart, not safe to evict; ! output differs from the original's)\n");
    printf("%-14s %9s", "program", "orig ms");
    for (int f = 1; f < kNumForms; ++f) printf(" %s%s", kForms[f].name, kForms[f].safe ? "" : "*");
    printf("\n");
    for (const OverheadRow& r : overhead_rows_) {
      printf("%-14s %9.3f", r.program.c_str(), r.original_ms);
      for (int f = 1; f < kNumForms; ++f) {
        const int w = static_cast<int>(strlen(kForms[f].name)) + (kForms[f].safe ? 0 : 1);
        std::string cell = num(r.ratio[f], 3) + (r.output_ok[f] ? "" : "!");
        printf(" %*s", w, cell.c_str());
      }
      printf("\n");
    }
    printf("\nEvictions (temporal: every SM; latency = request submitted -> host sees the evicted launch's event, us;\n"
           "drain = first skipping block -> last block end on the device, us; copy/batch = how the words were set;\n"
           "multi = evictions where more than one launch had skipped units: expected 0)\n");
    printf("%-14s %-7s %4s %4s %4s %5s %22s %9s %9s %16s %9s %s\n", "program", "form", "temp", "spat", "seqs", "multi",
           "latency med/p99/max", "copy med", "batch med", "drain med/p99", "skip med", "outputs");
    for (const EvictionRow& r : eviction_rows_) {
      char lat[64], drain[48];
      snprintf(lat, sizeof lat, "%s/%s/%s", num(r.latency.median, 0).c_str(), num(r.latency.p99, 0).c_str(),
               num(r.latency.max, 0).c_str());
      snprintf(drain, sizeof drain, "%s/%s", num(r.drain.median, 1).c_str(), num(r.drain.p99, 1).c_str());
      std::string outputs = (r.output_failures == 0 && r.bookkeeping_failures == 0)
                                ? "match"
                                : "FAILED (" + std::to_string(r.output_failures) + " outputs, " +
                                      std::to_string(r.bookkeeping_failures) + " bookkeeping)";
      printf("%-14s %-7s %4d %4d %4d %5d %22s %9s %9s %16s %9s %s\n", r.program.c_str(), r.form.c_str(), r.temporal,
             r.spatial, r.sequences, r.multi_launch, lat, num(r.latency_copy.median, 0).c_str(), num(r.latency_batch.median, 0).c_str(), drain,
             num(r.skipped.median, 0).c_str(), outputs.c_str());
    }
    const int code = failures_ ? kExitMismatch : (protocol_errors_ ? kExitProtocol : kExitOk);
    printf("\nRESULT: %s (%d check failures, %d protocol errors)\n", code == 0 ? "all checks passed" : "FAILED",
           failures_, protocol_errors_);
    fflush(stdout);
    return code;
  }

  void fail(const char* what, const std::string& why) {
    ++failures_;
    fprintf(stderr, "drain_probe: CHECK FAILED: %s: %s\n", what, why.c_str());
  }

 private:
  void setup_program(Program& p) {
    L_ = p.launches();
    bm_words_ = (p.max_units() + 31) / 32;
    d_bitmaps_ = dalloc<unsigned>(static_cast<size_t>(L_) * bm_words_);
    CK(cudaMemset(d_bitmaps_, 0, static_cast<size_t>(L_) * bm_words_ * 4));
    d_list_ = dalloc<unsigned>(p.max_units());
    h_bitmaps_ = halloc<unsigned>(static_cast<size_t>(L_) * bm_words_);
    h_list_ = halloc<unsigned>(p.max_units());
    events_.resize(L_ + 1);
    for (cudaEvent_t& e : events_) CK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    CK(cudaDeviceSynchronize());
  }
  void teardown_program() {
    CK(cudaDeviceSynchronize());
    for (cudaEvent_t& e : events_) CK(cudaEventDestroy(e));
    events_.clear();
    CK(cudaFree(d_bitmaps_));
    CK(cudaFree(d_list_));
    CK(cudaFreeHost(h_bitmaps_));
    CK(cudaFreeHost(h_list_));
  }

  Drain drain_for(int k) const {
    Drain d{};
    d.words = d_words_;
    d.bitmap = d_bitmaps_ + static_cast<size_t>(k) * bm_words_;
    d.list = d_list_;
    d.skip_min = d_skip_min_;
    d.skip_max = d_skip_max_;
    d.end_max = d_end_max_;
    return d;
  }

  void enqueue_sequence(Program& p, int mode, bool ordered, bool stamped) {
    for (int k = 0; k < L_; ++k) {
      p.enqueue(k, mode, stamped, drain_for(k), app_);
      if (ordered) {
        CK(cudaEventRecord(events_[k], app_));
        CKD(wait_(app_, dptr(d_evicting_), 0, CU_STREAM_WAIT_VALUE_EQ));
      }
    }
    if (ordered) CK(cudaEventRecord(events_[L_], app_));
  }

  double timed_sequence(Program& p, const Form& f) {
    p.reset(app_);
    CK(cudaStreamSynchronize(app_));
    CK(cudaEventRecord(t_start_, app_));
    enqueue_sequence(p, f.mode, f.ordered, f.stamped);
    CK(cudaEventRecord(t_stop_, app_));
    CK(cudaEventSynchronize(t_stop_));
    LAUNCHED();
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, t_start_, t_stop_));
    return ms;
  }

  // Every bitmap empty (nothing was ever skipped). Returns false and says which launch otherwise.
  bool bitmaps_empty(std::string& why) {
    CK(cudaMemcpy(h_bitmaps_, d_bitmaps_, static_cast<size_t>(L_) * bm_words_ * 4, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < static_cast<size_t>(L_) * bm_words_; ++i)
      if (h_bitmaps_[i]) {
        why = "launch " + std::to_string(i / bm_words_) + " recorded a skip without an eviction";
        return false;
      }
    return true;
  }

  void overhead(Program& p) {
    // Reference: the original form's output, checked against the CPU.
    timed_sequence(p, kForms[0]);
    p.ref = p.output();
    std::string why;
    if (!p.cpu_check(p.ref, why)) fail((std::string(p.name()) + " original vs CPU reference").c_str(), why);
    // Warm-up run of every form, its output compared with the original's.
    bool output_ok[kNumForms];
    for (int f = 0; f < kNumForms; ++f) {
      timed_sequence(p, kForms[f]);
      std::vector<unsigned char> out = p.output();
      output_ok[f] = p.same(p.ref, out, why);
      if (!output_ok[f]) fail((std::string(p.name()) + " form " + kForms[f].name + " vs original").c_str(), why);
    }
    // Timed runs, interleaved: run r times the forms starting at form r % kNumForms.
    std::vector<std::vector<double>> ms(kNumForms);
    for (int r = 0; r < opt_.runs; ++r)
      for (int i = 0; i < kNumForms; ++i) {
        const int f = (r + i) % kNumForms;
        ms[f].push_back(timed_sequence(p, kForms[f]));
      }
    if (!bitmaps_empty(why)) fail((std::string(p.name()) + " timing runs").c_str(), why);
    OverheadRow row;
    row.program = p.name();
    const Stats orig = stats_of(ms[0]);
    row.original_ms = orig.median;
    for (int f = 0; f < kNumForms; ++f) {
      const Stats s = stats_of(ms[f]);
      row.ratio[f] = s.median / orig.median;
      row.output_ok[f] = output_ok[f];
      printf("{\"kind\":\"overhead\",\"kernel\":\"%s\",\"variant\":\"%s\",\"median_ms\":%s,\"min_ms\":%s,\"max_ms\":%s,"
             "\"runs\":%zu,\"ratio\":%s,\"launches\":%d,\"output\":\"%s\",\"safe_to_evict\":%s}\n",
             p.name(), kForms[f].name, num(s.median, 4).c_str(), num(s.min, 4).c_str(), num(s.max, 4).c_str(), s.n,
             num(row.ratio[f], 4).c_str(), L_, output_ok[f] ? "match" : "MISMATCH", kForms[f].safe ? "true" : "false");
    }
    fflush(stdout);
    overhead_rows_.push_back(row);
  }

  double uniform(double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(gen_); }

  // Sets the yield words: every slot (temporal) or those of h_spatial_, by one copy of the word image or by
  // one batch of 32-bit stream writes (nothing else in flight on the urgent stream but resumptions).
  void set_words(bool spatial, bool by_batch, const std::vector<unsigned>& slots) {
    if (!by_batch) {
      CK(cudaMemcpyAsync(d_words_, spatial ? h_spatial_ : h_ones_, words_bytes_, cudaMemcpyHostToDevice, urgent_));
      return;
    }
    for (size_t first = 0; first < slots.size(); first += 200) {
      const size_t n = std::min<size_t>(200, slots.size() - first);
      for (size_t i = 0; i < n; ++i) {
        CUstreamBatchMemOpParams& op = batch_ops_[i];
        memset(&op, 0, sizeof op);
        op.writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_32;
        op.writeValue.address = dptr(d_words_ + static_cast<size_t>(slots[first + i]) * kWordStride);
        op.writeValue.value = 1;
        op.writeValue.flags = CU_STREAM_WRITE_VALUE_DEFAULT;
      }
      CKD(batch_(urgent_, static_cast<unsigned>(n), batch_ops_, 0));
    }
  }

  // Waits (bounded) for the sequence's last event. A stream still held after 2 s is a protocol error: the
  // words and the evicting word are cleared once more; one that does not finish 5 s later is fatal.
  void wait_sequence_end(const char* what) {
    const auto t = Clock::now();
    bool cleared = false;
    for (;;) {
      cudaError_t q = cudaEventQuery(events_[L_]);
      if (q == cudaSuccess) break;
      if (q != cudaErrorNotReady) CK(q);
      if (!cleared && us_since(t) > 2e6) {
        cleared = true;
        ++protocol_errors_;
        fprintf(stderr, "drain_probe: %s: sequence unfinished 2 s after the last eviction; clearing the words\n", what);
        CK(cudaMemcpyAsync(d_words_, h_zero_, words_bytes_, cudaMemcpyHostToDevice, urgent_));
        CKD(write_(urgent_, dptr(d_evicting_), 0, CU_STREAM_WRITE_VALUE_DEFAULT));
      }
      if (us_since(t) > 7e6) die(kExitProtocol, "%s: the sequence did not finish within 7 s (stream held?)", what);
    }
    CK(cudaStreamSynchronize(app_));
    CK(cudaStreamSynchronize(urgent_));
    LAUNCHED();
  }

  void evictions(Program& p, const EvictionForm& ef) {
    EvictionRow row;
    row.program = p.name();
    row.form = ef.name;
    std::vector<double> lat, lat_copy, lat_batch, drain, span, skipped;
    // Skipped units / the launch's units, per kind: with half the SMs evicted, blocks the hardware keeps
    // dispatching there exit at once, so a spatial eviction may skip most of what was left (see drain_probe.md).
    std::vector<double> frac_temporal, frac_spatial;
    const int max_sequences = opt_.quick ? 20 : 60;
    // Expected: about 1 s. The budget keeps a misbehaving test from eating the other tests' time.
    const double budget_us = (opt_.quick ? 3.0 : 5.0) * 1e6;
    const auto t_phase = Clock::now();
    const double kStallUs = 3000;  // no event for this long after the last: the stream is held
    int method = 0;                // alternates copy / batch
    const bool batch_ok = true;
    std::vector<unsigned> all_slots(nslots_);
    for (unsigned s = 0; s < nslots_; ++s) all_slots[s] = s;
    std::vector<unsigned> list;

    for (int seq = 0; seq < max_sequences && us_since(t_phase) < budget_us &&
                      (row.temporal < ef.temporal || row.spatial < ef.spatial);
         ++seq) {
      ++row.sequences;
      p.reset(app_);
      CK(cudaMemsetAsync(d_bitmaps_, 0, static_cast<size_t>(L_) * bm_words_ * 4, app_));
      CK(cudaStreamSynchronize(app_));
      enqueue_sequence(p, ef.mode, true, true);
      std::vector<char> resumed(L_, 0);
      std::vector<std::vector<unsigned>> snapshot(L_);
      int cur = 0;  // first launch whose event has not been seen
      auto next_at = Clock::now() + std::chrono::microseconds(static_cast<long>(uniform(100, 2000)));
      for (;;) {
        while (cur <= L_) {
          cudaError_t q = cudaEventQuery(events_[cur]);
          if (q == cudaErrorNotReady) break;
          CK(q);
          ++cur;
        }
        if (cur > L_) break;  // sequence done
        if (row.temporal >= ef.temporal && row.spatial >= ef.spatial) break;
        if (Clock::now() < next_at) continue;

        // Evict.
        const int want_t = ef.temporal - row.temporal, want_s = ef.spatial - row.spatial;
        const bool spatial = want_s > 0 && (want_t <= 0 || uniform(0, 1) < static_cast<double>(want_s) / (want_s + want_t));
        const bool by_batch = batch_ok && (method++ % 2 == 1);
        std::vector<unsigned> slots = all_slots;
        if (spatial) {
          std::shuffle(slots.begin(), slots.end(), gen_);
          slots.resize(nslots_ / 2);
          std::sort(slots.begin(), slots.end());
          memset(h_spatial_, 0, words_bytes_);
          for (unsigned s : slots) h_spatial_[s * kWordStride] = 1;
        }
        const int cur_at_request = cur;
        const auto t0 = Clock::now();
        CKD(write_(urgent_, dptr(d_evicting_), 1, CU_STREAM_WRITE_VALUE_DEFAULT));
        set_words(spatial, by_batch, slots);

        // Follow the events until the stream holds (no event for kStallUs) or the sequence ends.
        std::vector<double> seen(L_ + 1, -1.0);
        int k = cur;
        auto last = Clock::now();
        bool held = false;
        while (k <= L_) {
          cudaError_t q = cudaEventQuery(events_[k]);
          if (q == cudaSuccess) {
            seen[k] = us_since(t0);
            ++k;
            last = Clock::now();
            continue;
          }
          if (q != cudaErrorNotReady) CK(q);
          if (us_since(last) > kStallUs) {
            // Asked again after the threshold, so that a host thread descheduled between the query and the
            // clock cannot call a running stream held.
            q = cudaEventQuery(events_[k]);
            if (q == cudaErrorNotReady) {
              held = true;
              break;
            }
            if (q != cudaSuccess) CK(q);
          }
        }
        cur = k;
        if (!held) {
          // The request landed after the last launch's wait: nothing to evict.
          ++row.late;
          CK(cudaMemcpyAsync(d_words_, h_zero_, words_bytes_, cudaMemcpyHostToDevice, urgent_));
          CKD(write_(urgent_, dptr(d_evicting_), 0, CU_STREAM_WRITE_VALUE_DEFAULT));
          CK(cudaStreamSynchronize(urgent_));
          break;
        }
        const int e = k - 1;  // held at the wait behind launch e
        if (e < 0) die(kExitProtocol, "%s/%s: the first launch never finished", p.name(), ef.name);
        const bool idle = e < cur_at_request;  // launch e had ended before the request was made

        // Read what the launches since the request recorded: launch e, and any launch between the request
        // and e. Only e can have skipped units if the wait behind each launch is evaluated after that launch
        // has ended (the event recorded between them should see to that; the CUDA docs do not say): every
        // launch after one that skipped finds the words set and waits. If an earlier one skipped too, all are
        // resumed in launch order and the eviction counts as a multi-launch one (reported).
        const int first = std::max(cur_at_request, 0);
        const size_t stamp_n = static_cast<size_t>(nslots_) * kStampStride;
        if (first <= e)
          CK(cudaMemcpyAsync(h_bitmaps_ + static_cast<size_t>(first) * bm_words_,
                             d_bitmaps_ + static_cast<size_t>(first) * bm_words_,
                             static_cast<size_t>(e - first + 1) * bm_words_ * 4, cudaMemcpyDeviceToHost, urgent_));
        CK(cudaMemcpyAsync(h_stamps_, d_skip_min_, stamp_n * 8, cudaMemcpyDeviceToHost, urgent_));
        CK(cudaMemcpyAsync(h_stamps_ + stamp_n, d_skip_max_, stamp_n * 8, cudaMemcpyDeviceToHost, urgent_));
        CK(cudaMemcpyAsync(h_stamps_ + 2 * stamp_n, d_end_max_, stamp_n * 8, cudaMemcpyDeviceToHost, urgent_));
        CK(cudaStreamSynchronize(urgent_));
        if (cudaEventQuery(events_[k]) != cudaErrorNotReady) {
          // The stream moved on: it was not held, and what was read may be incomplete. Counted; the
          // sequence's bookkeeping and output checks say whether anything was lost.
          LAUNCHED();
          ++protocol_errors_;
          fprintf(stderr, "drain_probe: %s/%s: stream not held behind launch %d after all\n", p.name(), ef.name, e);
        }
        std::string why;
        size_t skipped_units = 0;
        int skipped_launches = 0;
        bool words_cleared = false;
        for (int j = first; j <= e; ++j) {
          const unsigned* h_bm = h_bitmaps_ + static_cast<size_t>(j) * bm_words_;
          if (!undone_units(h_bm, bm_words_, p.units(j, ef.mode), list, &why)) {
            ++row.bookkeeping_failures;
            fail((std::string(p.name()) + "/" + ef.name + " bitmap of launch " + std::to_string(j)).c_str(), why);
            list.clear();
          }
          snapshot[j].assign(h_bm, h_bm + bm_words_);
          resumed[j] = 1;
          if (list.empty()) continue;
          ++skipped_launches;
          skipped_units += list.size();
          if (!words_cleared) {  // before the first resumption; a resumed grid does not look at them
            CK(cudaMemcpyAsync(d_words_, h_zero_, words_bytes_, cudaMemcpyHostToDevice, urgent_));
            words_cleared = true;
          }
          // The list buffer is reused per launch: wait for the previous resumption's copy to be done.
          CK(cudaStreamSynchronize(urgent_));
          std::copy(list.begin(), list.end(), h_list_);
          CK(cudaMemcpyAsync(d_list_, h_list_, list.size() * 4, cudaMemcpyHostToDevice, urgent_));
          p.resume(j, ef.mode, drain_for(j), static_cast<unsigned>(list.size()), urgent_);
        }
        // Resume: the undone units (above, in launch order), the words cleared, then the application's
        // stream let go on.
        if (!words_cleared) CK(cudaMemcpyAsync(d_words_, h_zero_, words_bytes_, cudaMemcpyHostToDevice, urgent_));
        CK(cudaMemsetAsync(d_skip_min_, 0xFF, stamp_n * 8, urgent_));
        CK(cudaMemsetAsync(d_skip_max_, 0, stamp_n * 8, urgent_));
        CKD(write_(urgent_, dptr(d_evicting_), 0, CU_STREAM_WRITE_VALUE_DEFAULT));
        if (skipped_launches > 1) ++row.multi_launch;
        const unsigned units = p.units(e, ef.mode);

        // Device-side times.
        unsigned long long first_skip = ~0ull, last_skip = 0, last_end = 0;
        for (unsigned s = 0; s < nslots_; ++s) {
          first_skip = std::min(first_skip, h_stamps_[s * kStampStride]);
          last_skip = std::max(last_skip, h_stamps_[stamp_n + s * kStampStride]);
          last_end = std::max(last_end, h_stamps_[2 * stamp_n + s * kStampStride]);
        }
        const bool any_skip = first_skip != ~0ull;
        const double latency = idle ? 0.0 : seen[e];
        const double drain_us = any_skip && last_end >= first_skip ? (last_end - first_skip) / 1e3 : NAN;
        const double span_us = any_skip ? (last_skip - first_skip) / 1e3 : NAN;
        if (!idle) (spatial ? frac_spatial : frac_temporal).push_back(static_cast<double>(skipped_units) / units);
        if (spatial) {
          ++row.spatial;
        } else {
          ++row.temporal;
          if (idle) {
            ++row.idle;
          } else {
            lat.push_back(latency);
            (by_batch ? lat_batch : lat_copy).push_back(latency);
            if (any_skip) {
              drain.push_back(drain_us);
              span.push_back(span_us);
            }
            skipped.push_back(static_cast<double>(skipped_units));
          }
        }
        if (detail_)
          fprintf(detail_,
                  "{\"kind\":\"eviction\",\"program\":\"%s\",\"form\":\"%s\",\"sequence\":%d,\"launch\":%d,\"kernel\":\"%s\","
                  "\"spatial\":%s,\"sm_words_set\":%zu,\"set_by\":\"%s\",\"idle\":%s,\"latency_us\":%s,\"drain_device_us\":%s,"
                  "\"skip_span_us\":%s,\"skipped_units\":%zu,\"units\":%u,\"warp_units\":%s,\"launch_seen_after_request\":%d,"
                  "\"launches_with_skips\":%d}\n",
                  p.name(), ef.name, seq, e, p.kernel_of(e), spatial ? "true" : "false", slots.size(),
                  by_batch ? "batch" : "copy", idle ? "true" : "false", num(latency, 1).c_str(), num(drain_us, 2).c_str(),
                  num(span_us, 2).c_str(), skipped_units, units, p.warp_units(e, ef.mode) ? "true" : "false",
                  e - cur_at_request, skipped_launches);
        next_at = Clock::now() + std::chrono::microseconds(static_cast<long>(uniform(100, 2000)));
      }
      wait_sequence_end(p.name());

      // Bookkeeping: every launch's bitmap is empty unless it was resumed, and then unchanged since.
      CK(cudaMemcpy(h_bitmaps_, d_bitmaps_, static_cast<size_t>(L_) * bm_words_ * 4, cudaMemcpyDeviceToHost));
      for (int k = 0; k < L_; ++k) {
        const unsigned* bm = h_bitmaps_ + static_cast<size_t>(k) * bm_words_;
        bool ok = resumed[k] ? std::equal(bm, bm + bm_words_, snapshot[k].begin())
                             : std::all_of(bm, bm + bm_words_, [](unsigned w) { return w == 0; });
        if (!ok) {
          ++row.bookkeeping_failures;
          fail((std::string(p.name()) + "/" + ef.name + " sequence " + std::to_string(seq)).c_str(),
               "launch " + std::to_string(k) + (resumed[k] ? ": bitmap changed after its resumption" : ": skipped units never resumed"));
        }
      }
      std::vector<unsigned char> out = p.output();
      std::string why;
      const bool match = p.same(p.ref, out, why);
      if (!match) {
        ++row.output_failures;
        fail((std::string(p.name()) + "/" + ef.name + " sequence " + std::to_string(seq) + " output").c_str(), why);
      }
      if (detail_)
        fprintf(detail_, "{\"kind\":\"sequence\",\"program\":\"%s\",\"form\":\"%s\",\"sequence\":%d,\"resumed_launches\":%d,\"output\":\"%s\"}\n",
                p.name(), ef.name, seq, static_cast<int>(std::count(resumed.begin(), resumed.end(), 1)), match ? "match" : "MISMATCH");
    }
    if (row.temporal < ef.temporal || row.spatial < ef.spatial) {
      ++protocol_errors_;
      fprintf(stderr, "drain_probe: %s/%s: only %d temporal and %d spatial evictions in %d sequences, %.1f s\n", p.name(),
              ef.name, row.temporal, row.spatial, row.sequences, us_since(t_phase) / 1e6);
    }
    row.latency = stats_of(lat);
    row.latency_copy = stats_of(lat_copy);
    row.latency_batch = stats_of(lat_batch);
    row.drain = stats_of(drain);
    row.skip_span = stats_of(span);
    row.skipped = stats_of(skipped);
    printf("{\"kind\":\"eviction\",\"kernel\":\"%s\",\"variant\":\"%s\",\"temporal\":%d,\"spatial\":%d,\"idle\":%d,\"late\":%d,"
           "\"multi_launch\":%d,\"sequences\":%d,\"outputs\":\"%s\",\"bookkeeping_failures\":%d,\"latency_us\":%s,\"latency_copy_us\":%s,"
           "\"latency_batch_us\":%s,\"drain_device_us\":%s,\"skip_span_us\":%s,\"skipped_units\":%s,"
           "\"skipped_fraction_temporal\":%s,\"skipped_fraction_spatial\":%s}\n",
           p.name(), ef.name, row.temporal, row.spatial, row.idle, row.late, row.multi_launch, row.sequences,
           row.output_failures ? "MISMATCH" : "match", row.bookkeeping_failures, stats_json(row.latency).c_str(),
           stats_json(row.latency_copy).c_str(), stats_json(row.latency_batch).c_str(), stats_json(row.drain).c_str(),
           stats_json(row.skip_span).c_str(), stats_json(row.skipped, 0).c_str(),
           stats_json(stats_of(frac_temporal), 3).c_str(), stats_json(stats_of(frac_spatial), 3).c_str());
    fflush(stdout);
    if (detail_) fflush(detail_);
    eviction_rows_.push_back(row);
  }

 public:
  FILE* detail_ = nullptr;

 private:
  Options opt_;
  Clock::time_point t_init_;
  std::mt19937_64 gen_;
  std::string gpu_;
  int sms_ = 0;
  unsigned nsmid_ = 0, nslots_ = 0;
  size_t words_bytes_ = 0;
  cudaStream_t app_ = nullptr, urgent_ = nullptr;
  WaitValueFn wait_ = nullptr;
  WriteValueFn write_ = nullptr;
  BatchMemOpFn batch_ = nullptr;
  CUstreamBatchMemOpParams batch_ops_[256];
  unsigned *d_words_ = nullptr, *d_evicting_ = nullptr;
  unsigned long long *d_skip_min_ = nullptr, *d_skip_max_ = nullptr, *d_end_max_ = nullptr;
  unsigned *h_ones_ = nullptr, *h_zero_ = nullptr, *h_spatial_ = nullptr;
  unsigned long long* h_stamps_ = nullptr;
  cudaEvent_t t_start_ = nullptr, t_stop_ = nullptr;
  // Per program.
  int L_ = 0;
  size_t bm_words_ = 0;
  unsigned *d_bitmaps_ = nullptr, *d_list_ = nullptr, *h_bitmaps_ = nullptr, *h_list_ = nullptr;
  std::vector<cudaEvent_t> events_;

  std::vector<OverheadRow> overhead_rows_;
  std::vector<EvictionRow> eviction_rows_;
  int failures_ = 0, protocol_errors_ = 0;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) die(kExitUsage, "%s needs a value", a.c_str());
      return argv[++i];
    };
    if (a == "--quick") {
      o.quick = true;
      o.runs = 5;
    } else if (a == "--runs") {
      o.runs = atoi(value());
    } else if (a == "--only") {
      o.only = value();
    } else if (a == "--detail") {
      o.detail = value();
    } else if (a == "--deadline") {
      o.deadline_s = atof(value());
    } else if (a == "--seed") {
      o.seed = strtoull(value(), nullptr, 0);
    } else {
      die(kExitUsage, "usage: %s [--quick] [--runs N] [--only transpose|reduction|pipeline|float_atomics] [--detail FILE] "
                      "[--deadline S] [--seed N] (unknown '%s')", argv[0], a.c_str());
    }
  }
  if (o.runs < 1 || o.runs > 1000) die(kExitUsage, "--runs must be 1..1000");
  if (o.only && strcmp(o.only, "transpose") && strcmp(o.only, "reduction") && strcmp(o.only, "pipeline") &&
      strcmp(o.only, "float_atomics"))
    die(kExitUsage, "--only %s: no such program (transpose, reduction, pipeline, float_atomics)", o.only);
  if (!(o.deadline_s > 0)) die(kExitUsage, "--deadline must be positive");
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  // Before the context: with lazy loading, a kernel's first launch while a stream is held by a wait blocked the
  // host (docs/preemption.md); the resumption kernels are first launched exactly then. One held stream needs
  // more than one hardware queue.
  setenv("CUDA_MODULE_LOADING", "EAGER", 1);
  const char* conn = getenv("CUDA_DEVICE_MAX_CONNECTIONS");
  if (!conn || atoi(conn) < 8) setenv("CUDA_DEVICE_MAX_CONNECTIONS", "8", 1);
  setvbuf(stdout, nullptr, _IOLBF, 0);

  const Options opt = parse(argc, argv);
  const auto t_main = Clock::now();
  std::thread([deadline = opt.deadline_s] {
    std::this_thread::sleep_for(std::chrono::duration<double>(deadline));
    die(kExitWatchdog, "watchdog: still running after %.0f s; the lines above are what was measured", deadline);
  }).detach();

  const int selftest = selftest_undone_units();
  printf("{\"kind\":\"selftest\",\"undone_units\":\"%s\"}\n", selftest == 0 ? "ok" : "FAILED");
  if (selftest) die(kExitMismatch, "undone_units self-test failed");

  Probe probe(opt);
  if (opt.detail) {
    probe.detail_ = fopen(opt.detail, "w");
    if (!probe.detail_) die(kExitUsage, "cannot write %s", opt.detail);
  }
  probe.init();
  // Every program's overhead first (question a), then the evictions, fused first: a hang in an eviction
  // (the watchdog ends it) cannot take the overhead figures with it.
  const char* names[] = {"transpose", "reduction", "pipeline", "float_atomics"};
  std::vector<std::unique_ptr<Program>> programs;
  for (const char* name : names) {
    if (opt.only && strcmp(opt.only, name) != 0) continue;
    if (!strcmp(name, "transpose")) programs.emplace_back(new Transpose());
    else if (!strcmp(name, "reduction")) programs.emplace_back(new Reduction());
    else if (!strcmp(name, "pipeline")) programs.emplace_back(new Pipeline());
    else programs.emplace_back(new FloatAtomics());
  }
  if (programs.empty()) die(kExitUsage, "--only %s: no such program", opt.only);
  fprintf(stderr, "drain_probe: inputs ready, %.1f s since start\n", us_since(t_main) / 1e6);
  for (auto& p : programs) probe.overhead_phase(*p);
  const int scale = opt.quick ? 1 : 3;
  const EvictionForm eforms[] = {{"fused", kFused, 20 * scale, 6 + 7 * (scale - 1)},
                                 {"t0_bar", kT0Bar, 10 * scale, 4 + 3 * (scale - 1)}};
  for (const EvictionForm& ef : eforms)
    for (auto& p : programs) probe.eviction_phase(*p, ef);
  const int code = probe.finish();
  printf("total %.1f s\n", us_since(t_main) / 1e6);
  if (probe.detail_) fclose(probe.detail_);
  fflush(stdout);
  fflush(stderr);
  _exit(code);
}
