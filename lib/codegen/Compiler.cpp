//===- lib/codegen/Compiler.cpp - The CPU target's compile driver ----------===//
//
// lowerModel, then the kernels through LLVM: JIT-compiled with entry points
// for the CPU executor, or compiled to object code for an artifact.
//
//===----------------------------------------------------------------------===//
#include "kiln/codegen/Compiler.h"

#include "kiln/support/Stopwatch.h"

namespace kiln::codegen {

Expected<CpuModel> compileForCpu(ir::Graph& graph, const CompileOptions& options) {
  CpuModel model;
  KILN_ASSIGN(model.lowered, lowerModel(graph, KernelTarget::Cpu, options));
  Stopwatch timer;
  KILN_ASSIGN(model.jit, CpuJit::create());
  std::vector<const Kernel*> kernels;
  for (const LoweredKernel& k : model.lowered.kernels) kernels.push_back(&k.kernel);
  KILN_ASSIGN(std::vector<CpuKernelFn> fns, model.jit->compile(kernels));
  model.lowered.executable->cpu = model.jit->hostCpu();
  model.lowered.stats.llvmMs = timer.elapsedMs();
  std::vector<runtime::KernelEntry> entries(fns.begin(), fns.end());
  KILN_ASSIGN(model.executor, runtime::CpuExecutor::create(model.lowered.executable, std::move(entries)));
  return model;
}

Expected<LoweredModel> compileCpuArtifact(ir::Graph& graph, const CompileOptions& options) {
  KILN_ASSIGN(LoweredModel model, lowerModel(graph, KernelTarget::Cpu, options));
  Stopwatch timer;
  std::vector<const Kernel*> kernels;
  for (const LoweredKernel& k : model.kernels) kernels.push_back(&k.kernel);
  KILN_ASSIGN(std::vector<CpuObject> objects, compileToObjects(kernels));
  for (CpuObject& object : objects) model.executable->objectCode.push_back(std::move(object.bytes));
  model.executable->cpu = objects.front().cpu;
  model.executable->cpuFeatures = objects.front().requiredFeatures;
  model.stats.llvmMs = timer.elapsedMs();
  return model;
}

}  // namespace kiln::codegen
