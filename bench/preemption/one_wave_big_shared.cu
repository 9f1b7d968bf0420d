// one_wave_big_shared.cu: a one-wave launch that asks for 64 KiB of dynamic shared memory runs the kernel's copy.
// Issue 3, one-wave launches (docs/persistent-threads.md): cudaFuncSetAttribute reaches the converted kernel only.
//
// Built with the plugin. The application raises its kernel's dynamic shared
// memory limit the usual way; each launch's grid (one block per SM) fits in
// one wave, so the runtime should run the unconverted copy, which must take
// that limit over: preempt_last_launch() is 0 for a copy's launch, an id for
// the persistent form the runtime falls back to. Checks every output value.
// Prints one line: "one_wave_big_shared: N of N launches ran the copy, output correct".
#include <cuda_runtime.h>

#include <cstdio>
#include <vector>

#include "bench_kernels.cuh"
#include "preempt.h"

namespace {

constexpr int kTile = 16384; // floats: 64 KiB of dynamic shared memory
constexpr int kThreads = 256;

// Each block reverses its tile through shared memory.
__global__ void reverse_tiles(const float *in, float *out) {
  extern __shared__ float tile[];
  const float *block_in = in + static_cast<size_t>(blockIdx.x) * kTile;
  for (int i = threadIdx.x; i < kTile; i += blockDim.x)
    tile[i] = block_in[i];
  __syncthreads();
  float *block_out = out + static_cast<size_t>(blockIdx.x) * kTile;
  for (int i = threadIdx.x; i < kTile; i += blockDim.x)
    block_out[i] = tile[kTile - 1 - i];
}

} // namespace

int main() {
  int sms = 0;
  CHECK_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const size_t count = static_cast<size_t>(sms) * kTile;
  std::vector<float> host(count);
  for (size_t i = 0; i < count; i++)
    host[i] = static_cast<float>(i % 100003);
  float *in, *out;
  CHECK_CUDA(cudaMalloc(&in, count * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&out, count * sizeof(float)));
  CHECK_CUDA(cudaMemcpy(in, host.data(), count * sizeof(float), cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaFuncSetAttribute(reverse_tiles, cudaFuncAttributeMaxDynamicSharedMemorySize, kTile * sizeof(float)));
  const int launches = 10;
  int ran_copy = 0;
  for (int launch = 0; launch < launches; launch++) {
    CHECK_CUDA(cudaMemset(out, 0, count * sizeof(float)));
    reverse_tiles<<<sms, kThreads, kTile * sizeof(float)>>>(in, out);
    CHECK_CUDA(cudaGetLastError());
    ran_copy += preempt_last_launch() == 0;
    CHECK_CUDA(cudaDeviceSynchronize());
  }
  std::vector<float> result(count);
  CHECK_CUDA(cudaMemcpy(result.data(), out, count * sizeof(float), cudaMemcpyDeviceToHost));
  size_t wrong = 0;
  for (size_t block = 0; block < static_cast<size_t>(sms); block++)
    for (size_t i = 0; i < kTile; i++)
      wrong += result[block * kTile + i] != host[block * kTile + kTile - 1 - i];
  std::printf("one_wave_big_shared: %d of %d launches ran the copy, output %s\n", ran_copy, launches,
              wrong ? "WRONG" : "correct");
  return wrong || ran_copy != launches ? 1 : 0;
}
