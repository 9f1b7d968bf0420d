// SharedLiveness.cpp: the IR side of the shared-memory liveness at in-task points: reads, overwrites, barriers.
// Issue 8's "live shared memory saved where needed" (CTXBack §III-A's liveness, for a CTA's shared memory).
//
// lib/shared_liveness.c searches the CFG; this file says what each block does
// first to each variable. A read is anything that may read it. The CTA kills
// a variable where, in one block, before any read, its stores write all of
// it and a barrier of the whole CTA follows. Which bytes each thread stores
// is computed by evaluating the store's address for each thread index of the
// launch-bounds shape: addresses built from constants, the thread index and
// the block's size only; anything else (a loop counter, a loaded value) and
// the stores do not count.
#include "SharedLiveness.h"

#include "GpuTarget.h"

#include "preempt/shared_liveness.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/Analysis/ConstantFolding.h"
#include "llvm/Analysis/ValueTracking.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/IR/IntrinsicsNVPTX.h"
#include "llvm/IR/Operator.h"

#include <vector>

using namespace llvm;

namespace preempt {
namespace {

struct ThreadIndex {
  uint32_t X, Y, Z;
};

// V's value in thread `Thread` of a CTA of `Shape`, where V is built only from
// constants, the thread index and the block's size by instructions that touch
// no memory: LLVM's constant folder does the arithmetic. None otherwise, and
// where the arithmetic would be poison (a shift too far, a division by 0).
std::optional<APInt> evaluate(const Value *V, const BlockShape &Shape, const ThreadIndex &Thread,
                              const DataLayout &DL, unsigned Depth = 0) {
  if (auto *Known = dyn_cast<ConstantInt>(V))
    return Known->getValue();
  auto *I = dyn_cast<Instruction>(V);
  if (Depth > 32 || !I || !I->getType()->isIntegerTy() || isa<PHINode>(I))
    return std::nullopt;
  if (auto *Call = dyn_cast<IntrinsicInst>(I)) {
    unsigned Width = I->getType()->getIntegerBitWidth();
    switch (Call->getIntrinsicID()) {
    case Intrinsic::nvvm_read_ptx_sreg_tid_x:
      return APInt(Width, Thread.X);
    case Intrinsic::nvvm_read_ptx_sreg_tid_y:
      return APInt(Width, Thread.Y);
    case Intrinsic::nvvm_read_ptx_sreg_tid_z:
      return APInt(Width, Thread.Z);
    case Intrinsic::nvvm_read_ptx_sreg_ntid_x:
      return APInt(Width, Shape.X);
    case Intrinsic::nvvm_read_ptx_sreg_ntid_y:
      return APInt(Width, Shape.Y);
    case Intrinsic::nvvm_read_ptx_sreg_ntid_z:
      return APInt(Width, Shape.Z);
    default:
      return std::nullopt;
    }
  }
  if (isa<CallBase>(I) || I->mayReadOrWriteMemory())
    return std::nullopt;
  if (isa<SelectInst>(I)) { // only the arm it takes
    std::optional<APInt> Condition = evaluate(I->getOperand(0), Shape, Thread, DL, Depth + 1);
    if (!Condition)
      return std::nullopt;
    return evaluate(I->getOperand(Condition->isOne() ? 1 : 2), Shape, Thread, DL, Depth + 1);
  }
  SmallVector<Constant *, 4> Operands;
  for (const Value *Operand : I->operands()) {
    std::optional<APInt> Known = evaluate(Operand, Shape, Thread, DL, Depth + 1);
    if (!Known)
      return std::nullopt;
    Operands.push_back(ConstantInt::get(I->getContext(), *Known));
  }
  auto *Compare = dyn_cast<CmpInst>(I);
  auto *Folded = dyn_cast_or_null<ConstantInt>(
      Compare ? ConstantFoldCompareInstOperands(Compare->getPredicate(), Operands[0], Operands[1], DL)
              : ConstantFoldInstOperands(I, Operands, DL));
  if (!Folded)
    return std::nullopt;
  return Folded->getValue();
}

// A store's byte offset into its variable: a constant plus index values
// times their scales, read off the GEPs between the variable and the pointer.
struct StoreAddress {
  int64_t Constant = 0;
  SmallVector<std::pair<const Value *, int64_t>, 4> Scaled; // index (sign-extended to IndexWidth) times scale
  SmallVector<unsigned, 4> IndexWidth;
  uint64_t Bytes = 0;
};

std::optional<StoreAddress> storeAddress(const StoreInst &Store, const GlobalVariable &Variable,
                                         const DataLayout &DL) {
  StoreAddress Address;
  Address.Bytes = DL.getTypeStoreSize(Store.getValueOperand()->getType()).getFixedValue();
  const Value *Pointer = Store.getPointerOperand();
  while (true) {
    if (auto *GEP = dyn_cast<GEPOperator>(Pointer)) {
      unsigned Width = DL.getIndexSizeInBits(GEP->getPointerAddressSpace());
      SmallMapVector<Value *, APInt, 4> Variables;
      APInt Constant(Width, 0);
      if (Width > 64 || !GEP->collectOffset(DL, Width, Variables, Constant))
        return std::nullopt;
      Address.Constant += Constant.getSExtValue();
      for (auto &[Index, Scale] : Variables) {
        Address.Scaled.push_back({Index, Scale.getSExtValue()});
        Address.IndexWidth.push_back(Width);
      }
      Pointer = GEP->getPointerOperand();
      continue;
    }
    if (auto *Cast = dyn_cast<Operator>(Pointer);
        Cast && (Cast->getOpcode() == Instruction::AddrSpaceCast || Cast->getOpcode() == Instruction::BitCast)) {
      Pointer = Cast->getOperand(0);
      continue;
    }
    break;
  }
  if (Pointer != &Variable)
    return std::nullopt;
  return Address;
}

// May `Pointer` point into `Variable`? Only pointers of the shared or the
// generic address space can; and only where one of its underlying objects is
// the variable or something the search cannot name (a loaded pointer, an
// integer made a pointer). Kernel arguments point to global memory.
bool mayPointInto(const Value *Pointer, const GlobalVariable &Variable) {
  auto *Type = dyn_cast<PointerType>(Pointer->getType());
  if (!Type)
    return false;
  unsigned Space = Type->getAddressSpace();
  if (Space != 0 && Space != 3)
    return false;
  SmallVector<const Value *, 4> Objects;
  getUnderlyingObjects(Pointer, Objects, nullptr, 0);
  return any_of(Objects, [&](const Value *Object) {
    if (Object == &Variable)
      return true;
    return !(isa<GlobalValue>(Object) || isa<AllocaInst>(Object) || isa<Argument>(Object) ||
             isa<ConstantPointerNull>(Object) || isa<UndefValue>(Object));
  });
}

bool mayRead(const Instruction &I, const GlobalVariable &Variable) {
  if (auto *Load = dyn_cast<LoadInst>(&I))
    return mayPointInto(Load->getPointerOperand(), Variable);
  if (auto *Exchange = dyn_cast<AtomicRMWInst>(&I))
    return mayPointInto(Exchange->getPointerOperand(), Variable);
  if (auto *Exchange = dyn_cast<AtomicCmpXchgInst>(&I))
    return mayPointInto(Exchange->getPointerOperand(), Variable);
  if (isa<FenceInst>(I) || meetsWholeCta(I))
    return false;
  if (auto *Call = dyn_cast<CallBase>(&I)) {
    if (!Call->mayReadFromMemory())
      return false;
    if (auto *Transfer = dyn_cast<MemTransferInst>(Call))
      return mayPointInto(Transfer->getRawSource(), Variable);
    const Function *Callee = Call->getCalledFunction();
    bool OnlyItsArguments = Call->onlyAccessesArgMemory() || Call->onlyAccessesInaccessibleMemOrArgMem() ||
                            (Callee && Callee->getName().starts_with("__preempt_"));
    if (!OnlyItsArguments)
      return true;
    return any_of(Call->args(), [&](const Use &Argument) { return mayPointInto(Argument.get(), Variable); });
  }
  return I.mayReadFromMemory();
}

} // namespace

std::optional<BlockShape> launchBoundsShape(const Function &F) {
  for (StringRef Name : {"nvvm.reqntid", "nvvm.maxntid"}) {
    Attribute Bound = F.getFnAttribute(Name);
    if (!Bound.isStringAttribute())
      continue;
    SmallVector<StringRef, 3> Parts;
    Bound.getValueAsString().split(Parts, ',');
    uint32_t Dimension[3] = {1, 1, 1};
    bool Good = !Parts.empty() && Parts.size() <= 3;
    for (size_t Part = 0; Good && Part < Parts.size(); ++Part)
      Good = !Parts[Part].trim().getAsInteger(10, Dimension[Part]) && Dimension[Part] > 0;
    if (Good && (uint64_t)Dimension[0] * Dimension[1] * Dimension[2] <= 1024)
      return BlockShape{Dimension[0], Dimension[1], Dimension[2]};
  }
  return std::nullopt;
}

std::vector<SmallVector<SharedFate, 4>> sharedFates(Function &F, ArrayRef<BasicBlock *> Resumes,
                                                    ArrayRef<GlobalVariable *> Shared, std::optional<BlockShape> Shape,
                                                    const BasicBlock &TaskStart) {
  const DataLayout &DL = F.getDataLayout();
  DenseMap<const BasicBlock *, uint32_t> Number;
  for (BasicBlock &Block : F)
    Number[&Block] = Number.size();
  std::vector<std::vector<uint32_t>> Successors(Number.size());
  for (BasicBlock &Block : F)
    for (BasicBlock *Next : successors(&Block))
      Successors[Number[&Block]].push_back(Number[Next]);

  std::vector<SmallVector<SharedFate, 4>> Fates(Resumes.size());
  // What each block does to each variable is worked out once (the coverage
  // test evaluates every thread's stores); each point only searches.
  for (GlobalVariable *Variable : Shared) {
    uint64_t Size = DL.getTypeAllocSize(Variable->getValueType()).getFixedValue();
    // Two views of each block: reads only, and reads with the CTA's kills.
    std::vector<preempt_shared_block> ReadsOnly(Number.size()), WithKills(Number.size());
    for (BasicBlock &Block : F) {
      uint32_t Index = Number[&Block];
      ReadsOnly[Index] = {Successors[Index].data(), Successors[Index].size(), PREEMPT_SHARED_NOTHING};
      WithKills[Index] = ReadsOnly[Index];
      if (&Block == &TaskStart) {
        ReadsOnly[Index].first = WithKills[Index].first = PREEMPT_SHARED_KILLED;
        continue;
      }
      SmallVector<StoreAddress, 8> Stores;
      bool StoresKnown = Shape.has_value();
      for (Instruction &I : Block) {
        if (mayRead(I, *Variable)) {
          ReadsOnly[Index].first = PREEMPT_SHARED_READ;
          if (WithKills[Index].first == PREEMPT_SHARED_NOTHING)
            WithKills[Index].first = PREEMPT_SHARED_READ;
          break;
        }
        if (WithKills[Index].first != PREEMPT_SHARED_NOTHING || !StoresKnown)
          continue;
        if (auto *Store = dyn_cast<StoreInst>(&I)) {
          if (std::optional<StoreAddress> Address = storeAddress(*Store, *Variable, DL))
            Stores.push_back(std::move(*Address));
          continue;
        }
        if (!meetsWholeCta(I) || Stores.empty())
          continue;
        // Every thread's stores so far, each thread's own addresses.
        std::vector<preempt_shared_write> Writes;
        for (uint32_t Z = 0; Z < Shape->Z && StoresKnown; ++Z)
          for (uint32_t Y = 0; Y < Shape->Y && StoresKnown; ++Y)
            for (uint32_t X = 0; X < Shape->X && StoresKnown; ++X)
              for (const StoreAddress &Address : Stores) {
                int64_t Offset = Address.Constant;
                for (auto [Term, Width] : zip(Address.Scaled, Address.IndexWidth)) {
                  std::optional<APInt> Index = evaluate(Term.first, *Shape, ThreadIndex{X, Y, Z}, DL);
                  if (!Index) {
                    StoresKnown = false;
                    break;
                  }
                  Offset += Index->sextOrTrunc(Width).getSExtValue() * Term.second;
                }
                if (!StoresKnown)
                  break;
                if (Offset < 0 || (uint64_t)Offset + Address.Bytes > Size) {
                  StoresKnown = false; // outside the variable: the kernel is not what this reasoning assumes
                  break;
                }
                Writes.push_back({(uint64_t)Offset, Address.Bytes});
              }
        int Covered = 0;
        if (StoresKnown && preempt_shared_covered(Writes.data(), Writes.size(), Size, &Covered) == 0 && Covered)
          WithKills[Index].first = PREEMPT_SHARED_KILLED;
      }
    }
    for (auto [Resume, PointFates] : zip(Resumes, Fates)) {
      int Live = 1;
      uint32_t Start = Number[Resume];
      if (preempt_shared_live_from(ReadsOnly.data(), ReadsOnly.size(), Start, &Live) == 0 && !Live)
        PointFates.push_back(SharedFate::Unread);
      else if (Shape && preempt_shared_live_from(WithKills.data(), WithKills.size(), Start, &Live) == 0 && !Live)
        PointFates.push_back(SharedFate::SkippedAtShape);
      else
        PointFates.push_back(SharedFate::Saved);
    }
  }
  return Fates;
}

} // namespace preempt
