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
// not a failure of the tuning run. A task whose group a library call can
// compute (LibraryTactics.h: libraryCallFor) has that call measured too,
// on the same reference values, so that compiling with the tuning database
// picks library or generated code by measurement; a group the compiler
// would split (splitForLibrary: BERT's GELU after a cuBLASLt product) is
// measured as the split runs: the call, then the rest's generated kernel
// (default schedule), the two times added.
//
//===----------------------------------------------------------------------===//
#include <algorithm>
#include <cstring>

#include "kiln/codegen/cuda/CudaEmitter.h"
#include "kiln/codegen/cuda/Nvrtc.h"
#include "kiln/codegen/cuda/CudaCompiler.h"
#include "kiln/codegen/LibraryTactics.h"
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

  Expected<std::optional<MeasureResult>> measureLibrary(const TuningTask& task) override {
    std::optional<TaskLibraryCall> call = libraryCallOf(task);
    if (!call) return std::optional<MeasureResult>();
    LibraryMatch& match = call->match;
    match.call.name = "tune_library";
    MeasureResult r;
    r.library = runtime::libraryName(match.call.routine);
    r.libraryVersion = installedLibraryVersion(r.library);
    KILN_ASSIGN(KernelArguments args, bindLibraryArguments(*task.groups.front(), match, reference_));
    KILN_ASSIGN(KernelOutcome outcome, measureCudaLibraryCall(match.call, args.tensors, args.expected, options_));
    take(outcome, r);
    if (call->split && r.ok()) KILN_TRY(addTail(call->split->tail, r));
    return std::optional<MeasureResult>(std::move(r));
  }

 private:
  Status lower(const KernelGroup& group, const Config& config, const std::string& name, CudaCandidate& c) const override {
    KILN_ASSIGN(static_cast<CudaCandidateSource&>(c), cudaCandidate(group, &config, name));
    return Status::ok();
  }

  Status build(CudaCandidate& c) const override {
    KILN_ASSIGN(CudaBinary binary, compileCubin(c.source.source, c.source.name + ".cu", int(sm_)));
    c.cubin = std::move(binary.cubin);
    return Status::ok();
  }

  Status runAndTime(CudaCandidate& c, KernelArguments& args, MeasureResult& r) const override {
    KILN_ASSIGN(KernelOutcome outcome, measureCudaKernel(c.cubin, launchOf(c.source, args), args.tensors, args.expected, options_));
    take(outcome, r);
    return Status::ok();
  }

  /// The launch of `source` on `args` (their run-time extents after the buffers).
  static runtime::CudaKernelLaunch launchOf(const CudaKernel& source, const KernelArguments& args) {
    runtime::CudaKernelLaunch launch;
    launch.entry = source.name;
    launch.extents = args.extents;
    for (size_t d = 0; d < 3; ++d) {
      launch.grid[d] = uint32_t(source.grid[d]);
      launch.block[d] = uint32_t(source.block[d]);
    }
    return launch;
  }

  /// A split group's rest after its library call (`tail`, kernel tune_library_tail, default schedule): built, checked
  /// and timed like a candidate, its time added to `r`'s, or `r` marked with why it failed.
  Status addTail(const KernelGroup& tail, MeasureResult& r) const {
    CudaCandidate c;
    Expected<CudaCandidateSource> source = cudaCandidate(tail, nullptr, "tune_library_tail");
    if (!source) {
      fail(r, MeasureStatus::LowerError, "the rest after the library call: " + source.error().message());
      return Status::ok();
    }
    static_cast<CudaCandidateSource&>(c) = std::move(*source);
    if (Status s = build(c); !s.isOk()) {
      fail(r, MeasureStatus::CompileError, "the rest after the library call: " + s.error().message());
      return Status::ok();
    }
    KILN_ASSIGN(KernelArguments args, bindKernelArguments(tail, c.lowered, reference_));
    KILN_ASSIGN(KernelOutcome outcome, measureCudaKernel(c.cubin, launchOf(c.source, args), args.tensors, args.expected, options_));
    const double callMs = r.ms, callError = r.maxError;
    take(outcome, r);
    if (r.ok()) r.ms += callMs;
    r.maxError = std::max(r.maxError, callError);
    return Status::ok();
  }

  std::string device_;
  uint32_t sm_;
};

}  // namespace

Expected<KernelArguments> bindLibraryArguments(const KernelGroup& group, const LibraryMatch& match,
                                               const std::map<std::string, Tensor>& reference) {
  KernelArguments b;
  for (size_t i = 0; i < match.operands.size(); ++i) {
    auto it = reference.find(match.operands[i]->name());
    if (it == reference.end())
      return makeError(ErrorCode::Internal, "tuning ", group.name(), ": no reference value for ", match.operands[i]->name());
    if (i + 1 < match.operands.size()) {
      b.tensors.push_back(it->second.clone());
      continue;
    }
    Tensor out = Tensor::zeros(it->second.dtype(), it->second.dims());
    std::memset(out.mutableRawData(), 0xff, out.byteSize());  // NaN bits: a missed store cannot pass
    b.tensors.push_back(std::move(out));
    b.expected.emplace_back(i, &it->second);
  }
  return b;
}

Expected<CudaCandidateSource> cudaCandidate(const KernelGroup& group, const Config* config, const std::string& name) {
  CudaCandidateSource c;
  KILN_ASSIGN(c.lowered, lowerGroup(group, KernelTarget::Gpu, config));
  c.lowered.kernel.name = name;
  KILN_ASSIGN(c.source, emitCuda(c.lowered.kernel, fusedOpsOf(group)));
  return c;
}

std::string cudaToolkitName() { return std::string("kiln ") + KILN_VERSION + ", NVRTC " + nvrtcVersion(); }

Expected<std::unique_ptr<Measurer>> createCudaMeasurer(std::map<std::string, Tensor> reference, MeasureOptions options) {
  // CUDA events time each candidate on the GPU alone, where a shared host's drift does not reach.
  if (options.interleave) return makeError(ErrorCode::InvalidArgument, "interleaved timing is supported on the cpu target only");
  KILN_ASSIGN(auto device, runtime::CudaKernelTimer::device());
  return std::unique_ptr<Measurer>(new CudaMeasurer(std::move(reference), options, device.first, device.second));
}

}  // namespace kiln::tune
