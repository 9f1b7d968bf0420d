// stencil2d: 5-point Jacobi smoothing on a 2D grid of 2D blocks, many iterations ping-ponging two buffers.
// Part of preempt's correctness suite (bench/suite, issue: Foundation).
#include <utility>

#include "common.h"

namespace {

// Width != height and neither a multiple of the block shape, so the 2D grid is
// non-square and the right and bottom blocks are partial.
constexpr int kNX = 6000;  // columns (x)
constexpr int kNY = 4000;  // rows (y)
constexpr int kBX = 32, kBY = 8;
constexpr int kIters = 160;  // even: the result ends in buffer 0
constexpr int kSamples = 16;

// Power-of-two weights make both products exact, so a fused multiply-add gives
// the same bits as separate operations: the result cannot depend on whether the
// backend contracts them. The boundary stays fixed.
__host__ __device__ inline float jacobi_point(float c, float n, float s, float w, float e) {
  return 0.5f * c + 0.125f * ((n + s) + (w + e));
}

__global__ void jacobi5(const float* __restrict__ in, float* __restrict__ out, int nx, int ny) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= nx || y >= ny) return;
  const size_t i = static_cast<size_t>(y) * nx + x;
  if (x == 0 || y == 0 || x == nx - 1 || y == ny - 1) {
    out[i] = in[i];
    return;
  }
  out[i] = jacobi_point(in[i], in[i - nx], in[i + nx], in[i - 1], in[i + 1]);
}

// CPU value of cell (px, py) after kIters iterations. After T steps a cell only
// depends on cells within Chebyshev distance T, so it suffices to iterate on a
// (2T+1)^2 window, shrinking the updated region by one cell per step.
float reference_cell(const std::vector<float>& init, int px, int py) {
  const int T = kIters;
  const int x0 = std::max(px - T, 0), x1 = std::min(px + T, kNX - 1);
  const int y0 = std::max(py - T, 0), y1 = std::min(py + T, kNY - 1);
  const int w = x1 - x0 + 1, h = y1 - y0 + 1;
  std::vector<float> a(static_cast<size_t>(w) * h);
  for (int y = y0; y <= y1; ++y)
    for (int x = x0; x <= x1; ++x) a[static_cast<size_t>(y - y0) * w + (x - x0)] = init[static_cast<size_t>(y) * kNX + x];
  std::vector<float> b = a;
  for (int s = 1; s <= T; ++s) {
    const int r = T - s;
    for (int y = std::max(py - r, y0); y <= std::min(py + r, y1); ++y) {
      for (int x = std::max(px - r, x0); x <= std::min(px + r, x1); ++x) {
        const size_t i = static_cast<size_t>(y - y0) * w + (x - x0);
        if (x == 0 || y == 0 || x == kNX - 1 || y == kNY - 1)
          b[i] = a[i];
        else
          b[i] = jacobi_point(a[i], a[i - w], a[i + w], a[i - 1], a[i + 1]);
      }
    }
    a.swap(b);
  }
  return a[static_cast<size_t>(py - y0) * w + (px - x0)];
}

}  // namespace

int main(int argc, char** argv) {
  Args args = parse_args(argc, argv);

  const size_t cells = static_cast<size_t>(kNX) * kNY;
  Rng rng(0x5EED0004);
  std::vector<float> init(cells);
  for (float& v : init) v = rng.unit();

  float* d_init = upload(init);
  float* d_buf[2] = {device_alloc<float>(cells), device_alloc<float>(cells)};

  const dim3 block(kBX, kBY);
  const dim3 grid(div_up(kNX, kBX), div_up(kNY, kBY));
  time_reps(
      args.reps, 0,
      [&] {
        CUDA_CHECK(cudaMemcpy(d_buf[0], d_init, cells * sizeof(float), cudaMemcpyDeviceToDevice));
        CUDA_CHECK(cudaMemset(d_buf[1], 0xFF, cells * sizeof(float)));
      },
      [&] {
        for (int it = 0; it < kIters; ++it) {
          jacobi5<<<grid, block>>>(d_buf[it & 1], d_buf[(it + 1) & 1], kNX, kNY);
          LAUNCH_CHECK();
        }
      });

  std::vector<float> out = download(d_buf[kIters & 1], cells);
  write_output(args.out_path, {out_buf(out)});

  // Corners and edges (where the fixed boundary matters), the far partial
  // blocks, and random interior cells.
  Checker check("stencil2d");
  std::vector<std::pair<int, int>> pts = {{0, 0},          {kNX - 1, kNY - 1}, {1, 1},           {kNX - 2, kNY - 2},
                                          {kNX - 1, 1234}, {4321, 0},          {kNX - 5, kNY / 2}, {7, kNY - 3}};
  while (pts.size() < static_cast<size_t>(kSamples))
    pts.emplace_back(static_cast<int>(rng.below(kNX)), static_cast<int>(rng.below(kNY)));
  for (auto [x, y] : pts) {
    float want = reference_cell(init, x, y);
    check.close(out[static_cast<size_t>(y) * kNX + x], want, 1e-6, 1.0, "cell (x=%d, y=%d)", x, y);
  }
  check.finish();
  return 0;
}
