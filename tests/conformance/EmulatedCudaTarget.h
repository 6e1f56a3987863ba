//===- tests/conformance/EmulatedCudaTarget.h - Cases on the CUDA target -*- C++ -*-===//
//
// Runs a conformance case through the CUDA target without a GPU: the
// default-level pipeline, a CUDA artifact of generated kernels only (library
// tactics off) for sm_90, whose kernels' exact CUDA C the emulation harness
// builds for the CPU; the runtime's CudaExecutor then runs the artifact on
// the emulated driver (KILN_CUDA_DRIVER), host steps included.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <string>
#include <vector>

#include "kiln/ir/Module.h"
#include "kiln/support/Tensor.h"

namespace kiln::conformance {

struct EmulatedRun {
  std::vector<Tensor> outputs;
  bool hostSteps = false;  ///< some of the case ran as host steps (reference kernels)
};

/// Makes the runtime load `driver` (libkiln_emulated_cuda.so) as its CUDA driver; call before any run.
void useEmulatedDriver(const std::string& driver);

/// Compiles `module` (its graph is changed) for the CUDA target, builds its
/// kernels' emulation in `workDir` and runs it on `inputs`.
Expected<EmulatedRun> runOnEmulatedCuda(ir::Module& module, const std::vector<Tensor>& inputs,
                                        const std::string& workDir);

}  // namespace kiln::conformance
