// grid3d: 7-point 3D stencil on a 3D grid of 3D blocks, with out-of-line __device__ helpers that read blockIdx/gridDim.
// Part of preempt's correctness suite (bench/suite, issue: Foundation).
#include "common.h"

namespace {

// All three extents differ; kNX is not a multiple of the block's x extent, so
// the last block along x is partial.
constexpr int kNX = 500, kNY = 300, kNZ = 200;
constexpr int kBX = 32, kBY = 4, kBZ = 4;
// Launch k adds w_k * laplacian(in) into out (w_k a distinct power-of-two
// fraction), so the output reflects every launch.
constexpr int kLaunches = 80;
constexpr size_t kSampleStride = 1009;

__host__ __device__ inline float launch_weight(int k) { return static_cast<float>(k + 1) * (1.0f / 64.0f); }

// __noinline__ on purpose: the converter must rewrite blockIdx/gridDim reads
// inside callees, not only inside the kernel body.
__device__ __noinline__ unsigned linear_block_id() {
  return blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
}

__device__ __noinline__ bool block_on_domain_edge() {
  return blockIdx.x == 0 || blockIdx.y == 0 || blockIdx.z == 0 || blockIdx.x == gridDim.x - 1 ||
         blockIdx.y == gridDim.y - 1 || blockIdx.z == gridDim.z - 1;
}

// Explicit fmaf everywhere: no product is left for the backend to contract.
__host__ __device__ inline float laplacian7(float c, float xm, float xp, float ym, float yp, float zm, float zp) {
  return fmaf(-6.0f, c, ((xm + xp) + (ym + yp)) + (zm + zp));
}

__global__ void stencil7_accumulate(const float* __restrict__ in, float* __restrict__ out,
                                    unsigned* __restrict__ block_visits, int nx, int ny, int nz, float w) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  const int z = blockIdx.z * blockDim.z + threadIdx.z;
  const size_t sx = 1, sy = static_cast<size_t>(nx), sz = static_cast<size_t>(nx) * ny;

  // One thread per block counts the block's visit: a block that runs twice or
  // not at all under the persistent-thread rewrite shows up in block_visits.
  if (threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0) {
    const unsigned id = linear_block_id();
    block_visits[id] += id + 1;
  }

  if (block_on_domain_edge()) {
    // Edge blocks: bounds check and clamp neighbours to the domain (a zero-flux
    // boundary).
    if (x >= nx || y >= ny || z >= nz) return;
    const size_t i = z * sz + y * sy + x * sx;
    const float c = in[i];
    const float xm = x > 0 ? in[i - sx] : c, xp = x < nx - 1 ? in[i + sx] : c;
    const float ym = y > 0 ? in[i - sy] : c, yp = y < ny - 1 ? in[i + sy] : c;
    const float zm = z > 0 ? in[i - sz] : c, zp = z < nz - 1 ? in[i + sz] : c;
    out[i] = fmaf(w, laplacian7(c, xm, xp, ym, yp, zm, zp), out[i]);
  } else {
    // Interior blocks are full and every neighbour exists.
    const size_t i = z * sz + y * sy + x * sx;
    const float c = in[i];
    out[i] = fmaf(w, laplacian7(c, in[i - sx], in[i + sx], in[i - sy], in[i + sy], in[i - sz], in[i + sz]), out[i]);
  }
}

}  // namespace

int main(int argc, char** argv) {
  Args args = parse_args(argc, argv);

  const size_t cells = static_cast<size_t>(kNX) * kNY * kNZ;
  Rng rng(0x5EED000A);
  std::vector<float> hin(cells);
  for (float& v : hin) v = rng.unit();

  const dim3 block(kBX, kBY, kBZ);
  const dim3 grid(div_up(kNX, kBX), div_up(kNY, kBY), div_up(kNZ, kBZ));
  const size_t nblocks = static_cast<size_t>(grid.x) * grid.y * grid.z;

  float* d_in = upload(hin);
  float* d_out = device_alloc<float>(cells);
  unsigned* d_visits = device_alloc<unsigned>(nblocks);

  time_reps(
      args.reps, 0,
      [&] {
        CUDA_CHECK(cudaMemset(d_out, 0, cells * sizeof(float)));
        CUDA_CHECK(cudaMemset(d_visits, 0, nblocks * sizeof(unsigned)));
      },
      [&] {
        for (int k = 0; k < kLaunches; ++k) {
          stencil7_accumulate<<<grid, block>>>(d_in, d_out, d_visits, kNX, kNY, kNZ, launch_weight(k));
          LAUNCH_CHECK();
        }
      });

  std::vector<float> out = download(d_out, cells);
  std::vector<unsigned> visits = download(d_visits, nblocks);
  write_output(args.out_path, {out_buf(out), out_buf(visits)});

  Checker check("grid3d");
  for (size_t b = 0; b < nblocks; ++b)
    check.equal(visits[b], static_cast<uint64_t>(kLaunches) * (b + 1), "visits of block %zu", b);

  // The CPU repeats the GPU's operations (std::fmaf is correctly rounded like
  // fmaf on the device), so exact agreement is expected.
  auto at = [&](int x, int y, int z) {
    x = std::min(std::max(x, 0), kNX - 1);
    y = std::min(std::max(y, 0), kNY - 1);
    z = std::min(std::max(z, 0), kNZ - 1);
    return hin[(static_cast<size_t>(z) * kNY + y) * kNX + x];
  };
  auto check_cell = [&](size_t i) {
    const int x = static_cast<int>(i % kNX), y = static_cast<int>(i / kNX % kNY), z = static_cast<int>(i / kNX / kNY);
    const float lap = laplacian7(at(x, y, z), at(x - 1, y, z), at(x + 1, y, z), at(x, y - 1, z), at(x, y + 1, z),
                                 at(x, y, z - 1), at(x, y, z + 1));
    float want = 0.0f;
    double scale = 0.0;
    for (int k = 0; k < kLaunches; ++k) {
      want = std::fmaf(launch_weight(k), lap, want);
      scale += std::fabs(static_cast<double>(launch_weight(k)) * lap);
    }
    check.close(out[i], want, 1e-6, scale, "cell (x=%d, y=%d, z=%d)", x, y, z);
  };
  for (size_t i = 0; i < cells; i += kSampleStride) check_cell(i);
  check_cell(cells - 1);
  check.finish();
  return 0;
}
