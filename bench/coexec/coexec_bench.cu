// coexec_bench.cu: pairs and mixes of compute-bound and memory-bound kernels co-running on every SM.
// FlexSched §5.3-5.5: speedup of a configuration over sequential runs and plain streams, brute force over the space.
//
// Usage: coexec_bench space A B                    the pair's footprints and co-execution space (JSON)
//        coexec_bench pair A B MODE REPS [CONFIG]  MODE: seq (one stream), streams (two streams), fixed (CONFIG's
//                                                  quotas set by this process: preempt builds only), daemon (two
//                                                  streams, quotas left to preemptd's flexsched policy)
//        coexec_bench alone A seq REPS              one kernel alone
//        coexec_bench mix COUNT MODE REPS          COUNT kernels cycling through the kinds, MODE seq|streams|daemon
// Kinds: alu (long_kernel), tile (shared-memory FMA tiles), gather (DRAM-bound 256-thread gathers), wide (the
// same gathers with 512 threads). Each run checks every kernel's result on sampled blocks: a task lost or run
// twice fails it. Prints one JSON object per run.
#include <cuda_runtime.h>

#include <unistd.h>

#include <cstring>

#include "../preemption/bench_kernels.cuh"
#include "preempt/coexec.h"
#ifdef PREEMPT_API
#include "preempt.h"
#endif

namespace {

constexpr unsigned kAluIterations = 4000;
constexpr unsigned kAluBlocks = 132 * 8 * 800;
constexpr unsigned kTileBlocks = 132 * 12 * 250;
constexpr unsigned kTileRounds = 600;
constexpr unsigned kGatherWords = 1u << 27; // 512 MiB of sources: ten times the L2
constexpr unsigned kGatherReads = 256;
constexpr unsigned kGatherBlocks = 132 * 8 * 45;

__device__ __host__ unsigned mix_word(unsigned x) {
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  return x ^ (x >> 16);
}

// Compute-bound, from shared memory: each block fills a 3 KiB tile and every thread walks it many times.
__global__ void tile_fma(unsigned *out, unsigned rounds) {
  __shared__ unsigned tile[768];
  for (unsigned i = threadIdx.x; i < 768; i += blockDim.x)
    tile[i] = mix_word(blockIdx.x * 768 + i);
  __syncthreads();
  unsigned value = threadIdx.x;
  for (unsigned round = 0; round < rounds; round++)
    value = value * 3u + tile[(value + round) % 768];
  __shared__ unsigned partial[128];
  partial[threadIdx.x] = value;
  __syncthreads();
  if (threadIdx.x == 0) {
    unsigned sum = 0;
    for (int t = 0; t < 128; t++)
      sum += partial[t];
    out[blockIdx.x] += sum;
  }
}

static unsigned expected_tile(unsigned block, unsigned rounds) {
  std::vector<unsigned> tile(768);
  for (unsigned i = 0; i < 768; i++)
    tile[i] = mix_word(block * 768 + i);
  unsigned sum = 0;
  for (unsigned t = 0; t < 128; t++) {
    unsigned value = t;
    for (unsigned round = 0; round < rounds; round++)
      value = value * 3u + tile[(value + round) % 768];
    sum += value;
  }
  return sum;
}

// DRAM-bound: each block sums kGatherReads rows of its width, spread over the whole source buffer.
template <int Threads> __global__ void gather_sum(const unsigned *source, unsigned *out) {
  unsigned stride = kGatherWords / kGatherReads;
  unsigned base = (blockIdx.x * 2654435761u) % stride;
  unsigned sum = 0;
  for (unsigned read = 0; read < kGatherReads; read++)
    sum += source[(base + read * stride + threadIdx.x * 4) % kGatherWords];
  __shared__ unsigned partial[Threads];
  partial[threadIdx.x] = sum;
  __syncthreads();
  if (threadIdx.x == 0) {
    unsigned total = 0;
    for (int t = 0; t < Threads; t++)
      total += partial[t];
    out[blockIdx.x] += total;
  }
}

static unsigned expected_gather(unsigned block, unsigned threads) {
  unsigned stride = kGatherWords / kGatherReads;
  unsigned base = (block * 2654435761u) % stride;
  unsigned total = 0;
  for (unsigned t = 0; t < threads; t++)
    for (unsigned read = 0; read < kGatherReads; read++)
      total += mix_word((base + read * stride + t * 4) % kGatherWords);
  return total;
}

__global__ void fill_source(unsigned *source) {
  for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < kGatherWords; i += gridDim.x * blockDim.x)
    source[i] = mix_word(i);
}

