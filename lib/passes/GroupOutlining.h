//===- lib/passes/GroupOutlining.h - Nodes into group nodes and back -*- C++ -*-===//
//
// fuse-ops and merge-composite outline a set of nodes into one kiln::Fused or
// kiln::Composite node whose body graph holds copies of them; defuse-ops
// inlines such bodies back. The group's operands are the values its members
// read from outside (in first-use order), its results the member results used
// outside it (graph outputs included). Private to lib/passes.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "kiln/ir/Graph.h"
#include "kiln/support/Status.h"

namespace kiln::passes {

/// Replaces `members` (nodes of one graph, in graph order, none with
/// subgraphs) by one `op` node ("kiln::Fused" or "kiln::Composite") with the
/// given attributes plus `body`. The caller guarantees that every operand
/// the members read from outside, other than constants (which are moved up),
/// is defined before the first member, so the group node can take its place.
Expected<ir::Node*> outlineGroup(const std::vector<ir::Node*>& members, const std::string& op,
                                 std::vector<std::pair<std::string, ir::Attribute>> attrs);

/// Replaces a kiln::Fused or kiln::Composite node by copies of its body's nodes.
Status inlineGroup(ir::Node* group);

/// True for kiln::Fused and kiln::Composite nodes.
bool isGroupNode(const ir::Node& node);
/// True when `graph` is the body of a group node (fusion does not nest).
bool isGroupBody(const ir::Graph& graph);

}  // namespace kiln::passes
