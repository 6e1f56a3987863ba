//===- kiln/runtime/Interpreter.h - The reference interpreter -----*- C++ -*-===//
//
// Executes any kiln graph on the CPU, simply and exactly: one kernel per op,
// shapes computed at run time (so data-dependent shapes and control flow just
// work), intermediate values freed after their last use. It is the oracle every
// backend is compared with. Kernels compute f16/bf16 in float and accumulate
// float reductions in double.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kiln/ir/Graph.h"
#include "kiln/support/RuntimeValue.h"
#include "kiln/support/Status.h"

namespace kiln::runtime {

struct InterpreterOptions {
  /// Check every result against the IR's static type (catches inference bugs).
  bool checkStaticTypes = false;
  /// Seed of the generator behind random ops (RandomNormal, Dropout in training, ...).
  uint64_t seed = 0;
};

class Interpreter {
 public:
  explicit Interpreter(const ir::Graph& graph, InterpreterOptions options = {});
  ~Interpreter();
  Interpreter(const Interpreter&) = delete;
  Interpreter& operator=(const Interpreter&) = delete;

  /// Runs the graph; inputs in the order of graph.inputs(). Each input must
  /// match its declared type (unknown dims accept any size).
  Expected<std::vector<RuntimeValue>> run(const std::vector<RuntimeValue>& inputs);
  /// Runs with inputs by name (every graph input must be given).
  Expected<std::vector<RuntimeValue>> run(const std::map<std::string, RuntimeValue>& inputs);

 private:
  friend Expected<std::vector<RuntimeValue>> evaluateNode(const ir::Node&, const std::vector<const RuntimeValue*>&);
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Runs one node's kernel on concrete operands (null entries for omitted
/// optional inputs) and returns its results; for passes that fold constants.
/// The node's subgraphs, if any, run as usual.
Expected<std::vector<RuntimeValue>> evaluateNode(const ir::Node& node, const std::vector<const RuntimeValue*>& inputs);

/// Names of the ops the interpreter has kernels for ("domain::Op" outside the default domain).
std::vector<std::string> interpreterKernelNames();

}  // namespace kiln::runtime
