// common.h: helpers shared by every program of the GPU correctness/timing suite.
// Part of preempt's correctness suite (bench/suite, issue: Foundation).
//
// Everything a suite program needs besides its kernels lives here, so the twelve
// programs differ only in what they compute: the error-check macros, the fixed-seed
// generator, argument parsing, the timed-repetition loop with its one-line report,
// the raw output writer and the CPU-reference checker.
//
// Exit statuses (the runner relies on them):
//   1  usage or output-file error
//   2  CUDA API or kernel error
//   3  result differs from the CPU reference (stderr line starts with MISMATCH)
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <vector>

enum SuiteExit { kExitUsage = 1, kExitCuda = 2, kExitMismatch = 3 };

[[noreturn]] inline void suite_cuda_fail(cudaError_t err, const char* what, const char* file, int line) {
  fprintf(stderr, "CUDA error: %s (%s) in %s at %s:%d\n", cudaGetErrorString(err), cudaGetErrorName(err), what,
          file, line);
  exit(kExitCuda);
}

#define CUDA_CHECK_AT(call, file, line)                                           \
  do {                                                                            \
    cudaError_t suite_err_ = (call);                                              \
    if (suite_err_ != cudaSuccess) suite_cuda_fail(suite_err_, #call, file, line); \
  } while (0)
#define CUDA_CHECK(call) CUDA_CHECK_AT(call, __FILE__, __LINE__)

// A bad launch configuration is only reported by cudaGetLastError; faults inside
// the kernel surface at the next synchronisation, which time_reps() checks.
#define LAUNCH_CHECK() CUDA_CHECK(cudaGetLastError())

inline unsigned div_up(size_t a, size_t b) { return static_cast<unsigned>((a + b - 1) / b); }

// ---------------------------------------------------------------------------
// Fixed-seed generator (splitmix64): identical streams on every host and libc,
// which rand() does not promise. Float helpers only produce values that are exact
// multiples of a power of two, so generating inputs involves no rounding at all.
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
  // Uniform in [0, bound); the multiply-shift bias is irrelevant for test data.
  uint32_t below(uint32_t bound) {
    return static_cast<uint32_t>((static_cast<uint64_t>(next_u32()) * bound) >> 32);
  }
  // Uniform in [0, 1) with 24 random bits.
  float unit() { return static_cast<float>(next_u32() >> 8) * (1.0f / 16777216.0f); }
  // Integer in [lo, hi] divided by 2^shift: a value whose sums stay exact.
  float dyadic(int lo, int hi, int shift) {
    int k = lo + static_cast<int>(below(static_cast<uint32_t>(hi - lo + 1)));
    return std::ldexp(static_cast<float>(k), -shift);
  }
};

// ---------------------------------------------------------------------------
struct Args {
  const char* out_path;
  int reps;
};

inline Args parse_args(int argc, char** argv) {
  Args a{nullptr, 5};
  if (argc < 2 || argc > 3) {
    fprintf(stderr, "usage: %s OUTFILE [REPS]\n", argc > 0 ? argv[0] : "prog");
    exit(kExitUsage);
  }
  a.out_path = argv[1];
  if (argc == 3) {
    char* end = nullptr;
    long r = strtol(argv[2], &end, 10);
    if (end == argv[2] || *end != '\0' || r < 1 || r > 100000) {
      fprintf(stderr, "REPS must be a positive integer, got '%s'\n", argv[2]);
      exit(kExitUsage);
    }
    a.reps = static_cast<int>(r);
  }
  return a;
}

// ---------------------------------------------------------------------------
// Device buffers. Nothing is freed explicitly: each program allocates once and
// exits, and process teardown releases the context. The defaulted location
// arguments make a failure report the caller's file:line, not this header's.
template <class T>
T* device_alloc(size_t n, const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  T* p = nullptr;
  CUDA_CHECK_AT(cudaMalloc(&p, n * sizeof(T)), file, line);
  return p;
}

template <class T>
T* upload(const std::vector<T>& h, const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  T* p = device_alloc<T>(h.size(), file, line);
  CUDA_CHECK_AT(cudaMemcpy(p, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice), file, line);
  return p;
}

template <class T>
std::vector<T> download(const T* d, size_t n, const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  std::vector<T> h(n);
  CUDA_CHECK_AT(cudaMemcpy(h.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost), file, line);
  return h;
}

