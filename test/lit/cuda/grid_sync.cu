// Grid-wide synchronization (cooperative groups) needs every block resident at once, which
// a task loop breaks: the kernel is refused and keeps its signature.
// RUN: %clang %cuda_flags -I%cuda_include/cccl --cuda-device-only -S -emit-llvm -Rpass=preempt -Rpass-missed=preempt %s -o %t.ll 2>&1 | %FileCheck %s --check-prefix=REMARK
// RUN: %FileCheck %s < %t.ll

// REMARK: kernel '_Z9grid_syncPi' left unchanged (not preemptible)
// REMARK-NOT: converted
// CHECK-NOT: __preempt_kernel_
// CHECK: define {{.*}} @_Z9grid_syncPi(ptr noundef

#include <cooperative_groups.h>
namespace cg = cooperative_groups;

__global__ void grid_sync(int *data) {
  data[blockIdx.x] = 1;
  cg::this_grid().sync();
  data[blockIdx.x] += data[0];
}
