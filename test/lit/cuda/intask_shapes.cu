// Two in-task shapes (passes/InTaskYield.cpp, docs/intask.md "Two shapes"): a kernel whose strip-mined
// loop is small enough for constant chunks gets a second variant in them, __preempt_intaskchunks_,
// with a descriptor of its own (__preempt_chunkpoints_), placed without remarks of its own but one
// that says it was made; the runtime times both (runtime-host/intask.c, choose_shape; unit-tested
// in test_launch). A kernel whose points count down gets none, nor does any kernel with
// -preempt-intask-chunks-variant=0 or with -preempt-intask-chunk-work=N (its one variant is in chunks).
// The first variant is the same with or without its twin.
//
// RUN: %clang %cuda_flags --cuda-device-only -S -emit-llvm -fno-discard-value-names -Rpass=preempt %s -o %t.ll 2> %t.remarks
// RUN: %opt -passes=verify -disable-output %t.ll
// RUN: %FileCheck %s --check-prefix=REMARK < %t.remarks
// RUN: grep -c 'in-task yield point at loop' %t.remarks | %FileCheck %s --check-prefix=TWO
// RUN: %FileCheck %s --check-prefix=TWIN < %t.ll
// The twin runs constant chunks (its tail copy), the first variant chunks of a run-time length (none).
// RUN: sed -n '/^define .*@__preempt_intaskchunks__Z4hashPjjj(/,/^}/p' %t.ll | grep -c 'intask.tail' | %FileCheck %s --check-prefix=SOME
// (Metadata attachments left out: their numbers move with the twin's.)
// RUN: sed -n '/^define .*@__preempt_intaskform__Z4hashPjjj(/,/^}/p' %t.ll | sed -E 's/,? ![a-z.]+ ![0-9]+//g' > %t.first
// RUN: not grep -q 'intask.tail' %t.first
// Without the twin: no second variant, and the first is unchanged.
// RUN: %clang %cuda_flags --cuda-device-only -S -emit-llvm -fno-discard-value-names -Rpass=preempt -mllvm -preempt-intask-chunks-variant=0 %s -o %t.none.ll 2> /dev/null
// RUN: not grep -q 'intaskchunks\|chunkpoints' %t.none.ll
// RUN: sed -n '/^define .*@__preempt_intaskform__Z4hashPjjj(/,/^}/p' %t.none.ll | sed -E 's/,? ![a-z.]+ ![0-9]+//g' | diff - %t.first
// RUN: %clang %cuda_flags --cuda-device-only -S -emit-llvm -fno-discard-value-names -mllvm -preempt-intask-chunk-work=512 %s -o %t.chunked.ll
// RUN: not grep -q 'intaskchunks\|chunkpoints' %t.chunked.ll
// RUN: sed -n '/^define .*@__preempt_intaskform__Z4hashPjjj(/,/^}/p' %t.chunked.ll | grep -c 'intask.tail' | %FileCheck %s --check-prefix=SOME

// REMARK-DAG: in-task yield point at loop {{.+}} of kernel '_Z4hashPjjj': {{.*}}strip-mined at its trip count [-Rpass=preempt]
// REMARK-DAG: in-task yield point at loop {{.+}} of kernel '_Z5tilesPKjPjj': {{.*}}counted down
// REMARK-DAG: kernel '_Z4hashPjjj' also gets an in-task variant in constant chunks (1 of its 1 points run them; it saves {{[0-9]+}} B per thread and {{[0-9]+}} B per CTA): the runtime times both shapes and runs the faster
// REMARK-NOT: kernel '_Z5tilesPKjPjj' also gets
// TWO: {{^}}2{{$}}
// SOME: {{^[1-9][0-9]*$}}
// TWIN-DAG: @__preempt_chunkpoints__Z4hashPjjj = {{.*}}constant [4 x i32] [i32 10, i32 1,
// TWIN-DAG: define {{.*}}@__preempt_intaskchunks__Z4hashPjjj(
// TWIN-DAG: define {{.*}}@__preempt_intaskform__Z5tilesPKjPjj(
// TWIN-NOT: @__preempt_intaskchunks__Z5tilesPKjPjj(

// A hash chain per thread: a small body, an exact trip count (strip-mined).
__global__ void __launch_bounds__(256) hash(unsigned *out, unsigned seed, unsigned steps) {
  unsigned value = seed + threadIdx.x * 40503u + blockIdx.x;
  for (unsigned i = 0; i < steps; i++)
    value = value * 1664525u + (1013904223u ^ i);
  out[blockIdx.x * 256 + threadIdx.x] = value;
}

// A loop stepping an unsigned counter by 16 (it might wrap: no exact trip count), counting down.
__global__ void __launch_bounds__(256) tiles(const unsigned *in, unsigned *out, unsigned total) {
  __shared__ unsigned tile[256];
  unsigned sum = 0;
  for (unsigned k = 0; k < total; k += 16) {
    tile[threadIdx.x] = in[k + threadIdx.x];
    __syncthreads();
    sum += tile[(threadIdx.x + 1) % 256] * tile[threadIdx.x];
    __syncthreads();
  }
  out[blockIdx.x * 256 + threadIdx.x] = sum;
}
