// AllocationRewrite.cpp: routes device-memory allocations and releases (CUDA runtime and driver, HIP) to preempt_<name>.
// schedGPU (TPDS'18) §4: the runtime's wrappers pre-allocate before and post-free after each call (implicit mode).
//
// The paper's implicit memory management needs no source changes; doing it
// at the IR level also catches the allocations clang's headers make on the
// program's behalf: cuda_runtime.h's template overloads of cudaMalloc are
// internal functions calling the C declaration, and cuda.h's macros turn
// cuMemAlloc into cuMemAlloc_v2 before IR exists. Replacing the declaration
// itself (not only its direct calls) keeps calls, invokes and function
// pointers alike on the wrapper, whose signature is the original's.
#include "AllocationRewrite.h"

#include "GpuTarget.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Analysis/OptimizationRemarkEmitter.h"
#include "llvm/IR/DiagnosticInfo.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/Instructions.h"
#include "llvm/Support/CommandLine.h"

using namespace llvm;

namespace preempt {

static constexpr const char *PassName = "preempt";

// On by default: programs built with the plugin link the runtime, which
// defines every wrapper; off for a program that must allocate without
// admission, or that links a runtime without the wrappers.
static cl::opt<bool> MemoryAdmission("preempt-memory-admission",
                                     cl::desc("Route device-memory allocations and releases to the runtime's "
                                              "preempt_<name> wrappers (schedGPU memory admission)"),
                                     cl::init(true));

// The exact names the runtime wraps: each wrapper has the original's
// signature, so only these may be routed. The _ptsz names are what
// cuda_runtime_api.h and cuda.h call the stream-ordered APIs under
// CUDA_API_PER_THREAD_DEFAULT_STREAM (nvcc --default-stream per-thread);
// HIP has no per-thread spellings of its allocation calls.
static constexpr StringLiteral AllocationApis[] = {
    // CUDA runtime
    "cudaMalloc", "cudaFree", "cudaMallocAsync", "cudaFreeAsync", "cudaMallocFromPoolAsync", "cudaMallocPitch",
    "cudaMalloc3D", "cudaMallocManaged", "cudaMallocAsync_ptsz", "cudaFreeAsync_ptsz", "cudaMallocFromPoolAsync_ptsz",
    // CUDA driver (cuda.h maps cuMemAlloc, cuMemAllocPitch and cuMemFree to _v2)
    "cuMemAlloc_v2", "cuMemAllocPitch_v2", "cuMemAllocAsync", "cuMemAllocFromPoolAsync", "cuMemAllocManaged",
    "cuMemFree_v2", "cuMemFreeAsync", "cuMemAllocAsync_ptsz", "cuMemAllocFromPoolAsync_ptsz", "cuMemFreeAsync_ptsz",
    "cuMemCreate", "cuMemRelease",
    // HIP
    "hipMalloc", "hipFree", "hipMallocAsync", "hipFreeAsync", "hipMallocFromPoolAsync", "hipMallocPitch",
    "hipMalloc3D", "hipMallocManaged", "hipMemCreate", "hipMemRelease"};

static std::string wrapperName(StringRef Api) { return ("preempt_" + Api).str(); }

// A module that defines one of the APIs or its wrapper belongs to an
// allocation layer (a mock runtime, an interposer, preempt's own wrappers),
// not to an application: its calls reach the real APIs on purpose, and routing
// them would make a wrapper call itself or account the same memory twice.
static Function *allocationLayerDefinition(Module &M) {
  for (StringRef Api : AllocationApis)
    for (const std::string &Name : {Api.str(), wrapperName(Api)})
      if (Function *F = M.getFunction(Name); F && !F->isDeclaration())
        return F;
  return nullptr;
}

// The wrapper to route `Original` to, or nullptr where the name is taken by
// something a call with the original's signature must not reach.
static Function *wrapperFor(Module &M, Function &Original, StringRef Api) {
  std::string Name = wrapperName(Api);
  if (GlobalValue *Existing = M.getNamedValue(Name)) {
    auto *Wrapper = dyn_cast<Function>(Existing);
    return Wrapper && Wrapper->getFunctionType() == Original.getFunctionType() ? Wrapper : nullptr;
  }
  // The original's attributes hold its ABI (byval on cudaMalloc3D's extent,
  // for one), which the wrapper's callers must keep passing the same way.
  auto *Wrapper = cast<Function>(
      M.getOrInsertFunction(Name, Original.getFunctionType(), Original.getAttributes()).getCallee());
  Wrapper->setCallingConv(Original.getCallingConv());
  return Wrapper;
}

PreservedAnalyses AllocationRewritePass::run(Module &M, ModuleAnalysisManager &) {
  if (!MemoryAdmission || gpuTargetOf(M) != GpuTarget::None)
    return PreservedAnalyses::all();
  if (Function *Definition = allocationLayerDefinition(M)) {
    OptimizationRemarkEmitter(Definition).emit([&] {
      return OptimizationRemarkMissed(PassName, "AllocationLayer", Definition)
             << "this module defines " << ore::NV("Function", Definition->getName())
             << ": its allocation calls are not routed to the preempt runtime";
    });
    return PreservedAnalyses::all();
  }

  SmallVector<std::pair<Function *, StringRef>, 8> Routed;
  for (StringRef Api : AllocationApis)
    if (Function *Original = M.getFunction(Api); Original && !Original->use_empty())
      Routed.push_back({Original, Api});
  if (Routed.empty())
    return PreservedAnalyses::all();

  // Each remark points at the first call in the module, so that -Rpass shows
  // where the program allocates; a function only ever taken by address gets
  // the remark without a location.
  DenseMap<const Function *, CallBase *> FirstCall;
  for (auto &Entry : Routed)
    FirstCall[Entry.first] = nullptr;
  for (Function &F : M)
    for (Instruction &I : instructions(F))
      if (auto *Call = dyn_cast<CallBase>(&I))
        if (auto *Callee = dyn_cast<Function>(Call->getCalledOperand()->stripPointerCasts()))
          if (auto It = FirstCall.find(Callee); It != FirstCall.end() && !It->second)
            It->second = Call;

  bool Changed = false;
  for (auto &Entry : Routed) {
    // Named, not bound: lambdas may capture structured bindings only from C++20.
    Function *Original = Entry.first;
    StringRef Api = Entry.second;
    Function *Wrapper = wrapperFor(M, *Original, Api);
    if (!Wrapper) {
      OptimizationRemarkEmitter(Original).emit([&] {
        return OptimizationRemarkMissed(PassName, "WrapperMismatch", Original)
               << ore::NV("Function", Api) << " is not routed: this module declares " << wrapperName(Api)
               << " as something other than a function of the same type";
      });
      continue;
    }
    Original->replaceAllUsesWith(Wrapper);
    Changed = true;

    CallBase *Call = FirstCall.lookup(Original);
    OptimizationRemarkEmitter Remarks(Call ? Call->getFunction() : Original);
    Remarks.emit([&] {
      auto Remark = Call ? OptimizationRemark(PassName, "AllocationRouted", Call)
                         : OptimizationRemark(PassName, "AllocationRouted", Original);
      return Remark << ore::NV("Function", Api) << " routed to " << ore::NV("Wrapper", Wrapper->getName())
                    << " (memory admission)";
    });
    Original->eraseFromParent();
  }
  return Changed ? PreservedAnalyses::none() : PreservedAnalyses::all();
}

} // namespace preempt
