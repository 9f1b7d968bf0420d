// keeper_probe.cu: an evicted grid that stays open with one working CTA (its "keeper"), so that stream order needs no
// cross-stream wait: issue 40's "no held streams" (EffiSha §6's stream order, FLEP §4.1's relaunch) tried by hand.
// Modes: cost | chain | synced | lazy. One JSON object per mode on stdout; exit 3 when a wait runs out (stuck).
//
// The design tried (docs/preemption.md, "What holding a stream costs"): a persistent grid's CTAs leave at an
// eviction as they do now, but the last of the application's grid to leave stays, sleeping, so the grid, and with it
// the application's stream, stays open; nothing is queued behind the grid (no done_generation wait, no events). At
// resume the keeper works through the remaining tasks itself, and relaunched helper grids on the runtime's own
// streams only speed it up: the grid ends when every task is done, whether or not a helper ever starts. So no helper
// can deadlock the application's stream, whatever hardware queue it shares. The keeper learns of the resume from a
// word in pinned host memory: a word written through a stream could wait in the same queue behind the open grid.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <cuda.h>
#include <cuda_runtime.h>

#include "bench_kernels.cuh" /* CHECK_CUDA, Clock, since_us, driver_function */

namespace {

constexpr unsigned kThreads = 128;
constexpr unsigned kLeave = 0xffffffffu;

struct Control {
  unsigned task; // next task to take
  unsigned done; // tasks finished (after a fence)
  unsigned left; // CTAs of the application's grid that have left
};

// The shared yield word: odd = evicted at that epoch, even = running. Written through the control stream (fast
// when the queue is free); the host's own copy of the epoch is in pinned memory.
struct Shared {
  unsigned yield;
};

// Host-mapped words: the epoch the host last set, and what the keeper reports.
struct HostWords {
  volatile unsigned epoch;  // host -> device
  volatile unsigned kept;   // device -> host: the odd epoch a keeper holds its grid open for
  volatile unsigned launch; // device -> host: which launch that keeper belongs to
};

__device__ void run_task(unsigned *data, unsigned task, unsigned iterations, unsigned salt) {
  unsigned index = task * kThreads + threadIdx.x;
  unsigned value = data[index];
  for (unsigned i = 0; i < iterations; i++)
    value = value * 1664525u + 1013904223u + salt;
  data[index] = value;
}

// A task, then its count once every thread is out of it (after a fence: the keeper may end the grid on the count).
__device__ void run_counted_task(Control *control, unsigned *data, unsigned task, unsigned iterations, unsigned salt) {
  run_task(data, task, iterations, salt);
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    atomicAdd(&control->done, 1);
  }
}

// One launch of the persistent kernel. primary: the application's own grid (keeper_on: it may keep itself open);
// helpers (primary 0) are the runtime's relaunches, taking tasks from the same counter.
__global__ void persistent_kernel(Control *control, const Shared *shared, HostWords *host, unsigned *data,
                                  unsigned tasks, unsigned iterations, unsigned salt, unsigned accepted, int primary,
                                  int keeper_on, unsigned launch) {
  __shared__ unsigned s_task, s_accepted, s_command;
  if (threadIdx.x == 0) {
    // A grid started after a resume whose yield word has not landed yet takes the host's even epoch.
    unsigned yield = *(volatile const unsigned *)&shared->yield;
    if ((yield & 1) && yield > accepted && keeper_on) {
      unsigned epoch = host->epoch;
      if (!(epoch & 1) && epoch > accepted)
        accepted = epoch;
    }
    s_accepted = accepted;
  }
  __syncthreads();
  accepted = s_accepted;
  for (;;) {
    if (threadIdx.x == 0) {
      unsigned yield = *(volatile const unsigned *)&shared->yield;
      s_task = ((yield & 1) && yield > accepted) ? kLeave : atomicAdd(&control->task, 1);
    }
    __syncthreads();
    unsigned task = s_task;
    __syncthreads();
    if (task == kLeave || task >= tasks)
      break;
    run_counted_task(control, data, task, iterations, salt);
  }
  if (!primary || !keeper_on)
    return;
  if (threadIdx.x == 0)
    s_command = atomicAdd(&control->left, 1) == gridDim.x - 1;
  __syncthreads();
  if (!s_command)
    return;
  // The keeper: the application's grid ends only once every task is done.
  for (;;) {
    if (threadIdx.x == 0) {
      unsigned command = 0; // 0 leave, 1 sleep, 2 run s_task
      if (atomicAdd(&control->done, 0) < tasks) {
        unsigned epoch = host->epoch;
        if (epoch & 1) {
          if (host->kept != epoch) {
            host->launch = launch;
            __threadfence_system();
            host->kept = epoch;
          }
          command = 1;
        } else {
          unsigned task = atomicAdd(&control->task, 1);
          s_task = task;
          command = task < tasks ? 2 : 1; // 1: helpers' last tasks still running
        }
      }
      s_command = command;
    }
    __syncthreads();
    unsigned command = s_command, task = s_task;
    __syncthreads();
    if (command == 0)
      break;
    if (command == 1) {
      if (threadIdx.x == 0)
        __nanosleep(2000);
      continue;
    }
    run_counted_task(control, data, task, iterations, salt);
  }
}

