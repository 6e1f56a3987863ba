//===- lib/codegen/cpu/CpuJit.cpp - ORC JIT for CPU kernels ---------------===//
//
// Builds LLVM modules of kernels, optimizes them with the new pass manager
// at O3 for the host target machine (all host features, so AVX2 / AVX-512
// are used where present; loop strength reduction off, see
// skipLoopStrengthReduction) and emits position-independent relocatable
// objects: one for an artifact, or for the JIT several, compiled on their
// own threads and linked by an LLJIT (the runtime symbol
// kiln_rt_parallel_for and libm resolve from this process).
//
//===----------------------------------------------------------------------===//
#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <string_view>
#include <thread>

#include <llvm/Config/llvm-config.h>
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/CommandLine.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/TargetParser/Host.h>

#include "LlvmEmitter.h"
#include "kiln/codegen/cpu/CpuJit.h"
#include "kiln/support/ThreadPool.h"

namespace kiln::codegen {
namespace {

/// Turns off LLVM's loop strength reduction in code generation unless
/// KILN_LLVM_LSR=1 (an LLVM option: it applies to the whole process). The
/// emitter addresses an unrolled register block from one base with constant
/// displacements, the form LSR would produce; on such kernels LSR found
/// nothing (kernel time within noise on 11 models) and took half of LLVM's
/// time or more, its search growing with the loads of a loop
/// (docs/performance.md, "CPU compile time").
void skipLoopStrengthReduction() {
  const char* env = std::getenv("KILN_LLVM_LSR");
  if (env && std::string_view(env) == "1") return;
  llvm::StringMap<llvm::cl::Option*>& options = llvm::cl::getRegisteredOptions();
  if (auto it = options.find("disable-lsr"); it != options.end()) it->second->addOccurrence(0, "disable-lsr", "true");
}

void initializeLlvm() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    skipLoopStrengthReduction();
  });
}

Error llvmError(llvm::Error e, const std::string& what) {
  std::string msg = llvm::toString(std::move(e));
  return makeError(ErrorCode::Internal, what, ": ", msg);
}

Expected<std::unique_ptr<llvm::TargetMachine>> hostTargetMachine() {
  initializeLlvm();
  auto jtmb = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!jtmb) return llvmError(jtmb.takeError(), "detecting the host CPU");
  jtmb->setCodeGenOptLevel(llvm::CodeGenOptLevel::Aggressive);
  auto tm = jtmb->createTargetMachine();
  if (!tm) return llvmError(tm.takeError(), "creating the target machine");
  return std::move(*tm);
}

Status buildModule(const std::vector<const Kernel*>& kernels, llvm::Module& module, llvm::TargetMachine& tm,
                   bool optimize) {
  module.setDataLayout(tm.createDataLayout());
  module.setTargetTriple(tm.getTargetTriple().str());
  for (const Kernel* k : kernels) {
    KILN_ASSIGN(llvm::Function * fn, cpu::emitKernel(*k, module));
    fn->addFnAttr("target-cpu", tm.getTargetCPU());
    fn->addFnAttr("target-features", tm.getTargetFeatureString());
  }
  for (llvm::Function& f : module) {
    if (f.isDeclaration()) continue;
    f.addFnAttr("target-cpu", tm.getTargetCPU());
    f.addFnAttr("target-features", tm.getTargetFeatureString());
    f.addFnAttr(llvm::Attribute::NoUnwind);
    f.setDSOLocal(true);  // direct PC-relative references in the artifact's object, no GOT
  }
  std::string problems;
  llvm::raw_string_ostream os(problems);
  if (llvm::verifyModule(module, &os)) return makeError(ErrorCode::Internal, "generated LLVM IR is invalid: ", os.str());
  if (!optimize) return Status::ok();
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder pb(&tm);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager mpm = pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
  mpm.run(module, mam);
  return Status::ok();
}

}  // namespace

struct CpuJit::Impl {
  std::unique_ptr<llvm::orc::LLJIT> jit;
  std::unique_ptr<llvm::TargetMachine> tm;
  int modules = 0;
};

CpuJit::CpuJit() : impl_(std::make_unique<Impl>()) {}
CpuJit::~CpuJit() = default;

Expected<std::unique_ptr<CpuJit>> CpuJit::create() {
  initializeLlvm();
  std::unique_ptr<CpuJit> jit(new CpuJit);
  KILN_ASSIGN(jit->impl_->tm, hostTargetMachine());
  auto jtmb = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!jtmb) return llvmError(jtmb.takeError(), "detecting the host CPU");
  jtmb->setCodeGenOptLevel(llvm::CodeGenOptLevel::Aggressive);
  auto lljit = llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(std::move(*jtmb)).create();
  if (!lljit) return llvmError(lljit.takeError(), "creating the JIT");
  jit->impl_->jit = std::move(*lljit);
  llvm::orc::JITDylib& lib = jit->impl_->jit->getMainJITDylib();
  auto generator = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
      jit->impl_->jit->getDataLayout().getGlobalPrefix());
  if (!generator) return llvmError(generator.takeError(), "resolving process symbols");
  lib.addGenerator(std::move(*generator));
  llvm::orc::SymbolMap runtime;
  runtime[jit->impl_->jit->mangleAndIntern("kiln_rt_parallel_for")] = {
      llvm::orc::ExecutorAddr::fromPtr(&kiln_rt_parallel_for), llvm::JITSymbolFlags::Exported};
  if (auto e = lib.define(llvm::orc::absoluteSymbols(std::move(runtime)))) return llvmError(std::move(e), "defining runtime symbols");
  return jit;
}

