//===- lib/tune/RlExplorer.cpp - CHAMELEON's adaptive exploration -----------===//
//
// A policy network moves knobs: the state is each knob's normalized value
// position, the action one of {down, stay, up} per knob (a factorized
// softmax over a one-hidden-layer tanh network), and the reward the cost
// model's predicted improvement of the move. Each explore() call runs
// `chains` episodes of a few steps from the best measured configurations
// (and random ones), then trains the policy on them by policy gradient
// (REINFORCE with discounted returns and a mean baseline; CHAMELEON uses
// PPO's clipped objective, which this simpler update omits). The policy
// persists across calls, so exploration gets better as the model does.
// Every configuration an episode reaches is a candidate; the best predicted
// unmeasured ones are returned.
//
//===----------------------------------------------------------------------===//
#include <algorithm>
#include <cmath>
#include <map>

#include "Exploration.h"

namespace kiln::tune {

namespace {

constexpr int kHidden = 32;
constexpr int kEpisodeSteps = 8;
constexpr double kDiscount = 0.9;
constexpr double kLearningRate = 0.05;

class PolicyNetwork {
 public:
  PolicyNetwork(size_t inputs, SplitMix64& rng) : d_(inputs), w1_(kHidden * inputs), b1_(kHidden, 0.0),
                                                   w2_(3 * inputs * kHidden), b2_(3 * inputs, 0.0) {
    auto init = [&](std::vector<double>& w, double scale) {
      for (double& v : w) v = (rng.unit() * 2 - 1) * scale;
    };
    init(w1_, 1.0 / std::sqrt(double(std::max<size_t>(inputs, 1))));
    init(w2_, 1.0 / std::sqrt(double(kHidden)));
  }

  /// Hidden activations and per-knob action probabilities.
  void forward(const std::vector<double>& s, std::vector<double>& h, std::vector<double>& p) const {
    h.assign(kHidden, 0.0);
    for (int j = 0; j < kHidden; ++j) {
      double a = b1_[j];
      for (size_t i = 0; i < d_; ++i) a += w1_[j * d_ + i] * s[i];
      h[j] = std::tanh(a);
    }
    p.assign(3 * d_, 0.0);
    for (size_t o = 0; o < 3 * d_; ++o) {
      double a = b2_[o];
      for (int j = 0; j < kHidden; ++j) a += w2_[o * kHidden + j] * h[j];
      p[o] = a;
    }
    for (size_t k = 0; k < d_; ++k) {  // softmax over {down, stay, up}
      double m = std::max({p[3 * k], p[3 * k + 1], p[3 * k + 2]}), z = 0;
      for (int a = 0; a < 3; ++a) z += p[3 * k + a] = std::exp(p[3 * k + a] - m);
      for (int a = 0; a < 3; ++a) p[3 * k + a] /= z;
    }
  }

  /// Adds advantage * d log pi(actions | s) / d theta to the gradient.
  void accumulate(const std::vector<double>& s, const std::vector<int>& actions, double advantage) {
    if (g1_.empty()) g1_.assign(w1_.size(), 0.0), gb1_.assign(b1_.size(), 0.0), g2_.assign(w2_.size(), 0.0), gb2_.assign(b2_.size(), 0.0);
    std::vector<double> h, p;
    forward(s, h, p);
    std::vector<double> dh(kHidden, 0.0);
    for (size_t k = 0; k < d_; ++k)
      for (int a = 0; a < 3; ++a) {
        size_t o = 3 * k + a;
        double g = advantage * ((actions[k] == a ? 1.0 : 0.0) - p[o]);
        gb2_[o] += g;
        for (int j = 0; j < kHidden; ++j) g2_[o * kHidden + j] += g * h[j], dh[j] += g * w2_[o * kHidden + j];
      }
    for (int j = 0; j < kHidden; ++j) {
      double g = dh[j] * (1.0 - h[j] * h[j]);
      gb1_[j] += g;
      for (size_t i = 0; i < d_; ++i) g1_[j * d_ + i] += g * s[i];
    }
    ++samples_;
  }

  /// Gradient ascent with the accumulated gradient (mean over samples, clipped).
  void step() {
    if (!samples_) return;
    auto apply = [&](std::vector<double>& w, std::vector<double>& g) {
      for (size_t i = 0; i < w.size(); ++i) w[i] += kLearningRate * std::clamp(g[i] / double(samples_), -1.0, 1.0), g[i] = 0;
    };
    apply(w1_, g1_), apply(b1_, gb1_), apply(w2_, g2_), apply(b2_, gb2_);
    samples_ = 0;
  }

 private:
  size_t d_;
  std::vector<double> w1_, b1_, w2_, b2_;
  std::vector<double> g1_, gb1_, g2_, gb2_;
  size_t samples_ = 0;
};

class RlExplorer final : public Explorer {
 public:
  explicit RlExplorer(const StrategyOptions& o) : options_(o), rng_(o.seed ^ 0x7e1aULL) {}

