// pair_bench.cu: one side of a cross-process pair: a low-priority process running long kernels back to back, or a
// high-priority process timing short kernels that arrive while they run. FLEP §6.3.1's pairs, across processes.
// Usage: pair_bench long SECONDS READY_FILE [STOP_FILE]  (creates READY_FILE once warmed up, stops after SECONDS or
//                                                          once STOP_FILE exists; prints one JSON object)
//        pair_bench short TRIALS [READY_FILE]   (waits for READY_FILE; prints one JSON object)
// Built with the plugin the launches go through preempt's runtime (and preemptd when one runs); without it,
// they are the baseline. Each side checks its own results, so a lost or repeated task fails the run.
#include <sys/stat.h>
#include <unistd.h>

#include <random>
#include <thread>

#include "../preemption/bench_kernels.cuh"

static const unsigned long_blocks = 132 * 8 * 400; // as preempt_bench: 20-40 ms per launch
static const unsigned iterations = 20000;          // its task length, about 54 us converted on the H100
static const int short_blocks = 32, short_threads = 256, short_n = short_blocks * short_threads;

static int run_long(double seconds, const char *ready_file, const char *stop_file) {
  unsigned *out;
  CHECK_CUDA(cudaMalloc(&out, long_blocks * sizeof(unsigned)));
  CHECK_CUDA(cudaMemset(out, 0, long_blocks * sizeof(unsigned)));
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  unsigned launches = 0;
  long_kernel<<<long_blocks, 256, 0, stream>>>(out, iterations);
  launches++;
  CHECK_CUDA(cudaStreamSynchronize(stream));
  if (!touch_file(ready_file))
    return 2;
  std::vector<double> durations;
  auto start = Clock::now();
  struct stat info;
  while (since_us(start) < seconds * 1e6 && !(stop_file && stat(stop_file, &info) == 0)) {
    auto launch_start = Clock::now();
    long_kernel<<<long_blocks, 256, 0, stream>>>(out, iterations);
    launches++;
    CHECK_CUDA(cudaStreamSynchronize(stream));
    durations.push_back(since_us(launch_start));
  }
  std::vector<unsigned> result(long_blocks);
  CHECK_CUDA(cudaMemcpy(result.data(), out, long_blocks * sizeof(unsigned), cudaMemcpyDeviceToHost));
  unsigned wrong = 0; // a sample of blocks: the host recomputes 5 M steps per block
  for (unsigned block = 0; block < long_blocks; block += 997)
    wrong += result[block] != expected_block(block, iterations) * launches;
  std::printf("{\"role\": \"long\", \"launches\": %u, \"wrong_blocks_sampled\": %u, %s}\n", launches, wrong,
              json("long_launch", stats(durations)).c_str());
  std::fflush(stdout); // a process that hangs after this line hangs in CUDA's or the runtime's exit path (pairs.sh)
  return wrong ? 1 : 0;
}

static int run_short(int trials, const char *ready_file) {
  float *data;
  CHECK_CUDA(cudaMalloc(&data, short_n * sizeof(float)));
  CHECK_CUDA(cudaMemset(data, 0, short_n * sizeof(float)));
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  int launches = 0;
  for (int warm = 0; warm < 3; warm++, launches++)
    short_kernel<<<short_blocks, short_threads, 0, stream>>>(data, short_n);
  CHECK_CUDA(cudaStreamSynchronize(stream));
  struct stat info;
  auto waiting = Clock::now();
  while (ready_file && stat(ready_file, &info) != 0) {
    if (since_us(waiting) > 60e6) {
      std::fprintf(stderr, "pair_bench: %s never appeared\n", ready_file);
      return 2;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  std::mt19937 random(12345);
  std::uniform_int_distribution<int> delay_us(2000, 12000); // lands at random moments of the long launches
  std::vector<double> turnaround;
  for (int t = 0; t < trials; t++, launches++) {
    std::this_thread::sleep_for(std::chrono::microseconds(delay_us(random)));
    auto start = Clock::now();
    short_kernel<<<short_blocks, short_threads, 0, stream>>>(data, short_n);
    CHECK_CUDA(cudaStreamSynchronize(stream));
    turnaround.push_back(since_us(start));
  }
  std::vector<float> result(short_n);
  CHECK_CUDA(cudaMemcpy(result.data(), data, short_n * sizeof(float), cudaMemcpyDeviceToHost));
  float expected = 0;
  for (int k = 0; k < launches; k++)
    expected = expected * 0.5f + 1.0f;
  int wrong = 0;
  for (int i = 0; i < short_n; i++)
    wrong += result[i] != expected;
  std::printf("{\"role\": \"short\", \"launches\": %d, \"wrong_elements\": %d, %s}\n", launches, wrong,
              json("turnaround", stats(turnaround)).c_str());
  return wrong ? 1 : 0;
}

int main(int argc, char **argv) {
  if ((argc == 4 || argc == 5) && std::string(argv[1]) == "long")
    return run_long(std::atof(argv[2]), argv[3], argc == 5 ? argv[4] : nullptr);
  if ((argc == 3 || argc == 4) && std::string(argv[1]) == "short")
    return run_short(std::atoi(argv[2]), argc == 4 ? argv[3] : nullptr);
  std::fprintf(stderr, "usage: pair_bench long SECONDS READY_FILE [STOP_FILE] | pair_bench short TRIALS [READY_FILE]\n");
  return 2;
}
