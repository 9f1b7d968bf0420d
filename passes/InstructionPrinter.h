// InstructionPrinter.h: one MachineInstr as target assembly text for CTXBack's routines, or nothing.
// CTXBack §IV-A: the dedicated routines re-execute and revert program instructions, so they must be printable.
#ifndef PREEMPT_INSTRUCTION_PRINTER_H
#define PREEMPT_INSTRUCTION_PRINTER_H

#include "MachineBlockModel.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/CodeGen/MachineFunction.h"
#include "llvm/MC/MCRegister.h"

#include <memory>
#include <optional>
#include <string>

namespace llvm {
class MCAsmInfo;
class MCInst;
class MCInstPrinter;
class MCInstrInfo;
class MCRegisterInfo;
class MCSubtargetInfo;
class MachineInstr;
class Target;
class TargetMachine;
} // namespace llvm

namespace preempt {

// Prints through the target's own MCInstPrinter. AMDGPU's printer prints
// nothing for codegen pseudos (V_ADD_U32_e32), so a pseudo is printed as its
// gfx9 encoding (V_ADD_U32_e32_gfx9, else _vi), found by name since the
// target's tables are not installed; every AMDGPU line is then parsed by the
// target's own assembler in-process, so what cannot be re-assembled is never
// called printable. NVPTX prints virtual registers encoded as its AsmPrinter
// does (class << 28 | index), for a whitelist of register ALU instructions.
class InstructionPrinter {
public:
  InstructionPrinter(const llvm::MachineFunction &MF, ModelTarget Target);
  ~InstructionPrinter();

  // The instruction as assembly (no tab; a wide COPY gives one move a line,
  // newline-separated), or nothing.
  std::optional<std::string> print(const llvm::MachineInstr &MI) const;
  // Whether a hand-written AMDGPU line assembles for this subtarget.
  bool assembles(const std::string &Line) const;
  std::string physName(llvm::MCRegister Reg) const;
  std::string virtName(unsigned ClassId, unsigned Index) const;
  // Opcode by its TableGen name, or ~0u.
  unsigned opcodeNamed(llvm::StringRef Name) const;
  llvm::StringRef cpu() const { return Cpu; }

private:
  std::optional<std::string> printUncached(const llvm::MachineInstr &MI) const;
  std::optional<std::string> printAmdgpu(const llvm::MachineInstr &MI) const;
  std::optional<std::string> printNvptx(const llvm::MachineInstr &MI) const;
  std::string printMC(const llvm::MCInst &Inst) const;

  const llvm::MachineFunction &MF;
  ModelTarget Target;
  const llvm::Target *TheTarget = nullptr;
  std::string TripleName, Cpu, Features;
  std::unique_ptr<llvm::MCSubtargetInfo> STI;
  std::unique_ptr<llvm::MCInstPrinter> Printer;
  llvm::StringMap<unsigned> Opcodes;
  mutable llvm::DenseMap<const llvm::MachineInstr *, std::optional<std::string>> Cache;
  mutable llvm::StringMap<bool> Assembled;
};

} // namespace preempt
#endif
