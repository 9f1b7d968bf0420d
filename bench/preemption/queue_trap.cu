// queue_trap.cu: the hardware-queue trap (docs/preemption.md): streams held by an evicted launch's wait, and everyone else.
// EffiSha §6's stream order after eviction: with 40 application streams evicted at once, do unrelated
// streams still run, and does everything finish once resumed? Prints one JSON object; exit 0 unless stuck.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "preempt.h"

#define CHECK_CUDA(call)                                                                           \
  do {                                                                                             \
    cudaError_t status_ = (call);                                                                  \
    if (status_ != cudaSuccess) {                                                                  \
      std::fprintf(stderr, "queue_trap: %s failed at line %d: %s\n", #call, __LINE__,              \
                   cudaGetErrorString(status_));                                                   \
      std::exit(2);                                                                                \
    }                                                                                              \
  } while (0)

using Clock = std::chrono::steady_clock;

__global__ void spin_work(unsigned *out, unsigned iterations) {
  unsigned value = blockIdx.x + threadIdx.x;
  for (unsigned i = 0; i < iterations; i++)
    value = value * 1664525u + 1013904223u;
  if (threadIdx.x == 0)
    out[blockIdx.x] = value;
}

__global__ void follow_up(unsigned *out, unsigned *done) {
  if (threadIdx.x == 0 && blockIdx.x == 0)
    *done = out[0] + 1; // reads the evicted launch's result: stream order
}

// Waits up to `seconds` for `event`; true when it fired.
static bool wait_for(cudaEvent_t event, double seconds) {
  auto start = Clock::now();
  while (cudaEventQuery(event) == cudaErrorNotReady)
    if (std::chrono::duration<double>(Clock::now() - start).count() > seconds)
      return false;
  return true;
}

int main(int argc, char **argv) {
  const int streams = argc > 1 ? std::atoi(argv[1]) : 40, blocks = 132 * 8 * 20;
  if (streams < 1 || streams > 1000) {
    std::fprintf(stderr, "usage: queue_trap [STREAMS 1..1000]\n");
    return 2;
  }
  std::vector<cudaStream_t> app(streams), unrelated(streams);
  std::vector<cudaEvent_t> app_done(streams), unrelated_done(streams);
  std::vector<unsigned *> outputs(streams), flags(streams);
  unsigned *unrelated_out;
  CHECK_CUDA(cudaMalloc(&unrelated_out, blocks * sizeof(unsigned) * streams));
  for (int s = 0; s < streams; s++) {
    CHECK_CUDA(cudaStreamCreateWithFlags(&app[s], cudaStreamNonBlocking));
    CHECK_CUDA(cudaEventCreate(&app_done[s]));
    CHECK_CUDA(cudaEventCreate(&unrelated_done[s]));
    CHECK_CUDA(cudaMalloc(&outputs[s], blocks * sizeof(unsigned)));
    CHECK_CUDA(cudaMalloc(&flags[s], sizeof(unsigned)));
    CHECK_CUDA(cudaMemset(flags[s], 0, sizeof(unsigned)));
  }
  spin_work<<<1, 32>>>(unrelated_out, 1); // load, size and sample once
  CHECK_CUDA(cudaDeviceSynchronize());

  // Every application stream: a long converted launch, then work that needs it.
  int evict_refused = 0, evicted = 0;
  for (int s = 0; s < streams; s++) {
    spin_work<<<blocks, 256, 0, app[s]>>>(outputs[s], 20000);
    follow_up<<<1, 32, 0, app[s]>>>(outputs[s], flags[s]);
    CHECK_CUDA(cudaEventRecord(app_done[s], app[s]));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  for (int s = 0; s < streams; s++) {
    preempt_status status = preempt_evict_stream(app[s], nullptr);
    evicted += status == PREEMPT_OK;
    evict_refused += status == PREEMPT_ERROR_UNSUPPORTED;
  }
  std::fprintf(stderr, "queue_trap: %d streams evicted, %d refused\n", evicted, evict_refused);
  // Streams created afterwards, with work of their own: do they run while
  // the application streams are held?
  for (int s = 0; s < streams; s++) {
    CHECK_CUDA(cudaStreamCreateWithFlags(&unrelated[s], cudaStreamNonBlocking));
    spin_work<<<8, 64, 0, unrelated[s]>>>(unrelated_out + s * blocks, 10);
    CHECK_CUDA(cudaEventRecord(unrelated_done[s], unrelated[s]));
  }
  std::fprintf(stderr, "queue_trap: unrelated work launched\n");
  int unrelated_ran = 0;
  for (int s = 0; s < streams; s++)
    unrelated_ran += wait_for(unrelated_done[s], 0.5);
  // Resume everything; all must finish.
  auto resume_start = Clock::now();
  for (int s = 0; s < streams; s++)
    preempt_resume_stream(app[s]);
  std::fprintf(stderr, "queue_trap: resumed; %d unrelated streams ran while held\n", unrelated_ran);
  int finished = 0;
  for (int s = 0; s < streams; s++)
    finished += wait_for(app_done[s], 5.0);
  double resume_to_done_ms = std::chrono::duration<double, std::milli>(Clock::now() - resume_start).count();
  int unrelated_after = 0;
  for (int s = 0; s < streams; s++)
    unrelated_after += wait_for(unrelated_done[s], 5.0);
  // The follow-up kernels ran after their launch's every task: check one value.
  int order_errors = 0;
  std::fprintf(stderr, "queue_trap: %d of %d application streams finished\n", finished, streams);
  for (int s = 0; finished == streams && s < streams; s++) {
    unsigned first, flag;
    CHECK_CUDA(cudaMemcpy(&first, outputs[s], sizeof first, cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaMemcpy(&flag, flags[s], sizeof flag, cudaMemcpyDeviceToHost));
    order_errors += flag != first + 1;
  }
  const char *connections = std::getenv("CUDA_DEVICE_MAX_CONNECTIONS");
  std::printf("{\"connections\": \"%s\", \"app_streams\": %d, \"evicted\": %d, \"evict_refused\": %d, "
              "\"unrelated_streams_ran_while_held\": %d, \"unrelated_streams_ran_in_the_end\": %d, "
              "\"app_streams_finished\": %d, \"resume_to_done_ms\": %.1f, \"order_errors\": %d}\n",
              connections ? connections : "unset", streams, evicted, evict_refused, unrelated_ran, unrelated_after,
              finished, resume_to_done_ms, order_errors);
  std::fflush(stdout);
  // A stuck stream is the failure this program exists to catch: no teardown
  // (it would wait for it forever).
  bool ok = finished == streams && unrelated_after == streams && order_errors == 0;
  std::_Exit(ok ? 0 : 1);
}
