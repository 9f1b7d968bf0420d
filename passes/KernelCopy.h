// KernelCopy.h: copies of a kernel kept beside its persistent form, each with shared variables of its own.
// The unconverted copy (one-wave launches) and the drain form (FLEP §4.1's yield flag at block entry) are both copies.
#ifndef PREEMPT_KERNEL_COPY_H
#define PREEMPT_KERNEL_COPY_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/IR/Function.h"

namespace preempt {

// Copies `Kernel`, before any conversion, as a kernel named `Name` taking the
// kernel's parameters followed by `ExtraParams`. Shared-memory variables of
// the kernel's own get a twin suffixed `SharedSuffix` for the copy. Returns
// nullptr, copying nothing, when `Name` is taken.
llvm::Function *copyKernel(llvm::Function &Kernel, llvm::StringRef Name, llvm::StringRef SharedSuffix,
                           llvm::ArrayRef<llvm::Type *> ExtraParams = {});

} // namespace preempt
#endif