// ---------------------------------------------------------------------------
// Runs `reps` repetitions. reset() restores inputs / clears accumulators and is
// not timed; launch() enqueues the timed kernels on `stream` and must
// LAUNCH_CHECK() each launch. A kernel fault surfaces at the synchronisation
// here and is reported at the caller's file:line. Prints the one stdout line
// the runner parses.
template <class Reset, class Launch>
void time_reps(int reps, cudaStream_t stream, Reset reset, Launch launch, const char* file = __builtin_FILE(),
               int line = __builtin_LINE()) {
  cudaEvent_t start, stop;
  CUDA_CHECK_AT(cudaEventCreate(&start), file, line);
  CUDA_CHECK_AT(cudaEventCreate(&stop), file, line);
  std::vector<float> ms;
  for (int r = 0; r < reps; ++r) {
    reset();
    CUDA_CHECK_AT(cudaDeviceSynchronize(), file, line);
    CUDA_CHECK_AT(cudaEventRecord(start, stream), file, line);
    launch();
    CUDA_CHECK_AT(cudaEventRecord(stop, stream), file, line);
    CUDA_CHECK_AT(cudaEventSynchronize(stop), file, line);
    CUDA_CHECK_AT(cudaDeviceSynchronize(), file, line);
    CUDA_CHECK_AT(cudaGetLastError(), file, line);
    float t = 0.0f;
    CUDA_CHECK_AT(cudaEventElapsedTime(&t, start, stop), file, line);
    ms.push_back(t);
  }
  CUDA_CHECK_AT(cudaEventDestroy(start), file, line);
  CUDA_CHECK_AT(cudaEventDestroy(stop), file, line);

  std::sort(ms.begin(), ms.end());
  size_t n = ms.size();
  double median = (n % 2) ? ms[n / 2] : 0.5 * (static_cast<double>(ms[n / 2 - 1]) + ms[n / 2]);
  printf("time_ms=%.4f min_ms=%.4f max_ms=%.4f\n", median, static_cast<double>(ms.front()),
         static_cast<double>(ms.back()));
  fflush(stdout);
}

// ---------------------------------------------------------------------------
// Output: the raw bytes of each buffer, concatenated in the order given. The
// runner compares these files between the converted and the unconverted build.
struct OutBuf {
  const void* data;
  size_t bytes;
};

template <class T>
OutBuf out_buf(const std::vector<T>& v) {
  return OutBuf{v.data(), v.size() * sizeof(T)};
}

inline void write_output(const char* path, std::initializer_list<OutBuf> bufs) {
  FILE* f = fopen(path, "wb");
  if (!f) {
    perror(path);
    exit(kExitUsage);
  }
  for (const OutBuf& b : bufs) {
    if (b.bytes && fwrite(b.data, 1, b.bytes, f) != b.bytes) {
      perror(path);
      exit(kExitUsage);
    }
  }
  if (fclose(f) != 0) {
    perror(path);
    exit(kExitUsage);
  }
}

// ---------------------------------------------------------------------------
// CPU-reference comparison. Collects every failure but reports only the count
// and the first one, so a broken kernel gives one readable line.
class Checker {
 public:
  explicit Checker(const char* what) : what_(what) {}

  // Float comparison: |got - want| <= rtol * max(|want|, scale). `scale` is the
  // magnitude the rounding error is proportional to (e.g. a sum of absolute
  // terms) so results that cancel to near zero are not held to an impossible bound.
  void close(double got, double want, double rtol, double scale, const char* fmt, ...)
      __attribute__((format(printf, 6, 7))) {
    ++checked_;
    double tol = rtol * std::max(std::fabs(want), scale);
    if (std::fabs(got - want) <= tol) return;  // NaN fails here too
    if (bad_++ == 0) {
      va_list ap;
      va_start(ap, fmt);
      format_first(fmt, ap);
      va_end(ap);
      append_first(" got %.9g want %.9g", got, want);
    }
  }

  // Exact comparison for integers (and for values that must match bit for bit).
  void equal(uint64_t got, uint64_t want, const char* fmt, ...) __attribute__((format(printf, 4, 5))) {
    ++checked_;
    if (got == want) return;
    if (bad_++ == 0) {
      va_list ap;
      va_start(ap, fmt);
      format_first(fmt, ap);
      va_end(ap);
      append_first(" got %llu want %llu", static_cast<unsigned long long>(got),
                   static_cast<unsigned long long>(want));
    }
  }

  void finite(double got, const char* fmt, ...) __attribute__((format(printf, 3, 4))) {
    ++checked_;
    if (std::isfinite(got)) return;
    if (bad_++ == 0) {
      va_list ap;
      va_start(ap, fmt);
      format_first(fmt, ap);
      va_end(ap);
      append_first(" got %g, want a finite value", got);
    }
  }

  // Exits with kExitMismatch if anything failed.
  void finish() const {
    if (bad_ == 0) return;
    fprintf(stderr, "MISMATCH %s: %zu of %zu checked values wrong; first: %s\n", what_, bad_, checked_, first_);
    exit(kExitMismatch);
  }

 private:
  void format_first(const char* fmt, va_list ap) { vsnprintf(first_, sizeof first_, fmt, ap); }
  void append_first(const char* fmt, ...) __attribute__((format(printf, 2, 3))) {
    size_t len = strlen(first_);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(first_ + len, sizeof first_ - len, fmt, ap);
    va_end(ap);
  }

  const char* what_;
  size_t checked_ = 0;
  size_t bad_ = 0;
  char first_[512] = {0};
};
