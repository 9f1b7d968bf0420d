// WarpUniform.cpp: a CTA-uniform value made visibly warp-uniform to ptxas (redux.sync over the whole warp).
// Keeps converted code on the uniform datapath (CTXBack §IV-A's points, FLEP §4.1's task loop and yield gate).
#include "WarpUniform.h"

#include "llvm/IR/IntrinsicsNVPTX.h"

using namespace llvm;

namespace preempt {

// `V`, a value the whole CTA holds alike, as ptxas can see it is: through
// redux.sync (sm_80 and newer), whose result lives in a uniform register.
// ptxas decides by itself which values stay on the warp's uniform datapath; a
// value loaded from a context record, or chosen by the resume dispatch, looks
// per-thread to it, and so does every phi it reaches: the counter of the loop
// a task resumes in, and each address built from it, moved to per-thread
// registers in every iteration, not only resumed ones (docs/intask.md: the
// overhead this cost). Only at points the whole CTA reaches together: every
// lane of the warp that exists takes part.
Value *warpUniform(IRBuilder<> &Builder, Value *V, const DataLayout &DL) {
  Function &F = *Builder.GetInsertBlock()->getParent();
  StringRef Cpu = F.getFnAttribute("target-cpu").getValueAsString();
  unsigned Sm = 0;
  if (!Cpu.consume_front("sm_") || Cpu.consumeInteger(10, Sm) || Sm < 80)
    return V;
  Type *Type = V->getType();
  if (!Type->isIntOrPtrTy() && !Type->isFloatingPointTy())
    return V;
  unsigned Bits = DL.getTypeSizeInBits(Type).getFixedValue();
  if (Bits > 64)
    return V;
  IntegerType *AsInt = Builder.getIntNTy(Bits);
  Value *Word = Type->isPointerTy() ? Builder.CreatePtrToInt(V, AsInt) : Builder.CreateBitCast(V, AsInt);
  // The whole warp, not activemask: with a mask known only at run time ptxas
  // took the result for per-thread again (the resume dispatch's switch on it
  // moved the stencil's loop counter to per-thread registers). Lanes a
  // partial warp lacks count as exited, which redux.sync does not wait for.
  Value *Mask = Builder.getInt32(~0u);
  auto Reduce = [&](Value *Half) { return Builder.CreateIntrinsic(Intrinsic::nvvm_redux_sync_umax, {Half, Mask}); };
  Value *Result;
  if (Bits <= 32) {
    Result = Builder.CreateTrunc(Reduce(Builder.CreateZExt(Word, Builder.getInt32Ty())), AsInt);
  } else {
    Value *Low = Reduce(Builder.CreateTrunc(Word, Builder.getInt32Ty()));
    Value *High = Reduce(Builder.CreateTrunc(Builder.CreateLShr(Word, 32), Builder.getInt32Ty()));
    Result = Builder.CreateOr(Builder.CreateShl(Builder.CreateZExt(High, AsInt), 32), Builder.CreateZExt(Low, AsInt));
  }
  Result = Type->isPointerTy() ? Builder.CreateIntToPtr(Result, Type) : Builder.CreateBitCast(Result, Type);
  if (V->hasName())
    Result->setName(V->getName() + ".uniform");
  return Result;
}

} // namespace preempt
