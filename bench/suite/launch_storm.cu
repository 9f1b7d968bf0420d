// launch_storm.cu: thousands of small launches on four streams at once, part of preempt's correctness suite.
// Exercises the runtime's launch path under concurrency (bench/suite, issue: Foundation). Every grid fits in one
// wave of persistent CTAs, so by default each launch runs the kernel's unconverted copy (docs/persistent-threads.md,
// "One-wave launches"); with PREEMPT_ONE_WAVE=persistent, which bench/gpu_check.sh also runs, every launch takes a
// control block and the pool (1024) wraps around several times per repetition.
#include "common.h"

namespace {

constexpr int kStreams = 4;
constexpr int kLaunchesPerStream = 1500; // 6000 launches per repetition: persistent, the pool (1024) wraps
constexpr dim3 kGrid(37, 3, 2);          // 222 tasks: fewer than the persistent CTAs of a full GPU (one wave)
constexpr int kBlock = 64;
constexpr size_t kCells = size_t(37) * 3 * 2 * kBlock;

// Every launch adds its own number to each cell of its stream's buffer: a task
// lost or run twice, in any launch, changes the sum.
__global__ void add_launch_number(unsigned long long *cells, unsigned long long launch) {
  unsigned block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  cells[block * blockDim.x + threadIdx.x] += launch * (block + 1);
}

}  // namespace

int main(int argc, char **argv) {
  Args args = parse_args(argc, argv);
  unsigned long long *cells = device_alloc<unsigned long long>(kCells * kStreams);
  cudaStream_t streams[kStreams];
  for (auto &stream : streams) CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

  time_reps(
      args.reps, 0, [&] { CUDA_CHECK(cudaMemset(cells, 0, kCells * kStreams * sizeof(unsigned long long))); },
      [&] {
        for (int k = 0; k < kLaunchesPerStream; ++k)
          for (int s = 0; s < kStreams; ++s) {
            add_launch_number<<<kGrid, kBlock, 0, streams[s]>>>(cells + s * kCells, k * kStreams + s + 1);
            LAUNCH_CHECK();
          }
        // The timed region ends on the legacy stream: join the others into it.
        for (auto &stream : streams) CUDA_CHECK(cudaStreamSynchronize(stream));
      });

  std::vector<unsigned long long> out = download(cells, kCells * kStreams);
  write_output(args.out_path, {out_buf(out)});

  Checker check("launch_storm");
  for (int s = 0; s < kStreams; ++s) {
    unsigned long long launch_sum = 0;
    for (int k = 0; k < kLaunchesPerStream; ++k) launch_sum += static_cast<unsigned long long>(k) * kStreams + s + 1;
    for (size_t cell = 0; cell < kCells; ++cell)
      check.equal(out[s * kCells + cell], launch_sum * (cell / kBlock + 1), "stream %d cell %zu", s, cell);
  }
  check.finish();
  return 0;
}
