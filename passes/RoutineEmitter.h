// RoutineEmitter.h: CTXBack's dedicated preemption and resumption routines, as a side file of target assembly.
// CTXBack §IV-A (one routine per preemption point, shared through an offset table) and §IV-B (how they are entered).
#ifndef PREEMPT_ROUTINE_EMITTER_H
#define PREEMPT_ROUTINE_EMITTER_H

#include "MachineBlockModel.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <string>
#include <vector>

namespace preempt {

class InstructionPrinter;

// The plans of one block, one per instruction, as the pass got them.
struct BlockPlans {
  const BlockModel *Model;
  std::vector<preempt_ctx_plan> Plans;
};

struct KernelRoutines {
  unsigned PreemptRoutines = 0; // distinct routines written (shared entries not counted)
  unsigned ResumeRoutines = 0;
  unsigned LiveFallbacks = 0;   // points written with their LIVE plan: the chosen one copies what cannot be printed
  std::string Text;             // this kernel's part of the file
};

// Writes one kernel's routines and table. Returns false with a reason when a
// step cannot be written (an instruction it cannot revert or print, a line
// the assembler refuses); the kernel then gets no routines.
bool emitKernelRoutines(llvm::StringRef Kernel, ModelTarget Target, const FunctionModel &Model,
                        const InstructionPrinter &Printer, llvm::ArrayRef<BlockPlans> Blocks, KernelRoutines &Out,
                        std::string &WhyNot);

// The file around the kernels' parts: directives, the convention in comments.
std::string routineFileHeader(ModelTarget Target, llvm::StringRef Cpu);

} // namespace preempt
#endif
