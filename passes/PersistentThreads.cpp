// PersistentThreads.cpp: converts CUDA/HIP/OpenCL kernels to persistent-thread form at the IR level.
// FLEP §4.1 and EffiSha §5: kernel body inside a loop over tasks fetched from a device counter.
//
// A converted kernel K(args...) becomes K(args..., control, task_count, grid_x, grid_y, grid_z,
// generation, check_interval, relaunched) (control_block.h):
//   preempt.entry:      static allocas; task = __preempt_kernel_begin(control, <launch values>)
//   preempt.task:       per task: if (!__preempt_task_begin(control, task, slot)) goto preempt.exit
//                       batched: goto (a task of the batch left ? preempt.batch.step : preempt.batch)
//   preempt.batch:      if (!__preempt_batch_begin(control, task, slot)) goto preempt.exit; read the batch
//   preempt.batch.step: [__preempt_task_end() when threads meet]; block index one step further
//   preempt.task.start: block index known; yield_now = __preempt_[batch_]yield_check(control[, batch]);
//                       next = __preempt_{task,batch}_prefetch(control, yield_seen[, batch])
//   <original body>     every `ret` jumps to preempt.task.end
//   preempt.task.end:   [__preempt_task_end() per task]; task = next; yield_seen = yield_now;
//                       goto preempt.task
//   preempt.exit:       __preempt_kernel_end(control); ret
// Every block-index and grid-size read, in K and in each function K calls,
// reads the task context in shared memory instead (callees are cloned, so
// unconverted kernels keep the originals).
#include "PersistentThreads.h"

#include "DeviceHelpers.h"
#include "DrainForm.h"
#include "GpuTarget.h"
#include "InTaskYield.h"
#include "KernelCopy.h"
#include "KernelSafety.h"
#include "WarpUniform.h"

#include "preempt/control_block.h"

#include "llvm/ADT/StringSet.h"
#include "llvm/Analysis/OptimizationRemarkEmitter.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/Operator.h"
#include "llvm/Transforms/Utils/Cloning.h"
#include "llvm/Transforms/Utils/ModuleUtils.h"

using namespace llvm;

