// SyncCopyRoute.cpp: routes a program's synchronous CUDA copies to preempt_<name>, which first wait for its
// preemptible launches in a way that leaves other threads free (runtime-host/sync_copies_cuda.c says why).
// FLEP §4.1: an evicted kernel finishes only once the host resumes it, so nothing may block the host's calls.
#include "SyncCopyRoute.h"

#include "ApiRoute.h"
#include "GpuTarget.h"

#include "llvm/Support/CommandLine.h"

using namespace llvm;

namespace preempt {

// On by default, like memory admission: the runtime every converted program links defines the wrappers.
static cl::opt<bool> SyncCopies("preempt-sync-copies",
                                cl::desc("Route synchronous CUDA copies to the runtime's preempt_<name> wrappers, "
                                         "which wait for the program's preemptible launches first"),
                                cl::init(true));

// The copies that wait for the GPU while holding the driver (measured: sync_copies_cuda.c), in both default-stream
// spellings (cuda_runtime_api.h renames them under CUDA_API_PER_THREAD_DEFAULT_STREAM). cudaMemcpyAsync is one of
// them when host memory is pageable, which its wrapper checks. cudaFreeHost and cudaHostUnregister wait for the
// device as cudaFree does (cudaFree itself goes through the memory-admission wrapper, which waits first too).
static constexpr StringLiteral SyncCopyApis[] = {
    "cudaMemcpy",           "cudaMemcpy_ptds",           "cudaMemcpy2D",    "cudaMemcpy2D_ptds",
    "cudaMemcpyToSymbol",   "cudaMemcpyToSymbol_ptds",   "cudaMemcpyAsync", "cudaMemcpyAsync_ptsz",
    "cudaMemcpyFromSymbol", "cudaMemcpyFromSymbol_ptds", "cudaFreeHost",    "cudaHostUnregister"};

PreservedAnalyses SyncCopyRoutePass::run(Module &M, ModuleAnalysisManager &) {
  if (!SyncCopies || gpuTargetOf(M) != GpuTarget::None)
    return PreservedAnalyses::all();
  bool Changed = routeApis(M, {SyncCopyApis, "waits for preemptible launches first", "copy", "CopyRouted", "CopyLayer"});
  return Changed ? PreservedAnalyses::none() : PreservedAnalyses::all();
}

} // namespace preempt
