// as_written_storm.cu: launch_storm's launch loop, built twice into bench/preemption/as_written_cost (once with the
// plugin, once without), so that one process times the program's own launch against the routed one. Issue 39.
//
// STORM_ENTRY names this build's entry point (storm_original or storm_routed). A `k<<<...>>>` here is the program's
// own launch in the build without the plugin and goes through preempt_launch_kernel in the other: the same source,
// the same call-configuration push and pop, so the difference is the runtime's alone.
#include <cuda_runtime.h>

namespace {

constexpr int kLaunchesPerStream = 1500;
constexpr int kBlock = 64;

__global__ void add_launch_number(unsigned long long *cells, unsigned long long launch) {
  unsigned block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  cells[block * blockDim.x + threadIdx.x] += launch * (block + 1);
}

}  // namespace

// One pass: 1,500 launches on each stream, round robin, each stream's launches adding to its own `cells_per_stream`
// cells. `extra` adds one runtime call before each launch, to price the calls the runtime makes (0: none;
// 1: cudaGetDevice; 2: cudaStreamIsCapturing; 3: cudaStreamGetPriority). Returns the first error.
extern "C" cudaError_t STORM_ENTRY(cudaStream_t *streams, int stream_count, unsigned long long *cells,
                                   size_t cells_per_stream, int extra) {
  const dim3 grid(37, 3, 2);  // 222 blocks: one wave, so the runtime runs it as written
  for (int k = 0; k < kLaunchesPerStream; ++k)
    for (int s = 0; s < stream_count; ++s) {
      int device, priority;
      cudaStreamCaptureStatus capturing;
      cudaError_t status = extra == 1 ? cudaGetDevice(&device)
                           : extra == 2 ? cudaStreamIsCapturing(streams[s], &capturing)
                           : extra == 3 ? cudaStreamGetPriority(streams[s], &priority)
                                        : cudaSuccess;
      if (status != cudaSuccess) return status;
      add_launch_number<<<grid, kBlock, 0, streams[s]>>>(cells + s * cells_per_stream,
                                                         static_cast<unsigned long long>(k) * stream_count + s + 1);
      if ((status = cudaGetLastError()) != cudaSuccess) return status;
    }
  return cudaSuccess;
}
