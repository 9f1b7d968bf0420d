// MachineBlockModel.h: machine IR of one kernel as CTXBack's plain-data blocks (preempt_ctx_block).
// CTXBack §III (per-instruction register contexts, Alg. 1's operands and results) and §IV-A (analysis after codegen).
#ifndef PREEMPT_MACHINE_BLOCK_MODEL_H
#define PREEMPT_MACHINE_BLOCK_MODEL_H

#include "preempt/ctxback.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/CodeGen/MachineFunction.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace llvm {
class MCInstPrinter;
class TargetInstrInfo;
class TargetRegisterInfo;
} // namespace llvm

namespace preempt {

class InstructionPrinter;

enum class ModelTarget { AMDGPU, NVPTX };

// One id per register the library sees. AMDGPU works on 32-bit physical
// registers (wider operands are split), NVPTX on virtual registers: there is
// no register allocation before ptxas.
struct ModelRegister {
  preempt_ctx_register Info;
  std::string Name;       // assembly spelling: v0, s4, exec_lo, scc, %r3
  llvm::MCRegister Phys;  // AMDGPU, NVPTX frame registers
  llvm::Register Virt;    // NVPTX virtual registers
  unsigned ClassId = 0;   // NVPTX: the printer's class (1 %p, 2 %rs, 3 %r, 4 %rd)
  int Lane = -1;          // AMDGPU OSRB: lane `Lane` of VGPR Phys, one scalar (name vN[k])
};

// The register ids of one function, shared by all its blocks so that plans,
// dumps and routines of different blocks name registers the same way.
class RegisterTable {
public:
  const std::vector<ModelRegister> &registers() const { return Registers; }
  const ModelRegister &get(uint16_t Id) const { return Registers[Id]; }
  size_t size() const { return Registers.size(); }
  std::optional<uint16_t> findPhys(llvm::MCRegister Reg) const;
  std::optional<uint16_t> findVirt(llvm::Register Reg) const;
  std::optional<uint16_t> findLane(llvm::MCRegister Vgpr, unsigned Lane) const;
  uint16_t add(ModelRegister Register);
  std::vector<preempt_ctx_register> Infos; // parallel to Registers, for the block view

private:
  std::vector<ModelRegister> Registers;
  llvm::DenseMap<unsigned, uint16_t> PhysIds;
  llvm::DenseMap<unsigned, uint16_t> VirtIds;
  llvm::DenseMap<unsigned, uint16_t> LaneIds; // Phys * 64 + lane
};

// One basic block. Owns every array the preempt_ctx_block view points to.
class BlockModel {
public:
  const preempt_ctx_block &block() const { return View; }
  const llvm::MachineBasicBlock *MBB = nullptr;
  // Instruction j of the model (bundles count as one, meta instructions none).
  std::vector<llvm::MachineInstr *> Instrs;

private:
  friend class FunctionModel;
  std::vector<preempt_ctx_instruction> Instructions;
  std::vector<std::vector<uint16_t>> Results, Operands;
  std::vector<std::vector<uint64_t>> LiveAfter;
  std::vector<const uint64_t *> LiveAfterPointers;
  std::vector<uint64_t> LiveIn;
  preempt_ctx_block View{};
};

// The whole function: its register table and one model per block. build()
// returns false with a reason when the function holds something the model does
// not understand; then the pass leaves it alone.
class FunctionModel {
public:
  FunctionModel(llvm::MachineFunction &MF, ModelTarget Target, const InstructionPrinter &Printer);
  bool build(std::string &WhyNot);

  RegisterTable Table;
  std::vector<std::unique_ptr<BlockModel>> Blocks;
  // Instructions that on-chip scalar backup inserted: flagged PREEMPT_CTX_BACKUP.
  llvm::DenseSet<const llvm::MachineInstr *> Backups;
  // Registers to add to the table before the blocks are built (OSRB's free
  // scalar registers must have ids even though nothing uses them yet).
  std::vector<llvm::MCRegister> ExtraPhys;
  // AMDGPU OSRB: free VGPRs whose 64 lanes each become one scalar register
  // (vN[k]: 4 bytes, 32 bits), added after ExtraPhys. A backup into a lane is
  // a V_WRITELANE_B32 in Backups, modelled as a MOVE of its SGPR into vN[k];
  // the VGPR itself is not in the table and a lane is never live.
  std::vector<llvm::MCRegister> ExtraLaneVgprs;
  static constexpr unsigned LanesPerVgpr = 64; // gfx9 wave64

  ModelTarget target() const { return Target; }
  // AMDGPU: the 32-bit registers a physical register is made of.
  bool splitPhys(llvm::MCRegister Reg, llvm::SmallVectorImpl<uint16_t> &Ids, std::string &WhyNot);

private:
  bool addRegisters(std::string &WhyNot);
  bool addPhys(llvm::MCRegister Reg, std::string &WhyNot);
  bool regIds(const llvm::MachineOperand &MO, llvm::SmallVectorImpl<uint16_t> &Ids, std::string &WhyNot);
  bool buildBlock(llvm::MachineBasicBlock &MBB, BlockModel &Model, std::string &WhyNot);
  bool classify(llvm::MachineInstr &MI, BlockModel &Model, preempt_ctx_instruction &Inst, std::string &WhyNot);
  bool classifyLaneBackup(llvm::MachineInstr &MI, BlockModel &Model, preempt_ctx_instruction &Inst,
                          std::string &WhyNot);
  bool isLaneBackup(const llvm::MachineInstr &MI) const;
  bool nvptxLiveOuts(std::vector<std::vector<uint64_t>> &LiveOut, std::string &WhyNot);

  llvm::MachineFunction &MF;
  ModelTarget Target;
  const InstructionPrinter &Printer;
  const llvm::TargetInstrInfo *TII;
  const llvm::TargetRegisterInfo *TRI;
  llvm::DenseMap<unsigned, llvm::SmallVector<uint16_t, 4>> PhysParts;
};

size_t wordsFor(size_t RegisterCount);
inline bool testBit(const uint64_t *Set, size_t Id) { return (Set[Id / 64] >> (Id % 64)) & 1; }

} // namespace preempt
#endif
