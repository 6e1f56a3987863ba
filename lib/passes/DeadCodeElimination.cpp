//===- lib/passes/DeadCodeElimination.cpp - dead-code-elimination ----------===//
//
// Removes nodes none of whose results is used (by a node, a nested graph that
// captures it, or a graph output), in reverse order so that whole dead chains
// go in one sweep, and likewise inside every nested graph (If branches, Loop
// and Scan bodies). ONNX ops have no side effects visible to the graph, so an
// unused result means an unneeded node; random ops are dropped too, which
// changes no remaining value.
//
//===----------------------------------------------------------------------===//
#include "kiln/passes/PassRegistry.h"

namespace kiln::passes {
namespace {

bool isDead(const ir::Node& node) {
  for (const ir::Value* v : node.outputs())
    if (v->hasUses()) return false;
  return true;
}

bool hasDeadNode(const ir::Graph& graph) {
  for (const ir::Node* node : graph.nodes()) {
    if (isDead(*node)) return true;
    for (const ir::Graph* sub : node->subgraphs())
      if (hasDeadNode(*sub)) return true;
  }
  return false;
}

bool eliminate(ir::Graph& graph) {
  bool changed = false;
  std::vector<ir::Node*> nodes = graph.nodes();
  for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
    ir::Node* node = *it;
    if (isDead(*node)) {
      graph.eraseNode(node);
      changed = true;
      continue;
    }
    for (ir::Graph* sub : node->subgraphs()) changed |= eliminate(*sub);
  }
  return changed;
}

}  // namespace

PassInfo deadCodeEliminationPass() {
  PassInfo p;
  p.name = "dead-code-elimination";
  p.summary = "Remove nodes whose results are never used";
  p.description =
      "Erases every node none of whose results is used by another node, a nested graph or a graph output, "
      "in reverse order so dead chains disappear in one run, and recurses into If/Loop/Scan bodies. "
      "Exact: no remaining value changes.";
  p.classes = {"BL", "RN", "MN", "SSD"};  // Table 4 of the research: DeadCodeElimination is RN; MN; SSD
  p.optLevel = 1;
  p.applicable = [](const ir::Graph& g, const PassOptions&) { return hasDeadNode(g); };
  p.run = [](ir::Graph& g, const PassOptions&, const PassContext&) -> Expected<bool> { return eliminate(g); };
  return p;
}

}  // namespace kiln::passes
