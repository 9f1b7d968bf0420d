// mem_pressure.cu: one process = one job of a memory-pressure mix (schedGPU §7.2, Fig. 10: many instances whose
// demands together exceed the GPU's memory, run one at a time, all at once without admission, or all at once with it).
//
// Usage: mem_pressure JOB DEMAND_BYTES T_MS [--pieces K] [--budget] [--passes P] [--host-ms H]
//   Loads its kernels first (context and modules, no allocation), then allocates DEMAND_BYTES in K cudaMalloc calls
//   (default 1: with implicit admission a process holding part of its demand while waiting for the rest can
//   deadlock with others doing the same, hold-and-wait), writes a pattern over all of it, runs compute passes over
//   it (x = a*x + b on every 32-bit word) for about T_MS milliseconds, checks every word on the device (and a
//   sample on the host), frees, and prints one JSON line on stdout.
//   --budget   declares the whole demand first with preempt_mem_budget (schedGPU's explicit mode); the build
//              linked with the runtime (PREEMPT_API) calls it directly, others look it up (LD_PRELOAD), and a
//              build without it fails with exit 3.
//   --passes P runs exactly P passes; without it the first pass is timed (alone on the GPU that is the job's
//              rate) and P = T_MS / its time. pressure.sh calibrates once and gives every job the same P, so
//              every mode does the same work.
//   --host-ms H  sleeps H ms after the compute passes, memory still held (a host phase, schedGPU's case of
//              low GPU utilisation). Default 0.
//   Exit: 0 verified, 1 wrong values, 2 out of memory (any CUDA call: the JSON says where, "oom": 1), 3 another
//   error or a bad argument.
// Usage: mem_pressure --alloc-overhead N SIZE [--warmup W]
//   After a warm-up (context, W pairs, default 50), times N cudaMalloc(SIZE) + cudaFree pairs one call at a time
//   and prints the per-call latency (median, p99, mean, min, max, us) of each as one JSON line.
//
// "admitted" in the JSON: whether this process's ledger holds the demand after allocating it (preempt_mem_get_info,
// called directly with PREEMPT_API, else looked up in the process: present with LD_PRELOAD=libpreempt_mem.so);
// null in a build with neither. Times: *_s are CLOCK_REALTIME seconds (comparable across processes), *_us and *_ms
// are CLOCK_MONOTONIC durations; alloc_us includes any wait for admission.
#include <dlfcn.h>
#include <errno.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "mem_pattern.h"
#include "preempt.h" // the memory API's types; its functions are called only with PREEMPT_API or looked up

#ifndef MEM_PRESSURE_BUILD
#define MEM_PRESSURE_BUILD "unknown"
#endif

static const unsigned threads_per_block = 256;

// One compute pass: x = a*x + b (mod 2^32) on every word. P passes compose to x = A*x + B (see compose()).
static const uint32_t step_a = MEM_STEP_A, step_b = MEM_STEP_B;

__device__ unsigned long long wrong_words; // the check's count: a global, so that checking allocates nothing

__global__ void fill_kernel(uint32_t *data, size_t words, uint64_t base, uint32_t seed) {
  size_t stride = (size_t)gridDim.x * blockDim.x, first = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  size_t quads = words / 4;
  uint4 *q = reinterpret_cast<uint4 *>(data);
  for (size_t i = first; i < quads; i += stride) {
    uint64_t w = base + 4 * i;
    q[i] = make_uint4(mem_pattern(w, seed), mem_pattern(w + 1, seed), mem_pattern(w + 2, seed),
                      mem_pattern(w + 3, seed));
  }
  for (size_t i = quads * 4 + first; i < words; i += stride)
    data[i] = mem_pattern(base + i, seed);
}

__global__ void step_kernel(uint32_t *data, size_t words, uint32_t a, uint32_t b) {
  size_t stride = (size_t)gridDim.x * blockDim.x, first = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  size_t quads = words / 4;
  uint4 *q = reinterpret_cast<uint4 *>(data);
  for (size_t i = first; i < quads; i += stride) {
    uint4 v = q[i];
    q[i] = make_uint4(a * v.x + b, a * v.y + b, a * v.z + b, a * v.w + b);
  }
  for (size_t i = quads * 4 + first; i < words; i += stride)
    data[i] = a * data[i] + b;
}

