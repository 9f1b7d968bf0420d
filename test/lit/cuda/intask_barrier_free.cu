// Checks with no barrier of their own (passes/InTaskYield.cpp, runtime-dev/task_loop.cu
// __preempt_intask_check_flags; issue 8's overhead goal). A point of a loop that meets at a barrier of the whole CTA
// every iteration (a block of the loop holding one dominates its latch) checks without meeting: every thread acts on
// the answer thread 0 left in a shared slot at the check before, and thread 0 leaves the next one in the other slot.
// The loop's first check after entering, and a check an answer asks to (PREEMPT_INTASK_AGAIN), still meet at
// barriers. Other loops keep the check that meets at two barriers. bench/intask/intask_check.sh evicts the bench's
// stencil, gemm, solver and retile kernels (all checking this way) 50 times each against the build without the
// plugin; bench/intask/check_protocol.cu measures the two protocols by hand.
//
// RUN: %clang %cuda_flags --cuda-device-only -S -emit-llvm -fno-discard-value-names -Rpass=preempt %s -o %t.ll 2>&1 | %FileCheck %s --check-prefix=REMARK
// RUN: %opt -passes=verify -disable-output %t.ll
// RUN: sed -n '/^define .*@__preempt_intaskform__Z5sweepPKjPjj(/,/^}/p' %t.ll | %FileCheck %s --check-prefix=FLAGS
// RUN: sed -n '/^define .*@__preempt_intaskform__Z4hashPjj(/,/^}/p' %t.ll | %FileCheck %s --check-prefix=MEETS --implicit-check-not=check_flags
// Off: every point's checks meet at barriers.
// RUN: %clang %cuda_flags --cuda-device-only -S -emit-llvm -fno-discard-value-names -mllvm -preempt-intask-barrier-free=0 -Rpass=preempt %s -o %t.off.ll 2>&1 | %FileCheck %s --check-prefix=OFF --implicit-check-not="no barrier of their own"
// RUN: sed -n '/^define .*@__preempt_intaskform__Z5sweepPKjPjj(/,/^}/p' %t.off.ll | %FileCheck %s --check-prefix=MEETS --implicit-check-not=check_flags
// Counting down, and in constant chunks: the same choice.
// RUN: %clang %cuda_flags --cuda-device-only -S -emit-llvm -mllvm -preempt-intask-strip-mine=0 -Rpass=preempt %s -o %t.countdown.ll 2>&1 | %FileCheck %s --check-prefix=REMARK
// RUN: %opt -passes=verify -disable-output %t.countdown.ll
// RUN: %clang %cuda_flags --cuda-device-only -S -emit-llvm -mllvm -preempt-intask-chunk-work=512 -Rpass=preempt %s -o %t.chunks.ll 2>&1 | %FileCheck %s --check-prefix=REMARK
// RUN: %opt -passes=verify -disable-output %t.chunks.ll
// The PTX assembles.
// RUN: %clang %cuda_flags --cuda-device-only -S %s -o %t.ptx
// RUN: %if ptxas %{ %ptxas -arch=sm_90 %t.ptx -o %t.cubin %}

// REMARK-DAG: remark: in-task yield point at loop {{.+}} of kernel '_Z5sweepPKjPjj': {{.*}}; checks with no barrier of their own (every iteration meets at one)
// REMARK-DAG: remark: in-task yield point at loop {{.+}} of kernel '_Z4hashPjj': {{.*}}{{(counted down|strip-mined at its trip count)[^;]*}} [-Rpass=preempt]
// REMARK-DAG: remark: in-task yield point at loop {{.+}} of kernel '_Z9sometimesPjj': {{.*}}{{(counted down|strip-mined at its trip count)[^;]*}} [-Rpass=preempt]
// OFF-DAG: remark: in-task yield point at loop {{.+}} of kernel '_Z5sweepPKjPjj'
// OFF-DAG: remark: in-task yield point at loop {{.+}} of kernel '_Z4hashPjj'
// OFF-DAG: remark: in-task yield point at loop {{.+}} of kernel '_Z9sometimesPjj'

// sweep: two barriers every iteration. At the check, the slot's answer is read and tested for AGAIN, and thread 0
// reads the eviction word, with no barrier on the way; the barriers come after, on the path of a first check.
// FLAGS: {{.*}}.intask.check:
// FLAGS-NOT: barrier
// FLAGS: load i32, ptr {{%[0-9]+}}
// FLAGS-NEXT: and i32 {{%[0-9]+}}, 1073741824
// FLAGS-NOT: barrier
// FLAGS: load atomic i32
// FLAGS: call void @llvm.nvvm.barrier.cta.sync.aligned.all(i32 0)
__global__ void __launch_bounds__(256) sweep(const unsigned *in, unsigned *out, unsigned steps) {
  __shared__ unsigned tile[256];
  tile[threadIdx.x] = in[blockIdx.x * 256 + threadIdx.x];
  __syncthreads();
  unsigned v = 0;
  for (unsigned s = 0; s < steps; s++) {
    v = v * 3u + tile[(threadIdx.x + s) % 256];
    __syncthreads();
    tile[threadIdx.x] = v;
    __syncthreads();
  }
  out[blockIdx.x * 256 + threadIdx.x] = v;
}

// hash: no barrier in the loop; its checks meet at two.
// MEETS: __preempt_intask_check.exit
__global__ void __launch_bounds__(256) hash(unsigned *out, unsigned steps) {
  unsigned value = blockIdx.x * 2654435761u + threadIdx.x;
  for (unsigned s = 0; s < steps; s++)
    value = value * 1664525u + (1013904223u ^ s);
  out[blockIdx.x * 256 + threadIdx.x] = value;
}

// sometimes: a barrier only in odd iterations (a branch the whole CTA agrees on): not every iteration meets.
__global__ void __launch_bounds__(256) sometimes(unsigned *data, unsigned steps) {
  __shared__ unsigned tile[256];
  unsigned v = data[blockIdx.x * 256 + threadIdx.x];
  for (unsigned s = 0; s < steps; s++) {
    v = v * 5u + s;
    if (s & 1u) {
      tile[threadIdx.x] = v;
      __syncthreads();
      v += tile[255 - threadIdx.x];
      __syncthreads();
    }
  }
  data[blockIdx.x * 256 + threadIdx.x] = v;
}
