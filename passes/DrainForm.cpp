// DrainForm.cpp: the drain form of a converted NVIDIA kernel: the kernel as written, its blocks gated at entry.
// FLEP §4.1's yield flag (per SM through %smid), read once per block by the hardware's own block scheduling.
//
// K(args...) gets a copy __preempt_drain_K(args..., control). Thread 0 of each
// block reads its SM's word of the control block's yield mask; a barrier that
// ORs its bit across the block decides for every thread at once. A block
// whose SM yields sets its bit in control->undone and returns before its body
// has done anything another block or the host could see; the runtime
// relaunches those blocks later (task_loop.cu, next_undone_task).
//
// The barrier: where the kernel's own first barrier is reached by every path
// from entry and nothing before it writes global memory, that barrier becomes
// the OR (bench/preemption/drain_probe.md's `fused` gate: thread 0's read
// overlaps the block's first loads, and no barrier is added); otherwise a
// barrier is added at entry (`t0_bar`).
#include "DrainForm.h"

#include "GpuTarget.h"
#include "KernelCopy.h"
#include "KernelSafety.h"
#include "WarpUniform.h"

#include "preempt/control_block.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/Analysis/OptimizationRemarkEmitter.h"
#include "llvm/Analysis/ValueTracking.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/IR/IntrinsicsNVPTX.h"

#include <cstddef>

using namespace llvm;

