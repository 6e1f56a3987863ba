//===- kiln/ir/ShapeInference.h - Static type and shape inference -*- C++ -*-===//
//
// Walks a graph in order and sets every node result's type with the op table's
// inference functions, propagating small known values (constants and shape
// arithmetic) and typing subgraph bodies from their parent nodes' operands.
// Dims over the model's dynamic dims propagate as DimExprs (Type.h), decided
// where it matters by the dims' ranges. Errors carry the node's name and op.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <map>
#include <memory>
#include <string>

#include "kiln/ir/Graph.h"
#include "kiln/ir/Module.h"
#include "kiln/support/Status.h"

namespace kiln::ir {

/// Incremental inference that remembers propagated values across calls (the
/// importer infers each node as it creates it).
class ShapeInferencer {
 public:
  ShapeInferencer();
  ~ShapeInferencer();
  /// Infers one node's result types from its (already typed) operands.
  Status inferNode(Node& node);
  /// Infers every node of `graph` in order.
  Status inferGraph(Graph& graph);
  /// The value of `v` if it is a constant or was propagated; else null.
  const Tensor* knownValue(const Value* v) const;
  /// The dynamic dims' ranges that symbolic inference may use.
  void setDimRanges(const std::map<std::string, DimRange>& ranges);

  struct State;

 private:
  std::unique_ptr<State> state_;
};

/// Re-infers the type of every node result in `graph` (and its subgraphs).
Status inferTypes(Graph& graph, const std::map<std::string, DimRange>& ranges = {});

/// Infers the result types of one node whose operands are typed (for passes
/// that create nodes). Only Constant operands count as known values.
Status inferNodeTypes(Node& node);

}  // namespace kiln::ir
