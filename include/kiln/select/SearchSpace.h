//===- kiln/select/SearchSpace.h - The pruned pass space of a model -*- C++ -*-===//
//
// Search-space pruning after the research (shared/seeds/001): of the pass
// catalogue, keep only the passes of the model's architecture classes whose
// `applicable` holds. Applicability is probed, not guessed: the class passes
// run twice in ordering-rule order on a copy of the graph, and a pass is kept
// when it was applicable in either round (dead-code-elimination only finds
// work after fold-constant has run, for instance). The probe also records
// what the `arch` strategy needs: the passes that changed the IR in each
// round. Additional (AD) passes express user intent (--precision, layouts)
// and are never in the automatic space; a caller may exclude more (passes a
// backend cannot compile the result of). The size of a space is the number
// of orderings of distinct passes of any length, sum over k of n!/(n-k)!.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <string>
#include <vector>

#include "kiln/ir/Graph.h"
#include "kiln/passes/PassInfo.h"

namespace kiln::select {

struct ExcludedPass {
  std::string pass;
  std::string reason;
};

struct PruneOptions {
  std::vector<ExcludedPass> excluded;  ///< passes kept out whatever the classes (with the reason)
};

struct DroppedPass {
  const passes::PassInfo* pass = nullptr;
  std::string reason;  ///< "class", "not applicable", an exclusion's reason, or a failure
};

struct SearchSpace {
  std::vector<std::string> classes;  ///< the model's classes the space was pruned for
  /// Kept passes in ordering-rule order.
  std::vector<const passes::PassInfo*> passes;
  std::vector<DroppedPass> dropped;
  /// The probe's findings, in ordering-rule order.
  std::vector<const passes::PassInfo*> changedFirstRound, changedSecondRound;
  size_t catalogueSize = 0;
  double probeMs = 0;

  /// Orderings of distinct passes before pruning (the whole catalogue) and after.
  long double sequencesBefore() const;
  long double sequencesAfter() const;
  bool contains(const std::string& pass) const;
};

/// Orderings of distinct passes drawn from n: sum over k = 0..n of n!/(n-k)!.
long double sequenceCount(size_t n);

/// The catalogue's passes of `classes` that `options` does not exclude, in
/// ordering-rule order for `graph` (what the probe runs); the others go to
/// `dropped` with the reason ("class" or the exclusion's).
std::vector<const passes::PassInfo*> classCandidates(const ir::Graph& graph, const std::vector<std::string>& classes,
                                                     const PruneOptions& options, std::vector<DroppedPass>& dropped);

/// Prunes the catalogue for `graph` (not modified) and `classes`.
SearchSpace pruneSearchSpace(const ir::Graph& graph, const std::vector<std::string>& classes,
                             const PruneOptions& options = {});

}  // namespace kiln::select
