// On-chip scalar register backup (CTXBack §III-D): backups are inserted as real s_mov_b32 copies into SGPRs the
// kernel leaves free, the kernel still assembles, and its SGPR allocation does not grow. Here the free
// registers are holes below the highest SGPR in use, so even TotalNumSgprs stays the same.
// RUN: rm -rf %t && mkdir -p %t/plain %t/osrb
// RUN: cd %t/plain && %clang -x cl -cl-std=CL2.0 -target amdgcn-amd-amdhsa -mcpu=gfx906 -nogpulib -O2 \
// RUN:   -fpass-plugin=%plugin -mllvm -preempt-ctxback -S %s -o %t/plain/k.s
// RUN: cd %t/osrb && %clang -x cl -cl-std=CL2.0 -target amdgcn-amd-amdhsa -mcpu=gfx906 -nogpulib -O2 \
// RUN:   -fpass-plugin=%plugin -mllvm -preempt-ctxback -mllvm -preempt-ctxback-osrb -mllvm -preempt-ctxback-check=8 \
// RUN:   -S %s -o %t/osrb/k.s
// RUN: awk -F '\t' 'NR == 3 { exit !($1 == "backups" && $16 > 0 && $18 == 0) }' %t/osrb/osrb.ctxback.tsv
// RUN: awk -F '\t' 'NR == 3 { exit !($1 == "backups" && $16 == 0) }' %t/plain/osrb.ctxback.tsv
// RUN: %llvm_mc -triple=amdgcn-amd-amdhsa -mcpu=gfx906 -filetype=obj %t/osrb/k.s -o %t/osrb/k.o
// RUN: %llvm_mc -triple=amdgcn-amd-amdhsa -mcpu=gfx906 -filetype=obj %t/osrb/osrb.ctxback.s -o %t/osrb/routines.o
// RUN: grep -E "SGPRBlocks|TotalNumSgprs|next_free_sgpr" %t/plain/k.s > %t/plain/sgprs.txt
// RUN: grep -E "SGPRBlocks|TotalNumSgprs|next_free_sgpr" %t/osrb/k.s > %t/osrb/sgprs.txt
// RUN: diff %t/plain/sgprs.txt %t/osrb/sgprs.txt
// RUN: %not diff %t/plain/k.s %t/osrb/k.s > %t/code.diff
// RUN: %FileCheck %s --check-prefix=DIFF < %t/code.diff

// The backup_instructions column (16th) counts the copies; every plan still passes the checker (18th).
// DIFF: > s_mov_b32 s{{[0-9]+}}, s{{[0-9]+}}

kernel void backups(global int *a, int n, int m) {
  int i = __builtin_amdgcn_workitem_id_x() + __builtin_amdgcn_workgroup_id_x() * 64;
  int acc = a[i];
  int b = a[i + 64];
  for (int k = 0; k < n; k += m) {
    acc = acc * 3 + k;
    b ^= acc + k;
  }
  a[i] = acc + b;
}
