// partial_warp.cu: does redux.sync over the whole warp (mask 0xffffffff) return, and return the right value, in the
// partial last warp of a CTA whose size is not a multiple of 32? InTaskYield.cpp's warpUniform relies on it (issue 8).
// Prints one JSON line; exit status 0 only when every CTA size agrees with the host's answer.
#include <cstdio>
#include <cuda_runtime.h>

__global__ void warp_max(unsigned *out) {
  unsigned value = threadIdx.x * 7u + 3u;
  unsigned result;
  asm volatile("redux.sync.max.u32 %0, %1, 0xffffffff;" : "=r"(result) : "r"(value));
  out[threadIdx.x] = result;
}

int main() {
  const unsigned sizes[] = {1, 17, 40, 48, 63, 96, 255};
  unsigned *device = nullptr, host[256];
  if (cudaMalloc(&device, sizeof host) != cudaSuccess) {
    std::printf("{\"partial_warp\": \"no GPU memory\"}\n");
    return 2;
  }
  int wrong = 0;
  for (unsigned threads : sizes) {
    warp_max<<<1, threads>>>(device);
    if (cudaDeviceSynchronize() != cudaSuccess ||
        cudaMemcpy(host, device, threads * sizeof(unsigned), cudaMemcpyDeviceToHost) != cudaSuccess) {
      std::printf("{\"partial_warp\": \"launch of %u threads failed\"}\n", threads);
      return 2;
    }
    for (unsigned t = 0; t < threads; t++) {
      unsigned last = t / 32 * 32 + 31 < threads - 1 ? t / 32 * 32 + 31 : threads - 1; // the warp's last lane
      wrong += host[t] != last * 7u + 3u;
    }
  }
  std::printf("{\"partial_warp\": \"redux.sync.max.u32 with mask 0xffffffff\", \"sizes\": 7, \"wrong\": %d}\n", wrong);
  return wrong == 0 ? 0 : 1;
}
