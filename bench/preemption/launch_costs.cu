// launch_costs.cu: what each stream operation the runtime adds to a launch costs on the GPU's timeline.
// Issue 3 overhead: launch.c records 3 events and a stream wait on done_generation around each launch.
//
// Back-to-back launches of a tiny kernel (one CTA that bumps a counter and
// publishes it, as a converted kernel publishes done_generation) in one
// stream, timed by events around the whole sequence: plain; with 3 event
// records per launch; with a cuStreamWaitValue32 per launch on the value the
// kernel just wrote; with both (the runtime's shape). Prints one JSON object:
// microseconds per launch, median of 7 rounds, with min and max.
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

__global__ void bump(unsigned *counter) {
  if (threadIdx.x == 0) {
    unsigned value = *counter + 1;
    __threadfence();
    *counter = value; // the next launch waits for this value
  }
}

#define CHECK(call)                                                                                   \
  do {                                                                                                \
    cudaError_t status_ = (call);                                                                     \
    if (status_ != cudaSuccess) {                                                                     \
      std::fprintf(stderr, "launch_costs: %s: %s\n", #call, cudaGetErrorString(status_));            \
      std::exit(1);                                                                                   \
    }                                                                                                 \
  } while (0)

typedef CUresult (*wait_value_fn)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);

int main() {
  const int launches = 2000, rounds = 7;
  unsigned *counter;
  CHECK(cudaMalloc(&counter, sizeof(unsigned)));
  CHECK(cudaMemset(counter, 0, sizeof(unsigned)));
  cudaStream_t stream;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  wait_value_fn wait_value = nullptr;
  cudaDriverEntryPointQueryResult found;
  CHECK(cudaGetDriverEntryPointByVersion("cuStreamWaitValue32", (void **)&wait_value, 12040, cudaEnableDefault,
                                         &found));
  if (!wait_value || found != cudaDriverEntryPointSuccess) {
    std::fprintf(stderr, "launch_costs: no cuStreamWaitValue32\n");
    return 1;
  }
  std::vector<cudaEvent_t> marks(3);
  for (auto &mark : marks)
    CHECK(cudaEventCreateWithFlags(&mark, cudaEventDisableTiming));
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));

  const char *names[] = {"plain", "events", "wait", "events_and_wait"};
  std::printf("{\"launches\": %d, \"rounds\": %d", launches, rounds);
  unsigned expected = 0;
  CHECK(cudaMemset(counter, 0, sizeof(unsigned)));
  for (int variant = 0; variant < 4; variant++) {
    bool events = variant & 1, wait = variant & 2;
    std::vector<float> per_launch;
    for (int round = 0; round < rounds; round++) {
      CHECK(cudaEventRecord(start, stream));
      for (int i = 0; i < launches; i++) {
        if (events)
          CHECK(cudaEventRecord(marks[0], stream));
        bump<<<1, 32, 0, stream>>>(counter);
        expected++;
        if (events)
          CHECK(cudaEventRecord(marks[1], stream));
        if (wait && wait_value(stream, (CUdeviceptr)counter, expected, CU_STREAM_WAIT_VALUE_EQ) != CUDA_SUCCESS) {
          std::fprintf(stderr, "launch_costs: cuStreamWaitValue32 failed\n");
          return 1;
        }
        if (events)
          CHECK(cudaEventRecord(marks[2], stream));
      }
      CHECK(cudaEventRecord(stop, stream));
      CHECK(cudaStreamSynchronize(stream));
      float ms;
      CHECK(cudaEventElapsedTime(&ms, start, stop));
      if (round > 0) // the first round warms up
        per_launch.push_back(ms * 1000.0f / launches);
    }
    std::sort(per_launch.begin(), per_launch.end());
    std::printf(", \"%s\": {\"median_us\": %.3f, \"min_us\": %.3f, \"max_us\": %.3f}", names[variant],
                per_launch[per_launch.size() / 2], per_launch.front(), per_launch.back());
  }
  unsigned final_value;
  CHECK(cudaMemcpy(&final_value, counter, sizeof final_value, cudaMemcpyDeviceToHost));
  std::printf(", \"counter_ok\": %s}\n", final_value == expected ? "true" : "false");
  return final_value == expected ? 0 : 1;
}
