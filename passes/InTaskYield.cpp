// InTaskYield.cpp: yield points inside a block-task of converted NVIDIA kernels, with their save and restore routines.
// CTXBack §III-B/C (re-execution, reverting) and §III-D (uniform values saved once) at the IR level; issue 8.
//
// A point sits at the back-edge of a loop whose trip count every thread of
// the CTA agrees on. Every few iterations (adapted at run time to the
// launch's check period) the CTA meets at a check (task_loop.cu); on eviction
// every thread stores what the planner (lib/intask_plan.c) chose, thread 0
// the values uniform across the CTA, the CTA its shared memory, and it leaves
// through the task loop's exit. A resumed task enters through a dispatch at
// the task's start: each thread loads its values, rebuilds the rest by
// re-executing or reverting instructions, and continues at the back-edge.
// The saved values replace the originals through SSA reconstruction.
#include "InTaskYield.h"

#include "DeviceHelpers.h"
#include "GpuTarget.h"
#include "KernelCopy.h"
#include "KernelSafety.h"
#include "SharedLiveness.h"
#include "WarpUniform.h"

#include "preempt/control_block.h"
#include "preempt/intask_period.h"
#include "preempt/intask_plan.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/Analysis/LoopInfo.h"
#include "llvm/Analysis/OptimizationRemarkEmitter.h"
#include "llvm/Analysis/AssumptionCache.h"
#include "llvm/Analysis/PostDominators.h"
#include "llvm/Analysis/ScalarEvolution.h"
#include "llvm/Analysis/ScalarEvolutionExpressions.h"
#include "llvm/Analysis/TargetLibraryInfo.h"
#include "llvm/Analysis/UniformityAnalysis.h"
#include "llvm/Analysis/ValueTracking.h"
#include "llvm/IR/Dominators.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/InlineAsm.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/Verifier.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/IR/IntrinsicsNVPTX.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Transforms/Utils/BasicBlockUtils.h"
#include "llvm/Transforms/Utils/Cloning.h"
#include "llvm/Transforms/Utils/Local.h"
#include "llvm/Transforms/Utils/LoopSimplify.h"
#include "llvm/Transforms/Utils/LoopUtils.h"
#include "llvm/Transforms/Utils/ModuleUtils.h"
#include "llvm/Transforms/Utils/ScalarEvolutionExpander.h"
#include "llvm/Transforms/Utils/SSAUpdater.h"

#include <functional>
#include <optional>

using namespace llvm;

static cl::opt<bool> InTaskEnabled("preempt-intask", cl::init(true),
                                   cl::desc("place in-task yield points in converted NVIDIA kernels"));
// Which loops nested in other loops get points. A point in a loop whose
// every entry is short buys no latency (the point of the loop around it comes
// soon enough) and costs the loop its checks and chunking: gemm's 16-step
// tile loop took the bench's gemm from 1.08x to 1.14x its time without points.
enum class NestedPoints { Off, Long, All };
static cl::opt<NestedPoints> InTaskNested(
    "preempt-intask-nested", cl::init(NestedPoints::Long),
    cl::desc("in-task yield points in loops nested in other loops (a resumed task reaches them through the outer "
             "loops' headers)"),
    cl::values(clEnumValN(NestedPoints::Off, "off", "none: such loops wait for the point of the loop around them"),
               clEnumValN(NestedPoints::Long, "long",
                          "where one entry of the loop may run long: no constant bound on its iterations, or more "
                          "than -preempt-intask-nested-work instructions (the default)"),
               clEnumValN(NestedPoints::All, "all", "in every nested loop that allows one")));
static cl::opt<unsigned> InTaskNestedWork(
    "preempt-intask-nested-work", cl::init(4096),
    cl::desc("a loop whose one entry runs at most this many IR instructions per thread (its constant bound on "
             "iterations times its body) gets no point: a loop of the task's own at any -preempt-intask-nested, a "
             "nested loop under -preempt-intask-nested=long"));
static cl::opt<bool> InTaskStripMine("preempt-intask-strip-mine", cl::init(true), cl::Hidden,
                                     cl::desc("strip-mine loops whose trip count is known at their in-task point "
                                              "(off: every point counts down, to measure against)"));
static cl::opt<bool> InTaskBarrierFree(
    "preempt-intask-barrier-free", cl::init(true), cl::Hidden,
    cl::desc("points of loops that meet at a CTA barrier every iteration check without barriers of their own "
             "(off: every check meets at two, to measure against)"));
static cl::opt<unsigned> InTaskChunkWork(
    "preempt-intask-chunk-work", cl::init(0),
    cl::desc("a strip-mined loop runs chunks of a constant length (a power of two up to 8) of at most this many IR "
             "instructions per thread, in runs to the next check, its last iterations in a copy of the loop with no "
             "check; 0 (the default), or a body too large for two iterations: chunks of a length set at run time, "
             "with a twin in constant chunks beside (-preempt-intask-chunks-variant). On the H100 512 took the "
             "bench's solver 0.83x and its persistent kernel 1.02x their -preempt-intask=0 time (1.04x each with 0) "
             "and its stencil 1.06x (1.02x): docs/intask.md"));
static cl::opt<unsigned> InTaskChunksVariant(
    "preempt-intask-chunks-variant", cl::init(512),
    cl::desc("with -preempt-intask-chunk-work=0, a second in-task variant whose strip-mined loops run constant "
             "chunks of at most this many IR instructions (as -preempt-intask-chunk-work=N would), made where one "
             "of its points runs them; the runtime times both and runs the faster (PREEMPT_INTASK_SHAPE). 0: none. "
             "Which shape is faster depends on ptxas's register allocation, which the pass cannot see: "
             "docs/intask.md"));
// Tests the net below: breaks the variant's IR after its points are placed.
static cl::opt<bool> InTaskBreakForTest("preempt-intask-break-for-test", cl::init(false), cl::Hidden,
                                        cl::desc("Test only: make each in-task variant's IR invalid"));
static cl::opt<unsigned> InTaskMaxContext("preempt-intask-max-context", cl::init(64 * 1024),
                                          cl::desc("the largest context per CTA (bytes, at 256 threads or the "
                                                   "kernel's maximum) an in-task yield point may save"));

