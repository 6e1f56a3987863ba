//===- lib/evolve/Evolution.cpp - GEVO-ML's search over patches ------------===//
//
// See kiln/evolve/Evolution.h.
//
//===----------------------------------------------------------------------===//
#include "kiln/evolve/Evolution.h"

#include <algorithm>
#include <map>
#include <set>

#include "kiln/evolve/Nsga2.h"
#include "kiln/evolve/Variation.h"
#include "kiln/support/Stopwatch.h"

namespace kiln::evolve {

namespace {

/// Breeding gives up after this many tries per place to fill (children
/// that do not apply or are invalid), so that a model no edit survives
/// ends the search instead of spinning.
constexpr int kTriesPerPlace = 20;

std::vector<Objectives> objectivesOf(const std::vector<Individual>& population) {
  std::vector<Objectives> out;
  for (const Individual& i : population) out.push_back({i.score.ms, i.score.trainError});
  return out;
}

class Search {
 public:
  Search(const ir::Module& original, VariantEvaluator& evaluator, const EvolveOptions& options)
      : original_(original), evaluator_(evaluator), o_(options), rng_(options.seed) {}

  bool budgetLeft() const {
    return (o_.maxEvaluations <= 0 || result_.evaluations < size_t(o_.maxEvaluations)) &&
           (o_.maxSeconds <= 0 || clock_.elapsedMs() / 1000 < o_.maxSeconds);
  }

  /// The individual for `patch`, evaluated once per distinct patch; nullopt when invalid.
  std::optional<Individual> admit(const Patch& patch, const std::string& origin) {
    const std::string key = patchToJson(patch);
    auto it = scores_.find(key);
    if (it == scores_.end()) {
      VariantScore s = evaluator_.evaluate(patch);
      ++result_.evaluations;
      if (!s.valid) ++result_.invalid;
      if (s.valid && s.repairNodes > 0) ++result_.repaired;
      it = scores_.emplace(key, std::move(s)).first;
    }
    if (!it->second.valid) return std::nullopt;
    return Individual{patch, it->second, origin};
  }

  std::vector<Individual> initialPopulation() {
    std::vector<Individual> population;
    for (int tries = 0; int(population.size()) < o_.population && tries < kTriesPerPlace * o_.population &&
                        budgetLeft();
         ++tries) {
      std::optional<Patch> patch = Patch{};
      for (int e = 0; e < o_.initialEdits && patch; ++e) patch = mutated(original_, *patch, rng_);
      if (!patch) continue;
      if (auto individual = admit(*patch, "initial")) population.push_back(std::move(*individual));
    }
    return population;
  }

  /// One child of two parents drawn by tournament, or nullopt when it is invalid.
  std::optional<Individual> child(const std::vector<Individual>& population, const std::vector<Nsga2Rank>& ranks) {
    const Individual& a = population[tournament(ranks, rng_)];
    const Individual& b = population[tournament(ranks, rng_)];
    Patch patch = a.patch;
    std::string origin;
    if (std::bernoulli_distribution(o_.crossoverRate)(rng_)) {
      auto [first, second] = messyCrossover(a.patch, b.patch, rng_);
      patch = std::bernoulli_distribution(0.5)(rng_) ? std::move(first) : std::move(second);
      origin = "crossover";
      if (!patchedModule(original_, patch)) return std::nullopt;
    }
    if (std::bernoulli_distribution(o_.mutationRate)(rng_)) {
      std::optional<Patch> m = mutated(original_, patch, rng_);
      if (!m) return std::nullopt;
      patch = std::move(*m);
      origin += origin.empty() ? "mutation" : "+mutation";
    }
    auto individual = admit(patch, origin.empty() ? "copy" : origin);
    if (individual && origin.rfind("crossover", 0) == 0) ++result_.crossovers;
    return individual;
  }

  std::vector<Individual> nextGeneration(const std::vector<Individual>& population) {
    const std::vector<Objectives> objectives = objectivesOf(population);
    const std::vector<Nsga2Rank> ranks = nsga2Ranks(objectives);
    std::vector<Individual> pool;
    for (size_t i : selectNsga2(objectives, size_t(std::max(0, o_.elites)))) pool.push_back(population[i]);
    const size_t elites = pool.size();
    for (int tries = 0; pool.size() < elites + size_t(o_.population) && tries < kTriesPerPlace * o_.population &&
                        budgetLeft();
         ++tries)
      if (auto c = child(population, ranks)) pool.push_back(std::move(*c));
    std::vector<Individual> next;
    for (size_t i : selectNsga2(objectivesOf(pool), size_t(o_.population))) next.push_back(std::move(pool[i]));
    return next;
  }

  Expected<EvolveResult> run(const std::function<void(const GenerationReport&)>& progress) {
    std::vector<Individual> population = initialPopulation();
    if (population.empty())
      return makeError(ErrorCode::InvalidArgument, "no variant of the model with ", o_.initialEdits,
                       " random edits is valid (", result_.evaluations, " evaluated)");
    auto report = [&](int generation) {
      if (progress)
        progress({generation, &population, result_.evaluations, result_.invalid, clock_.elapsedMs() / 1000});
    };
    report(0);
    for (int g = 1; g <= o_.generations && budgetLeft(); ++g) {
      population = nextGeneration(population);
      result_.generations = g;
      report(g);
    }
    result_.front = paretoFront(population);
    result_.population = std::move(population);
    return std::move(result_);
  }

 private:
  const ir::Module& original_;
  VariantEvaluator& evaluator_;
  EvolveOptions o_;
  std::mt19937_64 rng_;
  Stopwatch clock_;
  std::map<std::string, VariantScore> scores_;  ///< by the patch's JSON
  EvolveResult result_;
};

}  // namespace

std::vector<Individual> paretoFront(const std::vector<Individual>& population) {
  const std::vector<Objectives> objectives = objectivesOf(population);
  std::vector<Individual> front;
  std::set<std::string> seen;
  const auto fronts = nondominatedFronts(objectives);
  if (fronts.empty()) return front;
  for (size_t i : fronts[0])
    if (seen.insert(patchToJson(population[i].patch)).second) front.push_back(population[i]);
  std::stable_sort(front.begin(), front.end(),
                   [](const Individual& a, const Individual& b) { return a.score.ms < b.score.ms; });
  return front;
}

Expected<EvolveResult> evolve(const ir::Module& original, VariantEvaluator& evaluator, const EvolveOptions& options,
                              const std::function<void(const GenerationReport&)>& progress) {
  if (options.population < 2 || options.generations < 0 || options.elites < 0 || options.initialEdits < 1)
    return makeError(ErrorCode::InvalidArgument,
                     "kiln evolve needs --population of at least 2, --initial-edits of at least 1, and "
                     "no negative --generations or --elites");
  return Search(original, evaluator, options).run(progress);
}

}  // namespace kiln::evolve
