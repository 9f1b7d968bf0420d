// half_warp_shuffle.cu: a kernel whose full-mask shuffle runs in half of a warp (HeCBench jacobi's reduction, blocks
// of 16 x 16) runs correctly, unconverted, with every launch asking for a preemptible form (issue 39).
//
// Built with the plugin. Converted, the half of warp 0 that skips the shuffle went on to the task loop while the
// other half waited for it at the shuffle: the program hung (the corpus, H200, PREEMPT_LONG_US=0). The pass leaves
// such kernels as written (KernelSafety.cpp, checkWarpSyncDivergence). Run with PREEMPT_STRESS=1 PREEMPT_LONG_US=0.
// Prints one line: "half_warp_shuffle: N launches, none converted, output correct".
#include <cuda_runtime.h>

#include <cstdio>
#include <vector>

#include "preempt.h"

namespace {

constexpr int kSide = 1024; // 64 x 64 blocks of 16 x 16: many waves
constexpr int kLaunches = 200;

__global__ void row_sums(const float *in, float *sums) {
  __shared__ float partial[16];
  int x = blockIdx.x * 16 + threadIdx.x, y = blockIdx.y * 16 + threadIdx.y;
  float v = in[y * kSide + x];
  for (int offset = 8; offset > 0; offset /= 2)
    v += __shfl_down_sync(0xffffffff, v, offset, 16);
  if (threadIdx.x == 0)
    partial[threadIdx.y] = v;
  __syncthreads();
  if (threadIdx.y == 0) { // lanes 0-15 of warp 0; lanes 16-31 (threadIdx.y == 1) skip it and, as written, exit
    v = partial[threadIdx.x];
    for (int offset = 8; offset > 0; offset /= 2)
      v += __shfl_down_sync(0xffffffff, v, offset);
    if (threadIdx.x == 0)
      atomicAdd(sums, v);
  }
}

} // namespace

int main() {
  std::vector<float> in(kSide * kSide);
  double expected = 0;
  for (int i = 0; i < kSide * kSide; i++) {
    in[i] = static_cast<float>(i % 7); // small integers: every partial sum is exact in float
    expected += in[i];
  }
  float *d_in = nullptr, *d_sum = nullptr;
  if (cudaMalloc(&d_in, in.size() * sizeof(float)) != cudaSuccess || cudaMalloc(&d_sum, sizeof(float)) != cudaSuccess ||
      cudaMemcpy(d_in, in.data(), in.size() * sizeof(float), cudaMemcpyHostToDevice) != cudaSuccess) {
    std::printf("half_warp_shuffle: FAILED: setting up\n");
    return 1;
  }
  int converted = 0;
  for (int r = 0; r < kLaunches; r++) {
    float sum = 0;
    // The program's own shape: a memset, a launch, a synchronous copy back (jacobi's loop).
    cudaMemset(d_sum, 0, sizeof(float));
    row_sums<<<dim3(kSide / 16, kSide / 16), dim3(16, 16)>>>(d_in, d_sum);
    converted += preempt_last_launch() != 0;
    cudaError_t status = cudaMemcpy(&sum, d_sum, sizeof(float), cudaMemcpyDeviceToHost);
    if (status != cudaSuccess || sum != static_cast<float>(expected)) {
      std::printf("half_warp_shuffle: FAILED at launch %d: %.1f, expected %.1f (%s)\n", r, sum, expected,
                  cudaGetErrorString(status));
      return 1;
    }
  }
  if (converted != 0) {
    std::printf("half_warp_shuffle: FAILED: %d of %d launches converted\n", converted, kLaunches);
    return 1;
  }
  std::printf("half_warp_shuffle: %d launches, none converted, output correct\n", kLaunches);
  return 0;
}
