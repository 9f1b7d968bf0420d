// exact_48k_shared.cu: a launch of exactly 48 KiB of dynamic shared memory, which the kernel as written takes with no
// attribute, runs converted and correct under evictions (FLEP §4.1's persistent form; issue 39, HeCBench bincount).
//
// Built with the plugin. The persistent form has static shared memory of its own (the task context, 368 bytes on
// sm_90), and a function takes at most 48 KiB of shared memory in all unless raised: HeCBench bincount's 48 KiB
// launch failed in that form ("launching the persistent grid failed ... 719") under PREEMPT_STRESS. The runtime
// raises the form's own limit (gpu_cuda.c), or runs the launch as written where the form cannot hold it (launch.c).
// Run with PREEMPT_STRESS=1 PREEMPT_LONG_US=0. Checks every bin; prints one line:
// "exact_48k_shared: N of N launches converted, output correct".
#include <cuda_runtime.h>

#include <cstdio>
#include <vector>

#include "preempt.h"

namespace {

constexpr int kBins = 12288; // ints: 49152 bytes, the 48 KiB default limit
constexpr int kThreads = 256;
constexpr int kBlocks = 40000; // many waves: long enough to be converted

__global__ void histogram_48k(int *out, const int *in, int n) {
  extern __shared__ int bins[];
  for (int i = threadIdx.x; i < kBins; i += blockDim.x) bins[i] = 0;
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    atomicAdd(&bins[in[i] % kBins], 1);
  __syncthreads();
  for (int i = threadIdx.x; i < kBins; i += blockDim.x)
    if (bins[i]) atomicAdd(&out[i], bins[i]);
}

} // namespace

int main() {
  const int n = kBlocks * kThreads, launches = 10;
  std::vector<int> in(n), expected(kBins, 0), got(kBins);
  for (int i = 0; i < n; i++) {
    in[i] = static_cast<int>((static_cast<unsigned>(i) * 2654435761u) >> 7);
    expected[in[i] % kBins] += launches;
  }
  int *d_in = nullptr, *d_out = nullptr;
  if (cudaMalloc(&d_in, n * sizeof(int)) != cudaSuccess || cudaMalloc(&d_out, kBins * sizeof(int)) != cudaSuccess ||
      cudaMemcpy(d_in, in.data(), n * sizeof(int), cudaMemcpyHostToDevice) != cudaSuccess ||
      cudaMemset(d_out, 0, kBins * sizeof(int)) != cudaSuccess) {
    std::printf("exact_48k_shared: FAILED: setting up\n");
    return 1;
  }
  int converted = 0;
  for (int r = 0; r < launches; r++) {
    histogram_48k<<<kBlocks, kThreads, kBins * sizeof(int)>>>(d_out, d_in, n);
    if (cudaGetLastError() != cudaSuccess) {
      std::printf("exact_48k_shared: FAILED: launch %d refused\n", r);
      return 1;
    }
    converted += preempt_last_launch() != 0;
  }
  cudaError_t status = cudaDeviceSynchronize();
  if (status == cudaSuccess)
    status = cudaMemcpy(got.data(), d_out, kBins * sizeof(int), cudaMemcpyDeviceToHost);
  for (int i = 0; i < kBins; i++)
    if (status != cudaSuccess || got[i] != expected[i]) {
      std::printf("exact_48k_shared: FAILED at bin %d: %d, expected %d (%s)\n", i, got[i], expected[i],
                  cudaGetErrorString(status));
      return 1;
    }
  std::printf("exact_48k_shared: %d of %d launches converted, output correct\n", converted, launches);
  return 0;
}
