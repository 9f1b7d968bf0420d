// InstructionPrinter.cpp: MachineInstr -> assembly text through the target's MCInstPrinter (and assembler, AMDGPU).
// CTXBack §IV-A: routines copy program instructions (re-execution, CS-Defer) so only printable ones are COPYABLE.
#include "InstructionPrinter.h"

#include "llvm/CodeGen/MachineInstr.h"
#include "llvm/CodeGen/MachineRegisterInfo.h"
#include "llvm/CodeGen/TargetInstrInfo.h"
#include "llvm/CodeGen/TargetRegisterInfo.h"
#include "llvm/CodeGen/TargetSubtargetInfo.h"
#include "llvm/MC/MCAsmInfo.h"
#include "llvm/MC/MCContext.h"
#include "llvm/MC/MCInst.h"
#include "llvm/MC/MCInstPrinter.h"
#include "llvm/MC/MCInstrInfo.h"
#include "llvm/MC/MCObjectFileInfo.h"
#include "llvm/MC/MCParser/MCAsmParser.h"
#include "llvm/MC/MCParser/MCTargetAsmParser.h"
#include "llvm/MC/MCRegisterInfo.h"
#include "llvm/MC/MCStreamer.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/MCTargetOptions.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Regex.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"

using namespace llvm;

