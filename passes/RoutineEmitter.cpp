// RoutineEmitter.cpp: per-point preemption/resumption routines from CTXBack plans, shared by suffix, in gfx9 asm or PTX.
// CTXBack §IV-A (dedicated routines, revert-then-save, shared routines entered at an offset) and §IV-B.
//
// AMDGPU convention (gfx9, after the driver's CWSR trap handler). The general
// handler, not written here, saves PC, hardware state and LDS, looks up the
// preempted instruction in the table and jumps to the routine entry with:
//   ttmp[8:11]  a buffer resource for this wavefront's context, swizzled with
//               add_tid so that `buffer_store_dword vN, off, ttmp[8:11], ttmp7
//               offset:K` stores a whole VGPR (64 lanes x 4 bytes) at K;
//   ttmp7       the context's byte offset inside that buffer;
//   ttmp[14:15] (resumption only) the address of the re-entry instruction.
// The routines also use ttmp[2:3] (the program's EXEC while vector registers
// are moved with EXEC = all lanes), ttmp4 (a scalar on its way to or from
// memory), ttmp5 (a constant a VOP3 cannot encode as a literal), ttmp6 (buffer
// offset past the 12-bit field) and ttmp12 (SCC around our own SALU
// instructions: the plans assume SCC changes only where the program changes it).
// Layout of one plan's context: vector slots first, 256 bytes each in slot
// order, then scalar slots, 4 bytes each. SCC is saved as 0/1 with
// s_cselect_b32 and restored with s_cmp_lg_u32; MODE with s_getreg/s_setreg.
// A VGPR lane that holds an OSRB backup (vN[k], a scalar of the model) is
// saved through ttmp4 with `v_readlane_b32 ttmp4, vN, k` (and, were one ever
// loaded, written back with v_writelane_b32); neither depends on EXEC.
// A preemption routine reverts, saves and ends the wavefront (s_endpgm); a
// resumption routine loads, re-executes and reverts, then jumps to the
// re-entry instruction with `s_setpc_b64 ttmp[14:15]`. Reverting and
// re-executed instructions run with the program's EXEC, loads and stores of
// vector registers with all lanes on.
//
// NVPTX convention: every routine is a `.visible .func` of a PTX module of its
// own; the context pointer (this thread's record; slot k at byte 8k) is its
// first parameter. A preemption routine takes the values of the registers it
// reads as parameters; a resumption routine returns the registers it writes
// (as .reg return parameters: PTX wants those when there are several).
// Predicates travel as 0/1 in a .b32 parameter and a byte of context.
#include "RoutineEmitter.h"
#include "InstructionPrinter.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/CodeGen/MachineInstr.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <deque>
#include <map>
#include <set>

using namespace llvm;

namespace preempt {

namespace {

enum class Mode { Program, AllLanes };

// One plan step as text. Routines are compared chunk by chunk: a routine may
// be entered at a chunk boundary where EXEC is the program's, so a plan whose
// steps are a suffix of another plan's shares its routine (§IV-A).
struct Chunk {
  Mode Before = Mode::Program;
  std::vector<std::string> Lines;
};

std::string sanitize(StringRef Name) {
  std::string Out;
  for (char C : Name)
    Out += (isAlnum(C) || C == '_') ? C : '_';
  return Out;
}

std::string hex(uint64_t V) {
  std::string S;
  raw_string_ostream OS(S);
  OS << format_hex(V, 2);
  return S;
}

uint64_t oddInverse(uint64_t Odd) {
  uint64_t Inverse = Odd; // right to 3 bits; each Newton step doubles them
  for (int Step = 0; Step < 6; ++Step)
    Inverse *= 2 - Odd * Inverse;
  return Inverse;
}

uint64_t maskOf(unsigned Bits) { return Bits >= 64 ? ~0ull : ((1ull << Bits) - 1); }

// How instruction `Inst` is undone: which input holds r (Alg. 2's r_share).
bool revertShape(const preempt_ctx_block &Block, const preempt_ctx_instruction &Inst, size_t &Shared) {
  if (!Inst.result_count)
    return false;
  size_t Inputs = Inst.operation == PREEMPT_CTX_NOT ? 1 : (Inst.has_immediate ? 1 : 2);
  if (Inst.operand_count < Inputs)
    return false;
  for (size_t O = 0; O < Inputs; ++O)
    if (Inst.operands[O] == Inst.results[0]) {
      Shared = O;
      break;
    } else if (O + 1 == Inputs) {
      return false;
    }
  if (Inst.operation == PREEMPT_CTX_MUL && (!Inst.has_immediate || Shared != 0 || !(Inst.immediate & 1)))
    return false;
  (void)Block;
  return Inst.operation == PREEMPT_CTX_ADD || Inst.operation == PREEMPT_CTX_SUB ||
         Inst.operation == PREEMPT_CTX_XOR || Inst.operation == PREEMPT_CTX_NOT || Inst.operation == PREEMPT_CTX_MUL;
}

// Slot offsets of one plan: vector slots first, then scalar ones (AMDGPU);
// 8 bytes a slot (NVPTX).
std::map<uint32_t, uint64_t> layoutOf(const preempt_ctx_plan &Plan, const RegisterTable &Table, ModelTarget Target) {
  std::map<uint32_t, uint16_t> SlotRegs;
  for (size_t I = 0; I < Plan.preempt_count; ++I)
    if (Plan.preempt[I].kind == PREEMPT_CTX_SAVE)
      SlotRegs[Plan.preempt[I].slot] = Plan.preempt[I].reg;
  for (size_t I = 0; I < Plan.resume_count; ++I)
    if (Plan.resume[I].kind == PREEMPT_CTX_LOAD)
      SlotRegs.emplace(Plan.resume[I].slot, Plan.resume[I].reg);
  std::map<uint32_t, uint64_t> Offsets;
  if (Target == ModelTarget::NVPTX) {
    for (auto &[Slot, Reg] : SlotRegs)
      Offsets[Slot] = 8ull * Slot;
    return Offsets;
  }
  uint64_t Vector = 0, Scalars = 0;
  for (auto &[Slot, Reg] : SlotRegs)
    if (Table.get(Reg).Info.kind == PREEMPT_CTX_VECTOR)
      Offsets[Slot] = 256 * Vector++;
  for (auto &[Slot, Reg] : SlotRegs)
    if (Table.get(Reg).Info.kind != PREEMPT_CTX_VECTOR)
      Offsets[Slot] = 256 * Vector + 4 * Scalars++;
  return Offsets;
}

// ---------------------------------------------------------------- AMDGPU

class AmdgpuWriter {
public:
  AmdgpuWriter(const FunctionModel &Model, const InstructionPrinter &Printer, const BlockModel &Block,
               const preempt_ctx_plan &Plan)
      : Table(Model.Table), Printer(Printer), Block(Block), Plan(Plan),
        Offsets(layoutOf(Plan, Model.Table, ModelTarget::AMDGPU)) {}

