// overhead_parts.cu: where a converted launch's time goes when it is never evicted, one piece at a time.
// Issue 3's overhead goal (FLEP §4.1 persistent threads, EffiSha §6.3 adaptive checking, docs/preemption.md "Stream order").
//
// The converted kernels (overhead_kernels.cu built with the plugin) are
// launched here directly with their extra parameters and a control
// block of our own, so each piece the runtime adds can be added alone: the
// bare persistent grid at several check intervals and grid sizes, the
// control-block reset, the three event records, the stream wait on
// done_generation; then the same launches through the runtime. Each variant:
// 96 launches per round in the legacy default stream (as the suite does),
// timed by events, median of 11 rounds with min..max, per launch. Every
// variant's output is checked against the original kernel's. Prints one JSON
// object per line. Usage: overhead_parts [KERNEL|all [VARIANT [ROUNDS]]], the
// filters for profiling one variant alone (ncu).
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "bench_kernels.cuh"
#include "preempt/control_block.h"

extern "C" void *parts_original_stream_add(void);
extern "C" void *parts_converted_stream_add(void);
extern "C" void *parts_original_shared_histogram(void);
extern "C" void *parts_converted_shared_histogram(void);
extern "C" void *parts_original_scatter_add(void);
extern "C" void *parts_converted_scatter_add(void);
extern "C" cudaError_t parts_runtime_scatter_add(unsigned grid, unsigned block, const float *v, size_t n,
                                                 float *bins, unsigned bin_mask);
extern "C" cudaError_t parts_runtime_stream_add(unsigned grid, unsigned block, const float *a, const float *b,
                                                float *c, size_t n);
extern "C" cudaError_t parts_runtime_shared_histogram(unsigned grid, unsigned block, const float *v,
                                                      float *block_bins, int per_thread);

typedef CUresult (*wait_value_fn)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);

