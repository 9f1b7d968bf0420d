// Host side, built as clang's new offload driver builds it (--offload-new-driver; what -fgpu-rdc builds use):
// kernels are registered through offloading entries, not __cudaRegisterFunction, so the pass does not learn the
// kernel's device symbol. The launch is still routed, its descriptor names the stub, under which the runtime finds
// no converted form, and the launch runs as written: the remark says so instead of leaving it silent. The same
// file built the classic way gets no such remark. (On the H200, 2026-11-29: an -fgpu-rdc build of this shape ran
// correctly and never evicted under PREEMPT_STRESS=1, printing nothing: bench/results/2026-11-29-h200-rdc-f66dd57/.)
// RUN: %clang %cuda_flags --offload-new-driver -fgpu-rdc --cuda-host-only -S -emit-llvm -Rpass=preempt -Rpass-missed=preempt %s -o %t.ll 2>&1 | %FileCheck %s --check-prefix=NEW
// RUN: %FileCheck %s --check-prefix=IR < %t.ll
// RUN: %clang %cuda_flags -c -Rpass=preempt -Rpass-missed=preempt %s -o %t.o 2>&1 | %FileCheck %s --check-prefix=CLASSIC
//
// NEW-DAG: remark: launch of kernel '_Z16__device_stub__kPi' routed to the preempt runtime
// NEW-DAG: remark: kernel '_Z16__device_stub__kPi': no __cudaRegisterFunction in this module names its device symbol
// IR: @.offloading.entry._Z1kPi = {{.*}} ptr @_Z16__device_stub__kPi
// IR: @__preempt_kernel_name._Z16__device_stub__kPi = {{.*}} c"_Z16__device_stub__kPi\00"
// CLASSIC-NOT: no __cudaRegisterFunction
// CLASSIC: remark: launch of kernel '_Z1kPi' routed to the preempt runtime
// CLASSIC-NOT: no __cudaRegisterFunction

__global__ void k(int *data) { data[blockIdx.x] = threadIdx.x; }

void run(int *data) { k<<<4, 32>>>(data); }
