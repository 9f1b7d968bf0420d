// LaunchRewrite.cpp: replaces cudaLaunchKernel/hipLaunchKernel of this file's kernels with preempt_launch_kernel.
// FLEP §3 / EffiSha §6: launches go through the runtime, which picks the persistent grid and owns the control block.
//
// clang lowers `k<<<g, b, s, q>>>(args)` to the stub `__device_stub__k`, which
// calls cudaLaunchKernel(stub, grid, block, args, shmem, stream); at -O2 the
// stub is inlined into callers but stays the kernel's handle (HIP passes a
// constant global holding the stub instead). Only handles of stubs defined in
// this module are this file's kernels, compiled with the plugin on the device
// side too; the runtime still checks each kernel's marker, because the device
// side may have refused it.
#include "LaunchRewrite.h"

#include "GpuTarget.h"

#include "preempt/control_block.h"

#include "llvm/Analysis/OptimizationRemarkEmitter.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/DiagnosticInfo.h"
#include "llvm/IR/Instructions.h"

using namespace llvm;

namespace preempt {

static constexpr const char *PassName = "preempt";

// Mirrors struct preempt_kernel_desc in runtime-host/include/preempt.h.
static constexpr unsigned KernelDescVersion = 1;
enum GpuApi : unsigned { ApiCuda = 1, ApiHip = 2 };

static bool isLaunchApi(StringRef Name) { return Name == "cudaLaunchKernel" || Name == "hipLaunchKernel"; }

// Launch entry points preempt does not route: on NVIDIA they run the kernel as
// written (its own name, ABI 9); on AMDGPU the converted kernel, without its
// control block.
static bool isUnroutedLaunchApi(StringRef Name) {
  return (Name.starts_with("cudaLaunch") || Name.starts_with("hipLaunch") || Name.starts_with("cuLaunch") ||
          Name.starts_with("hipExtLaunch") || Name.starts_with("cudaGraphAddKernelNode")) &&
         !isLaunchApi(Name);
}

// A kernel's handle, as launches and registrations name it: the device stub
// itself for CUDA; for HIP a constant global holding the stub's address. Only
// handles of stubs defined here are this file's kernels.
static GlobalValue *kernelHandle(Value *Operand) {
  auto *Handle = dyn_cast<GlobalValue>(Operand->stripPointerCasts());
  if (auto *Stub = dyn_cast_or_null<Function>(Handle))
    return Stub->isDeclaration() ? nullptr : Stub;
  auto *Variable = dyn_cast_or_null<GlobalVariable>(Handle);
  if (!Variable || !Variable->isConstant() || !Variable->hasDefinitiveInitializer())
    return nullptr;
  auto *Stub = dyn_cast<Function>(Variable->getInitializer()->stripPointerCasts());
  return Stub && !Stub->isDeclaration() ? Variable : nullptr;
}

static Function *stubOf(GlobalValue *Handle) {
  if (auto *Stub = dyn_cast<Function>(Handle))
    return Stub;
  return cast<Function>(cast<GlobalVariable>(Handle)->getInitializer()->stripPointerCasts());
}

// The C string a registration points to (a constant global), or "".
static StringRef registeredName(Value *Operand) {
  auto *NameVar = dyn_cast<GlobalVariable>(Operand->stripPointerCasts());
  if (!NameVar || !NameVar->hasInitializer())
    return StringRef();
  auto *Data = dyn_cast<ConstantDataSequential>(NameVar->getInitializer());
  return Data && Data->isCString() ? Data->getAsCString() : StringRef();
}

// Kernel name registered for each handle by __cudaRegisterFunction /
// __hipRegisterFunction (argument 2 is the device-side name), or by the new
// offload driver's offloading entries.
static DenseMap<const GlobalValue *, StringRef> registeredKernelNames(Module &M) {
  DenseMap<const GlobalValue *, StringRef> Names;
  for (StringRef Register : {"__cudaRegisterFunction", "__hipRegisterFunction"}) {
    Function *RegisterFn = M.getFunction(Register);
    if (!RegisterFn)
      continue;
    for (User *U : RegisterFn->users()) {
      auto *Call = dyn_cast<CallBase>(U);
      if (!Call || Call->arg_size() < 3)
        continue;
      GlobalValue *Handle = kernelHandle(Call->getArgOperand(1));
      StringRef Name = registeredName(Call->getArgOperand(2));
      if (Handle && !Name.empty())
        Names[Handle] = Name;
    }
  }
  // clang's new offload driver (-fgpu-rdc builds use it) registers kernels through offloading entries instead:
  // one constant per kernel in its own section, holding the handle and the device-side name. Read by shape, not
  // by field position: the entry's layout has changed between LLVM versions.
  for (GlobalVariable &Entry : M.globals()) {
    StringRef Section = Entry.hasSection() ? Entry.getSection() : StringRef();
    if (!Entry.hasInitializer() || (Section != "llvm_offload_entries" && !Section.ends_with("_offloading_entries")))
      continue;
    auto *Fields = dyn_cast<ConstantStruct>(Entry.getInitializer());
    if (!Fields)
      continue;
    GlobalValue *Handle = nullptr;
    for (const Use &Field : Fields->operands()) {
      auto *Value = cast<Constant>(Field.get());
      if (!Handle) {
        Handle = kernelHandle(Value);
        continue;
      }
      StringRef Name = registeredName(Value);
      if (Name.empty())
        continue;
      Names.try_emplace(Handle, Name);
      break;
    }
  }
  return Names;
}

static GlobalVariable *kernelDescriptor(Module &M, GlobalValue &Handle, StringRef KernelName, GpuApi Api,
                                        DenseMap<GlobalValue *, GlobalVariable *> &Descriptors) {
  if (GlobalVariable *Existing = Descriptors.lookup(&Handle))
    return Existing;
  Function &Stub = *stubOf(&Handle);
  LLVMContext &Context = M.getContext();
  Type *Int32 = Type::getInt32Ty(Context);
  PointerType *Ptr = PointerType::get(Context, 0);
  StructType *DescType = StructType::get(Context, {Int32, Int32, Int32, Int32, Ptr, Ptr, Ptr});
  Constant *Name = ConstantDataArray::getString(Context, KernelName);
  auto *NameVar = new GlobalVariable(M, Name->getType(), true, GlobalValue::PrivateLinkage, Name,
                                     "__preempt_kernel_name." + Stub.getName());
  NameVar->setUnnamedAddr(GlobalValue::UnnamedAddr::Global);
  Constant *Fields[] = {ConstantInt::get(Int32, KernelDescVersion),
                        ConstantInt::get(Int32, Api),
                        ConstantInt::get(Int32, Stub.arg_size()),
                        ConstantInt::get(Int32, PREEMPT_KERNEL_ABI_VERSION),
                        &Handle,
                        NameVar,
                        ConstantPointerNull::get(Ptr)};
  // Writable: the runtime caches what it learns about the kernel in the last field.
  auto *Desc = new GlobalVariable(M, DescType, false, GlobalValue::InternalLinkage,
                                  ConstantStruct::get(DescType, Fields), "__preempt_kernel_desc." + Stub.getName());
  Desc->setAlignment(Align(8));
  Descriptors[&Handle] = Desc;
  return Desc;
}

PreservedAnalyses LaunchRewritePass::run(Module &M, ModuleAnalysisManager &) {
  if (gpuTargetOf(M) != GpuTarget::None)
    return PreservedAnalyses::all();
  DenseMap<const GlobalValue *, StringRef> KernelNames = registeredKernelNames(M);
  DenseMap<GlobalValue *, GlobalVariable *> Descriptors;
  SmallVector<CallBase *, 16> Launches;

  for (Function &F : M) {
    if (!F.isDeclaration())
      continue;
    StringRef Name = F.getName();
    bool Routed = isLaunchApi(Name), Unrouted = isUnroutedLaunchApi(Name);
    if (!Routed && !Unrouted)
      continue;
    for (User *U : F.users()) {
      auto *Call = dyn_cast<CallBase>(U);
      if (!Call || Call->getCalledFunction() != &F)
        continue;
      for (Value *Arg : Call->args()) {
        GlobalValue *Handle = kernelHandle(Arg);
        if (!Handle)
          continue;
        if (Routed && Arg == Call->getArgOperand(0)) {
          Launches.push_back(Call);
        } else if (Unrouted && Name.starts_with("hip")) {
          // A compile error, not a warning: on AMDGPU the converted kernel
          // keeps the kernel's name, and running it without its control
          // block would corrupt memory.
          M.getContext().diagnose(DiagnosticInfoUnsupported(
              *Call->getFunction(),
              "preempt: kernel '" + KernelNames.lookup(Handle) + "' (stub '" + Handle->getName() +
                  "') is launched through " + Name +
                  ", which preempt does not route; launch it with <<<>>> or build its device code without the plugin",
              Call->getDebugLoc()));
        } else if (Unrouted) {
          // On NVIDIA the kernel's own name is the kernel as written
          // (control_block.h, ABI 9): this launch runs it correctly, only
          // not preemptibly, as do launches the pass cannot see (a graph's
          // kernel node, a launch through a function pointer).
          StringRef KernelName = KernelNames.lookup(Handle);
          if (KernelName.empty())
            KernelName = Handle->getName(); // host-only compilation registers nothing
          OptimizationRemarkEmitter Remarks(Call->getFunction());
          Remarks.emit([&] {
            return OptimizationRemarkMissed(PassName, "LaunchNotRouted", Call)
                   << "launch of kernel '" << ore::NV("Kernel", KernelName) << "' through "
                   << ore::NV("Api", Name) << " runs the kernel as written, not preemptible (preempt routes <<<>>> "
                   << "launches only)";
          });
        }
        break;
      }
    }
  }
  if (Launches.empty())
    return PreservedAnalyses::all();

  for (CallBase *Launch : Launches) {
    GlobalValue *Handle = kernelHandle(Launch->getArgOperand(0));
    GpuApi Api = Launch->getCalledFunction()->getName().starts_with("hip") ? ApiHip : ApiCuda;
    StringRef KernelName = KernelNames.lookup(Handle);
    if (KernelName.empty()) {
      // Host-only compilation registers nothing: the descriptor names the stub, the runtime finds no converted
      // form under that name, and the launch runs as written. Said, not silent.
      KernelName = Handle->getName();
      if (!Descriptors.count(Handle)) {
        OptimizationRemarkEmitter Remarks(Launch->getFunction());
        Remarks.emit([&] {
          return OptimizationRemarkMissed(PassName, "KernelNameUnknown", Launch)
                 << "kernel '" << ore::NV("Kernel", KernelName)
                 << "': nothing in this module registers its device symbol (host-only compilation?), so its "
                 << "launches run as written, not preemptible";
        });
      }
    }
    GlobalVariable *Desc = kernelDescriptor(M, *Handle, KernelName, Api, Descriptors);

    // Same ABI as cudaLaunchKernel except the first argument: dim3 and
    // streams are passed exactly as clang already lowered them, so the call
    // (or invoke) is retargeted in place.
    FunctionCallee Runtime = M.getOrInsertFunction("preempt_launch_kernel", Launch->getFunctionType());
    Launch->setCalledFunction(Runtime);
    Launch->setArgOperand(0, Desc);

    OptimizationRemarkEmitter Remarks(Launch->getFunction());
    Remarks.emit([&] {
      return OptimizationRemark(PassName, "LaunchRouted", Launch)
             << "launch of kernel '" << ore::NV("Kernel", KernelName) << "' routed to the preempt runtime";
    });
  }
  return PreservedAnalyses::none();
}

} // namespace preempt