  bool preempt(std::vector<Chunk> &Chunks, std::string &WhyNot);
  bool resume(std::vector<std::string> &Lines, std::string &WhyNot);

private:
  bool step(const preempt_ctx_step &Step, bool Resuming, std::vector<std::string> &Out, std::string &WhyNot);
  void setMode(Mode Want, std::vector<std::string> &Out);
  void withSccKept(std::vector<std::string> &Out, ArrayRef<std::string> Lines);
  std::string soffset(uint64_t Offset, uint64_t Limit, uint64_t &Field, std::vector<std::string> &Out);
  bool revert(uint32_t Index, std::vector<std::string> &Out, std::string &WhyNot);
  std::string operandText(uint16_t Id) const { return Table.get(Id).Name; }
  std::string constantText(uint64_t Value, std::vector<std::string> &Out);

  const RegisterTable &Table;
  const InstructionPrinter &Printer;
  const BlockModel &Block;
  const preempt_ctx_plan &Plan;
  std::map<uint32_t, uint64_t> Offsets;
  Mode Current = Mode::Program;
  bool PendingLoads = false;
};

void AmdgpuWriter::setMode(Mode Want, std::vector<std::string> &Out) {
  if (Want == Current)
    return;
  if (Want == Mode::AllLanes) {
    Out.push_back("s_mov_b64 ttmp[2:3], exec");
    Out.push_back("s_mov_b64 exec, -1");
  } else {
    Out.push_back("s_mov_b64 exec, ttmp[2:3]");
  }
  Current = Want;
}

void AmdgpuWriter::withSccKept(std::vector<std::string> &Out, ArrayRef<std::string> Lines) {
  Out.push_back("s_cselect_b32 ttmp12, 1, 0");
  Out.insert(Out.end(), Lines.begin(), Lines.end());
  Out.push_back("s_cmp_lg_u32 ttmp12, 0");
}

// The soffset register and the offset field for a buffer access at Offset.
std::string AmdgpuWriter::soffset(uint64_t Offset, uint64_t Limit, uint64_t &Field, std::vector<std::string> &Out) {
  if (Offset < Limit) {
    Field = Offset;
    return "ttmp7";
  }
  Field = Offset % Limit;
  withSccKept(Out, {"s_add_u32 ttmp6, ttmp7, " + hex(Offset - Field)});
  return "ttmp6";
}

std::string AmdgpuWriter::constantText(uint64_t Value, std::vector<std::string> &Out) {
  int64_t Signed = static_cast<int32_t>(static_cast<uint32_t>(Value));
  if (Signed >= -16 && Signed <= 64)
    return std::to_string(Signed); // an inline constant: VOP3 takes it
  Out.push_back("s_mov_b32 ttmp5, " + hex(static_cast<uint32_t>(Value)));
  return "ttmp5";
}

static bool isPlainSgpr(StringRef Name) {
  return (Name.size() > 1 && Name[0] == 's' && isDigit(Name[1])) || Name == "vcc_lo" || Name == "vcc_hi";
}

bool AmdgpuWriter::revert(uint32_t Index, std::vector<std::string> &Out, std::string &WhyNot) {
  if (Index >= Block.block().count) {
    WhyNot = "revert of an instruction outside the block";
    return false;
  }
  const preempt_ctx_instruction &Inst = Block.block().instructions[Index];
  size_t Shared = 0;
  if (!revertShape(Block.block(), Inst, Shared)) {
    WhyNot = "instruction " + std::to_string(Index) + " cannot be reverted";
    return false;
  }
  const ModelRegister &R = Table.get(Inst.results[0]);
  std::string Reg = R.Name;
  bool Vector = R.Info.kind == PREEMPT_CTX_VECTOR;
  std::vector<std::string> Lines;
  std::string Other;
  if (Inst.operation != PREEMPT_CTX_NOT) {
    if (Shared == 0 && Inst.has_immediate)
      Other = Vector ? constantText(Inst.immediate, Lines) : hex(static_cast<uint32_t>(Inst.immediate));
    else
      Other = operandText(Inst.operands[Shared == 0 ? 1 : 0]);
  }
  std::string P = Vector ? "v_" : "s_";
  std::string E = Vector ? "_e64" : "";
  switch (Inst.operation) {
  case PREEMPT_CTX_ADD: // r' = r + x, r = r' - x
    Lines.push_back(P + "sub_u32" + E + " " + Reg + ", " + Reg + ", " + Other);
    break;
  case PREEMPT_CTX_SUB: // r' = r - x gives r' + x; r' = x - r gives x - r'
    if (Shared == 0)
      Lines.push_back(P + "add_u32" + E + " " + Reg + ", " + Reg + ", " + Other);
    else
      Lines.push_back(P + "sub_u32" + E + " " + Reg + ", " + Other + ", " + Reg);
    break;
  case PREEMPT_CTX_XOR:
    Lines.push_back(P + "xor_b32" + E + " " + Reg + ", " + Reg + ", " + Other);
    break;
  case PREEMPT_CTX_NOT:
    Lines.push_back(P + "not_b32" + (Vector ? "_e32" : "") + " " + Reg + ", " + Reg);
    break;
  case PREEMPT_CTX_MUL: {
    uint32_t Inverse = static_cast<uint32_t>(oddInverse(Inst.immediate));
    if (Vector) {
      Lines.push_back("s_mov_b32 ttmp5, " + hex(Inverse)); // v_mul_lo_u32 takes no literal on gfx9
      Lines.push_back("v_mul_lo_u32 " + Reg + ", " + Reg + ", ttmp5");
    } else {
      Lines.push_back("s_mul_i32 " + Reg + ", " + Reg + ", " + hex(Inverse));
    }
    break;
  }
  default:
    WhyNot = "instruction " + std::to_string(Index) + " cannot be reverted";
    return false;
  }
  Lines.back() += " ; revert " + std::to_string(Index);
  // SALU arithmetic writes SCC, which the plan does not expect a revert to do.
  bool WritesScc = !Vector && Inst.operation != PREEMPT_CTX_MUL;
  if (WritesScc)
    withSccKept(Out, Lines);
  else
    Out.insert(Out.end(), Lines.begin(), Lines.end());
  return true;
}

bool AmdgpuWriter::step(const preempt_ctx_step &Step, bool Resuming, std::vector<std::string> &Out,
                        std::string &WhyNot) {
  auto flushLoads = [&] {
    if (PendingLoads)
      Out.push_back("s_waitcnt vmcnt(0) lgkmcnt(0)");
    PendingLoads = false;
  };
  switch (Step.kind) {
  case PREEMPT_CTX_SAVE:
  case PREEMPT_CTX_LOAD: {
    bool Save = Step.kind == PREEMPT_CTX_SAVE;
    if (Step.reg >= Table.size()) {
      WhyNot = "a step names an unknown register";
      return false;
    }
    const ModelRegister &R = Table.get(Step.reg);
    uint64_t Offset = Offsets.count(Step.slot) ? Offsets[Step.slot] : 0;
    uint64_t Field = 0;
    std::string Comment = std::string(Save ? " ; save " : " ; load ") + R.Name + (Save ? " -> [" : " <- [") +
                          std::to_string(Step.slot) + "]";
    if (R.Info.kind == PREEMPT_CTX_VECTOR) {
      if (StringRef(R.Name).starts_with("a")) {
        WhyNot = "accumulation registers are not handled by the gfx9 routines";
        return false;
      }
      setMode(Mode::AllLanes, Out);
      std::string SOff = soffset(Offset, 4096, Field, Out);
      Out.push_back(std::string(Save ? "buffer_store_dword " : "buffer_load_dword ") + R.Name + ", off, ttmp[8:11], " +
                    SOff + " offset:" + std::to_string(Field) + Comment);
      PendingLoads |= !Save;
      return true;
    }
    std::string SOff = soffset(Offset, 1u << 20, Field, Out);
    std::string Mem = "ttmp[8:11], " + SOff + " offset:" + hex(Field);
    StringRef Name = R.Name;
    bool ExecPart = Name == "exec_lo" || Name == "exec_hi";
    // Where the value lives now: the program's EXEC is parked in ttmp[2:3]
    // while all lanes are on.
    std::string Home = ExecPart && Current == Mode::AllLanes ? (Name == "exec_lo" ? "ttmp2" : "ttmp3") : R.Name;
    if (Save) {
      std::string Source = Home;
      if (Name == "scc") {
        Out.push_back("s_cselect_b32 ttmp4, 1, 0");
        Source = "ttmp4";
      } else if (Name == "mode") {
        Out.push_back("s_getreg_b32 ttmp4, hwreg(HW_REG_MODE)");
        Source = "ttmp4";
      } else if (R.Lane >= 0) {
        Out.push_back("v_readlane_b32 ttmp4, " + Printer.physName(R.Phys) + ", " + std::to_string(R.Lane));
        Source = "ttmp4";
      } else if (!isPlainSgpr(Home) && !StringRef(Home).starts_with("ttmp")) {
        Out.push_back("s_mov_b32 ttmp4, " + Home);
        Source = "ttmp4";
      }
      Out.push_back("s_buffer_store_dword " + Source + ", " + Mem + Comment);
      return true;
    }
    if (isPlainSgpr(Home) || StringRef(Home).starts_with("ttmp")) {
      Out.push_back("s_buffer_load_dword " + Home + ", " + Mem + Comment);
      PendingLoads = true;
      return true;
    }
    Out.push_back("s_buffer_load_dword ttmp4, " + Mem + Comment);
    Out.push_back("s_waitcnt lgkmcnt(0)");
    if (Name == "scc")
      Out.push_back("s_cmp_lg_u32 ttmp4, 0");
    else if (Name == "mode")
      Out.push_back("s_setreg_b32 hwreg(HW_REG_MODE), ttmp4");
    else if (R.Lane >= 0)
      Out.push_back("v_writelane_b32 " + Printer.physName(R.Phys) + ", ttmp4, " + std::to_string(R.Lane));
    else
      Out.push_back("s_mov_b32 " + Home + ", ttmp4");
    return true;
  }
  case PREEMPT_CTX_REVERT:
    flushLoads();
    setMode(Mode::Program, Out);
    return revert(Step.instruction, Out, WhyNot);
  case PREEMPT_CTX_REEXECUTE:
  case PREEMPT_CTX_EXECUTE: {
    flushLoads();
    setMode(Mode::Program, Out);
    if (Step.instruction >= Block.Instrs.size()) {
      WhyNot = "a step names an instruction outside the block";
      return false;
    }
    const MachineInstr &MI = *Block.Instrs[Step.instruction];
    std::optional<std::string> Text = Printer.print(MI);
    if (!Text) {
      WhyNot = "instruction " + std::to_string(Step.instruction) + " cannot be printed";
      return false;
    }
    SmallVector<StringRef, 4> Lines;
    StringRef(*Text).split(Lines, '\n');
    for (StringRef Line : Lines)
      Out.push_back(Line.str());
    Out.back() += (Step.kind == PREEMPT_CTX_EXECUTE ? " ; execute " : " ; reexecute ") +
                  std::to_string(Step.instruction);
    if (MI.mayLoad())
      Out.push_back("s_waitcnt vmcnt(0) lgkmcnt(0)");
    return true;
  }
  default:
    WhyNot = "unknown step kind " + std::to_string(Step.kind);
    return false;
  }
  (void)Resuming;
}

bool AmdgpuWriter::preempt(std::vector<Chunk> &Chunks, std::string &WhyNot) {
  for (size_t I = 0; I < Plan.preempt_count; ++I) {
    Chunk C;
    C.Before = Current;
    if (!step(Plan.preempt[I], false, C.Lines, WhyNot))
      return false;
    Chunks.push_back(std::move(C));
  }
  Chunk End;
  End.Before = Current;
  End.Lines.push_back("s_waitcnt vmcnt(0) lgkmcnt(0)");
  End.Lines.push_back("s_endpgm");
  Chunks.push_back(std::move(End));
  return true;
}

bool AmdgpuWriter::resume(std::vector<std::string> &Lines, std::string &WhyNot) {
  for (size_t I = 0; I < Plan.resume_count; ++I)
    if (!step(Plan.resume[I], true, Lines, WhyNot))
      return false;
  if (PendingLoads)
    Lines.push_back("s_waitcnt vmcnt(0) lgkmcnt(0)");
  setMode(Mode::Program, Lines);
  Lines.push_back("s_setpc_b64 ttmp[14:15]");
  return true;
}

// ---------------------------------------------------------------- NVPTX

std::string ptxType(unsigned Bits) { return Bits == 1 ? "pred" : "b" + std::to_string(Bits); }
std::string paramName(StringRef Name) { return "v_" + Name.drop_front(Name.starts_with("%") ? 1 : 0).str(); }

class PtxWriter {
public:
  PtxWriter(const FunctionModel &Model, const InstructionPrinter &Printer, const BlockModel &Block,
            const preempt_ctx_plan &Plan)
      : Table(Model.Table), Printer(Printer), Block(Block), Plan(Plan),
        Offsets(layoutOf(Plan, Model.Table, ModelTarget::NVPTX)) {}

