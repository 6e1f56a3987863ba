//===- lib/ir/ShapeInference.cpp - Static inference driver -----------------===//
//
// StaticInferenceContext adapts a Node to the InferenceContext interface:
// operand types come from the IR, known values from Constant nodes and from
// values propagated earlier in the same walk. After a node's static rule has
// typed its results, the symbolic rules (SymbolicShapes.h) refine the dims
// it could not know.
//
//===----------------------------------------------------------------------===//
#include "kiln/ir/ShapeInference.h"

#include <unordered_map>

#include "SymbolicShapes.h"
#include "kiln/ir/OpSchema.h"

namespace kiln::ir {

/// What one walk carries from node to node.
struct ShapeInferencer::State {
  symbolic::KnownValues known;
  symbolic::KnownDimValues dimValues;
  symbolic::SymbolRanges ranges;
};

namespace {

using State = ShapeInferencer::State;
using symbolic::lookupKnown;

class StaticInferenceContext final : public InferenceContext {
 public:
  StaticInferenceContext(Node& node, State& state)
      : InferenceContext(node), node_(node), state_(state), results_(node.numOutputs()) {}

  const Type& inputType(size_t i) const override {
    static const Type kUndefined;
    Value* v = node_.input(i);
    return v ? v->type() : kUndefined;
  }
  const Tensor* inputValue(size_t i) const override { return lookupKnown(node_.input(i), state_.known); }
  void setOutputType(size_t i, Type type) override { results_[i] = std::move(type); }
  void setOutputValue(size_t i, Tensor value) override { state_.known[node_.output(i)] = std::move(value); }
  Status inferSubgraph(Graph& graph, const std::vector<Type>& inputTypes) override;

  /// Refines the static results symbolically and sets them on the node.
  Status finish() {
    for (size_t i = 0; i < results_.size(); ++i)
      if (!results_[i]) return Error(ErrorCode::Internal, "inference did not type result " + std::to_string(i));
    symbolic::refine(node_, results_, state_.known, state_.dimValues, state_.ranges);
    for (size_t i = 0; i < results_.size(); ++i) {
      node_.output(i)->setType(std::move(*results_[i]));
    }
    return Status::ok();
  }

 private:
  Node& node_;
  State& state_;
  std::vector<std::optional<Type>> results_;
};

Status inferNode(Node& node, State& state) {
  StaticInferenceContext ctx(node, state);
  Status s = node.schema().infer(ctx);
  if (s.isOk()) s = ctx.finish();
  if (!s.isOk()) s.error().atNode(node.displayName(), node.qualifiedOpType());
  return s;
}

Status inferGraph(Graph& graph, State& state) {
  for (Node* node : graph.nodes()) KILN_TRY(inferNode(*node, state));
  return Status::ok();
}

Status StaticInferenceContext::inferSubgraph(Graph& graph, const std::vector<Type>& inputTypes) {
  if (inputTypes.size() != graph.inputs().size())
    return Error(ErrorCode::ShapeMismatch, "subgraph '" + graph.name() + "' has " +
                                               std::to_string(graph.inputs().size()) + " inputs, expected " +
                                               std::to_string(inputTypes.size()));
  for (size_t i = 0; i < inputTypes.size(); ++i) {
    Value* in = graph.inputs()[i];
    // Keep a declared element type where the operand's is unknown.
    Type t = inputTypes[i];
    if (t.isTensor() && t.tensor().dtype() == DType::Undefined && in->type().isTensor())
      t = in->type();
    in->setType(t);
  }
  return inferGraph(graph, state_);
}

}  // namespace

ShapeInferencer::ShapeInferencer() : state_(std::make_unique<State>()) {}
ShapeInferencer::~ShapeInferencer() = default;
Status ShapeInferencer::inferNode(Node& node) { return kiln::ir::inferNode(node, *state_); }
Status ShapeInferencer::inferGraph(Graph& graph) { return kiln::ir::inferGraph(graph, *state_); }
const Tensor* ShapeInferencer::knownValue(const Value* v) const { return lookupKnown(v, state_->known); }
void ShapeInferencer::setDimRanges(const std::map<std::string, DimRange>& ranges) {
  state_->ranges.clear();
  for (const auto& [name, r] : ranges) state_->ranges[name] = {r.min, r.max};
}

Status inferTypes(Graph& graph, const std::map<std::string, DimRange>& ranges) {
  ShapeInferencer inferencer;
  inferencer.setDimRanges(ranges);
  return inferencer.inferGraph(graph);
}

Status inferNodeTypes(Node& node) {
  State state;
  return inferNode(node, state);
}

}  // namespace kiln::ir