struct Kind {
  const char *name;
  const void *function;
  unsigned blocks, threads;
};
const Kind kKinds[] = {
    {"alu", (const void *)long_kernel, kAluBlocks, 256},
    {"tile", (const void *)tile_fma, kTileBlocks, 128},
    {"gather", (const void *)gather_sum<256>, kGatherBlocks, 256},
    {"wide", (const void *)gather_sum<512>, kGatherBlocks / 2, 512},
};

const Kind *kind_by_name(const char *name) {
  for (const Kind &kind : kKinds)
    if (std::strcmp(kind.name, name) == 0)
      return &kind;
  std::fprintf(stderr, "coexec_bench: unknown kind '%s' (alu, tile, gather, wide)\n", name);
  std::exit(2);
}

const unsigned *g_source;
// COEXEC_SCALE: every kernel's grid times this (longer runs give preemptd's search time to finish).
unsigned g_scale = 1;
unsigned blocks_of(const Kind *kind) { return kind->blocks * g_scale; }

void launch(const Kind *kind, unsigned *out, cudaStream_t stream) {
  if (kind->function == (const void *)long_kernel)
    long_kernel<<<blocks_of(kind), 256, 0, stream>>>(out, kAluIterations);
  else if (kind->function == (const void *)tile_fma)
    tile_fma<<<blocks_of(kind), 128, 0, stream>>>(out, kTileRounds);
  else if (kind->function == (const void *)gather_sum<256>)
    gather_sum<256><<<blocks_of(kind), 256, 0, stream>>>(g_source, out);
  else
    gather_sum<512><<<blocks_of(kind), 512, 0, stream>>>(g_source, out);
  CHECK_CUDA(cudaGetLastError());
}

// Sampled blocks of one output after `launches` launches: the number of wrong ones.
unsigned wrong_blocks(const Kind *kind, const unsigned *out, unsigned launches) {
  unsigned blocks = blocks_of(kind);
  std::vector<unsigned> result(blocks);
  CHECK_CUDA(cudaMemcpy(result.data(), out, blocks * sizeof(unsigned), cudaMemcpyDeviceToHost));
  unsigned wrong = 0;
  for (unsigned block = 0; block < blocks; block += blocks / 64 + 1) {
    unsigned want = kind->function == (const void *)long_kernel   ? expected_block(block, kAluIterations)
                    : kind->function == (const void *)tile_fma    ? expected_tile(block, kTileRounds)
                                                                  : expected_gather(block, kind->threads);
    wrong += result[block] != want * launches;
  }
  return wrong;
}

struct Run {
  std::vector<const Kind *> kinds;
  std::vector<unsigned *> outs;
  std::vector<cudaStream_t> streams;
};

Run make_run(const std::vector<const Kind *> &kinds, bool one_stream) {
  Run run{kinds, {}, {}};
  for (size_t index = 0; index < kinds.size(); index++) {
    unsigned *out;
    CHECK_CUDA(cudaMalloc(&out, blocks_of(kinds[index]) * sizeof(unsigned)));
    CHECK_CUDA(cudaMemset(out, 0, blocks_of(kinds[index]) * sizeof(unsigned)));
    run.outs.push_back(out);
    cudaStream_t stream;
    if (index == 0 || !one_stream)
      CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    else
      stream = run.streams[0];
    run.streams.push_back(stream);
  }
  return run;
}

#ifdef PREEMPT_API
preempt_sm_limits device_limits() {
  preempt_sm_limits limits{};
  int value;
  CHECK_CUDA(cudaDeviceGetAttribute(&value, cudaDevAttrMaxThreadsPerMultiProcessor, 0));
  limits.max_threads = value;
  CHECK_CUDA(cudaDeviceGetAttribute(&value, cudaDevAttrMaxBlocksPerMultiprocessor, 0));
  limits.max_ctas = value;
  CHECK_CUDA(cudaDeviceGetAttribute(&value, cudaDevAttrMaxRegistersPerMultiprocessor, 0));
  limits.registers = value;
  CHECK_CUDA(cudaDeviceGetAttribute(&value, cudaDevAttrMaxSharedMemoryPerMultiprocessor, 0));
  limits.shared_bytes = value;
  CHECK_CUDA(cudaDeviceGetAttribute(&value, cudaDevAttrReservedSharedMemoryPerBlock, 0));
  limits.shared_reserved = value;
  limits.register_unit = 256;
  limits.shared_unit = 128;
  limits.warp_size = 32;
  return limits;
}

