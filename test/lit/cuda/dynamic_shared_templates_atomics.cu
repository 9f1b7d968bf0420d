// Dynamic shared memory, several kernels and template instances in one file, and atomics:
// all converted, one marker each, and the PTX assembles.
// RUN: %clang %cuda_flags --cuda-device-only -S -Rpass=preempt -Rpass-missed=preempt %s -o %t.ptx 2>&1 | %FileCheck %s --check-prefix=REMARK
// RUN: %if ptxas %{ %ptxas -arch=sm_90 %t.ptx -o %t.cubin %}
// RUN: %FileCheck %s < %t.ptx

// REMARK-DAG: kernel '_Z12dynamic_tilePfj' converted
// REMARK-DAG: kernel '_Z5scaleIfEvPT_S0_' converted
// REMARK-DAG: kernel '_Z5scaleIiEvPT_S0_' converted
// REMARK-DAG: kernel '_Z9histogramPKjjPj' converted
// REMARK-NOT: left unchanged

// CHECK-DAG: __preempt_kernel__Z12dynamic_tilePfj = 10;
// CHECK-DAG: __preempt_kernel__Z5scaleIfEvPT_S0_ = 10;
// CHECK-DAG: __preempt_kernel__Z5scaleIiEvPT_S0_ = 10;
// CHECK-DAG: __preempt_kernel__Z9histogramPKjjPj = 10;
// CHECK-DAG: .extern .shared .align {{[0-9]+}} .b8 dynamic_storage[];

extern __shared__ float dynamic_storage[];

__global__ void dynamic_tile(float *data, unsigned width) {
  dynamic_storage[threadIdx.x] = data[blockIdx.x * width + threadIdx.x];
  __syncthreads();
  data[blockIdx.x * width + threadIdx.x] = dynamic_storage[width - 1 - threadIdx.x];
}

template <typename T> __global__ void scale(T *data, T factor) {
  data[blockIdx.x * blockDim.x + threadIdx.x] *= factor;
}
template __global__ void scale<float>(float *, float);
template __global__ void scale<int>(int *, int);

__global__ void histogram(const unsigned *values, unsigned count, unsigned *bins) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < count)
    atomicAdd(&bins[values[i] % 64], 1u);
}
