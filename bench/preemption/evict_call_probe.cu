// evict_call_probe.cu: what the host pays for the calls an eviction request makes, before the GPU sees anything.
// Issue 42: preempt_bench timed preempt_evict's own call at 16-26 us median on the H200 (gpu_check at cba8218), more
// than the eviction's whole device part (19 us). Each call below is timed on the host, 200 times, on an idle GPU and
// while a long kernel keeps every SM busy, on a high-priority non-blocking stream as the runtime's control stream
// is: cuStreamBatchMemOp with 1, 2, 5 and 8 32-bit writes (a full yield mask is 8 words, 5 cover 132 SMs), with 4
// 64-bit writes where the device allows them, one cuStreamWriteValue32, cudaEventRecord, and cudaEventQuery of an
// event not yet reached and of one reached; the 8 writes and the reached query again after a 300-2000 us sleep, as
// preempt_bench's evictions come. Prints one JSON object (medians and p99 in us).
#include <cuda.h>
#include <cuda_runtime.h>

#include <chrono>
#include <random>
#include <thread>
#include <cstdio>
#include <string>
#include <vector>

#include "bench_kernels.cuh"
#include "busy_kernel.cuh"

typedef CUresult (*batch_fn)(CUstream, unsigned int, CUstreamBatchMemOpParams *, unsigned int);
typedef CUresult (*write_fn)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);