namespace preempt {

static constexpr const char *PassName = "preempt";
static constexpr const char *LoopMark = "preempt.intask.loop";
static constexpr const char *UniformMark = "preempt.uniform";

static void remarkMissed(Function &F, const Twine &Message) {
  OptimizationRemarkEmitter Remarks(&F);
  Remarks.emit([&] { return OptimizationRemarkMissed(PassName, "InTaskPoint", &F) << Message.str(); });
}

// A call that is a pure function of its operands: an intrinsic that touches
// no memory and does not synchronize (thread and block registers, math), or
// inline assembly of register work in its own thread, not marked sideeffect
// (lib/inline_asm.c; clang marks every CUDA asm convergent, the text says
// whether it is). Warp-level asm (shfl.sync) is not: a copy of it in a
// restore would run with other lanes than the original.
static bool isPureCall(const CallBase &Call) {
  if (Call.isInlineAsm()) {
    preempt_asm_summary Asm = classifyInlineAsm(Call);
    return preempt_asm_is_recomputable(&Asm);
  }
  return isa<IntrinsicInst>(Call) && Call.doesNotAccessMemory() && !Call.isConvergent();
}

// What never takes the uniform mark below, whatever UniformityAnalysis says:
// memory, calls other than pure ones, and any inline assembly (`mov.u32 $0,
// %laneid` has no operands to be divergent by; NVPTX's TTI takes every call's
// result for divergent today, the mark does not depend on it).
static bool touchesMemory(const Instruction &I) {
  if (auto *Call = dyn_cast<CallBase>(&I))
    return Call->isInlineAsm() || !isPureCall(*Call);
  return I.mayReadOrWriteMemory();
}

// UniformityAnalysis over a scratch copy of `Kernel` in which every value read
// from memory is divergent (KernelSafety.cpp): a trip count the warps disagree
// on would deadlock the check's barrier. Marks the uniform instructions
// (UniformMark) and returns the blocks whose terminator is divergent.
static DenseSet<const BasicBlock *> markUniformity(Function &Kernel, FunctionAnalysisManager &FAM) {
  ValueToValueMapTy Map;
  Function *Scratch = makeUniformityScratch(Kernel, GpuTarget::NVPTX, Map, true);
  DenseSet<const BasicBlock *> Divergent;
  {
    auto &Uniformity = FAM.getResult<UniformityInfoAnalysis>(*Scratch);
    MDNode *Empty = MDNode::get(Kernel.getContext(), {});
    for (Instruction &I : instructions(Kernel)) {
      // Block-level register reads became parameters: uniform.
      auto *Copy = dyn_cast_or_null<Instruction>(Map.lookup(&I));
      bool Uniform = Copy ? Uniformity.isUniform(Copy) : isa_and_nonnull<Argument>(Map.lookup(&I));
      if (Uniform && !I.getType()->isVoidTy() && !touchesMemory(I))
        I.setMetadata(UniformMark, Empty);
    }
    for (BasicBlock &BB : Kernel)
      if (Uniformity.hasDivergentTerminator(*cast<BasicBlock>(Map[&BB])))
        Divergent.insert(&BB);
  }
  eraseUniformityScratch(Scratch, FAM);
  return Divergent;
}

static bool isDynamicShared(const GlobalVariable &Global) {
  if (Global.getAddressSpace() != 3)
    return false;
  auto *Array = dyn_cast<ArrayType>(Global.getValueType());
  return Global.isDeclaration() || (Array && Array->getNumElements() == 0);
}

// Inline assembly that does nothing: not volatile, touching no memory, its results unused. GCC's rule lets the
// optimizer drop such a statement; LLVM keeps the call (asm is not `willreturn`), so every kernel that takes
// cooperative groups' this_thread_block() on sm_80+ carries its scratch pointer's `%reserved_smem_offset_1` read
// unused (cooperative_groups/details/memory.h; 176 kernels of the corpus had no points for it).
static bool isDeadAsm(const CallBase &Call) {
  return Call.use_empty() && Call.doesNotAccessMemory() &&
         !cast<InlineAsm>(Call.getCalledOperand())->hasSideEffects();
}

// Why no loop of the kernel can take a point, or "".
static std::string kernelRefusal(Function &Kernel) {
  for (Instruction &I : instructions(Kernel)) {
    if (isa<AllocaInst>(I))
      return "keeps data in local memory (an alloca), which an in-task context does not save";
    if (auto *Call = dyn_cast<CallBase>(&I)) {
      // Inline assembly of register work only (lib/inline_asm.c: PURE, warp-level included) is an instruction
      // like any other: its results are saved, or computed again where isPureCall says so; so is a prefetch,
      // which has no result and changes no memory (the shared-memory liveness takes a call that may touch memory
      // to read all of it). Anything else in it (memory accesses, special registers, control) refuses.
      if (Call->isInlineAsm()) {
        if (preempt_asm_summary Asm = classifyInlineAsm(*Call); Asm.intask.why && !isDeadAsm(*Call))
          return "has " + describeInlineAsm(*Call, Asm.intask);
      } else if (Function *Callee = Call->getCalledFunction();
                 !Callee || (!Callee->isIntrinsic() && !Callee->getName().starts_with("__preempt_"))) {
        return "calls a function (" + (Callee ? Callee->getName().str() : std::string("indirectly")) + ")";
      }
    }
    for (const Use &Operand : I.operands())
      if (auto *Global = dyn_cast<GlobalVariable>(Operand.get()->stripPointerCasts()); Global && isDynamicShared(*Global))
        return "uses dynamic shared memory, whose size the pass does not know";
  }
  return "";
}

// How remarks name a loop: by its source line when known, the line of its
// `for` or `while` (the loop's start location, from its llvm.loop metadata),
// else that of its header's first instruction (a rotated loop's header is
// its body).
static std::string loopName(const Loop &L, unsigned Ordinal) {
  const BasicBlock &Header = *L.getHeader();
  if (Header.hasName())
    return "'" + Header.getName().str() + "'";
  if (DebugLoc Start = L.getStartLoc(); Start && Start.getLine())
    return "at line " + std::to_string(Start.getLine());
  for (const Instruction &I : Header)
    if (const DebugLoc &Location = I.getDebugLoc(); Location && Location.getLine())
      return "at line " + std::to_string(Location.getLine());
  return "#" + std::to_string(Ordinal);
}

// The IR instructions one entry of `L` runs at most, per thread: its
// constant bound on iterations (ScalarEvolution's maximum trip count) times
// its body, the loops nested in it counted alike; none where a loop has no
// such bound (its trip count comes from an argument or memory).
static std::optional<uint64_t> entryWork(const Loop &L, const LoopInfo &Loops, ScalarEvolution &SE) {
  uint64_t Trips = SE.getSmallConstantMaxTripCount(&L);
  if (Trips == 0)
    return std::nullopt;
  uint64_t Body = 0;
  for (const BasicBlock *BB : L.blocks())
    if (Loops.getLoopFor(BB) == &L)
      Body += BB->sizeWithoutDebug();
  for (const Loop *Inner : L.getSubLoops()) {
    std::optional<uint64_t> InnerWork = entryWork(*Inner, Loops, SE);
    if (!InnerWork)
      return std::nullopt;
    Body = SaturatingAdd(Body, *InnerWork);
  }
  return SaturatingMultiply(Trips, Body);
}

// The loops of a kernel too short per entry to need a point of their own,
// by header: nested ones under -preempt-intask-nested=long (the point of the
// loop around comes soon after), and at any setting the task's own loops,
// entered once per task (its end or its next point comes soon after): such
// a point bought no latency, only its checks, and a resume path that random
// evictions almost never reached to test (an unroller's remainder loop runs
// at most 7 iterations). The default, 4096 IR instructions per
// thread, is at most ~40 us on an H100 with 16 warps on each of an SM's four
// schedulers (one instruction a cycle each, 1.7 GHz), and much less in
// practice: ptxas folds address arithmetic into loads, and few kernels fill
// every scheduler. The bench's gemm tile loop (16 steps of 77 IR
// instructions, 1232) and the suite's nbody tile loop (128 steps of 29, 3712) get
// none; a loop whose trip count is an argument always gets one.
struct ShortLoop {
  uint64_t Work;       // IR instructions one entry runs at most, per thread
  unsigned Iterations; // its constant bound on iterations
};
static DenseMap<const BasicBlock *, ShortLoop> shortLoops(const LoopInfo &Loops, ScalarEvolution &SE) {
  DenseMap<const BasicBlock *, ShortLoop> Short;
  for (Loop *L : Loops.getLoopsInPreorder()) {
    if (L->getParentLoop() && InTaskNested != NestedPoints::Long)
      continue;
    std::optional<uint64_t> Work = entryWork(*L, Loops, SE);
    if (Work && *Work <= InTaskNestedWork)
      Short[L->getHeader()] = {*Work, SE.getSmallConstantMaxTripCount(L)};
  }
  return Short;
}

// Marks the loops of `Kernel` that may take a yield point (metadata on their
// latch's terminator) and the values the same in every thread of the CTA;
// `Name` is the kernel's as the remarks say it. Returns how many loops.
static unsigned markInTaskCandidates(Function &Kernel, FunctionAnalysisManager &FAM, StringRef Name) {
  auto &Loops = FAM.getResult<LoopAnalysis>(Kernel);
  if (Loops.empty())
    return 0;
  std::string Refusal = kernelRefusal(Kernel);
  if (!Refusal.empty()) {
    remarkMissed(Kernel, "kernel '" + Name + "' gets no in-task yield points: it " + Refusal);
    return 0;
  }
  DenseSet<const BasicBlock *> Divergent = markUniformity(Kernel, FAM);
  auto &PostDom = FAM.getResult<PostDominatorTreeAnalysis>(Kernel);
  // Blocks from which `Header` can be reached: per loop, backwards (a table
  // for every block took a 4,300-block kernel 11 s and 270 MB).
  auto ReachingBlocks = [](const BasicBlock *Header) {
    SmallPtrSet<const BasicBlock *, 32> Reaching;
    SmallVector<const BasicBlock *, 16> Work(pred_begin(Header), pred_end(Header));
    while (!Work.empty()) {
      const BasicBlock *BB = Work.pop_back_val();
      if (Reaching.insert(BB).second)
        append_range(Work, predecessors(BB));
    }
    return Reaching;
  };
  unsigned Marked = 0, Ordinal = 0;
  // Loops whose own shape allows a point (parents come first in preorder):
  // a point in a nested loop needs every loop around it to allow one too,
  // since a resumed task reaches it through their headers.
  SmallPtrSet<const Loop *, 8> Allowed;
  DenseMap<const BasicBlock *, ShortLoop> Short = shortLoops(Loops, FAM.getResult<ScalarEvolutionAnalysis>(Kernel));
  for (Loop *L : Loops.getLoopsInPreorder()) {
    Ordinal++;
    std::string Why;
    BasicBlock *Header = L->getHeader();
    // A nested loop's point is reached, on resume, through the outer loops'
    // headers: the first version entered its header straight from the
    // dispatch, which made the outer loop irreducible, and ptxas did not
    // reconverge warps there before an aligned barrier (the bench's
    // persistent kernel deadlocked on the H100).
    if (L->getParentLoop() && InTaskNested == NestedPoints::Off)
      Why = "it is nested in another loop";
    else if (auto Found = Short.find(Header); Found != Short.end()) {
      const bool Nested = L->getParentLoop();
      Why = std::string(Nested ? "it is nested in another loop and one entry runs at most "
                               : "it runs once per task, at most ") +
            std::to_string(Found->second.Work) + " instructions (" + std::to_string(Found->second.Iterations) +
            " iterations); " + (Nested ? "the point of the loop around it" : "the task's end or its next point") +
            " comes soon after";
    } else if (L->getParentLoop() && !Allowed.contains(L->getParentLoop()))
      Why = "the loop around it could not take one";
    else if (!L->getLoopLatch())
      Why = "it has several back-edges";
    // Its check state starts in a preheader: make one where the optimizer
    // left the loop without (an unrolled loop entered beside its remainder).
    if (Why.empty() && !L->getLoopPreheader()) {
      DominatorTree DT(Kernel);
      if (!InsertPreheaderForLoop(L, &DT, &Loops, nullptr, false))
        Why = "it has no preheader and none can be made";
    }
    for (BasicBlock *Exiting : L->getBlocks())
      if (Why.empty() && L->isLoopExiting(Exiting) && Divergent.contains(Exiting))
        Why = "its threads may leave it after different iterations";
    // A divergent branch outside the loop decides who enters it unless the
    // threads meet again (at its immediate post-dominator) before the header.
    for (const BasicBlock *Before : Why.empty() ? ReachingBlocks(Header) : SmallPtrSet<const BasicBlock *, 32>()) {
      if (!Why.empty() || L->contains(Before) || !Divergent.contains(Before))
        continue;
      const DomTreeNode *Node = PostDom.getNode(Before);
      const BasicBlock *Meet = Node && Node->getIDom() ? Node->getIDom()->getBlock() : nullptr;
      SmallVector<const BasicBlock *, 16> Work(succ_begin(Before), succ_end(Before));
      SmallPtrSet<const BasicBlock *, 16> Seen;
      while (!Work.empty() && Why.empty()) {
        const BasicBlock *BB = Work.pop_back_val();
        if (BB == Meet || !Seen.insert(BB).second)
          continue;
        if (BB == Header)
          Why = "not every thread of the CTA may enter it";
        append_range(Work, successors(BB));
      }
    }
    if (Why.empty())
      Allowed.insert(L);
    if (Why.empty() && Marked == PREEMPT_INTASK_MAX_POINTS)
      Why = "the kernel has " + std::to_string(PREEMPT_INTASK_MAX_POINTS) + " points already";
    if (!Why.empty()) {
      remarkMissed(Kernel, "loop " + loopName(*L, Ordinal) + " of kernel '" + Name +
                               "' gets no in-task yield point: " + Why);
      continue;
    }
    // The mark carries the loop's name, for the remarks after conversion.
    LLVMContext &Context = Kernel.getContext();
    L->getLoopLatch()->getTerminator()->setMetadata(
        LoopMark, MDNode::get(Context, {MDString::get(Context, loopName(*L, Ordinal)),
                                        ConstantAsMetadata::get(ConstantInt::get(Type::getInt32Ty(Context), Ordinal))}));
    Marked++;
  }
  return Marked;
}

Function *makeInTaskVariant(Function &Kernel, FunctionAnalysisManager &FAM) {
  if (!InTaskEnabled || FAM.getResult<LoopAnalysis>(Kernel).empty())
    return nullptr;
  Function *Variant = copyKernel(Kernel, (PREEMPT_INTASK_KERNEL_PREFIX + Kernel.getName()).str(), ".intask");
  if (!Variant)
    return nullptr;
  if (markInTaskCandidates(*Variant, FAM, Kernel.getName()) == 0) {
    FAM.clear(*Variant, Variant->getName()); // its cached analyses go with it
    eraseInTaskVariant(*Variant);
    return nullptr;
  }
  return Variant;
}

Function *makeInTaskChunksVariant(Function &Variant, StringRef KernelName) {
  if (InTaskChunksVariant == 0 || InTaskChunkWork != 0)
    return nullptr;
  return copyKernel(Variant, (PREEMPT_INTASK_CHUNKS_KERNEL_PREFIX + KernelName).str(), ".chunks");
}

void eraseInTaskVariant(Function &Variant) {
  Module &M = *Variant.getParent();
  Variant.replaceAllUsesWith(PoisonValue::get(Variant.getType())); // llvm.used, annotations
  Variant.eraseFromParent();
  // Its shared variables (copyKernel's twins, named <name>.intask, maybe with
  // a number after), now used by nothing but dead constant expressions.
  SmallVector<GlobalVariable *, 4> Unused;
  for (GlobalVariable &Global : M.globals()) {
    if (Global.getAddressSpace() != 3 || !Global.hasLocalLinkage() || !Global.getName().contains(".intask"))
      continue;
    Global.removeDeadConstantUsers();
    if (Global.use_empty())
      Unused.push_back(&Global);
  }
  for (GlobalVariable *Global : Unused)
    Global->eraseFromParent();
}

static void clearInTaskMarks(Function &F) {
  for (Instruction &I : instructions(F)) {
    I.setMetadata(LoopMark, nullptr);
    I.setMetadata(UniformMark, nullptr);
  }
}

namespace {

// The kernel's shared variables, in module order: those of F's module in
// address space 3 that F uses (other than the runtime's own).
static SmallVector<GlobalVariable *, 4> sharedVariablesOf(Function &F) {
  SmallVector<GlobalVariable *, 4> Shared;
  for (GlobalVariable &Global : F.getParent()->globals())
    if (Global.getAddressSpace() == 3 && !Global.getName().starts_with("__preempt_") &&
        any_of(Global.users(), [&](const User *U) {
          SmallVector<const User *, 8> Work{U};
          while (!Work.empty()) {
            const User *Next = Work.pop_back_val();
            if (auto *I = dyn_cast<Instruction>(Next))
              if (I->getFunction() == &F)
                return true;
            if (isa<Constant>(Next))
              append_range(Work, Next->users());
          }
          return false;
        }))
      Shared.push_back(&Global);
  return Shared;
}

// Everything one point needs.
struct YieldPoint {
  unsigned Number; // 1-based, as the runtime records it
  BasicBlock *Header, *Preheader, *Latch;
  SmallVector<BasicBlock *, 4> OuterHeaders; // the loops around it inside the task, outermost first
  llvm::Loop *L;
  // Each of the kernel's shared variables (PointBuilder's order): what a
  // context saved here does with it (SharedLiveness.h).
  SmallVector<SharedFate, 4> SharedFates;
};

// A loop whose trip count ScalarEvolution knows (strip-mining).
struct IterationCount {
  PHINode *Index;      // a counter of the loop's, or this iteration's number from 0
  unsigned StepShift;  // Index steps by 1 << StepShift each iteration
  Value *Last;         // Index in the last iteration
  Instruction *IsLast; // Index == Last, in the latch: the loop's exit test now
};

class PointBuilder {
public:
  PointBuilder(Function &F, const TaskLoopValues &Loop, BasicBlock *Dispatch, SwitchInst *DispatchSwitch,
               uint32_t Threads, unsigned ChunkWork, ArrayRef<GlobalVariable *> Shared,
               std::optional<BlockShape> Shape)
      : F(F), M(*F.getParent()), DL(M.getDataLayout()), Loop(Loop), Dispatch(Dispatch),
        DispatchSwitch(DispatchSwitch), Threads(Threads), ChunkWork(ChunkWork), Shared(Shared), Shape(Shape) {}

