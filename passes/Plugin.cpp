// Plugin.cpp: registers preempt's passes with LLVM's new pass manager (clang -fpass-plugin, opt -load-pass-plugin).
// The device pass (FLEP §4.1) runs on GPU modules; the launch (FLEP §3) and allocation (schedGPU §4) passes on host ones.
#include "AllocationRewrite.h"
#include "LaunchRewrite.h"
#include "PersistentThreads.h"

#include "llvm/Passes/PassBuilder.h"
#include "llvm/Plugins/PassPlugin.h"

using namespace llvm;

static void registerPreemptPasses(PassBuilder &Builder) {
  // After the optimizer, so that the safety checks see clean SSA (uniformity
  // of a value in an alloca is unknown) and the loop we add is not reshaped.
  // Each pass looks at the module's triple and leaves other modules alone:
  // -fpass-plugin reaches both the host and the device cc1.
  Builder.registerOptimizerLastEPCallback([](ModulePassManager &MPM, OptimizationLevel, ThinOrFullLTOPhase) {
    MPM.addPass(preempt::PersistentThreadsPass());
    MPM.addPass(preempt::LaunchRewritePass());
    MPM.addPass(preempt::AllocationRewritePass());
  });
  Builder.registerPipelineParsingCallback(
      [](StringRef Name, ModulePassManager &MPM, ArrayRef<PassBuilder::PipelineElement>) {
        if (Name == "preempt-persistent-threads") {
          MPM.addPass(preempt::PersistentThreadsPass());
          return true;
        }
        if (Name == "preempt-launch-rewrite") {
          MPM.addPass(preempt::LaunchRewritePass());
          return true;
        }
        if (Name == "preempt-alloc-rewrite") {
          MPM.addPass(preempt::AllocationRewritePass());
          return true;
        }
        return false;
      });
}

extern "C" LLVM_ATTRIBUTE_WEAK LLVM_ABI_EXPORT PassPluginLibraryInfo llvmGetPassPluginInfo() {
  return {LLVM_PLUGIN_API_VERSION, "preempt", "0.1", registerPreemptPasses};
}
