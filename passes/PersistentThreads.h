// PersistentThreads.h: the device IR pass that turns each safe kernel into a loop over block-tasks.
// FLEP §4.1 (persistent threads), EffiSha §5 (kernel transformation: task loop, task-id remapping).
#ifndef PREEMPT_PERSISTENT_THREADS_H
#define PREEMPT_PERSISTENT_THREADS_H

#include "llvm/IR/PassManager.h"

namespace preempt {

struct PersistentThreadsPass : llvm::PassInfoMixin<PersistentThreadsPass> {
  llvm::PreservedAnalyses run(llvm::Module &M, llvm::ModuleAnalysisManager &MAM);
  static bool isRequired() { return true; }
};

} // namespace preempt
#endif
