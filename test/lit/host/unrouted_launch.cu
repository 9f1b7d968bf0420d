// A kernel launched through an API preempt does not route runs the kernel as written: on NVIDIA the kernel's
// own name is the unconverted kernel (control_block.h, ABI 9), so the launch stays as the program wrote it,
// and a missed remark says it is not preemptible. (It was a compile error while the name was the converted
// kernel's, which would have run without its control block.)
// RUN: %clang %cuda_flags --cuda-host-only -S -emit-llvm -Rpass-missed=preempt %s -o %t.ll 2>&1 | %FileCheck %s --check-prefix=REMARK
// RUN: %FileCheck %s --check-prefix=IR < %t.ll

// REMARK: remark: launch of kernel '_Z16__device_stub__kPi' through cudaLaunchCooperativeKernel runs the kernel as written, not preemptible
// IR: call {{.*}}@cudaLaunchCooperativeKernel(ptr noundef {{.*}}@_Z16__device_stub__kPi

__global__ void k(int *data) { data[blockIdx.x] = 1; }

void run(int *data) {
  void *args[] = {&data};
  cudaLaunchCooperativeKernel((const void *)k, dim3(2), dim3(32), args, 0, 0);
}
