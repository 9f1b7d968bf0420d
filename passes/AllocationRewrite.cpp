// AllocationRewrite.cpp: routes device-memory allocations and releases (CUDA runtime and driver, HIP) to preempt_<name>.
// schedGPU (TPDS'18) §4: the runtime's wrappers pre-allocate before and post-free after each call (implicit mode).
#include "AllocationRewrite.h"

#include "ApiRoute.h"
#include "GpuTarget.h"

#include "llvm/Support/CommandLine.h"

using namespace llvm;

namespace preempt {

// On by default: programs built with the plugin link the runtime, which
// defines every wrapper; off for a program that must allocate without
// admission, or that links a runtime without the wrappers.
static cl::opt<bool> MemoryAdmission("preempt-memory-admission",
                                     cl::desc("Route device-memory allocations and releases to the runtime's "
                                              "preempt_<name> wrappers (schedGPU memory admission)"),
                                     cl::init(true));

// The exact names the runtime wraps: each wrapper has the original's
// signature, so only these may be routed. The _ptsz names are what
// cuda_runtime_api.h and cuda.h call the stream-ordered APIs under
// CUDA_API_PER_THREAD_DEFAULT_STREAM (nvcc --default-stream per-thread);
// HIP has no per-thread spellings of its allocation calls.
static constexpr StringLiteral AllocationApis[] = {
    // CUDA runtime
    "cudaMalloc", "cudaFree", "cudaMallocAsync", "cudaFreeAsync", "cudaMallocFromPoolAsync", "cudaMallocPitch",
    "cudaMalloc3D", "cudaMallocManaged", "cudaMallocAsync_ptsz", "cudaFreeAsync_ptsz", "cudaMallocFromPoolAsync_ptsz",
    "cudaDeviceReset", // frees every allocation on the device: the ledger must hear of it
    // CUDA driver (cuda.h maps cuMemAlloc, cuMemAllocPitch and cuMemFree to _v2)
    "cuMemAlloc_v2", "cuMemAllocPitch_v2", "cuMemAllocAsync", "cuMemAllocFromPoolAsync", "cuMemAllocManaged",
    "cuMemFree_v2", "cuMemFreeAsync", "cuMemAllocAsync_ptsz", "cuMemAllocFromPoolAsync_ptsz", "cuMemFreeAsync_ptsz",
    "cuMemCreate", "cuMemRelease",
    // HIP
    "hipMalloc", "hipFree", "hipMallocAsync", "hipFreeAsync", "hipMallocFromPoolAsync", "hipMallocPitch",
    "hipMalloc3D", "hipMallocManaged", "hipMemCreate", "hipMemRelease"};

PreservedAnalyses AllocationRewritePass::run(Module &M, ModuleAnalysisManager &) {
  if (!MemoryAdmission || gpuTargetOf(M) != GpuTarget::None)
    return PreservedAnalyses::all();
  bool Changed = routeApis(M, {AllocationApis, "memory admission", "allocation", "AllocationRouted", "AllocationLayer"});
  return Changed ? PreservedAnalyses::none() : PreservedAnalyses::all();
}

} // namespace preempt
