//===- lib/fuse/Proposers.h - What each search strategy tries next --------===//
//
// A strategy of kiln/fuse/FusionSearch.h is a Proposer: given the best
// configuration so far it returns the next candidate. The search driver
// owns evaluation, acceptance and the budget.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <memory>
#include <random>

#include "kiln/fuse/FusionSearch.h"

namespace kiln::fuse {

class Proposer {
 public:
  virtual ~Proposer() = default;
  /// The next candidate: a mutation of `best`.
  virtual Expected<Decisions> propose(const Decisions& best, std::mt19937_64& rng) = 0;
  /// `best`, a mutation of `previous`, is the new best configuration.
  virtual void improved(const Decisions& previous, const Decisions& best) { (void)previous, (void)best; }
};

/// The proposer of `options.strategy` (checked by the caller).
std::unique_ptr<Proposer> makeProposer(FusionEvaluator& evaluator, const SearchOptions& options);

}  // namespace kiln::fuse
