//===- lib/runtime/interpreter/KernelContext.h - What a kernel sees -------===//
//
// A kernel gets the node (for attributes), its operand values, the result types
// inferred from the concrete operands, and services: allocation of results,
// execution of subgraphs (control flow) and a seeded random generator.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <functional>
#include <random>
#include <vector>

#include "kiln/ir/Node.h"
#include "kiln/ir/OpSchema.h"
#include "kiln/support/RuntimeValue.h"

namespace kiln::runtime {

class KernelContext;
using KernelFn = Status (*)(KernelContext& ctx);
using SubgraphRunner =
    std::function<Expected<std::vector<RuntimeValue>>(const ir::Graph&, const std::vector<RuntimeValue>&)>;

class KernelContext {
 public:
  KernelContext(const ir::Node& node, std::vector<const RuntimeValue*> inputs, std::vector<ir::Type> outputTypes,
                SubgraphRunner runner, std::mt19937_64& rng)
      : node_(node), inputs_(std::move(inputs)), outputTypes_(std::move(outputTypes)),
        outputs_(outputTypes_.size()), runner_(std::move(runner)), rng_(rng) {}

  const ir::Node& node() const { return node_; }
  size_t numInputs() const { return inputs_.size(); }
  bool hasInput(size_t i) const { return i < inputs_.size() && inputs_[i] != nullptr; }
  const RuntimeValue& value(size_t i) const { return *inputs_[i]; }
  /// Operand i as a tensor (the interpreter checks kinds before calling a kernel).
  const Tensor& input(size_t i) const { return inputs_[i]->tensor(); }

  size_t numOutputs() const { return outputs_.size(); }
  /// Result type inferred from the operands (may have unknown dims for
  /// data-dependent results, which the kernel then decides).
  const ir::Type& outputType(size_t i) const { return outputTypes_[i]; }
  /// Allocates result i with its inferred (static) type.
  Tensor& allocate(size_t i);
  /// Allocates result i with an explicit type.
  Tensor& allocate(size_t i, DType dtype, const Dims& dims);
  void setOutput(size_t i, RuntimeValue v) { outputs_[i] = std::move(v); }
  std::vector<RuntimeValue>& outputs() { return outputs_; }

  Expected<std::vector<RuntimeValue>> runSubgraph(const ir::Graph& g, const std::vector<RuntimeValue>& inputs) {
    return runner_(g, inputs);
  }
  std::mt19937_64& rng() { return rng_; }

 private:
  const ir::Node& node_;
  std::vector<const RuntimeValue*> inputs_;
  std::vector<ir::Type> outputTypes_;
  std::vector<RuntimeValue> outputs_;
  SubgraphRunner runner_;
  std::mt19937_64& rng_;
};

/// Kernel table, built once by registerAllKernels().
class KernelRegistry {
 public:
  static const KernelRegistry& global();
  KernelFn find(const std::string& qualifiedOp) const;
  void add(const std::string& qualifiedOp, KernelFn fn);
  std::vector<std::string> names() const;

 private:
  std::map<std::string, KernelFn> kernels_;
};

}  // namespace kiln::runtime
