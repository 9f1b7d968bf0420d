// Sixteen kernels, each with a static shared array and a loop whose trip count differs between
// threads (no in-task point, so each in-task variant is made and erased again). Each kernel's
// copies get their own twin of its array: the persistent form keeps the array, the unconverted
// copy gets .original, the drain form .drain; the erased variant's .intask twin goes with it.
// 16 x 3 arrays + the runtime's task context = 49. A variant's twin, left reachable only
// through dead constant expressions, once passed for "used only by" every later kernel, and was
// twinned again with each copy: the twins doubled per kernel and this file never finished
// compiling (nor did bench/preemption/drain_probe.cu's 86 kernels). `timeout` turns a return
// of that into a failure rather than a hang.
// RUN: timeout 120 %clang %cuda_flags --cuda-device-only -S -emit-llvm -fno-discard-value-names %s -o %t.ll
// RUN: grep -c 'addrspace(3) global' %t.ll | %FileCheck %s --check-prefix=COUNT
// RUN: %FileCheck %s < %t.ll --implicit-check-not=.intask
// COUNT: {{^}}49{{$}}
// CHECK-DAG: @_ZZ9refused_0PKfPfE3buf = internal {{.*}}addrspace(3) global
// CHECK-DAG: @_ZZ9refused_0PKfPfE3buf.original = internal {{.*}}addrspace(3) global
// CHECK-DAG: @_ZZ9refused_0PKfPfE3buf.drain = internal {{.*}}addrspace(3) global
// CHECK-DAG: @_ZZ10refused_15PKfPfE3buf.drain = internal {{.*}}addrspace(3) global

#define KERNEL(N)                                                                                  \
  __global__ void refused_##N(const float *in, float *out) {                                       \
    __shared__ float buf[32];                                                                      \
    buf[threadIdx.x % 32] = in[threadIdx.x];                                                       \
    __syncthreads();                                                                               \
    float sum = 0.0f;                                                                              \
    for (unsigned i = 0; i < threadIdx.x; i++)                                                     \
      sum += buf[i % 32] * (float)N;                                                               \
    out[blockIdx.x * blockDim.x + threadIdx.x] = sum;                                              \
  }
KERNEL(0) KERNEL(1) KERNEL(2) KERNEL(3) KERNEL(4) KERNEL(5) KERNEL(6) KERNEL(7)
KERNEL(8) KERNEL(9) KERNEL(10) KERNEL(11) KERNEL(12) KERNEL(13) KERNEL(14) KERNEL(15)
