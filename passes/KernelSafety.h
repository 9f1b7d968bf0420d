// KernelSafety.h: decides whether a kernel can become persistent-threaded without changing its results.
// DESIGN.md "Correctness rules"; FLEP §4.1 and EffiSha §5 assume kernels these checks admit.
#ifndef PREEMPT_KERNEL_SAFETY_H
#define PREEMPT_KERNEL_SAFETY_H

#include "GpuTarget.h"

#include "llvm/ADT/SetVector.h"
#include "llvm/IR/PassManager.h"

#include <string>

namespace preempt {

// The functions a kernel may call, found through direct calls only (the
// safety check refuses indirect calls, so this set is complete when it passes).
llvm::SetVector<llvm::Function *> reachableFunctions(llvm::Function &Kernel);

// Returns the empty string when `Kernel` is safe to convert, else why not.
std::string whyNotConvertible(llvm::Function &Kernel, GpuTarget Target, llvm::FunctionAnalysisManager &FAM);

} // namespace preempt
#endif
