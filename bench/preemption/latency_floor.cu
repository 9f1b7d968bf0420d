// latency_floor.cu: what an eviction's host-observed latency is made of, before any task or yield check.
// Issue 3's latency goal (FLEP §4.1 yield flag through a device word; EffiSha §8's preemption latency).
//
// Three round trips, each timed by the host 80 times, on an idle GPU and while
// a long kernel keeps every SM busy: (1) a stream memory write on an urgent
// stream followed by an event, polled with cudaEventQuery: the path of an
// eviction request and of the host seeing it done; (2) an empty kernel and an
// event on that stream: a grid's end as the host sees it; (3) a stream write
// that a spinning one-thread kernel sees and answers in mapped host memory:
// request landing on the device and the device's answer reaching the host;
// and, to tell the request's path from the answer's, the same spinner asked
// (4) by a plain host store to a mapped host word it polls, no stream
// operation at all, and (5) by a 4-byte cudaMemcpyAsync on the urgent stream;
// and (6) an empty kernel followed by a stream write to a mapped host word
// that the host polls: a grid's end seen without a driver call (against 2).
// Prints one JSON object (medians and p99 in us).
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "bench_kernels.cuh"
#include "busy_kernel.cuh"

typedef CUresult (*write_value_fn)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);

__global__ void empty_kernel() {}

// Spins until *request equals `value`, then answers it in host memory.
__global__ void answer_when_asked(volatile unsigned *request, volatile unsigned *answer, unsigned value) {
  while (*request != value) {
  }
  __threadfence_system();
  *answer = value;
}

// Keeps every SM busy for about `iterations` steps per block.
int main() {
  auto write_value = driver_function<write_value_fn>("cuStreamWriteValue32");
  int lowest = 0, highest = 0;
  CHECK_CUDA(cudaDeviceGetStreamPriorityRange(&lowest, &highest));
  cudaStream_t urgent, spinner, busy;
  CHECK_CUDA(cudaStreamCreateWithPriority(&urgent, cudaStreamNonBlocking, highest));
  CHECK_CUDA(cudaStreamCreateWithPriority(&spinner, cudaStreamNonBlocking, highest));
  CHECK_CUDA(cudaStreamCreateWithPriority(&busy, cudaStreamNonBlocking, lowest));
  cudaEvent_t done;
  CHECK_CUDA(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
  unsigned *word, *sink, *answer_host, *answer_device, *request_host, *request_device, *staged_value;
  CHECK_CUDA(cudaMalloc(&word, sizeof(unsigned)));
  CHECK_CUDA(cudaMemset(word, 0, sizeof(unsigned)));
  CHECK_CUDA(cudaMalloc(&sink, 132 * 64 * sizeof(unsigned)));
  CHECK_CUDA(cudaHostAlloc(&answer_host, sizeof(unsigned), cudaHostAllocMapped));
  CHECK_CUDA(cudaHostGetDevicePointer(&answer_device, answer_host, 0));
  *answer_host = 0;
  CHECK_CUDA(cudaHostAlloc(&request_host, sizeof(unsigned), cudaHostAllocMapped));
  CHECK_CUDA(cudaHostGetDevicePointer(&request_device, request_host, 0));
  *request_host = 0;
  CHECK_CUDA(cudaHostAlloc(&staged_value, sizeof(unsigned), cudaHostAllocDefault));

  const int samples = 80;
  unsigned value = 0;
  auto measure = [&](int kind) {
    std::vector<double> latencies;
    for (int sample = 0; sample < samples; sample++) {
      bool spins = kind >= 2 && kind <= 4;
      if (spins) {
        // The spinner waits on the device before the clock starts.
        answer_when_asked<<<1, 1, 0, spinner>>>(kind == 3 ? request_device : word, answer_device, value + 1);
        std::this_thread::sleep_for(std::chrono::microseconds(200));
      }
      value++;
      *staged_value = value;
      auto start = Clock::now();
      if (kind == 3) {
        *(volatile unsigned *)request_host = value;
      } else if (kind == 4) {
        CHECK_CUDA(cudaMemcpyAsync(word, staged_value, sizeof(unsigned), cudaMemcpyHostToDevice, urgent));
      } else if (kind == 0 || kind == 2) {
        if (write_value(urgent, (CUdeviceptr)word, value, CU_STREAM_WRITE_VALUE_DEFAULT) != CUDA_SUCCESS) {
          std::fprintf(stderr, "latency_floor: cuStreamWriteValue32 failed\n");
          std::exit(2);
        }
      } else {
        empty_kernel<<<1, 1, 0, urgent>>>();
        if (kind == 5 && write_value(urgent, (CUdeviceptr)answer_device, value, CU_STREAM_WRITE_VALUE_DEFAULT) !=
                             CUDA_SUCCESS) {
          std::fprintf(stderr, "latency_floor: cuStreamWriteValue32 to mapped host memory failed\n");
          std::exit(2);
        }
      }
      if (spins || kind == 5) {
        while (*(volatile unsigned *)answer_host != value && since_us(start) < 1e6) {
        }
      } else {
        CHECK_CUDA(cudaEventRecord(done, urgent));
        while (cudaEventQuery(done) == cudaErrorNotReady && since_us(start) < 1e6) {
        }
      }
      latencies.push_back(since_us(start));
      CHECK_CUDA(cudaStreamSynchronize(spins ? spinner : urgent));
      CHECK_CUDA(cudaStreamSynchronize(urgent));
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    return stats(latencies);
  };
  const char *names[] = {"write_then_event", "empty_kernel_then_event", "write_seen_by_device_answer_seen_by_host",
                         "host_store_seen_by_device_answer_seen_by_host", "copy_seen_by_device_answer_seen_by_host", "empty_kernel_then_host_word"};
  std::string report = "{\"samples\": " + std::to_string(samples);
  for (int loaded = 0; loaded < 2; loaded++) {
    if (loaded) // every SM busy for about a second: 7 of its 8 block slots of 256 threads, room left for the probes
      busy_kernel<<<132 * 7, 256, 0, busy>>>(sink, 400000000u);
    for (int kind = 0; kind < 6; kind++)
      report += ", " + json((std::string(loaded ? "busy_" : "idle_") + names[kind]).c_str(), measure(kind));
  }
  CHECK_CUDA(cudaDeviceSynchronize());
  std::printf("%s}\n", report.c_str());
  return 0;
}
