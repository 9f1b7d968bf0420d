// Inline assembly (issue 39 item 4; lib/inline_asm.c classifies each PTX statement): register work, the
// asm of cuda_fp16.hpp / cuda_bf16.hpp (__hadd, __hmul, bf16 conversions, the half __shfl_down_sync), keeps
// every form: the drain form, in-task points (its results saved or, for register work in one thread not
// marked volatile, computed again at resumption) and a task loop without a barrier at each task's end.
// Memory in asm keeps the drain form by the IR's rules (stores, plain loads, fences) and refuses in-task
// points, but for a prefetch; a volatile load refuses the drain form; %smid refuses in-task points (the drain form runs the
// kernel as written: reading it is harmless there); grid registers, clocks, barriers and exit refuse the
// kernel. Each remark quotes the instruction.
// RUN: %clang %cuda_flags -I%cuda_include/cccl --cuda-device-only -S -emit-llvm -fno-discard-value-names -Rpass=preempt -Rpass-missed=preempt %s -o %t.ll 2>&1 | %FileCheck %s --check-prefix=REMARK
// RUN: %opt -passes=verify -disable-output %t.ll
// RUN: %FileCheck %s < %t.ll
// The task loops: register work alone runs tasks of a batch without barriers (preempt.batch.starts); warp
// exchange and memory meet at a barrier between tasks; %smid (unsafe) keeps a barrier at each task's end
// (no batch at all). The persistent form is the definition with the control parameter, whichever name it has.
// RUN: sed -n '/^define .*@\(__preempt_persistent_\)\{0,1\}_Z9half_mathPK6__halfP13__nv_bfloat16i(.*preempt[.]control/,/^}/p' %t.ll | %FileCheck %s --check-prefix=BATCHED-BARRIER
// RUN: sed -n '/^define .*@\(__preempt_persistent_\)\{0,1\}_Z10bf16_scalePK13__nv_bfloat16PS_fi(.*preempt[.]control/,/^}/p' %t.ll | %FileCheck %s --check-prefix=BATCHED
// RUN: sed -n '/^define .*@\(__preempt_persistent_\)\{0,1\}_Z9wait_flagPKjPji(.*preempt[.]control/,/^}/p' %t.ll | %FileCheck %s --check-prefix=BATCHED-BARRIER
// RUN: sed -n '/^define .*@\(__preempt_persistent_\)\{0,1\}_Z8which_smPji(.*preempt[.]control/,/^}/p' %t.ll | %FileCheck %s --check-prefix=PER-TASK
// The restore of bf16_scale computes its scale again, through the same two asm conversions (from `factor`).
// RUN: sed -n '/^define .*@__preempt_intaskform__Z10bf16_scalePK13__nv_bfloat16PS_fi(/,/^}/p' %t.ll | %FileCheck %s --check-prefix=RESTORE
// The PTX has the forms kept, and no others, and assembles.
// RUN: %clang %cuda_flags -I%cuda_include/cccl --cuda-device-only -S %s -o %t.ptx
// RUN: %FileCheck %s --check-prefix=PTX < %t.ptx
// RUN: grep -o -E '[.]entry __preempt_(drain|intaskform)_[A-Za-z0-9_]+' %t.ptx | env LC_ALL=C sort | %FileCheck %s --check-prefix=FORMS
// RUN: %if ptxas %{ %ptxas -arch=sm_90 %t.ptx -o %t.cubin %}

#include <cooperative_groups.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

// REMARK-DAG: kernel '_Z9half_mathPK6__halfP13__nv_bfloat16i' converted to persistent-thread form
// REMARK-DAG: kernel '_Z9half_mathPK6__halfP13__nv_bfloat16i': drain form kept
// REMARK-DAG: in-task yield point at loop 'for.body' of kernel '_Z9half_mathPK6__halfP13__nv_bfloat16i'
__global__ void half_math(const __half *in, __nv_bfloat16 *out, int steps) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  __half acc = in[i];
  for (int s = 0; s < steps; s++) {
    acc = __hadd(__hmul(acc, acc), in[i + s]);
    acc = __shfl_down_sync(0xffffffffu, acc, 1);
  }
  out[i] = __float2bfloat16(__half2float(acc));
}