__global__ void check_kernel(const uint32_t *data, size_t words, uint64_t base, uint32_t seed, uint32_t a,
                             uint32_t b) {
  size_t stride = (size_t)gridDim.x * blockDim.x, first = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  size_t quads = words / 4;
  const uint4 *q = reinterpret_cast<const uint4 *>(data);
  unsigned long long wrong = 0;
  for (size_t i = first; i < quads; i += stride) {
    uint4 v = q[i];
    uint64_t w = base + 4 * i;
    wrong += (v.x != a * mem_pattern(w, seed) + b) + (v.y != a * mem_pattern(w + 1, seed) + b) +
             (v.z != a * mem_pattern(w + 2, seed) + b) + (v.w != a * mem_pattern(w + 3, seed) + b);
  }
  for (size_t i = quads * 4 + first; i < words; i += stride)
    wrong += data[i] != a * mem_pattern(base + i, seed) + b;
  if (wrong)
    atomicAdd(&wrong_words, wrong);
}

// ---- timing and output

static double realtime_s() {
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  return t.tv_sec + t.tv_nsec / 1e9;
}

static double monotonic_us() {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static std::string json_string(const std::string &text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += (char)c;
    } else if (c < 0x20) {
      char buffer[8];
      std::snprintf(buffer, sizeof buffer, "\\u%04x", c);
      out += buffer;
    } else {
      out += (char)c;
    }
  }
  return out + "\"";
}

static std::string number(double value, const char *format = "%.3f") {
  if (!std::isfinite(value))
    return "null";
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, format, value);
  return buffer;
}

// ---- the memory API, wherever this build has it

using budget_function = preempt_status (*)(size_t);
using info_function = preempt_status (*)(preempt_mem_info *);

static budget_function find_budget() {
#ifdef PREEMPT_API
  return &preempt_mem_budget;
#else
  return reinterpret_cast<budget_function>(dlsym(RTLD_DEFAULT, "preempt_mem_budget"));
#endif
}

static info_function find_info() {
#ifdef PREEMPT_API
  return &preempt_mem_get_info;
#else
  return reinterpret_cast<info_function>(dlsym(RTLD_DEFAULT, "preempt_mem_get_info"));
#endif
}

// ---- one job

struct Job {
  long job = -1;
  uint64_t demand = 0;
  double t_ms = 0;
  unsigned pieces = 1;
  bool budget = false;
  long passes_asked = 0;
  double host_ms = 0;
  // results
  const char *phase = "start";
  int oom = 0;
  std::string error;
  double start_s = 0, ready_s = NAN, alloc_done_s = NAN, end_s = NAN;
  double alloc_us = 0, free_us = NAN, pass_ms = NAN, compute_ms = NAN, check_ms = NAN;
  long passes = 0;
  long long wrong = -1, sampled_wrong = -1;
  int admitted = -1; // -1: unknown (no memory API in this process)
  int budget_status = -1;
  preempt_mem_info info{};
  bool info_valid = false;
  std::vector<void *> allocations;
};

static Job job_state;