namespace {

constexpr int kLaunches = 96, kRounds = 11;

wait_value_fn wait_value;
const char *only_kernel, *only_variant; /* argv filters, for profiling one variant (e.g. under ncu) */
int rounds = kRounds;
preempt_control_block *control;
unsigned generation;
cudaEvent_t marks[3], untimed_marks[3];

struct Pieces {
  unsigned check_interval = 16;
  unsigned ctas_per_sm = 0; /* 0: the occupancy limit, as the runtime */
  bool reset = false;       /* memset the control block's counters first */
  bool same_generation = false; /* with reset: generation 0, so the first fetch takes the fast path */
  bool events = false;
  int untimed_events = 0; /* instead: this many events created without timing */
  bool wait = false;
};

// The argument list of one kernel: its own parameters (the extra ones are added at launch).
struct Kernel {
  const char *name;
  void *original, *converted;
  unsigned grid, block;
  std::vector<void *> args;
  std::function<cudaError_t()> through_runtime;
  std::function<double()> check; /* largest relative difference from the reference output */
  std::function<void()> clear;   /* clears the output before a checked round */
};

// Since kernel ABI 9 a converted kernel's stub is the kernel as written; its persistent form is the module's
// __preempt_persistent_<name> (control_block.h), launched through the driver.
CUfunction persistent_form(void *stub) {
  static auto get_module = driver_function<CUresult (*)(CUmodule *, CUfunction)>("cuFuncGetModule");
  static auto get_name = driver_function<CUresult (*)(const char **, CUfunction)>("cuFuncGetName");
  static auto get_function = driver_function<CUresult (*)(CUfunction *, CUmodule, const char *)>("cuModuleGetFunction");
  cudaFunction_t own;
  CHECK_CUDA(cudaGetFuncBySymbol(&own, stub));
  CUmodule module;
  const char *name = nullptr;
  CUfunction persistent = nullptr;
  std::string wanted;
  if (get_module(&module, (CUfunction)own) != CUDA_SUCCESS || get_name(&name, (CUfunction)own) != CUDA_SUCCESS ||
      (wanted = std::string(PREEMPT_PERSISTENT_KERNEL_PREFIX) + name,
       get_function(&persistent, module, wanted.c_str()) != CUDA_SUCCESS)) {
    std::fprintf(stderr, "overhead_parts: no persistent form beside the converted kernel\n");
    std::exit(2);
  }
  return persistent;
}

unsigned resident_ctas(void *handle, unsigned block, unsigned ctas_per_sm) {
  static auto occupancy =
      driver_function<CUresult (*)(int *, CUfunction, int, size_t)>("cuOccupancyMaxActiveBlocksPerMultiprocessor");
  int per_sm = 0, device = 0, sms = 0;
  if (occupancy(&per_sm, persistent_form(handle), block, 0) != CUDA_SUCCESS) {
    std::fprintf(stderr, "overhead_parts: occupancy query failed\n");
    std::exit(2);
  }
  CHECK_CUDA(cudaGetDevice(&device));
  CHECK_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  if (ctas_per_sm && ctas_per_sm < (unsigned)per_sm)
    per_sm = ctas_per_sm;
  return (unsigned)(per_sm * sms);
}

void launch_converted(const Kernel &kernel, const Pieces &pieces, unsigned ctas) {
  unsigned task_count = kernel.grid, grid_y = 1, grid_z = 1;
  if (pieces.reset)
    CHECK_CUDA(cudaMemsetAsync(control, 0, offsetof(preempt_control_block, done_generation), 0));
  generation = pieces.same_generation ? 0 : generation + 1 ? generation + 1 : 1;
  unsigned interval = pieces.check_interval;
  std::vector<void *> args = kernel.args;
  unsigned first_wave = 0;
  void *extra[PREEMPT_KERNEL_EXTRA_PARAMS] = {&control, &task_count, const_cast<unsigned *>(&kernel.grid),
                                              &grid_y,  &grid_z,     &generation,
                                              &interval, &first_wave};
  args.insert(args.end(), extra, extra + PREEMPT_KERNEL_EXTRA_PARAMS);
  if (pieces.events)
    CHECK_CUDA(cudaEventRecord(marks[0], 0));
  if (pieces.untimed_events >= 3)
    CHECK_CUDA(cudaEventRecord(untimed_marks[0], 0));
  static auto launch = driver_function<CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                                                   unsigned, unsigned, CUstream, void **, void **)>("cuLaunchKernel");
  if (launch(persistent_form(kernel.converted), ctas, 1, 1, kernel.block, 1, 1, 0, 0, args.data(), nullptr) !=
      CUDA_SUCCESS) {
    std::fprintf(stderr, "overhead_parts: launching the persistent form failed\n");
    std::exit(2);
  }
  if (pieces.events)
    CHECK_CUDA(cudaEventRecord(marks[1], 0));
  if (pieces.untimed_events >= 2)
    CHECK_CUDA(cudaEventRecord(untimed_marks[1], 0));
  if (pieces.wait && wait_value(0, (CUdeviceptr)&control->done_generation, generation, CU_STREAM_WAIT_VALUE_EQ) !=
                         CUDA_SUCCESS) {
    std::fprintf(stderr, "overhead_parts: cuStreamWaitValue32 failed\n");
    std::exit(2);
  }
  if (pieces.events)
    CHECK_CUDA(cudaEventRecord(marks[2], 0));
  if (pieces.untimed_events >= 1)
    CHECK_CUDA(cudaEventRecord(untimed_marks[2], 0));
}

// Median, min and max microseconds per launch over the rounds; checks the
// output of an extra round.
void measure(const Kernel &kernel, const char *variant, const std::function<void()> &launch_one,
             const std::string &detail = "") {
  if ((only_kernel && std::strcmp(only_kernel, kernel.name)) || (only_variant && std::strcmp(only_variant, variant)))
    return;
  cudaEvent_t start, stop;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&stop));
  launch_one(); /* warm-up: first-launch costs (module load, runtime sampling) */
  CHECK_CUDA(cudaDeviceSynchronize());
  std::vector<double> per_launch;
  for (int round = 0; round < rounds; round++) {
    CHECK_CUDA(cudaEventRecord(start, 0));
    for (int index = 0; index < kLaunches; index++)
      launch_one();
    CHECK_CUDA(cudaEventRecord(stop, 0));
    CHECK_CUDA(cudaEventSynchronize(stop));
    float milliseconds = 0;
    CHECK_CUDA(cudaEventElapsedTime(&milliseconds, start, stop));
    per_launch.push_back(milliseconds * 1000.0 / kLaunches);
  }
  CHECK_CUDA(cudaGetLastError());
  kernel.clear();
  launch_one();
  CHECK_CUDA(cudaDeviceSynchronize());
  double difference = kernel.check();
  Stats per_launch_stats = stats(per_launch);
  std::printf("{\"kernel\": \"%s\", \"variant\": \"%s\"%s, \"us_per_launch\": %.2f, \"min\": %.2f, \"max\": %.2f, "
              "\"rounds\": %d, \"launches\": %d, \"max_rel_diff\": %.3g, \"correct\": %s}\n",
              kernel.name, variant, detail.c_str(), per_launch_stats.median, per_launch_stats.min,
              per_launch_stats.max, rounds, kLaunches, difference, difference <= 1e-5 ? "true" : "false");
  std::fflush(stdout);
  CHECK_CUDA(cudaEventDestroy(start));
  CHECK_CUDA(cudaEventDestroy(stop));
}

