// Host side: cudaDeviceReset goes to the runtime's wrapper, which tells the memory ledger that the reset frees
// every allocation on the device before it resets (test/lit/mem/device_reset.test runs the wrapper itself).
// RUN: %clang %cuda_flags --cuda-host-only -S -emit-llvm -Rpass=preempt %s -o %t.ll 2>&1 | %FileCheck %s --check-prefix=REMARK
// RUN: %FileCheck %s < %t.ll
//
// REMARK: remark: cudaDeviceReset routed to preempt_cudaDeviceReset (memory admission)
// CHECK-LABEL: define {{.*}} @_Z11start_againv(
// CHECK: call {{.*}} @preempt_cudaDeviceReset()
// CHECK-NOT: call {{.*}} @cudaDeviceReset(

int start_again() { return cudaDeviceReset(); }
