//===- kiln/ir/ShapeInference.h - Static type and shape inference -*- C++ -*-===//
//
// Walks a graph in order and sets every node result's type with the op table's
// inference functions, propagating small known values (constants and shape
// arithmetic) and typing subgraph bodies from their parent nodes' operands.
// Errors carry the node's name and op.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "kiln/ir/Graph.h"
#include "kiln/support/Status.h"

namespace kiln::ir {

/// Re-infers the type of every node result in `graph` (and its subgraphs).
Status inferTypes(Graph& graph);

/// Infers the result types of one node whose operands are typed (for passes
/// that create nodes). Only Constant operands count as known values.
Status inferNodeTypes(Node& node);

}  // namespace kiln::ir