preempt_cta_footprint footprint(const Kind *kind) {
  cudaFuncAttributes attributes;
  CHECK_CUDA(cudaFuncGetAttributes(&attributes, kind->function));
  return {kind->threads, (uint32_t)attributes.numRegs, (uint32_t)attributes.sharedSizeBytes};
}

preempt_coexec_space space_of(const Kind *a, const Kind *b) {
  preempt_sm_limits limits = device_limits();
  preempt_cta_footprint fa = footprint(a), fb = footprint(b);
  preempt_coexec_space space;
  preempt_coexec_status status = preempt_coexec_space_build(&limits, &fa, &fb, &space);
  if (status != PREEMPT_COEXEC_OK) {
    std::fprintf(stderr, "coexec_bench: no co-execution space for %s/%s: %s\n", a->name, b->name,
                 preempt_coexec_status_name(status));
    std::exit(1);
  }
  return space;
}

// Sets a quota on the launch just made; checks it took (the quota is what the device holds to).
void set_quota(uint32_t quota) {
  preempt_launch_id launch = preempt_last_launch();
  preempt_status status = preempt_set_quota(launch, quota);
  if (status != PREEMPT_OK) {
    std::fprintf(stderr, "coexec_bench: preempt_set_quota(%u): %d %s\n", quota, status, preempt_last_error());
    std::exit(1);
  }
}
#endif

int print_space(const Kind *a, const Kind *b) {
#ifdef PREEMPT_API
  preempt_coexec_space space = space_of(a, b);
  preempt_cta_footprint fa = footprint(a), fb = footprint(b);
  std::printf("{\"a\": \"%s\", \"b\": \"%s\", \"a_registers\": %u, \"a_shared\": %u, \"b_registers\": %u, "
              "\"b_shared\": %u, \"configs\": [",
              a->name, b->name, fa.registers_per_thread, fa.shared_bytes, fb.registers_per_thread, fb.shared_bytes);
  for (uint32_t index = 0; index < space.count; index++)
    std::printf("%s[%u, %u]", index ? ", " : "", space.configs[index].ctas_a, space.configs[index].ctas_b);
  std::printf("]}\n");
  return 0;
#else
  (void)a, (void)b;
  std::fprintf(stderr, "coexec_bench: 'space' needs the preempt build\n");
  return 2;
#endif
}

// One timed run of every kernel of `run` once; in fixed mode each pair member gets its quota right after its
// launch, and 5 ms in, each one's CTAs are counted per SM: *over counts SMs found above the quota.
double run_once(Run &run, const char *mode, const preempt_coexec_config *quotas, unsigned most[2],
                unsigned occupied[2], unsigned *over) {
  (void)mode, (void)quotas, (void)most, (void)occupied, (void)over;
  CHECK_CUDA(cudaDeviceSynchronize());
  auto start = Clock::now();
#ifdef PREEMPT_API
  preempt_launch_id launches[2] = {0, 0};
#endif
  for (size_t index = 0; index < run.kinds.size(); index++) {
    launch(run.kinds[index], run.outs[index], run.streams[index]);
#ifdef PREEMPT_API
    if (quotas) {
      launches[index] = preempt_last_launch();
      set_quota(index == 0 ? quotas->ctas_a : quotas->ctas_b);
    }
#endif
  }
#ifdef PREEMPT_API
  if (quotas) {
    usleep(5000);
    for (int index = 0; index < 2; index++) {
      preempt_progress progress;
      preempt_status status = preempt_get_progress(launches[index], &progress);
      if (status != PREEMPT_OK) {
        if (status != PREEMPT_ERROR_FINISHED)
          std::fprintf(stderr, "coexec_bench: progress of kernel %d: %d %s\n", index, status, preempt_last_error());
        continue;
      }
      most[index] = progress.most_resident;
      occupied[index] = progress.occupied_sms;
      *over += progress.most_resident > (index == 0 ? quotas->ctas_a : quotas->ctas_b);
    }
  }
#endif
  CHECK_CUDA(cudaDeviceSynchronize());
  return since_us(start);
}

