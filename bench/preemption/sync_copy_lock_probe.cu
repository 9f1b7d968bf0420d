// sync_copy_lock_probe.cu: which of the application's waiting calls keep another thread's CUDA calls from
// running, while the GPU work they wait for needs that thread (FLEP §4.1: an evicted kernel is resumed by the host).
// runtime-host/sync_copies_cuda.c rests on its answer; bench/gpu_check.sh runs it on every GPU check.
//
// Usage: sync_copy_lock_probe   (no compiler flags beyond the suite's; exit 0 whatever it finds, 2 on a CUDA error)
// For each waiting call: a one-thread kernel spins on the legacy stream until a word in mapped host memory is set;
// the main thread makes the call, which waits for that kernel; 100 ms later a second thread launches a kernel on
// a non-blocking stream that sets the word (what a resume is to an evicted kernel). A watchdog sets the word from
// the host after 1 s, so the probe always ends. One line per call: how long the second thread's launch took.
#include <cuda_runtime.h>

#include <atomic>
#include <thread>

#include "bench_kernels.cuh"

namespace {

__global__ void spin_until(volatile unsigned *flag, unsigned *out) {
  while (*flag == 0) {
  }
  *out = 42;
}

__global__ void release(volatile unsigned *flag) {
  *flag = 1;
  __threadfence_system();
}

}  // namespace

int main() {
  const char *calls[] = {"cudaMemcpy D2H pageable", "cudaMemcpy D2H pinned", "cudaMemcpy H2D pageable",
                         "cudaMemcpyAsync D2H pageable + cudaStreamSynchronize", "cudaStreamSynchronize",
                         "cudaDeviceSynchronize", "cudaEventSynchronize", "cudaMemset"};
  unsigned *flag, *device_flag, *out;
  char *pinned;
  CHECK_CUDA(cudaHostAlloc(&flag, sizeof *flag, cudaHostAllocMapped));
  CHECK_CUDA(cudaHostGetDevicePointer(&device_flag, flag, 0));
  CHECK_CUDA(cudaMalloc(&out, 4096));
  CHECK_CUDA(cudaMallocHost(&pinned, 4096));
  std::vector<char> pageable(4096);
  cudaStream_t other;
  CHECK_CUDA(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking));
  cudaEvent_t after_spin;
  CHECK_CUDA(cudaEventCreateWithFlags(&after_spin, cudaEventDisableTiming));
  for (int call = 0; call < int(sizeof calls / sizeof *calls); call++) {
    __atomic_store_n(flag, 0u, __ATOMIC_SEQ_CST);
    spin_until<<<1, 1>>>(device_flag, out);
    CHECK_CUDA(cudaGetLastError());
    CHECK_CUDA(cudaEventRecord(after_spin, 0));
    std::atomic<double> launch_ms{-1};
    std::thread resumer([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      Clock::time_point start = Clock::now();
      release<<<1, 1, 0, other>>>(device_flag);
      launch_ms = since_us(start) / 1000;
    });
    std::thread watchdog([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(1100));
      __atomic_store_n(flag, 1u, __ATOMIC_SEQ_CST);
    });
    switch (call) {
    case 0: CHECK_CUDA(cudaMemcpy(pageable.data(), out, 4096, cudaMemcpyDeviceToHost)); break;
    case 1: CHECK_CUDA(cudaMemcpy(pinned, out, 4096, cudaMemcpyDeviceToHost)); break;
    case 2: CHECK_CUDA(cudaMemcpy(out + 512, pageable.data(), 1024, cudaMemcpyHostToDevice)); break;
    case 3:
      CHECK_CUDA(cudaMemcpyAsync(pageable.data(), out, 4096, cudaMemcpyDeviceToHost, 0));
      CHECK_CUDA(cudaStreamSynchronize(0));
      break;
    case 4: CHECK_CUDA(cudaStreamSynchronize(0)); break;
    case 5: CHECK_CUDA(cudaDeviceSynchronize()); break;
    case 6: CHECK_CUDA(cudaEventSynchronize(after_spin)); break;
    default: CHECK_CUDA(cudaMemset(out + 256, 0, 64)); break;
    }
    resumer.join();
    watchdog.join();
    CHECK_CUDA(cudaDeviceSynchronize());
    double ms = launch_ms;
    std::printf("%-55s another thread's launch took %7.1f ms: %s\n", calls[call], ms,
                ms > 500 ? "BLOCKED until the watchdog released the kernel" : "free");
  }
  return 0;
}