__global__ void late_kernel(unsigned *out) { out[0] = 7; }

using WriteValue = CUresult (*)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);
using WaitValue = CUresult (*)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);

struct Setup {
  int sms = 0, ctas_per_sm = 0;
  unsigned grid = 0;
  HostWords *host = nullptr, *host_device = nullptr;
  Shared *shared = nullptr;
  WriteValue write_value = nullptr;
  WaitValue wait_value = nullptr;
};

static Setup setup() {
  Setup s;
  CHECK_CUDA(cudaDeviceGetAttribute(&s.sms, cudaDevAttrMultiProcessorCount, 0));
  CHECK_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&s.ctas_per_sm, persistent_kernel, kThreads, 0));
  s.grid = unsigned(s.sms * s.ctas_per_sm);
  CHECK_CUDA(cudaHostAlloc(&s.host, sizeof(HostWords), cudaHostAllocMapped));
  std::memset((void *)s.host, 0, sizeof(HostWords));
  CHECK_CUDA(cudaHostGetDevicePointer((void **)&s.host_device, (void *)s.host, 0));
  CHECK_CUDA(cudaMalloc(&s.shared, sizeof(Shared)));
  CHECK_CUDA(cudaMemset(s.shared, 0, sizeof(Shared)));
  s.write_value = driver_function<WriteValue>("cuStreamWriteValue32");
  s.wait_value = driver_function<WaitValue>("cuStreamWaitValue32");
  return s;
}

