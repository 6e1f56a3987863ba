//===- kiln/codegen/KernelCheck.h - Kernel-by-kernel verification -*- C++ -*-===//
//
// Debugging aid and test oracle: evaluates the graph node by node with the
// reference interpreter's kernels, then runs every compiled kernel alone on
// exactly the values its group reads, and compares what it writes with the
// interpreter's values. A wrong kernel is named directly instead of showing
// up as a wrong model output.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "kiln/codegen/Compiler.h"
#include "kiln/support/Tensor.h"

namespace kiln::codegen {

struct KernelCheckResult {
  std::string kernel;       ///< kernel name (k3_...)
  std::string templateName;
  std::string worstValue;   ///< the output with the largest error
  double maxAbsError = 0;
  double maxRelError = 0;   ///< |a-b| / max(1, |b|)
};

/// Every tensor value of `graph` (by value name) computed node by node with
/// the reference interpreter's kernels from `inputs` (graph input order).
Expected<std::map<std::string, Tensor>> referenceValues(ir::Graph& graph, const std::vector<Tensor>& inputs);

/// Runs distinct kernel `kernel` (executable.kernelNames order) on `args`.
using KernelRunner = std::function<Status(size_t kernel, void* const* args)>;

/// Checks every kernel step of a lowered model against the interpreter, with
/// the given graph inputs; `run` executes a kernel (native code, or CUDA C
/// under the emulation harness).
Expected<std::vector<KernelCheckResult>> checkKernels(ir::Graph& graph, const LoweredModel& model,
                                                      const std::vector<Tensor>& inputs, const KernelRunner& run);
/// The same for a compiled CPU model.
Expected<std::vector<KernelCheckResult>> checkKernels(ir::Graph& graph, const CpuModel& model,
                                                      const std::vector<Tensor>& inputs);

}  // namespace kiln::codegen
