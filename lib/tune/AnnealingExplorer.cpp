//===- lib/tune/AnnealingExplorer.cpp - Simulated annealing on the model ---===//
//
// AutoTVM's explorer: `chains` points walk the knob space, each step moving
// one knob of every point; a move to a lower predicted score is accepted
// with probability exp((new - old) / T), T falling linearly from 1 to 0.
// Every unvisited point seen enters a top list; the walk stops early when
// that list has not changed for a third of the steps. The chains persist
// between calls, so later batches continue where the last walk ended.
//
//===----------------------------------------------------------------------===//
#include <algorithm>
#include <cmath>
#include <map>

#include "Exploration.h"

namespace kiln::tune {

namespace {

class AnnealingExplorer final : public Explorer {
 public:
  explicit AnnealingExplorer(const StrategyOptions& o) : options_(o), rng_(o.seed ^ 0xa11ea1ULL) {}

  Expected<std::vector<uint64_t>> explore(TaskSpace& space, const CostModel& model, const std::set<uint64_t>& visited,
                                          size_t count) override {
    if (points_.empty())
      for (int c = 0; c < options_.chains; ++c) points_.push_back(rng_.next() % space.size());
    KILN_ASSIGN(std::vector<double> scores, predictScores(space, model, points_));
    std::map<uint64_t, double> top;  // unvisited index -> predicted score
    auto consider = [&](uint64_t index, double score) -> bool {
      if (visited.count(index) || top.count(index) || !std::isfinite(score)) return false;
      if (top.size() < count) {
        top.emplace(index, score);
        return true;
      }
      auto worst = std::min_element(top.begin(), top.end(), [](auto& a, auto& b) { return a.second < b.second; });
      if (score <= worst->second) return false;
      top.erase(worst);
      top.emplace(index, score);
      return true;
    };
    for (size_t i = 0; i < points_.size(); ++i) consider(points_[i], scores[i]);
    int unchanged = 0;
    const int steps = std::max(options_.annealSteps, 1);
    for (int step = 0; step < steps && unchanged < std::max(steps / 3, 5); ++step) {
      const double temperature = 1.0 - double(step) / double(steps);
      std::vector<uint64_t> moved;
      for (uint64_t p : points_) moved.push_back(space.neighbour(p, rng_));
      KILN_ASSIGN(std::vector<double> movedScores, predictScores(space, model, moved));
      bool changed = false;
      for (size_t i = 0; i < points_.size(); ++i) {
        changed |= consider(moved[i], movedScores[i]);
        double delta = movedScores[i] - scores[i];
        bool accept = std::isfinite(movedScores[i]) &&
                      (delta >= 0 || (temperature > 0 && rng_.unit() < std::exp(delta / temperature)));
        if (accept) points_[i] = moved[i], scores[i] = movedScores[i];
      }
      unchanged = changed ? 0 : unchanged + 1;
    }
    std::vector<std::pair<uint64_t, double>> ranked(top.begin(), top.end());
    std::stable_sort(ranked.begin(), ranked.end(), [](auto& a, auto& b) { return a.second > b.second; });
    std::vector<uint64_t> out;
    for (const auto& [index, score] : ranked) out.push_back(index);
    return out;
  }

 private:
  StrategyOptions options_;
  SplitMix64 rng_;
  std::vector<uint64_t> points_;
};

}  // namespace

std::unique_ptr<Explorer> makeAnnealingExplorer(const StrategyOptions& options) {
  return std::make_unique<AnnealingExplorer>(options);
}

}  // namespace kiln::tune
