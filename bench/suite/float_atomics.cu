// float_atomics: float atomicAdd scatter into global bins and into per-block shared-memory bins.
// Part of preempt's correctness suite (bench/suite, issue: Foundation).
//
// Float atomics make the summation order, and so the last bits, vary from run to
// run: this is the one program whose output is compared with a tolerance, which
// it announces on a second stdout line (tolerance=1e-5). The inputs are shaped
// so that bound always holds: every bin receives a fixed, small number of
// positive terms (32 globally, 16 per shared bin), so two orders differ by at
// most about 2 * 31 * 2^-24 ~ 4e-6 relative.
#include "common.h"

namespace {

constexpr int kLogN = 24;
constexpr size_t kN = size_t(1) << kLogN;
constexpr int kLogBins = 19;  // 2^24 values / 2^19 bins = exactly 32 values per bin
constexpr size_t kBins = size_t(1) << kLogBins;
constexpr int kBlock = 256;
constexpr int kSharedBins = 256;
constexpr int kPerThread = 16;
constexpr int kPerBlock = kBlock * kPerThread;  // each shared bin gets exactly 16 values
constexpr int kPasses = 48;                     // pass p scatters into its own slice, scaled by p + 1

// A bijection on [0, 2^24) (odd multiply, then xorshift), so each of the 2^19
// bins (its low bits) is hit by exactly 32 elements, spread across the array.
__host__ __device__ inline uint32_t global_bin(uint32_t i) {
  uint32_t h = (i * 0x9E3779B1u) & ((1u << kLogN) - 1);
  h ^= h >> 7;
  return h & ((1u << kLogBins) - 1);
}

// Within one block's kPerBlock consecutive elements, i mod 256 takes every value
// 16 times; an odd multiply plus a per-block offset keeps that a bijection.
__host__ __device__ inline uint32_t shared_bin(uint32_t i) { return (i * 0x9E37u + (i >> 12)) & (kSharedBins - 1); }

__global__ void scatter_add(const float* __restrict__ v, size_t n, float scale, float* __restrict__ bins) {
  const size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) atomicAdd(&bins[global_bin(static_cast<uint32_t>(i))], v[i] * scale);
}

__global__ void block_histogram(const float* __restrict__ v, float* __restrict__ block_hist) {
  __shared__ float local[kSharedBins];
  for (int b = threadIdx.x; b < kSharedBins; b += blockDim.x) local[b] = 0.0f;
  __syncthreads();
  const size_t base = static_cast<size_t>(blockIdx.x) * kPerBlock;
  for (int j = 0; j < kPerThread; ++j) {
    const size_t i = base + static_cast<size_t>(j) * blockDim.x + threadIdx.x;
    atomicAdd(&local[shared_bin(static_cast<uint32_t>(i))], v[i]);
  }
  __syncthreads();
  for (int b = threadIdx.x; b < kSharedBins; b += blockDim.x) block_hist[blockIdx.x * kSharedBins + b] = local[b];
}

}  // namespace

int main(int argc, char** argv) {
  Args args = parse_args(argc, argv);

  // Values in [1, 2) with 23 fraction bits: positive (no cancellation) and exact.
  Rng rng(0x5EED000D);
  std::vector<float> hv(kN);
  for (float& x : hv) x = 1.0f + std::ldexp(static_cast<float>(rng.next_u32() >> 9), -23);

  const unsigned hist_blocks = static_cast<unsigned>(kN / kPerBlock);
  float* dv = upload(hv);
  float* d_bins = device_alloc<float>(kPasses * kBins);
  float* d_hist = device_alloc<float>(static_cast<size_t>(hist_blocks) * kSharedBins);

  const unsigned grid = div_up(kN, kBlock);
  time_reps(
      args.reps, 0,
      [&] {
        CUDA_CHECK(cudaMemset(d_bins, 0, kPasses * kBins * sizeof(float)));
        CUDA_CHECK(cudaMemset(d_hist, 0xFF, static_cast<size_t>(hist_blocks) * kSharedBins * sizeof(float)));
      },
      [&] {
        for (int p = 0; p < kPasses; ++p) {
          scatter_add<<<grid, kBlock>>>(dv, kN, static_cast<float>(p + 1), d_bins + p * kBins);
          LAUNCH_CHECK();
          block_histogram<<<hist_blocks, kBlock>>>(dv, d_hist);
          LAUNCH_CHECK();
        }
      });
  printf("tolerance=1e-5\n");
  fflush(stdout);

  std::vector<float> bins = download(d_bins, kPasses * kBins);
  std::vector<float> hist = download(d_hist, static_cast<size_t>(hist_blocks) * kSharedBins);
  write_output(args.out_path, {out_buf(bins), out_buf(hist)});

  Checker check("float_atomics");
  std::vector<double> base(kBins, 0.0);
  for (size_t i = 0; i < kN; ++i) base[global_bin(static_cast<uint32_t>(i))] += hv[i];
  for (int p = 0; p < kPasses; ++p)
    for (size_t b = 0; b < kBins; ++b)
      check.close(bins[p * kBins + b], (p + 1) * base[b], 1e-5, 0.0, "pass %d bin %zu", p, b);

  std::vector<double> want(static_cast<size_t>(hist_blocks) * kSharedBins, 0.0);
  for (size_t i = 0; i < kN; ++i) want[i / kPerBlock * kSharedBins + shared_bin(static_cast<uint32_t>(i))] += hv[i];
  for (size_t k = 0; k < want.size(); ++k)
    check.close(hist[k], want[k], 1e-5, 0.0, "block %zu shared bin %zu", k / kSharedBins, k % kSharedBins);
  check.finish();
  return 0;
}
