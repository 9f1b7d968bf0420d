// KernelSafety.cpp: the refusal rules of persistent-thread conversion, as an analysis with a reason.
// docs/persistent-threads.md "Refusals"; barrier rule from FLEP §4.1 (a return becomes the end of a task).
#include "KernelSafety.h"

#include "preempt/barrier_divergence.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Analysis/PostDominators.h"
#include "llvm/Analysis/UniformityAnalysis.h"
#include "llvm/Analysis/VectorUtils.h"
#include "llvm/IR/InlineAsm.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/IntrinsicsNVPTX.h"
#include "llvm/IR/DebugInfoMetadata.h"
#include "llvm/IR/Dominators.h"
#include "llvm/Transforms/Utils/Cloning.h"
#include "llvm/Transforms/Utils/PromoteMemToReg.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/IR/Operator.h"
#include "llvm/Support/raw_ostream.h"

#include <vector>

using namespace llvm;

namespace preempt {

SetVector<Function *> reachableFunctions(Function &Kernel) {
  SetVector<Function *> Reached;
  Reached.insert(&Kernel);
  for (size_t Index = 0; Index < Reached.size(); ++Index)
    for (Instruction &I : instructions(*Reached[Index]))
      if (auto *Call = dyn_cast<CallBase>(&I))
        if (Function *Callee = Call->getCalledFunction(); Callee && !Callee->isDeclaration())
          Reached.insert(Callee);
  return Reached;
}

// External functions whose behaviour does not depend on the grid or on
// which blocks run together.
static bool isHarmlessExternal(StringRef Name) {
  static const StringSet<> Allowed = {"vprintf", "malloc", "free", "__assertfail", "__assert_fail"};
  return Allowed.contains(Name);
}

preempt_asm_summary classifyInlineAsm(const CallBase &Call) {
  const auto &Asm = *cast<InlineAsm>(Call.getCalledOperand());
  StringRef Text = Asm.getAsmString();
  std::string Constraints = Asm.getConstraintString().str();
  preempt_asm_summary Summary;
  preempt_asm_classify(Text.data(), Text.size(), Constraints.c_str(), Asm.hasSideEffects(), &Summary);
  return Summary;
}

std::string describeInlineAsm(const CallBase &Call, const preempt_asm_finding &Finding) {
  std::string Description = "inline assembly that ";
  Description += Finding.why ? Finding.why : "the pass cannot classify";
  StringRef Text = cast<InlineAsm>(Call.getCalledOperand())->getAsmString();
  if (Finding.length == 0 || Finding.offset + (uint64_t)Finding.length > Text.size())
    return Description;
  // The instruction on one line, its white space runs one space, at most 60 characters.
  std::string Quoted;
  for (char C : Text.substr(Finding.offset, Finding.length)) {
    bool Space = C == ' ' || C == '\t' || C == '\n' || C == '\r';
    if (Space && (Quoted.empty() || Quoted.back() == ' '))
      continue;
    Quoted += Space ? ' ' : C;
  }
  if (Quoted.size() > 60)
    Quoted = Quoted.substr(0, 57) + "...";
  return Description + " ('" + Quoted + "')";
}

// AMDGPU's inline assembly, which the pass does not parse: any of these substrings refuses the kernel
// (s_endpgm ends the wave; s_memtime and s_memrealtime read clocks).
static const char *unsafeAmdgpuAsmReason(const InlineAsm &Asm) {
  StringRef Text = Asm.getAsmString();
  static const char *const Tokens[] = {"ctaid",    "nctaid",    "exit",     "bar.",     "barrier",
                                       "clock",    "globaltimer", "cluster", "envreg",   "s_getreg",
                                       "workgroup", "s_endpgm",  "s_memtime", "s_memrealtime"};
  for (const char *Token : Tokens)
    if (Text.contains(Token))
      return "has inline assembly that touches grid registers, barriers, clocks or thread exit";
  return nullptr;
}

// NVPTX: only what a task loop changes refuses the kernel (grid registers, clocks, environment registers, CTA
// barriers, ending the thread, leaving the asm: PREEMPT_ASM_CONVERSION_HAZARDS); the remark quotes the
// instruction. What the drain form and in-task points refuse besides, they say themselves.
static std::string unsafeInlineAsmReason(const CallBase &Call, GpuTarget Target) {
  if (Target != GpuTarget::NVPTX) {
    const char *Why = unsafeAmdgpuAsmReason(*cast<InlineAsm>(Call.getCalledOperand()));
    return Why ? Why : "";
  }
  preempt_asm_summary Summary = classifyInlineAsm(Call);
  return Summary.conversion.why ? "has " + describeInlineAsm(Call, Summary.conversion) : "";
}

// AMDGPU: uses of the dispatch packet must be loads at constant offsets, and
// the grid-size fields (bytes 12..23) must be whole 32-bit loads the pass can
// rewrite. Only inspects: the walk below visits, it changes nothing.
static bool dispatchUsesAreRewritable(CallBase &DispatchPtr, const DataLayout &DL) {
  bool Rewritable = true;
  bool ConstantOffsets = forEachDispatchLoad(DispatchPtr, [&](LoadInst &Load, int64_t Offset) {
    int64_t Size = DL.getTypeStoreSize(Load.getType());
    bool TouchesGridSize = Offset < 24 && Offset + Size > 12;
    if (TouchesGridSize && !(Load.getType()->isIntegerTy(32) && Offset % 4 == 0))
      Rewritable = false;
  });
  return ConstantOffsets && Rewritable;
}

using CallPicker = function_ref<bool(const CallBase &)>;

// Whether `F`, or a function it calls, makes a call `Picks` picks (memoized per picker by the caller's `Memo`;
// a call cycle adds nothing of its own).
static bool containsCall(Function &F, CallPicker Picks, DenseMap<Function *, bool> &Memo) {
  auto [It, Inserted] = Memo.try_emplace(&F, false);
  if (!Inserted)
    return It->second;
  bool Found = false;
  for (Instruction &I : instructions(F))
    if (auto *Call = dyn_cast<CallBase>(&I)) {
      Function *Callee = Call->getCalledFunction();
      if (Picks(*Call) || (Callee && !Callee->isDeclaration() && containsCall(*Callee, Picks, Memo))) {
        Found = true;
        break;
      }
    }
  Memo[&F] = Found;
  return Found;
}

// The first call of `BB` that `Picks` picks, made there or in a function it calls; null when none.
static const Instruction *firstCall(const BasicBlock &BB, CallPicker Picks, DenseMap<Function *, bool> &Memo) {
  for (const Instruction &I : BB)
    if (auto *Call = dyn_cast<CallBase>(&I)) {
      Function *Callee = Call->getCalledFunction();
      if (Picks(*Call) || (Callee && !Callee->isDeclaration() && containsCall(*Callee, Picks, Memo)))
        return &I;
    }
  return nullptr;
}

static std::string checkInstructions(Function &F, bool IsKernel, GpuTarget Target) {
  std::string Reason;
  raw_string_ostream Out(Reason);
  const DataLayout &DL = F.getDataLayout();
  for (BasicBlock &BB : F) {
    for (Instruction &I : BB) {
      if (auto *Alloca = dyn_cast<AllocaInst>(&I)) {
        if (IsKernel && (&BB != &F.getEntryBlock() || !Alloca->isStaticAlloca()))
          Out << "has a dynamic stack allocation";
      } else if (auto *Call = dyn_cast<CallBase>(&I)) {
        if (Call->isInlineAsm()) {
          Out << unsafeInlineAsmReason(*Call, Target);
        } else if (Function *Callee = Call->getCalledFunction()) {
          if (const char *Why = unsafeIntrinsicReason(*Call))
            Out << Why;
          else if (Target == GpuTarget::AMDGPU && isDispatchPointer(*Call) && !dispatchUsesAreRewritable(*Call, DL))
            Out << "reads the dispatch packet in a way the pass cannot remap";
          else if (Callee->isDeclaration() && !Callee->isIntrinsic() && !isHarmlessExternal(Callee->getName()))
            Out << "calls external function '" << Callee->getName()
                << "' (dynamic parallelism, grid sync or unknown code)";
        } else {
          Out << "makes an indirect call";
        }
      }
      if (!Reason.empty()) {
        if (!IsKernel)
          Out << " (in '" << F.getName() << "')";
        return Reason;
      }
    }
  }
  return Reason;
}

// Registers that hold the same value for every thread of a CTA.
static bool isCtaUniformRegister(const CallBase &Call) {
  switch (Call.getIntrinsicID()) {
  case Intrinsic::nvvm_read_ptx_sreg_ctaid_x: case Intrinsic::nvvm_read_ptx_sreg_ctaid_y:
  case Intrinsic::nvvm_read_ptx_sreg_ctaid_z: case Intrinsic::nvvm_read_ptx_sreg_nctaid_x:
  case Intrinsic::nvvm_read_ptx_sreg_nctaid_y: case Intrinsic::nvvm_read_ptx_sreg_nctaid_z:
  case Intrinsic::nvvm_read_ptx_sreg_ntid_x: case Intrinsic::nvvm_read_ptx_sreg_ntid_y:
  case Intrinsic::nvvm_read_ptx_sreg_ntid_z: case Intrinsic::nvvm_read_ptx_sreg_nsmid:
  case Intrinsic::nvvm_read_ptx_sreg_warpsize:
    return true;
  default:
    return false;
  }
}

// In the scratch copy, `Call` (an element-wise intrinsic: min, max, abs,
// sqrt, fma, ...) becomes a select on a compare of each operand with itself:
// like the call, a pure function of its operands, and unlike a call, uniform
// exactly when they all are. NVPTX's TTI takes every call's result for
// divergent, intrinsics' too: a nested loop whose trip count was
// `min(cols, 8)` had an llvm.smin in its exit test, which made the loop's
// exits look divergent (test/lit/cuda/intask_nested.cu).
static void replaceByUniformityTwin(IntrinsicInst &Call) {
  Type *Result = Call.getType();
  if (!isTriviallyVectorizable(Call.getIntrinsicID()) || Result->isVoidTy() || !Call.doesNotAccessMemory() ||
      Call.isConvergent())
    return;
  Value *AllUniform = nullptr;
  for (Value *Operand : Call.args()) {
    if (isa<Constant>(Operand))
      continue;
    Type *Type = Operand->getType();
    Instruction *Same;
    if (Type->isIntOrIntVectorTy() || Type->isPtrOrPtrVectorTy())
      Same = new ICmpInst(Call.getIterator(), ICmpInst::ICMP_EQ, Operand, Operand);
    else if (Type->isFPOrFPVectorTy())
      Same = new FCmpInst(Call.getIterator(), FCmpInst::FCMP_OEQ, Operand, Operand);
    else
      return; // left a call: divergent, which is safe
    if (Type->isVectorTy())
      Same = ExtractElementInst::Create(Same, ConstantInt::get(IntegerType::get(Call.getContext(), 32), 0), "",
                                        Call.getIterator());
    AllUniform = AllUniform ? BinaryOperator::CreateAnd(AllUniform, Same, "", Call.getIterator()) : Same;
  }
  if (!AllUniform)
    return; // constant operands: a constant result, which the optimizer would have folded
  Constant *Zero = Constant::getNullValue(Result);
  Call.replaceAllUsesWith(SelectInst::Create(AllUniform, Zero, Zero, "", Call.getIterator()));
  Call.eraseFromParent();
}

// Uniformity runs on a scratch copy of the kernel, for two reasons. NVPTX's
// TTI calls every call's result divergent, block and grid registers included,
// which would refuse almost every kernel with a barrier: in the copy those
// CTA-uniform registers become kernel arguments, which are uniform. And at -O0
// values live in allocas, whose loads are divergent to the analysis: the copy
// gets mem2reg. Neither change alters the control flow, so blocks map 1:1.
Function *makeUniformityScratch(Function &Kernel, GpuTarget Target, ValueToValueMapTy &Map, bool MemoryDivergent) {
  SmallVector<CallBase *, 16> UniformReads;
  if (Target == GpuTarget::NVPTX)
    for (Instruction &I : instructions(Kernel))
      if (auto *Call = dyn_cast<CallBase>(&I); Call && isCtaUniformRegister(*Call))
        UniformReads.push_back(Call);
  SmallVector<Type *, 16> Params(Kernel.getFunctionType()->params());
  for (CallBase *Read : UniformReads)
    Params.push_back(Read->getType());
  Module &M = *Kernel.getParent();
  Function *Scratch = Function::Create(FunctionType::get(Kernel.getReturnType(), Params, false),
                                       GlobalValue::PrivateLinkage, "preempt.uniformity.scratch", M);
  Scratch->setCallingConv(Kernel.getCallingConv());
  for (auto [Old, New] : zip(Kernel.args(), Scratch->args()))
    Map[&Old] = &New;
  SmallVector<ReturnInst *, 4> Returns;
  CloneFunctionInto(Scratch, &Kernel, Map, CloneFunctionChangeType::LocalChangesOnly, Returns);
  for (auto [Index, Read] : enumerate(UniformReads)) {
    auto *Copy = cast<Instruction>(Map[Read]);
    Copy->replaceAllUsesWith(Scratch->getArg(Kernel.arg_size() + Index));
    Copy->eraseFromParent();
  }
  for (Instruction &I : make_early_inc_range(instructions(*Scratch)))
    if (auto *Call = dyn_cast<IntrinsicInst>(&I))
      replaceByUniformityTwin(*Call);
  SmallVector<AllocaInst *, 16> Promotable;
  for (Instruction &I : Scratch->getEntryBlock())
    if (auto *Alloca = dyn_cast<AllocaInst>(&I); Alloca && isAllocaPromotable(Alloca))
      Promotable.push_back(Alloca);
  if (!Promotable.empty()) {
    DominatorTree Dominators(*Scratch);
    PromoteMemToReg(Promotable, Dominators);
  }
  if (!MemoryDivergent)
    return Scratch;
  // Every value read from memory comes from an opaque call, divergent to
  // NVPTX's TTI: a load from a uniform address may still give warps
  // different values when a write races with it.
  SmallVector<Instruction *, 16> Reads;
  for (Instruction &I : instructions(*Scratch))
    if (!I.getType()->isVoidTy() && !isa<PHINode>(I) && I.mayReadOrWriteMemory())
      Reads.push_back(&I);
  for (Instruction *Read : Reads) {
    Function *Opaque = Function::Create(FunctionType::get(Read->getType(), false), GlobalValue::ExternalLinkage,
                                        "preempt.uniformity.memory", M);
    Read->replaceAllUsesWith(CallInst::Create(Opaque, "", std::next(Read->getIterator())));
  }
  return Scratch;
}

void eraseUniformityScratch(Function *Scratch, FunctionAnalysisManager &FAM) {
  SmallVector<Function *, 8> Opaque;
  for (Instruction &I : instructions(*Scratch))
    if (auto *Call = dyn_cast<CallInst>(&I))
      if (Function *Callee = Call->getCalledFunction(); Callee && Callee->getName().starts_with("preempt.uniformity.memory"))
        Opaque.push_back(Callee);
  FAM.clear(*Scratch, Scratch->getName());
  Scratch->eraseFromParent();
  for (Function *Callee : Opaque)
    Callee->eraseFromParent();
}

static const Value *stripCasts(const Value *V) {
  while (auto *Cast = dyn_cast<CastInst>(V))
    V = Cast->getOperand(0);
  return V;
}

static bool isRegister(const Value *V, Intrinsic::ID Register) {
  auto *Call = dyn_cast<IntrinsicInst>(stripCasts(V));
  return Call && Call->getIntrinsicID() == Register;
}

// A op B with `Match(A, B)` in either order.
static bool isCommutative(const Value *V, Instruction::BinaryOps Op, function_ref<bool(const Value *, const Value *)> Match) {
  auto *Binary = dyn_cast<BinaryOperator>(stripCasts(V));
  return Binary && Binary->getOpcode() == Op &&
         (Match(Binary->getOperand(0), Binary->getOperand(1)) || Match(Binary->getOperand(1), Binary->getOperand(0)));
}

// The thread's linear rank in its CTA, threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z), as
// cooperative groups' thread_rank() computes it: the 32 lanes of a warp are 32 consecutive ranks from a multiple
// of 32, whatever the block's shape.
static bool isLinearRank(const Value *V) {
  auto IsRow = [](const Value *Row) {
    return isCommutative(Row, Instruction::Add, [](const Value *Y, const Value *Plane) {
      return isRegister(Y, Intrinsic::nvvm_read_ptx_sreg_tid_y) &&
             isCommutative(Plane, Instruction::Mul, [](const Value *Z, const Value *Height) {
               return isRegister(Z, Intrinsic::nvvm_read_ptx_sreg_tid_z) &&
                      isRegister(Height, Intrinsic::nvvm_read_ptx_sreg_ntid_y);
             });
    });
  };
  return isCommutative(V, Instruction::Add, [&](const Value *X, const Value *Rows) {
    return isRegister(X, Intrinsic::nvvm_read_ptx_sreg_tid_x) &&
           isCommutative(Rows, Instruction::Mul, [&](const Value *Row, const Value *Width) {
             return IsRow(Row) && isRegister(Width, Intrinsic::nvvm_read_ptx_sreg_ntid_x);
           });
  });
}

static bool isThreadIdxX(const Value *V) { return isRegister(V, Intrinsic::nvvm_read_ptx_sreg_tid_x); }

static bool isMultipleOf32(const Value *V, bool AllowZero) {
  auto *C = dyn_cast<ConstantInt>(V);
  return C && !C->isNegative() && C->getZExtValue() % 32 == 0 && (AllowZero || !C->isZero());
}

// A lane-ordered value at warp granularity: r >> k (k >= 5), r / 32m, r & m with no lane bits in m, or a compare
// of r with a multiple of 32, where r is the linear rank (isLinearRank) or, with `OneRow`, threadIdx.x. Each is
// the same for the 32 lanes of a warp: always for the rank; for threadIdx.x when the block is one row of threads
// (the caller's `OneRow`: the kernel reads neither threadIdx.y nor threadIdx.z) or its rows are whole warps.
static bool isWarpGranular(const Instruction &I, bool OneRow) {
  auto Ordered = [&](const Value *V) { return (OneRow && isThreadIdxX(V)) || isLinearRank(V); };
  if (auto *Binary = dyn_cast<BinaryOperator>(&I)) {
    auto *Amount = dyn_cast<ConstantInt>(Binary->getOperand(1));
    if ((Binary->getOpcode() == Instruction::LShr || Binary->getOpcode() == Instruction::AShr) && Amount &&
        Amount->getZExtValue() >= 5)
      return Ordered(Binary->getOperand(0));
    if ((Binary->getOpcode() == Instruction::UDiv || Binary->getOpcode() == Instruction::SDiv) &&
        isMultipleOf32(Binary->getOperand(1), false))
      return Ordered(Binary->getOperand(0));
    // x & ~31 and narrower masks with no lane bits (x / 32 == 1 becomes (x & 992) == 32 at -O2).
    if (auto *Mask = dyn_cast<ConstantInt>(Binary->getOperand(1)); Mask && Binary->getOpcode() == Instruction::And)
      return (Mask->getZExtValue() & 31) == 0 && Ordered(Binary->getOperand(0));
    return false;
  }
  if (auto *Compare = dyn_cast<ICmpInst>(&I)) {
    // x < 32m, x >= 32m (and their signed spellings: threadIdx.x is never negative); x == c is not.
    if (!Compare->isRelational())
      return false;
    return (Ordered(Compare->getOperand(0)) && isMultipleOf32(Compare->getOperand(1), true) &&
            (Compare->getPredicate() == ICmpInst::ICMP_ULT || Compare->getPredicate() == ICmpInst::ICMP_SLT ||
             Compare->getPredicate() == ICmpInst::ICMP_UGE || Compare->getPredicate() == ICmpInst::ICMP_SGE)) ||
           (Ordered(Compare->getOperand(1)) && isMultipleOf32(Compare->getOperand(0), true) &&
            (Compare->getPredicate() == ICmpInst::ICMP_UGT || Compare->getPredicate() == ICmpInst::ICMP_SGT ||
             Compare->getPredicate() == ICmpInst::ICMP_ULE || Compare->getPredicate() == ICmpInst::ICMP_SLE));
  }
  return false;
}

// A warp-synchronous operation whose result every lane that runs it gets alike: a vote (all, any, uni, ballot),
// a redux.sync, a shuffle from one fixed lane. Where every lane of the warp runs it (the rule's other half checks
// that), a branch on it keeps the warp together: CUB's decoupled look-back loops until WARP_ALL says so.
static bool isWarpUniformResult(const Instruction &I) {
  auto *Call = dyn_cast<IntrinsicInst>(&I);
  if (!Call)
    return false;
  switch (Call->getIntrinsicID()) {
  case Intrinsic::nvvm_vote_all_sync: case Intrinsic::nvvm_vote_any_sync:
  case Intrinsic::nvvm_vote_uni_sync: case Intrinsic::nvvm_vote_ballot_sync:
  case Intrinsic::nvvm_redux_sync_add: case Intrinsic::nvvm_redux_sync_and: case Intrinsic::nvvm_redux_sync_or:
  case Intrinsic::nvvm_redux_sync_xor: case Intrinsic::nvvm_redux_sync_max: case Intrinsic::nvvm_redux_sync_min:
  case Intrinsic::nvvm_redux_sync_umax: case Intrinsic::nvvm_redux_sync_umin:
    return true;
  case Intrinsic::nvvm_shfl_sync_idx_i32: case Intrinsic::nvvm_shfl_sync_idx_f32:
    return isa<ConstantInt>(Call->getArgOperand(2)); // shfl.sync.idx(mask, value, lane, clamp)
  default:
    return false;
  }
}

static bool readsThreadIdxYZ(Function &Kernel) {
  for (Function *F : reachableFunctions(Kernel))
    for (Instruction &I : instructions(*F))
      if (auto *Call = dyn_cast<IntrinsicInst>(&I))
        if (Call->getIntrinsicID() == Intrinsic::nvvm_read_ptx_sreg_tid_y ||
            Call->getIntrinsicID() == Intrinsic::nvvm_read_ptx_sreg_tid_z)
          return true;
  return false;
}

// Blocks whose terminator is thread-divergent. With `WarpLevel`, lane-ordered values at warp granularity
// (isWarpGranular; threadIdx.x among them with `OneRow`) count as uniform: the branches left diverge inside a warp.
static DenseSet<const BasicBlock *> divergentBranches(Function &Kernel, GpuTarget Target,
                                                      FunctionAnalysisManager &FAM, bool WarpLevel = false,
                                                      bool OneRow = false) {
  ValueToValueMapTy Map;
  Function *Scratch = makeUniformityScratch(Kernel, Target, Map, false);
  SmallVector<GlobalVariable *, 8> Slots;
  if (WarpLevel) {
    // Matched on the kernel itself: in the copy, blockDim's registers are already arguments.
    SmallVector<Instruction *, 8> Granular;
    for (Instruction &I : instructions(Kernel))
      if (isWarpGranular(I, OneRow) || isWarpUniformResult(I))
        if (auto *Copy = dyn_cast_or_null<Instruction>(Map.lookup(&I)))
          Granular.push_back(Copy);
    // Each becomes a load from an opaque global (address space 1, which NVPTX's TTI takes for uniform).
    for (Instruction *I : Granular) {
      auto *Slot = new GlobalVariable(*Kernel.getParent(), I->getType(), false, GlobalValue::ExternalLinkage, nullptr,
                                      "preempt.uniformity.warp", nullptr, GlobalValue::NotThreadLocal, 1);
      Slots.push_back(Slot);
      auto *Read = new LoadInst(I->getType(), Slot, "", std::next(I->getIterator()));
      I->replaceAllUsesWith(Read);
      if (!I->mayHaveSideEffects())
        I->eraseFromParent();
    }
  }
  DenseSet<const BasicBlock *> Divergent;
  {
    auto &Uniformity = FAM.getResult<UniformityInfoAnalysis>(*Scratch);
    for (BasicBlock &BB : Kernel)
      if (Uniformity.hasDivergentTerminator(*cast<BasicBlock>(Map[&BB])))
        Divergent.insert(&BB);
  }
  eraseUniformityScratch(Scratch, FAM);
  for (GlobalVariable *Slot : Slots)
    Slot->eraseFromParent();
  return Divergent;
}

// The first instruction of a block that `Hit` picks (null: none).
using HitFinder = function_ref<const Instruction *(const BasicBlock &)>;

// The first hit that a thread-divergent branch (a block of `Divergent`) leads to before its threads meet again
// (lib/barrier_divergence.c); null when none.
static const Instruction *hitUnderDivergence(Function &Kernel, const DenseSet<const BasicBlock *> &Divergent,
                                             FunctionAnalysisManager &FAM, HitFinder Hit) {
  auto &PostDom = FAM.getResult<PostDominatorTreeAnalysis>(Kernel);
  DenseMap<const BasicBlock *, uint32_t> IndexOf;
  std::vector<const BasicBlock *> Blocks;
  for (BasicBlock &BB : Kernel) {
    IndexOf[&BB] = Blocks.size();
    Blocks.push_back(&BB);
  }
  std::vector<std::vector<uint32_t>> Successors(Blocks.size());
  std::vector<preempt_cfg_block> Graph(Blocks.size());
  std::vector<const Instruction *> FirstHit(Blocks.size(), nullptr);
  for (size_t Index = 0; Index < Blocks.size(); ++Index) {
    const BasicBlock *BB = Blocks[Index];
    for (const BasicBlock *Succ : successors(BB))
      Successors[Index].push_back(IndexOf.lookup(Succ));
    preempt_cfg_block &Node = Graph[Index];
    Node.successors = Successors[Index].data();
    Node.successor_count = Successors[Index].size();
    const DomTreeNode *PostDomNode = PostDom.getNode(BB);
    const DomTreeNode *Parent = PostDomNode ? PostDomNode->getIDom() : nullptr;
    Node.post_dominator = Parent && Parent->getBlock() ? IndexOf.lookup(Parent->getBlock()) : PREEMPT_NO_BLOCK;
    Node.has_divergent_branch = Divergent.contains(BB);
    FirstHit[Index] = Hit(*BB);
    Node.has_barrier = FirstHit[Index] != nullptr;
  }
  uint32_t Branch = PREEMPT_NO_BLOCK;
  uint32_t Found = preempt_find_divergent_barrier(Graph.data(), Graph.size(), &Branch);
  if (Found == PREEMPT_NO_BLOCK)
    return nullptr;
  return FirstHit[Found] ? FirstHit[Found] : &Blocks[Found]->front();
}

// The line in the kernel's own source: an operation inlined from a header (CUDA's __shfl_down_sync) is named
// where the kernel called it.
static std::string atLine(const Instruction *At) {
  if (!At || !At->getDebugLoc())
    return "";
  const DILocation *Location = At->getDebugLoc().get();
  while (const DILocation *Caller = Location->getInlinedAt())
    Location = Caller;
  return " at line " + std::to_string(Location->getLine());
}

// FLEP §4.1: a return in the body becomes "end of task". A thread that leaves
// early then waits at the task barrier while its siblings wait at a barrier of
// the body, so every barrier must be reached by all threads of the CTA or none.
static std::string checkBarrierDivergence(Function &Kernel, GpuTarget Target, FunctionAnalysisManager &FAM,
                                          DenseMap<Function *, bool> &BarrierMemo) {
  DenseSet<const BasicBlock *> Divergent = divergentBranches(Kernel, Target, FAM);
  const Instruction *At = hitUnderDivergence(
      Kernel, Divergent, FAM, [&](const BasicBlock &BB) { return firstCall(BB, isCtaBarrier, BarrierMemo); });
  if (!At)
    return "";
  std::string Line = atLine(At);
  return "reaches a barrier under thread-divergent control flow" + (Line.empty() ? "" : " (barrier" + Line + ")") +
         ": a thread that returns early there would skip it";
}

// A mask of the lanes that run with the thread (__activemask(), a ballot, or such a mask narrowed by an and).
static bool isRunningLanesMask(const Value *V) {
  V = stripCasts(V);
  if (auto *And = dyn_cast<BinaryOperator>(V); And && And->getOpcode() == Instruction::And)
    return isRunningLanesMask(And->getOperand(0)) || isRunningLanesMask(And->getOperand(1));
  auto *Call = dyn_cast<IntrinsicInst>(V);
  if (!Call)
    return false;
  switch (Call->getIntrinsicID()) {
  case Intrinsic::nvvm_activemask: case Intrinsic::nvvm_vote_ballot: case Intrinsic::nvvm_vote_ballot_sync:
    return true;
  default:
    return false;
  }
}

// A warp-synchronous operation whose member mask may name lanes that do not run it: any mask but one of the
// lanes that run (a constant, or a wrapper's parameter as at -O0, is taken to be fixed).
static bool isFixedMaskWarpSync(const CallBase &Call) {
  unsigned MaskOperand = 0;
  switch (Call.getIntrinsicID()) {
  case Intrinsic::nvvm_shfl_sync_bfly_f32: case Intrinsic::nvvm_shfl_sync_bfly_f32p:
  case Intrinsic::nvvm_shfl_sync_bfly_i32: case Intrinsic::nvvm_shfl_sync_bfly_i32p:
  case Intrinsic::nvvm_shfl_sync_down_f32: case Intrinsic::nvvm_shfl_sync_down_f32p:
  case Intrinsic::nvvm_shfl_sync_down_i32: case Intrinsic::nvvm_shfl_sync_down_i32p:
  case Intrinsic::nvvm_shfl_sync_idx_f32: case Intrinsic::nvvm_shfl_sync_idx_f32p:
  case Intrinsic::nvvm_shfl_sync_idx_i32: case Intrinsic::nvvm_shfl_sync_idx_i32p:
  case Intrinsic::nvvm_shfl_sync_up_f32: case Intrinsic::nvvm_shfl_sync_up_f32p:
  case Intrinsic::nvvm_shfl_sync_up_i32: case Intrinsic::nvvm_shfl_sync_up_i32p:
  case Intrinsic::nvvm_vote_all_sync: case Intrinsic::nvvm_vote_any_sync:
  case Intrinsic::nvvm_vote_uni_sync: case Intrinsic::nvvm_vote_ballot_sync:
  case Intrinsic::nvvm_match_any_sync_i32: case Intrinsic::nvvm_match_any_sync_i64:
  case Intrinsic::nvvm_match_all_sync_i32p: case Intrinsic::nvvm_match_all_sync_i64p:
  case Intrinsic::nvvm_bar_warp_sync:
    break;
  case Intrinsic::nvvm_redux_sync_add: case Intrinsic::nvvm_redux_sync_and: case Intrinsic::nvvm_redux_sync_or:
  case Intrinsic::nvvm_redux_sync_xor: case Intrinsic::nvvm_redux_sync_max: case Intrinsic::nvvm_redux_sync_min:
  case Intrinsic::nvvm_redux_sync_umax: case Intrinsic::nvvm_redux_sync_umin:
  case Intrinsic::nvvm_redux_sync_fmax: case Intrinsic::nvvm_redux_sync_fmax_NaN:
  case Intrinsic::nvvm_redux_sync_fmax_abs: case Intrinsic::nvvm_redux_sync_fmax_abs_NaN:
  case Intrinsic::nvvm_redux_sync_fmin: case Intrinsic::nvvm_redux_sync_fmin_NaN:
  case Intrinsic::nvvm_redux_sync_fmin_abs: case Intrinsic::nvvm_redux_sync_fmin_abs_NaN:
    MaskOperand = 1;
    break;
  default:
    return false;
  }
  return !isRunningLanesMask(Call.getArgOperand(MaskOperand));
}

// FLEP §4.1 again, at warp level: where the kernel as written returns, a thread of the converted kernel goes on to
// the task loop, whose warp-synchronous steps (warpUniform's redux.sync, the task barrier) wait for the whole warp.
// A warp-synchronous operation with a fixed mask under a branch that splits a warp names lanes that, as written,
// may have exited (the hardware lets exited lanes go): converted, those lanes wait in the task loop for lanes that
// wait for them. HeCBench jacobi hung so on the H200 (a full-mask shuffle under threadIdx.y == 0, blocks 16 x 16).
// `WarpRows`: safe only where threadIdx.x cut at warp boundaries cuts warps, which the runtime checks at launch.
static std::string checkWarpSyncDivergence(Function &Kernel, GpuTarget Target, FunctionAnalysisManager &FAM,
                                           bool &WarpRows) {
  WarpRows = false;
  if (Target != GpuTarget::NVPTX)
    return "";
  DenseMap<Function *, bool> Memo;
  auto Hit = [&](const BasicBlock &BB) { return firstCall(BB, isFixedMaskWarpSync, Memo); };
  bool Any = false;
  for (BasicBlock &BB : Kernel)
    Any |= Hit(BB) != nullptr;
  if (!Any)
    return "";
  const Instruction *At = hitUnderDivergence(Kernel, divergentBranches(Kernel, Target, FAM, true, false), FAM, Hit);
  if (!At)
    return "";
  // threadIdx.x cut at warp boundaries cuts warps in a block of one row, or of rows of whole warps: a kernel that
  // reads no threadIdx.y or .z is written for such blocks, and the runtime runs any other shape as written.
  if (!readsThreadIdxYZ(Kernel) &&
      !hitUnderDivergence(Kernel, divergentBranches(Kernel, Target, FAM, true, true), FAM, Hit)) {
    WarpRows = true;
    return "";
  }
  return "has a warp-synchronous operation with a fixed lane mask" + atLine(At) +
         " under control flow that splits a warp: lanes that end their block early would wait in the task loop "
         "for lanes that wait for them";
}

std::string whyNotConvertible(Function &Kernel, GpuTarget Target, FunctionAnalysisManager &FAM, bool *WarpRows) {
  *WarpRows = false;
  SetVector<Function *> Reached = reachableFunctions(Kernel);
  for (Function *F : Reached) {
    if (F != &Kernel && isKernel(*F, Target))
      return "calls another kernel";
    std::string Reason = checkInstructions(*F, F == &Kernel, Target);
    if (!Reason.empty())
      return Reason;
  }
  DenseMap<Function *, bool> BarrierMemo;
  std::string Reason = checkBarrierDivergence(Kernel, Target, FAM, BarrierMemo);
  if (!Reason.empty())
    return Reason;
  return checkWarpSyncDivergence(Kernel, Target, FAM, *WarpRows);
}

} // namespace preempt
