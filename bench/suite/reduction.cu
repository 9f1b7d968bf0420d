// reduction: float sum by a shared-memory tree per block (__syncthreads each level), finished by a second kernel.
// Part of preempt's correctness suite (bench/suite, issue: Foundation).
#include "common.h"

namespace {

constexpr size_t kN = (size_t(1) << 26) - 12345;  // the last block is partial
constexpr int kBlock = 256;
constexpr int kPerThread = 4;
constexpr int kTile = kBlock * kPerThread;
constexpr int kFinalBlock = 1024;
// Each pass reduces the same array read from a different rotation, so every pass
// has a different summation order, a distinct launch, and its own result slot.
constexpr int kPasses = 128;

// A fixed tree with a barrier at every level: the summation order depends only
// on the block's data, never on scheduling, so the result is bit-reproducible.
template <int kThreads>
__device__ float block_tree_sum(float* sh, float v) {
  const unsigned t = threadIdx.x;
  sh[t] = v;
  __syncthreads();
  for (unsigned s = kThreads / 2; s > 0; s >>= 1) {
    if (t < s) sh[t] += sh[t + s];
    __syncthreads();
  }
  return sh[0];
}

__global__ void block_sums(const float* __restrict__ x, size_t n, size_t rotation, float* __restrict__ partial) {
  __shared__ float sh[kBlock];
  const size_t base = static_cast<size_t>(blockIdx.x) * kTile;
  float v = 0.0f;
  for (int j = 0; j < kPerThread; ++j) {
    size_t i = base + j * kBlock + threadIdx.x;
    if (i < n) {
      size_t src = i + rotation;
      if (src >= n) src -= n;
      v += x[src];
    }
  }
  float total = block_tree_sum<kBlock>(sh, v);
  if (threadIdx.x == 0) partial[blockIdx.x] = total;
}

__global__ void finish_sum(const float* __restrict__ partial, int count, float* __restrict__ result) {
  __shared__ float sh[kFinalBlock];
  float v = 0.0f;
  for (int i = threadIdx.x; i < count; i += kFinalBlock) v += partial[i];
  float total = block_tree_sum<kFinalBlock>(sh, v);
  if (threadIdx.x == 0) *result = total;
}

size_t rotation_of(int pass) { return (static_cast<size_t>(pass) * 7919 * 1031) % kN; }

}  // namespace

int main(int argc, char** argv) {
  Args args = parse_args(argc, argv);

  Rng rng(0x5EED0005);
  std::vector<float> hx(kN);
  for (float& v : hx) v = rng.unit();  // non-negative: no cancellation, a relative check is meaningful

  const int blocks = static_cast<int>(div_up(kN, kTile));
  float* dx = upload(hx);
  float* d_partial = device_alloc<float>(blocks);
  float* d_results = device_alloc<float>(kPasses);

  time_reps(
      args.reps, 0,
      [&] {
        // NaN bytes: a pass that never writes its slot cannot pass the check.
        CUDA_CHECK(cudaMemset(d_results, 0xFF, kPasses * sizeof(float)));
        CUDA_CHECK(cudaMemset(d_partial, 0xFF, blocks * sizeof(float)));
      },
      [&] {
        for (int p = 0; p < kPasses; ++p) {
          block_sums<<<blocks, kBlock>>>(dx, kN, rotation_of(p), d_partial);
          LAUNCH_CHECK();
          finish_sum<<<1, kFinalBlock>>>(d_partial, blocks, d_results + p);
          LAUNCH_CHECK();
        }
      });

  std::vector<float> results = download(d_results, kPasses);
  std::vector<float> partial = download(d_partial, blocks);
  write_output(args.out_path, {out_buf(results), out_buf(partial)});

  Checker check("reduction");
  double total = 0.0;
  for (float v : hx) total += v;
  for (int p = 0; p < kPasses; ++p) check.close(results[p], total, 1e-5, 0.0, "pass %d total", p);

  // Block partials of the last pass, every 61st block and the partial last one.
  const size_t rot = rotation_of(kPasses - 1);
  auto check_block = [&](int b) {
    double want = 0.0;
    for (size_t i = static_cast<size_t>(b) * kTile; i < std::min(kN, static_cast<size_t>(b + 1) * kTile); ++i)
      want += hx[(i + rot) % kN];
    check.close(partial[b], want, 1e-5, 0.0, "last pass, block %d partial", b);
  };
  for (int b = 0; b < blocks; b += 61) check_block(b);
  check_block(blocks - 1);
  check.finish();
  return 0;
}
