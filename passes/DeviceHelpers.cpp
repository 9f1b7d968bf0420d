// DeviceHelpers.cpp: brings runtime-dev's bitcode into the module being converted and inlines it.
// FLEP §4.1: the task loop's fetch and barrier, written once in CUDA/HIP C instead of in IRBuilder calls.
#include "DeviceHelpers.h"

#include "preempt/control_block.h"

#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/IR/Instructions.h"
#include "llvm/Linker/Linker.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Transforms/Utils/Cloning.h"

using namespace llvm;

namespace {
#include "task_loop.amdgcn.inc"
#include "task_loop.nvptx.inc"
} // namespace

namespace preempt {

// The unconverted copies and drain forms of converted kernels share the
// "__preempt_" prefix but are kernels, not helpers: never internalized,
// inlined or deleted.
static bool isHelperName(StringRef Name) {
  return Name.starts_with("__preempt_") && Name != "__preempt_task_ctx" &&
         !Name.starts_with(PREEMPT_ORIGINAL_KERNEL_PREFIX) && !Name.starts_with(PREEMPT_PERSISTENT_KERNEL_PREFIX) &&
         !Name.starts_with(PREEMPT_DRAIN_KERNEL_PREFIX) &&
         !Name.starts_with(PREEMPT_INTASK_KERNEL_PREFIX) && !Name.starts_with(PREEMPT_INTASK_DESC_PREFIX) &&
         !Name.starts_with(PREEMPT_INTASK_CHUNKS_KERNEL_PREFIX) && !Name.starts_with(PREEMPT_INTASK_CHUNKS_DESC_PREFIX);
}

Error linkDeviceHelpers(Module &M, GpuTarget Target) {
  StringRef Bitcode =
      Target == GpuTarget::NVPTX
          ? StringRef(reinterpret_cast<const char *>(task_loop_nvptx_bitcode), sizeof(task_loop_nvptx_bitcode))
          : StringRef(reinterpret_cast<const char *>(task_loop_amdgcn_bitcode), sizeof(task_loop_amdgcn_bitcode));
  auto Helpers = parseBitcodeFile(MemoryBufferRef(Bitcode, "preempt-device-helpers"), M.getContext());
  if (!Helpers)
    return Helpers.takeError();
  (*Helpers)->setTargetTriple(M.getTargetTriple());
  (*Helpers)->setDataLayout(M.getDataLayout());
  // The program's module flags govern, not the ones clang gave the helpers'
  // own build: with -ffast-math or -fcuda-flush-denormals-to-zero the program
  // has nvvm-reflect-ftz=1 (an Override flag), the helpers 0, and the linker
  // refused the pair ("IDs have conflicting override values"; clang then
  // aborted on that diagnostic: HeCBench softmax, scel, gabor at their own
  // --use_fast_math).
  if (NamedMDNode *Flags = (*Helpers)->getModuleFlagsMetadata())
    (*Helpers)->eraseNamedMetadata(Flags);
  if (Linker::linkModules(M, std::move(*Helpers)))
    return createStringError(inconvertibleErrorCode(), "linking the preempt device helpers failed");

  for (Function &F : M) {
    if (!isHelperName(F.getName()) || F.isDeclaration())
      continue;
    F.setLinkage(GlobalValue::InternalLinkage);
    // Helpers are built for the oldest architecture; dropping their target
    // attributes lets them inline into kernels built for any newer one.
    F.removeFnAttr("target-cpu");
    F.removeFnAttr("target-features");
    F.removeFnAttr(Attribute::NoInline);
    F.addFnAttr(Attribute::AlwaysInline);
  }
  GlobalVariable *Context = M.getNamedGlobal("__preempt_task_ctx");
  if (!Context)
    return createStringError(inconvertibleErrorCode(), "the device helpers lack the task context");
  Context->setLinkage(GlobalValue::InternalLinkage);
  SmallVector<StringRef, 12> Required = {helper::KernelBegin, helper::KernelEnd, helper::TaskBegin, helper::TaskPrefetch, helper::YieldCheck, helper::TaskEnd, helper::BatchBegin, helper::BatchFirst, helper::BatchEnd};
  Required.append(std::begin(helper::BlockIndex), std::end(helper::BlockIndex));
  Required.append(std::begin(helper::TaskBlockIndex), std::end(helper::TaskBlockIndex));
  Required.append(std::begin(helper::GridDim), std::end(helper::GridDim));
  for (StringRef Name : Required) {
    Function *F = M.getFunction(Name);
    if (!F || F->isDeclaration())
      return createStringError(inconvertibleErrorCode(), "the device helpers lack '" + Name + "'");
  }
  return Error::success();
}

void inlineDeviceHelpers(Module &M) {
  SmallVector<CallBase *, 32> Calls;
  SmallVector<Function *, 16> Helpers;
  for (Function &F : M)
    if (isHelperName(F.getName()) && !F.isDeclaration()) {
      Helpers.push_back(&F);
      for (User *U : F.users())
        if (auto *Call = dyn_cast<CallBase>(U); Call && Call->getCalledFunction() == &F)
          Calls.push_back(Call);
    }
  for (CallBase *Call : Calls) {
    InlineFunctionInfo Info;
    InlineResult Result = InlineFunction(*Call, Info);
    (void)Result; // a helper that cannot inline stays a call: still correct, only slower
  }
  for (Function *F : Helpers)
    if (F->use_empty())
      F->eraseFromParent();
}

} // namespace preempt
