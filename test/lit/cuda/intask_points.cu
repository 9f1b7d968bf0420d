// In-task yield points (passes/InTaskYield.cpp, issue 8): a converted kernel whose top-level loops
// have a trip count every thread of the CTA agrees on gets a variant __preempt_intaskform_<kernel>
// with a check at each such loop's back-edge, a save and a restore routine, a dispatch at the
// task's start, and a descriptor __preempt_points_<kernel>; the persistent form stays as it was.
// Loops and kernels that cannot take a point say why in a remark.
//
// Remarks without value names: loops are then named by source line (the first located instruction
// of the loop's header; a rotated loop's header is its body's first block, so the line is that of
// the body's first statement, not the `for`).
// Constant chunks are off by default (-preempt-intask-chunk-work=0): no remark says "in chunks".
// RUN: %clang %cuda_flags --cuda-device-only -S -emit-llvm -Rpass=preempt -Rpass-missed=preempt %s -o %t.lines.ll 2>&1 | %FileCheck %s --check-prefix=REMARK --implicit-check-not="in chunks"
// The IR, with value names and constant chunks (VARIANT); it must pass the verifier (release clang
// does not run it). Its checks, and RUNTIME's and COUNTDOWN's, meet at barriers
// (-preempt-intask-barrier-free=0); intask_barrier_free.cu checks the default for loops that meet at
// one every iteration, as the stencil's does.
// RUN: %clang %cuda_flags --cuda-device-only -S -emit-llvm -fno-discard-value-names -mllvm -preempt-intask-chunk-work=512 -mllvm -preempt-intask-barrier-free=0 %s -o %t.ll
// RUN: %opt -passes=verify -disable-output %t.ll
// RUN: %FileCheck %s --check-prefix=VARIANT < %t.ll
// RUN: %FileCheck %s --check-prefix=PERSISTENT < %t.ll
// Exactly two descriptors and three variants (kernels in module order), nothing else.
// RUN: grep -e '^@__preempt_points_' -e '^define .*@__preempt_intaskform_' %t.ll | %FileCheck %s --check-prefix=LIST
// -preempt-intask=0: no variant, no descriptor, no in-task remark; kernels still converted.
// RUN: %clang %cuda_flags --cuda-device-only -S -emit-llvm -mllvm -preempt-intask=0 -Rpass=preempt -Rpass-missed=preempt %s -o %t.off.lines.ll 2>&1 | %FileCheck %s --check-prefix=OFF-REMARK --implicit-check-not=in-task
// RUN: %clang %cuda_flags --cuda-device-only -S -emit-llvm -fno-discard-value-names -mllvm -preempt-intask=0 %s -o %t.off.ll
// RUN: %FileCheck %s --check-prefix=OFF --implicit-check-not=__preempt_intaskform_ --implicit-check-not=__preempt_points_ < %t.off.ll
// The persistent form is the same text with in-task points on and off (same flags otherwise).
// RUN: sed -n '/^define .*@__preempt_persistent__Z7stencilPKfPfi(/,/^}/p' %t.ll > %t.on.stencil
// RUN: sed -n '/^define .*@__preempt_persistent__Z7stencilPKfPfi(/,/^}/p' %t.off.ll > %t.off.stencil
// RUN: %FileCheck %s --check-prefix=PERSISTENT < %t.off.stencil
// RUN: diff %t.on.stencil %t.off.stencil
// Chunks of a length set at run time, the default, and where a body is too large for constant ones
// (RUNTIME below).
// RUN: %clang %cuda_flags --cuda-device-only -S -emit-llvm -fno-discard-value-names -mllvm -preempt-intask-chunk-work=0 -mllvm -preempt-intask-barrier-free=0 %s -o %t.runtime.ll
// RUN: %opt -passes=verify -disable-output %t.runtime.ll
// RUN: %FileCheck %s --check-prefix=RUNTIME < %t.runtime.ll
// Without strip-mining, the count-down form (COUNTDOWN below).
// RUN: %clang %cuda_flags --cuda-device-only -S -emit-llvm -fno-discard-value-names -mllvm -preempt-intask-strip-mine=0 -mllvm -preempt-intask-barrier-free=0 %s -o %t.countdown.ll
// RUN: %opt -passes=verify -disable-output %t.countdown.ll
// RUN: %FileCheck %s --check-prefix=COUNTDOWN < %t.countdown.ll
// On sm_70 (no redux.sync) the variants are there, with no redux.sync.
// RUN: %clang %cuda_flags --no-cuda-gpu-arch=sm_90 --cuda-gpu-arch=sm_70 --cuda-device-only -S -emit-llvm %s -o %t.sm70.ll
// RUN: %FileCheck %s --check-prefix=SM70 < %t.sm70.ll
// SM70: define {{.*}}ptx_kernel void @__preempt_intaskform__Z7stencilPKfPfi(
// SM70-NOT: redux.sync
// The PTX assembles.
// RUN: %clang %cuda_flags --cuda-device-only -S %s -o %t.ptx
// RUN: %if ptxas %{ %ptxas -arch=sm_90 %t.ptx -o %t.cubin %}
// Loops nested in loops get points too where one entry may run long (kernel `nested`, below: its
// inner trip count is an argument; -preempt-intask-nested=long, the default; intask_nested.cu
// checks which nested loops it leaves out). With -preempt-intask-nested=off only the outer one:
// RUN: %clang %cuda_flags --cuda-device-only -S -emit-llvm -mllvm -preempt-intask-nested=off -Rpass=preempt -Rpass-missed=preempt %s -o %t.nested-off.ll 2>&1 | %FileCheck %s --check-prefix=NESTED-OFF
// RUN: %clang %cuda_flags --cuda-device-only -S -emit-llvm -fno-discard-value-names -mllvm -preempt-intask-chunk-work=512 -Rpass=preempt -Rpass-missed=preempt %s -o %t.nested.ll 2>&1 | %FileCheck %s --check-prefix=NESTED-REMARK
// RUN: %opt -passes=verify -disable-output %t.nested.ll
// RUN: sed -n '/^define .*@__preempt_intaskform__Z6nestedPKfPfii(/,/^}/p' %t.nested.ll | %FileCheck %s --check-prefix=NESTED
// RUN: sed -n '/^define .*@__preempt_intaskform__Z6nestedPKfPfii(/,/^}/p' %t.nested.ll | %FileCheck %s --check-prefix=NESTED-STEP --implicit-check-not=niter --implicit-check-not=preempt.intask.index
// RUN: sed -n '/^define .*@__preempt_intaskform__Z6nestedPKfPfii(/,/^}/p' %t.nested.ll | %FileCheck %s --check-prefix=NESTED-SPILL

