//===- lib/runtime/core/HostProgram.h - Running a host step --------*- C++ -*-===//
//
// A host step's graph, parsed from the artifact's text IR once at load, run
// with the reference interpreter on the step's operands. Operand and result
// tensors are checked against the graph's declared inputs and the buffers
// they go to by the caller (CpuExecutor). Private to lib/runtime/core.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <memory>
#include <vector>

#include "kiln/ir/Module.h"
#include "kiln/runtime/Executable.h"
#include "kiln/runtime/Interpreter.h"

namespace kiln::runtime {

class HostProgram {
 public:
  /// Parses and checks `graph` (ArtifactCorrupt when its text does not parse
  /// or does not have the declared inputs and outputs).
  static Expected<std::unique_ptr<HostProgram>> create(const HostGraph& graph);
  /// Runs once (thread-safe); results in the graph's output order.
  Expected<std::vector<Tensor>> run(std::vector<Tensor> inputs) const;
  const std::string& name() const { return name_; }

 private:
  HostProgram() = default;
  std::string name_;
  std::unique_ptr<ir::Module> module_;
  std::unique_ptr<Interpreter> interpreter_;
};

}  // namespace kiln::runtime
