//===- lib/select/EvolveStrategy.cpp - NSGA-II over pass sequences ---------===//
//
// The `evolve` strategy (Deb et al.'s NSGA-II, as GEVO-ML in shared/seeds/000
// uses it for IR edits): a genome is a sequence of distinct passes of the
// pruned space; the objectives are latency and compile time, both minimised.
// Generation 0 is the space in ordering-rule order plus random sequences;
// each generation breeds P children by binary tournament (front, then
// crowding distance), order-preserving one-point crossover (a prefix of one
// parent, then the other's passes after a cut that the child lacks) and
// mutation (swap, drop or insert a pass), and keeps the best P of parents and
// children by front and crowding. A sequence seen before is not evaluated
// again. The final population's first front is the reported Pareto front.
//
//===----------------------------------------------------------------------===//
#include <algorithm>
#include <limits>
#include <map>

#include "kiln/select/Strategies.h"

namespace kiln::select {
namespace {

using Genome = std::vector<size_t>;  // indices into the space's passes

struct Individual {
  Genome genome;
  std::string label;
  Evaluation eval;
  int front = 0;
  double crowding = 0;
};

void assignFronts(std::vector<Individual>& pop) {
  std::vector<Evaluation> points;
  for (const Individual& i : pop) points.push_back(i.eval);
  std::vector<int> ranks = paretoRanks(points);
  for (size_t i = 0; i < pop.size(); ++i) pop[i].front = ranks[i];
  for (Individual& i : pop) i.crowding = 0;
  const double inf = std::numeric_limits<double>::infinity();
  for (int front = 0;; ++front) {
    std::vector<Individual*> members;
    for (Individual& i : pop)
      if (i.front == front) members.push_back(&i);
    if (members.empty()) break;
    for (int objective = 0; objective < 2; ++objective) {
      auto value = [&](const Individual* i) { return objective == 0 ? i->eval.latencyMs : i->eval.compileMs; };
      std::sort(members.begin(), members.end(), [&](auto* a, auto* b) { return value(a) < value(b); });
      double span = value(members.back()) - value(members.front());
      members.front()->crowding = members.back()->crowding = inf;
      for (size_t k = 1; k + 1 < members.size(); ++k)
        if (span > 0) members[k]->crowding += (value(members[k + 1]) - value(members[k - 1])) / span;
    }
  }
}

bool better(const Individual& a, const Individual& b) {
  return a.front != b.front ? a.front < b.front : a.crowding > b.crowding;
}

class Evolution {
 public:
  Evolution(const StrategySpec& spec, const StrategyInputs& in, const Evaluate& evaluate)
      : spec_(spec), pool_(in.space->passes), evaluate_(evaluate), rng_(in.seed ^ 0x65766f6c7665ULL) {}

  Expected<StrategyResult> run() {
    if (pool_.empty())
      return Error(ErrorCode::InvalidArgument, "strategy '" + spec_.text + "': the pruned space of this model is empty");
    std::vector<Individual> population;
    Genome ruled(pool_.size());
    for (size_t i = 0; i < ruled.size(); ++i) ruled[i] = i;
    KILN_TRY(add(population, ruled, 0));
    for (int attempts = 0; int(population.size()) < spec_.count && attempts < 20 * spec_.count; ++attempts) {
      Genome g = ruled;
      rng_.shuffle(g);
      g.resize(1 + rng_.below(g.size()));
      KILN_TRY(add(population, g, 0));
    }
    assignFronts(population);
    for (int generation = 1; generation <= spec_.generations; ++generation) {
      std::vector<Individual> children;
      for (int attempts = 0; int(children.size()) < spec_.count && attempts < 20 * spec_.count; ++attempts) {
        const Individual& a = tournament(population);
        const Individual& b = tournament(population);
        Genome child = rng_.unit() < 0.9 ? crossover(a.genome, b.genome) : a.genome;
        mutate(child);
        if (rng_.unit() < 0.3) mutate(child);
        KILN_TRY(add(children, child, generation));
      }
      for (Individual& c : children) population.push_back(std::move(c));
      assignFronts(population);
      std::stable_sort(population.begin(), population.end(), better);
      if (int(population.size()) > spec_.count) population.resize(size_t(spec_.count));
      assignFronts(population);
    }
    for (const Individual& i : population)
      if (i.front == 0 && i.eval.ok) result_.paretoFront.push_back(i.label);
    result_.note = std::to_string(result_.candidates.size()) + " distinct sequences evaluated over " +
                   std::to_string(spec_.generations) + " generations of " + std::to_string(spec_.count);
    return std::move(result_);
  }

 private:
  /// Evaluates a genome not seen before and adds it to `into`.
  Status add(std::vector<Individual>& into, const Genome& genome, int generation) {
    if (seen_.count(genome)) return Status::ok();
    std::vector<const passes::PassInfo*> passes;
    for (size_t i : genome) passes.push_back(pool_[i]);
    Candidate c{spec_.text,
                "evolve-g" + std::to_string(generation) + "-" + std::to_string(++bornIn_[generation]),
                passes::pipelineOf(passes), generation == 0 && genome.size() == pool_.size() && seen_.empty()
                                                 ? "the pruned space in ordering-rule order"
                                                 : ""};
    KILN_ASSIGN(Evaluation e, evaluate_(c));
    seen_[genome] = e;
    into.push_back(Individual{genome, c.label, e});
    result_.candidates.push_back(std::move(c));
    return Status::ok();
  }

  const Individual& tournament(const std::vector<Individual>& pop) {
    const Individual& a = pop[rng_.below(pop.size())];
    const Individual& b = pop[rng_.below(pop.size())];
    return better(b, a) ? b : a;
  }

  Genome crossover(const Genome& a, const Genome& b) {
    Genome child(a.begin(), a.begin() + std::ptrdiff_t(1 + rng_.below(a.size())));
    for (size_t k = rng_.below(b.size() + 1); k < b.size(); ++k)
      if (std::find(child.begin(), child.end(), b[k]) == child.end()) child.push_back(b[k]);
    return child;
  }

  void mutate(Genome& g) {
    std::vector<size_t> missing;
    for (size_t i = 0; i < pool_.size(); ++i)
      if (std::find(g.begin(), g.end(), i) == g.end()) missing.push_back(i);
    switch (rng_.below(3)) {
      case 0:
        if (g.size() > 1) std::swap(g[rng_.below(g.size())], g[rng_.below(g.size())]);
        break;
      case 1:
        if (g.size() > 1) g.erase(g.begin() + std::ptrdiff_t(rng_.below(g.size())));
        break;
      default:
        if (!missing.empty())
          g.insert(g.begin() + std::ptrdiff_t(rng_.below(g.size() + 1)), missing[rng_.below(missing.size())]);
    }
  }

  const StrategySpec& spec_;
  std::vector<const passes::PassInfo*> pool_;
  const Evaluate& evaluate_;
  StrategyRandom rng_;
  std::map<Genome, Evaluation> seen_;
  std::map<int, int> bornIn_;
  StrategyResult result_;
};

}  // namespace

Expected<StrategyResult> runEvolve(const StrategySpec& spec, const StrategyInputs& inputs, const Evaluate& evaluate) {
  return Evolution(spec, inputs, evaluate).run();
}

}  // namespace kiln::select