// LIST: @__preempt_points__Z7stencilPKfPfi = addrspace(1) constant [4 x i32] [i32 10, i32 1, i32 4, i32 1056], align 4
// LIST-NEXT: @__preempt_points__Z6nestedPKfPfii = addrspace(1) constant [4 x i32] [i32 10, i32 2, i32 4, i32 16], align 4
// LIST-NEXT: @__preempt_points__Z9two_loopsPKfPfii = addrspace(1) constant [4 x i32] [i32 10, i32 2, i32 {{[0-9]+}}, i32 416], align 4
// LIST-NEXT: define {{.*}}ptx_kernel void @__preempt_intaskform__Z7stencilPKfPfi(
// LIST-NEXT: define {{.*}}ptx_kernel void @__preempt_intaskform__Z6nestedPKfPfii(
// LIST-NEXT: define {{.*}}ptx_kernel void @__preempt_intaskform__Z9two_loopsPKfPfii({{.*}}
// LIST-NOT: {{.}}

// OFF-REMARK-DAG: kernel '_Z7stencilPKfPfi' converted to persistent-thread form
// OFF-REMARK-DAG: kernel '_Z6nestedPKfPfii' converted to persistent-thread form
// OFF: @__preempt_kernel__Z7stencilPKfPfi = addrspace(1) constant i32 10, align 4
// OFF: define {{.*}}ptx_kernel void @_Z7stencilPKfPfi(

#define N 256

// The stencil: `steps` is a kernel argument, so the loop's trip count is the same in every thread.
// The numbers of its remark and descriptor, by hand:
// - shared memory: buf is 258 floats = 1032 B, rounded up to 16 per array: 1040 B;
// - per CTA: the loop counter after its increment (s + 1, uniform: from 0 and `steps`), 4 B;
//   the CTA area is rounded to 16, so the descriptor's CTA bytes are 16 + 1040 = 1056;
// - per thread: v after the iteration (a float computed from shared loads: only saving gives it
//   back), 4 B; every other live value is rebuilt from threadIdx.x, the task's block index, `steps`
//   and the saved values;
// - every live value at the check, where the loop goes on to its next chunk (values defined before
//   it and used after it): the i64 index of in/out (blockIdx.x * 256 + t, widened), the three
//   hoisted addresses &buf[t], &buf[t + 1], &buf[t + 2] (8 B each), v and s + 1 (4 B each), and
//   an i1 (t == 0, hoisted out of the loop): 32 + 8 + 1 = 41 B, rounded to the largest alignment
//   (8): 48 B. Two saved (v, s + 1); nine re-executed: the index (zext, add, shl of the block
//   index, tid.x) and the addresses (tid.x's zext, &buf[t], its +4 and +8, and t == 0); tid.x is
//   counted once. The exit test is not live there (the loop has taken it before the check), and
//   the trip count, steps - 1, is computed before the task loop: free.
// REMARK-DAG: remark: in-task yield point at loop at line [[@LINE+5]] of kernel '_Z7stencilPKfPfi': saves 4 B per thread and 4 B per CTA and 1040 B of shared memory; every live value: 48 B per thread (2 saved, 9 re-executed, 0 reverted); strip-mined at its trip count
__global__ void stencil(const float *in, float *out, int steps) {
  __shared__ float buf[N + 2];
  int t = threadIdx.x;
  float v = in[blockIdx.x * N + t];
  for (int s = 0; s < steps; s++) {
    buf[t + 1] = v;
    if (t == 0) {
      buf[0] = v;
      buf[N + 1] = v;
    }
    __syncthreads();
    v = (buf[t] + buf[t + 1] + buf[t + 2]) * 0.25f;
    __syncthreads();
  }
  out[blockIdx.x * N + t] = v;
}

// The persistent form has no in-task code: no dispatch, check, save or restore, none of the
// variant's shared copy (@..buf.intask), no check barrier; the kernel marker is the plain ABI word.
// PERSISTENT-LABEL: define {{.*}}ptx_kernel void @__preempt_persistent__Z7stencilPKfPfi(ptr {{.*}}%in, ptr {{.*}}%out, i32 {{.*}}%steps, ptr noundef %preempt.control,
// PERSISTENT-NOT: intask
// PERSISTENT-NOT: barrier.cta.red.or
// PERSISTENT: store float %v.0.lcssa
// PERSISTENT-NOT: intask
// PERSISTENT-NOT: barrier.cta.red.or
// PERSISTENT: {{^}}}

