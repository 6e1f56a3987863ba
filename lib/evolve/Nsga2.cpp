//===- lib/evolve/Nsga2.cpp - Non-dominated sorting and crowding -----------===//
//
// See kiln/evolve/Nsga2.h. The sort is Deb's fast non-dominated sort
// (O(M N^2)): populations here are tens of individuals.
//
//===----------------------------------------------------------------------===//
#include "kiln/evolve/Nsga2.h"

#include <algorithm>
#include <limits>
#include <numeric>

namespace kiln::evolve {

bool dominates(const Objectives& a, const Objectives& b) {
  bool better = false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] > b[i]) return false;
    better = better || a[i] < b[i];
  }
  return better;
}

std::vector<std::vector<size_t>> nondominatedFronts(const std::vector<Objectives>& population) {
  const size_t n = population.size();
  std::vector<std::vector<size_t>> dominated(n);  // whom each dominates
  std::vector<size_t> dominators(n, 0);           // how many dominate each
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j < n; ++j)
      if (dominates(population[i], population[j])) dominated[i].push_back(j), ++dominators[j];
  std::vector<std::vector<size_t>> fronts;
  std::vector<size_t> current;
  for (size_t i = 0; i < n; ++i)
    if (dominators[i] == 0) current.push_back(i);
  while (!current.empty()) {
    std::vector<size_t> next;
    for (size_t i : current)
      for (size_t j : dominated[i])
        if (--dominators[j] == 0) next.push_back(j);
    std::sort(next.begin(), next.end());
    fronts.push_back(std::move(current));
    current = std::move(next);
  }
  return fronts;
}

std::vector<double> crowdingDistances(const std::vector<Objectives>& population, const std::vector<size_t>& front) {
  const size_t n = front.size();
  std::vector<double> distance(n, 0);
  if (n == 0) return distance;
  const double inf = std::numeric_limits<double>::infinity();
  for (size_t m = 0; m < population[front[0]].size(); ++m) {
    std::vector<size_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return population[front[a]][m] < population[front[b]][m]; });
    const double lo = population[front[order.front()]][m], hi = population[front[order.back()]][m];
    distance[order.front()] = distance[order.back()] = inf;
    if (hi <= lo) continue;
    for (size_t k = 1; k + 1 < n; ++k)
      distance[order[k]] += (population[front[order[k + 1]]][m] - population[front[order[k - 1]]][m]) / (hi - lo);
  }
  return distance;
}

std::vector<Nsga2Rank> nsga2Ranks(const std::vector<Objectives>& population) {
  std::vector<Nsga2Rank> ranks(population.size());
  const auto fronts = nondominatedFronts(population);
  for (size_t f = 0; f < fronts.size(); ++f) {
    const std::vector<double> d = crowdingDistances(population, fronts[f]);
    for (size_t k = 0; k < fronts[f].size(); ++k) ranks[fronts[f][k]] = {f, d[k]};
  }
  return ranks;
}

std::vector<size_t> selectNsga2(const std::vector<Objectives>& population, size_t count) {
  const std::vector<Nsga2Rank> ranks = nsga2Ranks(population);
  std::vector<size_t> order(population.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return ranks[a].betterThan(ranks[b]); });
  order.resize(std::min(count, order.size()));
  return order;
}

size_t tournament(const std::vector<Nsga2Rank>& ranks, std::mt19937_64& rng) {
  std::uniform_int_distribution<size_t> pick(0, ranks.size() - 1);
  const size_t a = pick(rng), b = pick(rng);
  return ranks[b].betterThan(ranks[a]) ? b : a;
}

}  // namespace kiln::evolve
