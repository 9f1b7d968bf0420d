// ContextFlashback.h: the preempt-ctxback machine pass (legacy pass manager, as machine passes are in LLVM 22).
// CTXBack §IV-A: a compiler pass after register allocation that plans every instruction and writes routines.
#ifndef PREEMPT_CONTEXT_FLASHBACK_H
#define PREEMPT_CONTEXT_FLASHBACK_H

namespace llvm {
class MachineFunctionPass;
} // namespace llvm

namespace preempt {

// Registered as "preempt-context-flashback" (llc -run-pass=...; not
// "preempt-ctxback": opt turns every registered pass name into an option,
// which would collide with the enabling flag below), and inserted into AMDGPU (after prologepilog) and NVPTX (after
// phi-node-elimination) pipelines when -preempt-ctxback or PREEMPT_CTXBACK=1
// is given.
llvm::MachineFunctionPass *createContextFlashbackPass();

} // namespace preempt
#endif
