// as_written_storm.cu: launch_storm's launch loop, built twice into bench/preemption/as_written_cost (once with the
// plugin, once without), so that one process times the program's own launch against the routed one. Issue 39.
//
// STORM_ENTRY names this build's entry point (storm_original or storm_routed). A `k<<<...>>>` here is the program's
// own launch in the build without the plugin and goes through preempt_launch_kernel in the other: the same source,
// the same call-configuration push and pop, so the difference is the runtime's alone.
#include "as_written_storm.h"

namespace {

__global__ void add_launch_number(unsigned long long *cells, unsigned long long launch) {
  unsigned block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  cells[block * blockDim.x + threadIdx.x] += launch * (block + 1);
}

}  // namespace

extern "C" cudaError_t STORM_ENTRY(cudaStream_t *streams, int stream_count, unsigned long long *cells,
                                   size_t cells_per_stream, int extra) {
  const dim3 grid(kStormGridX, kStormGridY, kStormGridZ);
  for (int k = 0; k < kStormLaunchesPerStream; ++k)
    for (int s = 0; s < stream_count; ++s) {
      int device, priority;
      cudaStreamCaptureStatus capturing;
      cudaError_t status = extra == 1 ? cudaGetDevice(&device)
                           : extra == 2 ? cudaStreamIsCapturing(streams[s], &capturing)
                           : extra == 3 ? cudaStreamGetPriority(streams[s], &priority)
                                        : cudaSuccess;
      if (status != cudaSuccess) return status;
      add_launch_number<<<grid, kStormBlock, 0, streams[s]>>>(cells + s * cells_per_stream,
                                                         static_cast<unsigned long long>(k) * stream_count + s + 1);
      if ((status = cudaGetLastError()) != cudaSuccess) return status;
    }
  return cudaSuccess;
}
