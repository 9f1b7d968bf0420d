// matmul_tiled: float C = A*B with shared-memory tiles and __syncthreads on a non-square 2D grid.
// Part of preempt's correctness suite (bench/suite, issue: Foundation).
#include "common.h"

namespace {

// No dimension is a multiple of the tile, so edge blocks load zero padding and
// threads outside C still take part in every barrier. M != N makes a swapped
// blockIdx.x / blockIdx.y produce out-of-range or wrong results.
constexpr int kM = 3000;  // rows of A and C
constexpr int kN = 4000;  // columns of B and C
constexpr int kK = 3500;  // columns of A, rows of B
constexpr int kTile = 16;
constexpr size_t kSampleStride = 997;

__global__ void matmul_tiled(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                             int M, int N, int K) {
  __shared__ float As[kTile][kTile];
  __shared__ float Bs[kTile][kTile];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * kTile + ty;
  const int col = blockIdx.x * kTile + tx;

  float acc = 0.0f;
  for (int t = 0; t < K; t += kTile) {
    const int ak = t + tx, bk = t + ty;
    As[ty][tx] = (row < M && ak < K) ? A[static_cast<size_t>(row) * K + ak] : 0.0f;
    Bs[ty][tx] = (bk < K && col < N) ? B[static_cast<size_t>(bk) * N + col] : 0.0f;
    __syncthreads();
    for (int k = 0; k < kTile; ++k) acc = fmaf(As[ty][k], Bs[k][tx], acc);
    __syncthreads();
  }
  if (row < M && col < N) C[static_cast<size_t>(row) * N + col] = acc;
}

}  // namespace

int main(int argc, char** argv) {
  Args args = parse_args(argc, argv);

  // Inputs are multiples of 1/8 in [-1, 1]: every product is a multiple of 1/64
  // and every partial sum stays below 2^24/64, so all arithmetic is exact. The
  // result then cannot depend on summation order or FMA contraction, and the
  // CPU check is tight.
  Rng rng(0x5EED0002);
  std::vector<float> hA(static_cast<size_t>(kM) * kK), hB(static_cast<size_t>(kK) * kN);
  for (float& v : hA) v = rng.dyadic(-8, 8, 3);
  for (float& v : hB) v = rng.dyadic(-8, 8, 3);

  float* dA = upload(hA);
  float* dB = upload(hB);
  float* dC = device_alloc<float>(static_cast<size_t>(kM) * kN);

  const dim3 block(kTile, kTile);
  const dim3 grid(div_up(kN, kTile), div_up(kM, kTile));
  time_reps(
      args.reps, 0, [&] { CUDA_CHECK(cudaMemset(dC, 0xFF, static_cast<size_t>(kM) * kN * sizeof(float))); },
      [&] {
        matmul_tiled<<<grid, block>>>(dA, dB, dC, kM, kN, kK);
        LAUNCH_CHECK();
      });

  std::vector<float> hC = download(dC, static_cast<size_t>(kM) * kN);
  write_output(args.out_path, {out_buf(hC)});

  Checker check("matmul_tiled");
  auto check_at = [&](size_t idx) {
    const size_t r = idx / kN, c = idx % kN;
    double want = 0.0, scale = 0.0;
    for (int k = 0; k < kK; ++k) {
      double p = static_cast<double>(hA[r * kK + k]) * hB[static_cast<size_t>(k) * kN + c];
      want += p;
      scale += std::fabs(p);
    }
    check.close(hC[idx], want, 1e-6, scale, "C[%zu][%zu]", r, c);
  };
  for (size_t idx = 0; idx < hC.size(); idx += kSampleStride) check_at(idx);
  check_at(hC.size() - 1);  // the bottom-right corner lives in a partial edge block
  check.finish();
  return 0;
}
