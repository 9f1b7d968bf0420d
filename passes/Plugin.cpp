// Plugin.cpp: registers preempt's passes with LLVM's new pass manager (clang -fpass-plugin, opt -load-pass-plugin).
// The device pass (FLEP §4.1) runs on GPU modules; the launch (FLEP §3) and allocation (schedGPU §4) passes on host ones.
#include "AllocationRewrite.h"
#include "SyncCopyRoute.h"
#include "LaunchRewrite.h"
#include "PersistentThreads.h"

#include "llvm/IR/DiagnosticInfo.h"
#include "llvm/IR/Verifier.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Plugins/PassPlugin.h"
#include "llvm/Support/CommandLine.h"

using namespace llvm;

static cl::opt<bool> BreakForTest("preempt-verify-break-for-test", cl::init(false), cl::Hidden,
                                  cl::desc("Test only: add an invalid function before the output check"));

namespace {
// Release builds of clang pass -disable-llvm-verifier: IR these passes got
// wrong would go on to the backend and ptxas as is, and could run (a kernel
// of ours did, and hung). A compile error instead, naming the first problem.
struct VerifyPreemptOutput : PassInfoMixin<VerifyPreemptOutput> {
  PreservedAnalyses run(Module &M, ModuleAnalysisManager &) {
    if (BreakForTest) {
      // A block with no terminator.
      Function *Broken = Function::Create(FunctionType::get(Type::getVoidTy(M.getContext()), false),
                                          GlobalValue::InternalLinkage, "preempt.broken", M);
      BasicBlock::Create(M.getContext(), "entry", Broken);
    }
    std::string Problems;
    raw_string_ostream ProblemStream(Problems);
    if (verifyModule(M, &ProblemStream)) {
      StringRef First = StringRef(Problems).split('\n').first;
      M.getContext().diagnose(DiagnosticInfoGeneric(
          "libpreempt.so left invalid IR in '" + M.getModuleIdentifier() + "' (" + First +
          "): a bug in preempt; compile without -fpass-plugin=libpreempt.so to build without preemption"));
    }
    return PreservedAnalyses::all();
  }
  static bool isRequired() { return true; }
};
} // namespace

static void registerPreemptPasses(PassBuilder &Builder) {
  // After the optimizer, so that the safety checks see clean SSA (uniformity
  // of a value in an alloca is unknown) and the loop we add is not reshaped.
  // Each pass looks at the module's triple and leaves other modules alone:
  // -fpass-plugin reaches both the host and the device cc1.
  Builder.registerOptimizerLastEPCallback([](ModulePassManager &MPM, OptimizationLevel, ThinOrFullLTOPhase) {
    MPM.addPass(preempt::PersistentThreadsPass());
    MPM.addPass(preempt::LaunchRewritePass());
    MPM.addPass(preempt::AllocationRewritePass());
    MPM.addPass(preempt::SyncCopyRoutePass());
    MPM.addPass(VerifyPreemptOutput());
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
        if (Name == "preempt-sync-copies") {
          MPM.addPass(preempt::SyncCopyRoutePass());
          return true;
        }
        return false;
      });
}

extern "C" LLVM_ATTRIBUTE_WEAK LLVM_ABI_EXPORT PassPluginLibraryInfo llvmGetPassPluginInfo() {
  return {LLVM_PLUGIN_API_VERSION, "preempt", "0.1", registerPreemptPasses};
}
