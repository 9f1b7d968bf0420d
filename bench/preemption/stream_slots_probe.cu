// stream_slots_probe.cu: what keeping an evicted launch's continuation in its own stream would cost, measured.
// EffiSha §6 (stream order after eviction) without a cross-stream hold: issue 40's "no held streams".
// Modes: cost | release | queues | lazy | start. Prints one JSON object per mode; exit 3 when stuck.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include <cuda.h>
#include <cuda_runtime.h>

#include "bench_kernels.cuh" /* CHECK_CUDA, Clock, since_us */

#define CHECK_CU(call)                                                                             \
  do {                                                                                             \
    CUresult status_ = (call);                                                                     \
    if (status_ != CUDA_SUCCESS) {                                                                 \
      const char *text_ = "?";                                                                     \
      cuGetErrorString(status_, &text_);                                                           \
      std::fprintf(stderr, "stream_slots_probe: %s failed at line %d: %s\n", #call, __LINE__,      \
                   text_);                                                                         \
      std::exit(2);                                                                                \
    }                                                                                              \
  } while (0)


__global__ void spin_work(unsigned *out, unsigned iterations) {
  unsigned value = blockIdx.x + threadIdx.x;
  for (unsigned i = 0; i < iterations; i++)
    value = value * 1664525u + 1013904223u;
  if (threadIdx.x == 0)
    out[blockIdx.x] = value;
}

// A pre-enqueued relaunch that finds the launch done: every CTA reads one word and leaves.
__global__ void empty_relaunch(const volatile unsigned *done, unsigned *sink) {
  if (*done == 0xdeadu)
    sink[blockIdx.x] = 1;
}

__global__ void late_kernel(unsigned *out) { out[0] = 7; }

static unsigned *host_word(CUdeviceptr *device) {
  unsigned *word;
  CHECK_CUDA(cudaHostAlloc(&word, 64, cudaHostAllocMapped));
  std::memset(word, 0, 64);
  void *pointer;
  CHECK_CUDA(cudaHostGetDevicePointer(&pointer, word, 0));
  *device = (CUdeviceptr)pointer;
  return word;
}

static bool wait_for(cudaEvent_t event, double seconds) {
  auto start = Clock::now();
  while (cudaEventQuery(event) == cudaErrorNotReady)
    if (since_us(start) > seconds * 1e6)
      return false;
  return true;
}

static double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

// Added time per launch of K pre-enqueued (wait that passes, empty full grid) slots.
static void cost(int sms) {
  unsigned *out, *sink, *device_done;
  CHECK_CUDA(cudaMalloc(&out, 1 << 20));
  CHECK_CUDA(cudaMalloc(&sink, 1 << 20));
  CHECK_CUDA(cudaMalloc(&device_done, 64));
  CHECK_CUDA(cudaMemset(device_done, 0xff, 64));
  CUdeviceptr host_device;
  unsigned *host = host_word(&host_device);
  *host = 0xffffffffu;
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaEvent_t start, stop;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&stop));
  const int iterations = 100, rounds = 7, work_blocks = sms * 8;
  const unsigned spin = 20000; // ~100 us on an H200
  std::printf("{\"mode\":\"cost\",\"sms\":%d,\"rows\":[", sms);
  const char *sep = "";
  for (int where = 0; where < 2; where++)
    for (int slots : {0, 1, 2, 4, 8}) {
      if (where == 1 && slots == 0)
        continue;
      std::vector<double> per_launch;
      for (int round = 0; round < rounds; round++) {
        CHECK_CUDA(cudaEventRecord(start, stream));
        for (int i = 0; i < iterations; i++) {
          spin_work<<<work_blocks, 256, 0, stream>>>(out, spin);
          for (int s = 0; s < slots; s++) {
            CUdeviceptr word = where == 0 ? host_device : (CUdeviceptr)device_done;
            CHECK_CU(cuStreamWaitValue32((CUstream)stream, word, 1u << s, CU_STREAM_WAIT_VALUE_AND));
            empty_relaunch<<<sms * 8, 256, 0, stream>>>(device_done, sink);
          }
        }
        CHECK_CUDA(cudaEventRecord(stop, stream));
        CHECK_CUDA(cudaEventSynchronize(stop));
        float ms;
        CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
        per_launch.push_back(ms * 1000.0 / iterations);
      }
      std::sort(per_launch.begin(), per_launch.end());
      std::printf("%s{\"wait_on\":\"%s\",\"slots\":%d,\"us_per_launch_median\":%.2f,\"min\":%.2f,\"max\":%.2f}", sep,
                  where == 0 ? "host" : "device", slots, median(per_launch), per_launch.front(), per_launch.back());
      sep = ",";
    }
  std::printf("]}\n");
}