static void print_job(const Job &job) {
  bool verified = job.wrong == 0 && job.sampled_wrong == 0 && job.error.empty() && !job.oom;
  std::string line = "{\"job\": " + std::to_string(job.job) + ", \"build\": " + json_string(MEM_PRESSURE_BUILD) +
                     ", \"pid\": " + std::to_string(getpid()) + ", \"demand_bytes\": " + std::to_string(job.demand) +
                     ", \"pieces\": " + std::to_string(job.pieces) + ", \"budget\": " + (job.budget ? "true" : "false") +
                     ", \"oom\": " + std::to_string(job.oom) + ", \"phase\": " + json_string(job.phase) +
                     ", \"alloc_us\": " + number(job.alloc_us, "%.1f") + ", \"free_us\": " + number(job.free_us, "%.1f") +
                     ", \"t_ms\": " + number(job.t_ms, "%.1f") + ", \"passes\": " + std::to_string(job.passes) +
                     ", \"pass_ms\": " + number(job.pass_ms) + ", \"compute_ms\": " + number(job.compute_ms) +
                     ", \"check_ms\": " + number(job.check_ms) + ", \"host_ms\": " + number(job.host_ms, "%.1f") +
                     ", \"start_s\": " + number(job.start_s, "%.6f") + ", \"ready_s\": " + number(job.ready_s, "%.6f") +
                     ", \"alloc_done_s\": " + number(job.alloc_done_s, "%.6f") +
                     ", \"end_s\": " + number(job.end_s, "%.6f") +
                     ", \"wrong_words\": " + (job.wrong < 0 ? std::string("null") : std::to_string(job.wrong)) +
                     ", \"sampled_wrong\": " +
                     (job.sampled_wrong < 0 ? std::string("null") : std::to_string(job.sampled_wrong)) +
                     ", \"verified\": " + (verified ? "true" : "false") + ", \"admitted\": " +
                     (job.admitted < 0 ? "null" : job.admitted ? "true" : "false");
  if (job.budget)
    line += ", \"budget_status\": " + std::to_string(job.budget_status);
  if (job.info_valid)
    line += ", \"ledger\": {\"policy\": " + json_string(job.info.policy) +
            ", \"capacity_bytes\": " + std::to_string(job.info.capacity_bytes) +
            ", \"external_bytes\": " + std::to_string(job.info.external_bytes) +
            ", \"reserved_bytes\": " + std::to_string(job.info.reserved_bytes) +
            ", \"held_bytes\": " + std::to_string(job.info.held_bytes) +
            ", \"clients\": " + std::to_string(job.info.clients) + ", \"waiting\": " + std::to_string(job.info.waiting) +
            "}";
  if (!job.error.empty())
    line += ", \"error\": " + json_string(job.error);
  line += "}";
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
}

// A CUDA call failed: the job's JSON with what and where, then exit 2 (out of memory) or 3.
[[noreturn]] static void fail(const char *what, cudaError_t status) {
  Job &job = job_state;
  job.oom = status == cudaErrorMemoryAllocation;
  job.error = std::string(what) + ": " + cudaGetErrorName(status) + " (" + cudaGetErrorString(status) + ")";
  job.end_s = realtime_s();
  std::fprintf(stderr, "mem_pressure: job %ld: %s\n", job.job, job.error.c_str());
  print_job(job);
  std::exit(job.oom ? 2 : 3);
}

