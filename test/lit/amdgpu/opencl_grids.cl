// AMDGPU (OpenCL): 1D, 2D and 3D kernels, grid size read from the dispatch packet, a
// barrier with a uniform exit, a divergent exit before a barrier (refused); the converted
// module compiles for gfx906 with llc-22.
// RUN: %clang -x cl -cl-std=CL2.0 -target amdgcn-amd-amdhsa -mcpu=gfx906 -nogpulib -O2 -S -emit-llvm -fno-discard-value-names -fpass-plugin=%plugin -Rpass=preempt -Rpass-missed=preempt %s -o %t.ll 2>&1 | %FileCheck %s --check-prefix=REMARK
// RUN: %FileCheck %s < %t.ll
// RUN: %llc -mtriple=amdgcn-amd-amdhsa -mcpu=gfx906 %t.ll -o %t.s
// RUN: %FileCheck %s --check-prefix=ASM < %t.s

// REMARK-DAG: kernel 'grid1d' converted to persistent-thread form
// REMARK-DAG: kernel 'grid2d' converted to persistent-thread form
// REMARK-DAG: kernel 'grid3d' converted to persistent-thread form
// REMARK-DAG: kernel 'uniform_exit' converted to persistent-thread form
// REMARK-DAG: kernel 'divergent_exit' left unchanged (not preemptible): it reaches a barrier under thread-divergent control flow

// CHECK-LABEL: define {{.*}} amdgpu_kernel void @grid1d(ptr addrspace(1) {{.*}}, ptr noundef %preempt.control, i32 noundef %preempt.task.count, i32 noundef %preempt.grid.x, i32 noundef %preempt.grid.y, i32 noundef %preempt.grid.z, i32 noundef %preempt.generation, i32 noundef %preempt.check.interval, i32 noundef %preempt.relaunched)
// CHECK-NOT: llvm.amdgcn.workgroup.id
// CHECK: preempt.task.end:
// CHECK-LABEL: define {{.*}} amdgpu_kernel void @grid2d(
// CHECK-NOT: llvm.amdgcn.workgroup.id
// CHECK: %preempt.grid.size = mul
// CHECK-LABEL: define {{.*}} amdgpu_kernel void @divergent_exit(ptr addrspace(1) {{[^,]*}}, i32 noundef %n)
// CHECK: llvm.amdgcn.workgroup.id.x
// No unconverted copies on AMDGPU: the HIP runtime cannot launch them (one-wave launches stay persistent).
// CHECK-NOT: __preempt_original_

// ASM-DAG: .globl grid1d
// ASM-DAG: .globl __preempt_kernel_grid3d
// ASM-DAG: s_barrier

kernel void grid1d(global float *data) {
  unsigned i = __builtin_amdgcn_workgroup_id_x() * 64 + __builtin_amdgcn_workitem_id_x();
  data[i] *= 2.0f;
}

// Grid size in work-items, as OpenCL's get_global_size(1) reads it.
kernel void grid2d(global unsigned *out) {
  unsigned x = __builtin_amdgcn_workgroup_id_x() * 16 + __builtin_amdgcn_workitem_id_x();
  unsigned y = __builtin_amdgcn_workgroup_id_y() * 16 + __builtin_amdgcn_workitem_id_y();
  out[y * __builtin_amdgcn_grid_size_x() + x] = x ^ y;
}

kernel void grid3d(global unsigned *out) {
  unsigned block = __builtin_amdgcn_workgroup_id_x() +
                   8 * (__builtin_amdgcn_workgroup_id_y() + 8 * __builtin_amdgcn_workgroup_id_z());
  out[block * 64 + __builtin_amdgcn_workitem_id_x()] = block;
}

kernel void uniform_exit(global float *data, unsigned limit) {
  local float tile[64];
  if (__builtin_amdgcn_workgroup_id_x() >= limit)
    return;
  unsigned tid = __builtin_amdgcn_workitem_id_x();
  tile[tid] = data[__builtin_amdgcn_workgroup_id_x() * 64 + tid];
  __builtin_amdgcn_s_barrier();
  data[__builtin_amdgcn_workgroup_id_x() * 64 + tid] = tile[63 - tid];
}

kernel void divergent_exit(global float *data, int n) {
  local float tile[64];
  int i = __builtin_amdgcn_workgroup_id_x() * 64 + __builtin_amdgcn_workitem_id_x();
  if (i >= n)
    return;
  tile[__builtin_amdgcn_workitem_id_x()] = data[i];
  __builtin_amdgcn_s_barrier();
  data[i] = tile[63 - __builtin_amdgcn_workitem_id_x()];
}
