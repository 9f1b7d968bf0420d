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
// Returns the number of points placed.
unsigned placeInTaskYields(llvm::Function &Converted, llvm::StringRef KernelName, const TaskLoopValues &Loop);

} // namespace preempt
#endif
