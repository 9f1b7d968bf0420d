// MachineBlockModel.cpp: MIR -> preempt_ctx_block (registers, operations, flags, liveness) for AMDGPU and NVPTX.
// CTXBack §III-A/B (live-in registers and use-define chains per instruction), §III-C (which operations revert).
#include "MachineBlockModel.h"
#include "InstructionPrinter.h"

#include "preempt/register_liveness.h"

#include "llvm/CodeGen/LivePhysRegs.h"
#include "llvm/CodeGen/MachineInstr.h"
#include "llvm/CodeGen/MachineRegisterInfo.h"
#include "llvm/CodeGen/TargetInstrInfo.h"
#include "llvm/CodeGen/TargetRegisterInfo.h"
#include "llvm/CodeGen/TargetSubtargetInfo.h"
#include "llvm/MC/MCInstrDesc.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/Regex.h"

#include <algorithm>

using namespace llvm;

namespace preempt {

// A block is planned point by point over a window; past this size the
// analysis costs more than a compile should.
static constexpr size_t MaxBlockInstructions = 100000;

size_t wordsFor(size_t RegisterCount) { return (RegisterCount + 63) / 64; }

std::optional<uint16_t> RegisterTable::findPhys(MCRegister Reg) const {
  auto It = PhysIds.find(Reg.id());
  if (It == PhysIds.end())
    return std::nullopt;
  return It->second;
}

std::optional<uint16_t> RegisterTable::findVirt(Register Reg) const {
  auto It = VirtIds.find(Reg.id());
  if (It == VirtIds.end())
    return std::nullopt;
  return It->second;
}

std::optional<uint16_t> RegisterTable::findLane(MCRegister Vgpr, unsigned Lane) const {
  auto It = LaneIds.find(Vgpr.id() * FunctionModel::LanesPerVgpr + Lane);
  if (Lane >= FunctionModel::LanesPerVgpr || It == LaneIds.end())
    return std::nullopt;
  return It->second;
}

uint16_t RegisterTable::add(ModelRegister Register) {
  uint16_t Id = static_cast<uint16_t>(Registers.size());
  if (Register.Virt.isValid())
    VirtIds[Register.Virt.id()] = Id;
  else if (Register.Lane >= 0)
    LaneIds[Register.Phys.id() * FunctionModel::LanesPerVgpr + Register.Lane] = Id;
  else
    PhysIds[Register.Phys.id()] = Id;
  Infos.push_back(Register.Info);
  Registers.push_back(std::move(Register));
  return Id;
}

FunctionModel::FunctionModel(MachineFunction &MF, ModelTarget Target, const InstructionPrinter &Printer)
    : MF(MF), Target(Target), Printer(Printer), TII(MF.getSubtarget().getInstrInfo()),
      TRI(MF.getSubtarget().getRegisterInfo()) {}

// Reg's width: the largest size of a class holding it (AMDGPU also puts SGPRs
// in 1-bit lane-mask classes), 0 when none does. Not getMinimalPhysRegClass:
// it asserts on registers outside every class.
static unsigned physBits(const TargetRegisterInfo &TRI, MCRegister Reg) {
  unsigned Best = 0;
  for (const TargetRegisterClass *RC : TRI.regclasses()) {
    if (!RC->contains(Reg))
      continue;
    unsigned Bits = TRI.getRegSizeInBits(*RC);
    if (Bits > Best)
      Best = Bits;
  }
  return Best;
}

bool FunctionModel::addPhys(MCRegister Reg, std::string &WhyNot) {
  if (Table.findPhys(Reg))
    return true;
  StringRef TableName = TRI->getName(Reg);
  ModelRegister R;
  R.Phys = Reg;
  R.Name = Printer.physName(Reg);
  if (Target == ModelTarget::AMDGPU) {
    if (TableName.starts_with("TTMP")) {
      WhyNot = "the kernel uses trap temporary " + R.Name + ", which the routines need";
      return false;
    }
    bool Vector = TableName.starts_with("VGPR") || TableName.starts_with("AGPR");
    R.Info.kind = Vector ? PREEMPT_CTX_VECTOR : PREEMPT_CTX_SCALAR;
    R.Info.bytes = Vector ? 256 : 4; // 64 lanes x 4 bytes; one dword per wavefront
    R.Info.bits = TableName == "SCC" ? 1 : 32;
  } else {
    unsigned Bits = physBits(*TRI, Reg);
    if (!Bits || Bits > 64) {
      WhyNot = "register " + R.Name + " has no supported width";
      return false;
    }
    R.Info.kind = PREEMPT_CTX_VECTOR;
    R.Info.bits = static_cast<uint8_t>(Bits);
    R.Info.bytes = std::max(1u, Bits / 8) * 32;
  }
  Table.add(std::move(R));
  return true;
}

bool FunctionModel::splitPhys(MCRegister Reg, SmallVectorImpl<uint16_t> &Ids, std::string &WhyNot) {
  auto Cached = PhysParts.find(Reg.id());
  if (Cached != PhysParts.end()) {
    Ids.append(Cached->second.begin(), Cached->second.end());
    return true;
  }
  SmallVector<MCRegister, 4> Parts;
  unsigned Bits = physBits(*TRI, Reg);
  StringRef TableName = TRI->getName(Reg);
  if (TableName == "SCC" || TableName == "MODE" || Bits == 32) {
    Parts.push_back(Reg);
  } else if (Bits > 32) {
    for (MCPhysReg Sub : TRI->subregs(Reg))
      if (physBits(*TRI, Sub) == 32)
        Parts.push_back(Sub);
    llvm::sort(Parts, [](MCRegister A, MCRegister B) { return A.id() < B.id(); });
    if (Parts.size() * 32 != Bits) {
      WhyNot = "cannot split register " + std::string(TableName) + " (" + std::to_string(Bits) + " bits, " + std::to_string(Parts.size()) + " parts) into 32-bit parts";
      return false;
    }
  } else if (Bits) {
    // 16-bit halves (true16): the 32-bit register holding them is the unit.
    for (MCPhysReg Super : TRI->superregs(Reg))
      if (physBits(*TRI, Super) == 32) {
        Parts.push_back(Super);
        break;
      }
  }
  if (Parts.empty()) {
    WhyNot = "register " + std::string(TableName) + " has no 32-bit unit the model understands";
    return false;
  }
  SmallVector<uint16_t, 4> PartIds;
  for (MCRegister Part : Parts) {
    if (!addPhys(Part, WhyNot))
      return false;
    PartIds.push_back(*Table.findPhys(Part));
  }
  PhysParts[Reg.id()] = PartIds;
  Ids.append(PartIds.begin(), PartIds.end());
  return true;
}

static unsigned nvptxClass(StringRef ClassName, unsigned &Bits) {
  std::string Lower = ClassName.lower();
  static const struct {
    const char *Name;
    unsigned Id, Bits;
  } Classes[] = {{"b1", 1, 1}, {"b16", 2, 16}, {"b32", 3, 32}, {"b64", 4, 64}};
  for (const auto &C : Classes)
    if (Lower == C.Name) {
      Bits = C.Bits;
      return C.Id;
    }
  return 0;
}

bool FunctionModel::regIds(const MachineOperand &MO, SmallVectorImpl<uint16_t> &Ids, std::string &WhyNot) {
  Register Reg = MO.getReg();
  if (!Reg.isValid())
    return true;
  const MachineRegisterInfo &MRI = MF.getRegInfo();
  if (Reg.isPhysical()) {
    // Constant registers (src_shared_base, null) never lose their value. Not
    // MRI's isConstantPhysReg: it calls EXEC constant in a kernel that never
    // writes it, yet a context switch must restore it.
    if (TRI->isConstantPhysReg(Reg))
      return true;
    if (Target == ModelTarget::AMDGPU)
      return splitPhys(Reg, Ids, WhyNot);
    if (!addPhys(Reg, WhyNot))
      return false;
    Ids.push_back(*Table.findPhys(Reg));
    return true;
  }
  if (Target == ModelTarget::AMDGPU) {
    WhyNot = "virtual register after register allocation";
    return false;
  }
  if (auto Id = Table.findVirt(Reg)) {
    Ids.push_back(*Id);
    return true;
  }
  unsigned Bits = 0;
  unsigned ClassId = nvptxClass(TRI->getRegClassName(MRI.getRegClass(Reg)), Bits);
  if (!ClassId) {
    WhyNot = "virtual register of class " + std::string(TRI->getRegClassName(MRI.getRegClass(Reg))) +
             " (only b1, b16, b32, b64 are modelled)";
    return false;
  }
  ModelRegister R;
  R.Virt = Reg;
  R.ClassId = ClassId;
  R.Name = Printer.virtName(ClassId, Reg.virtRegIndex());
  R.Info.kind = PREEMPT_CTX_VECTOR;
  R.Info.bits = static_cast<uint8_t>(Bits);
  R.Info.bytes = std::max(1u, Bits / 8) * 32; // 32 lanes; a predicate is saved as a byte
  Ids.push_back(Table.add(std::move(R)));
  return true;
}

bool FunctionModel::addRegisters(std::string &WhyNot) {
  SmallVector<uint16_t, 8> Ignored;
  for (MCRegister Reg : ExtraPhys) {
    Ignored.clear();
    if (!splitPhys(Reg, Ignored, WhyNot))
      return false;
  }
  for (MCRegister Vgpr : ExtraLaneVgprs)
    for (unsigned Lane = 0; Lane < LanesPerVgpr; ++Lane) {
      if (Table.findLane(Vgpr, Lane))
        continue;
      ModelRegister R;
      R.Phys = Vgpr;
      R.Lane = static_cast<int>(Lane);
      R.Name = Printer.physName(Vgpr) + "[" + std::to_string(Lane) + "]";
      R.Info = preempt_ctx_register{4, 32, PREEMPT_CTX_SCALAR}; // one scalar per lane
      Table.add(std::move(R));
    }
  for (MachineBasicBlock &MBB : MF)
    for (MachineInstr &MI : MBB.instrs()) {
      if (MI.isDebugInstr())
        continue;
      if (isLaneBackup(MI)) { // only its source: the VGPR is seen as its lanes
        Ignored.clear();
        if (!regIds(MI.getOperand(1), Ignored, WhyNot))
          return false;
        continue;
      }
      for (const MachineOperand &MO : MI.operands())
        if (MO.isReg()) {
          Ignored.clear();
          if (!regIds(MO, Ignored, WhyNot))
            return false;
        }
    }
  if (Table.size() > 65536) {
    WhyNot = "more than 65536 registers";
    return false;
  }
  return true;
}

namespace {
enum class Op { Opaque, Move, Add, Sub, SubRev, Xor, Not, Mul };
}

static Op amdgpuOperation(StringRef Name) {
  if (Name.ends_with("_e32") || Name.ends_with("_e64"))
    Name = Name.drop_back(4);
  return StringSwitch<Op>(Name)
      .Cases({"V_ADD_U32", "V_ADD_CO_U32", "V_ADD_NC_U32", "S_ADD_U32", "S_ADD_I32"}, Op::Add)
      .Cases({"V_SUB_U32", "V_SUB_CO_U32", "V_SUB_NC_U32", "S_SUB_U32", "S_SUB_I32"}, Op::Sub)
      .Cases({"V_SUBREV_U32", "V_SUBREV_CO_U32", "V_SUBREV_NC_U32"}, Op::SubRev)
      .Cases({"V_XOR_B32", "S_XOR_B32"}, Op::Xor)
      .Cases({"V_NOT_B32", "S_NOT_B32"}, Op::Not)
      .Cases({"V_MUL_LO_U32", "S_MUL_I32"}, Op::Mul)
      .Cases({"V_MOV_B32", "S_MOV_B32", "COPY"}, Op::Move)
      .Default(Op::Opaque);
}

static Op nvptxOperation(StringRef Name) {
  static const Regex Add("^ADD(16|32|64)r[ri]$"), Sub("^SUB(16|32|64)r[ri]$"), Mul("^MULT(16|32|64)r[ri]$"),
      Xor("^XOR_b(16|32|64)r[ri]$"), Not("^NOT_b(16|32|64)$"), Move("^MOV_B(16|32|64)_[ri]$");
  if (Name == "COPY" || Move.match(Name))
    return Op::Move;
  if (Add.match(Name))
    return Op::Add;
  if (Sub.match(Name))
    return Op::Sub;
  if (Mul.match(Name))
    return Op::Mul;
  if (Xor.match(Name))
    return Op::Xor;
  if (Not.match(Name))
    return Op::Not;
  return Op::Opaque;
}

static unsigned latencyOf(StringRef Name, const MachineInstr &MI, ModelTarget Target) {
  if (Target == ModelTarget::NVPTX)
    return MI.mayLoad() ? 500 : 4;
  if (Name.starts_with("DS_"))
    return 64;
  if (Name.starts_with("S_LOAD") || Name.starts_with("S_BUFFER_LOAD") || Name.starts_with("S_SCRATCH_LOAD"))
    return 200;
  if (MI.mayLoad())
    return 500;
  if (Name.starts_with("S_"))
    return 1;
  return 4;
}

bool FunctionModel::isLaneBackup(const MachineInstr &MI) const {
  return Target == ModelTarget::AMDGPU && Backups.count(&MI) && TII->getName(MI.getOpcode()) == "V_WRITELANE_B32" &&
         MI.getNumExplicitOperands() == 4 && MI.getOperand(0).isReg() && MI.getOperand(1).isReg() &&
         MI.getOperand(2).isImm();
}

// OSRB's `$vgprN = V_WRITELANE_B32 $sgprS, k, $vgprN(tied-def 0)`: a copy of
// sS into the scalar vN[k]; the other lanes it keeps are not the model's.
bool FunctionModel::classifyLaneBackup(MachineInstr &MI, BlockModel &Model, preempt_ctx_instruction &Inst,
                                       std::string &WhyNot) {
  const MachineOperand &Source = MI.getOperand(1);
  std::optional<uint16_t> Lane = Table.findLane(MI.getOperand(0).getReg(), MI.getOperand(2).getImm());
  SmallVector<uint16_t, 2> Ids;
  if (!regIds(Source, Ids, WhyNot))
    return false;
  if (!Lane || Ids.size() != 1) {
    WhyNot = "a lane backup names a lane or a source the model does not know";
    return false;
  }
  Model.Results.back().push_back(*Lane);
  Inst.operation = PREEMPT_CTX_OPAQUE; // an undefined source: nothing worth copying
  if (!Source.isUndef()) {
    Model.Operands.back().push_back(Ids[0]);
    Inst.operation = PREEMPT_CTX_MOVE;
  }
  Inst.flags = PREEMPT_CTX_REEXECUTABLE | PREEMPT_CTX_BACKUP | (Printer.print(MI) ? PREEMPT_CTX_COPYABLE : 0);
  Inst.opcode = MI.getOpcode();
  Inst.latency = latencyOf(TII->getName(MI.getOpcode()), MI, Target);
  return true;
}

bool FunctionModel::classify(MachineInstr &MI, BlockModel &Model, preempt_ctx_instruction &Inst,
                             std::string &WhyNot) {
  if (isLaneBackup(MI))
    return classifyLaneBackup(MI, Model, Inst, WhyNot);
  std::vector<uint16_t> &Results = Model.Results.back();
  std::vector<uint16_t> &Operands = Model.Operands.back();
  StringRef Name = TII->getName(MI.getOpcode());
  const MCInstrDesc &Desc = MI.getDesc();

  auto addUnique = [](std::vector<uint16_t> &Set, ArrayRef<uint16_t> Ids) {
    for (uint16_t Id : Ids)
      if (std::find(Set.begin(), Set.end(), Id) == Set.end())
        Set.push_back(Id);
  };

  // Results: explicit definitions first (results[0] is the one an operation
  // computes), then implicit ones (carry, SCC).
  SmallVector<uint16_t, 4> FirstDef;
  bool SeenDef = false;
  for (const MachineOperand &MO : MI.operands()) {
    if (!MO.isReg() || !MO.isDef())
      continue;
    SmallVector<uint16_t, 4> Ids;
    if (!regIds(MO, Ids, WhyNot))
      return false;
    if (!SeenDef && !MO.isImplicit()) {
      FirstDef = Ids;
      SeenDef = true;
    }
    addUnique(Results, Ids);
  }

  // Sources in their semantic order, then every implicit read (EXEC, MODE).
  struct Source {
    bool IsImm;
    int64_t Imm;
    SmallVector<uint16_t, 2> Ids;
  };
  SmallVector<Source, 4> Sources;
  bool NonZeroModifier = false;
  for (unsigned I = 0, E = MI.getNumOperands(); I != E; ++I) {
    const MachineOperand &MO = MI.getOperand(I);
    if (MO.isReg() && MO.isDef())
      continue;
    bool Explicit = I < MI.getNumExplicitOperands();
    if (!Explicit)
      break;
    // AMDGPU: sources have a register class even when they hold an
    // immediate; modifiers (neg, abs, clamp, omod) have none.
    bool IsSource = Target == ModelTarget::NVPTX || MI.isCopy() || I >= Desc.getNumOperands() ||
                    Desc.operands()[I].RegClass != -1;
    if (MO.isReg()) {
      Source S{false, 0, {}};
      if (!regIds(MO, S.Ids, WhyNot))
        return false;
      if (MO.isUndef())
        S.Ids.clear();
      Sources.push_back(S);
    } else if (MO.isImm()) {
      if (IsSource)
        Sources.push_back(Source{true, MO.getImm(), {}});
      else if (MO.getImm() != 0)
        NonZeroModifier = true;
    } else if (IsSource) {
      Sources.push_back(Source{true, 0, {}}); // symbol, block: an unknown constant
      NonZeroModifier = true;                 // keeps the instruction OPAQUE
    }
  }

  Op Operation = Target == ModelTarget::AMDGPU ? amdgpuOperation(Name) : nvptxOperation(Name);
  unsigned ResultBits = FirstDef.size() == 1 ? Table.get(FirstDef[0]).Info.bits : 0;
  unsigned WantSources = (Operation == Op::Move || Operation == Op::Not) ? 1 : 2;
  bool Shaped = Operation != Op::Opaque && !NonZeroModifier && FirstDef.size() == 1 && ResultBits >= 8 &&
                Sources.size() == WantSources;
  for (const Source &S : Sources)
    if (!S.IsImm && (S.Ids.size() != 1 || Table.get(S.Ids[0]).Info.bits != ResultBits))
      Shaped = false;
  if (Target == ModelTarget::AMDGPU && ResultBits != 32)
    Shaped = false;

  Inst.operation = PREEMPT_CTX_OPAQUE;
  uint64_t Mask = ResultBits >= 64 ? ~0ull : ((1ull << ResultBits) - 1);
  if (Shaped) {
    // Results[0] must be the operation's register, in front.
    Results.erase(std::find(Results.begin(), Results.end(), FirstDef[0]));
    Results.insert(Results.begin(), FirstDef[0]);
    const Source &A = Sources[0];
    if (WantSources == 1) {
      if (A.IsImm && Operation == Op::Move) {
        Inst.operation = PREEMPT_CTX_MOVE;
        Inst.has_immediate = 1;
        Inst.immediate = static_cast<uint64_t>(A.Imm) & Mask;
      } else if (!A.IsImm) {
        Inst.operation = Operation == Op::Move ? PREEMPT_CTX_MOVE : PREEMPT_CTX_NOT;
        Operands.push_back(A.Ids[0]);
      }
    } else {
      const Source &B = Sources[1];
      const Source *Reg = nullptr, *Imm = nullptr;
      preempt_ctx_operation Kind = PREEMPT_CTX_OPAQUE;
      switch (Operation) {
      case Op::Add:
        Kind = PREEMPT_CTX_ADD;
        break;
      case Op::Xor:
        Kind = PREEMPT_CTX_XOR;
        break;
      case Op::Mul:
        Kind = PREEMPT_CTX_MUL;
        break;
      default:
        Kind = PREEMPT_CTX_SUB;
        break;
      }
      bool Commutes = Operation == Op::Add || Operation == Op::Xor || Operation == Op::Mul;
      // SubRev computes B - A: swap so that operand 0 is the minuend.
      const Source &First = Operation == Op::SubRev ? B : A;
      const Source &Second = Operation == Op::SubRev ? A : B;
      if (!First.IsImm && !Second.IsImm) {
        Inst.operation = Kind;
        Operands.push_back(First.Ids[0]);
        Operands.push_back(Second.Ids[0]);
      } else if (!First.IsImm && Second.IsImm) {
        Reg = &First;
        Imm = &Second;
      } else if (First.IsImm && !Second.IsImm && Commutes) {
        Reg = &Second;
        Imm = &First;
      }
      if (Reg) {
        Inst.operation = Kind;
        Inst.has_immediate = 1;
        Inst.immediate = static_cast<uint64_t>(Imm->Imm) & Mask;
        Operands.push_back(Reg->Ids[0]);
      }
    }
  }
  for (const Source &S : Sources)
    if (Inst.operation == PREEMPT_CTX_OPAQUE)
      addUnique(Operands, S.Ids);
  for (const MachineOperand &MO : MI.operands()) {
    if (!MO.isReg() || MO.isDef() || !MO.isImplicit() || MO.isUndef())
      continue;
    SmallVector<uint16_t, 4> Ids;
    if (!regIds(MO, Ids, WhyNot))
      return false;
    addUnique(Operands, Ids);
  }

  bool HasSideEffects = MI.mayStore() || MI.hasUnmodeledSideEffects() || MI.isCall() || MI.isInlineAsm() ||
                        MI.isBundle() || (MI.mayLoad() && MI.hasOrderedMemoryRef()) || Name == "S_BARRIER";
  bool Control = MI.isTerminator() || MI.isBranch() || MI.isReturn();
  Inst.flags = 0;
  if (!HasSideEffects && !Control)
    Inst.flags |= PREEMPT_CTX_REEXECUTABLE;
  // A branch leaves the block: no routine may run it (CS-Defer stops before
  // it) and nothing after it is in the block anyway.
  if (HasSideEffects || Control)
    Inst.flags |= PREEMPT_CTX_BARRIER;
  if ((Inst.flags & PREEMPT_CTX_REEXECUTABLE) && Printer.print(MI))
    Inst.flags |= PREEMPT_CTX_COPYABLE;
  if (Backups.count(&MI)) {
    Inst.flags |= PREEMPT_CTX_BACKUP;
    // An SCC backup is an s_cselect of 1 and 0: a copy of the one-bit value.
    if (Name == "S_CSELECT_B32" && Operands.size() >= 1) {
      uint16_t Scc = 0;
      for (uint16_t Id : Operands)
        if (Table.get(Id).Name == "scc")
          Scc = Id;
      Inst.operation = PREEMPT_CTX_MOVE;
      Inst.has_immediate = 0;
      Operands.assign(1, Scc);
    }
  }
  Inst.opcode = MI.getOpcode();
  Inst.latency = latencyOf(Name, MI, Target);
  return true;
}

bool FunctionModel::nvptxLiveOuts(std::vector<std::vector<uint64_t>> &LiveOut, std::string &WhyNot) {
  size_t Words = wordsFor(Table.size());
  size_t N = MF.getNumBlockIDs();
  std::vector<std::vector<uint64_t>> Uses(N, std::vector<uint64_t>(Words)), Defs(Uses);
  std::vector<std::vector<size_t>> Successors(N);
  SmallVector<uint16_t, 4> Ids;
  for (MachineBasicBlock &MBB : MF) {
    unsigned B = MBB.getNumber();
    for (MachineBasicBlock *Succ : MBB.successors())
      Successors[B].push_back(Succ->getNumber());
    // Upward-exposed uses: walk backwards, a def hides later uses.
    for (MachineInstr &MI : llvm::reverse(MBB.instrs())) {
      if (MI.isDebugInstr())
        continue;
      for (const MachineOperand &MO : MI.operands())
        if (MO.isReg() && MO.isDef()) {
          Ids.clear();
          if (!regIds(MO, Ids, WhyNot))
            return false;
          for (uint16_t Id : Ids) {
            Defs[B][Id / 64] |= 1ull << (Id % 64);
            Uses[B][Id / 64] &= ~(1ull << (Id % 64));
          }
        }
      for (const MachineOperand &MO : MI.operands())
        if (MO.isReg() && MO.isUse() && !MO.isUndef()) {
          Ids.clear();
          if (!regIds(MO, Ids, WhyNot))
            return false;
          for (uint16_t Id : Ids)
            Uses[B][Id / 64] |= 1ull << (Id % 64);
        }
    }
  }
  std::vector<preempt_liveness_block> Blocks(N);
  for (size_t B = 0; B < N; ++B)
    Blocks[B] = preempt_liveness_block{Successors[B].data(), Successors[B].size(), Uses[B].data(), Defs[B].data()};
  std::vector<uint64_t> In(N * Words), Out(N * Words);
  if (preempt_liveness_solve(Blocks.data(), N, Table.size(), In.data(), Out.data()) != 0) {
    WhyNot = "liveness did not converge";
    return false;
  }
  LiveOut.assign(N, std::vector<uint64_t>(Words));
  for (size_t B = 0; B < N; ++B)
    std::copy(Out.begin() + B * Words, Out.begin() + (B + 1) * Words, LiveOut[B].begin());
  return true;
}

bool FunctionModel::buildBlock(MachineBasicBlock &MBB, BlockModel &Model, std::string &WhyNot) {
  Model.MBB = &MBB;
  size_t Words = wordsFor(Table.size());
  for (MachineInstr &MI : MBB) {
    if (MI.isDebugInstr() || MI.isMetaInstruction())
      continue;
    Model.Instrs.push_back(&MI);
  }
  if (Model.Instrs.size() > MaxBlockInstructions) {
    WhyNot = "block bb." + std::to_string(MBB.getNumber()) + " has more than " +
             std::to_string(MaxBlockInstructions) + " instructions";
    return false;
  }
  size_t Count = Model.Instrs.size();
  Model.Instructions.assign(Count, preempt_ctx_instruction{});
  Model.Results.clear();
  Model.Operands.clear();
  for (size_t J = 0; J < Count; ++J) {
    Model.Results.emplace_back();
    Model.Operands.emplace_back();
    if (!classify(*Model.Instrs[J], Model, Model.Instructions[J], WhyNot))
      return false;
  }
  for (size_t J = 0; J < Count; ++J) {
    preempt_ctx_instruction &Inst = Model.Instructions[J];
    Inst.results = Model.Results[J].data();
    Inst.result_count = Model.Results[J].size();
    Inst.operands = Model.Operands[J].data();
    Inst.operand_count = Model.Operands[J].size();
  }
  Model.LiveAfter.assign(Count, std::vector<uint64_t>(Words));
  Model.LiveIn.assign(Words, 0);
  return true;
}

bool FunctionModel::build(std::string &WhyNot) {
  Blocks.clear();
  if (!MF.getRegInfo().tracksLiveness()) {
    WhyNot = "the function does not track register liveness";
    return false;
  }
  if (!addRegisters(WhyNot))
    return false;
  std::vector<std::vector<uint64_t>> NvptxOut;
  if (Target == ModelTarget::NVPTX && !nvptxLiveOuts(NvptxOut, WhyNot))
    return false;
  SmallVector<uint16_t, 4> Ids;
  for (MachineBasicBlock &MBB : MF) {
    auto Model = std::make_unique<BlockModel>();
    if (!buildBlock(MBB, *Model, WhyNot))
      return false;
    // Backwards from the block's end; live_after[j] is taken just before
    // stepping over instruction j, live_in after the first one.
    size_t J = Model->Instrs.size();
    if (Target == ModelTarget::AMDGPU) {
      LivePhysRegs Live(*TRI);
      Live.addLiveOutsNoPristines(MBB);
      auto Snapshot = [&](std::vector<uint64_t> &Set) {
        // A lane of an OSRB VGPR is never live: the program never reads it.
        for (size_t Id = 0; Id < Table.size(); ++Id)
          if (Table.get(Id).Lane < 0 && Live.contains(Table.get(Id).Phys))
            Set[Id / 64] |= 1ull << (Id % 64);
      };
      for (MachineInstr &MI : llvm::reverse(MBB)) {
        if (J && Model->Instrs[J - 1] == &MI)
          Snapshot(Model->LiveAfter[--J]);
        Live.stepBackward(MI);
      }
      Snapshot(Model->LiveIn);
    } else {
      std::vector<uint64_t> Live = NvptxOut[MBB.getNumber()];
      for (MachineInstr &MI : llvm::reverse(MBB)) {
        if (J && Model->Instrs[J - 1] == &MI)
          Model->LiveAfter[--J] = Live;
        if (MI.isDebugInstr())
          continue;
        std::vector<uint32_t> Defs, Uses;
        for (const MachineOperand &MO : MI.operands()) {
          if (!MO.isReg() || (MO.isUse() && MO.isUndef()))
            continue;
          Ids.clear();
          if (!regIds(MO, Ids, WhyNot))
            return false;
          (MO.isDef() ? Defs : Uses).insert((MO.isDef() ? Defs : Uses).end(), Ids.begin(), Ids.end());
        }
        preempt_liveness_step_backward(Live.data(), Defs.data(), Defs.size(), Uses.data(), Uses.size());
      }
      Model->LiveIn = Live;
    }
    Model->LiveAfterPointers.clear();
    for (std::vector<uint64_t> &Set : Model->LiveAfter)
      Model->LiveAfterPointers.push_back(Set.data());
    Model->View.instructions = Model->Instructions.data();
    Model->View.count = Model->Instructions.size();
    Model->View.registers = Table.Infos.data();
    Model->View.register_count = Table.size();
    Model->View.live_after = Model->LiveAfterPointers.data();
    Model->View.live_in = Model->LiveIn.data();
    if (preempt_ctx_block_validate(&Model->View) != 0) {
      WhyNot = "the model of bb." + std::to_string(MBB.getNumber()) + " is malformed";
      return false;
    }
    Blocks.push_back(std::move(Model));
  }
  return true;
}

} // namespace preempt
