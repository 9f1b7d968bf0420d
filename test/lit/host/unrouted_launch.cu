// A converted kernel launched through an API preempt does not route would run without its
// control block: the host pass stops the compilation with an error naming the kernel.
// RUN: %not %clang %cuda_flags --cuda-host-only -S -emit-llvm %s -o /dev/null 2>&1 | %FileCheck %s

// CHECK: error: {{.*}}preempt: kernel {{.*}}_Z16__device_stub__kPi{{.*}} is launched through cudaLaunchCooperativeKernel, which preempt does not route

__global__ void k(int *data) { data[blockIdx.x] = 1; }

void run(int *data) {
  void *args[] = {&data};
  cudaLaunchCooperativeKernel((const void *)k, dim3(2), dim3(32), args, 0, 0);
}
