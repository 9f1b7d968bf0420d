// ApiRoute.cpp: replaces a host module's declarations of named runtime APIs with the preempt runtime's wrappers.
// schedGPU (TPDS'18) §4 (implicit memory management: no source changes); shared by every routing pass.
//
// Doing it at the IR level also catches the calls clang's headers make on the
// program's behalf: cuda_runtime.h's template overloads (cudaMalloc,
// cudaMemcpyToSymbol) are internal functions calling the C declaration, and
// cuda.h's macros turn cuMemAlloc into cuMemAlloc_v2 before IR exists.
// Replacing the declaration itself (not only its direct calls) keeps calls,
// invokes and function pointers alike on the wrapper, whose signature is the
// original's.
#include "ApiRoute.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Analysis/OptimizationRemarkEmitter.h"
#include "llvm/IR/DiagnosticInfo.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/Instructions.h"

using namespace llvm;

namespace preempt {

static constexpr const char *PassName = "preempt";

static std::string wrapperName(StringRef Api) { return ("preempt_" + Api).str(); }

// A module that defines one of the APIs or its wrapper belongs to a layer
// under the application (a mock runtime, an interposer, preempt's own
// wrappers): its calls reach the real APIs on purpose, and routing them would
// make a wrapper call itself or account the same memory twice.
static Function *layerDefinition(Module &M, ArrayRef<StringLiteral> Apis) {
  for (StringRef Api : Apis)
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

bool routeApis(Module &M, const ApiFamily &Family) {
  if (Function *Definition = layerDefinition(M, Family.Apis)) {
    OptimizationRemarkEmitter(Definition).emit([&] {
      return OptimizationRemarkMissed(PassName, Family.LayerRemark, Definition)
             << "this module defines " << ore::NV("Function", Definition->getName())
             << ": its " << Family.Layer << " calls are not routed to the preempt runtime";
    });
    return false;
  }

  SmallVector<std::pair<Function *, StringRef>, 8> Routed;
  for (StringRef Api : Family.Apis)
    if (Function *Original = M.getFunction(Api); Original && !Original->use_empty())
      Routed.push_back({Original, Api});
  if (Routed.empty())
    return false;

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
      auto Remark = Call ? OptimizationRemark(PassName, Family.RoutedRemark, Call)
                         : OptimizationRemark(PassName, Family.RoutedRemark, Original);
      return Remark << ore::NV("Function", Api) << " routed to " << ore::NV("Wrapper", Wrapper->getName())
                    << " (" << Family.Purpose << ")";
    });
    Original->eraseFromParent();
  }
  return Changed;
}

} // namespace preempt