  // Places one point; "" when placed, else why not.
  // `DT` is the function's as it is now (the point changes it).
  std::string place(const YieldPoint &Point, const DominatorTree &DT, ScalarEvolution &SE, std::string &Summary,
                    uint32_t &ThreadBytes, uint32_t &CtaBytes);
  // Readies a loop with a point nested in it for resume paths: its entry
  // block, and a switch in its header on the point being resumed (default:
  // the loop's own body). Before any point is placed, since splitting the
  // header may move an inner loop's preheader. False when it cannot be.
  bool prepareOuter(llvm::Loop &Outer);
  bool isPrepared(BasicBlock *Header) const { return ResumeSwitch.count(Header); }
  // Points placed so far whose loop runs constant chunks.
  unsigned chunkedPoints() const { return ChunkedPoints; }

private:
  Function &F;
  Module &M;
  const DataLayout &DL;
  const TaskLoopValues &Loop;
  BasicBlock *Dispatch;
  SwitchInst *DispatchSwitch;
  uint32_t Threads;
  unsigned ChunkWork; // -preempt-intask-chunk-work, or -chunks-variant's for that variant
  unsigned ChunkedPoints = 0;
  ArrayRef<GlobalVariable *> Shared; // the kernel's shared variables
  std::optional<BlockShape> Shape;   // its launch bounds' block shape

  // Each loop's one entry from outside (by header), the preheader it came
  // from, and the phis there that bring the header's phis their values from
  // outside (Entered phi -> header phi).
  DenseMap<BasicBlock *, BasicBlock *> EnterOf, NormalPred;
  DenseMap<PHINode *, PHINode *> HeaderPhiOf;
  // Resume paths into nested loops: the point being resumed, as a phi in
  // each outer loop's Enter and header, and the header's switch on it.
  DenseMap<BasicBlock *, PHINode *> ResumePhi;
  DenseMap<BasicBlock *, SwitchInst *> ResumeSwitch;
  // The check state of placed points (count-down: its point index; the
  // polled word: none). Not context: a resumed task starts them afresh. Each
  // value of it: the header phi that defines it and, where an inner loop's
  // spill stores it across that loop, the reloads after the loop and the
  // phis that merge them with the values before it (all keyed by that phi).
  DenseMap<Value *, PHINode *> CheckStateRoot;
  DenseMap<PHINode *, std::optional<unsigned>> CheckState;
  std::optional<unsigned> checkStateKind(Value *V) const { return CheckState.lookup(CheckStateRoot.lookup(V)); }
  // Values an Enter computes again from free values alone (arguments, the
  // task's, other such values): right on every path through that Enter, a
  // resume path into a loop nested in its loop too. For a point nested in
  // that loop they are free: neither saved nor computed again in its own
  // Enter and exit, whose second definitions would have become phis around
  // the outer loop (3 more registers in the bench's persistent kernel, which
  // cost it 2 of its 8 CTAs per SM).
  DenseSet<const Instruction *> ResumeSafe;
  // The Enter blocks of the loops around the point being placed.
  SmallPtrSet<const BasicBlock *, 4> EnclosingEnters;

