//===- lib/bench/CpuBenchBackend.h - Backend: generated CPU code ----------------===//
//
// Compiles the (already optimized) graph with the CPU target: fusion plan,
// schedule templates with default knobs, LLVM JIT; then runs the executable
// with runtime::CpuExecutor on the process thread pool (--threads sets its
// size). prepare() fills the codegen phase. With a tuning database
// (BackendOptions::tuningDb) the kernels take its schedules (kiln tune).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "AppliedTuning.h"
#include "kiln/bench/Backend.h"
#include "kiln/codegen/Compiler.h"
#include "kiln/runtime/StepTrace.h"
#include "kiln/support/Stopwatch.h"
#include "kiln/support/ThreadPool.h"

namespace kiln::bench {

class CpuCodegenBackend final : public Backend {
 public:
  explicit CpuCodegenBackend(const BackendOptions& options) : options_(options) {
    if (options_.threads > 0) ThreadPool::global().setThreads(options_.threads);
  }
  std::string name() const override { return "cpu"; }
  int threads() const override { return ThreadPool::global().threads(); }
  std::string tuningSummary() const override { return tuningSummary_; }
  Status prepare(std::unique_ptr<ir::Module> module, CompilePhases& phases) override {
    module_ = std::move(module);
    Stopwatch timer;
    codegen::CompileOptions options;
    options.releaseConsumedWeights = true;  // module_ is only kept alive from here on
    if (!options_.tuningDb.empty()) {  // the schedules `kiln tune` measured on this CPU
      KILN_ASSIGN(tune::TuningApplication applied, appliedTuning(options_.tuningDb, module_->graph(), codegen::KernelTarget::Cpu,
                                                                 tune::cpuDeviceName(), tune::cpuToolkitName()));
      applied.applyTo(options);
      tuningSummary_ = applied.summary();
    }
    KILN_ASSIGN(model_, codegen::compileForCpu(module_->graph(), options));
    phases.codegenMs = timer.elapsedMs();
    return Status::ok();
  }
  Expected<std::vector<RuntimeValue>> run(const std::vector<RuntimeValue>& inputs) override {
    if (!model_.executor) return Error(ErrorCode::Internal, "cpu backend: run() before prepare()");
    KILN_ASSIGN(std::vector<Tensor> tensors, tensorInputs(inputs, "cpu"));
    KILN_ASSIGN(std::vector<Tensor> outs, model_.executor->run(tensors));
    return tensorValues(std::move(outs));
  }
  Expected<RunTrace> traceRun(const std::vector<RuntimeValue>& inputs) override {
    if (!model_.executor) return Error(ErrorCode::Internal, "cpu backend: traceRun() before prepare()");
    KILN_ASSIGN(std::vector<Tensor> tensors, tensorInputs(inputs, "cpu"));
    RunTrace trace;
    KILN_TRY(runtime::runTraced(*model_.executor, tensors, trace).status());
    return trace;
  }

 private:
  BackendOptions options_;
  std::string tuningSummary_;
  std::unique_ptr<ir::Module> module_;
  codegen::CpuModel model_;
};

}  // namespace kiln::bench
