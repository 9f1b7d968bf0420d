// Live shared memory at in-task points (passes/SharedLiveness.cpp, lib/shared_liveness.c; issue 8: "live shared
// memory saved where needed"). A context saved at a point holds a shared variable only where a path from the
// point may read what it holds. Where, at the kernel's launch-bounds block shape, the CTA writes all of it and
// meets at a barrier before any read, the variable keeps its place in the record but a CTA of that shape copies
// none of it (a select on %ntid in the save and the restore); a variable no later code of the task reads is left
// out of the record. Everything else is saved whole, as before. On the GPU, bench/intask/intask_bench.cu's gemm
// and solver (written whole at 256 threads) and its retile kernel at 256 and 128 threads are evicted 50 times
// each against the build without the plugin (bench/intask/intask_check.sh).
//
// RUN: %clang %cuda_flags --cuda-device-only -S -emit-llvm -fno-discard-value-names -Rpass=preempt %s -o %t.ll 2>&1 | %FileCheck %s --check-prefix=REMARK
// RUN: %opt -passes=verify -disable-output %t.ll
// RUN: sed -n '/^define .*@__preempt_intaskform__Z5tilesPKjPjj(/,/^}/p' %t.ll | %FileCheck %s --check-prefix=TILES
// RUN: sed -n '/^define .*@__preempt_intaskform__Z7by_sizePKjPjj(/,/^}/p' %t.ll | %FileCheck %s --check-prefix=BY-SIZE
// No shape test where nothing is skipped.
// RUN: sed -n '/^define .*@__preempt_intaskform__Z15tiles_unboundedPKjPjj(/,/^}/p' %t.ll | %FileCheck %s --check-prefix=UNBOUNDED --implicit-check-not=preempt.intask.shape
// RUN: sed -n '/^define .*@__preempt_intaskform__Z7partialPKjPjj(/,/^}/p' %t.ll | %FileCheck %s --check-prefix=PARTIAL --implicit-check-not=preempt.intask.shape
// The same fates in the constant-chunk twin and when counting down.
// RUN: %clang %cuda_flags --cuda-device-only -S -emit-llvm -mllvm -preempt-intask-chunk-work=512 -Rpass=preempt %s -o %t.chunks.ll 2>&1 | %FileCheck %s --check-prefix=REMARK
// RUN: %clang %cuda_flags --cuda-device-only -S -emit-llvm -mllvm -preempt-intask-strip-mine=0 -Rpass=preempt %s -o %t.countdown.ll 2>&1 | %FileCheck %s --check-prefix=REMARK
// RUN: %opt -passes=verify -disable-output %t.countdown.ll
// The PTX assembles.
// RUN: %clang %cuda_flags --cuda-device-only -S %s -o %t.ptx
// RUN: %if ptxas %{ %ptxas -arch=sm_90 %t.ptx -o %t.cubin %}

// UNBOUNDED: define {{.*}}@__preempt_intaskform__Z15tiles_unboundedPKjPjj(
// PARTIAL: define {{.*}}@__preempt_intaskform__Z7partialPKjPjj(

// tiles: gemm's K loop. At 256 threads, thread t stores words t, t + 256, t + 512, t + 768 of both tiles (as
// transposed), then the barrier: both are written whole before the loop reads them, on every path from the point
// (the next iteration's header, or the exit, after which nothing reads them). 2 x 4096 B.
// REMARK-DAG: remark: in-task yield point at loop {{.+}} of kernel '_Z5tilesPKjPjj': saves 4 B per thread and 4 B per CTA and 8192 B of shared memory (at 256x1x1 threads 0 B: the CTA overwrites 8192 B of it before any read);
// The save and the restore: ntid is 256 x 1 x 1, and then each tile's copy is 0 bytes long instead of 4096.
// TILES: icmp eq i32 {{%[0-9]+}}, 256
// TILES: select i1 [[SHAPE:%preempt.intask.shape[0-9]*]], i32 0, i32 4096
// TILES: select i1 [[SHAPE]], i32 0, i32 4096
// TILES: icmp eq i32 {{%[0-9]+}}, 256
// TILES: select i1 [[SHAPE2:%preempt.intask.shape[0-9]*]], i32 0, i32 4096
// TILES: select i1 [[SHAPE2]], i32 0, i32 4096
// The K loop itself, inlined into both kernels below.
__device__ __forceinline__ void tiles_loop(unsigned (*as)[64], unsigned (*bs)[64], const unsigned *a, unsigned *c,
                                           unsigned steps) {
  unsigned acc = 0;
  for (unsigned k0 = 0; k0 < steps; k0++) {
    for (int l = 0; l < 4; l++) {
      const unsigned e = threadIdx.x + l * 256;
      as[e % 16][e / 16] = a[k0 * 1024 + e];
      bs[e / 64][e % 64] = a[k0 * 1024 + e] ^ 1u;
    }
    __syncthreads();
    for (int kk = 0; kk < 16; kk++)
      acc += as[kk][threadIdx.x % 64] * bs[kk][threadIdx.x / 16 % 64];
    __syncthreads();
  }
  c[blockIdx.x * 256 + threadIdx.x] = acc;
}
__global__ void __launch_bounds__(256) tiles(const unsigned *a, unsigned *c, unsigned steps) {
  __shared__ unsigned as[16][64];
  __shared__ unsigned bs[16][64];
  tiles_loop(as, bs, a, c, steps);
}

// The same kernel without launch bounds: the pass knows no block size to check the stores at; saved whole.
// REMARK-DAG: remark: in-task yield point at loop {{.+}} of kernel '_Z15tiles_unboundedPKjPjj': saves 4 B per thread and 4 B per CTA and 8192 B of shared memory;
__global__ void tiles_unbounded(const unsigned *a, unsigned *c, unsigned steps) {
  __shared__ unsigned as[16][64];
  __shared__ unsigned bs[16][64];
  tiles_loop(as, bs, a, c, steps);
}

