// pipeline: four-stage kernel pipeline on one stream: a template kernel instantiated twice, a dynamic-shared-memory filter, a combine.
// Part of preempt's correctness suite (bench/suite, issue: Foundation).
#include "common.h"

namespace {

constexpr size_t kN = (size_t(1) << 24) + 99;  // the last block is partial
constexpr int kBlock = 256;
// Every round decodes different bit fields and filters with a different radius
// (so a different dynamic shared-memory size), then accumulates into acc: the
// output depends on each round and on each launch's arguments.
constexpr int kRounds = 40;
constexpr int kMaxRadius = 8;
constexpr size_t kSampleStride = 1021;

int radius_of(int round) { return 1 + round % kMaxRadius; }
int float_shift_of(int round) { return round & 7; }
int int_shift_of(int round) { return 16 - (round & 7); }

// Instantiated for float and int: one source, two kernels.
template <typename T>
__global__ void decode_field(const uint32_t* __restrict__ raw, T* __restrict__ out, size_t n, int shift, T scale) {
  const size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = static_cast<T>((raw[i] >> shift) & 0xFFFFu) * scale;
}

__host__ __device__ inline size_t clamp_index(long long i, size_t n) {
  return i < 0 ? 0 : (static_cast<size_t>(i) >= n ? n - 1 : static_cast<size_t>(i));
}

// 1D box filter of radius r. The block's input window (its own elements plus r
// on each side) is staged in dynamic shared memory sized at launch, because r
// changes from round to round.
__global__ void box_filter(const float* __restrict__ in, float* __restrict__ out, size_t n, int r) {
  extern __shared__ float window[];
  const long long base = static_cast<long long>(blockIdx.x) * blockDim.x;
  const int width = static_cast<int>(blockDim.x) + 2 * r;
  for (int j = threadIdx.x; j < width; j += blockDim.x) window[j] = in[clamp_index(base + j - r, n)];
  __syncthreads();
  const size_t i = static_cast<size_t>(base) + threadIdx.x;
  if (i < n) {
    float sum = 0.0f;
    for (int d = 0; d <= 2 * r; ++d) sum += window[threadIdx.x + d];
    out[i] = sum / static_cast<float>(2 * r + 1);
  }
}

// Explicit fmaf: no multiply is left for the backend to contract.
__global__ void combine(const float* __restrict__ g, const int* __restrict__ q, float* __restrict__ acc, size_t n) {
  const size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) acc[i] = fmaf(g[i], static_cast<float>(q[i] % 5 + 1), acc[i]);
}

}  // namespace

int main(int argc, char** argv) {
  Args args = parse_args(argc, argv);

  Rng rng(0x5EED000C);
  std::vector<uint32_t> hraw(kN);
  for (uint32_t& v : hraw) v = rng.next_u32();

  uint32_t* d_raw = upload(hraw);
  float* d_f = device_alloc<float>(kN);
  int* d_q = device_alloc<int>(kN);
  float* d_g = device_alloc<float>(kN);
  float* d_acc = device_alloc<float>(kN);

  cudaStream_t stream;
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  const unsigned grid = div_up(kN, kBlock);
  const float kFloatScale = 1.0f / 65536.0f;  // exact: decoded floats are k / 2^16

  time_reps(
      args.reps, stream, [&] { CUDA_CHECK(cudaMemsetAsync(d_acc, 0, kN * sizeof(float), stream)); },
      [&] {
        for (int k = 0; k < kRounds; ++k) {
          decode_field<float><<<grid, kBlock, 0, stream>>>(d_raw, d_f, kN, float_shift_of(k), kFloatScale);
          LAUNCH_CHECK();
          decode_field<int><<<grid, kBlock, 0, stream>>>(d_raw, d_q, kN, int_shift_of(k), 1);
          LAUNCH_CHECK();
          const int r = radius_of(k);
          const size_t smem = (kBlock + 2 * r) * sizeof(float);
          box_filter<<<grid, kBlock, smem, stream>>>(d_f, d_g, kN, r);
          LAUNCH_CHECK();
          combine<<<grid, kBlock, 0, stream>>>(d_g, d_q, d_acc, kN);
          LAUNCH_CHECK();
        }
      });

  std::vector<float> acc = download(d_acc, kN);
  write_output(args.out_path, {out_buf(acc)});

  // The CPU repeats each operation in the GPU's order (IEEE division, correctly
  // rounded fmaf), so exact agreement is expected; the tolerance is a margin.
  Checker check("pipeline");
  auto check_elem = [&](size_t i) {
    float want = 0.0f;
    for (int k = 0; k < kRounds; ++k) {
      const int r = radius_of(k);
      float sum = 0.0f;
      for (int d = -r; d <= r; ++d) {
        uint32_t raw = hraw[clamp_index(static_cast<long long>(i) + d, kN)];
        sum += static_cast<float>((raw >> float_shift_of(k)) & 0xFFFFu) * kFloatScale;
      }
      const float g = sum / static_cast<float>(2 * r + 1);
      const int q = static_cast<int>((hraw[i] >> int_shift_of(k)) & 0xFFFFu);
      want = std::fmaf(g, static_cast<float>(q % 5 + 1), want);
    }
    check.close(acc[i], want, 1e-6, 0.0, "acc[%zu]", i);
  };
  for (size_t i = 0; i < kN; i += kSampleStride) check_elem(i);
  for (size_t i = kN - kMaxRadius - 1; i < kN; ++i) check_elem(i);  // clamped window at the end
  check.finish();
  CUDA_CHECK(cudaStreamDestroy(stream));
  return 0;
}