  // The body of a .func (without its name), or false.
  bool routine(bool Resuming, std::string &Out, std::string &WhyNot);

private:
  bool step(const preempt_ctx_step &Step, std::vector<std::string> &Body, std::string &WhyNot);
  bool revert(uint32_t Index, std::vector<std::string> &Body, std::string &WhyNot);
  void use(uint16_t Id) { Used.insert(Id); }
  void useInstruction(uint32_t Index) {
    const preempt_ctx_instruction &Inst = Block.block().instructions[Index];
    for (size_t I = 0; I < Inst.operand_count; ++I)
      use(Inst.operands[I]);
    for (size_t I = 0; I < Inst.result_count; ++I) {
      use(Inst.results[I]);
      Written.insert(Inst.results[I]);
    }
  }

  const RegisterTable &Table;
  const InstructionPrinter &Printer;
  const BlockModel &Block;
  const preempt_ctx_plan &Plan;
  std::map<uint32_t, uint64_t> Offsets;
  std::set<uint16_t> Used, Written;
};

bool PtxWriter::revert(uint32_t Index, std::vector<std::string> &Body, std::string &WhyNot) {
  const preempt_ctx_instruction &Inst = Block.block().instructions[Index];
  size_t Shared = 0;
  if (!revertShape(Block.block(), Inst, Shared)) {
    WhyNot = "instruction " + std::to_string(Index) + " cannot be reverted";
    return false;
  }
  useInstruction(Index);
  const ModelRegister &R = Table.get(Inst.results[0]);
  unsigned Bits = R.Info.bits;
  if (Bits < 16) {
    WhyNot = "a predicate cannot be reverted";
    return false;
  }
  std::string Reg = R.Name, Other;
  if (Inst.operation != PREEMPT_CTX_NOT)
    Other = Shared == 0 && Inst.has_immediate ? std::to_string(Inst.immediate & maskOf(Bits))
                                              : Table.get(Inst.operands[Shared == 0 ? 1 : 0]).Name;
  std::string S = ".s" + std::to_string(Bits), B = ".b" + std::to_string(Bits);
  std::string Line;
  switch (Inst.operation) {
  case PREEMPT_CTX_ADD:
    Line = "sub" + S + " " + Reg + ", " + Reg + ", " + Other + ";";
    break;
  case PREEMPT_CTX_SUB:
    Line = Shared == 0 ? "add" + S + " " + Reg + ", " + Reg + ", " + Other + ";"
                       : "sub" + S + " " + Reg + ", " + Other + ", " + Reg + ";";
    break;
  case PREEMPT_CTX_XOR:
    Line = "xor" + B + " " + Reg + ", " + Reg + ", " + Other + ";";
    break;
  case PREEMPT_CTX_NOT:
    Line = "not" + B + " " + Reg + ", " + Reg + ";";
    break;
  case PREEMPT_CTX_MUL:
    Line = "mul.lo" + S + " " + Reg + ", " + Reg + ", " + std::to_string(oddInverse(Inst.immediate) & maskOf(Bits)) +
           ";";
    break;
  default:
    WhyNot = "instruction " + std::to_string(Index) + " cannot be reverted";
    return false;
  }
  Body.push_back(Line + " // revert " + std::to_string(Index));
  return true;
}

bool PtxWriter::step(const preempt_ctx_step &Step, std::vector<std::string> &Body, std::string &WhyNot) {
  switch (Step.kind) {
  case PREEMPT_CTX_SAVE:
  case PREEMPT_CTX_LOAD: {
    if (Step.reg >= Table.size()) {
      WhyNot = "a step names an unknown register";
      return false;
    }
    const ModelRegister &R = Table.get(Step.reg);
    use(Step.reg);
    std::string Address = "[%ctx+" + std::to_string(Offsets[Step.slot]) + "]";
    std::string Comment = " // " + std::string(Step.kind == PREEMPT_CTX_SAVE ? "save " : "load ") + R.Name +
                          (Step.kind == PREEMPT_CTX_SAVE ? " -> [" : " <- [") + std::to_string(Step.slot) + "]";
    if (Step.kind == PREEMPT_CTX_SAVE) {
      if (R.Info.bits == 1) {
        Body.push_back("selp.b16 %ctxh, 1, 0, " + R.Name + ";");
        Body.push_back("st.global.b8 " + Address + ", %ctxh;" + Comment);
      } else {
        Body.push_back("st.global.b" + std::to_string(R.Info.bits) + " " + Address + ", " + R.Name + ";" + Comment);
      }
    } else {
      Written.insert(Step.reg);
      if (R.Info.bits == 1) {
        Body.push_back("ld.global.b8 %ctxh, " + Address + ";" + Comment);
        Body.push_back("setp.ne.b16 " + R.Name + ", %ctxh, 0;");
      } else {
        Body.push_back("ld.global.b" + std::to_string(R.Info.bits) + " " + R.Name + ", " + Address + ";" + Comment);
      }
    }
    return true;
  }
  case PREEMPT_CTX_REVERT:
    if (Step.instruction >= Block.Instrs.size()) {
      WhyNot = "a step names an instruction outside the block";
      return false;
    }
    return revert(Step.instruction, Body, WhyNot);
  case PREEMPT_CTX_REEXECUTE:
  case PREEMPT_CTX_EXECUTE: {
    if (Step.instruction >= Block.Instrs.size()) {
      WhyNot = "a step names an instruction outside the block";
      return false;
    }
    std::optional<std::string> Text = Printer.print(*Block.Instrs[Step.instruction]);
    if (!Text) {
      WhyNot = "instruction " + std::to_string(Step.instruction) + " cannot be printed";
      return false;
    }
    useInstruction(Step.instruction);
    Body.push_back(*Text + (Step.kind == PREEMPT_CTX_EXECUTE ? " // execute " : " // reexecute ") +
                   std::to_string(Step.instruction));
    return true;
  }
  default:
    WhyNot = "unknown step kind " + std::to_string(Step.kind);
    return false;
  }
}

bool PtxWriter::routine(bool Resuming, std::string &Out, std::string &WhyNot) {
  std::vector<std::string> Body;
  const preempt_ctx_step *Steps = Resuming ? Plan.resume : Plan.preempt;
  size_t Count = Resuming ? Plan.resume_count : Plan.preempt_count;
  for (size_t I = 0; I < Count; ++I)
    if (!step(Steps[I], Body, WhyNot))
      return false;
  raw_string_ostream OS(Out);
  // Resumption returns what it rebuilt; preemption receives what it reads.
  std::vector<uint16_t> Params(Resuming ? Written.begin() : Used.begin(), Resuming ? Written.end() : Used.end());
  if (Resuming) {
    OS << "(";
    for (size_t I = 0; I < Params.size(); ++I)
      OS << (I ? ", " : "") << ".reg .b" << std::max<unsigned>(32, Table.get(Params[I]).Info.bits) << " "
         << paramName(Table.get(Params[I]).Name);
    OS << ") ";
  }
  OS << "%NAME%(.param .b64 ctx";
  if (!Resuming)
    for (uint16_t Id : Params)
      OS << ", .param .b" << std::max<unsigned>(32, Table.get(Id).Info.bits) << " " << paramName(Table.get(Id).Name);
  OS << ")\n{\n  .reg .b64 %ctx;\n  .reg .b16 %ctxh;\n  .reg .b32 %ctxw;\n";
  for (uint16_t Id : Used)
    OS << "  .reg ." << ptxType(Table.get(Id).Info.bits) << " " << Table.get(Id).Name << ";\n";
  OS << "  ld.param.b64 %ctx, [ctx];\n";
  if (!Resuming)
    for (uint16_t Id : Params) {
      const ModelRegister &R = Table.get(Id);
      if (R.Info.bits == 1) {
        OS << "  ld.param.b32 %ctxw, [" << paramName(R.Name) << "];\n";
        OS << "  setp.ne.b32 " << R.Name << ", %ctxw, 0;\n";
      } else {
        OS << "  ld.param.b" << std::max<unsigned>(32, R.Info.bits) << " "
           << (R.Info.bits == 16 ? "%ctxw" : R.Name) << ", [" << paramName(R.Name) << "];\n";
        if (R.Info.bits == 16)
          OS << "  cvt.u16.u32 " << R.Name << ", %ctxw;\n";
      }
    }
  for (const std::string &Line : Body)
    OS << "  " << Line << "\n";
  // Several return values must be .reg parameters in PTX.
  if (Resuming)
    for (uint16_t Id : Params) {
      const ModelRegister &R = Table.get(Id);
      std::string Out = paramName(R.Name);
      if (R.Info.bits == 1)
        OS << "  selp.b32 " << Out << ", 1, 0, " << R.Name << ";\n";
      else if (R.Info.bits == 16)
        OS << "  cvt.u32.u16 " << Out << ", " << R.Name << ";\n";
      else
        OS << "  mov.b" << unsigned(R.Info.bits) << " " << Out << ", " << R.Name << ";\n";
    }
  OS << "  ret;\n}\n";
  return true;
}

} // namespace

std::string routineFileHeader(ModelTarget Target, StringRef Cpu) {
  std::string Out;
  raw_string_ostream OS(Out);
  if (Target == ModelTarget::AMDGPU) {
    OS << "; CTXBack dedicated preemption and resumption routines (generated by libpreempt, preempt-ctxback).\n"
       << "; Convention: see passes/RoutineEmitter.cpp. Entry state: ttmp[8:11] context buffer resource,\n"
       << "; ttmp7 context offset, ttmp[14:15] re-entry address (resumption). Table per point:\n"
       << "; .long block, instruction, re-entry instruction, entry offset in the preemption routine;\n"
       << "; .quad preemption routine, resumption routine.\n"
       << "\t.text\n";
  } else {
    unsigned Sm = 90;
    if (Cpu.starts_with("sm_"))
      Cpu.drop_front(3).take_while(isDigit).getAsInteger(10, Sm);
    OS << "// CTXBack dedicated preemption and resumption routines (generated by libpreempt, preempt-ctxback).\n"
       << "// Convention: see passes/RoutineEmitter.cpp. Table per point: block, instruction, preemption routine,\n"
       << "// resumption routine, re-entry instruction.\n"
       << ".version " << (Sm <= 90 ? "8.0" : "8.8") << "\n.target sm_" << Sm << "\n.address_size 64\n\n";
  }
  return Out;
}

bool emitKernelRoutines(StringRef Kernel, ModelTarget Target, const FunctionModel &Model,
                        const InstructionPrinter &Printer, ArrayRef<BlockPlans> Blocks, KernelRoutines &Out,
                        std::string &WhyNot) {
  std::string Sym = "__ctxback_" + sanitize(Kernel);
  struct Point {
    const BlockModel *Block;
    size_t Index;
    const preempt_ctx_plan *Plan;
    std::vector<Chunk> Preempt; // AMDGPU
    std::string PreemptText;    // NVPTX: the whole .func but its name
    std::string Resume;
    unsigned Routine = 0, Entry = 0, ResumeId = 0;
  };
  std::vector<Point> Points;
  auto write = [&](Point &P, const preempt_ctx_plan &Plan, std::string &Why) {
    const BlockModel &Block = *P.Block;
    if (Target == ModelTarget::AMDGPU) {
      AmdgpuWriter Pre(Model, Printer, Block, Plan), Res(Model, Printer, Block, Plan);
      std::vector<std::string> Lines;
      P.Preempt.clear();
      if (!Pre.preempt(P.Preempt, Why) || !Res.resume(Lines, Why))
        return false;
      for (const Chunk &C : P.Preempt)
        for (const std::string &L : C.Lines)
          if (!Printer.assembles(StringRef(L).split(" ;").first.str())) {
            Why = "routine line '" + L + "' does not assemble";
            return false;
          }
      P.Resume.clear();
      for (const std::string &L : Lines) {
        if (!Printer.assembles(StringRef(L).split(" ;").first.str())) {
          Why = "routine line '" + L + "' does not assemble";
          return false;
        }
        P.Resume += "\t" + L + "\n";
      }
      return true;
    }
    PtxWriter Pre(Model, Printer, Block, Plan), Res(Model, Printer, Block, Plan);
    P.PreemptText.clear();
    P.Resume.clear();
    return Pre.routine(false, P.PreemptText, Why) && Res.routine(true, P.Resume, Why);
  };
  // A plan whose routine cannot be written (CS-Defer running an instruction
  // the printer does not know) falls back to LIVE's, which only moves
  // registers.
  std::deque<preempt_ctx_plan> LivePlans;
  scope_exit FreeLive([&] {
    for (preempt_ctx_plan &Plan : LivePlans)
      preempt_ctx_plan_free(&Plan);
  });
  for (const BlockPlans &BP : Blocks)
    for (size_t I = 0; I < BP.Plans.size(); ++I) {
      Point P{BP.Model, I, &BP.Plans[I], {}, {}, {}};
      std::string Why;
      if (!write(P, BP.Plans[I], Why)) {
        LivePlans.emplace_back();
        std::string LiveWhy;
        if (preempt_ctx_plan_live(&BP.Model->block(), I, &preempt_ctx_default_costs, &LivePlans.back()) != 0 ||
            !write(P, LivePlans.back(), LiveWhy)) {
          WhyNot = "bb." + std::to_string(BP.Model->MBB->getNumber()) + " point " + std::to_string(I) + ": " + Why +
                   (LiveWhy.empty() ? "" : "; with LIVE: " + LiveWhy);
          return false;
        }
        P.Plan = &LivePlans.back();
        ++Out.LiveFallbacks;
      }
      Points.push_back(std::move(P));
    }

  raw_string_ostream OS(Out.Text);
  std::vector<std::string> ResumeTexts;
  StringMap<unsigned> ResumeIds;
  for (Point &P : Points) {
    auto [It, New] = ResumeIds.try_emplace(P.Resume, ResumeTexts.size());
    if (New)
      ResumeTexts.push_back(P.Resume);
    P.ResumeId = It->second;
  }

  if (Target == ModelTarget::AMDGPU) {
    // Longest first, so that shorter plans find the routine they are a suffix of.
    std::vector<size_t> Order(Points.size());
    for (size_t I = 0; I < Order.size(); ++I)
      Order[I] = I;
    std::stable_sort(Order.begin(), Order.end(),
                     [&](size_t A, size_t B) { return Points[A].Preempt.size() > Points[B].Preempt.size(); });
    std::vector<std::vector<Chunk> *> Routines;
    std::vector<std::set<unsigned>> Entries;
    StringMap<std::pair<unsigned, unsigned>> Suffixes;
    for (size_t I : Order) {
      Point &P = Points[I];
      std::string Whole;
      for (const Chunk &C : P.Preempt)
        for (const std::string &L : C.Lines)
          Whole += L + "\n";
      auto Found = Suffixes.find(Whole);
      if (Found != Suffixes.end()) {
        P.Routine = Found->second.first;
        P.Entry = Found->second.second;
      } else {
        P.Routine = Routines.size();
        P.Entry = 0;
        Routines.push_back(&P.Preempt);
        Entries.emplace_back();
        std::string Suffix;
        for (size_t K = P.Preempt.size(); K-- > 0;) {
          std::string Text;
          for (const std::string &L : P.Preempt[K].Lines)
            Text += L + "\n";
          Suffix = Text + Suffix;
          if (P.Preempt[K].Before == Mode::Program)
            Suffixes.try_emplace(Suffix, P.Routine, K);
        }
      }
      Entries[P.Routine].insert(P.Entry);
    }
    OS << "; ---- kernel " << Kernel << ": " << Routines.size() << " preemption routines, " << ResumeTexts.size()
       << " resumption routines for " << Points.size() << " points\n";
    for (size_t R = 0; R < Routines.size(); ++R) {
      OS << "\t.globl " << Sym << "_p" << R << "\n\t.p2align 8\n" << Sym << "_p" << R << ":\n";
      const std::vector<Chunk> &Chunks = *Routines[R];
      for (size_t K = 0; K < Chunks.size(); ++K) {
        if (K && Entries[R].count(K))
          OS << Sym << "_p" << R << "_e" << K << ":\n";
        for (const std::string &L : Chunks[K].Lines)
          OS << "\t" << L << "\n";
      }
    }
    for (size_t R = 0; R < ResumeTexts.size(); ++R)
      OS << "\t.globl " << Sym << "_r" << R << "\n\t.p2align 8\n" << Sym << "_r" << R << ":\n" << ResumeTexts[R];
    OS << "\t.section .rodata.ctxback,\"a\",@progbits\n\t.p2align 3\n\t.globl " << Sym << "_table\n"
       << Sym << "_table:\n";
    for (const Point &P : Points) {
      std::string Routine = Sym + "_p" + std::to_string(P.Routine);
      std::string Entry = P.Entry ? Routine + "_e" + std::to_string(P.Entry) : Routine;
      OS << "\t; bb." << P.Block->MBB->getNumber() << " point " << P.Index << ": preempt " << Entry << ", resume "
         << Sym << "_r" << P.ResumeId << ", re-enter at " << P.Plan->resume_at << "\n";
      OS << "\t.long " << P.Block->MBB->getNumber() << ", " << P.Index << ", " << P.Plan->resume_at << ", " << Entry
         << " - " << Routine << "\n\t.quad " << Routine << ", " << Sym << "_r" << P.ResumeId << "\n";
    }
    OS << "\t.text\n";
    Out.PreemptRoutines = Routines.size();
    Out.ResumeRoutines = ResumeTexts.size();
    return true;
  }

  // NVPTX: a .func cannot be entered in the middle, so routines are shared
  // only when identical.
  std::vector<std::string> PreemptTexts;
  StringMap<unsigned> PreemptIds;
  for (Point &P : Points) {
    auto [It, New] = PreemptIds.try_emplace(P.PreemptText, PreemptTexts.size());
    if (New)
      PreemptTexts.push_back(P.PreemptText);
    P.Routine = It->second;
  }
  OS << "// ---- kernel " << Kernel << ": " << PreemptTexts.size() << " preemption routines, " << ResumeTexts.size()
     << " resumption routines for " << Points.size() << " points\n";
  auto named = [](const std::string &Text, const std::string &Name) {
    std::string Out = Text;
    size_t At = Out.find("%NAME%");
    Out.replace(At, 6, Name);
    return Out;
  };
  for (size_t R = 0; R < PreemptTexts.size(); ++R)
    OS << ".visible .func " << named(PreemptTexts[R], Sym + "_p" + std::to_string(R)) << "\n";
  for (size_t R = 0; R < ResumeTexts.size(); ++R)
    OS << ".visible .func " << named(ResumeTexts[R], Sym + "_r" + std::to_string(R)) << "\n";
  OS << "// block, instruction, preemption routine, resumption routine, re-entry instruction\n"
     << ".visible .global .align 4 .u32 " << Sym << "_table[" << 5 * std::max<size_t>(1, Points.size()) << "] = {";
  if (Points.empty())
    OS << "0, 0, 0, 0, 0";
  for (size_t I = 0; I < Points.size(); ++I)
    OS << (I ? ", " : "") << Points[I].Block->MBB->getNumber() << ", " << Points[I].Index << ", "
       << Points[I].Routine << ", " << Points[I].ResumeId << ", " << Points[I].Plan->resume_at;
  OS << "};\n\n";
  Out.PreemptRoutines = PreemptTexts.size();
  Out.ResumeRoutines = ResumeTexts.size();
  return true;
}

} // namespace preempt
