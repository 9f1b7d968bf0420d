// KernelCopy.cpp: copies of a kernel kept beside its persistent form, each with shared variables of its own.
// The unconverted copy (one-wave launches) and the drain form (FLEP §4.1's yield flag at block entry) are both copies.
//
// What makes a kernel comes along with the copy: the calling convention
// (ptx_kernel, amdgpu_kernel; LLVM 22 keeps no NVVM kernel annotations) and
// the function attributes (launch bounds are "nvvm.maxntid"/"nvvm.minctasm").
// Its calls keep going to the original callees: only the converted kernel is
// redirected to the clones that read the task context.
//
// Shared-memory variables of the kernel's own (local, used by no other
// function) get a twin for the copy: NVPTX declares a shared variable inside
// the one kernel that uses it, and one left at module scope because two
// kernels used it made ptxas build matmul_tiled's converted kernel 25%
// slower on the H100, with PTX otherwise identical.
#include "KernelCopy.h"

#include "llvm/IR/Constants.h"
#include "llvm/IR/Module.h"
#include "llvm/Transforms/Utils/Cloning.h"
#include "llvm/Transforms/Utils/ModuleUtils.h"

using namespace llvm;

namespace preempt {

// Whether every instruction using V (directly or through constant
// expressions) is in F; sets `Used` when one is.
static bool onlyUsedIn(const Value &V, const Function &F, bool &Used) {
  for (const User *U : V.users()) {
    if (const auto *I = dyn_cast<Instruction>(U)) {
      if (I->getFunction() != &F)
        return false;
      Used = true;
    } else if (!isa<ConstantExpr>(U) || !onlyUsedIn(*U, F, Used)) {
      return false;
    }
  }
  return true;
}

Function *copyKernel(Function &Kernel, StringRef Name, StringRef SharedSuffix, ArrayRef<Type *> ExtraParams) {
  Module &M = *Kernel.getParent();
  if (M.getNamedValue(Name))
    return nullptr; // names of these prefixes are the implementation's
  ValueToValueMapTy Map;
  SmallVector<GlobalVariable *, 4> KernelShared;
  // A variable no instruction uses (a copy's that was erased, reached only
  // through dead constant expressions) is no kernel's own: twinned at every
  // copy, such variables and their twins doubled with each kernel copied
  // (bench/preemption/drain_probe.cu's 86 kernels never finished compiling).
  for (GlobalVariable &Global : M.globals()) {
    bool Used = false;
    if (Global.getAddressSpace() == 3 && Global.hasLocalLinkage() && onlyUsedIn(Global, Kernel, Used) && Used)
      KernelShared.push_back(&Global);
  }
  for (GlobalVariable *Global : KernelShared) {
    auto *Twin = new GlobalVariable(M, Global->getValueType(), Global->isConstant(), Global->getLinkage(),
                                    Global->hasInitializer() ? Global->getInitializer() : nullptr,
                                    Global->getName() + SharedSuffix, Global, Global->getThreadLocalMode(),
                                    Global->getAddressSpace());
    Twin->copyAttributesFrom(Global);
    Map[Global] = Twin;
  }
  SmallVector<Type *, 8> Params(Kernel.getFunctionType()->params());
  Params.append(ExtraParams.begin(), ExtraParams.end());
  FunctionType *Type = FunctionType::get(Kernel.getReturnType(), Params, false);
  Function *Copy = Function::Create(Type, Kernel.getLinkage(), Kernel.getAddressSpace(), Name, &M);
  for (auto [Old, New] : zip(Kernel.args(), Copy->args())) {
    New.setName(Old.getName());
    Map[&Old] = &New;
  }
  SmallVector<ReturnInst *, 4> Returns;
  CloneFunctionInto(Copy, &Kernel, Map, CloneFunctionChangeType::LocalChangesOnly, Returns);
  // Whatever keeps a local kernel alive until code generation must keep its copy too.
  if (Copy->hasLocalLinkage())
    appendToCompilerUsed(M, {Copy});
  return Copy;
}

} // namespace preempt
