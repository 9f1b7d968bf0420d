// ContextFlashback.cpp: the CTXBack machine pass: model, OSRB backups, per-instruction plans, statistics, routines.
// CTXBack §III-D (on-chip scalar backup), §III-E (finding flashback points), §IV-A (compile time), §IV-C (with CS-Defer).
#include "ContextFlashback.h"
#include "GpuTarget.h"
#include "InstructionPrinter.h"
#include "MachineBlockModel.h"
#include "RoutineEmitter.h"

#include "preempt/ctxback.h"

#include "llvm/ADT/SmallBitVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/CodeGen/MachineFunctionPass.h"
#include "llvm/CodeGen/MachineInstrBuilder.h"
#include "llvm/CodeGen/MachineOptimizationRemarkEmitter.h"
#include "llvm/CodeGen/MachineRegisterInfo.h"
#include "llvm/CodeGen/Passes.h"
#include "llvm/CodeGen/TargetInstrInfo.h"
#include "llvm/CodeGen/TargetPassConfig.h"
#include "llvm/CodeGen/TargetRegisterInfo.h"
#include "llvm/CodeGen/TargetSubtargetInfo.h"
#include "llvm/IR/GlobalVariable.h"
#include "llvm/IR/Module.h"
#include "llvm/Pass.h"
#include "llvm/PassRegistry.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/RegisterTargetPassConfigCallback.h"
#include "llvm/Target/TargetMachine.h"

#include <cstdlib>
#include <set>

using namespace llvm;

namespace preempt {

// clang-22 loads -fpass-plugin libraries before it parses -mllvm (both in
// cc1: CompilerInstance::LoadRequestedPlugins runs first), so these options
// work as `-mllvm -preempt-ctxback` beside -fpass-plugin; PREEMPT_CTXBACK=1
// enables the pass where no option can be passed.
static cl::opt<bool> Enable("preempt-ctxback", cl::desc("CTXBack: plan context switches of every kernel instruction"),
                            cl::init(false));
static cl::opt<bool> Osrb("preempt-ctxback-osrb", cl::desc("CTXBack: insert on-chip scalar register backups"),
                          cl::init(false));
static cl::opt<unsigned> Window("preempt-ctxback-window",
                                cl::desc("CTXBack: how many instructions back a flashback point may lie"),
                                cl::init(64));
static cl::opt<unsigned> CheckTrials("preempt-ctxback-check",
                                     cl::desc("CTXBack: run the concrete checker N trials on every plan"),
                                     cl::init(0));
static cl::opt<std::string> Output("preempt-ctxback-output",
                                   cl::desc("CTXBack: prefix of the .ctxback.tsv and routine files"), cl::init(""));
static cl::opt<std::string> Dump("preempt-ctxback-dump",
                                 cl::desc("CTXBack: print one plan per instruction to stderr "
                                          "(none|live|flashback|cs-defer|combined)"),
                                 cl::init("none"));

static bool enabled() {
  if (Enable)
    return true;
  const char *Env = std::getenv("PREEMPT_CTXBACK");
  return Env && StringRef(Env) == "1";
}

namespace {

struct KernelRow {
  std::string Name, Target;
  preempt_ctx_totals Totals{};
  uint64_t Baseline = 0, Lds = 0;
  unsigned PreemptRoutines = 0, ResumeRoutines = 0, Backups = 0;
};

class ContextFlashback : public MachineFunctionPass {
public:
  static char ID;
  ContextFlashback() : MachineFunctionPass(ID) {}
  StringRef getPassName() const override { return "CTXBack context flashback (preempt)"; }
  void getAnalysisUsage(AnalysisUsage &AU) const override {
    AU.setPreservesCFG();
    MachineFunctionPass::getAnalysisUsage(AU);
  }
  bool runOnMachineFunction(MachineFunction &MF) override;
  bool doFinalization(Module &M) override;

private:
  void missed(MachineFunction &MF, const Twine &Why);
  unsigned insertBackups(MachineFunction &MF, FunctionModel &Model, const InstructionPrinter &Printer);
  void reportCheckFailure(MachineFunction &MF, const FunctionModel &Model, const BlockModel &Block);
  void dumpBlock(StringRef Kernel, const FunctionModel &Model, const BlockModel &Block, preempt_ctx_technique Which);

