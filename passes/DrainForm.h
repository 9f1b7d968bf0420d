// DrainForm.h: the drain form of a converted NVIDIA kernel: the kernel as written, its blocks gated at entry.
// FLEP §4.1's yield flag (per SM through %smid), read once per block by the hardware's own block scheduling.
#ifndef PREEMPT_DRAIN_FORM_H
#define PREEMPT_DRAIN_FORM_H

#include "llvm/IR/Function.h"

#include <string>

namespace preempt {

// Why the drain form could change what `Kernel` does, or the empty string.
std::string whyNoDrainForm(llvm::Function &Kernel);

// Keeps the drain form of `Kernel` (control_block.h, PREEMPT_DRAIN_KERNEL_PREFIX),
// copied before conversion, and says with a remark where its gate went or why
// it has none. Does nothing when whyNoDrainForm says why not.
void addDrainForm(llvm::Function &Kernel);

} // namespace preempt
#endif
