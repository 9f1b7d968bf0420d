// KernelSafety.h: decides whether a kernel can become persistent-threaded without changing its results.
// docs/persistent-threads.md "Refusals"; FLEP §4.1 and EffiSha §5 assume kernels these checks admit.
#ifndef PREEMPT_KERNEL_SAFETY_H
#define PREEMPT_KERNEL_SAFETY_H

#include "GpuTarget.h"

#include "preempt/inline_asm.h"

#include "llvm/ADT/SetVector.h"
#include "llvm/IR/PassManager.h"
#include "llvm/IR/ValueMap.h"
#include "llvm/Transforms/Utils/ValueMapper.h"

#include <string>

namespace preempt {

// The functions a kernel may call, found through direct calls only (the
// safety check refuses indirect calls, so this set is complete when it passes).
llvm::SetVector<llvm::Function *> reachableFunctions(llvm::Function &Kernel);

// A copy of `Kernel` for UniformityAnalysis: block-level registers become
// parameters (NVPTX's TTI takes every register read for divergent), calls of
// element-wise intrinsics (min, max, abs, ...) become instructions uniform
// when their operands are, allocas are promoted, and with `MemoryDivergent`
// every value read from memory comes from an opaque (divergent) call. Control flow is unchanged: `Map` maps
// blocks and values 1:1. Remove it with eraseUniformityScratch.
llvm::Function *makeUniformityScratch(llvm::Function &Kernel, GpuTarget Target, llvm::ValueToValueMapTy &Map,
                                      bool MemoryDivergent);
void eraseUniformityScratch(llvm::Function *Scratch, llvm::FunctionAnalysisManager &FAM);

// What an inline-assembly call (`Call.isInlineAsm()`) does: its PTX text
// classified by lib/inline_asm.c with the call's IR facts (constraints,
// sideeffect). PTX only: AMDGPU's asm is not parsed.
preempt_asm_summary classifyInlineAsm(const llvm::CallBase &Call);
// "inline assembly that <why> ('<the instruction>')", for remarks.
std::string describeInlineAsm(const llvm::CallBase &Call, const preempt_asm_finding &Finding);

// Returns the empty string when `Kernel` is safe to convert, else why not. `*WarpRows` is set when it is safe
// only in blocks of one row of threads or whose rows are whole warps (control_block.h, PREEMPT_WARP_ROWS_PREFIX).
std::string whyNotConvertible(llvm::Function &Kernel, GpuTarget Target, llvm::FunctionAnalysisManager &FAM,
                              bool *WarpRows);

} // namespace preempt
#endif
