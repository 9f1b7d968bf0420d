// Host side: every <<<>>> launch of this file's kernels (in the stub and inlined into
// callers, as a call or as an invoke) goes to preempt_launch_kernel with a descriptor
// naming the kernel; cudaLaunchKernel of a kernel from elsewhere is left alone.
// RUN: %clang %cuda_flags --cuda-host-only -fexceptions -S -emit-llvm -Rpass=preempt %s -o %t.ll 2>&1 | %FileCheck %s --check-prefix=REMARK
// RUN: %FileCheck %s < %t.ll

// REMARK: remark: launch of kernel '_Z16__device_stub__kPi' routed to the preempt runtime

// Host-only compilation registers nothing, so the descriptor names the stub;
// a full compilation names the device symbol (see the demo).
// Descriptor: version 1, CUDA, 1 parameter, kernel ABI 7, the stub, the name, no runtime state yet.
// CHECK: @__preempt_kernel_desc._Z16__device_stub__kPi = internal global { i32, i32, i32, i32, ptr, ptr, ptr } { i32 1, i32 1, i32 1, i32 10, ptr @_Z16__device_stub__kPi, ptr @__preempt_kernel_name._Z16__device_stub__kPi, ptr null }
// CHECK-LABEL: define {{.*}} @_Z16__device_stub__kPi(
// CHECK: call {{.*}} @preempt_launch_kernel(ptr {{.*}}@__preempt_kernel_desc._Z16__device_stub__kPi, i64
// CHECK-LABEL: define {{.*}} @_Z8run_minePi(
// CHECK: invoke {{.*}} @preempt_launch_kernel(ptr {{.*}}@__preempt_kernel_desc._Z16__device_stub__kPi
// CHECK: define {{.*}} @_Z12run_externalPKv(ptr {{.*}}[[KERNEL:%[0-9a-z]+]])
// CHECK: call {{.*}} @cudaLaunchKernel(ptr {{.*}}[[KERNEL]],
// CHECK-NOT: cudaLaunchKernel(ptr {{.*}}@_Z16__device_stub__kPi

__global__ void k(int *data) { data[blockIdx.x] = threadIdx.x; }

struct Guard { ~Guard(); };

void run_mine(int *data) {
  Guard guard; // the launch becomes an invoke: it may throw past the destructor
  k<<<4, 32>>>(data);
}

// A kernel this file did not compile, e.g. from a library: not ours to route.
void run_external(const void *kernel) {
  void *args[] = {nullptr};
  cudaLaunchKernel(kernel, dim3(1), dim3(1), args, 0, 0);
}
