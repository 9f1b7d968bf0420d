// 2D and 3D grids: every blockIdx/gridDim axis is read from the task context (helpers
// inlined: no block index register is read; %nctaid is read only to size task batches),
// and the PTX assembles.
// RUN: %clang %cuda_flags --cuda-device-only -S -emit-llvm -fno-discard-value-names -Rpass=preempt %s -o %t.ll 2>&1 | %FileCheck %s --check-prefix=REMARK
// RUN: %FileCheck %s --check-prefix=IR < %t.ll
// RUN: %clang %cuda_flags --cuda-device-only -S %s -o %t.ptx
// RUN: %if ptxas %{ %ptxas -arch=sm_90 %t.ptx -o %t.cubin %}

// REMARK-DAG: kernel '_Z6grid2dPj' converted to persistent-thread form
// REMARK-DAG: kernel '_Z6grid3dPj' converted to persistent-thread form

// IR-LABEL: define {{.*}} @__preempt_persistent__Z6grid2dPj(
// IR-NOT: llvm.nvvm.read.ptx.sreg.ctaid
// IR-NOT: call {{.*}}@__preempt_
// IR: preempt.exit:
// IR-NOT: llvm.nvvm.read.ptx.sreg.ctaid
// IR: ret void
// IR-LABEL: define {{.*}} @__preempt_persistent__Z6grid3dPj(
// IR-NOT: llvm.nvvm.read.ptx.sreg.ctaid
// IR-NOT: call {{.*}}@__preempt_
// IR: preempt.exit:
// IR-NOT: llvm.nvvm.read.ptx.sreg.ctaid
// IR: ret void

__global__ void grid2d(unsigned *out) {
  unsigned x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  out[y * gridDim.x * blockDim.x + x] = x * 7 + y;
}

__global__ void grid3d(unsigned *out) {
  unsigned block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  out[block * blockDim.x + threadIdx.x] = block ^ gridDim.z;
}
