//===- lib/ir/ShapeInference.cpp - Static inference driver -----------------===//
//
// StaticInferenceContext adapts a Node to the InferenceContext interface:
// operand types come from the IR, known values from Constant nodes and from
// values propagated earlier in the same walk.
//
//===----------------------------------------------------------------------===//
#include "kiln/ir/ShapeInference.h"

#include <unordered_map>

#include "kiln/ir/OpSchema.h"

namespace kiln::ir {

struct ShapeInferencer::State {
  std::unordered_map<const Value*, Tensor> known;
};

namespace {

using KnownValues = std::unordered_map<const Value*, Tensor>;

const Tensor* lookupKnown(const Value* v, const KnownValues& known) {
  if (!v) return nullptr;
  if (Node* p = v->producer(); p && p->op() == ir::Op::Constant && p->hasAttr("value"))
    return &p->getTensor("value");
  auto it = known.find(v);
  return it == known.end() ? nullptr : &it->second;
}

class StaticInferenceContext final : public InferenceContext {
 public:
  StaticInferenceContext(Node& node, KnownValues& known)
      : InferenceContext(node), node_(node), known_(known), results_(node.numOutputs()) {}

  const Type& inputType(size_t i) const override {
    static const Type kUndefined;
    Value* v = node_.input(i);
    return v ? v->type() : kUndefined;
  }
  const Tensor* inputValue(size_t i) const override { return lookupKnown(node_.input(i), known_); }
  void setOutputType(size_t i, Type type) override { results_[i] = std::move(type); }
  void setOutputValue(size_t i, Tensor value) override { known_[node_.output(i)] = std::move(value); }
  Status inferSubgraph(Graph& graph, const std::vector<Type>& inputTypes) override;

  Status finish() {
    for (size_t i = 0; i < results_.size(); ++i) {
      if (!results_[i]) return Error(ErrorCode::Internal, "inference did not type result " + std::to_string(i));
      node_.output(i)->setType(std::move(*results_[i]));
    }
    return Status::ok();
  }

 private:
  Node& node_;
  KnownValues& known_;
  std::vector<std::optional<Type>> results_;
};

Status inferNode(Node& node, KnownValues& known) {
  StaticInferenceContext ctx(node, known);
  Status s = node.schema().infer(ctx);
  if (s.isOk()) s = ctx.finish();
  if (!s.isOk()) s.error().atNode(node.displayName(), node.qualifiedOpType());
  return s;
}

Status inferGraph(Graph& graph, KnownValues& known) {
  for (Node* node : graph.nodes()) KILN_TRY(inferNode(*node, known));
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
  return inferGraph(graph, known_);
}

}  // namespace

ShapeInferencer::ShapeInferencer() : state_(std::make_unique<State>()) {}
ShapeInferencer::~ShapeInferencer() = default;
Status ShapeInferencer::inferNode(Node& node) { return kiln::ir::inferNode(node, state_->known); }
Status ShapeInferencer::inferGraph(Graph& graph) { return kiln::ir::inferGraph(graph, state_->known); }
const Tensor* ShapeInferencer::knownValue(const Value* v) const { return lookupKnown(v, state_->known); }

Status inferTypes(Graph& graph) {
  KnownValues known;
  return inferGraph(graph, known);
}

Status inferNodeTypes(Node& node) {
  KnownValues known;
  return inferNode(node, known);
}

}  // namespace kiln::ir
