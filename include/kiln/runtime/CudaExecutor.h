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
// KE5004; a failing driver call KE5006.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kiln/runtime/Executable.h"

namespace kiln::runtime {

class CudaExecutor {
 public:
  ~CudaExecutor();
  static Expected<std::unique_ptr<CudaExecutor>> create(std::shared_ptr<const Executable> exe);
  /// Runs once; inputs in model order. Thread-safe (runs are serialized).
  Expected<std::vector<Tensor>> run(const std::vector<Tensor>& inputs) const;
  /// "NVIDIA H100 80GB HBM3 (sm_90)".
  const std::string& device() const;

 private:
  CudaExecutor();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kiln::runtime