  std::vector<KernelRow> Rows;
  bool SawKernel = false; // the files are written, header only, even when every kernel was skipped
  std::string Routines;
  std::string RoutineHeader;
  ModelTarget Target = ModelTarget::AMDGPU;
};

} // namespace

char ContextFlashback::ID = 0;

void ContextFlashback::missed(MachineFunction &MF, const Twine &Why) {
  MachineOptimizationRemarkEmitter ORE(MF, nullptr);
  MachineOptimizationRemarkMissed Remark("preempt", "CtxBackSkipped", DebugLoc(), &MF.front());
  Remark << "ctxback: kernel " << MF.getName() << ": " << Why.str();
  ORE.emit(Remark);
}

// MIR files without an IR section give every function a stub body of one
// `unreachable`: treat those as kernels so hand-written MIR can be analysed.
static bool isMirStub(const Function &F) {
  return F.size() == 1 && F.front().size() == 1 && isa<UnreachableInst>(F.front().front()) && F.arg_empty();
}

static std::optional<ModelTarget> modelTargetOf(const MachineFunction &MF) {
  const Triple &TT = MF.getTarget().getTargetTriple();
  if (TT.isAMDGCN())
    return ModelTarget::AMDGPU;
  if (TT.getArch() == Triple::nvptx64)
    return ModelTarget::NVPTX;
  return std::nullopt;
}

static std::string techniqueName(preempt_ctx_technique T) {
  switch (T) {
  case PREEMPT_CTX_LIVE:
    return "live";
  case PREEMPT_CTX_FLASHBACK:
    return "flashback";
  case PREEMPT_CTX_CS_DEFER:
    return "cs-defer";
  }
  return "combined";
}

static std::string stepsText(const RegisterTable &Table, const preempt_ctx_step *Steps, size_t Count) {
  if (!Count)
    return "-";
  std::string Out;
  raw_string_ostream OS(Out);
  for (size_t I = 0; I < Count; ++I) {
    const preempt_ctx_step &S = Steps[I];
    if (I)
      OS << "; ";
    auto Name = [&](uint16_t Id) { return Id < Table.size() ? Table.get(Id).Name : "?" + std::to_string(Id); };
    switch (S.kind) {
    case PREEMPT_CTX_SAVE:
      OS << "save " << Name(S.reg) << " -> [" << S.slot << "]";
      break;
    case PREEMPT_CTX_LOAD:
      OS << "load " << Name(S.reg) << " <- [" << S.slot << "]";
      break;
    case PREEMPT_CTX_REVERT:
      OS << "revert " << S.instruction;
      break;
    case PREEMPT_CTX_REEXECUTE:
      OS << "reexecute " << S.instruction;
      break;
    case PREEMPT_CTX_EXECUTE:
      OS << "execute " << S.instruction;
      break;
    default:
      OS << "step" << unsigned(S.kind);
    }
  }
  return Out;
}

// Plans the point with one technique; `Combined` is CTXBack+CS-Defer.
static int planWith(const preempt_ctx_block &Block, size_t Index, int Which, preempt_ctx_plan &Plan) {
  const preempt_ctx_cost_model *Costs = &preempt_ctx_default_costs;
  switch (Which) {
  case PREEMPT_CTX_LIVE:
    return preempt_ctx_plan_live(&Block, Index, Costs, &Plan);
  case PREEMPT_CTX_FLASHBACK:
    return preempt_ctx_plan_flashback(&Block, Index, Window, Costs, &Plan);
  case PREEMPT_CTX_CS_DEFER:
    return preempt_ctx_plan_cs_defer(&Block, Index, Costs, &Plan);
  default:
    return preempt_ctx_plan_combined(&Block, Index, Window, Costs, &Plan);
  }
}

static constexpr int Combined = 3;

void ContextFlashback::dumpBlock(StringRef Kernel, const FunctionModel &Model, const BlockModel &Block,
                                 preempt_ctx_technique Which) {
  const preempt_ctx_block &B = Block.block();
  for (size_t I = 0; I < B.count; ++I) {
    preempt_ctx_plan Plan{};
    if (planWith(B, I, Which, Plan) != 0) {
      errs() << "ctxback: " << Kernel << " bb." << Block.MBB->getNumber() << " point " << I << " "
             << techniqueName(Which) << ": no plan\n";
      continue;
    }
    errs() << "ctxback: " << Kernel << " bb." << Block.MBB->getNumber() << " point " << I << " "
           << techniqueName(Which) << ": context " << Plan.context_bytes << " bytes (live "
           << preempt_ctx_live_bytes(&B, I) << "), flashback " << Plan.flashback << ", resume at " << Plan.resume_at
           << "\n";
    errs() << "  preempt: " << stepsText(Model.Table, Plan.preempt, Plan.preempt_count) << "\n";
    errs() << "  resume: " << stepsText(Model.Table, Plan.resume, Plan.resume_count) << "\n";
    preempt_ctx_plan_free(&Plan);
  }
}

void ContextFlashback::reportCheckFailure(MachineFunction &MF, const FunctionModel &Model, const BlockModel &Block) {
  const preempt_ctx_block &B = Block.block();
  unsigned Trials = std::max(1u, unsigned(CheckTrials));
  for (size_t I = 0; I < B.count; ++I)
    for (int Which : {int(PREEMPT_CTX_LIVE), int(PREEMPT_CTX_FLASHBACK), int(PREEMPT_CTX_CS_DEFER), Combined}) {
      preempt_ctx_plan Plan{};
      if (planWith(B, I, Which, Plan) != 0)
        continue;
      uint16_t Bad = 0;
      bool Failed = false;
      for (uint64_t Seed = 1; Seed <= 4 && !Failed; ++Seed)
        Failed = preempt_ctx_check_plan(&B, &Plan, Seed * 0x9e3779b9u + I, Trials, &Bad) != 0;
      preempt_ctx_plan_free(&Plan);
      if (!Failed)
        continue;
      std::string Reg = Bad < Model.Table.size() ? Model.Table.get(Bad).Name : "?";
      std::string Text;
      raw_string_ostream OS(Text);
      if (I < Block.Instrs.size())
        Block.Instrs[I]->print(OS, /*IsStandalone=*/true, /*SkipOpers=*/false, /*SkipDebugLoc=*/true);
      MF.getFunction().getContext().emitError(
          "preempt-ctxback: the concrete check failed in kernel " + MF.getName() + ", bb." +
          Twine(Block.MBB->getNumber()) + ", instruction " + Twine(I) + " (" + StringRef(Text).trim() + ")" +
          ", technique " + (Which == Combined ? std::string("combined") : techniqueName(preempt_ctx_technique(Which))) +
          ", register " + Reg);
      return;
    }
  MF.getFunction().getContext().emitError("preempt-ctxback: the concrete check failed in kernel " + MF.getName() +
                                          ", bb." + Twine(Block.MBB->getNumber()));
}

// The index of a numbered register of one file (Prefix "SGPR" or "VGPR":
// SGPR7 -> 7), or -1.
static int numberedIndex(StringRef Name, StringRef Prefix) {
  unsigned Index;
  if (!Name.consume_front(Prefix) || Name.getAsInteger(10, Index))
    return -1;
  return int(Index);
}

// Register Prefix<N> of this target, looked up by name (no target headers).
static MCRegister numberedReg(const TargetRegisterInfo &TRI, StringRef Prefix, unsigned N) {
  static thread_local const TargetRegisterInfo *Cached = nullptr;
  static thread_local StringMap<MCRegister> Map;
  if (Cached != &TRI) {
    Map.clear();
    for (unsigned R = 1, E = TRI.getNumRegs(); R != E; ++R) {
      StringRef Name = TRI.getName(R);
      if (numberedIndex(Name, "SGPR") >= 0 || numberedIndex(Name, "VGPR") >= 0)
        Map[Name] = MCRegister(R);
    }
    Cached = &TRI;
  }
  auto It = Map.find((Prefix + Twine(N)).str());
  return It == Map.end() ? MCRegister() : It->second;
}

// Which of Prefix<0..Count-1> the function touches (operands, block and
// function live-ins), and the highest one touched (-1 if none).
static SmallBitVector usedNumbered(MachineFunction &MF, StringRef Prefix, unsigned Count, int &Highest) {
  const TargetRegisterInfo &TRI = *MF.getSubtarget().getRegisterInfo();
  SmallBitVector Used(Count);
  Highest = -1;
  auto MarkOne = [&](MCPhysReg Unit) {
    int Index = numberedIndex(TRI.getName(Unit), Prefix);
    if (Index >= 0 && unsigned(Index) < Count) {
      Used.set(Index);
      Highest = std::max(Highest, Index);
    }
  };
  // Tuples name their 32-bit parts as subregisters; a 16-bit half (true16)
  // names its 32-bit register as a superregister.
  auto Mark = [&](MCRegister Reg) {
    for (MCPhysReg Unit : TRI.subregs_inclusive(Reg))
      MarkOne(Unit);
    for (MCPhysReg Super : TRI.superregs(Reg))
      MarkOne(Super);
  };
  for (MachineBasicBlock &MBB : MF) {
    for (const auto &LI : MBB.liveins())
      Mark(LI.PhysReg);
    for (MachineInstr &MI : MBB.instrs())
      for (const MachineOperand &MO : MI.operands())
        if (MO.isReg() && MO.getReg().isPhysical())
          Mark(MO.getReg());
  }
  for (auto LI : MF.getRegInfo().liveins())
    Mark(LI.first);
  return Used;
}

// Prefix<0..Limit> not used and not reserved, lowest first.
static std::vector<MCRegister> unusedUpTo(MachineFunction &MF, StringRef Prefix, const SmallBitVector &Used,
                                          int Limit) {
  const TargetRegisterInfo &TRI = *MF.getSubtarget().getRegisterInfo();
  std::vector<MCRegister> Free;
  for (int N = 0; N <= Limit && N < int(Used.size()); ++N) {
    if (Used.test(N))
      continue;
    MCRegister Reg = numberedReg(TRI, Prefix, N);
    if (!Reg || MF.getRegInfo().isReserved(Reg))
      continue;
    Free.push_back(Reg);
  }
  return Free;
}

// OSRB's free scalar registers (§III-D "alignment leftovers"): SGPRs nothing
// in the function touches, below the highest used one, or above it only as
// far as the kernel descriptor's SGPR blocks (granules of 8 on gfx9, counted
// after the extra SGPRs gfx9 adds at the top: VCC, FLAT_SCRATCH, XNACK_MASK,
// up to 6) cannot change, whichever extras this kernel has. The reported
// NumSgprs may grow; the allocation (and so occupancy) never does. (A limit
// worked out against the 16-register granule let one k-means kernel go from
// 4 to 5 SGPR blocks.)
static std::vector<MCRegister> freeSgprs(MachineFunction &MF) {
  int Highest;
  SmallBitVector Used = usedNumbered(MF, "SGPR", 128, Highest);
  int Limit = 95;
  for (int Extra = 0; Extra <= 6; ++Extra) {
    int Blocked = (Highest + 1 + Extra + 7) / 8 * 8; // SGPRs the descriptor allocates
    Limit = std::min(Limit, Blocked - Extra - 1);
  }
  return unusedUpTo(MF, "SGPR", Used, Limit);
}

// OSRB's free vector registers, whose lanes hold scalars once the SGPRs are
// used up (§III-D: "the scalar registers are used first, and then the vector
// registers"): VGPRs nothing in the function touches, below the highest used
// one, or above it only inside its granule of 4 (gfx9's VGPR blocks; every
// other granule is a multiple of 4, so the descriptor's VGPR blocks, and
// gfx90a's accum_offset, cannot change either). .amdhsa_next_free_vgpr may
// grow; the allocation never does. A kernel that uses no VGPR gets none. Only
// the lowest MaxLaneVgprs of them are offered: "a single unused vector
// register is enough for most cases", and every lane is a register of the
// model.
static constexpr size_t MaxLaneVgprs = 1;
static std::vector<MCRegister> freeVgprs(MachineFunction &MF) {
  int Highest;
  SmallBitVector Used = usedNumbered(MF, "VGPR", 256, Highest);
  std::vector<MCRegister> Free = unusedUpTo(MF, "VGPR", Used, Highest < 0 ? -1 : (Highest + 1 + 3) / 4 * 4 - 1);
  if (Free.size() > MaxLaneVgprs)
    Free.resize(MaxLaneVgprs);
  return Free;
}

unsigned ContextFlashback::insertBackups(MachineFunction &MF, FunctionModel &Model,
                                         const InstructionPrinter &Printer) {
  const TargetInstrInfo &TII = *MF.getSubtarget().getInstrInfo();
  const TargetRegisterInfo &TRI = *MF.getSubtarget().getRegisterInfo();
  unsigned MovOpc = Printer.opcodeNamed("S_MOV_B32"), SelOpc = Printer.opcodeNamed("S_CSELECT_B32");
  unsigned WritelaneOpc = Printer.opcodeNamed("V_WRITELANE_B32");
  if (MovOpc == ~0u || SelOpc == ~0u)
    return 0;
  // SGPRs first, then the lanes of free VGPRs (§III-D).
  std::vector<uint16_t> FreeIds;
  for (MCRegister Reg : Model.ExtraPhys)
    if (auto Id = Model.Table.findPhys(Reg))
      FreeIds.push_back(*Id);
  if (WritelaneOpc != ~0u)
    for (MCRegister Vgpr : Model.ExtraLaneVgprs)
      for (unsigned Lane = 0; Lane < FunctionModel::LanesPerVgpr; ++Lane)
        if (auto Id = Model.Table.findLane(Vgpr, Lane))
          FreeIds.push_back(*Id);
  if (FreeIds.empty())
    return 0;
  // Choose every block's backups before changing anything.
  struct Insertion {
    MachineInstr *Before;
    MCRegister Source, Backup;
    bool SourceLive;
    int Lane; // >= 0: lane `Lane` of the VGPR Backup
  };
  std::vector<Insertion> Insertions;
  for (const std::unique_ptr<BlockModel> &Block : Model.Blocks) {
    const preempt_ctx_block &B = Block->block();
    if (!B.count)
      continue;
    std::vector<preempt_ctx_backup> Chosen(FreeIds.size());
    size_t Count = 0;
    if (preempt_ctx_choose_backups(&B, Window, &preempt_ctx_default_costs, FreeIds.data(), FreeIds.size(),
                                   Chosen.data(), Chosen.size(), &Count) != 0)
      continue;
    for (size_t I = 0; I < Count; ++I) {
      const preempt_ctx_backup &C = Chosen[I];
      if (C.before >= Block->Instrs.size())
        continue;
      const ModelRegister &Source = Model.Table.get(C.source), &Backup = Model.Table.get(C.backup);
      StringRef SourceName = TRI.getName(Source.Phys);
      // v_writelane_b32 takes an SGPR, M0, VCC or EXEC half; SCC only into an SGPR (s_cselect_b32).
      bool Movable = SourceName.starts_with("SGPR") || (SourceName == "SCC" && Backup.Lane < 0) ||
                     SourceName == "M0" || SourceName == "VCC_LO" || SourceName == "VCC_HI" ||
                     SourceName == "EXEC_LO" || SourceName == "EXEC_HI";
      if (!Movable || !Backup.Phys)
        continue;
      const uint64_t *Live = C.before ? B.live_after[C.before - 1] : B.live_in;
      Insertions.push_back(
          {Block->Instrs[C.before], Source.Phys, Backup.Phys, testBit(Live, C.source), Backup.Lane});
    }
  }
  // A block's first write into a backup VGPR finds it undefined (nothing
  // else touches it, and lanes written in other blocks are no plan's
  // business here); later ones keep the lanes written before.
  std::set<std::pair<const MachineBasicBlock *, unsigned>> LaneVgprWritten;
  for (const Insertion &I : Insertions) {
    MachineBasicBlock &MBB = *I.Before->getParent();
    // Our read extends the source's life up to the copy: earlier kill flags
    // would now lie.
    for (MachineInstr &MI : MBB)
      MI.clearRegisterKills(I.Source, &TRI);
    MachineInstr *Copy;
    if (I.Lane >= 0) {
      // $vgprN = V_WRITELANE_B32 $sgprS, k, $vgprN(tied-def 0)
      bool Earlier = !LaneVgprWritten.insert({&MBB, I.Backup.id()}).second;
      Copy = BuildMI(MBB, I.Before->getIterator(), I.Before->getDebugLoc(), TII.get(WritelaneOpc), I.Backup)
                 .addReg(I.Source, I.SourceLive ? 0 : RegState::Undef)
                 .addImm(I.Lane)
                 .addReg(I.Backup, Earlier ? 0 : RegState::Undef); // tied to the def by the descriptor
    } else if (TRI.getName(I.Source) == StringRef("SCC")) {
      Copy = BuildMI(MBB, I.Before->getIterator(), I.Before->getDebugLoc(), TII.get(SelOpc), I.Backup)
                 .addImm(1)
                 .addImm(0);
      if (!I.SourceLive)
        for (MachineOperand &MO : Copy->operands())
          if (MO.isReg() && MO.isUse() && MO.getReg() == I.Source)
            MO.setIsUndef();
    } else {
      Copy = BuildMI(MBB, I.Before->getIterator(), I.Before->getDebugLoc(), TII.get(MovOpc), I.Backup)
                 .addReg(I.Source, I.SourceLive ? 0 : RegState::Undef);
    }
    Model.Backups.insert(Copy);
  }
  // The copies' operands make MachineRegisterInfo count the backup registers
  // as used, so the resource usage (NumSgprs) includes them.
  return Insertions.size();
}

static uint64_t baselineBytes(const FunctionModel &Model) {
  if (Model.target() == ModelTarget::NVPTX) {
    uint64_t Bytes = 0;
    for (const ModelRegister &R : Model.Table.registers())
      Bytes += R.Info.bytes;
    return Bytes;
  }
  // Table I of the paper: allocated registers, VGPRs in fours and SGPRs in
  // sixteens. Approximation: the highest VGPR/SGPR any operand names, plus
  // VCC's two SGPRs when used (FLAT_SCRATCH and XNACK_MASK are not counted).
  int HighestV = -1, HighestS = -1;
  bool Vcc = false;
  for (const ModelRegister &R : Model.Table.registers()) {
    StringRef Name = R.Name;
    unsigned Index;
    if (Name.starts_with("vcc"))
      Vcc = true;
    else if (Name.consume_front("v") && !Name.getAsInteger(10, Index))
      HighestV = std::max(HighestV, int(Index));
    else if (Name.consume_front("s") && !Name.getAsInteger(10, Index))
      HighestS = std::max(HighestS, int(Index));
  }
  uint64_t Vgprs = ((HighestV + 1 + 3) / 4) * 4;
  uint64_t Sgprs = ((HighestS + 1 + (Vcc ? 2 : 0) + 15) / 16) * 16;
  return Vgprs * 256 + Sgprs * 4;
}

// Static LDS per wavefront: the kernel's "amdgpu-lds-size" (set by the LDS
// lowering) or its addrspace(3) globals, shared by the waves of the largest
// work-group it accepts.
static uint64_t ldsBytes(const MachineFunction &MF, ModelTarget Target) {
  if (Target != ModelTarget::AMDGPU)
    return 0;
  const Function &F = MF.getFunction();
  uint64_t Bytes = 0;
  Attribute Size = F.getFnAttribute("amdgpu-lds-size");
  if (Size.isValid()) {
    Size.getValueAsString().split(',').first.getAsInteger(10, Bytes);
  } else {
    const DataLayout &DL = F.getParent()->getDataLayout();
    for (const GlobalVariable &G : F.getParent()->globals()) {
      if (G.getAddressSpace() != 3 || G.isDeclaration())
        continue;
      bool UsedHere = false;
      SmallVector<const User *, 8> Work(G.users().begin(), G.users().end());
      while (!Work.empty() && !UsedHere) {
        const User *U = Work.pop_back_val();
        if (const auto *I = dyn_cast<Instruction>(U))
          UsedHere = I->getFunction() == &F;
        else if (isa<Constant>(U))
          Work.append(U->user_begin(), U->user_end());
      }
      if (UsedHere)
        Bytes += DL.getTypeAllocSize(G.getValueType());
    }
  }
  unsigned MaxFlat = 1024;
  Attribute Flat = F.getFnAttribute("amdgpu-flat-work-group-size");
  if (Flat.isValid()) {
    unsigned Value;
    if (!Flat.getValueAsString().split(',').second.getAsInteger(10, Value) && Value)
      MaxFlat = Value;
  }
  uint64_t Waves = std::max(1u, (MaxFlat + 63) / 64);
  return Bytes / Waves;
}

bool ContextFlashback::runOnMachineFunction(MachineFunction &MF) {
  std::optional<ModelTarget> MaybeTarget = modelTargetOf(MF);
  if (!MaybeTarget || MF.empty())
    return false;
  Target = *MaybeTarget;
  const Function &F = MF.getFunction();
  bool Kernel = Target == ModelTarget::AMDGPU ? F.getCallingConv() == CallingConv::AMDGPU_KERNEL
                                              : isKernel(F, GpuTarget::NVPTX);
  if (!Kernel && !isMirStub(F))
    return false;
  SawKernel = true;
  preempt_ctx_technique DumpWhich = PREEMPT_CTX_LIVE;
  int DumpKind = -1;
  if (Dump != "none") {
    if (Dump == "live")
      DumpKind = PREEMPT_CTX_LIVE;
    else if (Dump == "flashback")
      DumpKind = PREEMPT_CTX_FLASHBACK;
    else if (Dump == "cs-defer")
      DumpKind = PREEMPT_CTX_CS_DEFER;
    else if (Dump == "combined")
      DumpKind = Combined;
    else
      F.getContext().emitError("preempt-ctxback-dump: unknown technique '" + Dump +
                               "' (none, live, flashback, cs-defer, combined)");
    DumpWhich = preempt_ctx_technique(DumpKind < 0 || DumpKind == Combined ? 3 : DumpKind);
  }

  InstructionPrinter Printer(MF, Target);
  if (RoutineHeader.empty())
    RoutineHeader = routineFileHeader(Target, Printer.cpu());
  auto Model = std::make_unique<FunctionModel>(MF, Target, Printer);
  bool UseOsrb = Osrb && Target == ModelTarget::AMDGPU;
  if (UseOsrb) {
    Model->ExtraPhys = freeSgprs(MF);
    Model->ExtraLaneVgprs = freeVgprs(MF);
  }
  std::string Why;
  if (!Model->build(Why)) {
    missed(MF, "not analysed: " + Why);
    return false;
  }

  KernelRow Row;
  Row.Name = MF.getName().str();
  Row.Target = Target == ModelTarget::AMDGPU ? "amdgcn" : "nvptx64";
  bool Changed = false;
  if (UseOsrb) {
    Row.Backups = insertBackups(MF, *Model, Printer);
    if (Row.Backups) {
      Changed = true;
      auto Rebuilt = std::make_unique<FunctionModel>(MF, Target, Printer);
      Rebuilt->ExtraPhys = Model->ExtraPhys;
      Rebuilt->ExtraLaneVgprs = Model->ExtraLaneVgprs;
      Rebuilt->Backups = Model->Backups;
      if (!Rebuilt->build(Why)) {
        // Cannot happen for a model that built before: the copies use only
        // registers it already knew. Say so rather than crash.
        missed(MF, "not analysed after scalar backups: " + Why);
        return Changed;
      }
      Model = std::move(Rebuilt);
    }
  }

  std::vector<BlockPlans> Plans;
  for (const std::unique_ptr<BlockModel> &Block : Model->Blocks) {
    const preempt_ctx_block &B = Block->block();
    BlockPlans BP{Block.get(), std::vector<preempt_ctx_plan>(B.count)};
    uint64_t FailuresBefore = Row.Totals.check_failures;
    if (B.count && preempt_ctx_analyze_block(&B, Window, &preempt_ctx_default_costs, CheckTrials, &Row.Totals,
                                             BP.Plans.data()) != 0) {
      for (preempt_ctx_plan &P : BP.Plans)
        preempt_ctx_plan_free(&P);
      for (BlockPlans &Done : Plans)
        for (preempt_ctx_plan &P : Done.Plans)
          preempt_ctx_plan_free(&P);
      missed(MF, "not analysed: the analysis failed on bb." + Twine(Block->MBB->getNumber()));
      return Changed;
    }
    if (Row.Totals.check_failures != FailuresBefore)
      reportCheckFailure(MF, *Model, *Block);
    if (DumpKind >= 0)
      dumpBlock(Row.Name, *Model, *Block, DumpWhich);
    Plans.push_back(std::move(BP));
  }

  // gfx9's scalar stores and trap temporaries are what the routines use.
  bool Gfx9 = Target == ModelTarget::NVPTX ||
              (Printer.cpu().starts_with("gfx90") && Printer.cpu() != "gfx90a");
  if (Gfx9) {
    KernelRoutines Out;
    if (emitKernelRoutines(Row.Name, Target, *Model, Printer, Plans, Out, Why)) {
      Routines += Out.Text;
      Row.PreemptRoutines = Out.PreemptRoutines;
      Row.ResumeRoutines = Out.ResumeRoutines;
      if (Out.LiveFallbacks)
        missed(MF, Twine(Out.LiveFallbacks) + " points get LIVE routines: their plan copies instructions the "
                                              "routines cannot print");
    } else {
      missed(MF, "no routines written: " + Why);
    }
  } else {
    missed(MF, "no routines written: they follow gfx9 conventions, the kernel is for " + Printer.cpu());
  }
  for (BlockPlans &BP : Plans)
    for (preempt_ctx_plan &P : BP.Plans)
      preempt_ctx_plan_free(&P);

  Row.Baseline = baselineBytes(*Model);
  Row.Lds = ldsBytes(MF, Target);
  MachineOptimizationRemarkEmitter ORE(MF, nullptr);
  MachineOptimizationRemark Remark("preempt", "CtxBack", DebugLoc(), &MF.front());
  Remark << "ctxback: kernel " << MF.getName() << ": " << std::to_string(Row.Totals.points) << " points, context "
         << std::to_string(Row.Totals.combined) << " bytes with CTXBack+CS-Defer (live "
         << std::to_string(Row.Totals.live) << ", baseline per point " << std::to_string(Row.Baseline) << ")";
  ORE.emit(Remark);
  Rows.push_back(std::move(Row));
  return Changed;
}

static std::string outputPrefix(const Module &M) {
  if (!Output.empty())
    return Output;
  StringRef Source = M.getSourceFileName();
  if (Source.empty())
    Source = M.getModuleIdentifier();
  std::string Stem = sys::path::stem(Source).str();
  return Stem.empty() ? "preempt" : Stem;
}

bool ContextFlashback::doFinalization(Module &M) {
  if (!SawKernel)
    return false;
  SawKernel = false;
  std::string Prefix = outputPrefix(M);
  std::error_code EC;
  raw_fd_ostream Tsv(Prefix + ".ctxback.tsv", EC, sys::fs::OF_Text);
  if (EC) {
    M.getContext().emitError("preempt-ctxback: cannot write " + Prefix + ".ctxback.tsv: " + EC.message());
    return false;
  }
  Tsv << "# preempt-ctxback-stats 1\n"
      << "kernel\ttarget\tpoints\tbaseline\tlds\tlive\tckpt\tcs_defer\tctxback\tctxback_cs_defer\tctxback_cycles\t"
         "cs_defer_cycles\tcombined_cycles\tpreempt_routines\tresume_routines\tbackup_instructions\tchecked\t"
         "check_failures\n";
  for (const KernelRow &R : Rows) {
    const preempt_ctx_totals &T = R.Totals;
    Tsv << R.Name << '\t' << R.Target << '\t' << T.points << '\t' << R.Baseline << '\t' << R.Lds << '\t' << T.live
        << '\t' << T.ckpt << '\t' << T.cs_defer << '\t' << T.flashback << '\t' << T.combined << '\t'
        << T.flashback_cycles << '\t' << T.cs_defer_cycles << '\t' << T.combined_cycles << '\t' << R.PreemptRoutines
        << '\t' << R.ResumeRoutines << '\t' << R.Backups << '\t' << T.checked << '\t' << T.check_failures << '\n';
  }
  std::string RoutinePath = Prefix + (Target == ModelTarget::AMDGPU ? ".ctxback.s" : ".ctxback.ptx");
  raw_fd_ostream Asm(RoutinePath, EC, sys::fs::OF_Text);
  if (EC) {
    M.getContext().emitError("preempt-ctxback: cannot write " + RoutinePath + ": " + EC.message());
    return false;
  }
  Asm << RoutineHeader << Routines;
  Rows.clear();
  Routines.clear();
  return false;
}

MachineFunctionPass *createContextFlashbackPass() { return new ContextFlashback(); }

static RegisterPass<ContextFlashback> Registration("preempt-context-flashback", "CTXBack context flashback (preempt)",
                                                   /*CFGOnly=*/false, /*is_analysis=*/false);

// Fires for every TargetMachine, the host's too: only amdgcn and nvptx64 get
// the pass, after the point where their registers are final enough.
static RegisterTargetPassConfigCallback InsertPass([](TargetMachine &TM, PassManagerBase &,
                                                      TargetPassConfig *PassConfig) {
  if (!enabled() || !PassConfig)
    return;
  const Triple &TT = TM.getTargetTriple();
  const char *Anchor = nullptr;
  AnalysisID Known = nullptr;
  if (TT.isAMDGCN()) {
    Anchor = "prologepilog";
    Known = &PrologEpilogCodeInserterID;
  } else if (TT.getArch() == Triple::nvptx64) {
    Anchor = "phi-node-elimination";
    Known = &PHIEliminationID;
  }
  if (!Anchor)
    return;
  // The registry knows a codegen pass only once something constructed it,
  // which llc and clang have not done yet here: fall back to the exported ID.
  const PassInfo *PI = PassRegistry::getPassRegistry()->getPassInfo(Anchor);
  PassConfig->insertPass(PI ? PI->getTypeInfo() : Known, &ContextFlashback::ID);
});

} // namespace preempt
