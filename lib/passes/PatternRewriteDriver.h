//===- lib/passes/PatternRewriteDriver.h - Rewrite patterns and their driver -*- C++ -*-===//
//
// A rewrite rule is a RewritePattern, one small class per rule (as TVM's
// simplify_expr.cc): whether it matches at a node, and the rewrite there.
// applyPatterns runs a list of them over a graph with one worklist (after
// mlir's GreedyPatternRewriteDriver): the earliest pending node in graph
// order is visited next, and a rewrite queues again every node whose match
// it may have changed, so the graph ends where no pattern matches and each
// rewrite is the one a rescan from the first node would find. Private to
// lib/passes.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kiln/ir/Graph.h"
#include "kiln/passes/PassRegistry.h"
#include "kiln/support/Status.h"

namespace kiln::passes {

/// One rewrite rule. What a match at node m may read: m, the producers of
/// its inputs to any depth and their results' uses, the users of m's
/// results to usersRead() levels and their operands; never a Constant
/// node's other users. It never matches at a Constant node.
class RewritePattern {
 public:
  virtual ~RewritePattern() = default;
  /// True when a rewrite applies at `node` (the graph is left alone).
  virtual bool matches(const ir::Node& node) const = 0;
  /// Rewrites at `node`, which matches(): new nodes, replaced values,
  /// erased nodes, through the graph's own operations.
  virtual Status rewrite(ir::Node& node) const = 0;
  /// Rewrites at `node` when the pattern matches there: true when it did,
  /// false (the graph left alone) when it does not match. The driver calls this.
  virtual Expected<bool> matchAndRewrite(ir::Node& node) const {
    if (!matches(node)) return false;
    KILN_TRY(rewrite(node));
    return true;
  }
  /// How many levels of users past the node a match reads (1: its results'
  /// users), or kAnywhere: the scan starts over at the first node after each
  /// rewrite (a rescan, for patterns that read further than the contract).
  virtual int usersRead() const { return 1; }
  static constexpr int kAnywhere = -1;
};

/// A pattern whose match finds a `Match` that its rewrite consumes: the
/// driver matches once per visit and applies what it found.
template <class Match>
class MatchingPattern : public RewritePattern {
 public:
  virtual std::optional<Match> match(ir::Node& node) const = 0;
  virtual Status apply(ir::Node& node, const Match& match) const = 0;

  bool matches(const ir::Node& node) const final { return match(const_cast<ir::Node&>(node)).has_value(); }
  Status rewrite(ir::Node& node) const final {
    std::optional<Match> m = match(node);
    KILN_CHECK(m.has_value(), "rewrite at a node that does not match");
    return apply(node, *m);
  }
  Expected<bool> matchAndRewrite(ir::Node& node) const final {
    std::optional<Match> m = match(node);
    if (!m) return false;
    KILN_TRY(apply(node, *m));
    return true;
  }
};

using PatternList = std::vector<std::shared_ptr<const RewritePattern>>;

/// Applies `patterns` (the first that matches at a node, in list order) to
/// `graph` until none matches: first in every nested graph, innermost first,
/// then in `graph`, and again in nested graphs after `graph` changed, until
/// a round changes neither. Returns how many rewrites were applied; an
/// Internal error naming `pass` when the rewrites do not end (a pattern that
/// keeps matching what it rewrote).
Expected<int64_t> applyPatterns(ir::Graph& graph, const PatternList& patterns, const std::string& pass);

/// True when one of `patterns` matches a node of `graph` or a nested graph.
bool anyPatternMatches(const ir::Graph& graph, const PatternList& patterns);

/// Makes `pass` a pattern pass: applicable where a pattern matches, run by applyPatterns.
void setPatterns(PassInfo& pass, PatternList patterns);

}  // namespace kiln::passes
