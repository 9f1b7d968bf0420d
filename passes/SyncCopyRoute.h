// SyncCopyRoute.h: the host IR pass that routes synchronous CUDA copies to the preempt runtime's waiting wrappers.
// FLEP §4.1 (evicted kernels are resumed by the host): a copy must not block the host calls a resume needs.
#ifndef PREEMPT_SYNC_COPY_ROUTE_H
#define PREEMPT_SYNC_COPY_ROUTE_H

#include "llvm/IR/PassManager.h"

namespace preempt {

struct SyncCopyRoutePass : llvm::PassInfoMixin<SyncCopyRoutePass> {
  llvm::PreservedAnalyses run(llvm::Module &M, llvm::ModuleAnalysisManager &MAM);
  static bool isRequired() { return true; }
};

} // namespace preempt
#endif
