//===- kiln/evolve/Evolution.h - GEVO-ML's search over patches ------*- C++ -*-===//
//
// Multi-objective evolution of patches (shared/seeds/000, section 4):
// latency and training error, both minimized, ranked by NSGA-II. The
// initial population is copies of the original with `initialEdits` random
// edits each. Every generation keeps its `elites` best unchanged, breeds a
// full population of offspring from parents drawn by binary tournament
// (one-point messy crossover with `crossoverRate`, one more random edit
// with `mutationRate`), and selects the next generation from elites and
// offspring by NSGA-II. A child whose patch does not apply or whose variant
// is invalid is bred again, never admitted. Patches evaluated once are not
// evaluated again. Seeded: one seed, one run (latencies aside).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kiln/evolve/Patch.h"
#include "kiln/evolve/VariantEvaluator.h"

namespace kiln::evolve {

struct EvolveOptions {
  int population = 32;
  int generations = 10;
  int elites = 16;
  int initialEdits = 3;
  double crossoverRate = 0.8;
  double mutationRate = 0.3;
  uint64_t seed = 0;
  int maxEvaluations = 0;  ///< 0: no limit
  double maxSeconds = 0;   ///< 0: no limit
};

struct Individual {
  Patch patch;
  VariantScore score;
  /// How it was made: "initial", "crossover", "mutation", "crossover+mutation", "copy" (a parent unchanged).
  std::string origin;
};

struct GenerationReport {
  int generation = 0;  ///< 0: the initial population
  const std::vector<Individual>* population = nullptr;
  size_t evaluations = 0;  ///< variants evaluated so far (each distinct patch once)
  size_t invalid = 0;      ///< of which invalid
  double seconds = 0;
};

struct EvolveResult {
  std::vector<Individual> population;  ///< the last generation
  /// Its non-dominated members (distinct patches), fastest first.
  std::vector<Individual> front;
  size_t evaluations = 0, invalid = 0;
  size_t crossovers = 0;  ///< children made by crossover that were valid
  size_t repaired = 0;    ///< valid variants evaluated whose patches needed repairs
  int generations = 0;    ///< generations run (budgets may stop it early)
};

/// Runs the search; `progress` hears after the initial population and each generation.
Expected<EvolveResult> evolve(const ir::Module& original, VariantEvaluator& evaluator, const EvolveOptions& options,
                              const std::function<void(const GenerationReport&)>& progress = nullptr);

/// The non-dominated individuals of `population` by (latency, training error), distinct patches, fastest first.
std::vector<Individual> paretoFront(const std::vector<Individual>& population);

}  // namespace kiln::evolve
