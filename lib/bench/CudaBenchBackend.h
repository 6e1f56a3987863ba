//===- lib/bench/CudaBenchBackend.h - Backend: generated CUDA code --------------===//
//
// Compiles the (already optimized) graph for the GPU the runtime would use
// (KILN_CUDA_DEVICE): its SM number is asked of the driver first, so NVRTC
// builds one cubin, like a JIT. The NVRTC cache (NvrtcCache::defaultDir) makes a
// second benchmark of the same model start fast. Runs go through
// runtime::CudaExecutor (CUDA graphs, pinned staging), exactly as a loaded
// artifact runs; a run returns once the outputs are on the host, so the
// measured latency includes the copies. Without a driver or device,
// prepare() fails with KE5005. With a tuning database the kernels take the
// schedules kiln tune --target cuda measured on this GPU.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <map>

#include "AppliedTuning.h"
#include "kiln/bench/Backend.h"
#include "kiln/codegen/cuda/CudaCompiler.h"
#include "kiln/codegen/cuda/NvrtcCache.h"
#include "kiln/runtime/CudaExecutor.h"
#include "kiln/runtime/CudaKernelTimer.h"
#include "kiln/support/Stopwatch.h"

namespace kiln::bench {

class CudaCodegenBackend final : public Backend {
 public:
  explicit CudaCodegenBackend(const BackendOptions& options)
      : allowTf32_(options.allowTf32), libraryTactics_(options.libraryTactics), tuningDb_(options.tuningDb) {}  // threads, seed do not apply
  std::string name() const override { return "cuda"; }
  int threads() const override { return 1; }
  bool usesGpu() const override { return true; }
  std::string tuningSummary() const override { return tuningSummary_; }
  std::string launchSummary() const override { return executor_ ? executor_->graphSummary() : ""; }
  Status prepare(std::unique_ptr<ir::Module> module, CompilePhases& phases) override {
    module_ = std::move(module);
    Stopwatch timer;
    KILN_ASSIGN(uint32_t sm, runtime::CudaExecutor::deviceArchitecture());
    codegen::CudaCompileOptions cuda;
    cuda.archs = {int(sm)};
    cuda.cacheDir = codegen::NvrtcCache::defaultDir();
    codegen::CompileOptions options;
    options.releaseConsumedWeights = true;  // module_ is only kept alive from here on
    options.allowTf32 = allowTf32_;
    KILN_ASSIGN(options.libraryTactics, codegen::parseLibraryTactics(libraryTactics_));
    if (!tuningDb_.empty()) {  // the schedules `kiln tune --target cuda` measured on this GPU
      KILN_ASSIGN(auto gpu, runtime::CudaKernelTimer::device());
      KILN_ASSIGN(tune::TuningApplication applied, appliedTuning(tuningDb_, module_->graph(), codegen::KernelTarget::Gpu,
                                                                 gpu.first, tune::cudaToolkitName()));
      applied.applyTo(options);
      tuningSummary_ = applied.summary(options.libraryTactics);
    }
    KILN_ASSIGN(codegen::LoweredModel lowered, codegen::compileCudaArtifact(module_->graph(), options, cuda));
    for (const codegen::LoweredKernel& k : lowered.kernels)
      schedules_[k.kernel.name] = k.templateName + " " + codegen::configToString(k.config);
    for (const runtime::LibraryCall& c : lowered.executable->libraryCalls)
      schedules_[c.name] = std::string(runtime::libraryName(c.routine)) + " " + c.describe();
    KILN_ASSIGN(executor_, runtime::CudaExecutor::create(lowered.executable));
    phases.codegenMs = timer.elapsedMs();
    return Status::ok();
  }
  Expected<std::vector<RuntimeValue>> run(const std::vector<RuntimeValue>& inputs) override {
    if (!executor_) return Error(ErrorCode::Internal, "cuda backend: run() before prepare()");
    KILN_ASSIGN(std::vector<Tensor> tensors, tensorInputs(inputs, "cuda"));
    KILN_ASSIGN(std::vector<Tensor> outs, executor_->run(tensors));
    return tensorValues(std::move(outs));
  }
  std::optional<uint64_t> peakDeviceBytes() const override {
    if (!executor_) return std::nullopt;
    return executor_->deviceBytes();
  }
  Expected<std::vector<KernelTime>> profileKernels(const std::vector<RuntimeValue>& inputs, int runs) override {
    if (!executor_) return Error(ErrorCode::Internal, "cuda backend: profileKernels() before prepare()");
    KILN_ASSIGN(std::vector<Tensor> tensors, tensorInputs(inputs, "cuda"));
    KILN_ASSIGN(std::vector<runtime::KernelStepTime> steps, executor_->profile(tensors, runs));
    std::vector<KernelTime> times;
    for (const runtime::KernelStepTime& s : steps) {
      auto it = schedules_.find(s.kernel);
      times.push_back({s.kernel, it == schedules_.end() ? std::string() : it->second, s.grid, s.block, 1, s.meanMs});
    }
    return sumPerKernel(std::move(times));
  }

 private:
  bool allowTf32_ = false;
  std::string libraryTactics_;
  std::string tuningDb_, tuningSummary_;
  std::unique_ptr<ir::Module> module_;
  std::unique_ptr<runtime::CudaExecutor> executor_;
  std::map<std::string, std::string> schedules_;  ///< kernel entry point -> "template configuration"
};

}  // namespace kiln::bench
