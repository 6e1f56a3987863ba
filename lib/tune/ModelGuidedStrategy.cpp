//===- lib/tune/ModelGuidedStrategy.cpp - Cost-model-guided search ---------===//
//
// The strategies sa, rl, sa-as and rl-as (kiln/tune/SearchStrategy.h). After
// a first batch (random, the incumbent's neighbours, or guided by transfer
// data when given), an XGBoost model refitted on every measured configuration
// (score = best time / time, 0 when invalid) ranks what an explorer proposes,
// and a sampler picks the batch: the top with an epsilon share of random
// configurations (AutoTVM), or adaptive sampling over the top 2 x batch
// (CHAMELEON), which may measure fewer when the candidates form few clusters.
// Started from the incumbent (sa-as and rl-as by default), the first round is
// its unmeasured one-knob neighbours, adjacent values first, and every later
// round begins with the model's best-predicted unmeasured neighbours of the
// incumbent: a trust region beside the global search (why: docs/tuning.md).
//
//===----------------------------------------------------------------------===//
#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "Exploration.h"
#include "kiln/support/Strings.h"

namespace kiln::tune {

using namespace codegen;

Expected<std::vector<double>> predictScores(TaskSpace& space, const CostModel& model, const std::vector<uint64_t>& indices) {
  std::vector<std::vector<float>> rows;
  std::vector<size_t> rowOf(indices.size(), SIZE_MAX);
  for (size_t i = 0; i < indices.size(); ++i)
    if (const std::vector<float>* f = space.features(indices[i])) {
      rowOf[i] = rows.size();
      rows.push_back(*f);
    }
  KILN_ASSIGN(std::vector<float> predicted, model.predict(rows));
  std::vector<double> scores(indices.size(), -std::numeric_limits<double>::infinity());
  for (size_t i = 0; i < indices.size(); ++i)
    if (rowOf[i] != SIZE_MAX) scores[i] = predicted[rowOf[i]];
  return scores;
}

namespace {

class ModelGuidedStrategy final : public SearchStrategy {
 public:
  ModelGuidedStrategy(std::string name, std::shared_ptr<TaskSpace> space, const StrategyOptions& options,
                      std::unique_ptr<Explorer> explorer, bool adaptive)
      : name_(std::move(name)), space_(std::move(space)), options_(options), rng_(options.seed ^ 0x5eed5a11ULL),
        model_(options.model), explorer_(std::move(explorer)), adaptive_(adaptive) {
    if (!options_.transfer.empty()) transferStatus_ = model_.fit(options_.transfer.x, options_.transfer.y, options_.transfer.groups);
    fromIncumbent_ = options_.start == SearchStart::Incumbent || (options_.start == SearchStart::Auto && adaptive_);
  }

  std::string name() const override { return name_; }

  Expected<std::vector<Config>> next(size_t count) override {
    KILN_TRY(transferStatus_);
    std::vector<uint64_t> picked;
    if (!model_.trained()) {  // nothing learned yet
      if (fromIncumbent_) picked = nearestNeighbours(count);
      if (picked.empty() && adaptive_) {  // cluster a random sample and measure one configuration per cluster
        std::vector<uint64_t> sample = randomUnvisited(std::max(options_.planSize, count));
        for (uint64_t i : sample) visited_.erase(i);
        picked = adaptiveSample(*space_, sample, visited_, count, rng_);
      } else if (picked.empty()) {
        picked = randomUnvisited(count);
      }
    } else {
      KILN_ASSIGN(std::vector<uint64_t> candidates,
                  explorer_->explore(*space_, model_, visited_, std::max(options_.planSize, count)));
      if (adaptive_ && candidates.size() > 2 * count) candidates.resize(2 * count);  // cluster the promising ones
      if (fromIncumbent_) {
        KILN_ASSIGN(picked, bestPredictedNeighbours(std::min<size_t>(2, count / 2)));
      }
      if (adaptive_) {
        std::set<uint64_t> taken = visited_;
        taken.insert(picked.begin(), picked.end());
        std::vector<uint64_t> sampled = adaptiveSample(*space_, candidates, taken, count - picked.size(), rng_);
        picked.insert(picked.end(), sampled.begin(), sampled.end());
      } else {
        size_t greedy = count - size_t(double(count) * options_.epsilon);
        for (uint64_t c : candidates)
          if (picked.size() < greedy && !visited_.count(c) && std::find(picked.begin(), picked.end(), c) == picked.end())
            picked.push_back(c);
      }
      for (uint64_t c : picked) visited_.insert(c);
      if (picked.size() < count && !adaptive_) {
        std::vector<uint64_t> more = randomUnvisited(count - picked.size());
        picked.insert(picked.end(), more.begin(), more.end());
      }
      if (picked.empty()) picked = randomUnvisited(count);  // the explorer found nothing new
    }
    std::vector<Config> out;
    for (uint64_t i : picked) {
      visited_.insert(i);
      out.push_back(space_->config(i));
    }
    return out;
  }

