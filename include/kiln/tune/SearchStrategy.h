//===- kiln/tune/SearchStrategy.h - Choosing what to measure next -*- C++ -*-===//
//
// One interface for every way of exploring a task's knob space: next(n)
// proposes up to n configurations never proposed before (none when the
// space is exhausted), update() receives what measuring them gave. All are
// seeded and reproducible (strategyNames lists them).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kiln/support/Random.h"
#include "kiln/tune/CostModel.h"
#include "kiln/tune/Measurer.h"
#include "kiln/tune/TuningTask.h"

namespace kiln::tune {

/// A task's knob space addressed by index (mixed radix, first knob fastest),
/// with the cost model's features of each configuration, computed on first
/// use by lowering it (nullopt when it does not lower) and cached.
class TaskSpace {
 public:
  explicit TaskSpace(const TuningTask& task);
  const TuningTask& task() const { return task_; }
  uint64_t size() const { return size_; }
  codegen::Config config(uint64_t index) const { return task_.space.configAt(index); }
  /// The index of a configuration of this space (every knob set to a candidate).
  uint64_t indexOf(const codegen::Config& c) const;
  /// Position of each knob's value in its candidate list.
  std::vector<size_t> digits(uint64_t index) const;
  /// Each knob's value position scaled to [0, 1] (0 for a knob with one value):
  /// the coordinates explorers and samplers measure distances and moves in.
  std::vector<double> positions(uint64_t index) const;
  uint64_t fromDigits(const std::vector<size_t>& digits) const;
  /// A configuration differing from `index` in one knob, chosen at random.
  uint64_t neighbour(uint64_t index, SplitMix64& rng) const;
  /// Every configuration differing from `index` in one knob (knob by knob, values in order).
  std::vector<uint64_t> neighbours(uint64_t index) const;
  const std::vector<float>* features(uint64_t index);
  /// A hash of the kernel IR the configuration lowers to (names aside):
  /// configurations with equal keys compile to the same code (e.g. a knob
  /// another knob's value makes irrelevant). Nothing when it does not lower.
  std::optional<uint64_t> codeKey(uint64_t index);

 private:
  struct Lowered {
    std::optional<std::vector<float>> features;
    std::optional<uint64_t> codeKey;
  };
  const Lowered& lowered(uint64_t index);
  const TuningTask& task_;
  uint64_t size_;
  std::map<uint64_t, Lowered> lowered_;
};

/// Measurements of other kernels of the same template (earlier tuning logs,
/// same device): feature rows, scores normalized within each kernel (best
/// time / time), and the row count of each kernel (ranking groups). The
/// model-guided strategies train on them beside their own results, so even
/// their first batch is guided (AutoTVM's transfer learning).
struct TransferData {
  std::vector<std::vector<float>> x;
  std::vector<float> y;
  std::vector<unsigned> groups;
  bool empty() const { return x.empty(); }
};

/// Where a model-guided strategy searches from: its first round (before the model has learned
/// anything), and whether each later round begins with the incumbent's best-predicted neighbours.
enum class SearchStart {
  Auto,       ///< Incumbent for sa-as and rl-as, Random for sa and rl
  Random,     ///< a random first round (AutoTVM; the adaptive strategies cluster it), no trust region
  Incumbent,  ///< the incumbent's one-knob neighbours first (the default schedule's), then a trust region around it
};

struct StrategyOptions {
  uint64_t seed = 0;
  SearchStart start = SearchStart::Auto;
  size_t planSize = 64;      ///< candidates the explorer hands to the sampler
  int chains = 32;           ///< annealing: parallel chains
  int annealSteps = 60;      ///< annealing: steps per call (stops early when the top list settles)
  double epsilon = 0.1;      ///< share of a greedy batch taken at random
  CostModelOptions model;
  TransferData transfer;     ///< rows of other kernels (model-guided strategies)
};

class SearchStrategy {
 public:
  virtual ~SearchStrategy() = default;
  virtual std::string name() const = 0;
  /// Up to `count` configurations not proposed before; empty when exhausted.
  virtual Expected<std::vector<codegen::Config>> next(size_t count) = 0;
  /// The results of configurations `next` proposed (valid or not).
  virtual Status update(const std::vector<MeasureResult>& results) = 0;
};

/// random, grid, sa, rl, sa-as, rl-as:
///   random     uniform samples without repetition
///   grid       the space in index order (the first knob varies fastest)
///   sa         AutoTVM: an XGBoost cost model retrained on every result;
///              simulated annealing over the model's predictions (persistent
///              chains) finds the most promising unmeasured configurations;
///              a batch is the top of that list plus a share of random ones
///   rl         CHAMELEON's adaptive exploration: a policy network that moves
///              knobs up or down, trained by policy gradient on the cost
///              model's predicted improvement, replaces annealing
///   sa-as      annealing, then CHAMELEON's adaptive sampling: k-means over
///              the top candidates with the cluster count at the knee of the
///              loss curve, one configuration per cluster (started at
///              random, the first round: clusters of a random sample), and
///              sample synthesis (each knob's most common value in the
///              cluster) for clusters whose representative was already
///              measured
///   rl-as      CHAMELEON: adaptive exploration + adaptive sampling
///
/// sa-as and rl-as also work from the incumbent (the fastest configuration
/// measured, at first the default schedule): their first round is its
/// one-knob neighbours (adjacent values first) instead of a random sample,
/// and every later round begins with the model's two best-predicted
/// unmeasured neighbours of the incumbent (`--start`, StrategyOptions::start;
/// sa and rl start at random, as AutoTVM does).
const std::vector<std::string>& strategyNames();
Expected<std::unique_ptr<SearchStrategy>> makeStrategy(const std::string& name, const TuningTask& task,
                                                       const StrategyOptions& options);
/// The same on a space the caller shares (its feature cache serves both).
Expected<std::unique_ptr<SearchStrategy>> makeStrategy(const std::string& name, std::shared_ptr<TaskSpace> space,
                                                       const StrategyOptions& options);

}  // namespace kiln::tune