std::string llvmVersion() { return LLVM_VERSION_STRING; }

std::string CpuJit::hostCpu() const { return impl_->tm->getTargetCPU().str(); }

Expected<std::vector<CpuKernelFn>> CpuJit::compile(const std::vector<const Kernel*>& kernels) {
  KILN_ASSIGN(std::vector<CpuObject> objects, compileToObjects(kernels));
  for (const CpuObject& object : objects) {
    auto buffer = llvm::MemoryBuffer::getMemBufferCopy(
        llvm::StringRef(reinterpret_cast<const char*>(object.bytes.data()), object.bytes.size()),
        "kiln_kernels_" + std::to_string(impl_->modules++));
    if (auto e = impl_->jit->addObjectFile(std::move(buffer))) return llvmError(std::move(e), "adding kernels to the JIT");
  }
  std::vector<CpuKernelFn> fns;
  for (const Kernel* k : kernels) {
    auto addr = impl_->jit->lookup(k->name);
    if (!addr) return llvmError(addr.takeError(), "looking up kernel " + k->name);
    fns.push_back(addr->toPtr<CpuKernelFn>());
  }
  return fns;
}

Expected<CpuObject> compileToObject(const std::vector<const Kernel*>& kernels) {
  initializeLlvm();
  auto jtmb = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!jtmb) return llvmError(jtmb.takeError(), "detecting the host CPU");
  jtmb->setCodeGenOptLevel(llvm::CodeGenOptLevel::Aggressive);
  jtmb->setRelocationModel(llvm::Reloc::PIC_);
  jtmb->setCodeModel(llvm::CodeModel::Small);
  auto tmOr = jtmb->createTargetMachine();
  if (!tmOr) return llvmError(tmOr.takeError(), "creating the target machine");
  std::unique_ptr<llvm::TargetMachine> tm = std::move(*tmOr);
  llvm::LLVMContext context;
  llvm::Module module("kiln_kernels", context);
  KILN_TRY(buildModule(kernels, module, *tm, true));
  llvm::SmallVector<char, 0> buffer;
  llvm::raw_svector_ostream os(buffer);
  llvm::legacy::PassManager pm;
  if (tm->addPassesToEmitFile(pm, os, nullptr, llvm::CodeGenFileType::ObjectFile))
    return makeError(ErrorCode::Internal, "LLVM cannot emit object code for ", tm->getTargetTriple().str());
  pm.run(module);
  CpuObject object;
  object.bytes.assign(buffer.begin(), buffer.end());
  object.cpu = tm->getTargetCPU().str();
  // The features the runtime checks before running the code.
  std::string features = tm->getTargetFeatureString().str();
  for (const char* f : {"avx", "avx2", "fma", "avx512f", "avx512bw", "avx512dq", "avx512vl", "f16c"})
    if (features.find(std::string("+") + f + ",") != std::string::npos || features.ends_with(std::string("+") + f))
      object.requiredFeatures.push_back(f);
  return object;
}

size_t compileThreads() {
  const size_t cores = std::max(1u, std::thread::hardware_concurrency());
  const char* env = std::getenv("KILN_COMPILE_THREADS");
  if (!env || !*env) return cores;
  char* end = nullptr;
  const long n = std::strtol(env, &end, 10);
  return *end == '\0' && n >= 1 ? size_t(n) : cores;  // not a positive number: the default
}

Expected<std::vector<CpuObject>> compileToObjects(const std::vector<const Kernel*>& kernels) {
  // Kernels are independent functions: parts of them are optimized and
  // compiled on their own threads, each with its own LLVM context and target
  // machine. Two parts per thread, taken in turn, even out kernels of unequal
  // cost; one thread compiles one part. KILN_COMPILE_THREADS caps the
  // threads (default: one per core).
  const size_t threads = compileThreads();
  const size_t parts = std::max<size_t>(1, threads == 1 ? 1 : std::min(kernels.size(), 2 * threads));
  std::vector<std::vector<const Kernel*>> groups(parts);
  for (size_t i = 0; i < kernels.size(); ++i) groups[i % parts].push_back(kernels[i]);
  std::vector<std::optional<Expected<CpuObject>>> compiled(parts);
  runOnThreads(parts, int(threads), [&](size_t i) { compiled[i] = compileToObject(groups[i]); });
  std::vector<CpuObject> objects;
  for (std::optional<Expected<CpuObject>>& object : compiled) {
    if (!*object) return std::move(*object).error();
    objects.push_back(std::move(**object));
  }
  return objects;
}

Expected<std::string> emitLlvmText(const std::vector<const Kernel*>& kernels, bool optimize) {
  KILN_ASSIGN(auto tm, hostTargetMachine());
  llvm::LLVMContext context;
  llvm::Module module("kiln_kernels", context);
  KILN_TRY(buildModule(kernels, module, *tm, optimize));
  std::string text;
  llvm::raw_string_ostream os(text);
  module.print(os, nullptr);
  return os.str();
}

}  // namespace kiln::codegen
