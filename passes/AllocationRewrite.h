// AllocationRewrite.h: the host IR pass that routes device-memory allocations and releases to the preempt runtime.
// schedGPU (TPDS'18) §4: pre-allocation before every allocation, post-free after every release, with no source changes.
#ifndef PREEMPT_ALLOCATION_REWRITE_H
#define PREEMPT_ALLOCATION_REWRITE_H

#include "llvm/IR/PassManager.h"

namespace preempt {

struct AllocationRewritePass : llvm::PassInfoMixin<AllocationRewritePass> {
  llvm::PreservedAnalyses run(llvm::Module &M, llvm::ModuleAnalysisManager &MAM);
  static bool isRequired() { return true; }
};

} // namespace preempt
#endif
