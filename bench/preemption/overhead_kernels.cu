// overhead_kernels.cu: the kernels of overhead_parts.cu, built twice (with and without libpreempt.so).
// Issue 3 overhead (FLEP §4.1 persistent threads): the same source as original and as converted kernels.
//
// Each build exports the kernels' handles under a side-specific name, taken
// through a volatile so that LaunchRewrite never sees a launch of them: the
// benchmark launches the converted kernels itself, piece by piece. The
// converted build also exports launches through the runtime (<<<>>>).
#include <cuda_runtime.h>

#include <cstddef>

#ifdef PARTS_CONVERTED
#define PARTS_EXPORT(name) parts_converted_##name
#else
#define PARTS_EXPORT(name) parts_original_##name
#endif

namespace {

constexpr int kHistogramBins = 256;

__global__ void stream_add(const float *__restrict__ a, const float *__restrict__ b, float *__restrict__ c,
                           size_t n) {
  size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n)
    c[i] = a[i] + b[i];
}

// Per-block histogram in shared memory: barriers and shared memory inside a
// task, so the converted loop keeps a barrier between tasks.
__global__ void shared_histogram(const float *__restrict__ v, float *__restrict__ block_bins, int per_thread) {
  __shared__ float local[kHistogramBins];
  for (int bin = threadIdx.x; bin < kHistogramBins; bin += blockDim.x)
    local[bin] = 0.0f;
  __syncthreads();
  size_t base = static_cast<size_t>(blockIdx.x) * blockDim.x * per_thread;
  for (int j = 0; j < per_thread; ++j) {
    size_t i = base + static_cast<size_t>(j) * blockDim.x + threadIdx.x;
    atomicAdd(&local[(i * 0x9E37u + (i >> 12)) & (kHistogramBins - 1)], v[i]);
  }
  __syncthreads();
  for (int bin = threadIdx.x; bin < kHistogramBins; bin += blockDim.x)
    block_bins[static_cast<size_t>(blockIdx.x) * kHistogramBins + bin] = local[bin];
}

// Float atomics scattered over global bins (float_atomics' scatter_add).
__global__ void scatter_add(const float *__restrict__ v, size_t n, float *__restrict__ bins, unsigned bin_mask) {
  size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) {
    unsigned h = (static_cast<unsigned>(i) * 0x9E3779B1u) & 0xffffffu;
    atomicAdd(&bins[(h ^ (h >> 7)) & bin_mask], v[i]);
  }
}

void *volatile stream_add_handle = reinterpret_cast<void *>(stream_add);
void *volatile shared_histogram_handle = reinterpret_cast<void *>(shared_histogram);
void *volatile scatter_add_handle = reinterpret_cast<void *>(scatter_add);

} // namespace

extern "C" void *PARTS_EXPORT(stream_add)(void) { return stream_add_handle; }
extern "C" void *PARTS_EXPORT(shared_histogram)(void) { return shared_histogram_handle; }
extern "C" void *PARTS_EXPORT(scatter_add)(void) { return scatter_add_handle; }

#ifdef PARTS_CONVERTED
extern "C" cudaError_t parts_runtime_stream_add(unsigned grid, unsigned block, const float *a, const float *b,
                                                float *c, size_t n) {
  stream_add<<<grid, block>>>(a, b, c, n);
  return cudaGetLastError();
}
extern "C" cudaError_t parts_runtime_shared_histogram(unsigned grid, unsigned block, const float *v,
                                                      float *block_bins, int per_thread) {
  shared_histogram<<<grid, block>>>(v, block_bins, per_thread);
  return cudaGetLastError();
}
extern "C" cudaError_t parts_runtime_scatter_add(unsigned grid, unsigned block, const float *v, size_t n,
                                                 float *bins, unsigned bin_mask) {
  scatter_add<<<grid, block>>>(v, n, bins, bin_mask);
  return cudaGetLastError();
}
#endif