// The variant: the persistent form's parameters; a resumed task's point comes from its batch.
// VARIANT: @__preempt_kernel__Z7stencilPKfPfi = addrspace(1) constant i32 10, align 4
// VARIANT-NOT: @__preempt_kernel___preempt_intaskform_
// VARIANT-LABEL: define {{.*}}ptx_kernel void @__preempt_intaskform__Z7stencilPKfPfi(ptr {{.*}}%in, ptr {{.*}}%out, i32 {{.*}}%steps, ptr noundef %preempt.control, i32 noundef %preempt.task.count,
// VARIANT: %preempt.intask.resume = phi i32
// The dispatch: point 1 enters at the restore block, anything else runs the task from its start.
// The point is the whole CTA's, and ptxas is told so (redux.sync, on sm_80 and newer: InTaskYield.cpp's
// warpUniform, over the whole warp: a mask known only at run time, activemask's, made ptxas take the
// result for per-thread); with -preempt-intask=0, and on sm_70 (SM70 below), there is no redux.sync.
// VARIANT: preempt.intask.dispatch:
// VARIANT-NEXT: %preempt.intask.resume.uniform = call i32 @llvm.nvvm.redux.sync.umax(i32 %preempt.intask.resume, i32 -1)
// VARIANT-NEXT: switch i32 %preempt.intask.resume.uniform, label %preempt.body [
// VARIANT-NEXT: i32 1, label %if.end.intask.restore
// VARIANT-NEXT: ]
// The loop's trip count is known (steps - 1 back-edges, computed before the task loop): it is
// strip-mined, in chunks of a constant 8 iterations (its body is small), its last iterations in a
// copy of it (the tail). It leaves from the chunks' end or the tail, where v is merged and the output
// index is computed again (from tid.x and the block index), not carried through the loop from Enter
// (below), where it is too.
// VARIANT: for.cond.cleanup.intask.exited: ; preds = %if.end.tail, %if.end.intask.run.end
// VARIANT-NEXT: [[VOUT:%mul16[0-9]+]] = phi float [ %mul16.tail, %if.end.tail ], [ %mul16, %if.end.intask.run.end ]
// VARIANT-NEXT: shl i32 %preempt.block.index, 8
// VARIANT-NEXT: call noundef i32 @llvm.nvvm.read.ptx.sreg.tid.x()
// VARIANT-NOT: phi
// VARIANT: br label %for.cond.cleanup
// VARIANT: for.cond.cleanup:
// VARIANT-NEXT: phi i64 [ %idxprom, %preempt.body ], [ %{{[0-9]+}}, %for.cond.cleanup.intask.exited ]
// VARIANT-NEXT: phi float [ %{{[0-9]+}}, %preempt.body ], [ [[VOUT]], %for.cond.cleanup.intask.exited ]
// The loop's one entry from outside, Enter, is where the preheader and the restore
// block meet: the restored s and v are merged; the chunk's first length is the check period's
// iterations; the thread's slots of buf and the t == 0 test are computed again from tid.x, not
// merged. Every run of chunks starts in Chunk, entered from Enter and from the check.
// VARIANT: [[ENTERED:for.body.intask.enter]]:
// VARIANT-NEXT: %s.034.entered = phi i32 [ 0, %for.body.lr.ph ], [ [[S:%[0-9]+]], %[[RESTORED:[._a-z0-9]+]] ]
// VARIANT-NEXT: %v.033.entered = phi float [ %{{[0-9]+}}, %for.body.lr.ph ], [ [[V:%[0-9]+]], %[[RESTORED]] ]
// VARIANT-NEXT: [[LOADED:%[0-9]+]] = load i32, ptr getelementptr inbounds nuw (i8, ptr addrspacecast (ptr addrspace(3) @__preempt_task_ctx to ptr), i64 104)
// VARIANT-NEXT: [[FIRST:%[0-9]+]] = call i32 @llvm.nvvm.redux.sync.umax(i32 [[LOADED]], i32 -1)
// Thread 0 reads the eviction word on entry, for the first check to act on (0 in the other threads).
// VARIANT: [[POLL:[0-9]+]]:
// VARIANT-NEXT: getelementptr inbounds nuw i8, ptr %preempt.control, i64 1128
// VARIANT-NEXT: load atomic i32
// VARIANT: [[POLLED:__preempt_intask_poll.exit[0-9]*]]:
// VARIANT-NEXT: [[WORD:%[0-9]+]] = phi i32 [ %{{[0-9]+}}, %[[POLL]] ], [ 0, %[[ENTERED]] ]
// VARIANT-NOT: phi
// VARIANT: br label %[[CHUNK:for.body.intask.chunk]]
// Chunk sets a run of whole chunks of 8: the check's count (`remaining` counts chunks), or the
// whole chunks left, (last - s + 1) / 8 computed without overflow; none left: the tail. Each
// chunk starts at Next, which sets its last iteration 7 on.
// VARIANT: [[CHUNK]]:
// VARIANT-NEXT: %s.034.chunk = phi i32 [ %s.034.entered, %[[POLLED]] ], [ %inc, %[[CHECKED:__preempt_intask_check.exit]] ]
// VARIANT-NEXT: %v.033.chunk = phi float [ %v.033.entered, %[[POLLED]] ], [ %mul16, %[[CHECKED]] ]
// VARIANT-NEXT: %preempt.intask.remaining = phi i32 [ [[NEXTU:%[0-9]+]], %[[CHECKED]] ], [ [[FIRST]], %[[POLLED]] ]
// VARIANT-NEXT: %preempt.intask.evict.seen = phi i32 [ %{{[0-9]+}}, %[[CHECKED]] ], [ [[WORD]], %[[POLLED]] ]
// VARIANT-NEXT: [[LEFT:%[0-9]+]] = sub i32 [[LASTS:%[0-9]+]], %s.034.chunk
// VARIANT-NEXT: [[LOW:%[0-9]+]] = and i32 [[LEFT]], 7
// VARIANT-NEXT: [[FULL:%[0-9]+]] = icmp eq i32 [[LOW]], 7
// VARIANT-NEXT: [[ONE:%[0-9]+]] = zext i1 [[FULL]] to i32
// VARIANT-NEXT: [[HIGH:%[0-9]+]] = lshr i32 [[LEFT]], 3
// VARIANT-NEXT: %preempt.intask.whole.chunks = add i32 [[HIGH]], [[ONE]]
// VARIANT-NEXT: [[RUNLEN:%[0-9]+]] = call i32 @llvm.umin.i32(i32 %preempt.intask.remaining, i32 %preempt.intask.whole.chunks)
// VARIANT-NEXT: [[NOCHUNKS:%[0-9]+]] = icmp eq i32 [[RUNLEN]], 0
// VARIANT-NEXT: br i1 [[NOCHUNKS]], label %[[TAIL:for.body.intask.tail]], label %[[NEXTCHUNK:for.body.intask.next]]
// VARIANT: [[NEXTCHUNK]]:
// VARIANT-NEXT: %s.034.next = phi i32 [ %s.034.chunk, %[[CHUNK]] ], [ %inc, %if.end.intask.chunk.end ]
// VARIANT-NEXT: %v.033.next = phi float [ %v.033.chunk, %[[CHUNK]] ], [ %mul16, %if.end.intask.chunk.end ]
// VARIANT-NEXT: %preempt.intask.run.left = phi i32 [ [[RUNLEN]], %[[CHUNK]] ], [ %preempt.intask.run.next, %if.end.intask.chunk.end ]
// VARIANT-NEXT: %preempt.intask.chunk.last = add i32 %s.034.next, 7
// VARIANT-NEXT: br label %for.body
// VARIANT: for.body:
// VARIANT-NEXT: %s.034 = phi i32 [ %s.034.next, %[[NEXTCHUNK]] ], [ %inc, %if.end ]
// VARIANT-NEXT: %v.033 = phi float [ %v.033.next, %[[NEXTCHUNK]] ], [ %mul16, %if.end ]
// The latch has one exit: the chunk's end, which counts the run down. The loop's own test, now
// s == steps - 1 (the same iteration as s + 1 == steps), is needed only where a run ends.
// VARIANT: if.end:
// VARIANT: %inc = add nuw nsw i32 %s.034, 1
// VARIANT-NEXT: %preempt.intask.chunk.done = icmp eq i32 %s.034, %preempt.intask.chunk.last
// VARIANT-NEXT: br i1 %preempt.intask.chunk.done, label %if.end.intask.chunk.end, label %for.body
// VARIANT: if.end.intask.chunk.end:
// VARIANT-NEXT: %preempt.intask.run.next = sub i32 %preempt.intask.run.left, 1
// VARIANT-NEXT: [[RUNDONE:%[0-9]+]] = icmp eq i32 %preempt.intask.run.next, 0
// VARIANT-NEXT: br i1 [[RUNDONE]], label %if.end.intask.run.end, label %[[NEXTCHUNK]]
// At a run's end: the loop's last iteration leaves; fewer than 8 iterations left (last minus the
// chunk's last) go to the tail; else the check.
// VARIANT: if.end.intask.run.end:
// VARIANT-NEXT: %preempt.intask.run.is.last = icmp eq i32 %preempt.intask.chunk.last, [[LASTS]]
// VARIANT-NEXT: br i1 %preempt.intask.run.is.last, label %for.cond.cleanup.intask.exited, label %if.end.intask.run.cut
// VARIANT: if.end.intask.run.cut:
// VARIANT-NEXT: [[AFTER:%[0-9]+]] = sub i32 [[LASTS]], %preempt.intask.chunk.last
// VARIANT-NEXT: %preempt.intask.run.cut = icmp ult i32 [[AFTER]], 8
// VARIANT-NEXT: br i1 %preempt.intask.run.cut, label %[[TAIL]], label %if.end.intask.check
// The check (task_loop.cu, inlined): thread 0's decision written between two barriers, read back
// by every thread (no barrier-reduction, whose result ptxas takes for divergent); 0 iterations to
// go means leave, anything else is the next chunk's length.
// VARIANT: if.end.intask.check:
// VARIANT-NOT: barrier.cta.red.or
// VARIANT: call void @llvm.nvvm.barrier.cta.sync.aligned.all(i32 0)
// VARIANT: store i32 %{{[0-9]+}}, ptr getelementptr inbounds nuw (i8, ptr addrspacecast (ptr addrspace(3) @__preempt_task_ctx to ptr), i64 104)
// VARIANT: [[CHECKED]]:
// VARIANT-NEXT: call void @llvm.nvvm.barrier.cta.sync.aligned.all(i32 0)
// VARIANT-NEXT: [[NEXT:%[0-9]+]] = load i32, ptr getelementptr inbounds nuw (i8, ptr addrspacecast (ptr addrspace(3) @__preempt_task_ctx to ptr), i64 104)
// VARIANT-NEXT: [[NEXTU]] = call i32 @llvm.nvvm.redux.sync.umax(i32 [[NEXT]], i32 -1)
// VARIANT-NEXT: [[LEAVE:%[0-9]+]] = icmp eq i32 [[NEXTU]], 0
// VARIANT-NEXT: br i1 [[LEAVE]], label %if.end.intask.save, label %[[CHUNK]]
// The save: record + 64 (header) is the CTA area; the threads' area follows the 16 B of uniform
// values and the 1040 B of shared memory, at + 1056. Each thread stores v there.
// VARIANT: if.end.intask.save:
// VARIANT: [[CTA:%[0-9]+]] = getelementptr i8, ptr %{{[0-9]+}}, i32 64
// VARIANT-NEXT: [[THREADS:%[0-9]+]] = getelementptr i8, ptr [[CTA]], i32 1056
// VARIANT: [[SLOT:%[0-9]+]] = getelementptr i8, ptr [[THREADS]], i64 %{{[0-9]+}}
// VARIANT-NEXT: store float %mul16, ptr [[SLOT]], align 4
// VARIANT-NEXT: br i1 %{{[0-9]+}}, label %if.end.intask.save.uniform, label %if.end.intask.save.rest
// The restore: the same layout; shared memory back from CTA area + 16 into the variant's copy of
// buf, a barrier, then v from the thread's slot and s + 1 from the CTA area, into Enter's phis:
// the check let the loop go on, and so does the resumed task.
// VARIANT: if.end.intask.restore:
// VARIANT: [[RCTA:%[0-9]+]] = getelementptr i8, ptr %{{[0-9]+}}, i32 64
// VARIANT-NEXT: [[RTHREADS:%[0-9]+]] = getelementptr i8, ptr [[RCTA]], i32 1056
// VARIANT: getelementptr i8, ptr [[RCTA]], i32 16
// VARIANT: getelementptr inbounds nuw i32, ptr addrspacecast (ptr addrspace(3) @_ZZ7stencilPKfPfiE3buf.intask to ptr)
// VARIANT: [[RESTORED]]:
// VARIANT-NEXT: call void @llvm.nvvm.barrier.cta.sync.aligned.all(i32 0)
// VARIANT: [[RSLOT:%[0-9]+]] = getelementptr i8, ptr [[RTHREADS]], i64 %{{[0-9]+}}
// VARIANT-NEXT: [[V]] = load float, ptr [[RSLOT]], align 4
// VARIANT-NEXT: [[RUNIFORM:%[0-9]+]] = getelementptr i8, ptr [[RCTA]], i32 0
// VARIANT-NEXT: [[SLOADED:%[0-9]+]] = load i32, ptr [[RUNIFORM]], align 4
// VARIANT-NEXT: [[S]] = call i32 @llvm.nvvm.redux.sync.umax(i32 [[SLOADED]], i32 -1)
// VARIANT-NEXT: br label %[[ENTERED]]
// The tail: a copy of the loop entered with a run's values (from Chunk, or where a run was cut
// short), whose one exit is the loop's own test (s == steps - 1), with no check, count-down or save.
// VARIANT: [[TAIL]]:
// VARIANT-NEXT: %s.034.tail.in = phi i32 [ %s.034.chunk, %[[CHUNK]] ], [ %inc, %if.end.intask.run.cut ]
// VARIANT-NEXT: %v.033.tail.in = phi float [ %v.033.chunk, %[[CHUNK]] ], [ %mul16, %if.end.intask.run.cut ]
// VARIANT-NEXT: br label %for.body.tail
// VARIANT: for.body.tail:
// VARIANT-NEXT: %s.034.tail = phi i32 [ %s.034.tail.in, %[[TAIL]] ], [ %inc.tail, %if.end.tail ]
// VARIANT-NEXT: %v.033.tail = phi float [ %v.033.tail.in, %[[TAIL]] ], [ %mul16.tail, %if.end.tail ]
// VARIANT-NOT: preempt_intask
// VARIANT: if.end.tail:
// VARIANT-NOT: preempt_intask
// VARIANT: %preempt.intask.is.last.tail = icmp eq i32 %s.034.tail, [[LASTS]]
// VARIANT-NEXT: br i1 %preempt.intask.is.last.tail, label %for.cond.cleanup.intask.exited, label %for.body.tail
// Thread 0 alone saves s + 1, at the CTA area's start, computed from the chunk's last iteration
// (which it is at the check), not from the loop's counter: a use of the counter after the loop
// took it off ptxas's uniform datapath. Then the CTA copies buf to CTA area + 16.
// VARIANT: if.end.intask.save.uniform:
// VARIANT-NEXT: [[UNIFORM:%[0-9]+]] = getelementptr i8, ptr [[CTA]], i32 0
// VARIANT-NEXT: %preempt.intask.chunk.next = add i32 %preempt.intask.chunk.last, 1
// VARIANT-NEXT: store i32 %preempt.intask.chunk.next, ptr [[UNIFORM]], align 4
// VARIANT: if.end.intask.save.rest:
// VARIANT-NEXT: getelementptr i8, ptr [[CTA]], i32 16
// VARIANT: br label %preempt.exit
// VARIANT: {{^}}}

