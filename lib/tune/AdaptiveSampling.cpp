//===- lib/tune/AdaptiveSampling.cpp - CHAMELEON's adaptive sampling -------===//
//
// The candidates an explorer returns crowd around a few promising regions;
// measuring all of them spends trials on near-duplicates. Adaptive sampling
// clusters them (k-means on each knob's normalized value position, k-means++
// seeding, for k = 1..maxSamples), takes the k at the knee of the loss curve
// (the point farthest below the chord from the first to the last k, curve
// and chord normalized), and measures one candidate per cluster: its
// best-predicted member (candidates come best first; CHAMELEON takes the
// member nearest the centroid, which measured worse here: bench/tuning.py).
// Sample synthesis: when that candidate was measured already, the cluster is
// represented by a configuration made of each knob's most common value
// among its members, or else by its first unmeasured member. The samples
// are returned best-predicted first.
//
//===----------------------------------------------------------------------===//
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "Exploration.h"

namespace kiln::tune {

namespace {

using Point = std::vector<double>;

double distance2(const Point& a, const Point& b) {
  double d = 0;
  for (size_t i = 0; i < a.size(); ++i) d += (a[i] - b[i]) * (a[i] - b[i]);
  return d;
}

struct Clustering {
  std::vector<Point> centroids;
  std::vector<size_t> assignment;
  double loss = 0;  ///< sum of squared distances to the assigned centroid
};

Clustering kmeans(const std::vector<Point>& points, size_t k, SplitMix64& rng) {
  Clustering c;
  c.centroids.push_back(points[rng.below(points.size())]);
  while (c.centroids.size() < k) {  // k-means++: far points are likelier seeds
    std::vector<double> weight;
    double total = 0;
    for (const Point& p : points) {
      double best = std::numeric_limits<double>::infinity();
      for (const Point& m : c.centroids) best = std::min(best, distance2(p, m));
      weight.push_back(best);
      total += best;
    }
    if (total <= 0) break;  // fewer distinct points than k
    double r = rng.unit() * total;
    size_t pick = 0;
    for (; pick + 1 < points.size() && r >= weight[pick]; ++pick) r -= weight[pick];
    c.centroids.push_back(points[pick]);
  }
  c.assignment.assign(points.size(), 0);
  for (int iteration = 0; iteration < 25; ++iteration) {
    bool moved = false;
    c.loss = 0;
    for (size_t i = 0; i < points.size(); ++i) {
      size_t best = 0;
      double bestD = std::numeric_limits<double>::infinity();
      for (size_t m = 0; m < c.centroids.size(); ++m)
        if (double d = distance2(points[i], c.centroids[m]); d < bestD) bestD = d, best = m;
      moved |= best != c.assignment[i];
      c.assignment[i] = best;
      c.loss += bestD;
    }
    if (!moved && iteration > 0) break;
    for (size_t m = 0; m < c.centroids.size(); ++m) {
      Point sum(points.front().size(), 0.0);
      size_t n = 0;
      for (size_t i = 0; i < points.size(); ++i)
        if (c.assignment[i] == m) {
          for (size_t d = 0; d < sum.size(); ++d) sum[d] += points[i][d];
          ++n;
        }
      if (n)
        for (double& v : sum) v /= double(n);
      if (n) c.centroids[m] = sum;
    }
  }
  return c;
}

/// The knee of a decreasing loss curve (losses[k-1] for k = 1..K).
size_t kneeOf(const std::vector<double>& losses) {
  const size_t n = losses.size();
  if (n <= 2) return n;
  const double first = losses.front(), last = losses.back(), span = first - last;
  if (span <= 0) return 1;
  size_t knee = 1;
  double farthest = -1;
  for (size_t i = 0; i < n; ++i) {
    double x = double(i) / double(n - 1), y = (losses[i] - last) / span;  // normalized: (0,1) .. (1,0)
    double below = (1.0 - x) - y;                                          // distance under the chord
    if (below > farthest) farthest = below, knee = i + 1;
  }
  return knee;
}

}  // namespace

std::vector<uint64_t> adaptiveSample(TaskSpace& space, const std::vector<uint64_t>& candidates,
                                     const std::set<uint64_t>& visited, size_t maxSamples, SplitMix64& rng) {
  if (candidates.size() <= 1 || maxSamples <= 1) {
    std::vector<uint64_t> out;
    for (uint64_t c : candidates)
      if (!visited.count(c) && out.size() < std::max<size_t>(maxSamples, 1)) out.push_back(c);
    return out;
  }
  const auto& knobs = space.task().space.knobs;
  std::vector<Point> points;
  for (uint64_t c : candidates) points.push_back(space.positions(c));
  const size_t K = std::min(maxSamples, candidates.size());
  std::vector<Clustering> runs;
  std::vector<double> losses;
  for (size_t k = 1; k <= K; ++k) {
    runs.push_back(kmeans(points, k, rng));
    losses.push_back(runs.back().loss);
  }
  const Clustering& chosen = runs[kneeOf(losses) - 1];
  std::vector<uint64_t> out;
  auto take = [&](uint64_t index) {
    if (visited.count(index) || std::find(out.begin(), out.end(), index) != out.end()) return false;
    out.push_back(index);
    return true;
  };
  for (size_t m = 0; m < chosen.centroids.size(); ++m) {
    std::vector<size_t> members;
    for (size_t i = 0; i < points.size(); ++i)
      if (chosen.assignment[i] == m) members.push_back(i);
    if (members.empty()) continue;
    // The cluster's best-predicted member (candidates come best first).
    if (take(candidates[members.front()])) continue;
    // Synthesis: each knob's most common value among the members.
    std::vector<size_t> mode(knobs.size());
    for (size_t k = 0; k < knobs.size(); ++k) {
      std::map<size_t, size_t> counts;
      for (size_t i : members) ++counts[space.digits(candidates[i])[k]];
      mode[k] = std::max_element(counts.begin(), counts.end(), [](auto& a, auto& b) { return a.second < b.second; })->first;
    }
    if (take(space.fromDigits(mode))) continue;
    for (size_t i : members)
      if (take(candidates[i])) break;
  }
  // Best-predicted first (the candidates' order, synthesized ones last): the
  // most promising configuration of a round is measured first.
  std::map<uint64_t, size_t> position;
  for (size_t i = 0; i < candidates.size(); ++i) position.emplace(candidates[i], i);
  auto rank = [&](uint64_t index) { return position.count(index) ? position.at(index) : SIZE_MAX; };
  std::stable_sort(out.begin(), out.end(), [&](uint64_t a, uint64_t b) { return rank(a) < rank(b); });
  return out;
}

}  // namespace kiln::tune