// REMARK-DAG: kernel '_Z10bf16_scalePK13__nv_bfloat16PS_fi' converted to persistent-thread form
// REMARK-DAG: kernel '_Z10bf16_scalePK13__nv_bfloat16PS_fi': drain form kept
// REMARK-DAG: in-task yield point at loop 'for.body' of kernel '_Z10bf16_scalePK13__nv_bfloat16PS_fi': {{.*}} (2 saved, 7 re-executed, 0 reverted)
__global__ void bf16_scale(const __nv_bfloat16 *in, __nv_bfloat16 *out, float factor, int steps) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float x = __bfloat162float(in[i]);
  float scale = __bfloat162float(__float2bfloat16_rz(factor));
  for (int s = 0; s < steps; s++)
    x = __bfloat162float(__float2bfloat16(x * scale)) + __bfloat162float(in[i + s]);
  out[i] = __float2bfloat16_rn(x);
}

// REMARK-DAG: kernel '_Z8which_smPji' converted to persistent-thread form
// REMARK-DAG: kernel '_Z8which_smPji': drain form kept
// REMARK-DAG: kernel '_Z8which_smPji' gets no in-task yield points: it has inline assembly that reads where the thread runs ('mov.u32 $0, %smid')
__global__ void which_sm(unsigned *out, int steps) {
  unsigned sm;
  asm("mov.u32 %0, %%smid;" : "=r"(sm));
  unsigned v = sm;
  for (int s = 0; s < steps; s++)
    v = v * 3 + s;
  out[blockIdx.x * blockDim.x + threadIdx.x] = v;
}

// REMARK-DAG: kernel '_Z9wait_flagPKjPji' converted to persistent-thread form
// REMARK-DAG: kernel '_Z9wait_flagPKjPji': no drain form (launches stay persistent): it has inline assembly that reads volatile memory ('ld.volatile.global.u32 $0, [$1]'): a block waiting for a skipped one would never finish
// REMARK-DAG: kernel '_Z9wait_flagPKjPji' gets no in-task yield points: it has inline assembly that reads volatile memory ('ld.volatile.global.u32 $0, [$1]')
__global__ void wait_flag(const unsigned *flag, unsigned *out, int steps) {
  unsigned seen = 0;
  for (int s = 0; s < steps; s++) {
    unsigned f;
    asm volatile("ld.volatile.global.u32 %0, [%1];" : "=r"(f) : "l"(flag));
    seen += f;
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = seen;
}

// A prefetch (CUB's transform kernels prefetch each tile this way: volatile, with a memory clobber) reads no value
// and writes nothing: every form stays, in-task points included.
// REMARK-DAG: kernel '_Z13prefetch_tilePKfPfi' converted to persistent-thread form
// REMARK-DAG: kernel '_Z13prefetch_tilePKfPfi': drain form kept
// REMARK-DAG: in-task yield point at loop 'for.body' of kernel '_Z13prefetch_tilePKfPfi'
__global__ void prefetch_tile(const float *in, float *out, int steps) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float v = 0.0f;
  for (int s = 0; s < steps; s++) {
    asm volatile("prefetch.global.L2 [%0];" : : "l"(in + i + 64 * (s + 1)) : "memory");
    v = v * 0.5f + in[i + 64 * s];
  }
  out[i] = v;
}

