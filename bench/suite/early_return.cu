// early_return: kernels that exit early, uniformly per block (before barriers) and divergently per thread (no barrier after).
// Part of preempt's correctness suite (bench/suite, issue: Foundation).
#include "common.h"

namespace {

constexpr size_t kN = (size_t(1) << 24) + 5;  // the last block of collatz_steps is almost empty
constexpr int kBlock = 256;
constexpr unsigned kFullTiles = static_cast<unsigned>(kN / kBlock);
// tile_sums is launched with a quarter more blocks than it has work for; the
// extra blocks must leave without touching anything.
constexpr unsigned kTileGrid = kFullTiles + kFullTiles / 4;
constexpr uint32_t kStepCap = 400;
// Launch k uses salt k, and both kernels accumulate, so the outputs show that
// every launch ran once.
constexpr int kLaunches = 8;
constexpr size_t kSampleStride = 127;

// Uniform exit: whole blocks return before the shared-memory barriers. Legal
// because no thread of such a block ever reaches a barrier; the persistent-thread
// rewrite must treat this as "done with this block", not "done with the kernel".
__global__ void tile_sums(const uint32_t* __restrict__ x, uint32_t* __restrict__ sums, unsigned limit, uint32_t salt) {
  __shared__ uint32_t sh[kBlock];
  if (blockIdx.x >= limit) return;
  const unsigned t = threadIdx.x;
  sh[t] = x[static_cast<size_t>(blockIdx.x) * kBlock + t] ^ salt;
  __syncthreads();
  for (unsigned s = kBlock / 2; s > 0; s >>= 1) {
    if (t < s) sh[t] += sh[t + s];
    __syncthreads();
  }
  if (t == 0) sums[blockIdx.x] += sh[0];
}

// Divergent exits: the tail guard, a data-dependent skip, and a return from
// inside the loop. No barrier follows any of them.
__global__ void collatz_steps(const uint32_t* __restrict__ x, uint32_t* __restrict__ steps, size_t n, uint32_t salt) {
  const size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  uint64_t v = static_cast<uint64_t>(x[i]) + salt;
  if ((v & 15) == 0) return;  // skipped elements keep their count
  uint32_t count = 0;
  while (v != 1) {
    v = (v & 1) ? 3 * v + 1 : v >> 1;
    if (++count > kStepCap) {
      steps[i] += 1000000u;  // marks a capped trajectory
      return;
    }
  }
  steps[i] += count;
}

uint32_t cpu_collatz_contrib(uint32_t x, uint32_t salt) {
  uint64_t v = static_cast<uint64_t>(x) + salt;
  if ((v & 15) == 0) return 0;
  uint32_t count = 0;
  while (v != 1) {
    v = (v & 1) ? 3 * v + 1 : v >> 1;
    if (++count > kStepCap) return 1000000u;
  }
  return count;
}

}  // namespace

int main(int argc, char** argv) {
  Args args = parse_args(argc, argv);

  Rng rng(0x5EED000B);
  std::vector<uint32_t> hx(kN);
  for (uint32_t& v : hx) v = 1 + rng.below(1u << 17);

  uint32_t* dx = upload(hx);
  uint32_t* d_steps = device_alloc<uint32_t>(kN);
  uint32_t* d_sums = device_alloc<uint32_t>(kTileGrid);

  const unsigned steps_grid = div_up(kN, kBlock);
  time_reps(
      args.reps, 0,
      [&] {
        CUDA_CHECK(cudaMemset(d_steps, 0, kN * sizeof(uint32_t)));
        CUDA_CHECK(cudaMemset(d_sums, 0, kTileGrid * sizeof(uint32_t)));
      },
      [&] {
        for (int k = 0; k < kLaunches; ++k) {
          tile_sums<<<kTileGrid, kBlock>>>(dx, d_sums, kFullTiles, static_cast<uint32_t>(k));
          LAUNCH_CHECK();
          collatz_steps<<<steps_grid, kBlock>>>(dx, d_steps, kN, static_cast<uint32_t>(k));
          LAUNCH_CHECK();
        }
      });

  std::vector<uint32_t> steps = download(d_steps, kN);
  std::vector<uint32_t> sums = download(d_sums, kTileGrid);
  write_output(args.out_path, {out_buf(steps), out_buf(sums)});

  Checker check("early_return");
  for (unsigned b = 0; b < kTileGrid; ++b) {
    uint32_t want = 0;
    if (b < kFullTiles)
      for (int k = 0; k < kLaunches; ++k)
        for (int t = 0; t < kBlock; ++t) want += hx[static_cast<size_t>(b) * kBlock + t] ^ static_cast<uint32_t>(k);
    check.equal(sums[b], want, "tile sum %u%s", b, b < kFullTiles ? "" : " (block should have exited)");
  }
  auto check_elem = [&](size_t i) {
    uint32_t want = 0;
    for (int k = 0; k < kLaunches; ++k) want += cpu_collatz_contrib(hx[i], static_cast<uint32_t>(k));
    check.equal(steps[i], want, "steps[%zu]", i);
  };
  for (size_t i = 0; i < kN; i += kSampleStride) check_elem(i);
  for (size_t i = kN - 2 * kBlock; i < kN; ++i) check_elem(i);
  check.finish();
  return 0;
}
