//===- kiln/fuse/FusionSearch.h - Searching fusion configurations --*- C++ -*-===//
//
// The search over a plan's fusion decisions (shared/seeds/004: progressive
// search with local mutations). Each trial mutates the best configuration
// so far, evaluates it and keeps it when it is faster; a candidate that
// seems faster is kept only when 4 in 5 of a few paired runs against the
// best agree, so that measurement noise does not crown a lucky sample.
// Proposals whose partition was evaluated already are redrawn (up to
// `redraws` times, then as many uniform draws), and a repeat that remains is
// not a trial: the budget counts measurements. Strategies:
//   random  - an edge drawn uniformly; its k-neighbourhood mutated.
//   guided  - an edge drawn from the top alpha share by the advantage
//             model's predicted |advantage|; its k-neighbourhood mutated.
//   ranked  - kiln's own: each class of alike edges (a repeated block's
//             same edge) set to one decision at once, the moves the signed
//             regressor predicts to gain first; then random mutations
//             screened by it (the best predicted of 8 draws a measurement).
// Seeded: one seed, one sequence of configurations. The budget is a number
// of trials and, optionally, seconds.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kiln/fuse/AdvantageModel.h"
#include "kiln/fuse/FusionEvaluator.h"

namespace kiln::fuse {

struct SearchOptions {
  std::string strategy = "random";
  int trials = 50;          ///< configurations evaluated after the start
  double maxSeconds = 0;    ///< stop after this long (0: the trials alone)
  uint64_t seed = 0;
  int radius = 1;           ///< k: the mutated neighbourhood's radius in edges
  bool fromRandom = false;  ///< start from a random configuration instead of the default
  Decisions start;          ///< when not empty, the configuration to start from (a saved plan's)
  double alpha = 0.1;       ///< guided: the share of edges, by predicted |advantage|, an edge is drawn from
  int acceptPairs = 5;      ///< paired runs that confirm a faster candidate (0: its median alone)
  int redraws = 20;         ///< proposals drawn for one trial while they repeat evaluated partitions
  /// The learned advantage function (guided and ranked need it; not owned).
  const AdvantageModel* advantage = nullptr;
};

/// Whether `strategy` needs SearchOptions::advantage.
bool strategyNeedsModel(const std::string& strategy);

/// The names `strategy` takes.
std::vector<std::string> searchStrategies();

struct SearchTrial {
  int index = 0;            ///< 1-based; 0 is the start
  Decisions decisions;      ///< the configuration evaluated
  Evaluation evaluation;
  bool kept = false;        ///< it became the best
  double bestMs = 0;        ///< the best latency after this trial
  double elapsedSeconds = 0;
};

struct SearchResult {
  Decisions best;
  double bestMs = 0;
  double startMs = 0;       ///< the start configuration's latency
  double defaultMs = 0;     ///< the default heuristic's
  std::vector<SearchTrial> trials;  ///< the start, then each trial
  size_t invalid = 0;       ///< configurations rejected (no kernel for a group, wrong outputs)
  size_t cached = 0;        ///< candidates whose partition was measured already (not trials)
};

using SearchProgress = std::function<void(const SearchTrial&, const SearchResult&)>;

/// Runs `options.strategy` with `evaluator`; `progress` sees each trial as it ends.
Expected<SearchResult> searchFusion(FusionEvaluator& evaluator, const SearchOptions& options,
                                    const SearchProgress& progress = nullptr);

}  // namespace kiln::fuse