int main() {
  auto batch = driver_function<batch_fn>("cuStreamBatchMemOp");
  auto write_value = driver_function<write_fn>("cuStreamWriteValue32");
  int lowest = 0, highest = 0, can64 = 0;
  CHECK_CUDA(cudaDeviceGetStreamPriorityRange(&lowest, &highest));
  CHECK_CUDA(cudaDeviceGetAttribute(&can64, (cudaDeviceAttr)CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS, 0));
  cudaStream_t control, busy;
  CHECK_CUDA(cudaStreamCreateWithPriority(&control, cudaStreamNonBlocking, highest));
  CHECK_CUDA(cudaStreamCreateWithPriority(&busy, cudaStreamNonBlocking, lowest));
  unsigned *words, *sink;
  CHECK_CUDA(cudaMalloc(&words, 64 * sizeof(unsigned)));
  CHECK_CUDA(cudaMalloc(&sink, 132 * 64 * sizeof(unsigned)));
  cudaEvent_t reached, pending;
  CHECK_CUDA(cudaEventCreateWithFlags(&reached, cudaEventDisableTiming));
  CHECK_CUDA(cudaEventCreateWithFlags(&pending, cudaEventDisableTiming));
  CHECK_CUDA(cudaEventRecord(reached, control));
  CHECK_CUDA(cudaStreamSynchronize(control));

  const int samples = 200;
  unsigned value = 1;
  // gap: the thread sleeps 300-2000 us before each call, as preempt_bench's evictions come (a cold thread and
  // cold caches, against calls back to back).
  std::mt19937 random(7);
  std::uniform_int_distribution<int> gap_us(300, 2000);
  auto time_batch = [&](unsigned count, bool wide, bool gap) {
    std::vector<double> times;
    CUstreamBatchMemOpParams ops[8] = {};
    for (int sample = 0; sample < samples; sample++) {
      if (gap)
        std::this_thread::sleep_for(std::chrono::microseconds(gap_us(random)));
      for (unsigned index = 0; index < count; index++) {
        ops[index].writeValue.operation = wide ? CU_STREAM_MEM_OP_WRITE_VALUE_64 : CU_STREAM_MEM_OP_WRITE_VALUE_32;
        ops[index].writeValue.address = (CUdeviceptr)(words + index * (wide ? 2 : 1));
        if (wide)
          ops[index].writeValue.value64 = ((cuuint64_t)value << 32) | value;
        else
          ops[index].writeValue.value = value;
        ops[index].writeValue.flags = CU_STREAM_WRITE_VALUE_DEFAULT;
      }
      value++;
      auto start = Clock::now();
      CUresult status = batch((CUstream)control, count, ops, 0);
      times.push_back(since_us(start));
      if (status != CUDA_SUCCESS) {
        std::fprintf(stderr, "evict_call_probe: cuStreamBatchMemOp (%u ops, %s) failed: %d\n", count,
                     wide ? "64-bit" : "32-bit", (int)status);
        std::exit(2);
      }
      CHECK_CUDA(cudaStreamSynchronize(control));
    }
    return stats(times);
  };
  auto time_call = [&](int kind, bool gap) {
    std::vector<double> times;
    for (int sample = 0; sample < samples; sample++) {
      if (gap)
        std::this_thread::sleep_for(std::chrono::microseconds(gap_us(random)));
      auto start = Clock::now();
      if (kind == 0) {
        if (write_value((CUstream)control, (CUdeviceptr)words, value++, CU_STREAM_WRITE_VALUE_DEFAULT) != CUDA_SUCCESS)
          std::exit(2);
      } else if (kind == 1) {
        CHECK_CUDA(cudaEventRecord(pending, control));
      } else if (kind == 2) {
        (void)cudaEventQuery(reached);
      }
      times.push_back(since_us(start));
      CHECK_CUDA(cudaStreamSynchronize(control));
    }
    return stats(times);
  };
  // An event the GPU has not reached: recorded behind a wait on a word nobody writes until the samples are done.
  auto time_pending_query = [&](cudaStream_t stream) {
    std::vector<double> times;
    CHECK_CUDA(cudaMemset(words + 32, 0, sizeof(unsigned)));
    typedef CUresult (*wait_fn)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);
    auto wait_value = driver_function<wait_fn>("cuStreamWaitValue32");
    if (wait_value((CUstream)stream, (CUdeviceptr)(words + 32), 1, CU_STREAM_WAIT_VALUE_GEQ) != CUDA_SUCCESS)
      std::exit(2);
    CHECK_CUDA(cudaEventRecord(pending, stream));
    for (int sample = 0; sample < samples; sample++) {
      auto start = Clock::now();
      cudaError_t status = cudaEventQuery(pending);
      times.push_back(since_us(start));
      if (status != cudaErrorNotReady) {
        std::fprintf(stderr, "evict_call_probe: the pending event answered %d\n", (int)status);
        std::exit(2);
      }
    }
    if (write_value((CUstream)control, (CUdeviceptr)(words + 32), 1, CU_STREAM_WRITE_VALUE_DEFAULT) != CUDA_SUCCESS)
      std::exit(2);
    CHECK_CUDA(cudaStreamSynchronize(stream));
    return stats(times);
  };

  cudaStream_t waiter;
  CHECK_CUDA(cudaStreamCreateWithFlags(&waiter, cudaStreamNonBlocking));
  std::string report = "{\"samples\": " + std::to_string(samples) + ", \"can_64_bit_ops\": " + std::to_string(can64);
  for (int loaded = 0; loaded < 2; loaded++) {
    if (loaded) // every SM busy for about a second, as a running persistent grid keeps them
      busy_kernel<<<132 * 8, 256, 0, busy>>>(sink, 400000000u);
    std::string state = loaded ? "busy_" : "idle_";
    for (unsigned count : {1u, 2u, 5u, 8u})
      report += ", " + json((state + "batch32_x" + std::to_string(count)).c_str(), time_batch(count, false, false));
    if (can64)
      report += ", " + json((state + "batch64_x4").c_str(), time_batch(4, true, false));
    report += ", " + json((state + "write_value32").c_str(), time_call(0, false));
    report += ", " + json((state + "event_record").c_str(), time_call(1, false));
    report += ", " + json((state + "event_query_reached").c_str(), time_call(2, false));
    report += ", " + json((state + "batch32_x8_after_gap").c_str(), time_batch(8, false, true));
    report += ", " + json((state + "event_query_reached_after_gap").c_str(), time_call(2, true));
    report += ", " + json((state + "event_query_pending").c_str(), time_pending_query(waiter));
  }
  CHECK_CUDA(cudaDeviceSynchronize());
  std::printf("%s}\n", report.c_str());
  return 0;
}
