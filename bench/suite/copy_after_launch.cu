// copy_after_launch.cu: a kernel of ~1 ms, host work, then a synchronous pageable cudaMemcpy of its result, 60 times.
// Part of preempt's correctness suite: under PREEMPT_STRESS an eviction lands during the host work and its resume
// while the copy waits; a copy that holds the driver then blocked the resume and the process hung
// (runtime-host/sync_copies_cuda.c; simpleStreams and LargeKernelParameter in the corpus did).
#include <chrono>

#include "common.h"

namespace {

constexpr int kRounds = 60;
constexpr unsigned kBlocks = 132 * 8 * 12; // a dozen waves on an H200: converted, not one wave
constexpr int kBlock = 128;
constexpr size_t kCells = size_t(kBlocks) * kBlock;
constexpr int kSteps = 16384; // dependent steps per thread: about 1 ms per launch on an H200

__global__ void churn(unsigned *cells, unsigned round) {
  size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  unsigned v = cells[i] + round;
  for (int s = 0; s < kSteps; ++s) v = v * 1664525u + 1013904223u;
  cells[i] = v;
}

unsigned churn_host(unsigned v, unsigned round) {
  v += round;
  for (int s = 0; s < kSteps; ++s) v = v * 1664525u + 1013904223u;
  return v;
}

// What a program does between launching and reading back: about 0.5 ms of its own work.
void host_work() {
  auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(500);
  while (std::chrono::steady_clock::now() < until) {
  }
}

}  // namespace

int main(int argc, char **argv) {
  Args args = parse_args(argc, argv);
  unsigned *cells = device_alloc<unsigned>(kCells);
  std::vector<unsigned> sums(kRounds), last(kCells);
  time_reps(
      args.reps, 0, [&] { CUDA_CHECK(cudaMemset(cells, 0, kCells * sizeof(unsigned))); },
      [&] {
        for (int r = 0; r < kRounds; ++r) {
          churn<<<kBlocks, kBlock>>>(cells, unsigned(r));
          LAUNCH_CHECK();
          host_work();
          // Pageable and synchronous: it waits for the kernel on the legacy stream.
          CUDA_CHECK(cudaMemcpy(last.data(), cells, kCells * sizeof(unsigned), cudaMemcpyDeviceToHost));
          unsigned sum = 0;
          for (size_t i = 0; i < kCells; i += 4099) sum += last[i];
          sums[r] = sum;
        }
      });
  write_output(args.out_path, {out_buf(sums), out_buf(last)});

  // Every cell starts at 0 and takes the same steps: one value per round.
  Checker check("copy_after_launch");
  unsigned value = 0, samples = 0;
  for (size_t i = 0; i < kCells; i += 4099) samples++;
  for (int r = 0; r < kRounds; ++r) {
    value = churn_host(value, unsigned(r));
    check.equal(sums[r], unsigned(samples * value), "round %d sampled sum", r);
  }
  for (size_t i = 0; i < kCells; i += 97) check.equal(last[i], value, "cell %zu", i);
  check.finish();
  return 0;
}