int run_pairs(std::vector<const Kind *> kinds, const char *mode, int reps, int config) {
  bool one_stream = std::strcmp(mode, "seq") == 0;
  Run run = make_run(kinds, one_stream);
  const preempt_coexec_config *quotas = nullptr;
  preempt_coexec_config chosen{0, 0};
#ifdef PREEMPT_API
  if (std::strcmp(mode, "fixed") == 0) {
    preempt_coexec_space space = space_of(kinds[0], kinds[1]);
    if (config < 0 || (uint32_t)config >= space.count) {
      std::fprintf(stderr, "coexec_bench: configuration %d not in 0..%u\n", config, space.count - 1);
      return 2;
    }
    chosen = space.configs[config];
    quotas = &chosen;
  }
#else
  if (std::strcmp(mode, "fixed") == 0) {
    std::fprintf(stderr, "coexec_bench: 'fixed' needs the preempt build\n");
    return 2;
  }
#endif
  std::vector<double> times;
  unsigned most[2] = {0, 0}, occupied[2] = {0, 0}, over = 0;
  for (int rep = 0; rep < reps + 1; rep++) {
    double time = run_once(run, mode, quotas, most, occupied, &over);
    if (rep > 0) // the first run warms up (module load, the runtime's first samples)
      times.push_back(time);
  }
  unsigned wrong = 0;
  for (size_t index = 0; index < kinds.size(); index++)
    wrong += wrong_blocks(kinds[index], run.outs[index], (unsigned)reps + 1);
  std::string names;
  for (const Kind *kind : kinds)
    names += std::string(names.empty() ? "" : "+") + kind->name;
  std::printf("{\"kernels\": \"%s\", \"mode\": \"%s\", \"config\": %d, \"ctas\": [%u, %u], "
              "\"most_resident\": [%u, %u], \"occupied_sms\": [%u, %u], \"over_quota\": %u, \"wrong_blocks\": %u, %s}\n",
              names.c_str(), mode, config, chosen.ctas_a, chosen.ctas_b, most[0], most[1], occupied[0], occupied[1],
              over, wrong, json("makespan", stats(times)).c_str());
  return wrong || over ? 1 : 0;
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: coexec_bench space A B | pair A B MODE REPS [CONFIG] | mix COUNT MODE REPS\n");
    return 2;
  }
  if (const char *scale = getenv("COEXEC_SCALE"))
    g_scale = (unsigned)std::atoi(scale) > 0 ? (unsigned)std::atoi(scale) : 1;
  // Quotas hold persistent CTAs; the drain form runs the application's own grid.
  if (argc > 4 && std::strcmp(argv[4], "fixed") == 0)
    setenv("PREEMPT_FORM", "persistent", 1);
  unsigned *source;
  CHECK_CUDA(cudaMalloc(&source, (size_t)kGatherWords * sizeof(unsigned)));
  fill_source<<<1024, 256>>>(source);
  CHECK_CUDA(cudaDeviceSynchronize());
  g_source = source;
  if (std::strcmp(argv[1], "space") == 0)
    return print_space(kind_by_name(argv[2]), kind_by_name(argv[3]));
  if (std::strcmp(argv[1], "pair") == 0 && argc >= 6)
    return run_pairs({kind_by_name(argv[2]), kind_by_name(argv[3])}, argv[4], std::atoi(argv[5]),
                     argc > 6 ? std::atoi(argv[6]) : -1);
  if (std::strcmp(argv[1], "alone") == 0 && argc >= 5)
    return run_pairs({kind_by_name(argv[2])}, argv[3], std::atoi(argv[4]), -1);
  if (std::strcmp(argv[1], "mix") == 0 && argc >= 5) {
    int count = std::atoi(argv[2]);
    std::vector<const Kind *> kinds;
    for (int index = 0; index < count; index++)
      kinds.push_back(&kKinds[index % 4]);
    return run_pairs(kinds, argv[3], std::atoi(argv[4]), -1);
  }
  std::fprintf(stderr, "coexec_bench: bad arguments\n");
  return 2;
}
