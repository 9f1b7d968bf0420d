// Host side, built as clang's new offload driver builds it (--offload-new-driver; what -fgpu-rdc builds use):
// kernels are registered through offloading entries, not __cudaRegisterFunction; the pass reads the device symbol
// from the entry, so the descriptor names the kernel as the classic build's does, and the runtime finds its
// converted form. Before, the descriptor named the stub and every launch ran as written, silently (on the H200,
// 2026-11-29: bench/results/2026-11-29-h200-rdc-f66dd57/). Host-only compilation without entries still names the
// stub, with a remark.
// RUN: %clang %cuda_flags --offload-new-driver -fgpu-rdc --cuda-host-only -S -emit-llvm -Rpass=preempt -Rpass-missed=preempt %s -o %t.ll 2>&1 | %FileCheck %s --check-prefix=NEW
// RUN: %FileCheck %s --check-prefix=IR < %t.ll
// RUN: %clang %cuda_flags -c -Rpass=preempt -Rpass-missed=preempt %s -o %t.o 2>&1 | %FileCheck %s --check-prefix=CLASSIC
// RUN: %clang %cuda_flags --cuda-host-only -S -emit-llvm -Rpass=preempt -Rpass-missed=preempt %s -o /dev/null 2>&1 | %FileCheck %s --check-prefix=HOSTONLY
//
// NEW-NOT: registers its device symbol
// NEW: remark: launch of kernel '_Z1kPi' routed to the preempt runtime
// NEW-NOT: registers its device symbol
// IR: @.offloading.entry._Z1kPi = {{.*}} ptr @_Z16__device_stub__kPi
// IR: @__preempt_kernel_name._Z16__device_stub__kPi = {{.*}} c"_Z1kPi\00"
// CLASSIC: remark: launch of kernel '_Z1kPi' routed to the preempt runtime
// HOSTONLY-DAG: remark: kernel '_Z16__device_stub__kPi': nothing in this module registers its device symbol
// HOSTONLY-DAG: remark: launch of kernel '_Z16__device_stub__kPi' routed to the preempt runtime

__global__ void k(int *data) { data[blockIdx.x] = threadIdx.x; }

void run(int *data) { k<<<4, 32>>>(data); }