static double median(std::vector<double> values) {
  if (values.empty())
    return 0;
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

static double percentile(std::vector<double> values, double p) {
  if (values.empty())
    return 0;
  std::sort(values.begin(), values.end());
  return values[std::min(values.size() - 1, size_t(p * values.size()))];
}

// Launches `count` dependent launches of `tasks` tasks on `stream`, each after a reset of its control block.
// shape: 0 plain persistent grid, 1 keeper on, 2 plain + the runtime's present shape behind it (3 events, a wait).
static void enqueue_chain(const Setup &s, cudaStream_t stream, Control *controls, unsigned *data, unsigned count,
                          unsigned tasks, unsigned iterations, int shape, cudaEvent_t *events) {
  for (unsigned i = 0; i < count; i++) {
    CHECK_CUDA(cudaMemsetAsync(&controls[i], 0, sizeof(Control), stream));
    if (shape == 2)
      CHECK_CUDA(cudaEventRecord(events[0], stream));
    persistent_kernel<<<std::min(s.grid, tasks), kThreads, 0, stream>>>(
        &controls[i], s.shared, s.host_device, data, tasks, iterations, i + 1, 0, 1, shape == 1, i);
    if (shape == 2) {
      CHECK_CUDA(cudaEventRecord(events[1], stream));
      CUresult waited = s.wait_value((CUstream)stream, (CUdeviceptr)&controls[i].done, tasks, CU_STREAM_WAIT_VALUE_GEQ);
      if (waited != CUDA_SUCCESS) {
        std::fprintf(stderr, "keeper_probe: cuStreamWaitValue32 failed (%d)\n", int(waited));
        std::exit(2);
      }
      CHECK_CUDA(cudaEventRecord(events[2], stream));
    }
  }
}

// What the keeper adds to a launch never evicted, against the plain grid and the runtime's present shape.
static void cost(const Setup &s) {
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaEvent_t events[3], start, stop;
  for (auto &event : events)
    CHECK_CUDA(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&stop));
  const unsigned launches = 200;
  Control *controls;
  CHECK_CUDA(cudaMalloc(&controls, launches * sizeof(Control)));
  std::printf("{\"mode\": \"cost\", \"grid\": %u, \"launches\": %u, \"rows\": [", s.grid, launches);
  const char *names[3] = {"plain", "keeper", "runtime_shape"};
  bool first = true;
  for (unsigned waves : {1u, 4u, 64u}) {
    unsigned tasks = s.grid * waves, iterations = 2000;
    unsigned *data;
    CHECK_CUDA(cudaMalloc(&data, size_t(tasks) * kThreads * sizeof(unsigned)));
    CHECK_CUDA(cudaMemset(data, 0, size_t(tasks) * kThreads * sizeof(unsigned)));
    std::vector<double> per_launch[3];
    for (int round = 0; round < 7; round++)
      for (int shape = 0; shape < 3; shape++) {
        CHECK_CUDA(cudaEventRecord(start, stream));
        enqueue_chain(s, stream, controls, data, launches, tasks, iterations, shape, events);
        CHECK_CUDA(cudaEventRecord(stop, stream));
        CHECK_CUDA(cudaEventSynchronize(stop));
        float ms = 0;
        CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
        if (round > 0)
          per_launch[shape].push_back(ms * 1000.0 / launches);
      }
    for (int shape = 0; shape < 3; shape++) {
      std::printf("%s{\"tasks\": %u, \"shape\": \"%s\", \"us_per_launch\": %.2f, \"min\": %.2f, \"max\": %.2f}",
                  first ? "" : ", ", tasks, names[shape], median(per_launch[shape]),
                  *std::min_element(per_launch[shape].begin(), per_launch[shape].end()),
                  *std::max_element(per_launch[shape].begin(), per_launch[shape].end()));
      first = false;
    }
    CHECK_CUDA(cudaFree(data));
  }
  std::printf("]}\n");
  std::fflush(stdout);
}

