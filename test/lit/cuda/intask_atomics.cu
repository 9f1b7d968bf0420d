// A point in a loop with shared and global atomics (passes/InTaskYield.cpp, issue 8: "correct with
// barriers, shared memory and atomics"). What the loop has done is kept, not redone: the shared bins
// are saved whole with the context, each thread's chain value is saved, and the restore re-executes
// no atomic (the planner rebuilds only side-effect-free values, CTXBack §III-B), so the variant holds
// exactly the loop's own two atomics, in every chunk shape. (atomicAdd is a seq_cst atomicrmw; the
// task loop's and the context ring's own atomics, inlined from runtime-dev, are monotonic.) The
// `atomics` kernel of bench/intask/intask_bench.cu is this loop, evicted 50 times on the GPU against
// the build without the plugin (bench/intask/intask_check.sh).
//
// RUN: %clang %cuda_flags --cuda-device-only -S -emit-llvm -fno-discard-value-names -Rpass=preempt %s -o %t.ll 2>&1 | %FileCheck %s --check-prefix=REMARK
// RUN: %opt -passes=verify -disable-output %t.ll
// The kernel's persistent form holds the same two.
// RUN: sed -n '/^define .*@_Z4binsPjS_j(/,/^}/p' %t.ll | grep -c 'atomicrmw .* seq_cst' | %FileCheck %s --check-prefix=TWO
// RUN: sed -n '/^define .*@__preempt_intaskform__Z4binsPjS_j(/,/^}/p' %t.ll > %t.variant
// RUN: grep -c 'atomicrmw .* seq_cst' %t.variant | %FileCheck %s --check-prefix=TWO
// Counting down: the same two atomics.
// RUN: %clang %cuda_flags --cuda-device-only -S -emit-llvm -fno-discard-value-names -mllvm -preempt-intask-strip-mine=0 %s -o %t.countdown.ll
// RUN: %opt -passes=verify -disable-output %t.countdown.ll
// RUN: sed -n '/^define .*@__preempt_intaskform__Z4binsPjS_j(/,/^}/p' %t.countdown.ll | grep -c 'atomicrmw .* seq_cst' | %FileCheck %s --check-prefix=TWO
// Constant chunks: the loop's tail copy (fewer iterations than a chunk, no check) holds a second pair.
// RUN: %clang %cuda_flags --cuda-device-only -S -emit-llvm -fno-discard-value-names -mllvm -preempt-intask-chunk-work=512 -Rpass=preempt %s -o %t.chunks.ll 2>&1 | %FileCheck %s --check-prefix=CHUNKS
// RUN: %opt -passes=verify -disable-output %t.chunks.ll
// RUN: sed -n '/^define .*@__preempt_intaskform__Z4binsPjS_j(/,/^}/p' %t.chunks.ll | grep -c 'atomicrmw .* seq_cst' | %FileCheck %s --check-prefix=FOUR

// 4 B per thread: the chain value; 4 B per CTA: the round (uniform); all 4096 B of the bins.
// REMARK: in-task yield point at loop {{.+}} of kernel '_Z4binsPjS_j': saves 4 B per thread and 4 B per CTA and 4096 B of shared memory; every live value: {{[0-9]+}} B per thread ({{.*}}); strip-mined at its trip count
// CHUNKS: in-task yield point at loop {{.+}} of kernel '_Z4binsPjS_j': {{.*}}, in chunks of {{[0-9]+}} iterations
// TWO: {{^}}2{{$}}
// FOUR: {{^}}4{{$}}

__global__ void __launch_bounds__(256) bins(unsigned *block_bins, unsigned *global_bins, unsigned rounds) {
  __shared__ unsigned shared_bins[1024];
  for (int k = 0; k < 4; k++)
    shared_bins[threadIdx.x + k * 256] = 0;
  __syncthreads();
  unsigned value = blockIdx.x * 2654435761u + threadIdx.x * 40503u + 1u;
  for (unsigned round = 0; round < rounds; round++) {
    value = value * 1664525u + (1013904223u ^ round);
    atomicAdd(&shared_bins[value >> 22], 1u + (value & 7u));
    if ((value & 15u) == 0)
      atomicAdd(&global_bins[(value >> 4) % 4096], value >> 12);
  }
  __syncthreads();
  for (int k = 0; k < 4; k++)
    block_bins[blockIdx.x * 1024 + threadIdx.x + k * 256] = shared_bins[threadIdx.x + k * 256];
}
