//===- lib/fuse/FusionSearch.cpp - Searching fusion configurations --------===//
//
// See kiln/fuse/FusionSearch.h. The default is evaluated first (and the
// start, when the search starts elsewhere); each trial then asks the
// strategy's proposer for candidates until one partitions the graph anew,
// evaluates it, and keeps it when it beats the best (confirmed by paired
// runs when acceptPairs > 0: at least 4 in 5 of them faster, and the best
// latency then moves by their median ratio, so that neither a lucky sample
// nor a chain of neutral changes that each won a coin toss sets the bar).
//
//===----------------------------------------------------------------------===//
#include "kiln/fuse/FusionSearch.h"

#include <algorithm>
#include <random>

#include "Proposers.h"
#include "kiln/support/Statistics.h"
#include "kiln/support/Stopwatch.h"
#include "kiln/support/Strings.h"

namespace kiln::fuse {

std::vector<std::string> searchStrategies() { return {"random", "guided", "ranked"}; }

bool strategyNeedsModel(const std::string& strategy) { return strategy == "guided" || strategy == "ranked"; }

namespace {

/// The strategy's next candidate, redrawn while it repeats an evaluated partition; once the strategy
/// has nothing new to offer, uniform draws (the random strategy's) take over for this trial.
Expected<Decisions> nextCandidate(Proposer& proposer, Proposer& fallback, FusionEvaluator& evaluator,
                                  const Decisions& best, int redraws, std::mt19937_64& rng) {
  KILN_ASSIGN(Decisions candidate, proposer.propose(best, rng));
  for (int r = 0; r < 2 * redraws && evaluator.evaluated(candidate); ++r) {
    KILN_ASSIGN(candidate, (r < redraws ? proposer : fallback).propose(best, rng));
  }
  return candidate;
}

/// The pairs of `pairs` that must find a candidate faster to keep it: 4 in 5, rounded up (a neutral
/// change passes 5 pairs with odds of 3 in 16, where a plain median below 1 would pass half the time).
int fasterPairsNeeded(int pairs) { return (4 * pairs + 4) / 5; }

}  // namespace

Expected<SearchResult> searchFusion(FusionEvaluator& evaluator, const SearchOptions& options,
                                    const SearchProgress& progress) {
  const std::vector<std::string> strategies = searchStrategies();
  if (std::find(strategies.begin(), strategies.end(), options.strategy) == strategies.end())
    return makeError(ErrorCode::InvalidArgument, "unknown fusion search strategy '", options.strategy, "' (",
                     joinStrings(strategies, ", "), ")");
  if (strategyNeedsModel(options.strategy) && !options.advantage)
    return makeError(ErrorCode::InvalidArgument, "the ", options.strategy,
                     " strategy needs an advantage model (kiln fuse --train)");
  if (evaluator.edgeCount() == 0) return makeError(ErrorCode::InvalidArgument, "the model has no fusion edges to search");
  SearchResult result;
  std::mt19937_64 rng(options.seed);
  Stopwatch clock;
  auto record = [&](int index, const Decisions& d, const Evaluation& e, bool kept) {
    if (!e.ok()) ++result.invalid;
    SearchTrial t{index, d, e, kept, result.bestMs, clock.elapsedMs() / 1000};
    result.trials.push_back(t);
    if (progress) progress(t, result);
  };

  KILN_ASSIGN(Configured start, startConfiguration(evaluator, options.fromRandom, rng, options.start));
  KILN_ASSIGN(Evaluation byDefault, evaluator.evaluate(evaluator.defaultDecisions()));  // from the cache
  result.defaultMs = byDefault.ms;
  result.best = start.decisions, result.bestMs = result.startMs = start.ms;
  Evaluation startEvaluation;
  startEvaluation.ms = result.startMs;
  record(0, result.best, startEvaluation, true);

  std::unique_ptr<Proposer> proposer = makeProposer(evaluator, options);
  SearchOptions uniform = options;
  uniform.strategy = "random";
  std::unique_ptr<Proposer> fallback = makeProposer(evaluator, uniform);
  // A trial is a measurement: a candidate whose partition was measured already costs nothing and is not
  // counted; the attempts are bounded for graphs with fewer partitions than trials.
  for (int trial = 1, attempt = 0; trial <= options.trials && attempt < 4 * options.trials; ++attempt) {
    if (options.maxSeconds > 0 && clock.elapsedMs() / 1000 >= options.maxSeconds) break;
    KILN_ASSIGN(Decisions candidate, nextCandidate(*proposer, *fallback, evaluator, result.best, options.redraws, rng));
    KILN_ASSIGN(Evaluation e, evaluator.evaluate(candidate));
    if (e.cached) {
      ++result.cached;
      continue;
    }
    bool kept = e.ok() && e.ms < result.bestMs;
    double bestMs = e.ms;
    if (kept && options.acceptPairs > 0) {  // the paired runs, not the lone median, decide and scale
      const int needed = fasterPairsNeeded(options.acceptPairs);
      KILN_ASSIGN(std::vector<double> ratios,
                  evaluator.pairedRatios(candidate, result.best, options.acceptPairs, options.acceptPairs - needed));
      kept = std::count_if(ratios.begin(), ratios.end(), [](double r) { return r < 1; }) >= needed;
      bestMs = result.bestMs * upperMedian(std::move(ratios));
    }
    if (kept) {
      proposer->improved(result.best, candidate);
      result.best = candidate, result.bestMs = bestMs;
    }
    record(trial++, candidate, e, kept);
  }
  return result;
}

}  // namespace kiln::fuse