// by_size: addresses built from blockDim.x. At the launch bounds' 128 x 1 x 1, two stores a thread write the
// 256 words whole.
// REMARK-DAG: remark: in-task yield point at loop {{.+}} of kernel '_Z7by_sizePKjPjj': saves 4 B per thread and 4 B per CTA and 1024 B of shared memory (at 128x1x1 threads 0 B: the CTA overwrites 1024 B of it before any read);
// BY-SIZE: icmp eq i32 {{%[0-9]+}}, 128
// BY-SIZE: select i1 %preempt.intask.shape{{[0-9]*}}, i32 0, i32 1024
__global__ void __launch_bounds__(128) by_size(const unsigned *a, unsigned *c, unsigned steps) {
  __shared__ unsigned tile[256];
  unsigned acc = 0;
  for (unsigned s = 0; s < steps; s++) {
    for (int l = 0; l < 2; l++)
      tile[threadIdx.x + l * blockDim.x] = a[s * 256 + threadIdx.x + l * blockDim.x];
    __syncthreads();
    acc = acc * 3u + tile[(threadIdx.x * 5u) % 256];
    __syncthreads();
  }
  c[blockIdx.x * 128 + threadIdx.x] = acc;
}

// partial: 256 threads write half of a 512-word tile each iteration; the other half keeps what was there, and is
// read: saved whole.
// REMARK-DAG: remark: in-task yield point at loop {{.+}} of kernel '_Z7partialPKjPjj': saves 4 B per thread and 4 B per CTA and 2048 B of shared memory;
__global__ void __launch_bounds__(256) partial(const unsigned *a, unsigned *c, unsigned steps) {
  __shared__ unsigned tile[512];
  tile[threadIdx.x + 256] = a[threadIdx.x];
  unsigned acc = 0;
  for (unsigned s = 0; s < steps; s++) {
    tile[threadIdx.x] = a[s * 256 + threadIdx.x];
    __syncthreads();
    acc = acc * 3u + tile[(threadIdx.x * 3u) % 512];
    __syncthreads();
  }
  c[blockIdx.x * 256 + threadIdx.x] = acc;
}

// Conservative cases, all saved whole: a store whose address depends on the loop's counter (it would cover the
// tile, but only constants, the thread index and the block size are evaluated); a store under a branch on the
// thread index (not every thread stores); a read before the stores (the header reads the tile first).
// REMARK-DAG: remark: in-task yield point at loop {{.+}} of kernel '_Z7rotatedPKjPjj': saves {{[0-9]+}} B per thread and {{[0-9]+}} B per CTA and 1024 B of shared memory;
// REMARK-DAG: remark: in-task yield point at loop {{.+}} of kernel '_Z11conditionalPKjPjj': saves {{[0-9]+}} B per thread and {{[0-9]+}} B per CTA and 512 B of shared memory;
// REMARK-DAG: remark: in-task yield point at loop {{.+}} of kernel '_Z10read_firstPKjPjj': saves {{[0-9]+}} B per thread and {{[0-9]+}} B per CTA and 1024 B of shared memory;
__global__ void __launch_bounds__(256) rotated(const unsigned *a, unsigned *c, unsigned steps) {
  __shared__ unsigned tile[256];
  unsigned acc = 0;
  for (unsigned s = 0; s < steps; s++) {
    tile[(threadIdx.x + s) % 256] = a[s * 256 + threadIdx.x];
    __syncthreads();
    acc = acc * 3u + tile[(threadIdx.x * 5u) % 256];
    __syncthreads();
  }
  c[blockIdx.x * 256 + threadIdx.x] = acc;
}
__global__ void __launch_bounds__(256) conditional(const unsigned *a, unsigned *c, unsigned steps) {
  __shared__ unsigned tile[128];
  unsigned acc = 0;
  for (unsigned s = 0; s < steps; s++) {
    if (threadIdx.x < 128)
      tile[threadIdx.x] = a[s * 256 + threadIdx.x];
    __syncthreads();
    acc = acc * 3u + tile[(threadIdx.x * 5u) % 128];
    __syncthreads();
  }
  c[blockIdx.x * 256 + threadIdx.x] = acc;
}
__global__ void __launch_bounds__(256) read_first(const unsigned *a, unsigned *c, unsigned steps) {
  __shared__ unsigned tile[256];
  tile[threadIdx.x] = a[threadIdx.x];
  __syncthreads();
  unsigned acc = 0;
  for (unsigned s = 0; s < steps; s++) {
    acc = acc * 3u + tile[(threadIdx.x * 5u + 1u) % 256];
    __syncthreads();
    tile[threadIdx.x] = acc;
    __syncthreads();
  }
  c[blockIdx.x * 256 + threadIdx.x] = acc;
}

// unread: the scratch array is read only before the loop; a context at the loop's point leaves it out.
// REMARK-DAG: remark: in-task yield point at loop {{.+}} of kernel '_Z6unreadPKjPjj': saves {{[0-9]+}} B per thread and {{[0-9]+}} B per CTA and 0 B of shared memory (leaving out 1024 B the rest of the task does not read);
__global__ void __launch_bounds__(256) unread(const unsigned *a, unsigned *c, unsigned steps) {
  __shared__ unsigned scratch[256];
  scratch[threadIdx.x] = a[threadIdx.x];
  __syncthreads();
  unsigned acc = scratch[255 - threadIdx.x];
  for (unsigned s = 0; s < steps; s++)
    acc = acc * 3u + a[s * 256 + threadIdx.x];
  c[blockIdx.x * 256 + threadIdx.x] = acc;
}