// Cooperative groups' this_thread_block() reads its scratch pointer (`%reserved_smem_offset_1`, the shared-memory
// layout) in asm that is not volatile and touches no memory. Unused, as here, it does nothing (LLVM keeps the call):
// in-task points stay. A 64-thread tile uses the pointer (its barriers live in that scratch): refused.
// REMARK-DAG: in-task yield point at loop 'for.body' of kernel '_Z10block_syncPKfPfi'
// REMARK-DAG: kernel '_Z9wide_tilePKfPfi' gets no in-task yield points: it has inline assembly that reads the shared-memory layout ('mov.u32 start, %reserved_smem_offset_1')
__global__ void block_sync(const float *in, float *out, int steps) {
  cooperative_groups::thread_block cta = cooperative_groups::this_thread_block();
  __shared__ float tile[128];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float v = 0.0f;
  for (int s = 0; s < steps; s++) {
    tile[threadIdx.x % 128] = in[i + s];
    cooperative_groups::sync(cta);
    v += tile[(threadIdx.x + 1) % 128];
    cooperative_groups::sync(cta);
  }
  out[i] = v;
}

__global__ void wide_tile(const float *in, float *out, int steps) {
  cooperative_groups::thread_block cta = cooperative_groups::this_thread_block();
  cooperative_groups::thread_block_tile<64> pair = cooperative_groups::tiled_partition<64>(cta);
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float v = 0.0f;
  for (int s = 0; s < steps; s++) {
    v += in[i + s];
    pair.sync();
  }
  out[i] = v;
}

// A store and a fence (a memory barrier, not a CTA barrier) keep the drain form; its gate cannot be the
// kernel's first barrier, which the asm store comes before.
// REMARK-DAG: kernel '_Z13write_throughPKfPfi' converted to persistent-thread form
// REMARK-DAG: kernel '_Z13write_throughPKfPfi': drain form kept, its gate a barrier added at entry (it has inline assembly that may write memory before its first barrier)
// REMARK-DAG: kernel '_Z13write_throughPKfPfi' gets no in-task yield points: it has inline assembly that stores to memory ('st.global.wt.f32 [$0], $1')
__global__ void write_through(const float *in, float *out, int steps) {
  __shared__ float tile[128];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  asm volatile("st.global.wt.f32 [%0], %1;" : : "l"(out + i), "f"(0.0f) : "memory");
  asm volatile("membar.gl;" : : : "memory");
  tile[threadIdx.x % 128] = in[i];
  __syncthreads();
  float v = 0.0f;
  for (int s = 0; s < steps; s++)
    v += tile[(threadIdx.x + s) % 128];
  out[i] = v;
}

// Register work before the first barrier does not stop the gate from being that barrier.
// REMARK-DAG: kernel '_Z10fused_gatePK6__halfPf': drain form kept, its gate fused with its first barrier
__global__ void fused_gate(const __half *in, float *out) {
  __shared__ float tile[128];
  tile[threadIdx.x % 128] = __half2float(__hmul(in[threadIdx.x], in[threadIdx.x]));
  __syncthreads();
  out[blockIdx.x * blockDim.x + threadIdx.x] = tile[(threadIdx.x + 1) % 128];
}

// A branch inside the asm, to its own label: the kernel converts; the drain form does not take it.
// REMARK-DAG: kernel '_Z6loopedPji' converted to persistent-thread form
// REMARK-DAG: kernel '_Z6loopedPji': no drain form (launches stay persistent): it has inline assembly that branches ('again')
__global__ void looped(unsigned *out, int n) {
  unsigned v = 0;
  asm("{\n\t.reg .pred p;\n\tmov.u32 %0, 0;\n\tagain:\n\tadd.u32 %0, %0, 1;\n\tsetp.lt.u32 p, %0, %1;\n\t"
      "@p bra again;\n\t}"
      : "+r"(v)
      : "r"(n));
  out[blockIdx.x * blockDim.x + threadIdx.x] = v;
}

// REMARK-DAG: kernel '_Z5stampPy' left unchanged (not preemptible): it has inline assembly that reads a clock ('mov.u64 $0, %globaltimer')
__global__ void stamp(unsigned long long *out) {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  out[blockIdx.x * blockDim.x + threadIdx.x] = t;
}