  Function *helper(StringRef Name) { return M.getFunction(Name); }
  // The iterations until point `PointIndex`'s first check, as the CTA's one value.
  Value *iterationsToCheck(IRBuilder<> &Builder, unsigned PointIndex) {
    return warpUniform(Builder, Builder.CreateCall(helper(helper::InTaskIterations), {Builder.getInt32(PointIndex)}),
                       DL);
  }
  bool isFree(const Value *V, const DominatorTree &DT) const;
  static bool isRebuildable(const Instruction &I);
  // Moves the check state of the loops around `Point`'s loop to local memory
  // across it; returns each state phi with its slot (Restore sets them).
  SmallVector<std::pair<PHINode *, AllocaInst *>, 4> spillOuterCheckState(const YieldPoint &Point);
  // Counts the point's loop from 0 and makes `Index == Last` its exit test,
  // where ScalarEvolution knows the trip count and the latch is the loop's
  // only exit; else nothing changes and there is no count.
  std::optional<IterationCount> countIterations(const YieldPoint &Point, ScalarEvolution &SE);
  BasicBlock *enterFor(BasicBlock *Header, BasicBlock *Preheader);
  // The loop's last iterations, fewer than a constant chunk: a copy of its
  // blocks, entered from `Tail` with the chunk's values, with no check.
  void copyTailLoop(ArrayRef<BasicBlock *> LoopBlocks, BasicBlock *Header, BasicBlock *Latch, BasicBlock *Tail,
                    const DenseMap<PHINode *, Value *> &TailValues, BasicBlock *Leaving, Instruction *IsLast);
  // Adds the edge Pred -> Enter-or-resume block `Dest` (a new predecessor, or
  // one more switch case to it): every phi there takes `Resuming` if it is
  // the resume phi, else poison (nothing on a resume path reads them before
  // the point's restore block).
  void addResumeEdge(BasicBlock *Pred, BasicBlock *Dest, Value *Resuming);
};

// The copy leaves after the loop's last iteration (its own exit test, the
// loop's), to where the chunks' end leaves; the loop's values used after it
// then come from either copy (SSA reconstruction). Nothing in it checks: it
// runs fewer iterations than a chunk.
void PointBuilder::copyTailLoop(ArrayRef<BasicBlock *> LoopBlocks, BasicBlock *Header, BasicBlock *Latch,
                                BasicBlock *Tail, const DenseMap<PHINode *, Value *> &TailValues, BasicBlock *Leaving,
                                Instruction *IsLast) {
  ValueToValueMapTy Copied;
  SmallVector<BasicBlock *, 8> Copies;
  SmallPtrSet<BasicBlock *, 16> InEither(LoopBlocks.begin(), LoopBlocks.end());
  BasicBlock *Before = Tail->getNextNode();
  for (BasicBlock *BB : LoopBlocks) {
    BasicBlock *Copy = CloneBasicBlock(BB, Copied, ".tail", &F);
    if (Before)
      Copy->moveBefore(Before);
    Copied[BB] = Copy;
    Copies.push_back(Copy);
    InEither.insert(Copy);
  }
  remapInstructionsInBlocks(Copies, Copied);
  auto *HeaderCopy = cast<BasicBlock>(Copied[Header]);
  auto *LatchCopy = cast<BasicBlock>(Copied[Latch]);
  // The copy's header phis: from the tail's entry (the header's own entry
  // from outside is the first chunk's) and from the copy's latch.
  for (auto [Phi, PhiCopy] : zip(Header->phis(), HeaderCopy->phis()))
    for (unsigned Index = 0; Index < PhiCopy.getNumIncomingValues(); ++Index)
      if (PhiCopy.getIncomingBlock(Index) != LatchCopy) {
        PhiCopy.setIncomingBlock(Index, Tail);
        PhiCopy.setIncomingValue(Index, TailValues.lookup(&Phi));
      }
  Tail->getTerminator()->eraseFromParent();
  BranchInst::Create(HeaderCopy, Tail);
  BasicBlock *Exit = Leaving->getTerminator()->getSuccessor(0);
  auto *ChunkDone = cast<BranchInst>(LatchCopy->getTerminator());
  Value *ChunkDoneTest = ChunkDone->getCondition();
  ChunkDone->eraseFromParent();
  RecursivelyDeleteTriviallyDeadInstructions(ChunkDoneTest);
  BranchInst::Create(Exit, HeaderCopy, Copied[IsLast], LatchCopy);
  for (PHINode &Phi : Exit->phis()) {
    Value *FromChunks = Phi.getIncomingValueForBlock(Leaving);
    Value *FromCopy = Copied.lookup(FromChunks);
    Phi.addIncoming(FromCopy ? FromCopy : FromChunks, LatchCopy);
  }
  for (BasicBlock *BB : LoopBlocks)
    for (Instruction &I : *BB) {
      SmallVector<Use *, 8> Outside;
      for (Use &U : I.uses())
        if (!InEither.contains(cast<Instruction>(U.getUser())->getParent()))
          Outside.push_back(&U);
      if (Outside.empty())
        continue;
      auto *Copy = cast<Instruction>(Copied[&I]);
      SSAUpdater Updater;
      Updater.Initialize(I.getType(), I.getName());
      Updater.AddAvailableValue(BB, &I);
      Updater.AddAvailableValue(Copy->getParent(), Copy);
      for (Use *U : Outside)
        Updater.RewriteUse(*U);
    }
  // The chunks' runs test the loop's last iteration at a run's end instead.
  if (IsLast->use_empty())
    IsLast->eraseFromParent();
}

BasicBlock *PointBuilder::enterFor(BasicBlock *Header, BasicBlock *Preheader) {
  if (BasicBlock *Found = EnterOf.lookup(Header))
    return Found;
  BasicBlock *Enter = BasicBlock::Create(F.getContext(), Header->getName() + ".intask.enter", &F, Header);
  BranchInst::Create(Header, Enter);
  Preheader->getTerminator()->replaceSuccessorWith(Header, Enter);
  for (PHINode &Phi : Header->phis()) {
    int Index = Phi.getBasicBlockIndex(Preheader);
    PHINode *Entered =
        PHINode::Create(Phi.getType(), 2, Phi.getName() + ".entered", Enter->getTerminator()->getIterator());
    Entered->addIncoming(Phi.getIncomingValue(Index), Preheader);
    Phi.setIncomingBlock(Index, Enter);
    Phi.setIncomingValue(Index, Entered);
    HeaderPhiOf[Entered] = &Phi;
  }
  EnterOf[Header] = Enter;
  NormalPred[Enter] = Preheader;
  return Enter;
}

void PointBuilder::addResumeEdge(BasicBlock *Pred, BasicBlock *Dest, Value *Resuming) {
  for (PHINode &Phi : Dest->phis()) {
    int Existing = Phi.getBasicBlockIndex(Pred);
    Phi.addIncoming(Existing >= 0              ? Phi.getIncomingValue(Existing)
                    : &Phi == ResumePhi.lookup(Dest) ? Resuming
                                                     : static_cast<Value *>(PoisonValue::get(Phi.getType())),
                    Pred);
  }
}

bool PointBuilder::prepareOuter(llvm::Loop &Outer) {
  BasicBlock *Header = Outer.getHeader();
  if (isPrepared(Header))
    return true;
  BasicBlock *Preheader = Outer.getLoopPreheader();
  if (!Preheader || !Outer.getLoopLatch())
    return false;
  BasicBlock *Enter = enterFor(Header, Preheader);
  Type *Int32 = Type::getInt32Ty(F.getContext());
  PHINode *Resuming = PHINode::Create(Int32, 2, "preempt.intask.resuming", Enter->begin());
  for (BasicBlock *Pred : predecessors(Enter))
    Resuming->addIncoming(ConstantInt::get(Int32, 0), Pred);
  ResumePhi[Enter] = Resuming;
  BasicBlock *Body = Header->splitBasicBlock(Header->getFirstNonPHIIt(), Header->getName() + ".intask.rest");
  PHINode *InHeader = PHINode::Create(Int32, 2, "preempt.intask.resuming.here", Header->getFirstNonPHIIt());
  for (BasicBlock *Pred : predecessors(Header))
    InHeader->addIncoming(Pred == Enter ? static_cast<Value *>(Resuming) : ConstantInt::get(Int32, 0), Pred);
  Header->getTerminator()->eraseFromParent();
  ResumeSwitch[Header] = SwitchInst::Create(InHeader, Body, 2, Header);
  ResumePhi[Header] = InHeader;
  return true;
}

bool PointBuilder::isFree(const Value *V, const DominatorTree &DT) const {
  if (isa<Constant>(V) || isa<Argument>(V) || isa<InlineAsm>(V)) // an asm call's callee is no value to save
    return true;
  auto *I = dyn_cast<Instruction>(V);
  if (I && ResumeSafe.contains(I) && EnclosingEnters.contains(I->getParent()))
    return true;
  // The task loop's own values dominate the dispatch: there at resumption.
  return I && I->getParent() != Dispatch && DT.dominates(I->getParent(), Dispatch);
}

// The count-down and polled word of each point around this loop are live
// through it but used only after it, and at this loop's check they would
// hold two registers each beside its own state and the check's temporaries,
// where the kernel's register count peaks: the bench's persistent kernel took
// 34 registers with its item loop's and hash loop's points, 6 CTAs per SM
// against its kernel's 8, 30 with the hash loop's alone. Each thread keeps
// them in local memory across the loop instead: stored before it, loaded
// after it, once per entry; a task resumed inside it stores them afresh in
// its Restore (the outer points' state is not context). Only where every exit
// of the loop leads out of it alone (where the loads go).
SmallVector<std::pair<PHINode *, AllocaInst *>, 4> PointBuilder::spillOuterCheckState(const YieldPoint &Point) {
  SmallVector<std::pair<PHINode *, AllocaInst *>, 4> Spilled;
  if (Point.OuterHeaders.empty())
    return Spilled;
  SmallVector<BasicBlock *, 4> Exits;
  Point.L->getExitBlocks(Exits);
  for (BasicBlock *Exit : Exits)
    for (BasicBlock *Pred : predecessors(Exit))
      if (!Point.L->contains(Pred))
        return Spilled;
  // In block order (not CheckState's, a pointer hash): the same output every run.
  SmallVector<PHINode *, 4> StatePhis;
  for (BasicBlock *OuterHeader : Point.OuterHeaders)
    for (PHINode &Phi : OuterHeader->phis())
      if (CheckState.count(&Phi))
        StatePhis.push_back(&Phi);
  // Before the first instruction of each block as it is now: slots and loads in StatePhis' order.
  BasicBlock::iterator SlotsAt = F.getEntryBlock().getFirstInsertionPt();
  SmallVector<BasicBlock::iterator, 4> LoadsAt;
  for (BasicBlock *Exit : Exits)
    LoadsAt.push_back(Exit->getFirstInsertionPt());
  for (PHINode *Phi : StatePhis) {
    auto *Slot = new AllocaInst(Phi->getType(), DL.getAllocaAddrSpace(), Phi->getName() + ".spill", SlotsAt);
    // Every value the state has had so far, an earlier spill's reloads and
    // merges too: the store before this loop takes the one that reaches it,
    // and the uses after it, of whichever value, the reload. (With the
    // header phi alone, the store after an unrolled loop's main part took
    // the value from before it, and the state merged after that part stayed
    // live across the remainder loop, a context value restored stale.)
    SmallVector<PHINode *, 4> Merges;
    SSAUpdater Updater(&Merges);
    Updater.Initialize(Phi->getType(), Phi->getName());
    SmallVector<Value *, 8> Values;
    for (Instruction &I : instructions(F))
      if (CheckStateRoot.lookup(&I) == Phi)
        Values.push_back(&I);
    for (Value *V : Values)
      Updater.AddAvailableValue(cast<Instruction>(V)->getParent(), V);
    // Loaded from memory, the value is per-thread to ptxas, and a branch on
    // it divergent: through redux.sync it is the CTA's one value again (the
    // whole CTA leaves the loop together).
    for (auto [Exit, LoadAt] : zip(Exits, LoadsAt)) {
      IRBuilder<> AtExit(Exit, LoadAt);
      Value *Loaded = AtExit.CreateLoad(Phi->getType(), Slot, true, Phi->getName() + ".after");
      Value *Reloaded = warpUniform(AtExit, Loaded, DL);
      CheckStateRoot[Reloaded] = Phi;
      Updater.AddAvailableValue(Exit, Reloaded);
    }
    // The store's operand first: rewriting the uses below adds its merges.
    Value *Before = Updater.GetValueAtEndOfBlock(Point.Preheader);
    SmallVector<Use *, 8> Uses;
    for (Value *V : Values)
      for (Use &U : V->uses())
        Uses.push_back(&U);
    for (Use *U : Uses)
      Updater.RewriteUseAfterInsertions(*U);
    new StoreInst(Before, Slot, true, Point.Preheader->getTerminator()->getIterator());
    for (PHINode *Merge : Merges)
      CheckStateRoot[Merge] = Phi;
    Spilled.push_back({Phi, Slot});
  }
  return Spilled;
}

bool PointBuilder::isRebuildable(const Instruction &I) {
  if (auto *Call = dyn_cast<CallBase>(&I))
    return isPureCall(*Call);
  if (isa<FreezeInst>(I) || isa<PHINode>(I) || I.mayHaveSideEffects() || I.mayReadOrWriteMemory())
    return false;
  return isa<BinaryOperator>(I) || isa<CastInst>(I) || isa<GetElementPtrInst>(I) || isa<CmpInst>(I) ||
         isa<SelectInst>(I) || isa<ExtractElementInst>(I) || isa<InsertElementInst>(I) ||
         isa<ShuffleVectorInst>(I) || isa<ExtractValueInst>(I) || isa<InsertValueInst>(I) || isa<UnaryOperator>(I);
}

// A counter of the loop's own that can stand for its iteration number: a
// header phi, CTA-uniform (its mark), stepping by a constant power of two
// without wrapping (so it takes each value once and `== its value in the last
// iteration` is the exit test), at least 32 bits wide. Returns it, the step's
// log2, and its value in the last iteration (`BackedgeTaken` iterations on).
static std::optional<std::tuple<PHINode *, unsigned, const SCEV *>>
steppedCounter(llvm::Loop &L, ScalarEvolution &SE, const SCEV *BackedgeTaken) {
  for (PHINode &Phi : L.getHeader()->phis()) {
    auto *Type = dyn_cast<IntegerType>(Phi.getType());
    if (!Type || Type->getBitWidth() < 32 || Type->getBitWidth() > 64 || !Phi.getMetadata(UniformMark))
      continue;
    auto *Counter = dyn_cast<SCEVAddRecExpr>(SE.getSCEV(&Phi));
    if (!Counter || Counter->getLoop() != &L || !Counter->isAffine() ||
        !(Counter->hasNoUnsignedWrap() || Counter->hasNoSignedWrap()))
      continue;
    auto *Step = dyn_cast<SCEVConstant>(Counter->getStepRecurrence(SE));
    if (!Step || Step->getAPInt().isNegative() || !Step->getAPInt().isPowerOf2())
      continue;
    const SCEV *Iterations = SE.getTruncateOrZeroExtend(BackedgeTaken, Type);
    return std::make_tuple(&Phi, Step->getAPInt().logBase2(), Counter->evaluateAtIteration(Iterations, SE));
  }
  return std::nullopt;
}

std::optional<IterationCount> PointBuilder::countIterations(const YieldPoint &Point, ScalarEvolution &SE) {
  llvm::Loop &L = *Point.L;
  BasicBlock *Latch = Point.Latch, *Header = Point.Header;
  auto *Branch = dyn_cast<BranchInst>(Latch->getTerminator());
  // A loop with points nested in it keeps the count-down: a chunk loop
  // around its header would be one more loop for their resume paths to cross.
  if (!InTaskStripMine || isPrepared(Header) || L.getExitingBlock() != Latch || !Branch || !Branch->isConditional())
    return std::nullopt;
  const SCEV *Count = SE.getBackedgeTakenCount(&L);
  if (isa<SCEVCouldNotCompute>(Count) || !Count->getType()->isIntegerTy() ||
      Count->getType()->getIntegerBitWidth() > 64)
    return std::nullopt;
  Instruction *Before = Point.Preheader->getTerminator();
  SCEVExpander Expander(SE, "preempt.intask.last");
  if (!Expander.isSafeToExpandAt(Count, Before))
    return std::nullopt;
  MDNode *Empty = MDNode::get(F.getContext(), {});
  IRBuilder<> Builder(Before);
  IterationCount Result{};
  // A counter the loop has, stepping by a power of two, serves as the index
  // where the loop has no canonical one: an unrolled loop's `i += 8`. Beside
  // an index of its own, ptxas kept both counters and did not unroll the
  // inner loop further (the bench's persistent kernel in the nested build,
  // docs/intask.md).
  if (!L.getCanonicalInductionVariable())
    if (auto Counter = steppedCounter(L, SE, Count)) {
      auto [Phi, StepShift, AtLast] = *Counter;
      if (Expander.isSafeToExpandAt(AtLast, Before)) {
        Result = {Phi, StepShift, Expander.expandCodeFor(AtLast, Phi->getType(), Before), nullptr};
        // Uniform: the counter is (its mark) and so is the count (below).
        if (auto *LastInstruction = dyn_cast<Instruction>(Result.Last))
          LastInstruction->setMetadata(UniformMark, Empty);
      }
    }
  if (!Result.Index) {
    Value *Last = Expander.expandCodeFor(Count, Count->getType(), Before);
    // The chunk's length is a 32-bit count: the index is at least that wide.
    IntegerType *IndexType =
        IntegerType::get(F.getContext(), std::max(32u, Count->getType()->getIntegerBitWidth()));
    if (Last->getType() != IndexType)
      Last = Builder.CreateZExt(Last, IndexType, "preempt.intask.last");
    // The count is the CTA's: every thread leaves the loop after the same
    // iteration (markInTaskCandidates), and the count is exact. What the
    // expander computed it from may not be.
    if (auto *LastInstruction = dyn_cast<Instruction>(Last))
      LastInstruction->setMetadata(UniformMark, Empty);
    Result = {L.getCanonicalInductionVariable(), 0, Last, nullptr};
  }
  if (!Result.Index || Result.Index->getType() != Result.Last->getType()) {
    IntegerType *IndexType = cast<IntegerType>(Result.Last->getType());
    Builder.SetInsertPoint(Header, Header->begin());
    Result.Index = Builder.CreatePHI(IndexType, 2, "preempt.intask.index");
    Builder.SetInsertPoint(Branch);
    Value *Next = Builder.CreateAdd(Result.Index, ConstantInt::get(IndexType, 1), "preempt.intask.index.next");
    for (BasicBlock *Pred : predecessors(Header))
      Result.Index->addIncoming(Pred == Latch ? Next : ConstantInt::get(IndexType, 0), Pred);
    Result.Index->setMetadata(UniformMark, Empty);
    cast<Instruction>(Next)->setMetadata(UniformMark, Empty);
  }
  Builder.SetInsertPoint(Branch);
  Result.IsLast = cast<Instruction>(Builder.CreateICmpEQ(Result.Index, Result.Last, "preempt.intask.is.last"));
  Result.IsLast->setMetadata(UniformMark, Empty);
  // The same exit, in the same iteration: the latch is the loop's only exit
  // and the count is exact. Successor 0 leaves.
  if (Branch->getSuccessor(0) == Header)
    Branch->swapSuccessors();
  Value *OldTest = Branch->getCondition();
  Branch->setCondition(Result.IsLast);
  RecursivelyDeleteTriviallyDeadInstructions(OldTest);
  // A counter only the old test read (the unroller's count of iterations)
  // would otherwise stay live at the check and be saved.
  for (PHINode &Phi : make_early_inc_range(Header->phis()))
    RecursivelyDeleteDeadPHINode(&Phi);
  return Result;
}

static preempt_intask_operation operationOf(const Instruction &I) {
  if (!I.getType()->isIntOrIntVectorTy())
    return PREEMPT_INTASK_OTHER;
  switch (I.getOpcode()) {
  case Instruction::Add:
    return PREEMPT_INTASK_ADD;
  case Instruction::Sub:
    return PREEMPT_INTASK_SUB;
  case Instruction::Xor:
    return PREEMPT_INTASK_XOR;
  default:
    return PREEMPT_INTASK_OTHER;
  }
}

std::string PointBuilder::place(const YieldPoint &Point, const DominatorTree &DT, ScalarEvolution &SE,
                                std::string &Summary, uint32_t &ThreadBytes, uint32_t &CtaBytes) {
  BasicBlock *Latch = Point.Latch, *Header = Point.Header;
  if (!isa<BranchInst>(Latch->getTerminator()))
    return "its back-edge is not a branch";
  EnclosingEnters.clear();
  for (BasicBlock *OuterHeader : Point.OuterHeaders)
    if (BasicBlock *OuterEnter = EnterOf.lookup(OuterHeader))
      EnclosingEnters.insert(OuterEnter);
  for (BasicBlock *Pred : predecessors(Header))
    if (Pred != Latch && Pred != Point.Preheader)
      return "its header has another predecessor";
  // With a known trip count the loop is strip-mined: an inner loop runs to the
  // next check and its one exit is the chunk's last iteration; the loop's own
  // exit test and the check come after it. ptxas keeps a loop like that on
  // the uniform datapath and unrolls it; a second exit in the loop, the
  // count-down's, it did not (docs/intask.md). Without one, the count-down.
  std::optional<IterationCount> Count = countIterations(Point, SE);
  // Where every iteration passes a barrier the whole CTA meets (a block of
  // the loop that holds one dominates the latch), the checks need none of
  // their own (__preempt_intask_check_flags says why that is safe).
  bool BarrierFree = InTaskBarrierFree && any_of(Point.L->blocks(), [&](BasicBlock *Block) {
    return DT.dominates(Block, Latch) && any_of(*Block, [](Instruction &I) { return meetsWholeCta(I); });
  });
  // Chunks of a constant length where the body is small and holds no loop
  // (preempt_intask_chunk_length says why); its blocks, for the tail's copy.
  unsigned ChunkLength = 1;
  SmallVector<BasicBlock *, 8> LoopBlocks;
  if (Count && Point.L->getSubLoops().empty()) {
    uint64_t Body = 0;
    for (BasicBlock *BB : Point.L->blocks())
      Body += BB->sizeWithoutDebug();
    ChunkLength = preempt_intask_chunk_length(Body, ChunkWork);
    if (ChunkLength > 1)
      LoopBlocks.assign(Point.L->block_begin(), Point.L->block_end());
  }
  SmallVector<std::pair<PHINode *, AllocaInst *>, 4> Spilled = spillOuterCheckState(Point);
  // The CTA leaves from the check, where the loop goes on to its header: what
  // is live there. A value is live if a use is reachable from there without
  // passing its definition again. Without strip-mining the check comes before
  // the latch's branch, whose uses and both successors count.
  SmallVector<BasicBlock *, 2> GoesOnTo;
  if (Count)
    GoesOnTo.push_back(Header);
  else
    append_range(GoesOnTo, successors(Latch));
  SmallVector<Instruction *, 32> Live;
  SmallVector<Instruction *, 4> LiveCheckState; // an outer point's count-down and polled word
  // Blocks reachable from the latch without passing `Def`: one walk per
  // defining block, shared by its instructions.
  DenseMap<BasicBlock *, SmallPtrSet<BasicBlock *, 32>> ReachAvoiding;
  for (Instruction &I : instructions(F)) {
    if (I.getType()->isVoidTy() || isFree(&I, DT) || I.use_empty())
      continue;
    BasicBlock *Def = I.getParent();
    if (!DT.dominates(Def, Latch))
      continue;
    auto [Found, Inserted] = ReachAvoiding.try_emplace(Def);
    SmallPtrSet<BasicBlock *, 32> &Reach = Found->second;
    if (Inserted) {
      SmallVector<BasicBlock *, 16> Work(GoesOnTo.begin(), GoesOnTo.end());
      while (!Work.empty()) {
        BasicBlock *BB = Work.pop_back_val();
        if (BB != Def && Reach.insert(BB).second)
          append_range(Work, successors(BB));
      }
    }
    bool IsLive = false;
    for (const Use &U : I.uses()) {
      auto *User = cast<Instruction>(U.getUser());
      if (auto *Phi = dyn_cast<PHINode>(User)) {
        BasicBlock *Incoming = Phi->getIncomingBlock(U);
        // The edge from the latch to where the CTA goes on is taken after
        // the check; any other edge, as any use, only if the CTA gets there
        // again without passing `Def` (an exit's phi after a strip-mined
        // loop: the latch is reached again, the value not redefined).
        IsLive |= (Incoming == Latch && is_contained(GoesOnTo, Phi->getParent())) || Reach.contains(Incoming);
      } else {
        IsLive |= (!Count && User == Latch->getTerminator()) || Reach.contains(User->getParent());
      }
    }
    if (!IsLive)
      continue;
    if (CheckStateRoot.count(&I))
      LiveCheckState.push_back(&I);
    else
      Live.push_back(&I);
  }

  // The planner's values: the live ones and what they are computed from.
  SmallVector<Value *, 64> Values;
  DenseMap<Value *, uint32_t> IndexOf;
  auto Add = [&](Value *V) {
    auto [It, Inserted] = IndexOf.try_emplace(V, Values.size());
    if (Inserted)
      Values.push_back(V);
    return It->second;
  };
  for (Instruction *I : Live)
    Add(I);
  for (size_t Index = 0; Index < Values.size(); ++Index)
    if (auto *I = dyn_cast<Instruction>(Values[Index]); I && !isFree(I, DT) && isRebuildable(*I))
      for (Value *Operand : I->operands())
        if (!isa<Constant>(Operand) && !isa<BasicBlock>(Operand))
          Add(Operand);
  std::vector<preempt_intask_value> Plain(Values.size());
  std::vector<std::vector<uint32_t>> Operands(Values.size());
  SmallPtrSet<Value *, 32> LiveSet(Live.begin(), Live.end());
  for (auto [Index, V] : enumerate(Values)) {
    preempt_intask_value &Value = Plain[Index];
    Type *Type = V->getType();
    if (!Type->isSized() || Type->isTokenTy())
      return "a live value has no size in memory";
    Value.bytes = std::max<uint32_t>(1, (uint32_t)DL.getTypeStoreSize(Type).getFixedValue());
    Value.live = LiveSet.contains(V);
    auto *I = dyn_cast<Instruction>(V);
    Value.uniform = I && I->getMetadata(UniformMark);
    if (isFree(V, DT)) {
      Value.kind = PREEMPT_INTASK_FREE;
      Value.live = 0;
    } else if (I && isRebuildable(*I)) {
      Value.kind = PREEMPT_INTASK_PURE;
      for (llvm::Value *Operand : I->operands())
        if (!isa<Constant>(Operand))
          Operands[Index].push_back(IndexOf.lookup(Operand));
      if (Operands[Index].size() == 2 && I->getNumOperands() == 2)
        Value.operation = operationOf(*I);
    } else {
      Value.kind = PREEMPT_INTASK_OPAQUE;
    }
    if (Value.operation != PREEMPT_INTASK_OTHER && Operands[Index].size() != 2)
      Value.operation = PREEMPT_INTASK_OTHER;
    Value.operands = Operands[Index].data();
    Value.operand_count = (uint32_t)Operands[Index].size();
  }
  preempt_intask_plan Plan;
  if (preempt_intask_plan_make(Plain.data(), Plain.size(), Threads, &Plan) != 0)
    return "the context planner rejected its values";
  scope_exit FreePlan([&] { preempt_intask_plan_free(&Plan); });

  // The shared variables a context saved here holds: those a path from the
  // point may read (SharedLiveness.h). Those the CTA writes whole before
  // reading at the launch bounds' shape keep their place in the record, but a
  // CTA of that shape copies none of them.
  SmallVector<GlobalVariable *, 4> SavedShared;
  SmallVector<bool, 4> SkippedAtShape;
  uint32_t SharedBytes = 0, SkippedBytes = 0, UnreadBytes = 0;
  for (auto [Global, Fate] : zip(Shared, Point.SharedFates)) {
    uint32_t Bytes = alignTo(DL.getTypeAllocSize(Global->getValueType()).getFixedValue(), 16);
    if (Fate == SharedFate::Unread) {
      UnreadBytes += Bytes;
      continue;
    }
    SavedShared.push_back(Global);
    SkippedAtShape.push_back(Fate == SharedFate::SkippedAtShape);
    SharedBytes += Bytes;
    if (Fate == SharedFate::SkippedAtShape)
      SkippedBytes += Bytes;
  }
  uint32_t CtaArea = alignTo(Plan.cta_bytes, 16);
  uint64_t PerCta = (uint64_t)Plan.thread_bytes * Threads + CtaArea + SharedBytes;
  if (PerCta > InTaskMaxContext)
    return "its context (" + std::to_string(PerCta) + " B per CTA) is larger than -preempt-intask-max-context";

  if (preempt_intask_plan_check(Plain.data(), Plain.size(), &Plan) != 0)
    return "the context planner's plan did not check";

  LLVMContext &Context = F.getContext();
  Type *Int32 = Type::getInt32Ty(Context), *Int8 = Type::getInt8Ty(Context);
  Value *Control = Loop.Control;
  unsigned PointIndex = Point.Number - 1;

  // The loop's one entry from outside: the preheader and, on resumption,
  // Restore both go through Enter, where the values computed before the loop
  // that the restore re-executes are computed again for both (below). A loop
  // with points nested in it has had one since prepareOuter; its preheader is
  // the one Enter came from.
  BasicBlock *Enter = enterFor(Header, Point.Preheader);
  BasicBlock *Preheader = NormalPred.lookup(Enter);
  IRBuilder<> Builder(Enter->getTerminator());
  Value *FirstIterations = iterationsToCheck(Builder, PointIndex);
  // Thread 0 reads the eviction word on entry too, for the first check to act
  // on: entered with none read (0), that check could not evict, and a loop
  // entered once per work item (the bench's persistent kernel: an entry of
  // 8192 steps, about 150 us) could wait for the next entry's second check.
  // Checking without barriers, the state is also which answer to read next
  // (intask_period.h); on entry, "just entered".
  Value *FirstWord =
      Builder.CreateCall(helper(BarrierFree ? helper::InTaskFlagsBegin : helper::InTaskPoll), {Control});
  // Count-down: the latch's own branch, after the check. Strip-mined: where
  // each chunk starts, between Enter and the header.
  // Leaving: where the strip-mined loop leaves (the chunk's end, or a run's).
  BasicBlock *Cont = nullptr, *Chunk = nullptr, *ChunkEnd = nullptr, *Leaving = nullptr, *Tail = nullptr;
  DenseMap<PHINode *, Value *> TailValues; // what each header phi enters the tail's copy with
  if (!Count)
    Cont = Latch->splitBasicBlock(Latch->getTerminator(), Latch->getName() + ".intask.cont");
  // The new blocks go after the latch, in this order.
  BasicBlock *After = Latch->getNextNode();
  BasicBlock *Check = BasicBlock::Create(Context, Latch->getName() + ".intask.check", &F, After);
  BasicBlock *Save = BasicBlock::Create(Context, Latch->getName() + ".intask.save", &F, After);
  BasicBlock *Restore = BasicBlock::Create(Context, Latch->getName() + ".intask.restore", &F, After);
  Value *ChunkLast = nullptr;
  // The check's state: the iterations to the next check (a count-down, or
  // the chunk's length) and the eviction word thread 0 read at the previous
  // check, or, checking without barriers, which answer slot to read (one
  // register each).
  PHINode *Remaining, *EvictSeen;
  Value *EvictNext, *NextIterations;
  auto CreateCheck = [&](BasicBlock *GoOn) {
    Builder.SetInsertPoint(Check);
    if (BarrierFree) {
      // The count and the next state in one word, the same in every thread.
      Value *Checked = warpUniform(
          Builder,
          Builder.CreateCall(helper(helper::InTaskCheckFlags), {Control, Builder.getInt32(PointIndex), EvictSeen}),
          DL);
      NextIterations = Builder.CreateAnd(Checked, Builder.getInt32(PREEMPT_INTASK_COUNT_MASK));
      EvictNext = Builder.CreateLShr(Checked, Builder.getInt32(PREEMPT_INTASK_STATE_SHIFT));
    } else {
      EvictNext = Builder.CreateCall(helper(helper::InTaskPoll), {Control});
      Value *Checked =
          Builder.CreateCall(helper(helper::InTaskCheck), {Control, Builder.getInt32(PointIndex), EvictSeen});
      NextIterations = warpUniform(Builder, Checked, DL);
    }
    Builder.CreateCondBr(Builder.CreateICmpEQ(NextIterations, Builder.getInt32(0)), Save, GoOn);
  };
  if (Count) {
    IntegerType *IndexType = cast<IntegerType>(Count->Index->getType());
    // (A strip-mined loop has no points nested in it, so its Enter is made
    // above, after the index: enterFor gave the index its entered phi.)
    // The chunk loop: Enter and the check enter the header through Chunk,
    // which merges what each brings to the header's phis.
    Chunk = BasicBlock::Create(Context, Header->getName() + ".intask.chunk", &F, Header);
    BranchInst::Create(Header, Chunk);
    Enter->getTerminator()->replaceSuccessorWith(Header, Chunk);
    // Constant chunks: Chunk sets a run of whole chunks (to the check, or
    // as many as the loop has left); each chunk starts at Next and ends at
    // ChunkEnd, which counts the run down; at the run's end (RunEnd) the loop
    // leaves, goes to the check, or runs its last iterations, fewer than a
    // chunk, in a copy of itself with no check, entered from Tail (made at
    // the end of place).
    BasicBlock *Next = nullptr, *RunEnd = nullptr, *RunCut = nullptr;
    if (ChunkLength > 1) {
      Next = BasicBlock::Create(Context, Header->getName() + ".intask.next", &F, Header);
      BranchInst::Create(Header, Next);
      Tail = BasicBlock::Create(Context, Header->getName() + ".intask.tail", &F, After);
      new UnreachableInst(Context, Tail);
    }
    BasicBlock *HeaderFrom = Next ? Next : Chunk;
    for (PHINode &Phi : Header->phis()) {
      int FromEnter = Phi.getBasicBlockIndex(Enter);
      PHINode *AtChunk = PHINode::Create(Phi.getType(), 2, Phi.getName() + ".chunk", Chunk->getFirstNonPHIIt());
      AtChunk->addIncoming(Phi.getIncomingValue(FromEnter), Enter);
      AtChunk->addIncoming(Phi.getIncomingValueForBlock(Latch), Check);
      Value *Entering = AtChunk;
      if (Next) {
        // ChunkEnd's incoming value is added with ChunkEnd, Tail's with RunCut.
        PHINode *AtNext = PHINode::Create(Phi.getType(), 2, Phi.getName() + ".next", Next->getFirstNonPHIIt());
        AtNext->addIncoming(AtChunk, Chunk);
        PHINode *AtTail = PHINode::Create(Phi.getType(), 2, Phi.getName() + ".tail.in", Tail->getFirstNonPHIIt());
        AtTail->addIncoming(AtChunk, Chunk);
        TailValues[&Phi] = AtTail;
        Entering = AtNext;
      }
      Phi.setIncomingBlock(FromEnter, HeaderFrom);
      Phi.setIncomingValue(FromEnter, Entering);
    }
    Builder.SetInsertPoint(Chunk->getTerminator());
    Remaining = Builder.CreatePHI(Int32, 2, "preempt.intask.remaining");
    EvictSeen = Builder.CreatePHI(Int32, 2, "preempt.intask.evict.seen");
    // A stepped counter counts in steps of 1 << StepShift: iterations are
    // its distance shifted right, and back.
    auto IterationsAfter = [&](Value *Index) {
      Value *Distance = Builder.CreateSub(Count->Last, Index);
      return Count->StepShift ? Builder.CreateLShr(Distance, Count->StepShift) : Distance;
    };
    Value *ChunkStart = Count->Index->getIncomingValueForBlock(HeaderFrom);
    Value *RunStart = Next ? cast<PHINode>(ChunkStart)->getIncomingValueForBlock(Chunk) : ChunkStart;
    Value *Left = IterationsAfter(RunStart); // the iterations left, less one
    Value *Run = nullptr;
    PHINode *RunLeft = nullptr;
    if (Next) {
      // Whole chunks left: (Left + 1) / ChunkLength, without Left + 1's overflow.
      unsigned LengthShift = Log2_32(ChunkLength);
      Value *Mask = ConstantInt::get(IndexType, ChunkLength - 1);
      Value *Whole = Builder.CreateAdd(
          Builder.CreateLShr(Left, LengthShift),
          Builder.CreateZExt(Builder.CreateICmpEQ(Builder.CreateAnd(Left, Mask), Mask), IndexType),
          "preempt.intask.whole.chunks");
      Run = Builder.CreateTrunc(
          Builder.CreateBinaryIntrinsic(Intrinsic::umin, Builder.CreateZExt(Remaining, IndexType), Whole), Int32,
          "preempt.intask.run");
      Value *NoRun = Builder.CreateICmpEQ(Run, Builder.getInt32(0));
      Chunk->getTerminator()->eraseFromParent();
      BranchInst::Create(Tail, Next, NoRun, Chunk);
      Builder.SetInsertPoint(Next->getTerminator());
      RunLeft = Builder.CreatePHI(Int32, 2, "preempt.intask.run.left");
      RunLeft->addIncoming(Run, Chunk);
      ChunkLast = Builder.CreateAdd(ChunkStart,
                                    ConstantInt::get(IndexType, (uint64_t)(ChunkLength - 1) << Count->StepShift),
                                    "preempt.intask.chunk.last");
    } else {
      // The chunk's last iteration: `Remaining` on, or the loop's last.
      Value *Steps = Builder.CreateZExt(Builder.CreateSub(Remaining, Builder.getInt32(1)), IndexType);
      Value *Taken = Builder.CreateBinaryIntrinsic(Intrinsic::umin, Steps, Left);
      if (Count->StepShift)
        Taken = Builder.CreateShl(Taken, Count->StepShift);
      ChunkLast = Builder.CreateAdd(ChunkStart, Taken, "preempt.intask.chunk.last");
    }
    // The inner loop's one exit; the loop's own after it, then the check.
    auto *Branch = cast<BranchInst>(Latch->getTerminator());
    BasicBlock *Exit = Branch->getSuccessor(0);
    ChunkEnd = BasicBlock::Create(Context, Latch->getName() + ".intask.chunk.end", &F, Check);
    Builder.SetInsertPoint(Branch);
    Branch->setCondition(Builder.CreateICmpEQ(Count->Index, ChunkLast, "preempt.intask.chunk.done"));
    Branch->setSuccessor(0, ChunkEnd);
    Leaving = ChunkEnd;
    if (Next) {
      RunEnd = BasicBlock::Create(Context, Latch->getName() + ".intask.run.end", &F, Check);
      RunCut = BasicBlock::Create(Context, Latch->getName() + ".intask.run.cut", &F, Check);
      Builder.SetInsertPoint(ChunkEnd);
      Value *RunNext = Builder.CreateSub(RunLeft, Builder.getInt32(1), "preempt.intask.run.next");
      Builder.CreateCondBr(Builder.CreateICmpEQ(RunNext, Builder.getInt32(0)), RunEnd, Next);
      RunLeft->addIncoming(RunNext, ChunkEnd);
      for (PHINode &Phi : Header->phis()) {
        Value *FromLatch = Phi.getIncomingValueForBlock(Latch);
        cast<PHINode>(Phi.getIncomingValueForBlock(Next))->addIncoming(FromLatch, ChunkEnd);
        cast<PHINode>(TailValues.lookup(&Phi))->addIncoming(FromLatch, RunCut);
      }
      // The loop's last iteration ends a chunk only at a run's end; fewer
      // iterations left than a chunk: the tail, else the check. Tested from
      // the chunk's end, not the run's length: a value more live through the
      // run made ptxas compute the stencil's eight shared addresses again at
      // every run (1.08x its -preempt-intask=0 time against 1.02x).
      Builder.SetInsertPoint(RunEnd);
      Builder.CreateCondBr(Builder.CreateICmpEQ(ChunkLast, Count->Last, "preempt.intask.run.is.last"), Exit, RunCut);
      Builder.SetInsertPoint(RunCut);
      Builder.CreateCondBr(Builder.CreateICmpULT(IterationsAfter(ChunkLast), ConstantInt::get(IndexType, ChunkLength),
                                                 "preempt.intask.run.cut"),
                           Tail, Check);
      Leaving = RunEnd;
    } else {
      BranchInst::Create(Exit, Check, Count->IsLast, ChunkEnd);
    }
    Exit->replacePhiUsesWith(Latch, Leaving);
    CreateCheck(Chunk);
  } else {
    Builder.SetInsertPoint(Header, Header->getFirstInsertionPt());
    Remaining = Builder.CreatePHI(Int32, 2, "preempt.intask.remaining");
    EvictSeen = Builder.CreatePHI(Int32, 2, "preempt.intask.evict.seen");
    Latch->getTerminator()->eraseFromParent();
    Builder.SetInsertPoint(Latch);
    Value *Left = Builder.CreateSub(Remaining, Builder.getInt32(1));
    Builder.CreateCondBr(Builder.CreateICmpEQ(Left, Builder.getInt32(0)), Check, Cont);
    CreateCheck(Cont);
    Builder.SetInsertPoint(Cont, Cont->getFirstInsertionPt());
    PHINode *RemainingAfter = Builder.CreatePHI(Int32, 2, "preempt.intask.remaining.next");
    RemainingAfter->addIncoming(Left, Latch);
    RemainingAfter->addIncoming(NextIterations, Check);
    PHINode *EvictAfter = Builder.CreatePHI(Int32, 2, "preempt.intask.evict.next");
    EvictAfter->addIncoming(EvictSeen, Latch);
    EvictAfter->addIncoming(EvictNext, Check);
    NextIterations = RemainingAfter;
    EvictNext = EvictAfter;
  }
  // The check's state flows around the loop (back from the check or the
  // count-down's merge; afresh from Enter, also on a resume).
  BasicBlock *Back = Count ? Check : Cont;
  Remaining->addIncoming(NextIterations, Back);
  EvictSeen->addIncoming(EvictNext, Back);
  Remaining->addIncoming(FirstIterations, Enter);
  EvictSeen->addIncoming(FirstWord, Enter);
  CheckState[Remaining] = PointIndex;
  CheckState[EvictSeen] = std::nullopt;
  CheckStateRoot[Remaining] = Remaining;
  CheckStateRoot[EvictSeen] = EvictSeen;

  // Save: every thread its values, thread 0 the uniform ones, all the shared memory.
  Builder.SetInsertPoint(Save);
  Value *Record = Builder.CreateCall(helper(helper::InTaskSaveRecord), {Control});
  Value *CtaBase = Builder.CreateConstGEP1_32(Int8, Record, PREEMPT_INTASK_HEADER_BYTES);
  Value *ThreadBase = Builder.CreateConstGEP1_32(Int8, CtaBase, CtaArea + SharedBytes);
  Value *ThreadCount = Builder.CreateCall(helper(helper::InTaskThreads));
  Value *Thread = Builder.CreateCall(helper(helper::InTaskThread));
  Value *IsFirst = Builder.CreateICmpEQ(Thread, Builder.getInt32(0));
  auto ThreadAddress = [&](IRBuilder<> &B, Value *Base, const preempt_intask_step &Step) {
    Value *Offset = B.CreateAdd(B.CreateMul(B.getInt32(Step.offset), ThreadCount),
                                B.CreateMul(Thread, B.getInt32(Plain[Step.value].bytes)));
    return B.CreateGEP(Int8, Base, B.CreateZExt(Offset, B.getInt64Ty()));
  };
  // Records, areas and shared copies are 16-byte aligned and each value sits
  // at a multiple of its own size's largest power of two (up to 8).
  auto AlignOf = [&](Value *V) { return Align(MinAlign(Plain[IndexOf.lookup(V)].bytes, 8)); };
  // Strip-mined, the index at the check is the chunk's last iteration: it is
  // saved from there. A use of the loop's own counter after the inner loop
  // (other than the chunk's phis) moved it, and every address built from it,
  // to per-thread registers in ptxas, and the loop was not unrolled any more.
  auto Saved = [&, ChunkNext = static_cast<Value *>(nullptr)](IRBuilder<> &B, Value *V) mutable -> Value * {
    if (!Count)
      return V;
    if (V == Count->Index)
      return ChunkLast;
    if (V != Count->Index->getIncomingValueForBlock(Latch))
      return V;
    if (!ChunkNext)
      ChunkNext = B.CreateAdd(ChunkLast, ConstantInt::get(ChunkLast->getType(), 1ull << Count->StepShift),
                              "preempt.intask.chunk.next");
    return ChunkNext;
  };
  auto Store = [&](IRBuilder<> &B, Value *V, Value *Address) {
    B.CreateAlignedStore(Saved(B, V), Address, AlignOf(V));
  };
  // Per-CTA values: stored by thread 0 only, in a block of their own.
  BasicBlock *SaveUniform = BasicBlock::Create(Context, Save->getName() + ".uniform", &F, After);
  BasicBlock *SaveRest = BasicBlock::Create(Context, Save->getName() + ".rest", &F, After);
  for (size_t StepIndex = 0; StepIndex < Plan.step_count; ++StepIndex) {
    const preempt_intask_step &Step = Plan.steps[StepIndex];
    if (Step.action == PREEMPT_INTASK_SAVE_THREAD)
      Store(Builder, Values[Step.value], ThreadAddress(Builder, ThreadBase, Step));
  }
  Builder.CreateCondBr(IsFirst, SaveUniform, SaveRest);
  Builder.SetInsertPoint(SaveUniform);
  for (size_t StepIndex = 0; StepIndex < Plan.step_count; ++StepIndex) {
    const preempt_intask_step &Step = Plan.steps[StepIndex];
    if (Step.action == PREEMPT_INTASK_SAVE_CTA)
      Store(Builder, Values[Step.value], Builder.CreateConstGEP1_32(Int8, CtaBase, Step.offset));
  }
  Builder.CreateBr(SaveRest);
  Builder.SetInsertPoint(SaveRest);
  // The shared variables after the CTA's values, each 16-byte aligned: into
  // the record on save, back on restore; none of those skipped at the launch
  // bounds' shape when the CTA has that shape.
  auto CopyShared = [&](Value *Cta, bool IntoShared) {
    PointerType *Generic = PointerType::get(Context, 0);
    uint32_t SharedOffset = CtaArea;
    Value *AtShape = nullptr;
    if (SkippedBytes) {
      Value *Size[3] = {Builder.CreateIntrinsic(Intrinsic::nvvm_read_ptx_sreg_ntid_x, {}),
                        Builder.CreateIntrinsic(Intrinsic::nvvm_read_ptx_sreg_ntid_y, {}),
                        Builder.CreateIntrinsic(Intrinsic::nvvm_read_ptx_sreg_ntid_z, {})};
      AtShape = Builder.CreateAnd(Builder.CreateAnd(Builder.CreateICmpEQ(Size[0], Builder.getInt32(Shape->X)),
                                                    Builder.CreateICmpEQ(Size[1], Builder.getInt32(Shape->Y))),
                                  Builder.CreateICmpEQ(Size[2], Builder.getInt32(Shape->Z)), "preempt.intask.shape");
    }
    for (auto [Global, Skipped] : zip(SavedShared, SkippedAtShape)) {
      uint32_t Bytes = DL.getTypeAllocSize(Global->getValueType()).getFixedValue();
      Value *InRecord = Builder.CreateConstGEP1_32(Int8, Cta, SharedOffset);
      Value *InShared = Builder.CreateAddrSpaceCast(Global, Generic);
      Value *Copied = Builder.getInt32(Bytes);
      if (Skipped)
        Copied = Builder.CreateSelect(AtShape, Builder.getInt32(0), Copied);
      Builder.CreateCall(helper(helper::InTaskCopy),
                         {IntoShared ? InShared : InRecord, IntoShared ? InRecord : InShared, Copied});
      SharedOffset += alignTo(Bytes, 16);
    }
  };
  CopyShared(CtaBase, false);
  Builder.CreateCall(helper(helper::InTaskSaveEnd), {Control, Builder.getInt32(Point.Number), Loop.CurrentTask,
                                                     Loop.CurrentEnd, Loop.NextTask});
  Builder.CreateBr(Loop.Exit);

  // Restore: loads, shared memory back, then the rebuilt values in plan order.
  Builder.SetInsertPoint(Restore);
  Value *Resumed = Builder.CreateCall(helper(helper::InTaskResumeRecord), {Control, Loop.BatchSlot});
  Value *ResumedCta = Builder.CreateConstGEP1_32(Int8, Resumed, PREEMPT_INTASK_HEADER_BYTES);
  Value *ResumedThreads = Builder.CreateConstGEP1_32(Int8, ResumedCta, CtaArea + SharedBytes);
  ThreadCount = Builder.CreateCall(helper(helper::InTaskThreads));
  Thread = Builder.CreateCall(helper(helper::InTaskThread));
  CopyShared(ResumedCta, true);
  if (!SavedShared.empty())
    Builder.CreateCall(helper(helper::InTaskRestored));
  DenseMap<Value *, Value *> Rebuilt;
  auto Mapped = [&](Value *V) { return Rebuilt.count(V) ? Rebuilt[V] : V; };
  for (size_t StepIndex = 0; StepIndex < Plan.step_count; ++StepIndex) {
    const preempt_intask_step &Step = Plan.steps[StepIndex];
    Value *Original = Values[Step.value];
    Type *Type = Original->getType();
    Value *Result = nullptr;
    switch (Step.action) {
    case PREEMPT_INTASK_SAVE_THREAD:
      Result = Builder.CreateAlignedLoad(Type, ThreadAddress(Builder, ResumedThreads, Step), AlignOf(Original));
      break;
    case PREEMPT_INTASK_SAVE_CTA:
      Result = warpUniform(Builder,
                           Builder.CreateAlignedLoad(Type, Builder.CreateConstGEP1_32(Int8, ResumedCta, Step.offset),
                                                     AlignOf(Original)),
                           DL);
      break;
    case PREEMPT_INTASK_REEXECUTE: {
      Instruction *Copy = cast<Instruction>(Original)->clone();
      for (Use &Operand : Copy->operands())
        Operand.set(Mapped(Operand.get()));
      Copy->setMetadata(UniformMark, nullptr);
      Builder.Insert(Copy);
      Result = Copy;
      break;
    }
    case PREEMPT_INTASK_REVERT: {
      auto *Source = cast<Instruction>(Values[Step.source]);
      Value *SourceValue = Mapped(Source), *Other = Mapped(Values[Step.other]);
      bool IsFirstOperand = Source->getOperand(0) == Original && Source->getOperand(1) == Values[Step.other];
      switch (Source->getOpcode()) {
      case Instruction::Add:
        Result = Builder.CreateSub(SourceValue, Other);
        break;
      case Instruction::Sub:
        Result = IsFirstOperand ? Builder.CreateAdd(SourceValue, Other) : Builder.CreateSub(Other, SourceValue);
        break;
      default:
        Result = Builder.CreateXor(SourceValue, Other);
        break;
      }
      break;
    }
    default:
      return "the context planner returned an unknown step";
    }
    Rebuilt[Original] = Result;
  }
  // The resumed task goes on where the check let the loop go on, or, with a
  // count-down, where the latch's own branch on the restored values takes it:
  // the back-edge (through Enter) or the loop's exit. The loop keeps one entry
  // from outside, not one into its middle.
  BasicBlock *BackFrom = Count ? Latch : Cont;
  Instruction *Branch = Count ? BranchInst::Create(Header) : Cont->getTerminator()->clone();
  for (Use &Operand : Branch->operands())
    Operand.set(Mapped(Operand.get()));
  Builder.Insert(Branch);
  Branch->replaceSuccessorWith(Header, Enter);
  for (BasicBlock *Successor : successors(BackFrom)) {
    if (Successor == Header) {
      // What the back-edge carries arrives at Enter from Restore (the live
      // value: rewritten below); a resume phi there says "this loop's own".
      for (PHINode &Phi : Enter->phis()) {
        PHINode *HeaderPhi = HeaderPhiOf.lookup(&Phi);
        Phi.addIncoming(HeaderPhi                        ? HeaderPhi->getIncomingValueForBlock(BackFrom)
                        : &Phi == ResumePhi.lookup(Enter) ? static_cast<Value *>(Builder.getInt32(0))
                                                          : PoisonValue::get(Phi.getType()),
                        Restore);
      }
    } else if (!Count) {
      for (PHINode &Phi : Successor->phis())
        Phi.addIncoming(Phi.getIncomingValueForBlock(Cont), Restore); // the live value: rewritten below
    }
  }

  // A value computed before the loop and re-executed by the restore is
  // computed again in Enter, from Enter's merge of what it is built from, so
  // that inside the loop it is one value and not a merge of two computations:
  // a merge keeps it in a register through the loop (64-bit addresses,
  // predicates), where the unconverted kernel folds or rematerializes it.
  // The same again where the loop's exit and the restore's meet, for the uses
  // after the loop.
  DenseMap<Value *, const preempt_intask_step *> StepOf;
  for (size_t StepIndex = 0; StepIndex < Plan.step_count; ++StepIndex)
    StepOf[Values[Plan.steps[StepIndex].value]] = &Plan.steps[StepIndex];
  // Only instructions safe to run on any operands are computed again: on a
  // resume path to a loop nested in this one, Enter's merges are poison.
  auto IsRecomputed = [&](Value *V) {
    const preempt_intask_step *Step = StepOf.lookup(V);
    return Step && Step->action == PREEMPT_INTASK_REEXECUTE && isSafeToSpeculativelyExecute(cast<Instruction>(V));
  };
  // `ValueOnEdge(Pred, V)`: V's value coming into `Block` from Pred.
  auto RebuildBeforeLoop = [&](BasicBlock *Block, function_ref<Value *(BasicBlock *, Value *)> ValueOnEdge) {
    DenseMap<Value *, Value *> Built;
    std::function<Value *(Value *)> Build = [&](Value *V) -> Value * {
      if (isFree(V, DT))
        return V;
      if (Value *Found = Built.lookup(V))
        return Found;
      Value *Result;
      if (IsRecomputed(V)) {
        Instruction *Copy = cast<Instruction>(V)->clone();
        for (Use &Operand : Copy->operands())
          if (!isa<BasicBlock>(Operand.get()))
            Operand.set(Build(Operand.get()));
        Copy->setMetadata(UniformMark, nullptr);
        Copy->insertBefore(Block->getTerminator()->getIterator());
        if (Block == Enter && all_of(Copy->operands(), [&](Value *Operand) {
              auto *FromCopy = dyn_cast<Instruction>(Operand);
              return isa<BasicBlock>(Operand) || isFree(Operand, DT) || (FromCopy && ResumeSafe.contains(FromCopy));
            }))
          ResumeSafe.insert(Copy);
        Result = Copy;
      } else {
        PHINode *Phi = PHINode::Create(V->getType(), 2, V->getName() + ".merged", Block->begin());
        for (BasicBlock *Pred : predecessors(Block))
          Phi->addIncoming(ValueOnEdge(Pred, V), Pred);
        Result = Phi;
      }
      Built[V] = Result;
      return Result;
    };
    for (Instruction *V : Live)
      if (DT.dominates(V->getParent(), Preheader) && IsRecomputed(V))
        Build(V);
    return Built;
  };
  DenseMap<Value *, Value *> Entered = RebuildBeforeLoop(Enter, [&](BasicBlock *Pred, Value *V) -> Value * {
    if (Pred == Restore)
      return Mapped(V);
    return Pred == Preheader ? V : PoisonValue::get(V->getType());
  });
  // Strip-mined, the loop leaves from the chunk's end alone (a resumed task
  // goes around it): Enter's values, computed again there, are not carried
  // through the loop either (8 more registers in the bench's stencil).
  DenseMap<Value *, Value *> Exited;
  BasicBlock *ExitedBlock = nullptr, *LoopExit = nullptr;
  SmallVector<BasicBlock *, 2> ExitFrom;
  if (Count) {
    LoopExit = Leaving->getTerminator()->getSuccessor(0);
    ExitFrom = {Leaving};
  }
  for (BasicBlock *Successor : successors(Branch))
    if (Successor != Enter) {
      LoopExit = Successor;
      ExitFrom = {Cont, Restore};
    }
  if (LoopExit && !Entered.empty()) {
    ExitedBlock = SplitBlockPredecessors(LoopExit, ExitFrom, ".intask.exited");
    Exited = RebuildBeforeLoop(ExitedBlock, [&](BasicBlock *Pred, Value *V) -> Value * {
      return Pred == Restore ? Mapped(V) : Entered.lookup(V);
    });
  }

  // A point in a loop nested in others: the dispatch leads to Entry, which
  // goes through each outer loop's Enter and header (the switch there on the
  // point being resumed) to Restore, so that every loop keeps its one entry
  // from outside: a second one would make the outer loop irreducible.
  BasicBlock *Entry = Restore;
  if (!Point.OuterHeaders.empty()) {
    Entry = BasicBlock::Create(Context, Latch->getName() + ".intask.resume", &F, Restore);
    BasicBlock *Outermost = EnterOf.lookup(Point.OuterHeaders.front());
    BranchInst::Create(Outermost, Entry);
    addResumeEdge(Entry, Outermost, Builder.getInt32(Point.Number));
    for (size_t Index = 0; Index < Point.OuterHeaders.size(); ++Index) {
      BasicBlock *OuterHeader = Point.OuterHeaders[Index];
      BasicBlock *Next =
          Index + 1 < Point.OuterHeaders.size() ? EnterOf.lookup(Point.OuterHeaders[Index + 1]) : Restore;
      ResumeSwitch.lookup(OuterHeader)->addCase(Builder.getInt32(Point.Number), Next);
      addResumeEdge(OuterHeader, Next, ResumePhi.lookup(OuterHeader));
    }
  }
  // The outer points' check state, where this point's context would hold
  // it, starts afresh instead.
  IRBuilder<> BeforeBranch(Branch);
  auto Afresh = [&](Value *State) -> Value * {
    std::optional<unsigned> Index = checkStateKind(State);
    return Index ? iterationsToCheck(BeforeBranch, *Index) : BeforeBranch.getInt32(0);
  };
  for (Instruction *State : LiveCheckState) {
    Rebuilt[State] = Afresh(State);
    Live.push_back(State);
  }
  for (auto [Phi, Slot] : Spilled)
    BeforeBranch.CreateStore(Afresh(Phi), Slot, true);

  // Every live value now has a second definition, in Restore.
  DispatchSwitch->addCase(Builder.getInt32(Point.Number), Entry);
  for (Instruction *V : Live) {
    auto Found = Rebuilt.find(V);
    if (Found == Rebuilt.end())
      return "the context planner did not rebuild a live value"; // plan_check makes this unreachable
    SmallVector<Use *, 8> Uses;
    for (Use &U : V->uses())
      if (cast<Instruction>(U.getUser())->getParent() != Restore)
        Uses.push_back(&U);
    SmallVector<PHINode *, 4> Merges;
    SSAUpdater Updater(&Merges);
    Updater.Initialize(V->getType(), V->getName());
    Updater.AddAvailableValue(V->getParent(), V);
    Updater.AddAvailableValue(Restore, Found->second);
    if (Value *InEnter = Entered.lookup(V))
      Updater.AddAvailableValue(Enter, InEnter);
    if (Value *InExited = Exited.lookup(V))
      Updater.AddAvailableValue(ExitedBlock, InExited);
    for (Use *U : Uses)
      Updater.RewriteUseAfterInsertions(*U);
    // Each definition here holds the CTA's one value where V does (the
    // restore's, saved once or rebuilt, is V's value at the save): so does
    // a phi of them only, wherever it merges. Unmarked, a later point saved
    // such a phi once per thread (the item after the bench's unrolled hash
    // loop, at its remainder loop's point).
    if (V->getMetadata(UniformMark))
      for (PHINode *Merge : Merges)
        Merge->setMetadata(UniformMark, V->getMetadata(UniformMark));
  }
  // What the restore re-executed that Enter or the exit now computes again.
  for (BasicBlock *Block : {Restore, Enter, ExitedBlock})
    if (Block)
      for (Instruction &I : make_early_inc_range(reverse(*Block)))
        if (isInstructionTriviallyDead(&I))
          I.eraseFromParent();

  if (Tail)
    copyTailLoop(LoopBlocks, Header, Latch, Tail, TailValues, Leaving, Count->IsLast);

  raw_string_ostream Out(Summary);
  Out << "saves " << Plan.thread_bytes << " B per thread and " << Plan.cta_bytes << " B per CTA and " << SharedBytes
      << " B of shared memory";
  if (SkippedBytes)
    Out << " (at " << Shape->X << "x" << Shape->Y << "x" << Shape->Z << " threads " << SharedBytes - SkippedBytes
        << " B: the CTA overwrites " << SkippedBytes << " B of it before any read)";
  if (UnreadBytes)
    Out << " (leaving out " << UnreadBytes << " B the rest of the task does not read)";
  Out << "; every live value: " << Plan.live_thread_bytes << " B per thread ("
      << Plan.saved_count << " saved, " << Plan.reexecute_count << " re-executed, " << Plan.revert_count
      << " reverted); "
      << (Count ? "strip-mined at its trip count" : "counted down (no trip count known, or points nested in it)");
  if (Tail) {
    Out << ", in chunks of " << ChunkLength << " iterations";
    ChunkedPoints++;
  }
  if (BarrierFree)
    Out << "; checks with no barrier of their own (every iteration meets at one)";
  ThreadBytes = std::max(ThreadBytes, Plan.thread_bytes);
  CtaBytes = std::max<uint32_t>(CtaBytes, CtaArea + SharedBytes);
  return "";
}

} // namespace

unsigned placeInTaskYields(Function &F, StringRef KernelName, const TaskLoopValues &Loop, bool Chunks) {
  // In source order (the points' numbers follow it): a loop before the loops
  // nested in it (markInTaskCandidates marks those as -preempt-intask-nested
  // says).
  SmallVector<BasicBlock *, 4> Latches;
  for (BasicBlock &BB : F)
    if (BB.getTerminator() && BB.getTerminator()->getMetadata(LoopMark))
      Latches.push_back(&BB);
  auto OrdinalOf = [](BasicBlock *Latch) {
    return mdconst::extract<ConstantInt>(Latch->getTerminator()->getMetadata(LoopMark)->getOperand(1))->getZExtValue();
  };
  llvm::sort(Latches, [&](BasicBlock *A, BasicBlock *B) { return OrdinalOf(A) < OrdinalOf(B); });
  if (Latches.empty()) {
    clearInTaskMarks(F);
    return 0;
  }
  LLVMContext &Context = F.getContext();
  // The dispatch: a task resumed at point p enters at its restore block.
  BasicBlock *Body = Loop.TaskStart->getSingleSuccessor();
  BasicBlock *Dispatch = BasicBlock::Create(Context, "preempt.intask.dispatch", &F, Body);
  Loop.TaskStart->getTerminator()->replaceSuccessorWith(Body, Dispatch);
  IRBuilder<> Builder(Dispatch);
  SwitchInst *Switch =
      Builder.CreateSwitch(warpUniform(Builder, Loop.ResumePoint, F.getDataLayout()), Body, Latches.size());

  // Weighs a per-thread byte against a per-CTA one; launches may differ.
  uint32_t Threads = 256;
  SmallVector<GlobalVariable *, 4> Shared = sharedVariablesOf(F);
  std::optional<BlockShape> Shape = launchBoundsShape(F);
  PointBuilder Points(F, Loop, Dispatch, Switch, Threads, Chunks ? InTaskChunksVariant : InTaskChunkWork, Shared,
                      Shape);
  uint32_t ThreadBytes = 0, CtaBytes = 0;
  unsigned Placed = 0;
  OptimizationRemarkEmitter Remarks(&F);
  // The loops between the task loop and a marked loop, outermost first.
  auto OuterLoops = [&](::llvm::Loop *L) {
    SmallVector<::llvm::Loop *, 4> Outer;
    for (::llvm::Loop *Around = L->getParentLoop(); Around && !Around->contains(Dispatch);
         Around = Around->getParentLoop())
      Outer.insert(Outer.begin(), Around);
    return Outer;
  };
  // Loops around marked loops get their resume switch before any point is
  // placed (PointBuilder::prepareOuter); one that cannot is said below.
  for (BasicBlock *Latch : Latches) {
    DominatorTree DT(F);
    LoopInfo Loops(DT);
    if (::llvm::Loop *L = Loops.getLoopFor(Latch))
      for (::llvm::Loop *Around : OuterLoops(L))
        if (!Points.prepareOuter(*Around))
          break;
  }
  // What each point's context does with each shared variable, from the IR as
  // it is before any point's save and restore code reads and writes them.
  DenseMap<BasicBlock *, SmallVector<SharedFate, 4>> SharedFatesAt;
  {
    DominatorTree DT(F);
    LoopInfo Loops(DT);
    SmallVector<BasicBlock *, 4> Analysed, Headers;
    for (BasicBlock *Latch : Latches)
      if (::llvm::Loop *L = Loops.getLoopFor(Latch); L && L->getLoopLatch() == Latch) {
        Analysed.push_back(Latch);
        Headers.push_back(L->getHeader());
      }
    std::vector<SmallVector<SharedFate, 4>> Fates = sharedFates(F, Headers, Shared, Shape, *Loop.TaskStart);
    for (auto [Latch, PointFates] : zip(Analysed, Fates))
      SharedFatesAt[Latch] = PointFates;
  }
  TargetLibraryInfoImpl LibraryInfo(F.getParent()->getTargetTriple());
  TargetLibraryInfo Libraries(LibraryInfo, &F);
  for (BasicBlock *Latch : Latches) {
    DominatorTree DT(F);
    LoopInfo Loops(DT);
    ::llvm::Loop *L = Loops.getLoopFor(Latch);
    std::string Why, Summary;
    std::string HeaderName = cast<MDString>(Latch->getTerminator()->getMetadata(LoopMark)->getOperand(0))->getString().str();
    YieldPoint Point{Placed + 1, nullptr, nullptr, Latch, {}, L, SharedFatesAt.lookup(Latch)};
    if (!L || L->getLoopLatch() != Latch || !L->getLoopPreheader() || Point.SharedFates.size() != Shared.size())
      Why = "the loop changed shape in conversion";
    else {
      Point.Header = L->getHeader();
      Point.Preheader = L->getLoopPreheader();
      for (::llvm::Loop *Around : OuterLoops(L)) {
        if (!Points.isPrepared(Around->getHeader()))
          Why = "a loop around it has no preheader or several back-edges";
        Point.OuterHeaders.push_back(Around->getHeader());
      }
      if (Why.empty()) {
        AssumptionCache Assumptions(F);
        ScalarEvolution SE(F, Libraries, Assumptions, DT, Loops);
        Why = Points.place(Point, DT, SE, Summary, ThreadBytes, CtaBytes);
      }
    }
    if (!Why.empty()) {
      // The first variant's remarks say it for both (the same loops, marked alike).
      if (!Chunks)
        remarkMissed(F, "loop " + HeaderName + " of kernel '" + KernelName + "' gets no in-task yield point: " + Why);
      continue;
    }
    Placed++;
    if (!Chunks)
      Remarks.emit([&] {
        return OptimizationRemark(PassName, "InTaskPoint", &F)
               << "in-task yield point at loop " << HeaderName << " of kernel '" << KernelName << "': " << Summary;
      });
  }
  clearInTaskMarks(F);
  if (Placed == 0 || (Chunks && Points.chunkedPoints() == 0))
    return 0;
  if (InTaskBreakForTest) {
    // A use its definition does not dominate: the dispatch reads a value of the task's body.
    for (Instruction &Late : *Body)
      if (!Late.getType()->isVoidTy()) {
        IRBuilder<>(Switch).CreateFreeze(&Late, "preempt.intask.broken");
        break;
      }
  }
  // Release builds of clang skip the verifier (-disable-llvm-verifier): a
  // variant this pass got wrong would reach ptxas as is. (It did: an exit
  // phi's value left unsaved at an unrolled loop's remainder compiled, and
  // the kernel hung after a resume; docs/intask.md.) The launches keep the
  // persistent form instead, whose evictions wait for task boundaries.
  std::string Problems;
  raw_string_ostream ProblemStream(Problems);
  if (verifyFunction(F, &ProblemStream)) {
    StringRef First = StringRef(Problems).split('\n').first;
    remarkMissed(F, "kernel '" + KernelName + "' gets no in-task yield points: internal error, its in-task variant "
                    "failed IR verification (" + First + "); its launches run the persistent form");
    return 0;
  }
  // The kernel's descriptor (control_block.h): the runtime sizes contexts from it.
  Module &M = *F.getParent();
  Type *Int32 = Type::getInt32Ty(Context);
  auto *DescType = ArrayType::get(Int32, 4);
  auto *Desc = new GlobalVariable(
      M, DescType, true, GlobalValue::ExternalLinkage,
      ConstantArray::get(DescType, {ConstantInt::get(Int32, PREEMPT_KERNEL_ABI_VERSION), ConstantInt::get(Int32, Placed),
                                    ConstantInt::get(Int32, ThreadBytes), ConstantInt::get(Int32, CtaBytes)}),
      ((Chunks ? PREEMPT_INTASK_CHUNKS_DESC_PREFIX : PREEMPT_INTASK_DESC_PREFIX) + KernelName).str(), nullptr,
      GlobalValue::NotThreadLocal, 1);
  Desc->setAlignment(Align(4));
  appendToUsed(M, {Desc});
  if (Chunks)
    Remarks.emit([&] {
      return OptimizationRemark(PassName, "InTaskChunks", &F)
             << "kernel '" << KernelName << "' also gets an in-task variant in constant chunks ("
             << ore::NV("Chunked", Points.chunkedPoints()) << " of its " << ore::NV("Points", Placed)
             << " points run them; it saves " << ore::NV("ThreadBytes", ThreadBytes) << " B per thread and "
             << ore::NV("CtaBytes", CtaBytes) << " B per CTA): the runtime times both shapes and runs the faster";
    });
  return Placed;
}

} // namespace preempt
