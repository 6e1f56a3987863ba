//===- kiln/runtime/CudaExecutor.h - Runs an Executable on a GPU --*- C++ -*-===//
//
// Loads a CUDA executable onto one device (KILN_CUDA_DEVICE, default 0)
// through the driver API: each kernel's cubin for the device's architecture
// (or its PTX, JIT-compiled by the driver, on a newer GPU), weights
// uploaded once, device buffers for inputs, outputs and the arena. A run
// copies inputs in, launches the steps in order on one stream, runs host
// steps (reference kernels) on copies of their operands, and copies outputs
// out. Runs of one executor are serialized (one device arena). No driver or
// no device is KE5005; an architecture the artifact has no code for is
// KE5004; device memory the model does not fit in KE5007; a failing
// driver call KE5006. Kernel and library steps replay as CUDA graphs (see
// CudaExecutor.cpp; KILN_CUDA_GRAPHS=0 turns them off). profile() times
// every kernel step on the device with CUDA events around its launch (kiln
// bench --profile): kernels launched one by one, not as graphs, so the
// per-step times add up to more than a graph replay takes; each library
// step replayed from a graph of its own call (where the library allows
// capture), so its time is the device's, not the call's host-side cost.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <array>
#include <memory>
#include <string>
#include <vector>

#include "kiln/runtime/Executable.h"

namespace kiln::runtime {

/// One kernel (or library) step's mean device time over the runs of CudaExecutor::profile.
struct KernelStepTime {
  uint32_t step = 0;   ///< index in Executable::steps
  std::string kernel;  ///< entry point (kernelNames), or the library call's name
  std::array<uint32_t, 3> grid{1, 1, 1}, block{1, 1, 1};  ///< zeros for a library step (the library chooses)
  double meanMs = 0;
};

class CudaExecutor {
 public:
  ~CudaExecutor();
  static Expected<std::unique_ptr<CudaExecutor>> create(std::shared_ptr<const Executable> exe);
  /// Runs once; inputs in model order. Thread-safe (runs are serialized).
  Expected<std::vector<Tensor>> run(const std::vector<Tensor>& inputs) const;
  /// Runs `runs` times (>= 1) with each kernel and library step timed; one entry per such step, in step order.
  Expected<std::vector<KernelStepTime>> profile(const std::vector<Tensor>& inputs, int runs) const;
  /// The driver's device name and SM number ("<name> (sm_90)").
  const std::string& device() const;
  /// Device memory the loaded model holds (arena, weights, inputs, outputs).
  uint64_t deviceBytes() const;
  /// How a run launches: "1 CUDA graph per run (25 library calls captured
  /// in them)", or the library calls between the graphs and why their
  /// capture was refused, or graphs off.
  std::string graphSummary() const;
  /// The SM number (90 for sm_90) of the device a CUDA executor would use
  /// (KILN_CUDA_DEVICE); KE5005 without a driver or device.
  static Expected<uint32_t> deviceArchitecture();

 private:
  CudaExecutor();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kiln::runtime
