// A host-only C (or C++) program with no kernels, linked against CUDA's runtime and driver.
#include <cuda.h>
#include <cuda_runtime_api.h>

int main(void) {
  void *p;
  CUdeviceptr d;
  size_t pitch;
  cudaMalloc(&p, 64);
  cudaMallocAsync(&p, 64, 0);
  cudaFreeAsync(p, 0);
  cudaFree(p);
  cuMemAlloc(&d, 64);
  cuMemAllocPitch(&d, &pitch, 64, 4, 16);
  cuMemAllocManaged(&d, 64, CU_MEM_ATTACH_GLOBAL);
  cuMemAllocAsync(&d, 64, 0);
  cuMemFreeAsync(d, 0);
  cuMemFree(d);
  return 0;
}