namespace preempt {

static constexpr const char *PassName = "preempt";

// A skipped block never runs until its relaunch, after the whole first wave:
// a block that waits for another block (a flag it polls, a lock) would wait
// for a skipped one forever, and the eviction would never end. Such waits
// read memory another block writes while both run: volatile or atomic loads,
// atomics whose result is used. Results-unused atomics (reductions) and
// "last block finishes" counters read once are fine, but the second looks
// like the first kind to a scan, so both are refused.
std::string whyNoDrainForm(Function &Kernel) {
  for (Function *F : reachableFunctions(Kernel))
    for (Instruction &I : instructions(*F)) {
      if (auto *Load = dyn_cast<LoadInst>(&I); Load && (Load->isVolatile() || Load->isAtomic()))
        return "reads memory other blocks may write while it runs (a volatile or atomic load): a block waiting "
               "for a skipped one would never finish";
      if (isa<AtomicCmpXchgInst>(I) || (isa<AtomicRMWInst>(I) && !I.use_empty()))
        return "uses the result of an atomic: a block waiting for a skipped one would never finish";
      if (auto *Call = dyn_cast<CallBase>(&I)) {
        // Inline assembly by the same rules as IR (lib/inline_asm.c): register work, plain loads, stores,
        // reductions and fences keep the form, and so do reads of %smid or of the shared-memory layout (the
        // form runs the kernel as written); a volatile or relaxed/acquire load, an atom (its result comes
        // back) or anything else unsafe refuses it.
        if (Call->isInlineAsm()) {
          preempt_asm_summary Asm = classifyInlineAsm(*Call);
          if (!Asm.drain.why)
            continue;
          std::string Reason = "has " + describeInlineAsm(*Call, Asm.drain);
          if (Asm.drain.hazard != PREEMPT_ASM_NO_HAZARD)
            return Reason;
          return Reason + ": a block waiting for a skipped one would never finish";
        }
        Function *Callee = Call->getCalledFunction();
        if (!Callee || (Callee->isDeclaration() && !Callee->isIntrinsic()))
          return "calls a function whose code the pass cannot see";
      }
    }
  return "";
}

static bool isPlainBarrier(const CallBase &Call) {
  const Function *Callee = Call.getCalledFunction();
  if (!Callee || (Callee->getIntrinsicID() != Intrinsic::nvvm_barrier_cta_sync_aligned_all))
    return false;
  const auto *Id = dyn_cast<ConstantInt>(Call.getArgOperand(0));
  return Id && Id->isZero();
}

// Whether a write by `I` could be seen outside its block: anything but a
// store into shared memory or the thread's own stack.
static bool writesOutsideBlock(Instruction &I) {
  if (!I.mayWriteToMemory())
    return false;
  if (auto *Store = dyn_cast<StoreInst>(&I); Store && !Store->isVolatile() && !Store->isAtomic()) {
    SmallVector<const Value *, 4> Objects;
    getUnderlyingObjects(Store->getPointerOperand(), Objects);
    return !all_of(Objects, [](const Value *Object) {
      if (isa<AllocaInst>(Object))
        return true;
      const auto *Global = dyn_cast<GlobalVariable>(Object);
      return Global && Global->getAddressSpace() == 3;
    });
  }
  if (auto *Intrinsic = dyn_cast<IntrinsicInst>(&I))
    return !Intrinsic->isAssumeLikeIntrinsic() && !Intrinsic->isLifetimeStartOrEnd();
  return true;
}

// Whether the blocks of `Region` (reached from `Entry` before the first
// barrier) hold a cycle: a depth-first walk that meets a block still on its
// path.
static bool regionHasCycle(BasicBlock &Entry, const DenseSet<BasicBlock *> &Region) {
  if (!Region.count(&Entry))
    return false;
  DenseSet<BasicBlock *> Done, OnPath;
  SmallVector<std::pair<BasicBlock *, unsigned>, 16> Stack{{&Entry, 0}};
  OnPath.insert(&Entry);
  while (!Stack.empty()) {
    auto &[Block, NextSuccessor] = Stack.back();
    if (NextSuccessor == Block->getTerminator()->getNumSuccessors()) {
      OnPath.erase(Block);
      Done.insert(Block);
      Stack.pop_back();
      continue;
    }
    BasicBlock *Next = Block->getTerminator()->getSuccessor(NextSuccessor++);
    if (!Region.count(Next) || Done.count(Next))
      continue;
    if (OnPath.count(Next))
      return true;
    OnPath.insert(Next);
    Stack.push_back({Next, 0});
  }
  return false;
}

// The kernel's first barrier, if the fused gate may take its place: every
// path from entry reaches that one barrier (no return, no other barrier, no
// call, no loop before it) and nothing before it writes outside the block. Else
// nullptr and why in `Why`.
static CallBase *fusableFirstBarrier(Function &Kernel, std::string &Why) {
  if (none_of(instructions(Kernel), [](Instruction &I) {
        auto *Call = dyn_cast<CallBase>(&I);
        return Call && isCtaBarrier(*Call);
      })) {
    Why = "it has no barrier";
    return nullptr;
  }
  CallBase *First = nullptr;
  SmallVector<BasicBlock *, 16> Work{&Kernel.getEntryBlock()};
  DenseSet<BasicBlock *> Seen{&Kernel.getEntryBlock()};
  DenseSet<BasicBlock *> Region; // blocks before the first barrier, the barrier's own excluded
  while (!Work.empty()) {
    BasicBlock *Block = Work.pop_back_val();
    bool Stopped = false;
    for (Instruction &I : *Block) {
      auto *Call = dyn_cast<CallBase>(&I);
      if (Call && isCtaBarrier(*Call)) {
        if (!isPlainBarrier(*Call) || (First && First != Call)) {
          Why = "its first barrier is not one plain __syncthreads on every path";
          return nullptr;
        }
        First = Call;
        Stopped = true;
        break;
      }
      // Inline assembly the drain form kept is register work or memory: what it may write decides.
      if (Call && Call->isInlineAsm()) {
        if (classifyInlineAsm(*Call).writes.why) {
          Why = "it has inline assembly that may write memory before its first barrier";
          return nullptr;
        }
        continue;
      }
      if (Call && (!Call->getCalledFunction() || !Call->getCalledFunction()->isIntrinsic())) {
        Why = "it calls a function before its first barrier";
        return nullptr;
      }
      if (writesOutsideBlock(I)) {
        Why = "it writes memory outside the block before its first barrier";
        return nullptr;
      }
      if (isa<ReturnInst>(I) || isa<UnreachableInst>(I)) {
        Why = "a path from entry ends before any barrier";
        return nullptr;
      }
    }
    if (Stopped)
      continue;
    Region.insert(Block);
    for (BasicBlock *Next : successors(Block))
      if (Seen.insert(Next).second)
        Work.push_back(Next);
  }
  // A fused gate decides at that barrier: work before it runs whatever the bit says. A loop there can be a
  // block's whole task (long_kernel's, bench/preemption/bench_kernels.cuh, whose barrier follows its loop: its
  // drained launches took 13.6 ms to give the GPU up on the H100, against 131 us persistent), so a loop before
  // the barrier means the gate goes at entry.
  if (regionHasCycle(Kernel.getEntryBlock(), Region)) {
    Why = "a loop runs before its first barrier";
    return nullptr;
  }
  return First;
}

void addDrainForm(Function &Kernel) {
  OptimizationRemarkEmitter Remarks(&Kernel);
  std::string Name = Kernel.getName().str();
  if (std::string Reason = whyNoDrainForm(Kernel); !Reason.empty()) {
    Remarks.emit([&] {
      return OptimizationRemarkMissed(PassName, "NoDrainForm", &Kernel)
             << "kernel '" << ore::NV("Kernel", Name) << "': no drain form (launches stay persistent): it "
             << Reason;
    });
    return;
  }
  Module &M = *Kernel.getParent();
  LLVMContext &Context = M.getContext();
  Function *Drain = copyKernel(Kernel, (PREEMPT_DRAIN_KERNEL_PREFIX + Name), ".drain",
                               {PointerType::get(Context, 0)});
  if (!Drain)
    return; // taken: launches stay persistent
  Argument *Control = Drain->getArg(Drain->arg_size() - 1);
  Control->setName("preempt.control");
  Drain->addParamAttr(Control->getArgNo(), Attribute::NoUndef);
  std::string NoFusion;
  CallBase *FirstBarrier = fusableFirstBarrier(*Drain, NoFusion);

  // Entry: thread 0 reads its SM's yield word, left in flight (its bit is
  // taken where the barrier needs it).
  BasicBlock *Entry = &Drain->getEntryBlock();
  BasicBlock::iterator FirstNonAlloca = Entry->begin();
  while (isa<AllocaInst>(*FirstNonAlloca))
    ++FirstNonAlloca;
  BasicBlock *Body = Entry->splitBasicBlock(FirstNonAlloca, "preempt.drain.body");
  Entry->getTerminator()->eraseFromParent();
  BasicBlock *Read = BasicBlock::Create(Context, "preempt.drain.read", Drain, Body);
  BasicBlock *Join = BasicBlock::Create(Context, "preempt.drain.gate", Drain, Body);
  IRBuilder<> Builder(Entry);
  Type *Int32 = Builder.getInt32Ty();
  auto Sreg = [&](Intrinsic::ID Id) { return Builder.CreateIntrinsic(Int32, Id, ArrayRef<Value *>{}); };
  Value *ThreadBits = Builder.CreateOr(Builder.CreateOr(Sreg(Intrinsic::nvvm_read_ptx_sreg_tid_x),
                                                        Sreg(Intrinsic::nvvm_read_ptx_sreg_tid_y)),
                                       Sreg(Intrinsic::nvvm_read_ptx_sreg_tid_z));
  Value *IsFirstThread = Builder.CreateICmpEQ(ThreadBits, Builder.getInt32(0), "preempt.first.thread");
  Value *Sm = Builder.CreateURem(Sreg(Intrinsic::nvvm_read_ptx_sreg_smid), Builder.getInt32(PREEMPT_MAX_SM_IDS));
  Builder.CreateCondBr(IsFirstThread, Read, Join);
  Builder.SetInsertPoint(Read);
  Value *WordAddress = Builder.CreateGEP(
      Int32, Builder.CreateConstGEP1_64(Builder.getInt8Ty(), Control, offsetof(preempt_control_block, yield_mask)),
      Builder.CreateUDiv(Sm, Builder.getInt32(32)));
  LoadInst *Word = Builder.CreateAlignedLoad(Int32, WordAddress, Align(4), "preempt.yield.word");
  Word->setAtomic(AtomicOrdering::Monotonic, Context.getOrInsertSyncScopeID("device"));
  Builder.CreateBr(Join);
  Builder.SetInsertPoint(Join);
  PHINode *Seen = Builder.CreatePHI(Int32, 2, "preempt.yield.seen");
  Seen->addIncoming(Builder.getInt32(0), Entry);
  Seen->addIncoming(Word, Read);
  Builder.CreateBr(Body);

  // The gate: the OR-barrier, and the way out for a block that yields.
  Instruction *GateAt = FirstBarrier ? FirstBarrier : Join->getTerminator();
  Builder.SetInsertPoint(GateAt);
  Value *Bit = Builder.CreateTrunc(Builder.CreateLShr(Seen, Builder.CreateURem(Sm, Builder.getInt32(32))),
                                   Builder.getInt1Ty(), "preempt.yields");
  // Through redux.sync: ptxas takes a barrier reduction's result for
  // per-thread, and after a branch on it that leaves the kernel it kept
  // nothing of the body on the uniform datapath (the bench's gemm: 60
  // registers against its kernel's 48, 4 CTAs per SM against 5).
  Value *Yields = warpUniform(Builder,
                              Builder.CreateIntrinsic(Intrinsic::nvvm_barrier_cta_red_or_aligned_all, ArrayRef<Type *>{},
                                                      {Builder.getInt32(0), Bit}, nullptr, "preempt.block.yields"),
                              M.getDataLayout());
  BasicBlock *Before = GateAt->getParent();
  BasicBlock *Rest = Before->splitBasicBlock(GateAt->getIterator(), "preempt.drain.run");
  if (FirstBarrier)
    FirstBarrier->eraseFromParent(); // the OR-barrier is that barrier
  Before->getTerminator()->eraseFromParent();
  BasicBlock *Leave = BasicBlock::Create(Context, "preempt.drain.leave", Drain);
  BasicBlock *Record = BasicBlock::Create(Context, "preempt.drain.record", Drain);
  BasicBlock *Exit = BasicBlock::Create(Context, "preempt.drain.exit", Drain);
  Builder.SetInsertPoint(Before);
  Builder.CreateCondBr(Yields, Leave, Rest);
  Builder.SetInsertPoint(Leave);
  Builder.CreateCondBr(IsFirstThread, Record, Exit);
  // Thread 0 sets the block's bit: its task id, x fastest (lib/task_grid.c).
  Builder.SetInsertPoint(Record);
  Value *Task = Builder.CreateAdd(
      Sreg(Intrinsic::nvvm_read_ptx_sreg_ctaid_x),
      Builder.CreateMul(Sreg(Intrinsic::nvvm_read_ptx_sreg_nctaid_x),
                        Builder.CreateAdd(Sreg(Intrinsic::nvvm_read_ptx_sreg_ctaid_y),
                                          Builder.CreateMul(Sreg(Intrinsic::nvvm_read_ptx_sreg_nctaid_y),
                                                            Sreg(Intrinsic::nvvm_read_ptx_sreg_ctaid_z)))),
      "preempt.task");
  Value *UndoneField =
      Builder.CreateConstGEP1_64(Builder.getInt8Ty(), Control, offsetof(preempt_control_block, undone));
  Value *Undone = Builder.CreateAlignedLoad(Builder.getPtrTy(), UndoneField, Align(8), "preempt.undone");
  Value *UndoneWord = Builder.CreateGEP(Int32, Undone, Builder.CreateUDiv(Task, Builder.getInt32(32)));
  Builder.CreateAtomicRMW(AtomicRMWInst::Or, UndoneWord,
                          Builder.CreateShl(Builder.getInt32(1), Builder.CreateURem(Task, Builder.getInt32(32))),
                          Align(4), AtomicOrdering::Monotonic, Context.getOrInsertSyncScopeID("device"));
  Builder.CreateBr(Exit);
  Builder.SetInsertPoint(Exit);
  Builder.CreateRetVoid();

  Remarks.emit([&] {
    OptimizationRemark Remark(PassName, "DrainForm", &Kernel);
    Remark << "kernel '" << ore::NV("Kernel", Name) << "': drain form kept, its gate ";
    if (FirstBarrier)
      Remark << "fused with its first barrier";
    else
      Remark << "a barrier added at entry (" << NoFusion << ")";
    return Remark;
  });
}

} // namespace preempt
