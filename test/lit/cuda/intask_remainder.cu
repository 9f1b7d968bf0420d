// A point in the remainder loop LLVM's unroller leaves after an unrolled loop, nested in a loop
// with a point of its own (passes/InTaskYield.cpp, PointBuilder::place and spillOuterCheckState;
// issue 8). The item is live at that point only through the phi after the loops, whose incoming
// edge is the remainder loop's latch: it is saved and restored. (It was left out, the variant's IR
// was invalid and, with clang's verifier off in release builds, the bench's persistent kernel hung
// after a resume.) The outer point's check state reaches the remainder loop merged from before and
// after the unrolled part: a resumed task starts it afresh (count-down anew, polled word 0), as it
// does the outer point's own state, rather than restore a stale eviction word.
//
// RUN: %clang %cuda_flags -mllvm -preempt-intask-nested=all --cuda-device-only -S -emit-llvm -fno-discard-value-names -Rpass=preempt %s -o %t.ll 2>&1 | %FileCheck %s --check-prefix=REMARK
// RUN: %opt -passes=verify -disable-output %t.ll
// RUN: %FileCheck %s < %t.ll
// The PTX assembles.
// RUN: %clang %cuda_flags -mllvm -preempt-intask-nested=all --cuda-device-only -S %s -o %t.ptx
// RUN: %if ptxas %{ %ptxas -arch=sm_90 %t.ptx -o %t.cubin %}
//
// The net under all of it: a variant whose IR fails verification (broken on purpose here) is
// dropped with a remark, and the kernel's launches run its persistent form.
// RUN: %clang %cuda_flags -mllvm -preempt-intask-break-for-test --cuda-device-only -S -emit-llvm -Rpass-missed=preempt %s -o %t.broken.ll 2>&1 | %FileCheck %s --check-prefix=BROKEN
// RUN: %opt -passes=verify -disable-output %t.broken.ll
// RUN: %FileCheck %s --check-prefix=BROKEN-IR < %t.broken.ll

// REMARK: in-task yield point at loop 'for.body' of kernel '_Z15remainder_chainPjjjj'
// REMARK: in-task yield point at loop 'for.body.i' of kernel '_Z15remainder_chainPjjjj'
// REMARK: in-task yield point at loop 'for.body.i.epil' of kernel '_Z15remainder_chainPjjjj': saves 4 B per thread and 12 B per CTA
// BROKEN: kernel '_Z15remainder_chainPjjjj' gets no in-task yield points: internal error, its in-task variant failed IR verification (Instruction does not dominate all uses!); its launches run the persistent form
// BROKEN-IR-NOT: @__preempt_points_
// BROKEN-IR-NOT: define {{.*}}@__preempt_intaskform_

// Across the unrolled part the outer state is stored before it and loaded after it.
// CHECK-LABEL: define {{.*}}@__preempt_intaskform__Z15remainder_chainPjjjj(
// CHECK: %preempt.intask.evict.seen.after = load volatile i32, ptr %preempt.intask.evict.seen.spill
// The remainder loop's entry: afresh on the resume path.
// CHECK: for.body.i.epil.intask.enter:
// CHECK-NEXT: %preempt.intask.remaining{{[0-9]+}} = phi i32 [ %preempt.intask.remaining{{[0-9]+}}, %for.body.i.epil.preheader ], [ %{{[0-9]+}}, %for.body.i.epil.intask.restore ]
// CHECK-NEXT: %preempt.intask.evict.seen{{[0-9]+}} = phi i32 [ %preempt.intask.evict.seen{{[0-9]+}}, %for.body.i.epil.preheader ], [ 0, %for.body.i.epil.intask.restore ]
// CHECK-NEXT: %[[ITEM:item[.0-9]+]] = phi i32 [ %item{{[.0-9]+}}, %for.body.i.epil.preheader ], [ %[[RESTORED:[0-9]+]], %for.body.i.epil.intask.restore ]
// Its restore loads the item back as the CTA's one value, which its save stores once, from thread 0
// (the item reaches this loop through a phi that the unrolled part's point inserted: marked
// uniform, as every definition it merges is).
// CHECK: for.body.i.epil.intask.restore:
// CHECK: %[[RESTORED]] = call i32 @llvm.nvvm.redux.sync.umax(i32 %{{[0-9]+}}, i32 -1)
// CHECK: for.body.i.epil.intask.save.uniform:
// CHECK-NEXT: getelementptr
// CHECK-NEXT: store i32 %[[ITEM]], ptr

// Each item a hash chain of `steps` steps: a trip count known only at run time, so the unroller
// leaves a remainder loop.
__device__ inline unsigned chain(unsigned item, unsigned thread, unsigned steps) {
  unsigned value = item * 2654435761u + thread * 40503u + 1u;
  for (unsigned i = 0; i < steps; i++)
    value = value * 1664525u + (1013904223u ^ i);
  return value;
}
__global__ void remainder_chain(unsigned *out, unsigned items, unsigned stride, unsigned steps) {
  for (unsigned item = blockIdx.x; item < items; item += stride)
    out[item * blockDim.x + threadIdx.x] = chain(item, threadIdx.x, steps);
}
