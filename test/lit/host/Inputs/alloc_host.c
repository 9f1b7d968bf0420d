// A host-only C (or C++) program with no kernels, linked against CUDA's runtime and driver.
#include <cuda.h>
#include <cuda_runtime_api.h>

int main(void) {
  void *p;
  CUdeviceptr d;
  size_t pitch;
  cudaMemPool_t pool;
  CUmemoryPool driver_pool;
  CUmemGenericAllocationHandle handle;
  CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED, .location = {CU_MEM_LOCATION_TYPE_DEVICE, 0}};
  cudaMalloc(&p, 64);
  cudaMallocAsync(&p, 64, 0);
  cudaDeviceGetDefaultMemPool(&pool, 0);
  cudaMallocFromPoolAsync(&p, 64, pool, 0);
  cudaFreeAsync(p, 0);
  cudaFree(p);
  cuMemAlloc(&d, 64);
  cuMemAllocPitch(&d, &pitch, 64, 4, 16);
  cuMemAllocManaged(&d, 64, CU_MEM_ATTACH_GLOBAL);
  cuMemAllocAsync(&d, 64, 0);
  cuDeviceGetDefaultMemPool(&driver_pool, 0);
  cuMemAllocFromPoolAsync(&d, 64, driver_pool, 0);
  cuMemFreeAsync(d, 0);
  cuMemFree(d);
  cuMemCreate(&handle, 2 << 20, &prop, 0);
  cuMemRelease(handle);
  return 0;
}
