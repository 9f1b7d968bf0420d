// GpuTarget.h: what the passes need to know about NVPTX and AMDGPU: kernels, grid registers, barriers.
// Grid registers as FLEP §4.1 remaps them (%ctaid/%nctaid; AMDGPU workgroup ids and dispatch packet).
#ifndef PREEMPT_GPU_TARGET_H
#define PREEMPT_GPU_TARGET_H

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/InstrTypes.h"
#include "llvm/IR/Module.h"

namespace preempt {

enum class GpuTarget { None, NVPTX, AMDGPU };

GpuTarget gpuTargetOf(const llvm::Module &M);
bool isKernel(const llvm::Function &F, GpuTarget Target);

// A read of the block index or of the grid size, in blocks, along one axis.
struct GridRead {
  enum Kind { None, BlockIndex, GridDim } What = None;
  unsigned Axis = 0;
};
GridRead classifyGridRead(const llvm::CallBase &Call, GpuTarget Target);

// A CTA-wide barrier (__syncthreads and its variants).
bool isCtaBarrier(const llvm::CallBase &Call);

// A barrier that every thread of the CTA meets (NVPTX bar.sync or bar.red
// over all threads): after it each thread sees what any thread wrote to
// shared memory before it. Not bar.arrive, nor a barrier of a thread count.
bool meetsWholeCta(const llvm::Instruction &I);

// Why an intrinsic call makes persistent-thread conversion unsafe, or nullptr.
const char *unsafeIntrinsicReason(const llvm::CallBase &Call);

// AMDGPU: the packet pointer whose grid-size fields the pass rewrites.
bool isDispatchPointer(const llvm::CallBase &Call);

// Calls `Visit` on every load from the dispatch packet with its constant byte
// offset. Returns false, having visited only part, when some use is not a
// load at a constant offset.
bool forEachDispatchLoad(llvm::CallBase &Packet, llvm::function_ref<void(llvm::LoadInst &, int64_t)> Visit);

} // namespace preempt
#endif
