// A program built with --use_fast_math's clang spelling (-ffast-math -fcuda-flush-denormals-to-zero) carries the
// module flag nvvm-reflect-ftz=1, an Override flag, while the device helpers were built with 0: linking them was
// refused ("linking module flags 'nvvm-reflect-ftz': IDs have conflicting override values") and clang aborted on
// that diagnostic (HeCBench softmax, scel, gabor at their own flags). The program's flags govern: converted, the
// flag kept at 1 (so the helpers and the kernels read FTZ alike through __nvvm_reflect), and the PTX assembles.
// RUN: %clang %cuda_flags -O3 -ffast-math -fcuda-flush-denormals-to-zero --cuda-device-only -S -emit-llvm -Rpass=preempt %s -o %t.ll 2>&1 | %FileCheck %s --check-prefix=REMARK
// RUN: %FileCheck %s --check-prefix=IR < %t.ll
// RUN: %clang %cuda_flags -O3 -ffast-math -fcuda-flush-denormals-to-zero --cuda-device-only -S %s -o %t.ptx
// RUN: %if ptxas %{ %ptxas -arch=sm_90 %t.ptx -o %t.cubin %}

// REMARK: remark: kernel '_Z7softmaxPfPKfi' converted to persistent-thread form

// IR: define {{.*}} ptx_kernel void @__preempt_persistent__Z7softmaxPfPKfi(
// IR: !{i32 4, !"nvvm-reflect-ftz", i32 1}
// IR-NOT: !"nvvm-reflect-ftz", i32 0}

__global__ void softmax(float *out, const float *in, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    out[i] = __expf(in[i]) / (1.0f + __expf(in[i]));
}
