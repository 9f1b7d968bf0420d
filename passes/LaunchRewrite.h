// LaunchRewrite.h: the host IR pass that routes kernel launches to the preempt runtime.
// FLEP §3 (runtime decides grid size and when kernels run), EffiSha §6 (launch through the runtime).
#ifndef PREEMPT_LAUNCH_REWRITE_H
#define PREEMPT_LAUNCH_REWRITE_H

#include "llvm/IR/PassManager.h"

namespace preempt {

struct LaunchRewritePass : llvm::PassInfoMixin<LaunchRewritePass> {
  llvm::PreservedAnalyses run(llvm::Module &M, llvm::ModuleAnalysisManager &MAM);
  static bool isRequired() { return true; }
};

} // namespace preempt
#endif
