// short_kernels.cu: thousands of ~5 us launches whose grids span several waves, back to back in one stream.
// Part of preempt's correctness suite; measures what the runtime adds to a short launch it runs as written (issue 39:
// "added time per launch of a 5 us kernel <= 1 us", docs/preemption.md "Launches as written").
#include "common.h"

namespace {

// 8 waves of 8 CTAs per SM on a 132-SM H200 (fewer SMs: more waves): each launch is longer than one wave, so the
// runtime's one-wave rule does not apply and the launch takes the as-written path with its timing samples.
constexpr unsigned kBlocks = 132 * 8 * 8;
constexpr int kBlock = 128;
constexpr int kLaunches = 2000;
constexpr size_t kCells = size_t(kBlocks) * kBlock;

// One dependent step per launch: cell = cell * 3 + launch (mod 2^32); a launch skipped, run twice or out of order
// changes every cell.
__global__ void step(unsigned *cells, unsigned launch) {
  size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  cells[i] = cells[i] * 3u + launch;
}

}  // namespace

int main(int argc, char **argv) {
  Args args = parse_args(argc, argv);
  unsigned *cells = device_alloc<unsigned>(kCells);
  cudaStream_t stream;
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

  time_reps(
      args.reps, stream, [&] { CUDA_CHECK(cudaMemsetAsync(cells, 0, kCells * sizeof(unsigned), stream)); },
      [&] {
        for (int k = 0; k < kLaunches; ++k) {
          step<<<kBlocks, kBlock, 0, stream>>>(cells, unsigned(k) + 1u);
          LAUNCH_CHECK();
        }
      });

  std::vector<unsigned> out = download(cells, kCells);
  write_output(args.out_path, {out_buf(out)});

  // Every cell starts at 0 and takes the same steps: one expected value.
  unsigned expected = 0;
  for (int k = 0; k < kLaunches; ++k) expected = expected * 3u + unsigned(k) + 1u;
  Checker check("short_kernels");
  for (size_t cell = 0; cell < kCells; ++cell) check.equal(out[cell], expected, "cell %zu", cell);
  check.finish();
  return 0;
}
