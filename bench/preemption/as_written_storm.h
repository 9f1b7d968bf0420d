// as_written_storm.h: the launch loop bench/preemption/as_written_cost.cu times, shared by its two builds and its
// checker (as_written_storm.cu, built without and with the plugin). Issue 39 (FLEP §4.2, EffiSha §6.3).
#pragma once
#include <cuda_runtime.h>

#include <cstddef>

// launch_storm's shape: 222 blocks of 64 threads, one wave, so the runtime runs each launch as written; 1,500
// launches on each stream, launch k of stream s adding (k * streams + s + 1) * (block + 1) to each of its cells.
constexpr unsigned kStormGridX = 37, kStormGridY = 3, kStormGridZ = 2;
constexpr int kStormBlock = 64;
constexpr int kStormLaunchesPerStream = 1500;
constexpr size_t kStormCellsPerStream = size_t(kStormGridX) * kStormGridY * kStormGridZ * kStormBlock;

// One pass over `stream_count` streams (as_written_storm.cu): `extra` adds one runtime call before each launch
// (0: none; 1: cudaGetDevice; 2: cudaStreamIsCapturing; 3: cudaStreamGetPriority). Returns the first error.
extern "C" cudaError_t storm_original(cudaStream_t *streams, int stream_count, unsigned long long *cells,
                                      size_t cells_per_stream, int extra);
extern "C" cudaError_t storm_routed(cudaStream_t *streams, int stream_count, unsigned long long *cells,
                                    size_t cells_per_stream, int extra);