// From the host's store to a stream's wait passing (seen by polling an event behind it).
static void release() {
  CUdeviceptr word_device;
  unsigned *word = host_word(&word_device);
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaEvent_t passed;
  CHECK_CUDA(cudaEventCreateWithFlags(&passed, cudaEventDisableTiming));
  std::vector<double> latency;
  for (int i = 1; i <= 30; i++) {
    CHECK_CU(cuStreamWaitValue32((CUstream)stream, word_device, (unsigned)i, CU_STREAM_WAIT_VALUE_GEQ));
    CHECK_CUDA(cudaEventRecord(passed, stream));
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    if (cudaEventQuery(passed) != cudaErrorNotReady) {
      std::printf("{\"mode\":\"release\",\"error\":\"the wait passed before the store\"}\n");
      std::exit(1);
    }
    auto start = Clock::now();
    __atomic_store_n(word, (unsigned)i, __ATOMIC_RELEASE);
    if (!wait_for(passed, 2.0)) {
      std::printf("{\"mode\":\"release\",\"stuck\":true}\n");
      std::exit(3);
    }
    latency.push_back(since_us(start));
  }
  std::sort(latency.begin(), latency.end());
  std::printf("{\"mode\":\"release\",\"us_median\":%.1f,\"min\":%.1f,\"p90\":%.1f,\"max\":%.1f}\n", median(latency),
              latency.front(), latency[latency.size() * 9 / 10], latency.back());
}

