// How an in-task check learns of an eviction, per architecture (runtime-dev/task_loop.cu, issue 8). On sm_80
// and newer thread 0 copies the eviction word into shared memory with cp.async, started at one check and read
// at the next, so that no check waits for a load; older GPUs lack cp.async and load the word into a register.
// The helpers choose with __nvvm_reflect("__CUDA_ARCH"), which must reach the backend unfolded (their bitcode
// is built with NVVMReflect off) and be folded there: no reflect call may be left in the PTX.
//
// RUN: %clang %cuda_flags --cuda-device-only -S %s -o %t.sm90.ptx
// RUN: %FileCheck %s --check-prefix=SM90 --implicit-check-not=__nvvm_reflect < %t.sm90.ptx
// RUN: %clang %cuda_flags --no-cuda-gpu-arch=sm_90 --cuda-gpu-arch=sm_75 --cuda-device-only -S %s -o %t.sm75.ptx
// RUN: %FileCheck %s --check-prefix=SM75 --implicit-check-not=cp.async --implicit-check-not=__nvvm_reflect < %t.sm75.ptx
// RUN: %if ptxas %{ %ptxas -arch=sm_90 %t.sm90.ptx -o %t.sm90.cubin %}
// RUN: %if ptxas %{ %ptxas -arch=sm_75 %t.sm75.ptx -o %t.sm75.cubin %}

#define N 256

// The persistent form: its CTAs wait for a copy still on its way before they leave (none has started in this
// form, which has no points; the wait is in the helper every form shares).
// SM90-LABEL: .entry _Z5relaxPKfPfi(
// SM90: cp.async.wait_all;
// The variant's check: the copy the last check started is waited for and read, then the next one starts.
// SM90-LABEL: .entry __preempt_intaskform__Z5relaxPKfPfi(
// SM90: cp.async.wait_all;
// SM90: cp.async.cg.shared.global [%rd{{[0-9]+}}], [%rd{{[0-9]+}}], 16;

// SM75-LABEL: .entry __preempt_intaskform__Z5relaxPKfPfi(
// SM75: ld.relaxed.sys.global.b32 {{.*}}+1128];
__global__ void relax(const float *in, float *out, int steps) {
  __shared__ float buf[N + 2];
  int t = threadIdx.x;
  float v = in[blockIdx.x * N + t];
  for (int s = 0; s < steps; s++) {
    buf[t + 1] = v;
    if (t == 0) {
      buf[0] = v;
      buf[N + 1] = v;
    }
    __syncthreads();
    v = (buf[t] + buf[t + 1] + buf[t + 2]) * 0.25f;
    __syncthreads();
  }
  out[blockIdx.x * N + t] = v;
}