// With -preempt-intask-chunk-work=0 (the default, and as where a body is too large for two iterations in a chunk),
// the chunk's last iteration is its start plus the check's iterations less one, or the loop's last
// (umin); a chunk ends there, the loop's exit test and the check come after it. No tail.
// RUNTIME-LABEL: define {{.*}}ptx_kernel void @__preempt_intaskform__Z7stencilPKfPfi(
// RUNTIME: for.body.intask.chunk:
// RUNTIME-NEXT: %s.034.chunk = phi i32 [ %s.034.entered, %{{[._a-z0-9]+}} ], [ %inc, %[[CHECKED:__preempt_intask_check.exit]] ]
// RUNTIME-NEXT: %v.033.chunk = phi float
// RUNTIME-NEXT: %preempt.intask.remaining = phi i32
// RUNTIME-NEXT: %preempt.intask.evict.seen = phi i32
// RUNTIME-NEXT: [[LEFT:%[0-9]+]] = sub i32 [[LASTS:%[0-9]+]], %s.034.chunk
// RUNTIME-NEXT: [[STEPS:%[0-9]+]] = sub i32 %preempt.intask.remaining, 1
// RUNTIME-NEXT: [[TAKE:%[0-9]+]] = call i32 @llvm.umin.i32(i32 [[STEPS]], i32 [[LEFT]])
// RUNTIME-NEXT: %preempt.intask.chunk.last = add i32 %s.034.chunk, [[TAKE]]
// RUNTIME-NEXT: br label %for.body
// RUNTIME: if.end.intask.chunk.end:
// RUNTIME-NEXT: br i1 %preempt.intask.is.last, label %for.cond.cleanup.intask.exited, label %if.end.intask.check
// RUNTIME-NOT: .tail
// RUNTIME: {{^}}}