// With the queues CUDA gives by default: while application streams wait on host words, does a write on the
// runtime's urgent control stream (created first) land, and does a kernel on a new stream run?
static void queues(int streams) {
  unsigned *device_word, *out;
  CHECK_CUDA(cudaMalloc(&device_word, 64));
  CHECK_CUDA(cudaMalloc(&out, 64));
  int least, greatest;
  CHECK_CUDA(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  cudaStream_t control;
  CHECK_CUDA(cudaStreamCreateWithPriority(&control, cudaStreamNonBlocking, greatest));
  std::vector<cudaStream_t> app(streams);
  std::vector<unsigned *> words(streams);
  std::vector<CUdeviceptr> words_device(streams);
  for (int s = 0; s < streams; s++) {
    CHECK_CUDA(cudaStreamCreateWithFlags(&app[s], cudaStreamNonBlocking));
    words[s] = host_word(&words_device[s]);
  }
  cudaEvent_t landed;
  CHECK_CUDA(cudaEventCreateWithFlags(&landed, cudaEventDisableTiming));
  const char *env = std::getenv("CUDA_DEVICE_MAX_CONNECTIONS");
  std::printf("{\"mode\":\"queues\",\"connections\":\"%s\",\"streams\":%d,\"rows\":[\n", env ? env : "default", streams);
  const char *sep = "";
  unsigned round = 0;
  // One held stream at a time (which queue-mates block?), then the first n held together.
  for (int pass = 0; pass < 2; pass++)
    for (int n = 0; n < streams; n++) {
      round++;
      int first = pass == 0 ? n : 0, last = n;
      for (int s = first; s <= last; s++)
        CHECK_CU(cuStreamWaitValue32((CUstream)app[s], words_device[s], round, CU_STREAM_WAIT_VALUE_GEQ));
      std::fprintf(stderr, "queues: %s %d held; writing on the control stream\n", pass ? "first" : "only", n);
      CHECK_CU(cuStreamWriteValue32((CUstream)control, (CUdeviceptr)device_word, round, 0));
      CHECK_CUDA(cudaEventRecord(landed, control));
      bool write_landed = wait_for(landed, 0.1);
      cudaStream_t fresh;
      std::fprintf(stderr, "queues: creating a stream\n");
      CHECK_CUDA(cudaStreamCreateWithFlags(&fresh, cudaStreamNonBlocking));
      std::fprintf(stderr, "queues: launching on it\n");
      late_kernel<<<1, 1, 0, fresh>>>(out);
      cudaEvent_t ran;
      CHECK_CUDA(cudaEventCreateWithFlags(&ran, cudaEventDisableTiming));
      CHECK_CUDA(cudaEventRecord(ran, fresh));
      bool fresh_ran = wait_for(ran, 0.1);
      for (int s = first; s <= last; s++)
        __atomic_store_n(words[s], round, __ATOMIC_RELEASE);
      bool all = wait_for(landed, 2.0) && wait_for(ran, 2.0);
      std::printf("%s{\"held\":\"%s%d\",\"control_write_landed\":%s,\"new_stream_ran\":%s,\"after_release\":%s}", sep,
                  pass == 0 ? "only " : "first ", pass == 0 ? n : n + 1, write_landed ? "true" : "false",
                  fresh_ran ? "true" : "false", all ? "true" : "false");
      sep = ",\n";
      std::fflush(stdout);
      CHECK_CUDA(cudaDeviceSynchronize());
      CHECK_CUDA(cudaStreamDestroy(fresh));
      CHECK_CUDA(cudaEventDestroy(ran));
      if (!all) {
        std::printf("],\"stuck\":true}\n");
        std::exit(3);
      }
    }
  std::printf("]}\n");
}

// Lazy loading: the application thread launches a kernel not loaded yet while its other stream waits on a
// host word; another thread (the resumer) makes driver calls and then releases the word.
static void lazy() {
  unsigned *out;
  CHECK_CUDA(cudaMalloc(&out, 1 << 20));
  spin_work<<<1, 32>>>(out, 1); // loads spin_work only
  CHECK_CUDA(cudaDeviceSynchronize());
  cudaStream_t held, other, control;
  CHECK_CUDA(cudaStreamCreateWithFlags(&held, cudaStreamNonBlocking));
  CHECK_CUDA(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking));
  CHECK_CUDA(cudaStreamCreateWithFlags(&control, cudaStreamNonBlocking));
  CUdeviceptr word_device;
  unsigned *word = host_word(&word_device);
  unsigned *device_word;
  CHECK_CUDA(cudaMalloc(&device_word, 64));
  CHECK_CU(cuStreamWaitValue32((CUstream)held, word_device, 1, CU_STREAM_WAIT_VALUE_GEQ));
  spin_work<<<1, 32, 0, held>>>(out, 1);
  std::atomic<int> stage{0};
  double launch_us = -1, write_us = -1, query_us = -1, spin_launch_us = -1;
  CUcontext context;
  CHECK_CU(cuCtxGetCurrent(&context));
  std::thread resumer([&] {
    CHECK_CU(cuCtxSetCurrent(context));
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    stage = 1;
    auto start = Clock::now();
    CHECK_CU(cuStreamWriteValue32((CUstream)control, (CUdeviceptr)device_word, 5, 0));
    write_us = since_us(start);
    stage = 2;
    cudaEvent_t event;
    CHECK_CUDA(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
    CHECK_CUDA(cudaEventRecord(event, control));
    start = Clock::now();
    (void)cudaEventQuery(event);
    query_us = since_us(start);
    stage = 3;
    start = Clock::now();
    spin_work<<<1, 32, 0, control>>>(out + 64, 1);
    spin_launch_us = since_us(start);
    stage = 4;
    __atomic_store_n(word, 1u, __ATOMIC_RELEASE);
    stage = 5;
  });
  std::thread watchdog([&] {
    std::this_thread::sleep_for(std::chrono::seconds(8));
    std::printf("{\"mode\":\"lazy\",\"stuck\":true,\"resumer_stage\":%d,\"app_launch_us\":%.0f}\n", stage.load(),
                launch_us);
    std::fflush(stdout);
    std::_Exit(3);
  });
  watchdog.detach();
  auto start = Clock::now();
  late_kernel<<<1, 1, 0, other>>>(out);
  launch_us = since_us(start);
  int stage_at_return = stage.load();
  resumer.join();
  CHECK_CUDA(cudaDeviceSynchronize());
  const char *env = std::getenv("CUDA_MODULE_LOADING");
  std::printf("{\"mode\":\"lazy\",\"module_loading\":\"%s\",\"app_launch_of_unloaded_kernel_us\":%.0f,"
              "\"resumer_stage_when_it_returned\":%d,\"resumer_stream_write_us\":%.0f,\"resumer_event_query_us\":%.0f,"
              "\"resumer_launch_us\":%.0f}\n",
              env ? env : "default", launch_us, stage_at_return, write_us, query_us, spin_launch_us);
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "";
  std::setvbuf(stdout, nullptr, _IOLBF, 0); // rows survive a hang and its timeout
  if (!std::strcmp(mode, "start")) {
    unsigned *out;
    CHECK_CUDA(cudaMalloc(&out, 64));
    late_kernel<<<1, 1>>>(out);
    CHECK_CUDA(cudaDeviceSynchronize());
    return 0;
  }
  CHECK_CUDA(cudaFree(0));
  int sms;
  CHECK_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  if (!std::strcmp(mode, "cost"))
    cost(sms);
  else if (!std::strcmp(mode, "release"))
    release();
  else if (!std::strcmp(mode, "queues"))
    queues(argc > 2 ? std::atoi(argv[2]) : 32);
  else if (!std::strcmp(mode, "lazy"))
    lazy();
  else {
    std::fprintf(stderr, "usage: stream_slots_probe cost|release|queues [STREAMS]|lazy|start\n");
    return 2;
  }
  return 0;
}