  Status update(const std::vector<MeasureResult>& results) override {
    for (const MeasureResult& r : results) {
      uint64_t index = space_->indexOf(r.config);
      visited_.insert(index);
      measured_.emplace_back(index, r.ok() ? r.ms : 0.0);
      if (r.ok() && r.ms < best_) best_ = r.ms, incumbent_ = index;
    }
    std::vector<std::vector<float>> x;
    std::vector<float> y;
    for (const auto& [index, ms] : measured_) {
      const std::vector<float>* f = space_->features(index);
      if (!f) continue;
      x.push_back(*f);
      y.push_back(ms > 0 ? float(best_ / ms) : 0.0f);
      if (ms > 0) explorer_->observe(index, best_ / ms);
    }
    if (x.empty() || (x.size() < 2 && options_.transfer.empty())) return Status::ok();
    std::vector<unsigned> groups{unsigned(x.size())};
    const TransferData& t = options_.transfer;
    if (!t.empty() && t.x.front().size() == x.front().size()) {  // this kernel's rows, then the other kernels'
      x.insert(x.end(), t.x.begin(), t.x.end());
      y.insert(y.end(), t.y.begin(), t.y.end());
      groups.insert(groups.end(), t.groups.begin(), t.groups.end());
    }
    return model_.fit(x, y, groups);
  }

 private:
  /// The incumbent's one-knob neighbours not measured or proposed yet (none without an incumbent).
  std::vector<uint64_t> unvisitedNeighbours() const {
    std::vector<uint64_t> out;
    if (incumbent_ == kNone) return out;
    for (uint64_t i : space_->neighbours(incumbent_))
      if (!visited_.count(i)) out.push_back(i);
    return out;
  }

  /// Up to `count` of them, the smallest steps first (a knob's value moved to
  /// the adjacent candidate before one further along its list), in random
  /// order among equal steps.
  std::vector<uint64_t> nearestNeighbours(size_t count) {
    std::vector<uint64_t> out = unvisitedNeighbours();
    rng_.shuffle(out);
    const std::vector<size_t> from = space_->digits(incumbent_);
    auto step = [&](uint64_t index) {
      const std::vector<size_t> to = space_->digits(index);
      size_t places = 0;
      for (size_t k = 0; k < to.size(); ++k) places += to[k] > from[k] ? to[k] - from[k] : from[k] - to[k];
      return places;
    };
    std::stable_sort(out.begin(), out.end(), [&](uint64_t a, uint64_t b) { return step(a) < step(b); });
    out.resize(std::min(out.size(), count));
    return out;
  }

  /// The `count` of them the model ranks highest.
  Expected<std::vector<uint64_t>> bestPredictedNeighbours(size_t count) {
    if (count == 0) return std::vector<uint64_t>{};
    std::vector<uint64_t> near = unvisitedNeighbours();
    KILN_ASSIGN(std::vector<double> scores, predictScores(*space_, model_, near));
    std::vector<size_t> order(near.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return scores[a] > scores[b]; });
    std::vector<uint64_t> out;
    for (size_t i : order)
      if (out.size() < count && std::isfinite(scores[i])) out.push_back(near[i]);
    return out;
  }

