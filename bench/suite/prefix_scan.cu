// prefix_scan: multi-kernel inclusive scan: shared-memory tile scans, recursively scanned tile sums, add-back.
// Part of preempt's correctness suite (bench/suite, issue: Foundation).
#include "common.h"

namespace {

// 2^25 + 777 elements -> 32769 tiles -> 33 tiles -> 1 tile: three levels of
// recursion, each with a partial last tile.
constexpr size_t kN = (size_t(1) << 25) + 777;
constexpr int kThreads = 512;
constexpr int kTile = 2 * kThreads;
// Pass p scans in[i] + p and adds the scan into out, so out depends on every
// pass and on the per-pass argument reaching the first kernel.
constexpr int kPasses = 48;

// Inclusive scan of one tile of kTile values; writes the tile total to
// tile_sums. Unsigned arithmetic wraps, so the result is exact by definition.
__global__ void scan_tiles(const uint32_t* in, uint32_t* out, uint32_t* __restrict__ tile_sums, size_t n,
                           uint32_t bias) {
  __shared__ uint32_t tile[kTile];
  __shared__ uint32_t partial[kThreads];
  const unsigned t = threadIdx.x;
  const size_t base = static_cast<size_t>(blockIdx.x) * kTile;

  for (unsigned j = t; j < kTile; j += kThreads) {
    size_t i = base + j;
    tile[j] = i < n ? in[i] + bias : 0u;
  }
  __syncthreads();

  const uint32_t first = tile[2 * t];
  const uint32_t pair = first + tile[2 * t + 1];
  partial[t] = pair;
  __syncthreads();
  // Hillis-Steele over the per-thread pair sums; the barrier between read and
  // write keeps each step reading the previous step's values.
  for (unsigned off = 1; off < kThreads; off <<= 1) {
    uint32_t add = t >= off ? partial[t - off] : 0u;
    __syncthreads();
    partial[t] += add;
    __syncthreads();
  }
  const uint32_t before = t > 0 ? partial[t - 1] : 0u;
  tile[2 * t] = before + first;
  tile[2 * t + 1] = before + pair;
  __syncthreads();

  for (unsigned j = t; j < kTile; j += kThreads) {
    size_t i = base + j;
    if (i < n) out[i] = tile[j];
  }
  if (t == kThreads - 1) tile_sums[blockIdx.x] = partial[t];
}

// Upper levels: turn tile-local scans into global ones in place.
__global__ void add_tile_offsets(uint32_t* __restrict__ data, const uint32_t* __restrict__ scanned_sums, size_t n) {
  if (blockIdx.x == 0) return;  // the first tile has no predecessor
  const uint32_t offset = scanned_sums[blockIdx.x - 1];
  const size_t base = static_cast<size_t>(blockIdx.x) * kTile;
  for (unsigned j = threadIdx.x; j < kTile; j += blockDim.x) {
    size_t i = base + j;
    if (i < n) data[i] += offset;
  }
}

// Level 0: finish the scan and accumulate it into the output.
__global__ void accumulate_scan(const uint32_t* __restrict__ tile_scan, const uint32_t* __restrict__ scanned_sums,
                                uint32_t* __restrict__ out, size_t n) {
  const uint32_t offset = blockIdx.x > 0 ? scanned_sums[blockIdx.x - 1] : 0u;
  const size_t base = static_cast<size_t>(blockIdx.x) * kTile;
  for (unsigned j = threadIdx.x; j < kTile; j += blockDim.x) {
    size_t i = base + j;
    if (i < n) out[i] += tile_scan[i] + offset;
  }
}

struct ScanPlan {
  std::vector<size_t> len;          // element count at each level
  std::vector<uint32_t*> sums;      // tile sums produced by each level
};

ScanPlan make_plan(size_t n) {
  ScanPlan plan;
  for (size_t len = n;; len = div_up(len, kTile)) {
    plan.len.push_back(len);
    plan.sums.push_back(device_alloc<uint32_t>(div_up(len, kTile)));
    if (len <= static_cast<size_t>(kTile)) break;
  }
  return plan;
}

// In-place scan of plan.sums[level - 1] (plan.len[level] elements).
void scan_level(const ScanPlan& plan, size_t level) {
  uint32_t* data = plan.sums[level - 1];
  const size_t n = plan.len[level];
  const unsigned tiles = div_up(n, kTile);
  scan_tiles<<<tiles, kThreads>>>(data, data, plan.sums[level], n, 0u);
  LAUNCH_CHECK();
  if (tiles > 1) {
    scan_level(plan, level + 1);
    add_tile_offsets<<<tiles, kThreads>>>(data, plan.sums[level], n);
    LAUNCH_CHECK();
  }
}

}  // namespace

int main(int argc, char** argv) {
  Args args = parse_args(argc, argv);

  Rng rng(0x5EED0007);
  std::vector<uint32_t> hin(kN);
  for (uint32_t& v : hin) v = rng.below(16);

  uint32_t* d_in = upload(hin);
  uint32_t* d_tmp = device_alloc<uint32_t>(kN);
  uint32_t* d_out = device_alloc<uint32_t>(kN);
  const ScanPlan plan = make_plan(kN);
  const unsigned tiles0 = div_up(kN, kTile);

  time_reps(
      args.reps, 0, [&] { CUDA_CHECK(cudaMemset(d_out, 0, kN * sizeof(uint32_t))); },
      [&] {
        for (int p = 0; p < kPasses; ++p) {
          scan_tiles<<<tiles0, kThreads>>>(d_in, d_tmp, plan.sums[0], kN, static_cast<uint32_t>(p));
          LAUNCH_CHECK();
          if (tiles0 > 1) scan_level(plan, 1);
          accumulate_scan<<<tiles0, kThreads>>>(d_tmp, plan.sums[0], d_out, kN);
          LAUNCH_CHECK();
        }
      });

  std::vector<uint32_t> out = download(d_out, kN);
  write_output(args.out_path, {out_buf(out)});

  // sum over p of scan(in + p)[i] = P * S[i] + (i + 1) * P(P-1)/2, all mod 2^32.
  Checker check("prefix_scan");
  const uint32_t P = kPasses, tri = P * (P - 1) / 2;
  uint32_t s = 0;
  for (size_t i = 0; i < kN; ++i) {
    s += hin[i];
    uint32_t want = P * s + static_cast<uint32_t>(i + 1) * tri;
    check.equal(out[i], want, "out[%zu]", i);
  }
  check.finish();
  return 0;
}
