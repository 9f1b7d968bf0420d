// device_reset.cu: converted launches under evictions, cudaDeviceReset, then the same again: the program must run as
// it does as written (issue 39: real programs; older ones reset the device between phases or test cases).
//
// Built with the plugin; run with PREEMPT_STRESS=1 PREEMPT_LONG_US=0. cudaDeviceReset frees every allocation and
// handle of the process on the device: preempt_cudaDeviceReset (mem_intercept_cuda.c) gives the allocations back to
// memory admission (test/lit/mem/device_reset.test) and shuts the launch runtime down first (preempt_shutdown), so
// that phase 2's launches start afresh. Each phase allocates, runs 10 launches of a kernel long enough to be converted and
// evicted, and checks every element (a launch lost or run twice changes it). Prints one line:
// "device_reset: phase 1 N of 10 launches converted, phase 2 M of 10, output correct".
#include <cuda_runtime.h>

#include <cstdio>
#include <vector>

#include "preempt.h"

namespace {

constexpr int kThreads = 256;
constexpr int kBlocks = 40000; // many waves: long enough to be converted
constexpr int kLaunches = 10;

// About 1 ms a launch on the H200 (4096 dependent steps a thread): long enough to be evicted under PREEMPT_STRESS.
constexpr int kSteps = 4096;
__device__ float step_value(int i) {
  unsigned h = static_cast<unsigned>(i);
  for (int step = 0; step < kSteps; step++)
    h = h * 1664525u + 1013904223u;
  return h == 0u ? 2.0f : 1.0f;
}

// The same on the host in one step per element: kSteps steps of h -> a h + c are h -> A h + C.
float step_value_host(int i) {
  static unsigned a = 1, c = 0;
  static bool ready = false;
  for (int step = 0; !ready && step < kSteps; step++) {
    a *= 1664525u;
    c = c * 1664525u + 1013904223u;
  }
  ready = true;
  return a * static_cast<unsigned>(i) + c == 0u ? 2.0f : 1.0f;
}

// Adds a step to each element: a launch lost or run twice shows in the sum.
__global__ void add_step(float *data, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    data[i] += step_value(i);
}

// One phase; returns the launches converted, or -1 after printing why it failed.
int phase(int number) {
  const int n = kBlocks * kThreads;
  std::vector<float> host(n), expected(n);
  for (int i = 0; i < n; i++)
    host[i] = static_cast<float>(i % 4);
  for (int i = 0; i < n; i++)
    expected[i] = host[i] + kLaunches * step_value_host(i); // small integers: exact in float
  float *data = nullptr;
  if (cudaMalloc(&data, n * sizeof(float)) != cudaSuccess ||
      cudaMemcpy(data, host.data(), n * sizeof(float), cudaMemcpyHostToDevice) != cudaSuccess) {
    std::printf("device_reset: FAILED: phase %d setting up: %s\n", number, cudaGetErrorString(cudaGetLastError()));
    return -1;
  }
  int converted = 0;
  for (int launch = 0; launch < kLaunches; launch++) {
    add_step<<<kBlocks, kThreads>>>(data, n);
    cudaError_t refused = cudaGetLastError();
    if (refused != cudaSuccess) {
      std::printf("device_reset: FAILED: phase %d launch %d: %s\n", number, launch, cudaGetErrorString(refused));
      return -1;
    }
    converted += preempt_last_launch() != 0;
  }
  cudaError_t status = cudaDeviceSynchronize();
  if (status == cudaSuccess)
    status = cudaMemcpy(host.data(), data, n * sizeof(float), cudaMemcpyDeviceToHost);
  for (int i = 0; i < n; i++)
    if (status != cudaSuccess || host[i] != expected[i]) {
      std::printf("device_reset: FAILED: phase %d element %d: %g, expected %g (%s)\n", number, i, host[i], expected[i],
                  cudaGetErrorString(status));
      return -1;
    }
  cudaFree(data);
  return converted;
}

} // namespace

int main() {
  int first = phase(1);
  if (first < 0)
    return 1;
  cudaError_t reset = cudaDeviceReset();
  if (reset != cudaSuccess) {
    std::printf("device_reset: FAILED: cudaDeviceReset: %s\n", cudaGetErrorString(reset));
    return 1;
  }
  int second = phase(2);
  if (second < 0)
    return 1;
  std::printf("device_reset: phase 1 %d of %d launches converted, phase 2 %d of %d, output correct\n", first, kLaunches,
              second, kLaunches);
  return 0;
}
