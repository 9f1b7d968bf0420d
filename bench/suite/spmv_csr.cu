// spmv_csr: scalar CSR sparse matrix-vector product, one thread per row with data-dependent loop trip counts.
// Part of preempt's correctness suite (bench/suite, issue: Foundation).
#include "common.h"

namespace {

constexpr int kRows = (1 << 21) + 17;  // also the column count; not a multiple of the block size
constexpr int kMaxRowLen = 64;         // row lengths 0..63: empty rows and strongly divergent loops
constexpr int kBlock = 256;
// Every launch adds A*x into y, so y ends as kLaunches * (A*x) only if every
// launch ran exactly once.
constexpr int kLaunches = 16;
constexpr int kSampleStride = 257;

__global__ void spmv_csr_accumulate(const int* __restrict__ row_ptr, const int* __restrict__ col,
                                    const float* __restrict__ val, const float* __restrict__ x,
                                    float* __restrict__ y, int rows) {
  int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row < rows) {
    float sum = 0.0f;
    for (int j = row_ptr[row]; j < row_ptr[row + 1]; ++j) sum = fmaf(val[j], x[col[j]], sum);
    y[row] += sum;
  }
}

}  // namespace

int main(int argc, char** argv) {
  Args args = parse_args(argc, argv);

  // Values and x are multiples of 1/16 in [-1, 1]: a row sum has at most 63
  // products that are multiples of 1/256, and kLaunches of those sums stay far
  // below 2^24/256, so every result is exact whatever the rounding mode of the
  // operations that produce it.
  Rng rng(0x5EED0003);
  std::vector<int> row_ptr(kRows + 1);
  row_ptr[0] = 0;
  for (int r = 0; r < kRows; ++r) row_ptr[r + 1] = row_ptr[r] + static_cast<int>(rng.below(kMaxRowLen));
  const size_t nnz = static_cast<size_t>(row_ptr[kRows]);
  std::vector<int> col(nnz);
  std::vector<float> val(nnz);
  for (int r = 0; r < kRows; ++r) {
    for (int j = row_ptr[r]; j < row_ptr[r + 1]; ++j) {
      // Mostly near the diagonal (banded, cache friendly), a quarter anywhere.
      int c = (rng.below(4) == 0) ? static_cast<int>(rng.below(kRows))
                                  : (r + static_cast<int>(rng.below(2049)) - 1024 + kRows) % kRows;
      col[j] = c;
      val[j] = rng.dyadic(-16, 16, 4);
    }
  }
  std::vector<float> hx(kRows);
  for (float& v : hx) v = rng.dyadic(-16, 16, 4);

  int* d_row_ptr = upload(row_ptr);
  int* d_col = upload(col);
  float* d_val = upload(val);
  float* d_x = upload(hx);
  float* d_y = device_alloc<float>(kRows);

  const unsigned grid = div_up(kRows, kBlock);
  time_reps(
      args.reps, 0, [&] { CUDA_CHECK(cudaMemset(d_y, 0, kRows * sizeof(float))); },
      [&] {
        for (int k = 0; k < kLaunches; ++k) {
          spmv_csr_accumulate<<<grid, kBlock>>>(d_row_ptr, d_col, d_val, d_x, d_y, kRows);
          LAUNCH_CHECK();
        }
      });

  std::vector<float> hy = download(d_y, kRows);
  write_output(args.out_path, {out_buf(hy)});

  Checker check("spmv_csr");
  auto check_row = [&](int r) {
    double dot = 0.0, scale = 0.0;
    for (int j = row_ptr[r]; j < row_ptr[r + 1]; ++j) {
      double p = static_cast<double>(val[j]) * hx[col[j]];
      dot += p;
      scale += std::fabs(p);
    }
    check.close(hy[r], kLaunches * dot, 1e-6, kLaunches * scale, "y[%d] (row length %d)", r,
                row_ptr[r + 1] - row_ptr[r]);
  };
  for (int r = 0; r < kRows; r += kSampleStride) check_row(r);
  check_row(kRows - 1);
  check.finish();
  return 0;
}
