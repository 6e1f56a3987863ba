//===- tests/emulation/CudaEmulator.h - Run generated CUDA C on the CPU ---===//
//
// The CPU emulation harness: builds generated CUDA kernels, their exact
// source files included unchanged, with the host C++ compiler and
// cuda_emulation.h into one shared library (one compiler run for many
// kernels), loads it, and launches a kernel over its grid with buffers
// passed as in the runtime (one pointer per parameter). The library exports
// one C launcher per kernel, kiln_emulate_<name>(grid, block, args, error,
// errorSize) and its parameter count kiln_emulate_params_<name>, which the
// emulated driver (EmulatedDriver.cpp) also calls.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kiln/codegen/ModelLowering.h"
#include "kiln/codegen/cuda/CudaEmitter.h"
#include "kiln/codegen/cuda/Nvrtc.h"

namespace kiln::emulation {

/// The CUDA C of every kernel of `model`, as its cubins are compiled from it (emitCuda of each kernel).
Expected<std::vector<codegen::CudaKernel>> cudaSourcesOf(const codegen::LoweredModel& model);

class EmulatedKernels {
 public:
  /// Writes each kernel's source to `workDir`/<name>.cu, and compiles them.
  static Expected<std::unique_ptr<EmulatedKernels>> build(const std::vector<codegen::CudaKernel>& kernels,
                                                          const std::string& workDir);
  ~EmulatedKernels();
  /// Runs kernel `index` (in build order) over its grid.
  Status launch(size_t index, void* const* args) const;
  size_t size() const { return kernels_.size(); }
  /// The shared library holding the kernels and their launchers.
  const std::string& libraryPath() const { return libraryPath_; }

 private:
  EmulatedKernels() = default;
  using LaunchFn = int (*)(const unsigned* grid, const unsigned* block, void* const* args, char* error,
                          unsigned long errorSize);
  void* library_ = nullptr;
  std::vector<codegen::CudaKernel> kernels_;
  std::string libraryPath_;
  std::vector<LaunchFn> entries_;
};

}  // namespace kiln::emulation
