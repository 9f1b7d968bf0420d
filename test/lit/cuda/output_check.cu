// The check after preempt's passes (passes/Plugin.cpp): release builds of clang skip LLVM's
// verifier, so IR the passes got wrong would reach ptxas; a compile error names it instead, for
// the device and the host module alike. Broken here on purpose (-preempt-verify-break-for-test).
//
// RUN: not %clang %cuda_flags --cuda-device-only -S -emit-llvm -mllvm -preempt-verify-break-for-test %s -o %t.ll 2>&1 | %FileCheck %s
// RUN: not %clang %cuda_flags --cuda-host-only -S -emit-llvm -mllvm -preempt-verify-break-for-test %s -o %t.host.ll 2>&1 | %FileCheck %s
// Unbroken, the same compiles pass the check.
// RUN: %clang %cuda_flags --cuda-device-only -S -emit-llvm %s -o %t.ll
// RUN: %clang %cuda_flags --cuda-host-only -S -emit-llvm %s -o %t.host.ll
//
// CHECK: error: libpreempt.so left invalid IR in '{{.*}}output_check.cu' (Basic Block in function 'preempt.broken' does not have terminator!): a bug in preempt; compile without -fpass-plugin=libpreempt.so to build without preemption

__global__ void scale(float *data, float factor) { data[blockIdx.x * blockDim.x + threadIdx.x] *= factor; }
void launch(float *data) { scale<<<4, 256>>>(data, 2.0f); }