// REMARK-DAG: kernel '_Z5leavePf' left unchanged (not preemptible): it has inline assembly that ends the thread ('exit')
__global__ void leave(float *out) {
  if (out[threadIdx.x] < 0.0f)
    asm volatile("exit;");
  out[blockIdx.x * blockDim.x + threadIdx.x] = 1.0f;
}

// REMARK-DAG: kernel '_Z11own_barrierPf' left unchanged (not preemptible): it has inline assembly that meets at a barrier ('bar.sync 0')
__global__ void own_barrier(float *out) {
  out[threadIdx.x] = 1.0f;
  asm volatile("bar.sync 0;" : : : "memory");
  out[blockIdx.x * blockDim.x + threadIdx.x] += out[(threadIdx.x + 1) % blockDim.x];
}

// REMARK-DAG: kernel '_Z7row_idsPj' left unchanged (not preemptible): it has inline assembly that reads a grid register ('mov.u32 $0, %ctaid.y')
__global__ void row_ids(unsigned *out) {
  unsigned row;
  asm("mov.u32 %0, %%ctaid.y;" : "=r"(row));
  out[row * blockDim.x + threadIdx.x] = row;
}

// Kernels left unchanged keep their asm and get no forms.
// CHECK-LABEL: define {{.*}}ptx_kernel void @_Z5stampPy(ptr
// CHECK: asm sideeffect "mov.u64 $0, %globaltimer;"

// BATCHED-BARRIER: %preempt.local.task = phi
// BATCHED-BARRIER-NOT: %preempt.batch.starts
// BATCHED: %preempt.local.task = phi
// BATCHED: %preempt.batch.starts = phi
// PER-TASK-NOT: %preempt.local.task
// PER-TASK: preempt.task.end:
// PER-TASK-NEXT: call void @llvm.nvvm.barrier.cta.sync.aligned.all(i32 0)

// RESTORE: preempt.body:
// RESTORE: asm "{  cvt.rz.bf16.f32 $0, $1;}\0A", "=h,f"(float %factor)
// RESTORE: {{^}}for.body.intask.restore:
// RESTORE: asm "{  cvt.rz.bf16.f32 $0, $1;}\0A", "=h,f"(float %factor)
// RESTORE-NEXT: asm "{ cvt.f32.bf16 $0, $1;}\0A"
// RESTORE-NEXT: br label %for.body.intask.enter

// FORMS: .entry __preempt_drain__Z10bf16_scalePK13__nv_bfloat16PS_fi
// FORMS-NEXT: .entry __preempt_drain__Z10block_syncPKfPfi
// FORMS-NEXT: .entry __preempt_drain__Z10fused_gatePK6__halfPf
// FORMS-NEXT: .entry __preempt_drain__Z13prefetch_tilePKfPfi
// FORMS-NEXT: .entry __preempt_drain__Z13write_throughPKfPfi
// FORMS-NEXT: .entry __preempt_drain__Z8which_smPji
// FORMS-NEXT: .entry __preempt_drain__Z9half_mathPK6__halfP13__nv_bfloat16i
// FORMS-NEXT: .entry __preempt_intaskform__Z10bf16_scalePK13__nv_bfloat16PS_fi
// FORMS-NEXT: .entry __preempt_intaskform__Z10block_syncPKfPfi
// FORMS-NEXT: .entry __preempt_intaskform__Z13prefetch_tilePKfPfi
// FORMS-NEXT: .entry __preempt_intaskform__Z9half_mathPK6__halfP13__nv_bfloat16i
// FORMS-NOT: {{.}}
// PTX-DAG: shfl.sync.down.b32
// PTX-DAG: cvt.rn.bf16.f32
// PTX-DAG: cvt.rz.bf16.f32