// With -preempt-intask-strip-mine=0 the same loop counts down instead (the form loops without a
// known trip count get).
// COUNTDOWN-LABEL: define {{.*}}ptx_kernel void @__preempt_intaskform__Z7stencilPKfPfi(
// Where the loop's exit and the restore's meet: v is merged; the output index, computed before
// the loop and re-executed by the restore, is computed again there (from tid.x and the block
// index), not merged, so the loop does not carry it.
// COUNTDOWN: for.cond.cleanup.intask.exited:
// COUNTDOWN-NEXT: phi float [ [[V:%[0-9]+]], %[[RESTORED:[._a-z0-9]+]] ], [ %mul16, %if.end.intask.cont ]
// COUNTDOWN-NEXT: shl i32 %preempt.block.index, 8
// COUNTDOWN-NEXT: call noundef i32 @llvm.nvvm.read.ptx.sreg.tid.x()
// COUNTDOWN-NOT: phi
// COUNTDOWN: br label %for.cond.cleanup
// COUNTDOWN: for.cond.cleanup:
// COUNTDOWN-NEXT: phi i64 [ %idxprom, %preempt.body ], [ %{{[0-9]+}}, %for.cond.cleanup.intask.exited ]
// The loop's one entry from outside: the preheader and the restore block meet there. The restored
// s and v are merged; the count-down starts from the check period's iterations; the thread's slots
// of buf and the t == 0 test are computed again from tid.x, not merged.
// COUNTDOWN: [[ENTERED:for.body.intask.enter]]:
// COUNTDOWN-DAG: %v.033.entered = phi float [ %{{[0-9]+}}, %for.body.lr.ph ], [ [[V]], %[[RESTORED]] ]
// COUNTDOWN-DAG: %s.034.entered = phi i32 [ 0, %for.body.lr.ph ], [ [[S:%[0-9]+]], %[[RESTORED]] ]
// COUNTDOWN-NEXT: [[LOADED:%[0-9]+]] = load i32, ptr getelementptr inbounds nuw (i8, ptr addrspacecast (ptr addrspace(3) @__preempt_task_ctx to ptr), i64 104)
// COUNTDOWN-NEXT: [[FIRST:%[0-9]+]] = call i32 @llvm.nvvm.redux.sync.umax(i32 [[LOADED]], i32 -1)
// Thread 0 reads the eviction word on entry, for the first check to act on (0 in the other threads).
// COUNTDOWN: [[POLL:[0-9]+]]:
// COUNTDOWN-NEXT: getelementptr inbounds nuw i8, ptr %preempt.control, i64 1128
// COUNTDOWN-NEXT: load atomic i32
// COUNTDOWN: [[POLLED:__preempt_intask_poll.exit[0-9]*]]:
// COUNTDOWN-NEXT: [[WORD:%[0-9]+]] = phi i32 [ %{{[0-9]+}}, %[[POLL]] ], [ 0, %[[ENTERED]] ]
// COUNTDOWN-NEXT: call noundef i32 @llvm.nvvm.read.ptx.sreg.tid.x()
// COUNTDOWN-NOT: phi
// COUNTDOWN: br label %for.body
// COUNTDOWN: for.body:
// COUNTDOWN-NEXT: %s.034 = phi i32 [ %s.034.entered, %[[POLLED]] ], [ %inc, %if.end.intask.cont ]
// COUNTDOWN-NEXT: %v.033 = phi float [ %v.033.entered, %[[POLLED]] ], [ %mul16, %if.end.intask.cont ]
// COUNTDOWN-NEXT: %preempt.intask.remaining = phi i32 [ %preempt.intask.remaining.next, %if.end.intask.cont ], [ [[FIRST]], %[[POLLED]] ]
// COUNTDOWN-NEXT: %preempt.intask.evict.seen = phi i32 [ %preempt.intask.evict.next, %if.end.intask.cont ], [ [[WORD]], %[[POLLED]] ]
// The back-edge counts down and checks at zero; the check (task_loop.cu, inlined): thread 0's
// decision written between two barriers, read back by every thread (no barrier-reduction, whose
// result ptxas takes for divergent); 0 iterations to go means leave.
// COUNTDOWN: if.end:
// COUNTDOWN: [[LEFT:%[0-9]+]] = sub i32 %preempt.intask.remaining, 1
// COUNTDOWN-NEXT: [[DUE:%[0-9]+]] = icmp eq i32 [[LEFT]], 0
// COUNTDOWN-NEXT: br i1 [[DUE]], label %if.end.intask.check, label %if.end.intask.cont
// COUNTDOWN: if.end.intask.check:
// COUNTDOWN-NOT: barrier.cta.red.or
// COUNTDOWN: call void @llvm.nvvm.barrier.cta.sync.aligned.all(i32 0)
// COUNTDOWN: store i32 %{{[0-9]+}}, ptr getelementptr inbounds nuw (i8, ptr addrspacecast (ptr addrspace(3) @__preempt_task_ctx to ptr), i64 104)
// COUNTDOWN: call void @llvm.nvvm.barrier.cta.sync.aligned.all(i32 0)
// COUNTDOWN-NEXT: [[NEXT:%[0-9]+]] = load i32, ptr getelementptr inbounds nuw (i8, ptr addrspacecast (ptr addrspace(3) @__preempt_task_ctx to ptr), i64 104)
// COUNTDOWN-NEXT: [[NEXTU:%[0-9]+]] = call i32 @llvm.nvvm.redux.sync.umax(i32 [[NEXT]], i32 -1)
// COUNTDOWN-NEXT: [[LEAVE:%[0-9]+]] = icmp eq i32 [[NEXTU]], 0
// COUNTDOWN-NEXT: br i1 [[LEAVE]], label %if.end.intask.save, label %if.end.intask.cont
// The save: record + 64 (header) is the CTA area; the threads' area follows the 16 B of uniform
// values and the 1040 B of shared memory, at + 1056. Each thread stores v there.
// COUNTDOWN: if.end.intask.save:
// COUNTDOWN: [[CTA:%[0-9]+]] = getelementptr i8, ptr %{{[0-9]+}}, i32 64
// COUNTDOWN-NEXT: [[THREADS:%[0-9]+]] = getelementptr i8, ptr [[CTA]], i32 1056
// COUNTDOWN: [[SLOT:%[0-9]+]] = getelementptr i8, ptr [[THREADS]], i64 %{{[0-9]+}}
// COUNTDOWN-NEXT: store float %mul16, ptr [[SLOT]], align 4
// COUNTDOWN-NEXT: br i1 %{{[0-9]+}}, label %if.end.intask.save.uniform, label %if.end.intask.save.rest
// The restore: the same layout; shared memory back from CTA area + 16 into the variant's copy of
// buf, a barrier, then v from the thread's slot and s + 1 from the CTA area, into Enter's phis;
// it leaves the way the latch would: to the exit or around the loop (through Enter).
// COUNTDOWN: if.end.intask.restore:
// COUNTDOWN: [[RCTA:%[0-9]+]] = getelementptr i8, ptr %{{[0-9]+}}, i32 64
// COUNTDOWN-NEXT: [[RTHREADS:%[0-9]+]] = getelementptr i8, ptr [[RCTA]], i32 1056
// COUNTDOWN: getelementptr i8, ptr [[RCTA]], i32 16
// COUNTDOWN: getelementptr inbounds nuw i32, ptr addrspacecast (ptr addrspace(3) @_ZZ7stencilPKfPfiE3buf.intask to ptr)
// COUNTDOWN: [[RESTORED]]:
// COUNTDOWN-NEXT: call void @llvm.nvvm.barrier.cta.sync.aligned.all(i32 0)
// COUNTDOWN: [[RSLOT:%[0-9]+]] = getelementptr i8, ptr [[RTHREADS]], i64 %{{[0-9]+}}
// COUNTDOWN-NEXT: [[V]] = load float, ptr [[RSLOT]], align 4
// COUNTDOWN-NEXT: [[RUNIFORM:%[0-9]+]] = getelementptr i8, ptr [[RCTA]], i32 0
// COUNTDOWN-NEXT: [[SLOADED:%[0-9]+]] = load i32, ptr [[RUNIFORM]], align 4
// COUNTDOWN-NEXT: [[S]] = call i32 @llvm.nvvm.redux.sync.umax(i32 [[SLOADED]], i32 -1)
// COUNTDOWN: [[EXIT:%[0-9]+]] = icmp eq i32 [[S]], %steps
// COUNTDOWN: br i1 [[EXIT]], label %for.cond.cleanup.intask.exited, label %for.body.intask.enter
// Thread 0 alone saves s + 1, at the CTA area's start; then the CTA copies buf to CTA area + 16.
// COUNTDOWN: if.end.intask.save.uniform:
// COUNTDOWN-NEXT: [[UNIFORM:%[0-9]+]] = getelementptr i8, ptr [[CTA]], i32 0
// COUNTDOWN-NEXT: store i32 %inc, ptr [[UNIFORM]], align 4
// COUNTDOWN: if.end.intask.save.rest:
// COUNTDOWN-NEXT: getelementptr i8, ptr [[CTA]], i32 16
// COUNTDOWN: br label %preempt.exit
// COUNTDOWN: {{^}}}

