//===- lib/passes/ConstantEvaluation.cpp - Folding one node to constants ----===//
//
// See ConstantEvaluation.h.
//
//===----------------------------------------------------------------------===//
#include "ConstantEvaluation.h"

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

bool foldConstants(ir::Graph& graph) {
  bool changed = false;
  for (ir::Node* node : graph.nodes()) {
    for (ir::Graph* sub : node->subgraphs()) changed |= foldConstants(*sub);
    changed |= foldNode(node);
  }
  return changed;
}

}  // namespace kiln::passes
