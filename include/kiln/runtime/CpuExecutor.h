//===- kiln/runtime/CpuExecutor.h - Runs an Executable on the CPU -*- C++ -*-===//
//
// Binds an Executable's kernel steps to entry points (from a loaded object or
// the JIT), parses its host steps' graphs, and runs them in order: inputs are
// checked against the declared types, each run takes an arena for
// intermediates from a free list (so concurrent runs of one executor are
// safe), dynamic values live for the run, outputs are fresh tensors. Weights
// that are not 64-byte aligned (initializers in their protobuf strings) are
// copied to aligned storage once, when the executor is created.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <memory>
#include <mutex>
#include <vector>

#include "kiln/runtime/Executable.h"

namespace kiln::runtime {

class HostProgram;

using KernelEntry = void (*)(void* const* args);

/// When one executed step ran, in ms from the start of run().
struct StepTiming {
  uint32_t step = 0;
  double startMs = 0, ms = 0;
};

class CpuExecutor {
 public:
  /// `entries` holds one entry point per exe->kernelNames.
  ~CpuExecutor();
  static Expected<std::unique_ptr<CpuExecutor>> create(std::shared_ptr<const Executable> exe,
                                                       std::vector<KernelEntry> entries);
  /// Runs once; inputs in model order. Thread-safe. With `stepMs`, the time of
  /// each step is added to it (resized to the step count); with `timeline`, each
  /// executed step is appended with its start and duration.
  Expected<std::vector<Tensor>> run(const std::vector<Tensor>& inputs, std::vector<double>* stepMs = nullptr,
                                    std::vector<StepTiming>* timeline = nullptr) const;
  const Executable& executable() const { return *exe_; }
  const std::vector<KernelEntry>& entries() const { return entries_; }

 private:
  CpuExecutor() = default;
  std::shared_ptr<const Executable> exe_;
  std::vector<KernelEntry> entries_;
  std::vector<Tensor> weights_;  ///< exe_->weights, each 64-byte aligned
  std::vector<std::unique_ptr<HostProgram>> hostPrograms_;
  mutable std::mutex arenasMutex_;
  mutable std::vector<std::shared_ptr<Buffer>> freeArenas_;
};

}  // namespace kiln::runtime
