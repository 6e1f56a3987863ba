//===- lib/passes/ConstantEvaluation.cpp - Folding one node to constants ----===//
//
// See ConstantEvaluation.h.
//
//===----------------------------------------------------------------------===//
#include "ConstantEvaluation.h"

#include <algorithm>

#include "RewriteUtils.h"
#include "kiln/ir/OpSchema.h"
#include "kiln/runtime/Interpreter.h"

namespace kiln::passes {

bool isFoldable(const ir::Node& node) {
  if (!node.domain().empty() || node.op() == ir::Op::Constant || node.schema().nondeterministic) return false;
  if (!node.subgraphs().empty() || node.numOutputs() == 0) return false;
  for (const ir::Value* r : node.outputs())
    if (!r->type().isTensor()) return false;
  for (const ir::Value* in : node.inputs())
    if (in && !constantValue(in)) return false;
  return true;
}

bool foldNode(ir::Node* node) {
  if (!isFoldable(*node)) return false;
  std::vector<RuntimeValue> operands;
  operands.reserve(node->numInputs());
  size_t operandBytes = 0;
  for (const ir::Value* in : node->inputs()) {
    operands.push_back(in ? RuntimeValue(*constantValue(in)) : RuntimeValue());
    if (in) operandBytes += constantValue(in)->byteSize();
  }
  std::vector<const RuntimeValue*> pointers;
  for (size_t i = 0; i < operands.size(); ++i) pointers.push_back(node->input(i) ? &operands[i] : nullptr);
  auto results = runtime::evaluateNode(*node, pointers);
  if (!results) return false;
  size_t resultBytes = 0;
  for (const RuntimeValue& r : *results) {
    if (!r.isTensor() || !r.tensor().defined()) return false;
    resultBytes += r.tensor().byteSize();
  }
  if (resultBytes > kFoldAlwaysBytes && resultBytes > operandBytes) return false;
  ir::Graph& graph = *node->graph();
  for (size_t i = 0; i < node->numOutputs(); ++i) {
    ir::Value* out = node->output(i);
    if (!out->hasUses()) continue;
    ir::Value* c = makeConstant(graph, (*results)[i].tensor(), foldedName(out->name()), node);
    replaceValue(out, c);
  }
  eraseWithDeadProducers(node);
  return true;
}

namespace {

/// The branch an If on a one-element constant condition takes (with as many results as the If); null otherwise.
const ir::Graph* constantBranch(const ir::Node& node) {
  if (node.op() != ir::Op::If) return nullptr;
  const Tensor* condition = constantValue(node.input(0));
  if (!condition || condition->numElements() != 1) return nullptr;
  const char* attr = condition->scalarAsDouble() != 0 ? "then_branch" : "else_branch";
  if (!node.hasAttr(attr) || node.getGraph(attr)->outputs().size() != node.numOutputs()) return nullptr;
  return node.getGraph(attr);
}

/// Replaces an If by copies of the nodes of `branch`, the one it takes; returns the copies.
std::vector<ir::Node*> inlineTakenBranch(ir::Node* node, const ir::Graph& branch) {
  ir::Graph& graph = *node->graph();
  ir::Node* before = graph.prevNode(node);
  std::vector<ir::Value*> results = ir::inlineGraph(branch, {}, node);
  std::vector<ir::Node*> copies;
  for (ir::Node* n = before ? graph.nextNode(before) : graph.firstNode(); n != node; n = graph.nextNode(n))
    copies.push_back(n);
  for (size_t i = 0; i < results.size(); ++i) {
    const bool copied = results[i]->producer() && std::count(copies.begin(), copies.end(), results[i]->producer());
    replaceValue(node->output(i), results[i], copied);  // a copy takes the If's result name
  }
  eraseWithDeadProducers(node);
  return copies;
}

/// Folds `node` (its subgraphs first): a constant If's branch inlined and folded, or the node evaluated.
bool foldInOrder(ir::Node* node) {
  bool changed = false;
  for (ir::Graph* sub : node->subgraphs()) changed |= foldConstants(*sub);
  if (const ir::Graph* branch = constantBranch(*node)) {
    for (ir::Node* copy : inlineTakenBranch(node, *branch)) foldInOrder(copy);
    return true;
  }
  return foldNode(node) || changed;
}

}  // namespace

bool takesConstantBranch(const ir::Node& node) { return constantBranch(node) != nullptr; }

bool foldConstants(ir::Graph& graph) {
  bool changed = false;
  for (ir::Node* node : graph.nodes()) changed |= foldInOrder(node);
  return changed;
}

}  // namespace kiln::passes
