//===- kiln/select/Strategies.h - Pass selection and ordering strategies -*- C++ -*-===//
//
// A strategy proposes pipelines for a model; the caller (a study, see
// kiln/bench/PassStudy.h) compiles and measures each through an Evaluate
// callback. All are seeded and reproducible:
//   O0..O3      the opt-level pipelines (O3 is the research's baseline, BL);
//   arch        the research's AS: the pruned space's passes in ordering-rule
//               order, then a second round of the passes that still found
//               work in the probe's second round, dead-code-elimination
//               closing (kiln/select/ArchPipeline.h runs it on a graph in
//               place, for --pipeline arch);
//   random:N    the research's PO: N random subsets of the pruned space in
//               random orders;
//   exhaustive[:K]  every order of the (at most K, default 5) passes that
//               changed the model in the probe, dead-code-elimination after;
//               identical IR is measured once by the caller;
//   evolve[:P[xG]]  NSGA-II over pass sequences (population P, default 8;
//               G generations, default 4), objectives latency and compile
//               time; the Pareto front is reported;
//   learned[:K] the best pipelines of the K (default 3) nearest other
//               architectures in the experiment database, restricted to
//               this model's space.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/passes/Pipeline.h"
#include "kiln/select/ExperimentDatabase.h"
#include "kiln/select/SearchSpace.h"
#include "kiln/support/Random.h"

namespace kiln::select {

struct StrategySpec {
  std::string kind;  ///< "O", "arch", "random", "exhaustive", "evolve", "learned"
  int level = 0;     ///< O: the opt level
  int count = 0;     ///< random: pipelines; exhaustive: most passes; evolve: population; learned: neighbours
  int generations = 0;  ///< evolve
  std::string text;  ///< as written
};

/// Parses "O3,arch,random:8,..." (KE4003 naming the bad entry and the forms).
Expected<std::vector<StrategySpec>> parseStrategies(std::string_view text);

/// One proposed pipeline.
struct Candidate {
  std::string strategy;  ///< the spec's text
  std::string label;     ///< unique within a study: "O3", "arch", "random-3", "evolve-g2-5", ...
  std::vector<passes::PipelineEntry> pipeline;
  std::string note;      ///< where it came from (learned: the neighbour)
};

/// What the caller measured for a candidate; failed ones rank last.
struct Evaluation {
  bool ok = false;
  double latencyMs = 0;
  double compileMs = 0;
};
using Evaluate = std::function<Expected<Evaluation>(const Candidate&)>;

struct StrategyInputs {
  const SearchSpace* space = nullptr;
  std::vector<double> features;                  ///< featureVector() of the model
  std::string modelHash;                         ///< to leave the model's own records out of `learned`
  std::string backend;                           ///< `learned` prefers records of this backend; -O levels are this backend's
  const ExperimentDatabase* database = nullptr;  ///< for `learned`
  uint64_t seed = 0;
};

struct StrategyResult {
  std::vector<Candidate> candidates;  ///< every evaluated candidate, in order
  std::vector<std::string> paretoFront;  ///< evolve: labels of the final non-dominated candidates
  std::string note;  ///< what the strategy decided (exhaustive's set, learned's neighbours)
};

/// KE4003 when the spec cannot run on these inputs (learned without
/// successful records of other models), so a study fails before measuring.
Status checkStrategyInputs(const StrategySpec& spec, const StrategyInputs& inputs);

/// Proposes the spec's pipelines and evaluates each through `evaluate`
/// (evolve evaluates generation by generation). An error from `evaluate`
/// aborts; a candidate that fails to compile or run is an Evaluation with ok false.
Expected<StrategyResult> runStrategy(const StrategySpec& spec, const StrategyInputs& inputs, const Evaluate& evaluate);

/// The arch pipeline of a space (see above): archOrder(space.passes, space.changedSecondRound).
std::vector<const passes::PassInfo*> archPasses(const SearchSpace& space);

/// The arch order: the first round's passes (rule order, dead-code-elimination
/// at its rank), then those that changed the IR in the probe's second round,
/// then dead-code-elimination if the first round had it and the second did
/// not end with it. Running it gives the IR the probe's two rounds left, plus
/// that last cleanup (runArchPipeline relies on this).
std::vector<const passes::PassInfo*> archOrder(const std::vector<const passes::PassInfo*>& firstRound,
                                               const std::vector<const passes::PassInfo*>& changedSecondRound);

/// Deterministic random numbers for the strategies (support/Random.h).
using StrategyRandom = SplitMix64;

/// NSGA-II (evolve); in its own file.
Expected<StrategyResult> runEvolve(const StrategySpec& spec, const StrategyInputs& inputs, const Evaluate& evaluate);

/// Non-dominated sorting of (latency, compile) points, minimising both:
/// front index per point (0 = Pareto front). Failed points rank last.
std::vector<int> paretoRanks(const std::vector<Evaluation>& points);

}  // namespace kiln::select