  void observe(uint64_t index, double score) override { observed_[index] = score; }

  Expected<std::vector<uint64_t>> explore(TaskSpace& space, const CostModel& model, const std::set<uint64_t>& visited,
                                          size_t count) override {
    const auto& knobs = space.task().space.knobs;
    if (!policy_) policy_ = std::make_unique<PolicyNetwork>(knobs.size(), rng_);
    // Starts: the best measured configurations, then random ones.
    std::vector<std::pair<uint64_t, double>> best(observed_.begin(), observed_.end());
    std::stable_sort(best.begin(), best.end(), [](auto& a, auto& b) { return a.second > b.second; });
    std::vector<uint64_t> points;
    for (size_t i = 0; i < best.size() && points.size() < size_t(options_.chains) / 2; ++i) points.push_back(best[i].first);
    while (points.size() < size_t(std::max(options_.chains, 1))) points.push_back(rng_.next() % space.size());
    KILN_ASSIGN(std::vector<double> scores, predictScores(space, model, points));
    std::map<uint64_t, double> candidates;
    auto consider = [&](uint64_t index, double score) {
      if (!visited.count(index) && std::isfinite(score)) candidates[index] = score;
    };
    for (size_t i = 0; i < points.size(); ++i) consider(points[i], scores[i]);
    struct Step {
      std::vector<double> state;
      std::vector<int> actions;
      double reward;
    };
    std::vector<std::vector<Step>> episodes(points.size());
    for (int t = 0; t < kEpisodeSteps; ++t) {
      std::vector<uint64_t> moved(points.size());
      std::vector<std::vector<int>> actions(points.size());
      std::vector<std::vector<double>> states(points.size());
      for (size_t e = 0; e < points.size(); ++e) {
        std::vector<size_t> d = space.digits(points[e]);
        for (size_t k = 0; k < knobs.size(); ++k)
          states[e].push_back(knobs[k].values.size() > 1 ? double(d[k]) / double(knobs[k].values.size() - 1) : 0.0);
        std::vector<double> h, p;
        policy_->forward(states[e], h, p);
        for (size_t k = 0; k < knobs.size(); ++k) {
          double r = rng_.unit();
          int a = r < p[3 * k] ? 0 : r < p[3 * k] + p[3 * k + 1] ? 1 : 2;
          actions[e].push_back(a);
          int64_t next = int64_t(d[k]) + a - 1;
          d[k] = size_t(std::clamp<int64_t>(next, 0, int64_t(knobs[k].values.size()) - 1));
        }
        moved[e] = space.fromDigits(d);
      }
      KILN_ASSIGN(std::vector<double> movedScores, predictScores(space, model, moved));
      for (size_t e = 0; e < points.size(); ++e) {
        double reward = std::isfinite(movedScores[e]) ? movedScores[e] - (std::isfinite(scores[e]) ? scores[e] : movedScores[e]) : -1.0;
        episodes[e].push_back({states[e], actions[e], reward});
        consider(moved[e], movedScores[e]);
        if (std::isfinite(movedScores[e])) points[e] = moved[e], scores[e] = movedScores[e];
      }
    }
    train(episodes);
    std::vector<std::pair<uint64_t, double>> ranked(candidates.begin(), candidates.end());
    std::stable_sort(ranked.begin(), ranked.end(), [](auto& a, auto& b) { return a.second > b.second; });
    std::vector<uint64_t> out;
    for (size_t i = 0; i < ranked.size() && out.size() < count; ++i) out.push_back(ranked[i].first);
    return out;
  }

 private:
  template <typename Episodes>
  void train(const Episodes& episodes) {
    std::vector<double> returns;
    for (const auto& ep : episodes) {
      double g = 0;
      std::vector<double> r(ep.size());
      for (size_t t = ep.size(); t-- > 0;) r[t] = g = ep[t].reward + kDiscount * g;
      returns.insert(returns.end(), r.begin(), r.end());
    }
    double mean = 0, var = 0;
    for (double r : returns) mean += r;
    mean /= double(std::max<size_t>(returns.size(), 1));
    for (double r : returns) var += (r - mean) * (r - mean);
    double sd = std::sqrt(var / double(std::max<size_t>(returns.size(), 1))) + 1e-9;
    size_t i = 0;
    for (const auto& ep : episodes)
      for (const auto& s : ep) policy_->accumulate(s.state, s.actions, (returns[i++] - mean) / sd);
    policy_->step();
  }

  StrategyOptions options_;
  SplitMix64 rng_;
  std::unique_ptr<PolicyNetwork> policy_;
  std::map<uint64_t, double> observed_;
};

}  // namespace

std::unique_ptr<Explorer> makeRlExplorer(const StrategyOptions& options) { return std::make_unique<RlExplorer>(options); }

}  // namespace kiln::tune
