//===- lib/ir/Verifier.cpp - IR verifier ------------------------------------===//
//
// Scoped definedness, use-list consistency, schema conformance, name
// uniqueness and (optionally) type agreement with inference.
//
//===----------------------------------------------------------------------===//
#include "kiln/ir/Verifier.h"

#include <algorithm>
#include <unordered_set>

#include "kiln/ir/OpSchema.h"
#include "kiln/ir/ShapeInference.h"

namespace kiln::ir {
namespace {

Error verifyError(const Node* node, const std::string& message) {
  Error e(ErrorCode::IrVerify, message);
  if (node) e.atNode(node->displayName(), node->qualifiedOpType());
  return e;
}

bool dimsCompatible(const TensorType& a, const TensorType& b) {
  if (a.dtype() != DType::Undefined && b.dtype() != DType::Undefined && a.dtype() != b.dtype()) return false;
  if (!a.hasRank() || !b.hasRank()) return true;
  if (a.rank() != b.rank()) return false;
  for (int64_t i = 0; i < a.rank(); ++i)
    if (a.dim(i) >= 0 && b.dim(i) >= 0 && a.dim(i) != b.dim(i)) return false;
  return true;
}

class Verifier {
 public:
  explicit Verifier(const VerifyOptions& options) : options_(options) {}

  Status run(const Graph& graph) {
    scopes_.emplace_back();  // (subgraphs push more: always use scopes_.back())
    for (Value* in : graph.inputs()) {
      KILN_TRY(claim(in, nullptr));
      if (in->graph() != &graph) return verifyError(nullptr, "input '" + in->name() + "' belongs to another graph");
      scopes_.back().insert(in);
    }
    for (Node* node : graph.nodes()) {
      if (node->graph() != &graph) return verifyError(node, "node is listed in a graph it does not belong to");
      KILN_TRY(checkNodeAgainstSchema(*node));
      for (size_t i = 0; i < node->numInputs(); ++i) {
        Value* v = node->input(i);
        if (!v) continue;
        if (!isDefined(v))
          return verifyError(node, "operand " + std::to_string(i) + " '" + v->name() +
                                       "' is not defined before its use");
        Use u{node, uint32_t(i), nullptr};
        if (std::count(v->uses().begin(), v->uses().end(), u) != 1)
          return verifyError(node, "use list of '" + v->name() + "' does not record operand " + std::to_string(i));
      }
      for (Graph* sub : node->subgraphs()) {
        if (sub->parent() != &graph || sub->parentNode() != node)
          return verifyError(node, "subgraph '" + sub->name() + "' is not attached to this node");
        KILN_TRY(run(*sub));
      }
      for (size_t i = 0; i < node->numOutputs(); ++i) {
        Value* out = node->output(i);
        if (out->producer() != node || out->index() != i)
          return verifyError(node, "result " + std::to_string(i) + " does not point back to its node");
        KILN_TRY(claim(out, node));
        for (const Use& u : out->uses()) {
          bool ok = u.isGraphOutput() ? (u.index < u.outputOf->outputs().size() && u.outputOf->outputs()[u.index] == out)
                                      : (u.index < u.user->numInputs() && u.user->input(u.index) == out);
          if (!ok) return verifyError(node, "use list of '" + out->name() + "' holds a stale use");
        }
        scopes_.back().insert(out);
      }
      // Control-flow results are checked through their bodies; re-inferring the
      // node would re-type the bodies in place. A body node without any result
      // type belongs to a branch that cannot run with these shapes (inferIf).
      if (options_.checkTypes && node->subgraphs().empty() && !(scopes_.size() > 1 && untyped(*node)))
        KILN_TRY(checkTypes(*node));
    }
    for (size_t i = 0; i < graph.outputs().size(); ++i) {
      Value* v = graph.outputs()[i];
      if (!v || !isDefined(v))
        return verifyError(nullptr, "output " + std::to_string(i) + " of graph '" + graph.name() + "' is not defined");
    }
    scopes_.pop_back();
    return Status::ok();
  }

