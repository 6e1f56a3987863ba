//===- lib/passes/ConstantEvaluation.h - Folding one node to constants -*- C++ -*-===//
//
// Evaluates a node whose operands are all constants with the reference
// interpreter's kernel for it (so folding computes exactly what running would)
// and replaces its results by Constant nodes; an If on a constant condition
// is replaced by the branch it takes. Shared by fold-constant and
// dynamic-to-static. Private to lib/passes.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstddef>

#include "kiln/ir/Graph.h"

namespace kiln::passes {

/// Results up to this size always fold; larger ones only when they are no
/// bigger than the operands (so Expand/Tile/ConstantOfShape do not blow up the
/// model's weights).
inline constexpr size_t kFoldAlwaysBytes = 64 * 1024;

/// True when `node` could be folded: a deterministic default-domain op other
/// than Constant, without subgraphs, every present operand a constant tensor.
bool isFoldable(const ir::Node& node);

/// Folds `node` if it is foldable, its kernel succeeds and the size rule holds;
/// the node and the constants only it used are erased. False when left alone
/// (a kernel error is left for run time to report, with its node).
bool foldNode(ir::Node* node);

/// True for an If whose condition is a constant: it is the branch it takes.
bool takesConstantBranch(const ir::Node& node);

/// Folds every foldable node of `graph` and its subgraphs, in order (so whole
/// constant chains fold in one sweep), and replaces each If with a constant
/// condition by copies of the branch it takes (folded in turn). True when
/// anything changed.
bool foldConstants(ir::Graph& graph);

}  // namespace kiln::passes