namespace preempt {

static constexpr const char *PassName = "preempt";

static Function *helperFunction(Module &M, StringRef Name) {
  Function *F = M.getFunction(Name);
  assert(F && "device helpers are linked before the rewrite");
  return F;
}

// Attributes the optimizer derived from the code as it was: a converted
// kernel now synchronizes (barriers), touches shared memory and may loop, and
// a clone now reads the task context instead of a register. Keeping them
// would let codegen move or drop those accesses. AMDGPU's "amdgpu-no-*"
// attributes would even leave the work-item id registers uninitialized.
static void dropDerivedAttributes(Function &F) {
  F.setMemoryEffects(MemoryEffects::unknown());
  for (Attribute::AttrKind Kind : {Attribute::NoSync, Attribute::WillReturn, Attribute::Speculatable,
                                   Attribute::NoFree, Attribute::NoRecurse})
    F.removeFnAttr(Kind);
  SmallVector<StringRef, 16> Derived;
  for (const Attribute &A : F.getAttributes().getFnAttrs())
    if (A.isStringAttribute() && A.getKindAsString().starts_with("amdgpu-no-"))
      Derived.push_back(A.getKindAsString());
  for (StringRef Kind : Derived)
    F.removeFnAttr(Kind);
}

// Replaces every grid read in `F` with a call of the helper that reads the
// task context, or, for block indices, with `TaskBlockIndex` when given (the
// kernel's own reads, loaded once per task). Returns true if `F` read the grid.
static bool remapGridReads(Function &F, GpuTarget Target, ArrayRef<Value *> TaskBlockIndex = {}) {
  Module &M = *F.getParent();
  SmallVector<std::pair<CallBase *, GridRead>, 16> Reads;
  SmallVector<CallBase *, 4> DispatchPointers;
  for (Instruction &I : instructions(F))
    if (auto *Call = dyn_cast<CallBase>(&I)) {
      GridRead Read = classifyGridRead(*Call, Target);
      if (Read.What != GridRead::None)
        Reads.push_back({Call, Read});
      else if (Target == GpuTarget::AMDGPU && isDispatchPointer(*Call))
        DispatchPointers.push_back(Call);
    }
  for (auto &[Call, Read] : Reads) {
    StringRef Name = Read.What == GridRead::BlockIndex ? helper::BlockIndex[Read.Axis] : helper::GridDim[Read.Axis];
    IRBuilder<> Builder(Call);
    Value *Replacement = Read.What == GridRead::BlockIndex && !TaskBlockIndex.empty()
                             ? TaskBlockIndex[Read.Axis]
                             : Builder.CreateCall(helperFunction(M, Name));
    Replacement = Builder.CreateZExtOrTrunc(Replacement, Call->getType());
    Call->replaceAllUsesWith(Replacement);
    Call->eraseFromParent();
  }
  // AMDGPU's grid size lives in the dispatch packet, in work-items (bytes
  // 12, 16, 20); the workgroup size (bytes 4, 6, 8, u16) is unchanged. The
  // safety check admitted only constant-offset loads.
  bool ReadsPacket = false;
  for (CallBase *Packet : DispatchPointers)
    forEachDispatchLoad(*Packet, [&](LoadInst &Load, int64_t Offset) {
      if (Offset < 12 || Offset >= 24)
        return;
      unsigned Axis = unsigned(Offset - 12) / 4;
      IRBuilder<> Builder(&Load);
      Value *WorkgroupSizeField = Builder.CreateConstGEP1_64(Builder.getInt8Ty(), Packet, 4 + 2 * Axis);
      Value *WorkgroupSize = Builder.CreateZExt(Builder.CreateLoad(Builder.getInt16Ty(), WorkgroupSizeField),
                                                Builder.getInt32Ty());
      Value *Groups = Builder.CreateCall(helperFunction(M, helper::GridDim[Axis]));
      Load.replaceAllUsesWith(Builder.CreateMul(Groups, WorkgroupSize, "preempt.grid.size"));
      Load.eraseFromParent();
      ReadsPacket = true;
    });
  return !Reads.empty() || ReadsPacket;
}

// Functions reachable from converted kernels that read the grid, directly or
// through their callees: these get a clone that reads the task context.
static SetVector<Function *> functionsNeedingClones(ArrayRef<Function *> Kernels, GpuTarget Target) {
  SetVector<Function *> Reachable;
  for (Function *Kernel : Kernels)
    for (Function *F : reachableFunctions(*Kernel))
      if (F != Kernel)
        Reachable.insert(F);
  SetVector<Function *> Needing;
  for (Function *F : Reachable)
    for (Instruction &I : instructions(*F))
      if (auto *Call = dyn_cast<CallBase>(&I))
        if (classifyGridRead(*Call, Target).What != GridRead::None || isDispatchPointer(*Call)) {
          Needing.insert(F);
          break;
        }
  // Callers of a function needing a clone need one too, up to the kernels.
  for (bool Changed = true; Changed;) {
    Changed = false;
    for (Function *F : Reachable)
      if (!Needing.contains(F))
        for (Instruction &I : instructions(*F))
          if (auto *Call = dyn_cast<CallBase>(&I); Call && Needing.contains(Call->getCalledFunction())) {
            Changed |= Needing.insert(F);
            break;
          }
  }
  return Needing;
}

static void redirectCalls(Function &F, const DenseMap<Function *, Function *> &Clones) {
  for (Instruction &I : instructions(F))
    if (auto *Call = dyn_cast<CallBase>(&I))
      if (Function *Clone = Clones.lookup(Call->getCalledFunction())) {
        Call->setCalledFunction(Clone);
        // A call site may say `memory(none)` too; the clone reads memory now.
        Call->removeFnAttr(Attribute::Memory);
        Call->removeFnAttr(Attribute::Speculatable);
        Call->removeFnAttr(Attribute::WillReturn);
      }
}

// Appends the launch parameters (control_block.h, PREEMPT_KERNEL_EXTRA_PARAMS)
// to `Kernel`, keeping its name, attributes, calling convention and metadata.
// Returns the new function.
static Function *appendControlParameter(Function &Kernel) {
  FunctionType *OldType = Kernel.getFunctionType();
  SmallVector<Type *, 8> Params(OldType->params());
  Type *Int32 = Type::getInt32Ty(Kernel.getContext());
  Params.append({PointerType::get(Kernel.getContext(), 0), Int32, Int32, Int32, Int32, Int32, Int32, Int32});
  FunctionType *NewType = FunctionType::get(OldType->getReturnType(), Params, false);
  Function *NewKernel = Function::Create(NewType, Kernel.getLinkage(), Kernel.getAddressSpace(), "", Kernel.getParent());
  NewKernel->copyAttributesFrom(&Kernel);
  NewKernel->copyMetadata(&Kernel, 0);
  NewKernel->takeName(&Kernel);
  Kernel.getParent()->getFunctionList().remove(NewKernel);
  Kernel.getParent()->getFunctionList().insert(Kernel.getIterator(), NewKernel);
  NewKernel->splice(NewKernel->begin(), &Kernel);
  for (auto [Old, New] : zip(Kernel.args(), NewKernel->args())) {
    New.takeName(&Old);
    Old.replaceAllUsesWith(&New);
  }
  static const char *const ExtraNames[PREEMPT_KERNEL_EXTRA_PARAMS] = {
      "preempt.control", "preempt.task.count", "preempt.grid.x",         "preempt.grid.y",
      "preempt.grid.z",  "preempt.generation", "preempt.check.interval", "preempt.relaunched"};
  for (unsigned Index = 0; Index < PREEMPT_KERNEL_EXTRA_PARAMS; ++Index) {
    unsigned ArgNo = OldType->getNumParams() + Index;
    NewKernel->getArg(ArgNo)->setName(ExtraNames[Index]);
    NewKernel->addParamAttr(ArgNo, Attribute::NoUndef);
  }
  Kernel.replaceAllUsesWith(NewKernel); // metadata, llvm.used: both are plain pointers
  Kernel.eraseFromParent();
  return NewKernel;
}

// How tasks follow one another in a CTA.
enum class TaskLoop {
  // Thread 0 publishes each task, a barrier broadcasts it, and a barrier
  // ends each task.
  PerTaskEndBarrier,
  // Thread 0 publishes each batch; the CTA runs its tasks together, every
  // thread stepping the block index itself, with a barrier between tasks.
  BatchedBarrier,
  // Thread 0 publishes each batch; threads run its tasks on their own.
  Batched,
};

// When threads meet inside a task (shared memory, barriers, warp-level
// operations), one barrier between tasks keeps every thread out of task n+1
// (its shared memory included) until all have left task n, and the body's own
// barriers pair up task by task (the barrier rule makes them uniform). Only a
// new batch needs thread 0 to publish before that barrier: inside a batch it
// has nothing to do there, so the barrier does not wait for it (publishing
// every task: the suite's reduction 1.32x its original time on the H100, its
// siblings waiting at the barrier for thread 0's chain of shared-memory
// reads; 1.24x without).
//
// Publishing each task, with a second barrier at each task's end, is needed
// only when a cloned callee reads the task context or there is inline
// assembly the pass cannot read: a cloned callee reads the block index through
// `current_slot` at any point of the task, so the slot must be the current
// task's, and thread 0 rewrites `current_slot` before the publishing barrier,
// while siblings may still be in task n. Unsafe inline assembly
// (lib/inline_asm.c), and any on AMDGPU, might do anything.
//
// Threads may even run different tasks of a batch at once when they never
// meet inside a task: no shared memory, no barrier, nothing convergent (warp
// shuffles, votes: lanes of one warp must be in the same task). Only NVPTX:
// AMDGPU's wave-level intrinsics are not all marked convergent. PTX inline
// assembly of register work in its own thread is an instruction like any
// other; warp-level asm (shfl.sync, vote) meets the warp, and asm with memory
// accesses counts as meeting too (it may address shared memory through an
// integer or generic address).
static TaskLoop chooseTaskLoop(Function &Kernel, const DenseMap<Function *, Function *> &Clones, GpuTarget Target) {
  auto IsSharedPointer = [](const Value *V) {
    auto *Type = dyn_cast<PointerType>(V->getType());
    if (Type && Type->getAddressSpace() == 3)
      return true;
    const auto *Global = dyn_cast<GlobalVariable>(V->stripPointerCasts());
    return Global && Global->getAddressSpace() == 3;
  };
  bool ThreadsMeet = Target != GpuTarget::NVPTX;
  for (Function *F : reachableFunctions(Kernel))
    for (Instruction &I : instructions(*F)) {
      if (auto *Call = dyn_cast<CallBase>(&I); Call && Call->isInlineAsm()) {
        if (Target != GpuTarget::NVPTX)
          return TaskLoop::PerTaskEndBarrier;
        preempt_asm_summary Asm = classifyInlineAsm(*Call);
        if (Asm.asm_class == PREEMPT_ASM_UNSAFE)
          return TaskLoop::PerTaskEndBarrier;
        if (Asm.asm_class == PREEMPT_ASM_MEMORY || (Asm.flags & PREEMPT_ASM_LANES))
          ThreadsMeet = true;
      } else if (Call) {
        if (Clones.count(Call->getCalledFunction()))
          return TaskLoop::PerTaskEndBarrier;
        Function *Callee = Call->getCalledFunction();
        // A defined callee is walked itself; anything else must not synchronize.
        if (isCtaBarrier(*Call) || !Callee || (Callee->isDeclaration() && Call->isConvergent()))
          ThreadsMeet = true;
      }
      if (IsSharedPointer(&I) || any_of(I.operands(), [&](const Use &Operand) { return IsSharedPointer(Operand); }))
        ThreadsMeet = true;
    }
  return ThreadsMeet ? TaskLoop::BatchedBarrier : TaskLoop::Batched;
}

// Wraps the body in the task loop (diagram at the top of this file) and
// returns the block index of the current task, loaded once per task.
// With `InTask` set (a batched loop only), also reads whether each batch
// resumes an in-task context and hands the values the points need over.
static SmallVector<Value *, 3> buildTaskLoop(Function &Kernel, TaskLoop Loop, TaskLoopValues *InTask) {
  Module &M = *Kernel.getParent();
  LLVMContext &Context = Kernel.getContext();
  unsigned FirstExtra = Kernel.arg_size() - PREEMPT_KERNEL_EXTRA_PARAMS;
  Argument *Control = Kernel.getArg(FirstExtra);
  BasicBlock *Entry = &Kernel.getEntryBlock();

  // Static allocas stay in the entry block: inside the loop they would grow
  // the stack on every task.
  SmallVector<AllocaInst *, 8> Allocas;
  for (Instruction &I : *Entry)
    if (auto *Alloca = dyn_cast<AllocaInst>(&I); Alloca && Alloca->isStaticAlloca())
      Allocas.push_back(Alloca);
  for (AllocaInst *Alloca : reverse(Allocas))
    Alloca->moveBefore(*Entry, Entry->begin());
  BasicBlock::iterator FirstNonAlloca = Entry->begin();
  while (isa<AllocaInst>(*FirstNonAlloca))
    ++FirstNonAlloca;
  BasicBlock *Body = Entry->splitBasicBlock(FirstNonAlloca, "preempt.body");
  Entry->getTerminator()->eraseFromParent();
  Entry->setName("preempt.entry");

  BasicBlock *TaskHead = BasicBlock::Create(Context, "preempt.task", &Kernel, Body);
  BasicBlock *TaskStart = BasicBlock::Create(Context, "preempt.task.start", &Kernel, Body);
  BasicBlock *TaskEnd = BasicBlock::Create(Context, "preempt.task.end", &Kernel);
  BasicBlock *Exit = BasicBlock::Create(Context, "preempt.exit", &Kernel);

  IRBuilder<> Builder(Entry);
  // The block index and batch thread 0 publishes in the slot, read by every
  // thread after the barrier, go through redux.sync: read from shared memory
  // they look per-thread to ptxas, and so does every address the body builds
  // from them. The bench's gemm took 3% less time (docs/persistent-threads.md).
  // Not the branch to the exit: with it too, its in-task variant took 6% more.
  auto Uniform = [&](Value *V) { return warpUniform(Builder, V, M.getDataLayout()); };
  Value *FirstTask =
      Builder.CreateCall(helperFunction(M, helper::KernelBegin),
                         {Control, Kernel.getArg(FirstExtra + 1), Kernel.getArg(FirstExtra + 2),
                          Kernel.getArg(FirstExtra + 3), Kernel.getArg(FirstExtra + 4), Kernel.getArg(FirstExtra + 5),
                          Kernel.getArg(FirstExtra + 6), Kernel.getArg(FirstExtra + 7)});
  if (InTask)
    Builder.CreateCall(helperFunction(M, helper::InTaskBegin), {Control});
  Builder.CreateBr(TaskHead);

  Builder.SetInsertPoint(TaskHead);
  PHINode *Task = Builder.CreatePHI(FirstTask->getType(), 2, "preempt.task.id");
  Task->addIncoming(FirstTask, Entry);
  PHINode *Slot = Builder.CreatePHI(Builder.getInt32Ty(), 2, "preempt.task.slot");
  Slot->addIncoming(Builder.getInt32(0), Entry);
  PHINode *YieldSeen = Builder.CreatePHI(Builder.getInt32Ty(), 2, "preempt.yield.seen");
  YieldSeen->addIncoming(Builder.getInt32(0), Entry);

  SmallVector<Value *, 3> BlockIndex;
  Value *NextSlot = nullptr;
  // Batched: every thread's own place in the batch and its last block index.
  PHINode *LocalTask = nullptr, *LocalEnd = nullptr, *LastIndex[3] = {};
  Value *CurrentTask = nullptr, *CurrentEnd = nullptr, *BatchStart = nullptr;
  if (Loop == TaskLoop::PerTaskEndBarrier) {
    Value *HasTask = Builder.CreateCall(helperFunction(M, helper::TaskBegin), {Control, Task, Slot});
    Builder.CreateCondBr(Builder.CreateICmpNE(HasTask, Constant::getNullValue(HasTask->getType())), TaskStart,
                         Exit);
    // Every thread reads its block index right after the barrier, before
    // thread 0 can rewrite it for the next task.
    Builder.SetInsertPoint(TaskStart);
    for (StringRef Name : helper::TaskBlockIndex)
      BlockIndex.push_back(Uniform(Builder.CreateCall(helperFunction(M, Name), {Slot})));
  } else {
    Type *Int32 = Builder.getInt32Ty();
    LocalTask = Builder.CreatePHI(Int32, 2, "preempt.local.task");
    LocalEnd = Builder.CreatePHI(Int32, 2, "preempt.local.end");
    LocalTask->addIncoming(Builder.getInt32(0), Entry);
    LocalEnd->addIncoming(Builder.getInt32(0), Entry);
    for (unsigned Axis = 0; Axis < 3; Axis++) {
      LastIndex[Axis] = Builder.CreatePHI(Int32, 2, "preempt.last.index");
      LastIndex[Axis]->addIncoming(Builder.getInt32(0), Entry);
    }
    BasicBlock *Refill = BasicBlock::Create(Context, "preempt.batch", &Kernel, TaskStart);
    BasicBlock *Refilled = BasicBlock::Create(Context, "preempt.batch.start", &Kernel, TaskStart);
    BasicBlock *Step = BasicBlock::Create(Context, "preempt.batch.step", &Kernel, TaskStart);
    Builder.CreateCondBr(Builder.CreateICmpUGE(LocalTask, LocalEnd, "preempt.batch.done"), Refill, Step);

    Builder.SetInsertPoint(Refill);
    Value *HasTask = Builder.CreateCall(helperFunction(M, helper::BatchBegin), {Control, Task, Slot});
    Builder.CreateCondBr(Builder.CreateICmpNE(HasTask, Constant::getNullValue(HasTask->getType())), Refilled, Exit);
    Builder.SetInsertPoint(Refilled);
    Value *Published[3];
    for (unsigned Axis = 0; Axis < 3; Axis++)
      Published[Axis] = Uniform(Builder.CreateCall(helperFunction(M, helper::TaskBlockIndex[Axis]), {Slot}));
    Value *First = Uniform(Builder.CreateCall(helperFunction(M, helper::BatchFirst), {Slot}));
    Value *End = Uniform(Builder.CreateCall(helperFunction(M, helper::BatchEnd), {Slot}));
    Value *RefilledSlot = Builder.CreateXor(Slot, Builder.getInt32(1)); // the next batch's slot
    Value *ResumeRead = InTask ? Builder.CreateCall(helperFunction(M, helper::InTaskResumePoint), {Slot}) : nullptr;
    Builder.CreateBr(TaskStart);

    // The next task of the batch: one step along x, carried into y and z
    // over the original grid (the launch's grid_x, grid_y parameters).
    Builder.SetInsertPoint(Step);
    // The refill's barrier separates tasks on that path.
    if (Loop == TaskLoop::BatchedBarrier)
      Builder.CreateCall(helperFunction(M, helper::TaskEnd));
    Value *GridX = Kernel.getArg(FirstExtra + 2), *GridY = Kernel.getArg(FirstExtra + 3);
    Value *X = Builder.CreateAdd(LastIndex[0], Builder.getInt32(1));
    Value *CarryX = Builder.CreateICmpEQ(X, GridX);
    Value *Y = Builder.CreateAdd(LastIndex[1], Builder.CreateZExt(CarryX, Int32));
    Value *CarryY = Builder.CreateICmpEQ(Y, GridY);
    Value *Stepped[3] = {Builder.CreateSelect(CarryX, Builder.getInt32(0), X),
                         Builder.CreateSelect(CarryY, Builder.getInt32(0), Y),
                         Builder.CreateAdd(LastIndex[2], Builder.CreateZExt(CarryY, Int32))};
    Builder.CreateBr(TaskStart);

    Builder.SetInsertPoint(TaskStart);
    for (unsigned Axis = 0; Axis < 3; Axis++) {
      PHINode *Index = Builder.CreatePHI(Int32, 2, "preempt.block.index");
      Index->addIncoming(Published[Axis], Refilled);
      Index->addIncoming(Stepped[Axis], Step);
      BlockIndex.push_back(Index);
    }
    if (Loop == TaskLoop::Batched) { // for __preempt_batch_yield_check
      PHINode *StartsBatch = Builder.CreatePHI(Int32, 2, "preempt.batch.starts");
      StartsBatch->addIncoming(Builder.getInt32(1), Refilled);
      StartsBatch->addIncoming(Builder.getInt32(0), Step);
      BatchStart = StartsBatch;
    }
    PHINode *Current = Builder.CreatePHI(Int32, 2, "preempt.current.task");
    Current->addIncoming(First, Refilled);
    Current->addIncoming(LocalTask, Step);
    PHINode *CurrentEndPhi = Builder.CreatePHI(Int32, 2, "preempt.current.end");
    CurrentEndPhi->addIncoming(End, Refilled);
    CurrentEndPhi->addIncoming(LocalEnd, Step);
    PHINode *SlotAfter = Builder.CreatePHI(Int32, 2, "preempt.next.slot");
    SlotAfter->addIncoming(RefilledSlot, Refilled);
    SlotAfter->addIncoming(Slot, Step);
    CurrentTask = Current;
    CurrentEnd = CurrentEndPhi;
    NextSlot = SlotAfter;
    if (InTask) {
      // Only a batch's first task can resume, from the slot just published.
      PHINode *ResumePoint = Builder.CreatePHI(Int32, 2, "preempt.intask.resume");
      ResumePoint->addIncoming(ResumeRead, Refilled);
      ResumePoint->addIncoming(Builder.getInt32(0), Step);
      PHINode *BatchSlot = Builder.CreatePHI(Int32, 2, "preempt.intask.slot");
      BatchSlot->addIncoming(Slot, Refilled);
      BatchSlot->addIncoming(Builder.getInt32(0), Step);
      InTask->Control = Control;
      InTask->ResumePoint = ResumePoint;
      InTask->BatchSlot = BatchSlot;
      InTask->CurrentTask = Current;
      InTask->CurrentEnd = CurrentEndPhi;
      InTask->TaskStart = TaskStart;
      InTask->Exit = Exit;
    }
  }
  // Thread 0 reads the yield mask (for the fetch after next) and issues the
  // fetch of the next task, both left in flight while the task runs.
  // Where threads never meet, thread 0 tests the batch it holds in registers
  // (task_loop.cu says why only there).
  Value *YieldNow, *NextTask;
  if (Loop == TaskLoop::Batched) {
    YieldNow = Builder.CreateCall(helperFunction(M, helper::BatchYieldCheck),
                                  {Control, CurrentTask, CurrentEnd, BatchStart, YieldSeen}, "preempt.yield.now");
    NextTask = Builder.CreateCall(helperFunction(M, helper::BatchPrefetch),
                                  {Control, YieldSeen, CurrentTask, CurrentEnd}, "preempt.next.task");
  } else {
    YieldNow = Builder.CreateCall(helperFunction(M, helper::YieldCheck), {Control}, "preempt.yield.now");
    NextTask = Builder.CreateCall(helperFunction(M, helper::TaskPrefetch), {Control, YieldSeen}, "preempt.next.task");
  }
  if (InTask)
    InTask->NextTask = NextTask;
  Builder.CreateBr(Body);

  SmallVector<ReturnInst *, 4> Returns;
  for (BasicBlock &BB : Kernel)
    if (auto *Return = dyn_cast_or_null<ReturnInst>(BB.getTerminator()))
      Returns.push_back(Return);
  for (ReturnInst *Return : Returns) {
    BranchInst::Create(TaskEnd, Return->getIterator());
    Return->eraseFromParent();
  }

  Builder.SetInsertPoint(TaskEnd);
  if (Loop == TaskLoop::PerTaskEndBarrier)
    Builder.CreateCall(helperFunction(M, helper::TaskEnd));
  Task->addIncoming(NextTask, TaskEnd);
  YieldSeen->addIncoming(YieldNow, TaskEnd);
  if (Loop != TaskLoop::PerTaskEndBarrier) {
    Slot->addIncoming(NextSlot, TaskEnd);
    LocalTask->addIncoming(Builder.CreateAdd(CurrentTask, Builder.getInt32(1), "preempt.local.next"), TaskEnd);
    LocalEnd->addIncoming(CurrentEnd, TaskEnd);
    for (unsigned Axis = 0; Axis < 3; Axis++)
      LastIndex[Axis]->addIncoming(BlockIndex[Axis], TaskEnd);
  } else {
    Slot->addIncoming(Builder.CreateXor(Slot, Builder.getInt32(1), "preempt.next.slot"), TaskEnd);
  }
  Builder.CreateBr(TaskHead);

  Builder.SetInsertPoint(Exit);
  Builder.CreateCall(helperFunction(M, helper::KernelEnd), {Control});
  Builder.CreateRetVoid();
  return BlockIndex;
}

// The runtime finds this device global by name to tell a converted kernel
// from an unconverted one, and checks the ABI version it holds.
static void addKernelMarker(Module &M, StringRef KernelName) {
  Type *Int32 = Type::getInt32Ty(M.getContext());
  auto *Marker = new GlobalVariable(M, Int32, /*isConstant=*/true, GlobalValue::ExternalLinkage,
                                    ConstantInt::get(Int32, PREEMPT_KERNEL_ABI_VERSION),
                                    (PREEMPT_KERNEL_MARKER_PREFIX + KernelName).str(), nullptr,
                                    GlobalValue::NotThreadLocal, /*AddressSpace=*/1);
  Marker->setAlignment(Align(4));
  appendToUsed(M, {Marker});
}

// Beside the marker, for a kernel safe only in blocks of one row or of rows of whole warps (KernelSafety.cpp's
// warp-sync rule): the runtime runs launches of other block shapes as written.
static void addWarpRowsMarker(Module &M, StringRef KernelName) {
  Type *Int32 = Type::getInt32Ty(M.getContext());
  auto *Marker = new GlobalVariable(M, Int32, /*isConstant=*/true, GlobalValue::ExternalLinkage,
                                    ConstantInt::get(Int32, 1), (PREEMPT_WARP_ROWS_PREFIX + KernelName).str(), nullptr,
                                    GlobalValue::NotThreadLocal, /*AddressSpace=*/1);
  Marker->setAlignment(Align(4));
  appendToUsed(M, {Marker});
}

// Keeps `Kernel` as written, before conversion, under the name the runtime
// looks up (control_block.h, PREEMPT_ORIGINAL_KERNEL_PREFIX): a launch whose
// grid fits in one wave of persistent CTAs runs this copy, since no CTA would
// ever reach a task boundary at which to yield (KernelCopy.cpp says what
// comes along). It gets no marker, so the runtime never takes it for a
// converted kernel, and the pass skips it if it runs again. A taken name
// means no copy: the launch stays persistent.
static void addOriginalCopy(Function &Kernel) {
  copyKernel(Kernel, (PREEMPT_ORIGINAL_KERNEL_PREFIX + Kernel.getName()).str(), ".original");
}

// Gives the kernel's own name back to the copy as written, and the converted
// kernel the persistent prefix (control_block.h, ABI 9): what the program
// registered under the name is then the kernel it wrote, so a launch that
// does not go through the runtime (a graph's kernel node, cudaLaunchKernelEx,
// a launch through a function pointer, cuLaunchKernel) runs it as written
// instead of a converted kernel without its parameters. Without a copy (no
// NVPTX, or a taken name) nothing is swapped: the runtime refuses such a
// kernel's launches (resolve_kernel) rather than guess.
static void swapWithOriginal(Module &M, Function &Converted, StringRef Name) {
  Function *Copy = M.getFunction((PREEMPT_ORIGINAL_KERNEL_PREFIX + Name).str());
  if (!Copy)
    return;
  std::string KernelName = Name.str();
  Converted.setName(PREEMPT_PERSISTENT_KERNEL_PREFIX + KernelName);
  Copy->setName(KernelName);
}

PreservedAnalyses PersistentThreadsPass::run(Module &M, ModuleAnalysisManager &MAM) {
  GpuTarget Target = gpuTargetOf(M);
  if (Target == GpuTarget::None)
    return PreservedAnalyses::all();
  auto &FAM = MAM.getResult<FunctionAnalysisManagerModuleProxy>(M).getManager();

  SmallVector<Function *, 8> Convertible;
  StringSet<> NeedsWarpRows; // convertible where blocks are one row or rows of whole warps (KernelSafety.h)
  for (Function &F : M) {
    // The unconverted copy of a kernel a previous run converted is not a
    // kernel of the program's own: leave it as it is, without a remark.
    if (!isKernel(F, Target) || F.getName().starts_with(PREEMPT_ORIGINAL_KERNEL_PREFIX) ||
        F.getName().starts_with(PREEMPT_PERSISTENT_KERNEL_PREFIX) ||
        F.getName().starts_with(PREEMPT_DRAIN_KERNEL_PREFIX) || F.getName().starts_with(PREEMPT_INTASK_KERNEL_PREFIX) ||
        F.getName().starts_with(PREEMPT_INTASK_CHUNKS_KERNEL_PREFIX))
      continue;
    OptimizationRemarkEmitter Remarks(&F);
    std::string Reason;
    bool WarpRows = false;
    if (M.getNamedGlobal((PREEMPT_KERNEL_MARKER_PREFIX + F.getName()).str()))
      Reason = "is already in persistent-thread form";
    else if (!F.getReturnType()->isVoidTy())
      Reason = "does not return void";
    else if (F.isVarArg())
      Reason = "is variadic";
    else if (F.hasFnAttribute("nvvm.cluster_dim") || F.hasFnAttribute("nvvm.blocksareclusters"))
      Reason = "is launched in thread-block clusters";
    else
      Reason = whyNotConvertible(F, Target, FAM, &WarpRows);
    if (Reason.empty()) {
      Convertible.push_back(&F);
      if (WarpRows)
        NeedsWarpRows.insert(F.getName());
      continue;
    }
    Remarks.emit([&] {
      return OptimizationRemarkMissed(PassName, "NotConverted", &F)
             << "kernel '" << ore::NV("Kernel", F.getName()) << "' left unchanged (not preemptible): it "
             << Reason;
    });
  }
  if (Convertible.empty())
    return PreservedAnalyses::all();

  if (Error Err = linkDeviceHelpers(M, Target)) {
    M.getContext().emitError("preempt: " + toString(std::move(Err)));
    return PreservedAnalyses::all();
  }

  // Copied before anything below changes the kernels or their callees. NVPTX
  // only: the HIP runtime path cannot launch a copy yet (gpu_hip.c), and on
  // AMDGPU a copy would only lengthen the code and CTXBack's reports.
  // Kernels with loops that can take in-task yield points get a variant
  // with them (InTaskYield.cpp), converted below like the kernel itself.
  // A variant may have a twin in constant chunks (which of the two shapes
  // runs faster depends on ptxas's registers: the runtime times both).
  struct InTaskVariant {
    std::string Name;
    Function *Variant, *Chunks;
  };
  SmallVector<InTaskVariant, 8> InTaskVariants;
  if (Target == GpuTarget::NVPTX)
    for (Function *Kernel : Convertible) {
      addOriginalCopy(*Kernel);
      addDrainForm(*Kernel);
      if (Function *Variant = makeInTaskVariant(*Kernel, FAM))
        InTaskVariants.push_back(
            {Kernel->getName().str(), Variant, makeInTaskChunksVariant(*Variant, Kernel->getName())});
    }

  DenseMap<Function *, Function *> Clones;
  for (Function *F : functionsNeedingClones(Convertible, Target)) {
    ValueToValueMapTy Map;
    Function *Clone = CloneFunction(F, Map);
    Clone->setName(F->getName() + ".preempt");
    Clone->setLinkage(GlobalValue::InternalLinkage);
    dropDerivedAttributes(*Clone);
    Clones[F] = Clone;
  }
  for (auto &[Original, Clone] : Clones) {
    redirectCalls(*Clone, Clones);
    remapGridReads(*Clone, Target);
  }

  // The conversion proper: callees' clones, the launch parameters, the task
  // loop, the grid reads. Returns the converted kernel (a new function).
  auto Convert = [&](Function &Kernel, TaskLoop Loop, TaskLoopValues *InTask) {
    FAM.clear(Kernel, Kernel.getName());
    redirectCalls(Kernel, Clones);
    Function *Converted = appendControlParameter(Kernel);
    dropDerivedAttributes(*Converted);
    SmallVector<Value *, 3> BlockIndex = buildTaskLoop(*Converted, Loop, InTask);
    remapGridReads(*Converted, Target, BlockIndex);
    return Converted;
  };
  for (Function *Kernel : Convertible) {
    std::string Name = Kernel->getName().str();
    Function *Converted = Convert(*Kernel, chooseTaskLoop(*Kernel, Clones, Target), nullptr);
    addKernelMarker(M, Name);
    if (NeedsWarpRows.contains(Name)) {
      addWarpRowsMarker(M, Name);
      OptimizationRemarkEmitter(Converted).emit([&] {
        return OptimizationRemark(PassName, "WarpRows", Converted)
               << "kernel '" << ore::NV("Kernel", Name)
               << "': its converted forms run only in blocks of one row of threads or of rows of whole warps (a "
                  "warp-synchronous operation under a branch on threadIdx.x at warp boundaries); other block "
                  "shapes run as written";
      });
    }
    swapWithOriginal(M, *Converted, Name);
    OptimizationRemarkEmitter Remarks(Converted);
    Remarks.emit([&] {
      return OptimizationRemark(PassName, "Converted", Converted)
             << "kernel '" << ore::NV("Kernel", Name) << "' converted to persistent-thread form";
    });
  }
  // The in-task variants: the same conversion, with their points placed.
  // Their check's barrier needs every thread of the CTA in the same task, so
  // the threads meet between tasks. (A variant never needs the per-task
  // loop: kernels with calls or inline assembly get none.)
  for (InTaskVariant &Shapes : InTaskVariants) {
    TaskLoopValues InTask;
    Function *Converted = Convert(*Shapes.Variant, TaskLoop::BatchedBarrier, &InTask);
    bool Placed = placeInTaskYields(*Converted, Shapes.Name, InTask) != 0;
    if (!Placed)
      eraseInTaskVariant(*Converted);
    if (!Shapes.Chunks)
      continue;
    TaskLoopValues ChunksInTask;
    Function *Chunks = Convert(*Shapes.Chunks, TaskLoop::BatchedBarrier, &ChunksInTask);
    if (!Placed || placeInTaskYields(*Chunks, Shapes.Name, ChunksInTask, /*Chunks=*/true) == 0)
      eraseInTaskVariant(*Chunks);
  }
  inlineDeviceHelpers(M);
  return PreservedAnalyses::none();
}

} // namespace preempt