// Float sums (atomics: any order) against a double-precision reference.
double largest_relative_difference(const float *device_values, const std::vector<double> &want) {
  std::vector<float> out(want.size());
  CHECK_CUDA(cudaMemcpy(out.data(), device_values, out.size() * sizeof(float), cudaMemcpyDeviceToHost));
  double worst = 0;
  for (size_t k = 0; k < out.size(); k++) {
    double difference = std::fabs(out[k] - want[k]) / std::max(1.0, std::fabs(want[k]));
    if (!(difference <= worst))
      worst = std::isnan(difference) ? 1.0 : difference;
  }
  return worst;
}

void run_variants(const Kernel &kernel) {
  measure(kernel, "original", [&] {
    CHECK_CUDA(cudaLaunchKernel(kernel.original, dim3(kernel.grid), dim3(kernel.block),
                           const_cast<void **>(kernel.args.data()), 0, 0));
  });
  measure(kernel, "runtime", [&] { CHECK_CUDA(kernel.through_runtime()); });
  unsigned full = resident_ctas(kernel.converted, kernel.block, 0);
  auto bare = [&](const char *variant, Pieces pieces) {
    unsigned ctas = std::min(resident_ctas(kernel.converted, kernel.block, pieces.ctas_per_sm), kernel.grid);
    char detail[160];
    std::snprintf(detail, sizeof detail, ", \"check_interval\": %u, \"ctas\": %u", pieces.check_interval, ctas);
    measure(kernel, variant, [&] { launch_converted(kernel, pieces, ctas); }, detail);
  };
  (void)full;
  for (unsigned interval : {1u, 4u, 16u, 64u, 256u, 1024u}) {
    Pieces pieces;
    pieces.check_interval = interval;
    bare("bare", pieces);
  }
  for (unsigned per_sm : {1u, 2u, 4u}) {
    Pieces pieces;
    pieces.ctas_per_sm = per_sm;
    bare("bare_fewer_ctas", pieces);
  }
  Pieces with;
  with.reset = true;
  bare("bare_reset_new_generation", with);
  with.same_generation = true;
  bare("bare_reset_same_generation", with);
  with = Pieces();
  with.events = true;
  bare("bare_events", with);
  for (int count = 1; count <= 3; count++) {
    with = Pieces();
    with.untimed_events = count;
    char variant[64];
    std::snprintf(variant, sizeof variant, "bare_%d_untimed_events", count);
    bare(variant, with);
  }
  with = Pieces();
  with.wait = true;
  bare("bare_wait", with);
  with.untimed_events = 1;
  bare("bare_wait_1_untimed_event", with);
  with = Pieces();
  with.events = true;
  bare("bare_events_wait", with);
}

} // namespace

