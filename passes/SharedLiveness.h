// SharedLiveness.h: which of a kernel's shared variables a context saved at an in-task point has to hold.
// Issue 8's "live shared memory saved where needed"; the search and the coverage test are lib/shared_liveness.c.
#ifndef PREEMPT_SHARED_LIVENESS_PASS_H
#define PREEMPT_SHARED_LIVENESS_PASS_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/GlobalVariable.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace preempt {

// A CTA's shape in threads, x by y by z.
struct BlockShape {
  uint32_t X = 1, Y = 1, Z = 1;
};

// The shape the kernel's launch bounds name ("nvvm.reqntid", else
// "nvvm.maxntid"), if any: the one block size a kernel is usually launched at.
std::optional<BlockShape> launchBoundsShape(const llvm::Function &F);

enum class SharedFate {
  Saved,          // some path from the point may read what it holds
  SkippedAtShape, // at the launch-bounds shape the CTA writes all of it before any read; saved at other shapes
  Unread,         // no path from the point reads it before its task ends
};

// For each block of `Resumes` (the start of a point's resumption) and each of
// `Shared` (variables of F's module in address space 3), the variable's fate
// at that point. Paths run over F's CFG to the end of the task: `TaskStart`,
// where the persistent form begins each task, ends them (a block's shared
// memory holds nothing when it starts, so no correct kernel reads there what
// an earlier task left). A read is any instruction that may read the
// variable, through any pointer that may point into it; calls other than the
// device helpers' (which touch only their own state and their pointer
// arguments) and intrinsics known to read nothing count as reads. The CTA
// kills a variable in a block where, before any read, its stores (every
// thread of `Shape` evaluated on its own thread index) write all of it and a
// barrier of the whole CTA follows: the persistent-thread form already
// refused kernels with a barrier some threads skip (barrier_divergence.h).
std::vector<llvm::SmallVector<SharedFate, 4>> sharedFates(llvm::Function &F, llvm::ArrayRef<llvm::BasicBlock *> Resumes,
                                                          llvm::ArrayRef<llvm::GlobalVariable *> Shared,
                                                          std::optional<BlockShape> Shape,
                                                          const llvm::BasicBlock &TaskStart);

} // namespace preempt
#endif