// The chain of dependent launches in one application stream, evicted and resumed at random moments by this thread,
// checked element by element against the same chain never evicted. synced: the application waits for each launch
// before the next (nothing of its own queued behind the open grid); else all are queued at once.
static int evictions(const Setup &s, bool synced, const char *mode, bool lazy_probe) {
  const unsigned launches = lazy_probe ? 1 : 40, waves = lazy_probe ? 200 : 100, iterations = 4000;
  const unsigned tasks = s.grid * waves;
  const size_t elements = size_t(tasks) * kThreads;
  unsigned *data, *reference;
  Control *controls;
  CHECK_CUDA(cudaMalloc(&data, elements * sizeof(unsigned)));
  CHECK_CUDA(cudaMalloc(&reference, elements * sizeof(unsigned)));
  CHECK_CUDA(cudaMalloc(&controls, launches * sizeof(Control)));
  unsigned *late_out;
  CHECK_CUDA(cudaMalloc(&late_out, sizeof(unsigned)));
  CHECK_CUDA(cudaMemset(data, 0, elements * sizeof(unsigned)));
  CHECK_CUDA(cudaMemset(reference, 0, elements * sizeof(unsigned)));
  cudaStream_t app, control, resume[2];
  CHECK_CUDA(cudaStreamCreateWithFlags(&app, cudaStreamNonBlocking));
  int least, greatest;
  CHECK_CUDA(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  CHECK_CUDA(cudaStreamCreateWithPriority(&control, cudaStreamNonBlocking, greatest));
  for (auto &stream : resume)
    CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaEvent_t events[3], done, helpers_done[2];
  for (auto &event : events)
    CHECK_CUDA(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  CHECK_CUDA(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
  for (auto &event : helpers_done)
    CHECK_CUDA(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  for (auto &event : helpers_done)
    CHECK_CUDA(cudaEventRecord(event, resume[0]));

  // The reference, never evicted (keeper off).
  auto chain_start = Clock::now();
  enqueue_chain(s, app, controls, reference, launches, tasks, iterations, 0, events);
  CHECK_CUDA(cudaStreamSynchronize(app));
  double reference_us = since_us(chain_start);

  std::mt19937 random(12345);
  std::uniform_int_distribution<int> run_us(200, 2000), evicted_us(50, 500);
  std::vector<double> latency;
  unsigned epoch = 0, effective = 0, finished_first = 0, helper_grids = 0, helpers_pending = 0, late_ok = 0;
  double late_ms = -1;
  std::thread late_thread;
  std::atomic<bool> enqueued{false};
  chain_start = Clock::now();
  // The application thread: queues the chain (synced: one launch at a time) and then marks the end.
  std::thread application([&] {
    for (unsigned i = 0; i < launches; i++) {
      CHECK_CUDA(cudaMemsetAsync(&controls[i], 0, sizeof(Control), app));
      persistent_kernel<<<std::min(s.grid, tasks), kThreads, 0, app>>>(
          &controls[i], s.shared, s.host_device, data, tasks, iterations, i + 1, 0, 1, 1, i);
      if (synced)
        CHECK_CUDA(cudaStreamSynchronize(app));
    }
    CHECK_CUDA(cudaEventRecord(done, app));
    enqueued = true;
  });
  // The order matters under lazy loading, where a module load waits for the running grids: an eviction makes its
  // CUDA call before the keeper can hear of it (a call blocked behind a load then evicts nothing, and the grid ends),
  // a resume reaches the keeper by a plain store before any CUDA call (a call blocked behind a load waits for a grid
  // that the keeper, resumed, finishes).
  auto set_epoch = [&](unsigned value) {
    bool evict = value & 1;
    if (!evict)
      __atomic_store_n(&s.host->epoch, value, __ATOMIC_SEQ_CST);
    CUresult written = s.write_value((CUstream)control, (CUdeviceptr)&s.shared->yield, value, 0);
    if (written != CUDA_SUCCESS) {
      std::fprintf(stderr, "keeper_probe: cuStreamWriteValue32 failed (%d)\n", int(written));
      std::exit(2);
    }
    if (evict)
      __atomic_store_n(&s.host->epoch, value, __ATOMIC_SEQ_CST);
  };
  bool stuck = false;
  while (!(enqueued && cudaEventQuery(done) == cudaSuccess)) {
    std::this_thread::sleep_for(std::chrono::microseconds(run_us(random)));
    if (enqueued && cudaEventQuery(done) == cudaSuccess)
      break;
    auto request = Clock::now();
    set_epoch(++epoch); // odd: evict
    // Evicted: a keeper holds its grid open for this epoch and no helper runs; or the chain ended first. A helper
    // grid still queued 20 ms after the keeper stopped waits behind the open grid (one hardware queue): it has no
    // CTA on the GPU, and will find no task when it starts.
    double kept_at = -1;
    for (;;) {
      bool chain_over = enqueued && cudaEventQuery(done) == cudaSuccess;
      bool helpers_over = cudaEventQuery(helpers_done[0]) == cudaSuccess && cudaEventQuery(helpers_done[1]) == cudaSuccess;
      if (kept_at < 0 && __atomic_load_n(&s.host->kept, __ATOMIC_SEQ_CST) == epoch)
        kept_at = since_us(request);
      if (kept_at >= 0 && (helpers_over || since_us(request) > kept_at + 20000)) {
        helpers_pending += !helpers_over;
        latency.push_back(helpers_over ? since_us(request) : kept_at);
        effective++;
        break;
      }
      if (chain_over) {
        finished_first++;
        break;
      }
      if (since_us(request) > 20e6) {
        stuck = true;
        break;
      }
    }
    if (stuck)
      break;
    if (lazy_probe && !late_thread.joinable() && __atomic_load_n(&s.host->kept, __ATOMIC_SEQ_CST) == epoch) {
      // A kernel never launched before, on a stream of its own, from another thread, while the application's grid
      // is held open: under lazy loading its first launch loads it, and a load waits for the running grid (on the
      // H200 the first version of this probe, which launched it from the resuming thread, hung). The resume below is
      // a store to host memory first, so it reaches the keeper whatever CUDA call blocks.
      late_thread = std::thread([&] {
        cudaStream_t other;
        CHECK_CUDA(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking));
        auto late_start = Clock::now();
        late_kernel<<<1, 1, 0, other>>>(late_out);
        CHECK_CUDA(cudaStreamSynchronize(other));
        late_ms = since_us(late_start) / 1000.0;
        late_ok = 1;
      });
    }
    std::this_thread::sleep_for(std::chrono::microseconds(evicted_us(random)));
    set_epoch(++epoch); // even: resume
    unsigned kept = __atomic_load_n(&s.host->kept, __ATOMIC_SEQ_CST);
    unsigned kept_launch = __atomic_load_n(&s.host->launch, __ATOMIC_SEQ_CST); // written before kept
    if (kept == epoch - 1) {
      // Helpers for the kept launch on two of the runtime's streams: they only speed the keeper up.
      for (int h = 0; h < 2; h++) {
        persistent_kernel<<<s.grid / 2, kThreads, 0, resume[h]>>>(&controls[kept_launch], s.shared, s.host_device,
                                                                  data, tasks, iterations, kept_launch + 1, epoch, 0,
                                                                  1, kept_launch);
        CHECK_CUDA(cudaEventRecord(helpers_done[h], resume[h]));
        helper_grids++;
      }
    }
  }
  application.join();
  if (late_thread.joinable())
    late_thread.join();
  if (!stuck) {
    auto end = Clock::now();
    while (cudaEventQuery(done) == cudaErrorNotReady)
      if (since_us(end) > 20e6) {
        stuck = true;
        break;
      }
  }
  double total_us = since_us(chain_start);
  if (stuck) {
    std::printf("{\"mode\": \"%s\", \"stuck\": true, \"epoch\": %u}\n", mode, epoch);
    std::fflush(stdout);
    std::_Exit(3);
  }
  CHECK_CUDA(cudaDeviceSynchronize());
  std::vector<unsigned> got(elements), want(elements);
  CHECK_CUDA(cudaMemcpy(got.data(), data, elements * sizeof(unsigned), cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaMemcpy(want.data(), reference, elements * sizeof(unsigned), cudaMemcpyDeviceToHost));
  size_t wrong = 0;
  for (size_t i = 0; i < elements; i++)
    wrong += got[i] != want[i];
  const char *connections = std::getenv("CUDA_DEVICE_MAX_CONNECTIONS");
  std::printf("{\"mode\": \"%s\", \"connections\": \"%s\", \"launches\": %u, \"tasks\": %u, \"grid\": %u, "
              "\"evictions_requested\": %u, \"held_open\": %u, \"chain_ended_first\": %u, \"helper_grids\": %u, "
              "\"helpers_still_queued_when_evicted\": %u, "
              "\"latency_us\": {\"median\": %.1f, \"p99\": %.1f, \"n\": %zu}, \"reference_ms\": %.2f, "
              "\"evicted_run_ms\": %.2f, \"wrong_elements\": %zu",
              mode, connections ? connections : "default", launches, tasks, s.grid, (epoch + 1) / 2, effective,
              finished_first, helper_grids, helpers_pending, median(latency), percentile(latency, 0.99), latency.size(),
              reference_us / 1000.0, total_us / 1000.0, wrong);
  if (lazy_probe)
    std::printf(", \"late_kernel_launched\": %u, \"late_kernel_ms\": %.2f", late_ok, late_ms);
  std::printf("}\n");
  std::fflush(stdout);
  return wrong ? 1 : 0;
}

} // namespace

int main(int argc, char **argv) {
  std::string mode = argc > 1 ? argv[1] : "";
  if (mode != "cost" && mode != "chain" && mode != "synced" && mode != "lazy") {
    std::fprintf(stderr, "usage: keeper_probe cost|chain|synced|lazy\n");
    return 2;
  }
  Setup s = setup();
  if (mode == "cost") {
    cost(s);
    return 0;
  }
  return evictions(s, mode != "chain", mode.c_str(), mode == "lazy");
}