// Trip counts the threads disagree on: the check's barrier would deadlock. (The unroller's
// remainder loop, at the same line, gets the same remark.)
// REMARK-DAG: remark: loop at line [[@LINE+3]] of kernel '_Z15per_thread_tripPKfPf' gets no in-task yield point: its threads may leave it after different iterations
__global__ void per_thread_trip(const float *in, float *out) {
  float acc = 0.0f;
  for (unsigned i = 0; i < threadIdx.x; i++)
    acc = acc * 0.5f + in[i];
  out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}

// Every thread loads the same count, but a value read from memory counts as divergent (another
// thread or block may write it meanwhile).
// REMARK-DAG: remark: loop at line [[@LINE+4]] of kernel '_Z11loaded_tripPKiPKfPf' gets no in-task yield point: its threads may leave it after different iterations
__global__ void loaded_trip(const int *count, const float *in, float *out) {
  float acc = 0.0f;
  int n = count[0];
  for (int i = 0; i < n; i++)
    acc = acc * 0.5f + in[i * blockDim.x + threadIdx.x];
  out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}

// A uniform trip count, but only the first warp enters the loop.
// REMARK-DAG: remark: loop at line [[@LINE+4]] of kernel '_Z12some_threadsPKfPfi' gets no in-task yield point: not every thread of the CTA may enter it
__global__ void some_threads(const float *in, float *out, int n) {
  float acc = 0.0f;
  if (threadIdx.x < 32)
    for (int i = 0; i < n; i++)
      acc = acc * 0.5f + in[i * 32 + threadIdx.x];
  out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}

