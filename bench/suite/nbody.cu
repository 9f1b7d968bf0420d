// nbody: all-pairs float gravity with shared-memory tiles of bodies, plus an integration kernel, several steps.
// Part of preempt's correctness suite (bench/suite, issue: Foundation).
#include "common.h"

namespace {

constexpr int kBodies = 40000;  // not a multiple of the block: the last tile is padded with massless bodies
constexpr int kBlock = 128;
constexpr int kSteps = 10;
constexpr float kSoftening2 = 0.01f;
constexpr float kDt = 0.001f;
constexpr int kSampleStride = 311;

// Every multiply-add is an explicit fmaf and no other product feeds an add, so
// the bits do not depend on how the backend contracts; rsqrtf is a single
// deterministic hardware instruction.
__global__ void body_forces(const float4* __restrict__ pos, float4* __restrict__ acc, int n) {
  __shared__ float4 tile[kBlock];
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const float4 pi = i < n ? pos[i] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  float ax = 0.0f, ay = 0.0f, az = 0.0f;

  // Threads past the end keep loading tiles and reaching the barriers.
  for (int base = 0; base < n; base += kBlock) {
    const int j = base + threadIdx.x;
    tile[threadIdx.x] = j < n ? pos[j] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    __syncthreads();
    for (int k = 0; k < kBlock; ++k) {
      const float4 pj = tile[k];
      const float dx = pj.x - pi.x, dy = pj.y - pi.y, dz = pj.z - pi.z;
      const float d2 = fmaf(dx, dx, fmaf(dy, dy, fmaf(dz, dz, kSoftening2)));
      const float inv = rsqrtf(d2);
      const float s = pj.w * (inv * inv * inv);
      ax = fmaf(dx, s, ax);
      ay = fmaf(dy, s, ay);
      az = fmaf(dz, s, az);
    }
    __syncthreads();
  }
  if (i < n) acc[i] = make_float4(ax, ay, az, 0.0f);
}

__global__ void integrate(float4* __restrict__ pos, float4* __restrict__ vel, const float4* __restrict__ acc, int n,
                          float dt) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float4 p = pos[i], v = vel[i];
  const float4 a = acc[i];
  v.x = fmaf(a.x, dt, v.x);
  v.y = fmaf(a.y, dt, v.y);
  v.z = fmaf(a.z, dt, v.z);
  p.x = fmaf(v.x, dt, p.x);
  p.y = fmaf(v.y, dt, p.y);
  p.z = fmaf(v.z, dt, p.z);
  pos[i] = p;
  vel[i] = v;
}

}  // namespace

int main(int argc, char** argv) {
  Args args = parse_args(argc, argv);

  Rng rng(0x5EED0008);
  std::vector<float4> hpos(kBodies), hvel(kBodies);
  for (float4& p : hpos)
    p = make_float4(2.0f * rng.unit() - 1.0f, 2.0f * rng.unit() - 1.0f, 2.0f * rng.unit() - 1.0f,
                    (0.5f + rng.unit()) / kBodies);
  for (float4& v : hvel)
    v = make_float4(0.1f * (rng.unit() - 0.5f), 0.1f * (rng.unit() - 0.5f), 0.1f * (rng.unit() - 0.5f), 0.0f);

  float4* d_pos0 = upload(hpos);
  float4* d_vel0 = upload(hvel);
  float4* d_pos = device_alloc<float4>(kBodies);
  float4* d_vel = device_alloc<float4>(kBodies);
  float4* d_acc = device_alloc<float4>(kBodies);

  const unsigned grid = div_up(kBodies, kBlock);
  auto reset = [&] {
    CUDA_CHECK(cudaMemcpy(d_pos, d_pos0, kBodies * sizeof(float4), cudaMemcpyDeviceToDevice));
    CUDA_CHECK(cudaMemcpy(d_vel, d_vel0, kBodies * sizeof(float4), cudaMemcpyDeviceToDevice));
  };
  time_reps(args.reps, 0, reset, [&] {
    for (int s = 0; s < kSteps; ++s) {
      body_forces<<<grid, kBlock>>>(d_pos, d_acc, kBodies);
      LAUNCH_CHECK();
      integrate<<<grid, kBlock>>>(d_pos, d_vel, d_acc, kBodies, kDt);
      LAUNCH_CHECK();
    }
  });

  std::vector<float4> pos = download(d_pos, kBodies);
  std::vector<float4> vel = download(d_vel, kBodies);
  write_output(args.out_path, {out_buf(pos), out_buf(vel)});

  Checker check("nbody");
  for (int i = 0; i < kBodies; ++i) {
    check.finite(pos[i].x + pos[i].y + pos[i].z, "final position of body %d", i);
    check.finite(vel[i].x + vel[i].y + vel[i].z, "final velocity of body %d", i);
  }

  // Replaying kSteps of all-pairs forces on the CPU would take minutes, so the
  // force kernel is checked on one untimed launch from the initial state (a
  // sample of bodies against double precision); the multi-step output itself is
  // what the runner compares bit for bit between builds.
  reset();
  body_forces<<<grid, kBlock>>>(d_pos, d_acc, kBodies);
  LAUNCH_CHECK();
  CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<float4> acc = download(d_acc, kBodies);
  auto check_body = [&](int i) {
    double a[3] = {0, 0, 0}, scale = 0.0;
    for (int j = 0; j < kBodies; ++j) {
      double d[3] = {static_cast<double>(hpos[j].x) - hpos[i].x, static_cast<double>(hpos[j].y) - hpos[i].y,
                     static_cast<double>(hpos[j].z) - hpos[i].z};
      double d2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2] + kSoftening2;
      double s = hpos[j].w / (d2 * std::sqrt(d2));
      for (int c = 0; c < 3; ++c) a[c] += d[c] * s;
      scale += std::sqrt(d2 - kSoftening2) * s;
    }
    const float got[3] = {acc[i].x, acc[i].y, acc[i].z};
    for (int c = 0; c < 3; ++c) check.close(got[c], a[c], 1e-4, scale, "acceleration of body %d, axis %d", i, c);
  };
  for (int i = 0; i < kBodies; i += kSampleStride) check_body(i);
  check_body(kBodies - 1);
  check.finish();
  return 0;
}