 private:
  bool isDefined(Value* v) const {
    for (const auto& s : scopes_)
      if (s.count(v)) return true;
    return false;
  }

  Status claim(Value* v, const Node* node) {
    if (!names_.insert(v->name()).second)
      return verifyError(node, "value name '" + v->name() + "' is defined twice");
    return Status::ok();
  }

  static bool untyped(const Node& node) {
    for (const Value* v : node.outputs())
      if (!(v->type() == Type())) return false;
    return true;
  }

  Status checkTypes(Node& node) {
    std::vector<Type> recorded;
    for (Value* v : node.outputs()) recorded.push_back(v->type());
    // Inference writes the result types; compare and restore the recorded ones.
    Status s = inferNodeTypes(node);
    std::vector<Type> inferred;
    for (Value* v : node.outputs()) inferred.push_back(v->type());
    for (size_t i = 0; i < recorded.size(); ++i) node.output(i)->setType(recorded[i]);
    if (!s.isOk()) return verifyError(&node, "type inference fails: " + s.error().message());
    for (size_t i = 0; i < recorded.size(); ++i)
      if (!typesCompatible(recorded[i], inferred[i]))
        return verifyError(&node, "result '" + node.output(i)->name() + "' has type " + recorded[i].str() +
                                      " but its operands imply " + inferred[i].str());
    return Status::ok();
  }

  const VerifyOptions& options_;
  std::vector<std::unordered_set<const Value*>> scopes_;
  std::unordered_set<std::string> names_;
};

}  // namespace

bool typesCompatible(const Type& a, const Type& b) {
  if (a.kind() != b.kind()) return false;
  if (!a.isTensor()) return typesCompatible(a.element(), b.element());
  return dimsCompatible(a.tensor(), b.tensor());
}

Status checkNodeAgainstSchema(const Node& node) {
  const OpSchema& s = node.schema();
  int nin = int(node.numInputs()), nout = int(node.numOutputs());
  if (nin < s.minInputs || nin > s.maxInputs)
    return verifyError(&node, "has " + std::to_string(nin) + " operands; " + s.name + " takes " +
                                  std::to_string(s.minInputs) +
                                  (s.maxInputs == INT_MAX ? " or more" : " to " + std::to_string(s.maxInputs)));
  for (int i = 0; i < std::min(nin, s.requiredInputs); ++i)
    if (!node.input(static_cast<size_t>(i)))
      return verifyError(&node, "required operand " + std::to_string(i) +
                                    (size_t(i) < s.inputNames.size() ? " (" + s.inputNames[size_t(i)] + ")" : "") +
                                    " is missing");
  if (nout < s.minOutputs || nout > s.maxOutputs)
    return verifyError(&node, "has " + std::to_string(nout) + " results; " + s.name + " gives " +
                                  std::to_string(s.minOutputs) +
                                  (s.maxOutputs == INT_MAX ? " or more" : " to " + std::to_string(s.maxOutputs)));
  for (const auto& [name, attr] : node.attributes()) {
    const AttrSpec* spec = s.findAttr(name);
    if (!spec) return Error(ErrorCode::BadAttribute, "unknown attribute '" + name + "' for " + s.name).atNode(node.displayName(), node.qualifiedOpType());
    if (spec->kind != attr.kind())
      return Error(ErrorCode::BadAttribute, "attribute '" + name + "' must be " + attrKindName(spec->kind) + ", got " +
                                                attrKindName(attr.kind()))
          .atNode(node.displayName(), node.qualifiedOpType());
  }
  for (const AttrSpec& spec : s.attrs)
    if (spec.required && !node.hasAttr(spec.name))
      return Error(ErrorCode::BadAttribute, "required attribute '" + spec.name + "' is missing")
          .atNode(node.displayName(), node.qualifiedOpType());
  return Status::ok();
}

Status verify(const Graph& graph, const VerifyOptions& options) {
  Verifier v(options);
  return v.run(graph);
}

}  // namespace kiln::ir
