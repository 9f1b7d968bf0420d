// blockIdx read in a called device function: converted kernels call a clone that reads
// the task context; a refused kernel calling the same function keeps the original.
// RUN: %clang %cuda_flags --cuda-device-only -S -emit-llvm -Xclang -disable-llvm-passes -o %t.pre.ll %s
// RUN: %opt -load-pass-plugin=%plugin -passes=preempt-persistent-threads -pass-remarks=preempt -pass-remarks-missed=preempt -S %t.pre.ll -o %t.ll 2>&1 | %FileCheck %s --check-prefix=REMARK
// RUN: %FileCheck %s < %t.ll
// RUN: %llc -mtriple=nvptx64-nvidia-cuda -mcpu=sm_90 -mattr=+ptx80 %t.ll -o %t.ptx
// RUN: %if ptxas %{ %ptxas -arch=sm_90 %t.ptx -o %t.cubin %}

// REMARK-DAG: kernel '_Z9convertedPj' converted to persistent-thread form
// REMARK-DAG: kernel '_Z7refusedPj' left unchanged (not preemptible): it reads a clock

// The original helper still reads the hardware register, for the refused kernel.
// CHECK-LABEL: define {{.*}} @_Z10row_offsetv()
// CHECK: call {{.*}} @llvm.nvvm.read.ptx.sreg.ctaid.y()
// CHECK-LABEL: define {{.*}} @__preempt_persistent__Z9convertedPj(
// CHECK: call {{.*}} @_Z10row_offsetv.preempt()
// A cloned callee reads the task context at any point of a task: tasks end
// with a barrier before thread 0 moves `current_slot` on.
// CHECK: preempt.task.end:
// CHECK-NEXT: call void @llvm.nvvm.barrier.cta.sync.aligned.all(i32 0)
// CHECK-LABEL: define {{.*}} @_Z7refusedPj(
// CHECK: call {{.*}} @_Z10row_offsetv()
// CHECK-LABEL: define internal {{.*}} @_Z10row_offsetv.preempt()
// CHECK-NOT: llvm.nvvm.read.ptx.sreg.ctaid
// CHECK-NOT: llvm.nvvm.read.ptx.sreg.nctaid
// CHECK: ret

__device__ __noinline__ unsigned row_offset() { return blockIdx.y * gridDim.x; }

__global__ void converted(unsigned *out) { out[row_offset() + blockIdx.x] = threadIdx.x; }

__global__ void refused(unsigned *out) { out[row_offset() + blockIdx.x] = (unsigned)clock(); }
