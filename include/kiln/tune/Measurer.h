//===- kiln/tune/Measurer.h - Timing candidate schedules ----------*- C++ -*-===//
//
// A measurer builds a task's candidate configurations (in parallel), checks
// each one's outputs against the reference interpreter on the model's real
// intermediate values, and times the valid ones: warm-up runs, then
// `repeats` samples, each long enough to be timed reliably (the kernel runs
// several times per sample when it is short), and the median per run. A
// candidate that does not lower, does not compile or computes a wrong
// result is reported with its status and costs no timing. The CPU measurer
// times in this process with the kernel thread pool pinned to cores; the
// CUDA measurer with CUDA events on the GPU (optionally flushing the L2
// cache before each timed launch); the replay measurer looks results up in
// a table measured earlier. With MeasureOptions::interleave the CPU
// measurer times a batch in interleaved rounds next to the default
// configuration (the anchor), for tables that must outlast a machine's
// drift; the CUDA measurer refuses it.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kiln/codegen/cuda/CudaEmitter.h"
#include "kiln/codegen/cuda/Nvrtc.h"
#include "kiln/codegen/LibraryTactics.h"
#include "kiln/ir/Graph.h"
#include "kiln/support/Tensor.h"
#include "kiln/tune/KernelTiming.h"
#include "kiln/tune/TuningTask.h"

namespace kiln::tune {


struct MeasureResult {
  codegen::Config config;
  MeasureStatus status = MeasureStatus::Ok;
  double ms = 0;         ///< median time of one run (Ok only)
  double buildMs = 0;    ///< lowering + code generation
  double maxError = 0;   ///< worst relative error vs the reference
  double anchorMs = 0;   ///< MeasureOptions::interleave: the default configuration's time in the same rounds (0: none)
  std::string error;     ///< why it is not Ok
  std::string library;   ///< a library call's routine ("cuBLASLt", "cuDNN"; config empty), "" for a generated kernel
  std::string libraryVersion;  ///< the version of that library it ran on ("" when it did not load)
  bool ok() const { return status == MeasureStatus::Ok; }
};

class Measurer {
 public:
  virtual ~Measurer() = default;
  /// What the timings are valid for, part of the tuning database key:
  /// target ("cpu"), device (CPU model or GPU name) and toolkit (kiln, LLVM / CUDA versions).
  virtual std::string target() const = 0;
  virtual std::string device() const = 0;
  virtual std::string toolkit() const = 0;
  /// Measures `configs` of `task` (results in the same order).
  virtual Expected<std::vector<MeasureResult>> measure(const TuningTask& task, const std::vector<codegen::Config>& configs) = 0;
  /// Measures the library call that could run `task`'s kernel instead (the
  /// CUDA measurer: cuBLASLt or cuDNN, as a library tactic would call it,
  /// without TF32), checked and timed like a candidate; none where the target
  /// has no library tactics or the kernel has no such call.
  virtual Expected<std::optional<MeasureResult>> measureLibrary(const TuningTask& task) {
    (void)task;
    return std::optional<MeasureResult>();
  }
};

/// The arguments of one run of a lowered kernel of `group`: copies of the
/// reference values it reads (packed constants packed, code generation's
/// tables, zeroed workspaces) and NaN-filled outputs, each with the
/// reference value it must end up holding.
struct KernelArguments {
  std::vector<Tensor> tensors;  ///< one per kernel parameter
  ExpectedOutputs expected;     ///< output argument, its reference value
  std::vector<int64_t> extents; ///< the kernel's run-time extents (dynamic dims at their opt values)
  /// The CPU entry point's arguments: each tensor's data, then each extent.
  std::vector<void*> pointers();
};
Expected<KernelArguments> bindKernelArguments(const codegen::KernelGroup& group, const codegen::LoweredKernel& lowered,
                                              const std::map<std::string, Tensor>& reference);

/// The operands of `match` (a library call computing `group`): copies of
/// the reference values, the result (last) NaN-filled with the reference
/// value it must end up holding.
Expected<KernelArguments> bindLibraryArguments(const codegen::KernelGroup& group, const codegen::LibraryMatch& match,
                                               const std::map<std::string, Tensor>& reference);
/// The CPU measurer for kernels of `graph`; `reference` holds every value of
/// the graph (codegen::referenceValues) on the inputs the tuner chose.
Expected<std::unique_ptr<Measurer>> createCpuMeasurer(std::map<std::string, Tensor> reference, MeasureOptions options);
/// A GPU candidate of `group`: lowered with `config` (null: its template's
/// default), its kernel named `name`, printed as CUDA C (what the CUDA
/// measurer compiles and batch mode exports).
struct CudaCandidateSource {
  codegen::LoweredKernel lowered;
  codegen::CudaKernel source;
};
Expected<CudaCandidateSource> cudaCandidate(const codegen::KernelGroup& group, const codegen::Config* config,
                                            const std::string& name);

/// The GPU measurer (target "cuda") on the device KILN_CUDA_DEVICE names
/// (default 0), compiling for its architecture; KE5005 without a driver or
/// device, an invalid-argument error for MeasureOptions::interleave.
Expected<std::unique_ptr<Measurer>> createCudaMeasurer(std::map<std::string, Tensor> reference, MeasureOptions options);

/// A measurer that replays the tuning database `table` (which must hold
/// every configuration a strategy proposes for `tasks`' kernels, e.g. a grid
/// run over the whole space): the median of a configuration's valid records
/// of `target`, measured on the device of the first such record. Where
/// every valid record of a kernel carries its anchor's time (measured with
/// MeasureOptions::interleave), a configuration's time is instead the
/// median of its records' time / anchor ratios times the median anchor of
/// the kernel's records: the machine's drift between batches divided out.
/// For comparing strategies on one noise-free oracle (kiln tune --replay).
Expected<std::unique_ptr<Measurer>> createReplayMeasurer(const std::string& table, const TaskSet& tasks,
                                                         const std::string& target);

}  // namespace kiln::tune
