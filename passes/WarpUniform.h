// WarpUniform.h: a CTA-uniform value made visibly warp-uniform to ptxas (redux.sync over the whole warp).
// Keeps converted code on the uniform datapath (CTXBack §IV-A's points, FLEP §4.1's task loop and yield gate).
#ifndef PREEMPT_WARP_UNIFORM_H
#define PREEMPT_WARP_UNIFORM_H

#include "llvm/IR/DataLayout.h"
#include "llvm/IR/IRBuilder.h"

namespace preempt {

// `V`, a value the whole CTA holds alike, passed through redux.sync (sm_80
// and newer) so that ptxas sees it is; `V` itself on older targets. Only at
// points every existing lane of the warp reaches together.
llvm::Value *warpUniform(llvm::IRBuilder<> &Builder, llvm::Value *V, const llvm::DataLayout &DL);

} // namespace preempt
#endif
