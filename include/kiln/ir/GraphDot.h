//===- kiln/ir/GraphDot.h - Graphviz pictures of a graph ------------*- C++ -*-===//
//
// The graph as Graphviz DOT (`dot -Tsvg`): inputs and outputs as ellipses,
// nodes as boxes labelled with op type and name, edges labelled with the
// value's type. Constants (weights) are left out to keep pictures of real
// models readable. Clusters draw groups of nodes (a fusion plan's kernels).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <string>
#include <vector>

#include "kiln/ir/Graph.h"

namespace kiln::ir {

struct DotCluster {
  std::string label;
  std::vector<const Node*> nodes;
  bool highlighted = false;  ///< drawn filled (e.g. a host step)
};

/// DOT of `graph`; names and op types from the model are escaped.
std::string graphToDot(const Graph& graph, const std::vector<DotCluster>& clusters = {});

}  // namespace kiln::ir
