// GpuTarget.cpp: target facts for NVPTX and AMDGPU kernels, kept in one place for all passes.
// FLEP §4.1: which registers name the block and the grid, which calls are barriers.
#include "GpuTarget.h"

#include "llvm/IR/IntrinsicInst.h"
#include "llvm/IR/Operator.h"
#include "llvm/IR/Intrinsics.h"
#include "llvm/IR/IntrinsicsAMDGPU.h"
#include "llvm/IR/IntrinsicsNVPTX.h"
#include "llvm/TargetParser/Triple.h"

using namespace llvm;

namespace preempt {

GpuTarget gpuTargetOf(const Module &M) {
  Triple T(M.getTargetTriple());
  if (T.isNVPTX())
    return GpuTarget::NVPTX;
  if (T.isAMDGPU())
    return GpuTarget::AMDGPU;
  return GpuTarget::None;
}

bool isKernel(const Function &F, GpuTarget Target) {
  if (F.isDeclaration())
    return false;
  switch (Target) {
  case GpuTarget::NVPTX:
    return F.getCallingConv() == CallingConv::PTX_Kernel;
  case GpuTarget::AMDGPU:
    return F.getCallingConv() == CallingConv::AMDGPU_KERNEL;
  case GpuTarget::None:
    return false;
  }
  return false;
}

GridRead classifyGridRead(const CallBase &Call, GpuTarget Target) {
  GridRead Read;
  switch (Call.getIntrinsicID()) {
  case Intrinsic::nvvm_read_ptx_sreg_ctaid_x: Read = {GridRead::BlockIndex, 0}; break;
  case Intrinsic::nvvm_read_ptx_sreg_ctaid_y: Read = {GridRead::BlockIndex, 1}; break;
  case Intrinsic::nvvm_read_ptx_sreg_ctaid_z: Read = {GridRead::BlockIndex, 2}; break;
  case Intrinsic::nvvm_read_ptx_sreg_nctaid_x: Read = {GridRead::GridDim, 0}; break;
  case Intrinsic::nvvm_read_ptx_sreg_nctaid_y: Read = {GridRead::GridDim, 1}; break;
  case Intrinsic::nvvm_read_ptx_sreg_nctaid_z: Read = {GridRead::GridDim, 2}; break;
  case Intrinsic::amdgcn_workgroup_id_x: Read = {GridRead::BlockIndex, 0}; break;
  case Intrinsic::amdgcn_workgroup_id_y: Read = {GridRead::BlockIndex, 1}; break;
  case Intrinsic::amdgcn_workgroup_id_z: Read = {GridRead::BlockIndex, 2}; break;
  default: break;
  }
  (void)Target;
  return Read;
}

bool isCtaBarrier(const CallBase &Call) {
  const Function *Callee = Call.getCalledFunction();
  if (!Callee || !Callee->isIntrinsic())
    return false;
  StringRef Name = Callee->getName();
  // NVPTX spells CTA barriers llvm.nvvm.barrier.cta.* (and, before LLVM 21,
  // llvm.nvvm.barrier0*/bar.sync); warp-level syncs are not CTA barriers.
  if (Name.starts_with("llvm.nvvm.barrier.cta.") || Name.starts_with("llvm.nvvm.barrier0") ||
      Name == "llvm.nvvm.barrier" || Name.starts_with("llvm.nvvm.barrier.sync") ||
      Name.starts_with("llvm.nvvm.bar.sync"))
    return true;
  return Name.starts_with("llvm.amdgcn.s.barrier");
}

bool meetsWholeCta(const Instruction &I) {
  auto *Call = dyn_cast<IntrinsicInst>(&I);
  if (!Call)
    return false;
  switch (Call->getIntrinsicID()) {
  case Intrinsic::nvvm_barrier_cta_sync_aligned_all:
  case Intrinsic::nvvm_barrier_cta_sync_all:
  case Intrinsic::nvvm_barrier_cta_red_and_aligned_all:
  case Intrinsic::nvvm_barrier_cta_red_and_all:
  case Intrinsic::nvvm_barrier_cta_red_or_aligned_all:
  case Intrinsic::nvvm_barrier_cta_red_or_all:
  case Intrinsic::nvvm_barrier_cta_red_popc_aligned_all:
  case Intrinsic::nvvm_barrier_cta_red_popc_all:
    return true;
  default:
    return false;
  }
}

const char *unsafeIntrinsicReason(const CallBase &Call) {
  const Function *Callee = Call.getCalledFunction();
  if (!Callee || !Callee->isIntrinsic())
    return nullptr;
  StringRef Name = Callee->getName();
  if (Name.contains("cluster"))
    return "uses thread-block clusters";
  if (Name.starts_with("llvm.nvvm.read.ptx.sreg.envreg"))
    return "reads the grid-sync workspace (%envreg): grid-wide synchronization";
  if (Name.starts_with("llvm.nvvm.read.ptx.sreg.clock") || Name == "llvm.nvvm.read.ptx.sreg.globaltimer" ||
      Name == "llvm.readcyclecounter" || Name == "llvm.readsteadycounter" ||
      Name.starts_with("llvm.amdgcn.s.memtime") || Name.starts_with("llvm.amdgcn.s.memrealtime"))
    return "reads a clock: timing-based waits between blocks cannot be proven safe";
  if (Name == "llvm.nvvm.exit")
    return "ends threads with exit";
  if (Name == "llvm.amdgcn.implicitarg.ptr")
    return "reads the implicit kernel arguments (grid sizes there are not remapped yet)";
  return nullptr;
}

bool isDispatchPointer(const CallBase &Call) {
  return Call.getIntrinsicID() == Intrinsic::amdgcn_dispatch_ptr;
}

bool forEachDispatchLoad(CallBase &Packet, function_ref<void(LoadInst &, int64_t)> Visit) {
  const DataLayout &DL = Packet.getModule()->getDataLayout();
  SmallVector<std::pair<Value *, int64_t>, 8> Worklist = {{&Packet, 0}};
  SmallVector<std::pair<LoadInst *, int64_t>, 8> Loads;
  while (!Worklist.empty()) {
    auto [Pointer, Offset] = Worklist.pop_back_val();
    for (User *U : Pointer->users()) {
      if (auto *GEP = dyn_cast<GEPOperator>(U)) {
        APInt Delta(DL.getIndexTypeSizeInBits(GEP->getType()), 0);
        if (!GEP->accumulateConstantOffset(DL, Delta))
          return false;
        Worklist.push_back({GEP, Offset + Delta.getSExtValue()});
      } else if (auto *Load = dyn_cast<LoadInst>(U)) {
        Loads.push_back({Load, Offset});
      } else {
        return false;
      }
    }
  }
  // Visited after the walk, so that `Visit` may replace the loads.
  for (auto &[Load, Offset] : Loads)
    Visit(*Load, Offset);
  return true;
}

} // namespace preempt
