// evict_parts.cu: where the fixed part of an in-task eviction's latency goes (issue 8, docs/intask.md), plain CUDA
// without the runtime. A grid of one CTA per SM spins; the host asks it to stop, and we time each leg:
//   write:  host -> the word the kernel polls (a stream write, as the runtime does, or a store to host-mapped
//           memory) -> CTA 0 sees it and writes back to host-mapped memory, which the host spins on;
//   exit:   the CTAs leave -> the host sees the grid's end event complete (cudaEventQuery in a loop).
// Usage: evict_parts [TRIALS] (default 50). One JSON line: per leg, median/p99/min/max in microseconds.
#include <cuda.h> // CUresult and the stream-write flags only: the driver call is looked up, not linked
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#define CHECK_CUDA(call)                                                                                              \
  do {                                                                                                                \
    cudaError_t status_ = (call);                                                                                     \
    if (status_ != cudaSuccess) {                                                                                     \
      std::fprintf(stderr, "evict_parts: %s failed: %s\n", #call, cudaGetErrorString(status_));                      \
      std::exit(2);                                                                                                   \
    }                                                                                                                 \
  } while (0)

using Clock = std::chrono::steady_clock;
static double since_us(Clock::time_point start) {
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count();
}

// Every CTA's thread 0 spins on `stop` (device memory or host-mapped); CTA 0 acknowledges what it saw in `seen`
// (host-mapped). The other threads wait at the barrier, as a CTA's threads wait at a check's.
__global__ void spin_until_stopped(const unsigned *stop, unsigned *seen, unsigned trial) {
  if (threadIdx.x == 0) {
    while (__scoped_atomic_load_n(stop, __ATOMIC_RELAXED, __MEMORY_SCOPE_SYSTEM) != trial) {
    }
    if (blockIdx.x == 0)
      __scoped_atomic_store_n(seen, trial, __ATOMIC_RELAXED, __MEMORY_SCOPE_SYSTEM);
  }
  __syncthreads();
}

static std::string stats(const char *name, std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  char text[256];
  std::snprintf(text, sizeof text, "\"%s\": {\"n\": %zu, \"median\": %.2f, \"p99\": %.2f, \"min\": %.2f, \"max\": %.2f}",
                name, n, values[(n - 1) / 2], values[std::max<size_t>((size_t)std::ceil(0.99 * n), 1) - 1],
                values.front(), values.back());
  return text;
}

// cuStreamWriteValue32, the call the runtime's eviction makes (gpu_cuda.c), through the runtime's entry-point lookup.
typedef CUresult (*StreamWriteValue32)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);
static StreamWriteValue32 stream_write_value32(void) {
  void *function = nullptr;
  cudaDriverEntryPointQueryResult found;
  CHECK_CUDA(cudaGetDriverEntryPointByVersion("cuStreamWriteValue32", &function, 12040, cudaEnableDefault, &found));
  if (found != cudaDriverEntryPointSuccess || !function) {
    std::fprintf(stderr, "evict_parts: the driver has no cuStreamWriteValue32\n");
    std::exit(2);
  }
  return (StreamWriteValue32)function;
}

int main(int argc, char **argv) {
  const int trials = argc > 1 ? std::max(1, std::atoi(argv[1])) : 50;
  cudaDeviceProp props;
  CHECK_CUDA(cudaGetDeviceProperties(&props, 0));
  unsigned *device_stop, *host_stop, *host_seen, *mapped_stop, *mapped_seen;
  CHECK_CUDA(cudaMalloc(&device_stop, sizeof(unsigned)));
  CHECK_CUDA(cudaMemset(device_stop, 0, sizeof(unsigned)));
  CHECK_CUDA(cudaHostAlloc(&host_stop, sizeof(unsigned), cudaHostAllocMapped));
  CHECK_CUDA(cudaHostAlloc(&host_seen, sizeof(unsigned), cudaHostAllocMapped));
  *host_stop = 0;
  *host_seen = 0;
  CHECK_CUDA(cudaHostGetDevicePointer(&mapped_stop, host_stop, 0));
  CHECK_CUDA(cudaHostGetDevicePointer(&mapped_seen, host_seen, 0));
  cudaStream_t kernel_stream, control_stream;
  int least, greatest;
  CHECK_CUDA(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  CHECK_CUDA(cudaStreamCreateWithPriority(&kernel_stream, cudaStreamNonBlocking, least));
  CHECK_CUDA(cudaStreamCreateWithPriority(&control_stream, cudaStreamNonBlocking, greatest));
  cudaEvent_t done;
  CHECK_CUDA(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
  const unsigned ctas = (unsigned)props.multiProcessorCount;
  const StreamWriteValue32 write_value = stream_write_value32();
  std::vector<double> call[2], seen[2], exit_leg[2], total[2];
  volatile unsigned *seen_word = host_seen;
  unsigned trial = 0;
  for (int round = 0; round < trials + 2; round++) {
    for (int mapped = 0; mapped < 2; mapped++) {
      trial++;
      spin_until_stopped<<<ctas, 256, 0, kernel_stream>>>(mapped ? mapped_stop : device_stop, mapped_seen, trial);
      CHECK_CUDA(cudaGetLastError());
      CHECK_CUDA(cudaEventRecord(done, kernel_stream));
      std::this_thread::sleep_for(std::chrono::microseconds(300)); // every CTA spinning
      const auto start = Clock::now();
      if (mapped) {
        __atomic_store_n(host_stop, trial, __ATOMIC_RELEASE);
      } else {
        CUresult result = write_value((CUstream)control_stream, (CUdeviceptr)device_stop, trial, 0);
        if (result != CUDA_SUCCESS) {
          std::fprintf(stderr, "evict_parts: cuStreamWriteValue32 failed: %d\n", (int)result);
          return 2;
        }
      }
      const double call_us = since_us(start);
      while (*seen_word != trial) {
        if (since_us(start) > 5e6) {
          std::fprintf(stderr, "evict_parts: the kernel never saw the stop word\n");
          return 2;
        }
      }
      const double seen_us = since_us(start);
      cudaError_t query;
      while ((query = cudaEventQuery(done)) == cudaErrorNotReady) {
      }
      CHECK_CUDA(query);
      const double total_us = since_us(start);
      if (round < 2)
        continue; // warm-up
      call[mapped].push_back(call_us);
      seen[mapped].push_back(seen_us);
      exit_leg[mapped].push_back(total_us - seen_us);
      total[mapped].push_back(total_us);
    }
  }
  std::printf("{\"gpu\": \"%s\", \"ctas\": %u, \"trials\": %d, \"stream_write\": {%s, %s, %s, %s}, "
              "\"mapped_store\": {%s, %s, %s, %s}}\n",
              props.name, ctas, trials, stats("call", call[0]).c_str(), stats("seen", seen[0]).c_str(),
              stats("exit", exit_leg[0]).c_str(), stats("total", total[0]).c_str(), stats("call", call[1]).c_str(),
              stats("seen", seen[1]).c_str(), stats("exit", exit_leg[1]).c_str(), stats("total", total[1]).c_str());
  return 0;
}