// The bounds check of a 1-D kernel: threads past n have left before the loop.
// REMARK-DAG: remark: loop at line [[@LINE+6]] of kernel '_Z12early_returnPKfPfii' gets no in-task yield point: not every thread of the CTA may enter it
__global__ void early_return(const float *in, float *out, int n, int steps) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n)
    return;
  float v = in[i];
  for (int s = 0; s < steps; s++)
    v = v * v + 1.0f;
  out[i] = v;
}

// Both loops get a point: the inner one's trip count, cols, is an argument, so one entry of it may
// run long. Outer (1): per thread acc (4 B), per CTA r + 1 (4 B), no shared memory; it counts down,
// having a point nested in it. Its live values depend on how the unroller split the inner loop:
// their total is not asserted. With -preempt-intask-nested=off the inner one is refused (NESTED-OFF).
//
// The inner loop's point (2) is strip-mined: per thread acc; per CTA r and c: 8 B, rounded to 16 in
// the descriptor (its thread bytes: 4, both points' largest). The unroller left the
// inner loop two columns per iteration, so c steps by 2 and is the strip-mining's index, in steps
// of 2 (checked below; a chunk of 8 iterations spans 14 from first to last); its count of iterations, read only by the exit test that IsLast replaced, is
// deleted rather than saved. A task resumed there enters through the outer loop's one
// entry (its resume phi says 2) and its header, whose switch on that phi leads to the inner
// point's restore block: no second entry into the outer loop from outside, so it stays reducible.
// NESTED-REMARK-DAG: remark: in-task yield point at loop 'for.cond1.preheader' of kernel '_Z6nestedPKfPfii': saves 4 B per thread and 4 B per CTA and 0 B of shared memory; every live value: {{[0-9]+}} B per thread ({{.*}}); counted down (no trip count known, or points nested in it)
// NESTED-REMARK-DAG: remark: in-task yield point at loop 'for.body4' of kernel '_Z6nestedPKfPfii': saves 4 B per thread and 8 B per CTA and 0 B of shared memory; every live value: {{[0-9]+}} B per thread ({{.*}}); strip-mined at its trip count, in chunks of 8 iterations
// NESTED-STEP: for.body4.intask.chunk:
// NESTED-STEP: [[LEFT:%[0-9]+]] = sub i32 [[LAST:%[0-9]+]], %c.028.chunk
// NESTED-STEP-NEXT: [[LEFTITER:%[0-9]+]] = lshr i32 [[LEFT]], 1
// NESTED-STEP: %preempt.intask.whole.chunks =
// NESTED-STEP: %preempt.intask.chunk.last = add i32 %c.028.next, 14
// NESTED-STEP: %preempt.intask.chunk.done = icmp eq i32 %c.028, %preempt.intask.chunk.last
// NESTED-STEP: %preempt.intask.run.is.last = icmp eq i32 %preempt.intask.chunk.last, [[LAST]]
// NESTED-STEP: %preempt.intask.is.last.tail = icmp eq i32 %c.028.tail, [[LAST]]
// NESTED-STEP: %preempt.intask.chunk.next = add i32 %preempt.intask.chunk.last, 2
// The outer point's count-down and polled word are not live through the inner loop (they would
// take registers at its check): each thread stores them before it and loads them after it, made
// the CTA's one value again by redux.sync; a task resumed in the inner loop stores them afresh in
// the inner point's restore (the first check's count, and no word read yet).
// NESTED-SPILL: preempt.entry:
// NESTED-SPILL-NEXT: %preempt.intask.remaining.spill = alloca i32
// NESTED-SPILL-NEXT: %preempt.intask.evict.seen.spill = alloca i32
// NESTED-SPILL: store volatile i32 %preempt.intask.remaining, ptr %preempt.intask.remaining.spill
// NESTED-SPILL-NEXT: store volatile i32 %preempt.intask.evict.seen, ptr %preempt.intask.evict.seen.spill
// NESTED-SPILL-NEXT: br label %for.body4.intask.enter
// NESTED-SPILL: %preempt.intask.remaining.after = load volatile i32, ptr %preempt.intask.remaining.spill
// NESTED-SPILL-NEXT: %preempt.intask.remaining.after.uniform = call i32 @llvm.nvvm.redux.sync.umax(i32 %preempt.intask.remaining.after, i32 -1)
// NESTED-SPILL-NEXT: %preempt.intask.evict.seen.after = load volatile i32, ptr %preempt.intask.evict.seen.spill
// NESTED-SPILL-NEXT: %preempt.intask.evict.seen.after.uniform = call i32 @llvm.nvvm.redux.sync.umax(i32 %preempt.intask.evict.seen.after, i32 -1)
// NESTED-SPILL: for.body4.intask.restore:
// NESTED-SPILL: [[FIRST:%[0-9]+]] = load i32, ptr getelementptr inbounds nuw (i8, ptr addrspacecast (ptr addrspace(3) @__preempt_task_ctx to ptr), i64 104)
// NESTED-SPILL-NEXT: [[FIRST_UNIFORM:%[0-9]+]] = call i32 @llvm.nvvm.redux.sync.umax(i32 [[FIRST]], i32 -1)
// NESTED-SPILL-NEXT: store volatile i32 [[FIRST_UNIFORM]], ptr %preempt.intask.remaining.spill
// NESTED-SPILL-NEXT: store volatile i32 0, ptr %preempt.intask.evict.seen.spill
// NESTED: preempt.intask.dispatch:
// NESTED: switch i32 %preempt.intask.resume.uniform, label %preempt.body [
// NESTED-NEXT: i32 1, label %[[OUTER_RESTORE:[._a-z0-9]+]]
// NESTED-NEXT: i32 2, label %[[RESUME:[._a-z0-9]+]]
// NESTED: for.cond1.preheader.intask.enter:
// NESTED-NEXT: %preempt.intask.resuming = phi i32 [ 0, %for.cond1.preheader.lr.ph ], [ 0, %[[OUTER_RESTORE]] ], [ 2, %[[RESUME]] ]
// NESTED: for.cond1.preheader:
// NESTED: %preempt.intask.resuming.here = phi i32 [ %preempt.intask.resuming, %{{[._a-z0-9]+}} ], [ 0, %{{[._a-z0-9]+}}.intask.cont ]
// NESTED: switch i32 %preempt.intask.resuming.here, label %for.cond1.preheader.intask.rest [
// NESTED-NEXT: i32 2, label %[[INNER_RESTORE:[._a-z0-9]+]]
// NESTED-NEXT: ]
// NESTED: [[RESUME]]:
// NESTED-NEXT: br label %for.cond1.preheader.intask.enter
// NESTED: [[INNER_RESTORE]]:
// NESTED-SAME: preds = %for.cond1.preheader{{$}}
// REMARK-DAG: remark: in-task yield point at loop at line [[@LINE+6]] of kernel '_Z6nestedPKfPfii': saves 4 B per thread and 4 B per CTA and 0 B of shared memory; every live value: {{[0-9]+}} B per thread
// REMARK-DAG: remark: in-task yield point at loop at line [[@LINE+6]] of kernel '_Z6nestedPKfPfii': saves 4 B per thread and 8 B per CTA and 0 B of shared memory; every live value: {{[0-9]+}} B per thread
// NESTED-OFF-DAG: remark: in-task yield point at loop at line [[@LINE+4]] of kernel '_Z6nestedPKfPfii': saves 4 B per thread and 4 B per CTA and 0 B of shared memory
// NESTED-OFF-DAG: remark: loop at line [[@LINE+4]] of kernel '_Z6nestedPKfPfii' gets no in-task yield point: it is nested in another loop [-Rpass-missed=preempt]
__global__ void nested(const float *in, float *out, int rows, int cols) {
  float acc = 0.0f;
  for (int r = 0; r < rows; r++)
    for (int c = 0; c < cols; c++)
      acc = acc * 0.5f + in[(r * cols + c) * blockDim.x + threadIdx.x];
  out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}

