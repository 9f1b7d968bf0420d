// An OpenCL kernel for gfx906 through clang with -fpass-plugin and -mllvm options (plugins load before
// -mllvm is parsed): the checker passes on every plan, the statistics have the agreed header, the
// routines assemble, and the kernel itself still assembles.
// RUN: rm -rf %t && mkdir -p %t && cd %t
// RUN: %clang -x cl -cl-std=CL2.0 -target amdgcn-amd-amdhsa -mcpu=gfx906 -nogpulib -O2 -fpass-plugin=%plugin \
// RUN:   -mllvm -preempt-ctxback -mllvm -preempt-ctxback-check=8 -Rpass=preempt -S %s -o %t/kernel.s 2>&1 \
// RUN:   | %FileCheck %s --check-prefix=REMARK
// RUN: %FileCheck %s < %t/opencl_gfx906.ctxback.tsv
// RUN: awk -F '\t' '!/^#/ && NF != 18 { exit 1 }' %t/opencl_gfx906.ctxback.tsv
// RUN: %llvm_mc -triple=amdgcn-amd-amdhsa -mcpu=gfx906 -filetype=obj %t/opencl_gfx906.ctxback.s -o %t/routines.o
// RUN: %llvm_mc -triple=amdgcn-amd-amdhsa -mcpu=gfx906 -filetype=obj %t/kernel.s -o %t/kernel.o
// RUN: %FileCheck %s --check-prefix=ASM < %t/opencl_gfx906.ctxback.s
// Without the option nothing is written.
// RUN: rm -rf %t/off && mkdir -p %t/off && cd %t/off
// RUN: %clang -x cl -cl-std=CL2.0 -target amdgcn-amd-amdhsa -mcpu=gfx906 -nogpulib -O2 -fpass-plugin=%plugin -S %s -o %t/off/kernel.s
// RUN: %not ls %t/off/opencl_gfx906.ctxback.tsv

// REMARK: remark: ctxback: kernel scale: {{[0-9]+}} points

// CHECK: # preempt-ctxback-stats 1
// CHECK-NEXT: kernel target points baseline lds live ckpt cs_defer ctxback ctxback_cs_defer ctxback_cycles cs_defer_cycles combined_cycles preempt_routines resume_routines backup_instructions checked check_failures
// The 2 KiB tile over the four waves of a 256-lane work-group, plus what the persistent-thread form adds.
// CHECK-NEXT: {{^}}scale amdgcn {{[1-9][0-9]*}} {{[0-9]+}} 5{{[0-9][0-9]}} {{.*}} 0 {{[1-9][0-9]*}} 0{{$}}

// ASM: __ctxback_scale_p0:
// ASM: __ctxback_scale_r0:
// ASM: s_setpc_b64 ttmp[14:15]
// ASM: __ctxback_scale_table:

__attribute__((reqd_work_group_size(256, 1, 1)))
kernel void scale(global int *a, int n, int m) {
  local int tile[512];
  int l = __builtin_amdgcn_workitem_id_x();
  int i = l + __builtin_amdgcn_workgroup_id_x() * 256;
  int x = a[i];
  int y = x * 7 + n;
  y ^= m;
  y = y - i;
  tile[l] = y;
  tile[l + 256] = ~y;
  __builtin_amdgcn_s_barrier();
  a[i] = tile[255 - l] * 3 + tile[511 - l];
}