int main(int argc, char **argv) {
  if (argc > 1 && std::strcmp(argv[1], "all"))
    only_kernel = argv[1];
  if (argc > 2)
    only_variant = argv[2];
  if (argc > 3)
    rounds = std::atoi(argv[3]) > 0 ? std::atoi(argv[3]) : kRounds;
  wait_value = driver_function<wait_value_fn>("cuStreamWaitValue32");
  CHECK_CUDA(cudaMalloc(&control, sizeof *control));
  CHECK_CUDA(cudaMemset(control, 0, sizeof *control));
  CHECK_CUDA(cudaEventCreate(&marks[0]));
  CHECK_CUDA(cudaEventCreate(&marks[1]));
  CHECK_CUDA(cudaEventCreateWithFlags(&marks[2], cudaEventDisableTiming));
  for (cudaEvent_t &mark : untimed_marks)
    CHECK_CUDA(cudaEventCreateWithFlags(&mark, cudaEventDisableTiming));

  for (int log2 : {23, 25}) {
    size_t n = (size_t(1) << log2) + 333;
    std::vector<float> host_a(n), host_b(n);
    for (size_t i = 0; i < n; i++) {
      host_a[i] = (float)(i % 1000) * 0.5f;
      host_b[i] = (float)(i % 77) * 0.25f;
    }
    float *a, *b, *c;
    CHECK_CUDA(cudaMalloc(&a, n * sizeof(float)));
    CHECK_CUDA(cudaMalloc(&b, n * sizeof(float)));
    CHECK_CUDA(cudaMalloc(&c, n * sizeof(float)));
    CHECK_CUDA(cudaMemcpy(a, host_a.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(b, host_b.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    std::string name = "stream_add_2e" + std::to_string(log2);
    Kernel kernel{name.c_str(), parts_original_stream_add(), parts_converted_stream_add(),
                  (unsigned)((n + 255) / 256), 256, {&a, &b, &c, &n}, {}, {}, {}};
    kernel.through_runtime = [&] { return parts_runtime_stream_add(kernel.grid, 256, a, b, c, n); };
    kernel.clear = [&] { CHECK_CUDA(cudaMemset(c, 0, n * sizeof(float))); };
    kernel.check = [&] {
      std::vector<float> out(n);
      CHECK_CUDA(cudaMemcpy(out.data(), c, n * sizeof(float), cudaMemcpyDeviceToHost));
      double worst = 0;
      for (size_t i = 0; i < n; i++)
        if (out[i] != host_a[i] + host_b[i])
          worst = 1;
      return worst;
    };
    run_variants(kernel);
    CHECK_CUDA(cudaFree(a));
    CHECK_CUDA(cudaFree(b));
    CHECK_CUDA(cudaFree(c));
  }

  {
    const int per_thread = 16, block = 256;
    size_t n = size_t(1) << 24;
    unsigned blocks = (unsigned)(n / (block * per_thread));
    std::vector<float> host_v(n);
    for (size_t i = 0; i < n; i++)
      host_v[i] = 1.0f + (float)(i % 4096) / 4096.0f;
    float *v, *bins;
    size_t bin_count = (size_t)blocks * 256;
    CHECK_CUDA(cudaMalloc(&v, n * sizeof(float)));
    CHECK_CUDA(cudaMalloc(&bins, bin_count * sizeof(float)));
    CHECK_CUDA(cudaMemcpy(v, host_v.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    std::vector<double> want(bin_count, 0.0);
    for (size_t i = 0; i < n; i++)
      want[i / (block * per_thread) * 256 + ((i * 0x9E37u + (i >> 12)) & 255)] += host_v[i];
    int per = per_thread;
    Kernel kernel{"shared_histogram", parts_original_shared_histogram(), parts_converted_shared_histogram(),
                  blocks, (unsigned)block, {&v, &bins, &per}, {}, {}, {}};
    kernel.through_runtime = [&] { return parts_runtime_shared_histogram(blocks, block, v, bins, per_thread); };
    kernel.clear = [&] { CHECK_CUDA(cudaMemset(bins, 0xff, bin_count * sizeof(float))); };
    kernel.check = [&] { return largest_relative_difference(bins, want); };
    run_variants(kernel);
  }
  {
    size_t n = size_t(1) << 24, bin_count = size_t(1) << 19;
    std::vector<float> host_v(n);
    for (size_t i = 0; i < n; i++)
      host_v[i] = 1.0f + (float)(i % 64) / 64.0f;
    float *v, *bins;
    CHECK_CUDA(cudaMalloc(&v, n * sizeof(float)));
    CHECK_CUDA(cudaMalloc(&bins, bin_count * sizeof(float)));
    CHECK_CUDA(cudaMemcpy(v, host_v.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    unsigned bin_mask = (unsigned)bin_count - 1;
    std::vector<double> want(bin_count, 0.0);
    for (size_t i = 0; i < n; i++) {
      unsigned h = ((unsigned)i * 0x9E3779B1u) & 0xffffffu;
      want[(h ^ (h >> 7)) & bin_mask] += host_v[i];
    }
    unsigned blocks = (unsigned)(n / 256);
    Kernel kernel{"scatter_add", parts_original_scatter_add(), parts_converted_scatter_add(), blocks, 256,
                  {&v, &n, &bins, &bin_mask}, {}, {}, {}};
    kernel.through_runtime = [&] { return parts_runtime_scatter_add(blocks, 256, v, n, bins, bin_mask); };
    kernel.clear = [&] { CHECK_CUDA(cudaMemset(bins, 0, bin_count * sizeof(float))); };
    kernel.check = [&] { return largest_relative_difference(bins, want); };
    run_variants(kernel);
  }
  return 0;
}
