//===- lib/tune/Exploration.h - Explorers and samplers (private) ----------===//
//
// The parts the model-guided strategies are made of: an explorer walks the
// knob space on the cost model's predictions and returns the unmeasured
// configurations it ranks highest (simulated annealing, or CHAMELEON's
// policy-gradient agent); adaptive sampling picks the few of them worth
// measuring.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <memory>
#include <set>
#include <vector>

#include "kiln/tune/SearchStrategy.h"

namespace kiln::tune {

/// Predicted scores of configurations (higher is better); those that do not lower get -infinity.
Expected<std::vector<double>> predictScores(TaskSpace& space, const CostModel& model, const std::vector<uint64_t>& indices);

class Explorer {
 public:
  virtual ~Explorer() = default;
  /// Up to `count` configurations not in `visited`, best predicted first.
  virtual Expected<std::vector<uint64_t>> explore(TaskSpace& space, const CostModel& model,
                                                  const std::set<uint64_t>& visited, size_t count) = 0;
  /// A measured configuration and its score (1 = the best so far's speed), for explorers that restart from good points.
  virtual void observe(uint64_t /*index*/, double /*score*/) {}
};
std::unique_ptr<Explorer> makeAnnealingExplorer(const StrategyOptions& options);
std::unique_ptr<Explorer> makeRlExplorer(const StrategyOptions& options);

/// CHAMELEON's adaptive sampling: at most `maxSamples` configurations to
/// measure out of `candidates` (k-means, knee of the loss curve, synthesis
/// of unvisited representatives).
std::vector<uint64_t> adaptiveSample(TaskSpace& space, const std::vector<uint64_t>& candidates,
                                     const std::set<uint64_t>& visited, size_t maxSamples, SplitMix64& rng);

}  // namespace kiln::tune