// Two points, numbered in source order (dispatch cases 1 and 2). The first saves v (4 B per
// thread) and s + 1 (4 B per CTA); tile is 400 B, already a multiple of 16. The second loop's
// trip count m + blockIdx.x is uniform too (a task's block index is the same in all its threads).
// Nothing after the second loop reads tile, so its point saves none of it (SharedLiveness.cpp).
// The descriptor: 2 points, CTA bytes 16 + 400 = 416 (both points' CTA areas fit in 16 B); its
// thread bytes are the larger point's and not asserted (the second point also saves values the
// first point's restore gave a second definition).
// REMARK-DAG: remark: in-task yield point at loop at line [[@LINE+5]] of kernel '_Z9two_loopsPKfPfii': saves 4 B per thread and 4 B per CTA and 400 B of shared memory;
// REMARK-DAG: remark: in-task yield point at loop at line [[@LINE+12]] of kernel '_Z9two_loopsPKfPfii': saves {{[0-9]+}} B per thread and {{[0-9]+}} B per CTA and 0 B of shared memory (leaving out 400 B the rest of the task does not read);
__global__ void two_loops(const float *in, float *out, int n, int m) {
  __shared__ float tile[100];
  float v = in[blockIdx.x * blockDim.x + threadIdx.x];
  for (int s = 0; s < n; s++) {
    if (threadIdx.x < 100)
      tile[threadIdx.x] = v;
    __syncthreads();
    v += tile[(threadIdx.x + s) % 100];
    __syncthreads();
  }
  double d = v;
  for (int k = 0; k < m + (int)blockIdx.x; k++)
    d = d * 1.0001 + in[k * blockDim.x + threadIdx.x];
  out[blockIdx.x * blockDim.x + threadIdx.x] = (float)d;
}
// VARIANT-LABEL: define {{.*}}ptx_kernel void @__preempt_intaskform__Z9two_loopsPKfPfii(
// VARIANT: preempt.intask.dispatch:
// VARIANT: switch i32 %preempt.intask.resume.uniform, label %preempt.body [
// VARIANT-NEXT: i32 1, label %if.end.intask.restore
// VARIANT-NEXT: i32 2, label %for.body{{[0-9]+}}.intask.restore
// VARIANT-NEXT: ]

// Kernel-wide refusals: the pass does not know the size of dynamic shared memory, cannot save
// local memory (the array indexed by a loaded value stays an alloca at -O2), and does not follow
// calls (the callee could hold live state the context does not cover).
// REMARK-DAG: remark: kernel '_Z14dynamic_sharedPKfPfi' gets no in-task yield points: it uses dynamic shared memory, whose size the pass does not know
__global__ void dynamic_shared(const float *in, float *out, int steps) {
  extern __shared__ float dyn[];
  float v = in[threadIdx.x];
  for (int s = 0; s < steps; s++) {
    dyn[threadIdx.x] = v;
    __syncthreads();
    v = dyn[(threadIdx.x + 1) % blockDim.x];
    __syncthreads();
  }
  out[threadIdx.x] = v;
}

// REMARK-DAG: remark: kernel '_Z11local_arrayPKiPii' gets no in-task yield points: it keeps data in local memory (an alloca), which an in-task context does not save
__global__ void local_array(const int *in, int *out, int steps) {
  int local[16];
  for (int k = 0; k < 16; k++)
    local[k] = in[k * blockDim.x + threadIdx.x];
  int acc = 0;
  for (int s = 0; s < steps; s++)
    acc += local[(acc + s) & 15];
  out[threadIdx.x] = acc;
}

__device__ __noinline__ float smooth(float x) { return x * 0.5f + 1.0f; }

// REMARK-DAG: remark: kernel '_Z5callsPKfPfi' gets no in-task yield points: it calls a function (_Z6smoothf)
__global__ void calls(const float *in, float *out, int steps) {
  float v = in[threadIdx.x];
  for (int s = 0; s < steps; s++)
    v = smooth(v);
  out[threadIdx.x] = v;
}