namespace preempt {

static std::string attributeOr(const Function &F, StringRef Kind, StringRef Default) {
  Attribute A = F.getFnAttribute(Kind);
  return A.isValid() ? A.getValueAsString().str() : Default.str();
}

InstructionPrinter::InstructionPrinter(const MachineFunction &MF, ModelTarget Target) : MF(MF), Target(Target) {
  const TargetMachine &TM = MF.getTarget();
  TheTarget = &TM.getTarget();
  TripleName = TM.getTargetTriple().str();
  Cpu = attributeOr(MF.getFunction(), "target-cpu", TM.getTargetCPU());
  Features = attributeOr(MF.getFunction(), "target-features", TM.getTargetFeatureString());
  STI.reset(TheTarget->createMCSubtargetInfo(TM.getTargetTriple(), Cpu, Features));
  Printer.reset(TheTarget->createMCInstPrinter(TM.getTargetTriple(), 0, *TM.getMCAsmInfo(), *TM.getMCInstrInfo(),
                                               *TM.getMCRegisterInfo()));
  const MCInstrInfo &MII = *TM.getMCInstrInfo();
  for (unsigned Opcode = 0, E = MII.getNumOpcodes(); Opcode != E; ++Opcode)
    Opcodes[MII.getName(Opcode)] = Opcode;
}

InstructionPrinter::~InstructionPrinter() = default;

unsigned InstructionPrinter::opcodeNamed(StringRef Name) const {
  auto It = Opcodes.find(Name);
  return It == Opcodes.end() ? ~0u : It->second;
}

// Printers indent and separate operands with tabs; routines are written one
// instruction a line with our own indentation.
static std::string tidy(StringRef Text) {
  std::string Out;
  bool Space = false;
  for (char C : Text.trim()) {
    if (C == '\t' || C == ' ') {
      Space = true;
      continue;
    }
    if (Space && !Out.empty())
      Out += ' ';
    Space = false;
    Out += C;
  }
  return Out;
}

std::string InstructionPrinter::printMC(const MCInst &Inst) const {
  if (!Printer || !STI)
    return "";
  std::string Text;
  raw_string_ostream OS(Text);
  Printer->printInst(&Inst, 0, "", *STI, OS);
  return tidy(Text);
}

std::string InstructionPrinter::physName(MCRegister Reg) const {
  if (Target == ModelTarget::NVPTX) {
    std::string Text;
    raw_string_ostream OS(Text);
    Printer->printRegName(OS, Reg);
    return Text;
  }
  // AMDGPU's printer has no printRegName: its spelling comes from the
  // register's TableGen name (VGPR7 -> v7, EXEC_LO -> exec_lo).
  StringRef Name = MF.getSubtarget().getRegisterInfo()->getName(Reg);
  for (StringRef Prefix : {"VGPR", "SGPR", "AGPR", "TTMP"})
    if (Name.starts_with(Prefix) && Name.size() > Prefix.size() && isDigit(Name[Prefix.size()]) &&
        Name.drop_front(Prefix.size()).find_first_not_of("0123456789") == StringRef::npos) {
      std::string Short = Prefix == "VGPR" ? "v" : Prefix == "SGPR" ? "s" : Prefix == "AGPR" ? "a" : "ttmp";
      return Short + Name.drop_front(Prefix.size()).str();
    }
  if (Name.starts_with("FLAT_SCR_"))
    return "flat_scratch_" + Name.drop_front(9).lower();
  return Name.lower();
}

std::string InstructionPrinter::virtName(unsigned ClassId, unsigned Index) const {
  std::string Text;
  raw_string_ostream OS(Text);
  Printer->printRegName(OS, MCRegister((ClassId << 28) | Index));
  return Text;
}

bool InstructionPrinter::assembles(const std::string &Line) const {
  if (Target != ModelTarget::AMDGPU)
    return true;
  auto It = Assembled.find(Line);
  if (It != Assembled.end())
    return It->second;
  const TargetMachine &TM = MF.getTarget();
  // Without the target's parser (a tool that did not initialise it) the
  // printer is trusted; llc and clang both initialise every asm parser.
  if (!TheTarget->hasMCAsmParser() || !STI)
    return Assembled[Line] = true;
  SourceMgr SM;
  SM.AddNewSourceBuffer(MemoryBuffer::getMemBufferCopy(Line + "\n"), SMLoc());
  SM.setDiagHandler([](const SMDiagnostic &, void *) {}, nullptr);
  MCTargetOptions Options;
  MCContext Ctx(TM.getTargetTriple(), TM.getMCAsmInfo(), TM.getMCRegisterInfo(), STI.get(), &SM, &Options);
  std::unique_ptr<MCObjectFileInfo> MOFI(TheTarget->createMCObjectFileInfo(Ctx, /*PIC=*/false));
  Ctx.setObjectFileInfo(MOFI.get());
  std::unique_ptr<MCStreamer> Streamer(createNullStreamer(Ctx));
  // AMDGPU's parser talks to its target streamer from its constructor.
  TheTarget->createNullTargetStreamer(*Streamer);
  std::unique_ptr<MCAsmParser> Parser(createMCAsmParser(SM, Ctx, *Streamer, *TM.getMCAsmInfo()));
  std::unique_ptr<MCTargetAsmParser> TAP(
      TheTarget->createMCAsmParser(*STI, *Parser, *TM.getMCInstrInfo(), Options));
  if (!TAP)
    return Assembled[Line] = true;
  Parser->setTargetParser(*TAP);
  bool Ok = !Parser->Run(/*NoInitialTextSection=*/false) && !Ctx.hadError();
  return Assembled[Line] = Ok;
}

std::optional<std::string> InstructionPrinter::print(const MachineInstr &MI) const {
  auto It = Cache.find(&MI);
  if (It != Cache.end())
    return It->second;
  std::optional<std::string> Text = printUncached(MI);
  Cache[&MI] = Text;
  return Text;
}

std::optional<std::string> InstructionPrinter::printUncached(const MachineInstr &MI) const {
  if (MI.isBundle() || MI.isInlineAsm() || MI.isMetaInstruction() || MI.isCall() || MI.isTerminator())
    return std::nullopt;
  return Target == ModelTarget::AMDGPU ? printAmdgpu(MI) : printNvptx(MI);
}

static bool isVgpr(const TargetRegisterInfo &TRI, MCRegister Reg) {
  return StringRef(TRI.getName(Reg)).starts_with("VGPR");
}

std::optional<std::string> InstructionPrinter::printAmdgpu(const MachineInstr &MI) const {
  const TargetRegisterInfo &TRI = *MF.getSubtarget().getRegisterInfo();
  const MCInstrInfo &MII = *MF.getTarget().getMCInstrInfo();
  if (MI.isCopy()) {
    // COPY survives until expandPostRAPseudos, just after prologepilog: it
    // becomes one move of its destination's kind per 32-bit part, ordered so
    // that overlapping tuples (s[2:3] -> s[3:4]) read each part before it is
    // overwritten.
    const MachineOperand &Dst = MI.getOperand(0), &Src = MI.getOperand(1);
    if (!Dst.isReg() || !Src.isReg() || !Dst.getReg().isPhysical() || !Src.getReg().isPhysical())
      return std::nullopt;
    auto parts = [&](MCRegister Reg) {
      SmallVector<MCRegister, 4> Out;
      if (TRI.getName(Reg) == StringRef("SCC"))
        return Out;
      bool Has32 = false;
      for (const TargetRegisterClass *RC : TRI.regclasses())
        if (RC->contains(Reg) && TRI.getRegSizeInBits(*RC) == 32)
          Has32 = true;
      if (Has32) {
        Out.push_back(Reg);
        return Out;
      }
      for (MCPhysReg Sub : TRI.subregs(Reg))
        for (const TargetRegisterClass *RC : TRI.regclasses())
          if (RC->contains(Sub) && TRI.getRegSizeInBits(*RC) == 32) {
            Out.push_back(Sub);
            break;
          }
      llvm::sort(Out, [](MCRegister A, MCRegister B) { return A.id() < B.id(); });
      Out.erase(std::unique(Out.begin(), Out.end()), Out.end());
      return Out;
    };
    SmallVector<MCRegister, 4> D = parts(Dst.getReg()), S = parts(Src.getReg());
    if (D.empty() || D.size() != S.size())
      return std::nullopt;
    bool Backwards = D.front().id() > S.front().id();
    std::string Text;
    for (size_t K = 0; K < D.size(); ++K) {
      size_t I = Backwards ? D.size() - 1 - K : K;
      std::string Line;
      if (isVgpr(TRI, D[I]))
        Line = "v_mov_b32_e32 " + physName(D[I]) + ", " + physName(S[I]);
      else if (!isVgpr(TRI, S[I]))
        Line = "s_mov_b32 " + physName(D[I]) + ", " + physName(S[I]);
      else
        return std::nullopt;
      if (!assembles(Line))
        return std::nullopt;
      Text += (Text.empty() ? "" : "\n") + Line;
    }
    return Text;
  }
  MCInst Inst;
  for (const MachineOperand &MO : MI.explicit_operands()) {
    if (MO.isReg()) {
      if (!MO.getReg().isPhysical())
        return std::nullopt;
      Inst.addOperand(MCOperand::createReg(MO.getReg()));
    } else if (MO.isImm()) {
      Inst.addOperand(MCOperand::createImm(MO.getImm()));
    } else {
      return std::nullopt; // symbols, frame indices, blocks: not self-contained
    }
  }
  StringRef Name = MF.getSubtarget().getInstrInfo()->getName(MI.getOpcode());
  SmallVector<std::string, 6> Candidates;
  Candidates.push_back(Name.str());
  Candidates.push_back((Name + "_gfx9").str());
  Candidates.push_back((Name + "_vi").str());
  if (Name.ends_with("_e64")) {
    StringRef Base = Name.drop_back(4);
    Candidates.push_back((Base + "_gfx9").str());
    Candidates.push_back((Base + "_vi").str());
  }
  for (const std::string &Candidate : Candidates) {
    unsigned Opcode = opcodeNamed(Candidate);
    if (Opcode == ~0u || MII.get(Opcode).getNumOperands() != Inst.getNumOperands())
      continue;
    Inst.setOpcode(Opcode);
    std::string Line = printMC(Inst);
    if (Line.empty())
      continue;
    if (!assembles(Line))
      return std::nullopt;
    return Line;
  }
  return std::nullopt;
}

// Register ALU instructions only: a routine is a separate .func whose
// registers are its own; loads, parameters and symbols have no meaning there.
static bool nvptxWhitelisted(StringRef Name) {
  static const Regex Allowed("^(ADD(16|32|64)r[ri]|SUB(16|32|64)(rr|ri|ir)|MULT(16|32|64)r[ri]|"
                             "MUL_WIDE[su](16|32)_r[ri]|MUL_HI_[SU](16|32|64)r[ri]|MAD_LO_S(16|32|64)r[ri][ri]|"
                             "(XOR|AND|OR)_b(16|32|64)r[ri]|NOT_b(16|32|64)|NEG_S(16|32|64)|"
                             "(SHL|SRL|SRA)(16|32|64)_r[ri]|MOV_B(16|32|64)_[ri]|SETP_[iu](16|32|64)r[ri]|"
                             "SELP_b(16|32|64)r[ri])$");
  return Allowed.match(Name);
}

static unsigned nvptxClassId(StringRef ClassName) {
  std::string Lower = ClassName.lower();
  if (Lower == "b1")
    return 1;
  if (Lower == "b16")
    return 2;
  if (Lower == "b32")
    return 3;
  if (Lower == "b64")
    return 4;
  if (Lower == "b128")
    return 7;
  return 0;
}

std::optional<std::string> InstructionPrinter::printNvptx(const MachineInstr &MI) const {
  StringRef Name = MF.getSubtarget().getInstrInfo()->getName(MI.getOpcode());
  if (!nvptxWhitelisted(Name))
    return std::nullopt;
  const MachineRegisterInfo &MRI = MF.getRegInfo();
  const TargetRegisterInfo &TRI = *MF.getSubtarget().getRegisterInfo();
  MCInst Inst;
  Inst.setOpcode(MI.getOpcode());
  for (const MachineOperand &MO : MI.explicit_operands()) {
    if (MO.isReg()) {
      if (!MO.getReg().isVirtual())
        return std::nullopt;
      unsigned ClassId = nvptxClassId(TRI.getRegClassName(MRI.getRegClass(MO.getReg())));
      if (!ClassId)
        return std::nullopt;
      Inst.addOperand(MCOperand::createReg(MCRegister((ClassId << 28) | MO.getReg().virtRegIndex())));
    } else if (MO.isImm()) {
      Inst.addOperand(MCOperand::createImm(MO.getImm()));
    } else {
      return std::nullopt;
    }
  }
  std::string Line = printMC(Inst);
  if (Line.empty())
    return std::nullopt;
  return Line;
}

} // namespace preempt
