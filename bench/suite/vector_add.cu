// vector_add: 1D-grid element-wise float add with a tail guard, chained over many launches.
// Part of preempt's correctness suite (bench/suite, issue: Foundation).
#include "common.h"

namespace {

// Not a multiple of the block size, so the last block runs with idle threads.
// bench/build_suite.sh also builds 2^23 and 2^27 variants: how the conversion's
// cost splits between a fixed part per launch and a part per task.
#ifndef VECTOR_ADD_LOG2_N
#define VECTOR_ADD_LOG2_N 25
#endif
constexpr size_t kN = (size_t(1) << VECTOR_ADD_LOG2_N) + 333;
constexpr int kBlock = 256;
// Each launch adds b to the previous launch's result, so the output records how
// many launches really ran (a dropped or doubled launch changes every element).
constexpr int kLaunches = 96;
constexpr size_t kSampleStride = 4099;

__global__ void vector_add(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c,
                           size_t n) {
  size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

}  // namespace

int main(int argc, char** argv) {
  Args args = parse_args(argc, argv);

  Rng rng(0x5EED0001);
  std::vector<float> hx(kN), hb(kN);
  for (size_t i = 0; i < kN; ++i) hx[i] = 2.0f * rng.unit() - 1.0f;
  for (size_t i = 0; i < kN; ++i) hb[i] = rng.unit() * 0.01f;

  float* dx = upload(hx);
  float* db = upload(hb);
  float* dbuf[2] = {device_alloc<float>(kN), device_alloc<float>(kN)};

  const unsigned grid = div_up(kN, kBlock);
  time_reps(
      args.reps, 0, [] {},
      [&] {
        const float* src = dx;
        for (int k = 0; k < kLaunches; ++k) {
          float* dst = dbuf[k & 1];
          vector_add<<<grid, kBlock>>>(src, db, dst, kN);
          LAUNCH_CHECK();
          src = dst;
        }
      });

  std::vector<float> out = download(dbuf[(kLaunches - 1) & 1], kN);
  write_output(args.out_path, {out_buf(out)});

  // The same float additions in the same order as the GPU: exact in practice,
  // a small relative tolerance anyway.
  Checker check("vector_add");
  auto check_at = [&](size_t i) {
    float want = hx[i];
    for (int k = 0; k < kLaunches; ++k) want = want + hb[i];
    check.close(out[i], want, 1e-6, 1.0, "element %zu", i);
  };
  for (size_t i = 0; i < kN; i += kSampleStride) check_at(i);
  check_at(kN - 1);
  check.finish();
  return 0;
}
