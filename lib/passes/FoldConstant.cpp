//===- lib/passes/FoldConstant.cpp - fold-constant --------------------------===//
//
// Replaces every node whose operands are all constants by the constants it
// computes, evaluated by the reference interpreter's kernel for the op (so a
// folded value is bit-for-bit what running the node would give). Nodes are
// visited in order, so whole constant chains (weight transposes, shape
// arithmetic on constants) fold in one run. An If on a constant condition
// (exporters branch on shapes, which are constants once shapes are bound)
// becomes the nodes of the branch it takes. Random ops and other control
// flow are left alone, and a result larger than 64 KiB folds only when it is
// no larger than its operands (Expand or ConstantOfShape would otherwise
// bloat weights).
//
//===----------------------------------------------------------------------===//
#include "ConstantEvaluation.h"
#include "RewriteUtils.h"
#include "kiln/passes/PassRegistry.h"

namespace kiln::passes {

PassInfo foldConstantPass() {
  PassInfo p;
  p.name = "fold-constant";
  p.summary = "Evaluate nodes whose operands are all constants";
  p.description =
      "Computes every deterministic node whose operands are constants with the interpreter's kernel and "
      "replaces it by Constant nodes, in graph order so chains fold at once; an If on a constant condition "
      "becomes the branch it takes; recurses into subgraphs. "
      "Results over 64 KiB fold only when no larger than the operands. Exact: folded values are what running "
      "the node gives.";
  // Table 4: FoldConstant is RN; MN; SSD. kiln adds BR: exported transformers
  // compute their attention scale and mask arithmetic from constants in the
  // graph (TVM's importer folds those, kiln's does not), and fuse-attention
  // matches only once they are folded.
  p.classes = {"BL", "RN", "MN", "SSD", "BR"};
  p.optLevel = 1;
  p.applicable = [](const ir::Graph& g, const PassOptions&) {
    return anyNode(g, [](const ir::Node& n) { return isFoldable(n) || takesConstantBranch(n); });
  };
  p.run = [](ir::Graph& g, const PassOptions&, const PassContext&) -> Expected<bool> { return foldConstants(g); };
  return p;
}

}  // namespace kiln::passes
