// histogram: integer histogram privatised per block in shared memory (atomicAdd + barriers), merged with global atomicAdd.
// Part of preempt's correctness suite (bench/suite, issue: Foundation).
#include "common.h"

namespace {

constexpr size_t kN = (size_t(1) << 26) + 4321;  // the last block is partial
constexpr int kBins = 1000;  // not a multiple of the block size: the zero/merge loops have a ragged end
constexpr int kBlock = 256;
constexpr int kPerThread = 16;
constexpr int kPerBlock = kBlock * kPerThread;
// Each pass shifts keys by its own salt and accumulates into the same bins, so
// the final histogram depends on every pass running exactly once.
constexpr int kPasses = 48;

// Integer atomics commute, so the bins are exact and deterministic however the
// blocks and threads interleave.
__global__ void histogram_shared(const uint32_t* __restrict__ keys, size_t n, uint32_t salt,
                                 unsigned int* __restrict__ bins) {
  __shared__ unsigned int local[kBins];
  for (int b = threadIdx.x; b < kBins; b += blockDim.x) local[b] = 0;
  __syncthreads();

  const size_t base = static_cast<size_t>(blockIdx.x) * kPerBlock;
  for (int j = 0; j < kPerThread; ++j) {
    size_t i = base + static_cast<size_t>(j) * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(&local[(keys[i] + salt) % kBins], 1u);
  }
  __syncthreads();

  for (int b = threadIdx.x; b < kBins; b += blockDim.x)
    if (local[b] != 0) atomicAdd(&bins[b], local[b]);
}

}  // namespace

int main(int argc, char** argv) {
  Args args = parse_args(argc, argv);

  // Skewed keys (a hot bin plus a triangular distribution) so some shared bins
  // see heavy contention; the high part only exercises the modulo.
  Rng rng(0x5EED0006);
  std::vector<uint32_t> keys(kN);
  std::vector<uint64_t> base_hist(kBins, 0);
  for (size_t i = 0; i < kN; ++i) {
    uint32_t bucket = rng.below(8) == 0 ? 7u : std::min(rng.below(kBins), rng.below(kBins));
    keys[i] = bucket + kBins * rng.below(1u << 20);
    ++base_hist[bucket];
  }

  uint32_t* d_keys = upload(keys);
  unsigned int* d_bins = device_alloc<unsigned int>(kBins);

  const unsigned grid = div_up(kN, kPerBlock);
  time_reps(
      args.reps, 0, [&] { CUDA_CHECK(cudaMemset(d_bins, 0, kBins * sizeof(unsigned int))); },
      [&] {
        for (int p = 0; p < kPasses; ++p) {
          histogram_shared<<<grid, kBlock>>>(d_keys, kN, static_cast<uint32_t>(p), d_bins);
          LAUNCH_CHECK();
        }
      });

  std::vector<unsigned int> bins = download(d_bins, kBins);
  write_output(args.out_path, {out_buf(bins)});

  Checker check("histogram");
  for (int b = 0; b < kBins; ++b) {
    uint64_t want = 0;
    for (int p = 0; p < kPasses; ++p) want += base_hist[(b - p + kBins) % kBins];
    check.equal(bins[b], want, "bin %d", b);
  }
  check.finish();
  return 0;
}