#define CUDA_OR_FAIL(call)                                                                                       \
  do {                                                                                                           \
    cudaError_t status_ = (call);                                                                                \
    if (status_ != cudaSuccess)                                                                                  \
      fail(#call, status_);                                                                                      \
  } while (0)

// x -> a*x + b applied `passes` times is x -> A*x + B.
static void compose(long passes, uint32_t *a, uint32_t *b) {
  uint32_t big_a = 1, big_b = 0;
  for (long k = 0; k < passes; k++) {
    big_a = step_a * big_a;
    big_b = step_a * big_b + step_b;
  }
  *a = big_a;
  *b = big_b;
}

static unsigned grid_blocks() {
  int device = 0, sms = 0;
  CUDA_OR_FAIL(cudaGetDevice(&device));
  CUDA_OR_FAIL(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  return (unsigned)std::max(1, sms) * 8; // 8 CTAs of 256 threads per SM: a full H100 SM
}

// Context, modules and kernels loaded before any allocation: under memory pressure a lazily loaded module or a
// context created late would fail for memory no ledger accounts for.
static void warm_up() {
  CUDA_OR_FAIL(cudaFree(nullptr));
  fill_kernel<<<1, threads_per_block>>>(nullptr, 0, 0, 0);
  step_kernel<<<1, threads_per_block>>>(nullptr, 0, 1, 0);
  check_kernel<<<1, threads_per_block>>>(nullptr, 0, 0, 0, 1, 0);
  CUDA_OR_FAIL(cudaGetLastError());
  CUDA_OR_FAIL(cudaDeviceSynchronize());
}

static void record_admission(Job &job) {
  info_function info = find_info();
  if (!info)
    return;
  if (info(&job.info) == PREEMPT_OK) {
    job.info_valid = true;
    job.admitted = job.info.held_bytes >= job.demand;
  } else {
    job.admitted = 0; // admission off or unavailable in a process that has it
  }
}

static int run_job(Job &job) {
  job.start_s = realtime_s();
  job.phase = "context";
  CUDA_OR_FAIL(cudaSetDevice(0));
  unsigned blocks = grid_blocks();
  warm_up();
  job.ready_s = realtime_s();

  // The allocation calls, timed: waiting for admission happens inside them.
  std::vector<uint64_t> sizes(job.pieces, job.demand / job.pieces / 256 * 256);
  sizes.back() = job.demand - sizes.front() * (job.pieces - 1);
  double began = monotonic_us();
  if (job.budget) {
    job.phase = "budget";
    budget_function budget = find_budget();
    if (!budget) {
      job.error = "--budget: no preempt_mem_budget in this process (neither PREEMPT_API nor LD_PRELOAD)";
      job.end_s = realtime_s();
      print_job(job);
      return 3;
    }
    job.budget_status = budget(job.demand);
    job.alloc_us += monotonic_us() - began;
    if (job.budget_status != PREEMPT_OK) {
      job.oom = job.budget_status == PREEMPT_ERROR_OUT_OF_MEMORY;
      job.error = "preempt_mem_budget(" + std::to_string(job.demand) + ") returned " + std::to_string(job.budget_status);
      job.end_s = realtime_s();
      std::fprintf(stderr, "mem_pressure: job %ld: %s\n", job.job, job.error.c_str());
      print_job(job);
      return job.oom ? 2 : 3;
    }
  }
  job.phase = "alloc";
  for (uint64_t size : sizes) {
    void *pointer = nullptr;
    double one = monotonic_us();
    cudaError_t status = cudaMalloc(&pointer, size);
    job.alloc_us += monotonic_us() - one;
    if (status != cudaSuccess) {
      for (void *held : job.allocations)
        cudaFree(held);
      job.allocations.clear();
      fail("cudaMalloc", status);
    }
    job.allocations.push_back(pointer);
  }
  job.alloc_done_s = realtime_s();
  record_admission(job);

  job.phase = "fill";
  uint64_t base = 0;
  std::vector<uint64_t> bases;
  for (size_t k = 0; k < sizes.size(); k++) {
    bases.push_back(base);
    fill_kernel<<<blocks, threads_per_block>>>(static_cast<uint32_t *>(job.allocations[k]), sizes[k] / 4, base,
                                               (uint32_t)job.job);
    base += sizes[k] / 4;
  }
  CUDA_OR_FAIL(cudaGetLastError());
  CUDA_OR_FAIL(cudaDeviceSynchronize());

  job.phase = "compute";
  auto one_pass = [&]() {
    for (size_t k = 0; k < sizes.size(); k++)
      step_kernel<<<blocks, threads_per_block>>>(static_cast<uint32_t *>(job.allocations[k]), sizes[k] / 4, step_a,
                                                 step_b);
  };
  double compute_began = monotonic_us();
  job.passes = job.passes_asked;
  if (job.passes <= 0) {
    // Calibration: the first pass timed alone; it counts as one of the passes.
    cudaEvent_t before, after;
    CUDA_OR_FAIL(cudaEventCreate(&before));
    CUDA_OR_FAIL(cudaEventCreate(&after));
    CUDA_OR_FAIL(cudaEventRecord(before));
    one_pass();
    CUDA_OR_FAIL(cudaEventRecord(after));
    CUDA_OR_FAIL(cudaEventSynchronize(after));
    float ms = 0;
    CUDA_OR_FAIL(cudaEventElapsedTime(&ms, before, after));
    job.pass_ms = ms;
    job.passes = std::max(1L, std::min(1000000L, std::lround(job.t_ms / std::max(ms, 1e-3f))));
    for (long k = 1; k < job.passes; k++)
      one_pass();
  } else {
    for (long k = 0; k < job.passes; k++)
      one_pass();
  }
  CUDA_OR_FAIL(cudaGetLastError());
  CUDA_OR_FAIL(cudaDeviceSynchronize());
  job.compute_ms = (monotonic_us() - compute_began) / 1000;

  if (job.host_ms > 0) {
    job.phase = "host";
    struct timespec pause = {(time_t)(job.host_ms / 1000), (long)(std::fmod(job.host_ms, 1000.0) * 1e6)};
    while (nanosleep(&pause, &pause) == -1 && errno == EINTR) {
    }
  }

  job.phase = "check";
  double check_began = monotonic_us();
  uint32_t a, b;
  compose(job.passes, &a, &b);
  unsigned long long zero = 0;
  CUDA_OR_FAIL(cudaMemcpyToSymbol(wrong_words, &zero, sizeof zero));
  for (size_t k = 0; k < sizes.size(); k++)
    check_kernel<<<blocks, threads_per_block>>>(static_cast<const uint32_t *>(job.allocations[k]), sizes[k] / 4,
                                                bases[k], (uint32_t)job.job, a, b);
  CUDA_OR_FAIL(cudaGetLastError());
  unsigned long long wrong = 0;
  CUDA_OR_FAIL(cudaMemcpyFromSymbol(&wrong, wrong_words, sizeof wrong));
  job.wrong = (long long)wrong;
  // And a sample on the host, independent of the check kernel: 64 words spread over the demand, ends included.
  long long sampled_wrong = 0;
  for (size_t k = 0; k < sizes.size(); k++) {
    size_t words = sizes[k] / 4;
    for (unsigned s = 0; s < 16 && words; s++) {
      size_t index = words == 1 ? 0 : (size_t)((unsigned __int128)s * (words - 1) / 15);
      uint32_t value = 0;
      CUDA_OR_FAIL(cudaMemcpy(&value, static_cast<uint32_t *>(job.allocations[k]) + index, sizeof value,
                              cudaMemcpyDeviceToHost));
      sampled_wrong += value != a * mem_pattern(bases[k] + index, (uint32_t)job.job) + b;
    }
  }
  job.sampled_wrong = sampled_wrong;
  job.check_ms = (monotonic_us() - check_began) / 1000;

  job.phase = "free";
  double free_began = monotonic_us();
  for (void *pointer : job.allocations)
    CUDA_OR_FAIL(cudaFree(pointer));
  job.allocations.clear();
  job.free_us = monotonic_us() - free_began;
  if (job.budget) {
    budget_function budget = find_budget();
    if (budget)
      budget(0); // gives the reservation back now rather than at exit
  }
  job.phase = "done";
  job.end_s = realtime_s();
  print_job(job);
  if (job.wrong != 0 || job.sampled_wrong != 0) {
    std::fprintf(stderr, "mem_pressure: job %ld: WRONG VALUES: %lld words (check kernel), %lld of the sampled\n",
                 job.job, job.wrong, job.sampled_wrong);
    return 1;
  }
  return 0;
}

// ---- --alloc-overhead

struct Stats {
  double median, p99, mean, min, max;
};

static Stats stats(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  size_t n = values.size();
  double sum = 0;
  for (double v : values)
    sum += v;
  size_t p99 = (size_t)std::ceil(0.99 * n);
  return {n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2, values[p99 ? p99 - 1 : 0], sum / n,
          values.front(), values.back()};
}

static std::string stats_json(const Stats &s) {
  return "{\"median\": " + number(s.median, "%.2f") + ", \"p99\": " + number(s.p99, "%.2f") +
         ", \"mean\": " + number(s.mean, "%.2f") + ", \"min\": " + number(s.min, "%.2f") +
         ", \"max\": " + number(s.max, "%.2f") + "}";
}

static int alloc_overhead(long calls, uint64_t size, long warmup) {
  Job &job = job_state; // for fail()'s message
  job.start_s = realtime_s();
  job.phase = "overhead";
  CUDA_OR_FAIL(cudaSetDevice(0));
  CUDA_OR_FAIL(cudaFree(nullptr));
  int admitted = -1;
  for (long k = 0; k < warmup; k++) {
    void *pointer = nullptr;
    CUDA_OR_FAIL(cudaMalloc(&pointer, size));
    if (k == 0) {
      info_function info = find_info();
      preempt_mem_info state{};
      if (info)
        admitted = info(&state) == PREEMPT_OK && state.held_bytes >= size;
    }
    CUDA_OR_FAIL(cudaFree(pointer));
  }
  std::vector<double> malloc_us, free_us;
  malloc_us.reserve(calls);
  free_us.reserve(calls);
  for (long k = 0; k < calls; k++) {
    void *pointer = nullptr;
    double t0 = monotonic_us();
    cudaError_t status = cudaMalloc(&pointer, size);
    double t1 = monotonic_us();
    if (status != cudaSuccess)
      fail("cudaMalloc", status);
    status = cudaFree(pointer);
    double t2 = monotonic_us();
    if (status != cudaSuccess)
      fail("cudaFree", status);
    malloc_us.push_back(t1 - t0);
    free_us.push_back(t2 - t1);
  }
  const char *mem = std::getenv("PREEMPT_MEM");
  std::printf("{\"alloc_overhead\": true, \"build\": %s, \"calls\": %ld, \"warmup\": %ld, \"size_bytes\": %llu, "
              "\"preempt_mem_env\": %s, \"admitted\": %s, \"malloc_us\": %s, \"free_us\": %s, \"start_s\": %.6f, "
              "\"end_s\": %.6f}\n",
              json_string(MEM_PRESSURE_BUILD).c_str(), calls, warmup, (unsigned long long)size,
              mem ? json_string(mem).c_str() : "null", admitted < 0 ? "null" : admitted ? "true" : "false",
              stats_json(stats(malloc_us)).c_str(), stats_json(stats(free_us)).c_str(), job.start_s, realtime_s());
  return 0;
}

// ---- arguments

static bool parse_u64(const char *text, uint64_t *value) {
  char *end;
  errno = 0;
  unsigned long long parsed = std::strtoull(text, &end, 10);
  if (errno || end == text || *end || text[0] == '-')
    return false;
  *value = parsed;
  return true;
}

static bool parse_double(const char *text, double *value) {
  char *end;
  errno = 0;
  double parsed = std::strtod(text, &end);
  if (errno || end == text || *end || !(parsed >= 0))
    return false;
  *value = parsed;
  return true;
}

static int usage() {
  std::fprintf(stderr, "usage: mem_pressure JOB DEMAND_BYTES T_MS [--pieces K] [--budget] [--passes P] [--host-ms H]\n"
                       "       mem_pressure --alloc-overhead N SIZE [--warmup W]\n");
  return 3;
}

int main(int argc, char **argv) {
  uint64_t value;
  if (argc >= 2 && std::strcmp(argv[1], "--alloc-overhead") == 0) {
    uint64_t calls, size, warmup = 50;
    if (argc < 4 || !parse_u64(argv[2], &calls) || !calls || !parse_u64(argv[3], &size) || !size)
      return usage();
    for (int i = 4; i < argc; i++) {
      if (std::strcmp(argv[i], "--warmup") == 0 && i + 1 < argc && parse_u64(argv[i + 1], &warmup))
        i++;
      else
        return usage();
    }
    return alloc_overhead((long)calls, size, (long)std::max<uint64_t>(warmup, 1));
  }
  Job &job = job_state;
  if (argc < 4 || !parse_u64(argv[1], &value) || !parse_u64(argv[2], &job.demand) || !parse_double(argv[3], &job.t_ms))
    return usage();
  job.job = (long)value;
  for (int i = 4; i < argc; i++) {
    std::string option = argv[i];
    if (option == "--budget") {
      job.budget = true;
    } else if (option == "--pieces" && i + 1 < argc && parse_u64(argv[i + 1], &value) && value >= 1 && value <= 64) {
      job.pieces = (unsigned)value;
      i++;
    } else if (option == "--passes" && i + 1 < argc && parse_u64(argv[i + 1], &value) && value >= 1) {
      job.passes_asked = (long)value;
      i++;
    } else if (option == "--host-ms" && i + 1 < argc && parse_double(argv[i + 1], &job.host_ms)) {
      i++;
    } else {
      return usage();
    }
  }
  if (job.demand < (uint64_t)job.pieces * 4096) {
    std::fprintf(stderr, "mem_pressure: DEMAND_BYTES must be at least 4096 per piece\n");
    return 3;
  }
  return run_job(job);
}
