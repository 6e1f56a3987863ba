//===- lib/tune/CudaMeasurer.cpp - Measuring schedules on a GPU ------------===//
//
// See kiln/tune/Measurer.h and StagedMeasurer.h. Candidates are lowered for
// the GPU and printed as CUDA C, compiled by NVRTC in parallel to a cubin
// for the device's architecture, then, one at a time, loaded with their
// arguments (bound as the CPU measurer binds them), launched once and
// checked against the interpreter, and timed with CUDA events
// (runtime::CudaKernelTimer; MeasureOptions::flushL2 evicts the L2 cache
// before every timed launch). A candidate the driver refuses to load or
// launch (too many registers or threads for the device) is a run error,
// not a failure of the tuning run.
//
//===----------------------------------------------------------------------===//
#include <algorithm>

#include "kiln/codegen/CudaBackend.h"
#include "kiln/codegen/CudaCompiler.h"
#include "kiln/runtime/CudaKernelTimer.h"
#include "StagedMeasurer.h"
#include "kiln/tune/Measurer.h"
#include "kiln/tune/TuningDatabase.h"

namespace kiln::tune {

using namespace codegen;

namespace {

struct CudaCandidate : CudaCandidateSource {
  std::vector<uint8_t> cubin;
};

class CudaMeasurer final : public StagedMeasurer<CudaCandidate> {
 public:
  CudaMeasurer(std::map<std::string, Tensor> reference, MeasureOptions options, std::string device, uint32_t sm)
      : StagedMeasurer(std::move(reference), options), device_(std::move(device)), sm_(sm) {}

  std::string target() const override { return "cuda"; }
  std::string device() const override { return device_; }
  std::string toolkit() const override { return cudaToolkitName(); }

 private:
  Status lower(const KernelGroup& group, const Config& config, const std::string& name, CudaCandidate& c) const override {
    KILN_ASSIGN(static_cast<CudaCandidateSource&>(c), cudaCandidate(group, config, name));
    return Status::ok();
  }

  Status build(CudaCandidate& c) const override {
    KILN_ASSIGN(CudaBinary binary, compileCubin(c.source.source, c.source.name + ".cu", int(sm_)));
    c.cubin = std::move(binary.cubin);
    return Status::ok();
  }

  Status runAndTime(CudaCandidate& c, KernelArguments& args, MeasureResult& r) const override {
    runtime::CudaKernelLaunch launch;
    launch.entry = c.source.name;
    for (size_t d = 0; d < 3; ++d) {
      launch.grid[d] = uint32_t(c.source.grid[d]);
      launch.block[d] = uint32_t(c.source.block[d]);
    }
    KILN_ASSIGN(KernelOutcome outcome, measureCudaKernel(c.cubin, launch, args.tensors, args.expected, options_));
    take(outcome, r);
    return Status::ok();
  }

  std::string device_;
  uint32_t sm_;
};

}  // namespace

Expected<CudaCandidateSource> cudaCandidate(const KernelGroup& group, const Config& config, const std::string& name) {
  CudaCandidateSource c;
  KILN_ASSIGN(c.lowered, lowerGroup(group, KernelTarget::Gpu, &config));
  c.lowered.kernel.name = name;
  KILN_ASSIGN(c.source, emitCuda(c.lowered.kernel, fusedOpsOf(group)));
  return c;
}

std::string cudaToolkitName() { return std::string("kiln ") + KILN_VERSION + ", NVRTC " + nvrtcVersion(); }

Expected<std::unique_ptr<Measurer>> createCudaMeasurer(std::map<std::string, Tensor> reference, MeasureOptions options) {
  KILN_ASSIGN(auto device, runtime::CudaKernelTimer::device());
  return std::unique_ptr<Measurer>(new CudaMeasurer(std::move(reference), options, device.first, device.second));
}

}  // namespace kiln::tune
