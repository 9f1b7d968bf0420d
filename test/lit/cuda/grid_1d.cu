// A 1D vector add: converted; its block index now comes from the task context, the
// kernel gains the control-block parameter and a task loop, and the PTX assembles.
// RUN: %clang %cuda_flags --cuda-device-only -S -emit-llvm -fno-discard-value-names -Rpass=preempt %s -o %t.ll 2>&1 | %FileCheck %s --check-prefix=REMARK
// RUN: %FileCheck %s --check-prefix=IR < %t.ll
// RUN: %clang %cuda_flags --cuda-device-only -S %s -o %t.ptx
// RUN: %if ptxas %{ %ptxas -arch=sm_90 %t.ptx -o %t.cubin %}
// RUN: %FileCheck %s --check-prefix=PTX < %t.ptx

// REMARK: remark: kernel '_Z3addPKfS0_Pfi' converted to persistent-thread form

// IR: @__preempt_kernel__Z3addPKfS0_Pfi = addrspace(1) constant i32 10
// IR-LABEL: define {{.*}} ptx_kernel void @__preempt_persistent__Z3addPKfS0_Pfi(ptr {{.*}}, ptr {{.*}}, ptr {{.*}}, i32 {{.*}}, ptr noundef %preempt.control, i32 noundef %preempt.task.count, i32 noundef %preempt.grid.x, i32 noundef %preempt.grid.y, i32 noundef %preempt.grid.z, i32 noundef %preempt.generation, i32 noundef %preempt.check.interval, i32 noundef %preempt.relaunched)
// The first batch of task ids is fetched before the loop, each next one as the task before
// it starts; ids are tagged with the launch's generation (64-bit word) in the launch's lane
// of the control block (by the generation's parity). A task start also
// reads the yield-mask word of the CTA's SM when the next start must take a new batch.
// IR: preempt.entry:
// IR: call {{.*}}i32 @llvm.nvvm.read.ptx.sreg.smid()
// IR: load atomic i32, ptr {{.*}} monotonic
// IR: atomicrmw add ptr %{{.*}}, i64 %{{.*}} monotonic
// No shared memory, barrier or warp-level operation: the batched loop. Only a
// new batch goes through thread 0 and a barrier; every thread steps through
// the batch's tasks itself, carrying the block index from x into y and z.
// IR: preempt.task:
// IR-NEXT: %preempt.task.id = phi i64
// IR-NEXT: %preempt.task.slot = phi i32 [ 0, %{{.*}} ], [ %preempt.next.slot, %preempt.task.end ]
// IR-NEXT: %preempt.yield.seen = phi i32 [ 0, %{{.*}} ], [ %{{.*}}, %preempt.task.end ]
// IR-NEXT: %preempt.local.task = phi i32 [ 0, %{{.*}} ], [ %preempt.local.next, %preempt.task.end ]
// IR-NEXT: %preempt.local.end = phi i32 [ 0, %{{.*}} ], [ %preempt.current.end, %preempt.task.end ]
// IR: %preempt.batch.done = icmp uge i32 %preempt.local.task, %preempt.local.end
// IR-NEXT: br i1 %preempt.batch.done, label %preempt.batch, label %preempt.batch.step
// IR: preempt.batch:
// IR: call void @llvm.nvvm.barrier.cta.sync.aligned.all(i32 0)
// The block index and the batch thread 0 published reach every thread through redux.sync over the whole warp,
// so that ptxas sees them uniform (PersistentThreads.cpp says why); whether there is a batch does not.
// IR-NOT: redux.sync
// IR: br i1 %{{.*}}, label %preempt.batch.start, label %preempt.exit
// IR: preempt.batch.start:
// IR-COUNT-5: call i32 @llvm.nvvm.redux.sync.umax(i32 %{{.*}}, i32 -1)
// IR: preempt.batch.step:
// IR-NOT: barrier
// IR: icmp eq i32 {{.*}}, %preempt.grid.x
// IR: icmp eq i32 {{.*}}, %preempt.grid.y
// IR: preempt.task.start:
// IR-NEXT: %preempt.block.index = phi i32
// IR: %preempt.next.slot = phi i32 [ %{{.*}}, %preempt.batch.start ], [ %preempt.task.slot, %preempt.batch.step ]
// IR: call {{.*}}i32 @llvm.nvvm.read.ptx.sreg.smid()
// IR: atomicrmw add ptr %{{.*}}, i64 %{{.*}} monotonic
// IR: preempt.body:
// IR-NOT: llvm.nvvm.read.ptx.sreg.ctaid
// IR-NOT: barrier
// IR: preempt.task.end:
// IR-NEXT: %preempt.local.next = add i32 %preempt.current.task, 1
// IR-NEXT: br label %preempt.task
// On the way out, no fence anywhere in the kernel (ptxas would keep the body's atomics
// ATOMs instead of REDs): a barrier, then a relaunch's CTA counts its tasks in the
// relaunch word (the runtime's publisher moves them once the relaunch has ended), a
// first wave's CTA in the completion word, and the one that completes the launch
// presets the other lane and publishes done_generation.
// IR-NOT: membar
// IR: preempt.exit:
// IR-NOT: membar
// IR: call void @llvm.nvvm.barrier.cta.sync.aligned.all(i32 0)
// IR-NOT: membar
// IR: atomicrmw add ptr {{.*}}, i64 {{.*}} monotonic
// IR-NOT: membar
// IR: atomicrmw add ptr {{.*}}, i64 {{.*}} monotonic
// IR-NOT: membar
// IR: store atomic i64 {{.*}} monotonic
// IR: store atomic i64 {{.*}} monotonic
// IR: store atomic i64 {{.*}} monotonic
// IR-NOT: membar
// IR: store atomic i32 {{.*}}, ptr {{.*}} monotonic
// IR-NOT: membar
// IR: ret void

// PTX: .visible .global .align 4 .u32 __preempt_kernel__Z3addPKfS0_Pfi = 10;
// PTX: .entry __preempt_persistent__Z3addPKfS0_Pfi(
// PTX-NOT: membar
// PTX-NOT: fence
// PTX-NOT: %ctaid.x
// PTX: atom.global.add.u64
// PTX-NOT: %ctaid.x
// PTX-NOT: membar
// PTX-NOT: fence
// PTX: ret;

__global__ void add(const float *a, const float *b, float *c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    c[i] = a[i] + b[i];
}
