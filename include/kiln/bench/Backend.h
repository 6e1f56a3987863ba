//===- kiln/bench/Backend.h - What a model can be run on ---------*- C++ -*-===//
//
// A backend takes an imported module, prepares it (passes, code generation,
// whatever it needs; each phase timed) and then runs it repeatedly. `kiln
// bench` and `kiln run` drive every backend through this interface, so a new
// target (CPU code generation, CUDA) becomes benchmarkable by registering
// itself in createBackend() and nothing else. Today: the reference
// interpreter.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kiln/bench/KernelProfile.h"
#include "kiln/kiln.h"
#include "kiln/ir/Module.h"
#include "kiln/support/RuntimeValue.h"
#include "kiln/support/Status.h"

namespace kiln::bench {

/// Compile time by phase in milliseconds. A phase the backend does not have
/// (the interpreter generates no code) stays empty and is written as null.
struct CompilePhases {
  std::optional<double> importMs, passesMs, codegenMs;
  double totalMs() const { return importMs.value_or(0) + passesMs.value_or(0) + codegenMs.value_or(0); }
};

struct BackendOptions {
  int threads = 0;    ///< 0: the backend's default
  uint64_t seed = 0;  ///< for random ops
  bool allowTf32 = false;  ///< cuda: f32 matmuls and convs on TF32 tensor cores
  std::string libraryTactics = "auto";  ///< cuda: off | auto | all (codegen/LibraryTactics.h); auto as kiln compile
  std::string tuningDb;  ///< cpu, cuda: apply the schedules of this tuning database (kiln tune)
};

class Backend {
 public:
  virtual ~Backend() = default;
  /// Registered name ("interpreter").
  virtual std::string name() const = 0;
  /// Threads a run uses.
  virtual int threads() const = 0;
  /// After prepare() with a tuning database: what it applied (TuningApplication::summary); "" otherwise.
  virtual std::string tuningSummary() const { return ""; }
  /// After prepare(), how a run launches on the device (the CUDA backend's graphs); "" for host backends.
  virtual std::string launchSummary() const { return ""; }
  /// True when runs execute on a GPU (the harness then samples NVML).
  virtual bool usesGpu() const { return false; }
  /// Takes the module and prepares to run it; fills the phases it has.
  virtual Status prepare(std::unique_ptr<ir::Module> module, CompilePhases& phases) = 0;
  /// Runs once; inputs in the order of the graph's inputs.
  virtual Expected<std::vector<RuntimeValue>> run(const std::vector<RuntimeValue>& inputs) = 0;
  /// Peak device memory of the runs so far, for device backends.
  virtual std::optional<uint64_t> peakDeviceBytes() const { return std::nullopt; }
  /// Each kernel step's device time, the mean of `runs` runs (kiln bench
  /// --profile); KE4003 for a backend without device kernels to time.
  virtual Expected<std::vector<KernelTime>> profileKernels(const std::vector<RuntimeValue>& inputs, int runs) {
    (void)inputs, (void)runs;
    return noKernelsToProfile(name());
  }
  /// One run with each step timed (kiln bench --trace): the cpu backend and
  /// CPU artifacts; KE4003 for a backend without steps to trace.
  virtual Expected<RunTrace> traceRun(const std::vector<RuntimeValue>& inputs) {
    (void)inputs;
    return Error(ErrorCode::InvalidArgument,
                 "--trace times each step of compiled code: backend '" + name() + "' has none (use --backend cpu)");
  }
  /// KE4003: `backend` runs no device kernels for --profile to time.
  static Error noKernelsToProfile(const std::string& backend) {
    return Error(ErrorCode::InvalidArgument, "--profile times GPU kernels: backend '" + backend + "' has none (use --backend cuda)");
  }
};

/// The tensors of `inputs`, for backends that take tensors only (KE3001 otherwise).
Expected<std::vector<Tensor>> tensorInputs(const std::vector<RuntimeValue>& inputs, const std::string& backend);
/// Results as runtime values.
std::vector<RuntimeValue> tensorValues(std::vector<Tensor> tensors);

/// Names createBackend() accepts.
std::vector<std::string> backendNames();

/// A fresh backend; KE4003 (invalid-argument) for an unknown name or an
/// option the backend cannot honour.
Expected<std::unique_ptr<Backend>> createBackend(const std::string& name, const BackendOptions& options);

}  // namespace kiln::bench
