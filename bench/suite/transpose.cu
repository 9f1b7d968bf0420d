// transpose: shared-memory tiled matrix transpose with a padded tile, on a non-square 2D grid, ping-ponged.
// Part of preempt's correctness suite (bench/suite, issue: Foundation).
#include "common.h"

namespace {

// Neither dimension is a multiple of the tile, and rows != cols, so the grid is
// non-square, edge tiles are partial, and a mixed-up blockIdx.x / blockIdx.y
// writes to the wrong place.
constexpr int kRows = 6000;
constexpr int kCols = 4000;
constexpr int kTile = 32;
constexpr int kBlockRows = 8;  // each thread moves kTile / kBlockRows elements
// Odd, so the result is the transpose. Each launch also adds 1, which makes the
// output count the launches that ran.
constexpr int kLaunches = 161;

__global__ void transpose_add1(const uint32_t* __restrict__ in, uint32_t* __restrict__ out, int rows, int cols) {
  // The +1 column shifts each row by one bank, so the column-wise read below is
  // conflict-free.
  __shared__ uint32_t tile[kTile][kTile + 1];
  int x = blockIdx.x * kTile + threadIdx.x;  // column of `in`
  int y = blockIdx.y * kTile + threadIdx.y;  // row of `in`
  for (int j = 0; j < kTile; j += kBlockRows)
    if (x < cols && y + j < rows) tile[threadIdx.y + j][threadIdx.x] = in[static_cast<size_t>(y + j) * cols + x];
  __syncthreads();

  x = blockIdx.y * kTile + threadIdx.x;  // column of `out` = row of `in`
  y = blockIdx.x * kTile + threadIdx.y;  // row of `out` = column of `in`
  for (int j = 0; j < kTile; j += kBlockRows)
    if (x < rows && y + j < cols) out[static_cast<size_t>(y + j) * rows + x] = tile[threadIdx.x][threadIdx.y + j] + 1u;
}

}  // namespace

int main(int argc, char** argv) {
  Args args = parse_args(argc, argv);

  const size_t elems = static_cast<size_t>(kRows) * kCols;
  Rng rng(0x5EED0009);
  std::vector<uint32_t> hin(elems);
  for (uint32_t& v : hin) v = rng.next_u32();

  uint32_t* d_in = upload(hin);
  uint32_t* d_t = device_alloc<uint32_t>(elems);  // kCols x kRows
  uint32_t* d_u = device_alloc<uint32_t>(elems);  // kRows x kCols

  const dim3 block(kTile, kBlockRows);
  const dim3 grid_fwd(div_up(kCols, kTile), div_up(kRows, kTile));
  const dim3 grid_back(div_up(kRows, kTile), div_up(kCols, kTile));
  time_reps(
      args.reps, 0,
      [&] {
        CUDA_CHECK(cudaMemset(d_t, 0, elems * sizeof(uint32_t)));
        CUDA_CHECK(cudaMemset(d_u, 0, elems * sizeof(uint32_t)));
      },
      [&] {
        for (int k = 0; k < kLaunches; ++k) {
          if (k % 2 == 0) {
            transpose_add1<<<grid_fwd, block>>>(k == 0 ? d_in : d_u, d_t, kRows, kCols);
          } else {
            transpose_add1<<<grid_back, block>>>(d_t, d_u, kCols, kRows);
          }
          LAUNCH_CHECK();
        }
      });

  std::vector<uint32_t> out = download(d_t, elems);
  write_output(args.out_path, {out_buf(out)});

  Checker check("transpose");
  for (int r = 0; r < kCols; ++r)
    for (int c = 0; c < kRows; ++c)
      check.equal(out[static_cast<size_t>(r) * kRows + c], hin[static_cast<size_t>(c) * kCols + r] + kLaunches,
                  "out[%d][%d]", r, c);
  check.finish();
  return 0;
}