  std::vector<uint64_t> randomUnvisited(size_t count) {
    std::vector<uint64_t> out;
    const uint64_t n = space_->size();
    if (n <= 4096) {  // small: draw from what is left
      std::vector<uint64_t> left;
      for (uint64_t i = 0; i < n; ++i)
        if (!visited_.count(i)) left.push_back(i);
      rng_.shuffle(left);
      left.resize(std::min(left.size(), count));
      for (uint64_t i : left) visited_.insert(i);
      return left;
    }
    for (int tries = 0; out.size() < count && tries < 64 * int(count); ++tries) {
      uint64_t i = rng_.next() % n;
      if (visited_.insert(i).second) out.push_back(i);
    }
    return out;
  }

  std::string name_;
  std::shared_ptr<TaskSpace> space_;  ///< shared with the tuner, which records the same features
  StrategyOptions options_;
  SplitMix64 rng_;
  CostModel model_;
  std::unique_ptr<Explorer> explorer_;
  bool adaptive_;
  std::set<uint64_t> visited_;
  std::vector<std::pair<uint64_t, double>> measured_;  ///< index, ms (0: invalid)
  double best_ = std::numeric_limits<double>::infinity();
  static constexpr uint64_t kNone = UINT64_MAX;
  uint64_t incumbent_ = kNone;  ///< the fastest configuration measured
  bool fromIncumbent_ = false;   ///< first round and trust region from the incumbent (StrategyOptions::start)
  Status transferStatus_ = Status::ok();
};

/// random: uniform without repetition; grid: index order.
class EnumerationStrategy final : public SearchStrategy {
 public:
  EnumerationStrategy(bool random, const TuningTask& task, uint64_t seed)
      : random_(random), space_(task.space), size_(space_.size()), rng_(seed) {}
  std::string name() const override { return random_ ? "random" : "grid"; }

  Expected<std::vector<Config>> next(size_t count) override {
    std::vector<Config> out;
    if (!random_) {
      for (; out.size() < count && cursor_ < size_; ++cursor_) out.push_back(space_.configAt(cursor_));
      return out;
    }
    if (size_ <= 4096 && order_.empty() && cursor_ == 0) {  // a shuffled list of the whole space
      for (uint64_t i = 0; i < size_; ++i) order_.push_back(i);
      rng_.shuffle(order_);
    }
    if (size_ <= 4096) {
      for (; out.size() < count && cursor_ < order_.size(); ++cursor_) out.push_back(space_.configAt(order_[cursor_]));
      return out;
    }
    for (int tries = 0; out.size() < count && tries < 64 * int(count); ++tries) {
      uint64_t i = rng_.next() % size_;
      if (seen_.insert(i).second) out.push_back(space_.configAt(i));
    }
    return out;
  }
  Status update(const std::vector<MeasureResult>&) override { return Status::ok(); }

 private:
  bool random_;
  const KnobSpace& space_;
  uint64_t size_, cursor_ = 0;
  SplitMix64 rng_;
  std::vector<uint64_t> order_;
  std::set<uint64_t> seen_;
};

}  // namespace

const std::vector<std::string>& strategyNames() {
  static const std::vector<std::string> names{"random", "grid", "sa", "rl", "sa-as", "rl-as"};
  return names;
}

Expected<std::unique_ptr<SearchStrategy>> makeStrategy(const std::string& name, std::shared_ptr<TaskSpace> space,
                                                       const StrategyOptions& options) {
  if (name == "random" || name == "grid")
    return std::unique_ptr<SearchStrategy>(new EnumerationStrategy(name == "random", space->task(), options.seed));
  bool rl = name == "rl" || name == "rl-as", adaptive = name == "sa-as" || name == "rl-as";
  if (name != "sa" && !rl && !adaptive)
    return makeError(ErrorCode::InvalidArgument, "unknown tuning strategy '", name,
                     "' (strategies: ", joinStrings(strategyNames(), ", "), ")");
  std::unique_ptr<Explorer> explorer = rl ? makeRlExplorer(options) : makeAnnealingExplorer(options);
  return std::unique_ptr<SearchStrategy>(
      new ModelGuidedStrategy(name, std::move(space), options, std::move(explorer), adaptive));
}

Expected<std::unique_ptr<SearchStrategy>> makeStrategy(const std::string& name, const TuningTask& task,
                                                       const StrategyOptions& options) {
  return makeStrategy(name, std::make_shared<TaskSpace>(task), options);
}

}  // namespace kiln::tune
