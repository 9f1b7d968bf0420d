// InTaskYield.h: yield points inside a block-task of converted NVIDIA kernels (issue 8, docs/intask.md).
// CTXBack §III (flashback by re-execution and reverting, uniform values saved once) at the IR level.
#ifndef PREEMPT_IN_TASK_YIELD_H
#define PREEMPT_IN_TASK_YIELD_H

#include "llvm/ADT/SmallVector.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/PassManager.h"

#include <string>

namespace preempt {

// Before conversion: a copy of `Kernel` (PREEMPT_INTASK_KERNEL_PREFIX) whose
// loops that may take a yield point are marked, or nullptr (no loop can, or
// -preempt-intask=0); remarks say why loops get none.
llvm::Function *makeInTaskVariant(llvm::Function &Kernel, llvm::FunctionAnalysisManager &FAM);

// Before conversion: a copy of the marked variant `Variant` to be placed in
// constant chunks (PREEMPT_INTASK_CHUNKS_KERNEL_PREFIX), or nullptr
// (-preempt-intask-chunks-variant=0, or the variant is in them already).
llvm::Function *makeInTaskChunksVariant(llvm::Function &Variant, llvm::StringRef KernelName);

// Removes a variant that ends up without points, with its shared variables.
void eraseInTaskVariant(llvm::Function &Variant);

// What the task loop (PersistentThreads.cpp) hands over.
struct TaskLoopValues {
  llvm::Value *Control = nullptr;     // the control block parameter
  llvm::Value *ResumePoint = nullptr; // nonzero: the task resumes at this point (1-based)
  llvm::Value *BatchSlot = nullptr;   // the slot the resumed batch was published in
  llvm::Value *CurrentTask = nullptr, *CurrentEnd = nullptr; // the task and the end of its batch
  llvm::Value *NextTask = nullptr;    // thread 0's fetch in flight
  llvm::BasicBlock *TaskStart = nullptr; // branches to the body
  llvm::BasicBlock *Exit = nullptr;      // leaves the kernel (counts finished tasks)
};

// After conversion: places a yield point at each marked loop whose context
// can be saved, with its save and restore routines, a dispatch at the task's
// start, and the kernel's descriptor for the runtime (control_block.h).
// Returns the number of points placed. `Chunks`: the variant of
// makeInTaskChunksVariant, placed without remarks, and with no points at all
// unless one of them runs constant chunks (else it would be the first's twin).
unsigned placeInTaskYields(llvm::Function &Converted, llvm::StringRef KernelName, const TaskLoopValues &Loop,
                           bool Chunks = false);

} // namespace preempt
#endif
