// DeviceHelpers.h: links runtime-dev's task-loop helpers (embedded bitcode) into a device module.
// The helpers implement FLEP §4.1's task fetch and EffiSha §5.1's barrier between tasks.
#ifndef PREEMPT_DEVICE_HELPERS_H
#define PREEMPT_DEVICE_HELPERS_H

#include "GpuTarget.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/Error.h"

namespace preempt {

// Names of the helpers in runtime-dev/task_loop.cu.
namespace helper {
inline constexpr llvm::StringLiteral KernelBegin = "__preempt_kernel_begin";
inline constexpr llvm::StringLiteral KernelEnd = "__preempt_kernel_end";
inline constexpr llvm::StringLiteral TaskBegin = "__preempt_task_begin";
inline constexpr llvm::StringLiteral TaskPrefetch = "__preempt_task_prefetch";
inline constexpr llvm::StringLiteral YieldCheck = "__preempt_yield_check";
inline constexpr llvm::StringLiteral TaskEnd = "__preempt_task_end";
inline constexpr llvm::StringLiteral BatchBegin = "__preempt_batch_begin";
inline constexpr llvm::StringLiteral BatchFirst = "__preempt_batch_first";
inline constexpr llvm::StringLiteral BatchEnd = "__preempt_batch_end";
inline constexpr llvm::StringLiteral BatchYieldCheck = "__preempt_batch_yield_check";
inline constexpr llvm::StringLiteral BatchPrefetch = "__preempt_batch_prefetch";
// In-task preemption (InTaskYield.cpp), NVPTX only.
inline constexpr llvm::StringLiteral InTaskBegin = "__preempt_intask_begin";
inline constexpr llvm::StringLiteral InTaskIterations = "__preempt_intask_iterations";
inline constexpr llvm::StringLiteral InTaskPoll = "__preempt_intask_poll";
inline constexpr llvm::StringLiteral InTaskCheck = "__preempt_intask_check";
inline constexpr llvm::StringLiteral InTaskFlagsBegin = "__preempt_intask_flags_begin";
inline constexpr llvm::StringLiteral InTaskCheckFlags = "__preempt_intask_check_flags";
inline constexpr llvm::StringLiteral InTaskThreads = "__preempt_intask_threads";
inline constexpr llvm::StringLiteral InTaskThread = "__preempt_intask_thread";
inline constexpr llvm::StringLiteral InTaskSaveRecord = "__preempt_intask_save_record";
inline constexpr llvm::StringLiteral InTaskResumeRecord = "__preempt_intask_resume_record";
inline constexpr llvm::StringLiteral InTaskResumePoint = "__preempt_intask_resume_point";
inline constexpr llvm::StringLiteral InTaskCopy = "__preempt_intask_copy";
inline constexpr llvm::StringLiteral InTaskRestored = "__preempt_intask_restored";
inline constexpr llvm::StringLiteral InTaskSaveEnd = "__preempt_intask_save_end";
inline constexpr llvm::StringLiteral TaskBlockIndex[3] = {"__preempt_task_block_x", "__preempt_task_block_y",
                                                          "__preempt_task_block_z"};
inline constexpr llvm::StringLiteral BlockIndex[3] = {"__preempt_block_index_x", "__preempt_block_index_y",
                                                      "__preempt_block_index_z"};
inline constexpr llvm::StringLiteral GridDim[3] = {"__preempt_grid_dim_x", "__preempt_grid_dim_y",
                                                   "__preempt_grid_dim_z"};
} // namespace helper

// Links every helper into `M` as an internal, always-inline definition with
// the target attributes of the module's own kernels.
llvm::Error linkDeviceHelpers(llvm::Module &M, GpuTarget Target);

// Inlines every call to a helper and deletes the helpers left unused.
void inlineDeviceHelpers(llvm::Module &M);

} // namespace preempt
#endif
