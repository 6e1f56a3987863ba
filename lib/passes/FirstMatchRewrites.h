//===- lib/passes/FirstMatchRewrites.h - Rewrite the first match, resumably -*- C++ -*-===//
//
// Some passes rewrite one node at a time, always the first in graph order
// where a rewrite applies, until none does (alter-op-layout moving ops onto
// blocked data: each move can enable the next, and the order decides the
// IR). Rescanning from the first node after each rewrite is quadratic:
// SSDLite's 226 moves over 2,600 nodes took 17 ms. A rewrite changes what
// applies only near it, so the scan resumes at the earliest node whose
// answer it may have changed, which gives the same rewrites in the same
// order. Private to lib/passes.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <functional>
#include <optional>
#include <vector>

#include "kiln/ir/Graph.h"
#include "kiln/support/Status.h"

namespace kiln::passes {

/// A rewrite found at a node. `apply` replaces the results of `replaced`
/// by new nodes inserted before it, reading only values that `replaced` or
/// the producers of its inputs read (to three levels) and new constants,
/// then erases `replaced` and its dead producers, adding each erased node
/// to the vector it is given.
struct LocalRewrite {
  ir::Node* replaced = nullptr;
  std::function<Status(std::vector<const ir::Node*>& erased)> apply;
};

/// The rewrite that applies at a node, if any. Its answer at node n may
/// depend on n itself, on the producers of n's inputs (to any depth, but
/// not on their other uses), on the users of n's results and on those
/// users' inputs and their producers (one level); nothing else. It gives
/// none at a Constant node.
using LocalRewriteFinder = std::function<std::optional<LocalRewrite>(ir::Node*)>;

/// Applies the rewrite `find` gives at the first node in graph order, again
/// and again until it gives none; the same rewrites, in the same order, as
/// rescanning from the first node each time. Returns how many were applied.
Expected<int64_t> applyFirstMatchRewrites(ir::Graph& graph, const LocalRewriteFinder& find);

}  // namespace kiln::passes
