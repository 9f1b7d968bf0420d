// The unconverted copy of a kernel gets its own twin of each static shared variable only that kernel uses,
// so that NVPTX still declares each inside its one kernel ("demoted"): left at module scope, shared by the
// two kernels, it made ptxas build matmul_tiled's converted kernel 25% slower on the H100. The dynamic
// shared-memory array (extern, the same symbol in every kernel by design) is not twinned.
// RUN: %clang %cuda_flags --cuda-device-only -S -emit-llvm -fno-discard-value-names %s -o %t.ll
// RUN: %FileCheck %s < %t.ll
// RUN: %clang %cuda_flags --cuda-device-only -S %s -o %t.ptx
// RUN: %if ptxas %{ %ptxas -arch=sm_90 %t.ptx -o %t.cubin %}
// RUN: %FileCheck %s --check-prefix=PTX < %t.ptx

// CHECK-DAG: @[[TILE:_ZZ9transposePfPKfE4tile]] = internal {{.*}}addrspace(3) global
// CHECK-DAG: @[[TWIN:_ZZ9transposePfPKfE4tile\.original]] = internal {{.*}}addrspace(3) global
// CHECK-LABEL: define {{.*}} ptx_kernel void @__preempt_persistent__Z9transposePfPKf(
// CHECK-NOT: [[TWIN]]
// CHECK: @[[TILE]]
// CHECK-LABEL: define {{.*}} ptx_kernel void @__preempt_persistent__Z7dynamicPf(
// CHECK: @dynamic_tile
// CHECK-LABEL: define {{.*}} ptx_kernel void @_Z9transposePfPKf(
// CHECK-NOT: @[[TILE]]{{[^.]}}
// CHECK: @[[TWIN]]
// CHECK-LABEL: define {{.*}} ptx_kernel void @_Z7dynamicPf(
// CHECK: @dynamic_tile
// CHECK-NOT: dynamic_tile.original

// PTX-DAG: // _ZZ9transposePfPKfE4tile has been demoted
// PTX-DAG: // _ZZ9transposePfPKfE4tile_$_original has been demoted
// PTX-DAG: .extern .shared .align 4 .b8 dynamic_tile[];

__global__ void transpose(float *out, const float *in) {
  __shared__ float tile[32][33];
  tile[threadIdx.y][threadIdx.x] = in[(blockIdx.y * 32 + threadIdx.y) * 1024 + blockIdx.x * 32 + threadIdx.x];
  __syncthreads();
  out[(blockIdx.x * 32 + threadIdx.y) * 1024 + blockIdx.y * 32 + threadIdx.x] = tile[threadIdx.x][threadIdx.y];
}

extern __shared__ float dynamic_tile[];

__global__ void dynamic(float *data) {
  dynamic_tile[threadIdx.x] = data[blockIdx.x * blockDim.x + threadIdx.x];
  __syncthreads();
  data[blockIdx.x * blockDim.x + threadIdx.x] = dynamic_tile[blockDim.x - 1 - threadIdx.x];
}
