//===- kiln/evolve/Nsga2.h - Non-dominated sorting and crowding -----*- C++ -*-===//
//
// NSGA-II (Deb et al.), as GEVO-ML uses it through DEAP: individuals are
// ranked by non-dominated sorting of their objectives (all minimized), and
// within a rank by crowding distance (larger first: the front's extremes
// and its sparse stretches are kept). Selection of the next generation and
// the tournaments that pick parents both read this order.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstddef>
#include <random>
#include <vector>

namespace kiln::evolve {

/// One individual's objectives, each to be minimized.
using Objectives = std::vector<double>;

/// True when `a` is no worse than `b` in every objective and better in one.
bool dominates(const Objectives& a, const Objectives& b);

/// Indices of `population` by front: front 0 holds those nothing dominates,
/// front 1 those only front 0 dominates, and so on.
std::vector<std::vector<size_t>> nondominatedFronts(const std::vector<Objectives>& population);

/// The crowding distance of each member of `front` (in its order): the sum
/// over objectives of the gap between its neighbours along that objective,
/// scaled by the front's range; infinite at either end.
std::vector<double> crowdingDistances(const std::vector<Objectives>& population, const std::vector<size_t>& front);

/// Each individual's front index and crowding distance.
struct Nsga2Rank {
  size_t front = 0;
  double crowding = 0;
  /// Lower front first, then larger crowding.
  bool betterThan(const Nsga2Rank& o) const { return front != o.front ? front < o.front : crowding > o.crowding; }
};
std::vector<Nsga2Rank> nsga2Ranks(const std::vector<Objectives>& population);

/// The `count` best individuals in NSGA-II's order (whole fronts first, the
/// last front cut by crowding distance), best first.
std::vector<size_t> selectNsga2(const std::vector<Objectives>& population, size_t count);

/// Binary tournament: the better of two individuals drawn at random.
size_t tournament(const std::vector<Nsga2Rank>& ranks, std::mt19937_64& rng);

}  // namespace kiln::evolve
