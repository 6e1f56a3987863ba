//===- lib/tune/RlExplorer.cpp - CHAMELEON's adaptive exploration -----------===//
//
// An actor-critic agent moves knobs (CHAMELEON's adaptive exploration): the
// state is each knob's normalized value position, the action one of {down,
// stay, up} per knob (a factorized softmax), the reward the cost model's
// predicted improvement of the move. Policy and value heads share a tanh
// hidden layer. Each explore() call runs `chains` episodes of a few steps
// from the best measured configurations (and random ones), then trains the
// agent on them with PPO as CHAMELEON does (its appendix's settings:
// discount 0.9, GAE 0.99, 3 epochs, clipping 0.3, value coefficient 1,
// entropy coefficient 0.1, Adam at 1e-3). The agent persists across calls,
// so exploration gets better as the model does. Every configuration an
// episode reaches is a candidate; the best predicted unmeasured ones are
// returned.
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
constexpr double kDiscount = 0.9, kGae = 0.99;
constexpr int kEpochs = 3;
constexpr size_t kMinibatch = 32;
constexpr double kClip = 0.3, kValueCoefficient = 1.0, kEntropyCoefficient = 0.1;
constexpr double kLearningRate = 1e-3;

/// One step of an episode, as PPO needs it.
struct Step {
  std::vector<double> state;
  std::vector<int> actions;     ///< per knob: 0 down, 1 stay, 2 up
  double logProbability = 0;    ///< of the actions under the policy that chose them
  double value = 0;             ///< the critic's estimate when they were chosen
  double reward = 0;
  double advantage = 0, target = 0;  ///< filled in before training
};

/// Policy (3 logits per knob) and value heads over one shared tanh layer;
/// all parameters in one vector so Adam updates them alike.
class ActorCritic {
 public:
  ActorCritic(size_t knobs, SplitMix64& rng) : d_(knobs), params_(size(), 0.0), m_(size(), 0.0), v_(size(), 0.0) {
    auto init = [&](size_t offset, size_t n, double scale) {
      for (size_t i = 0; i < n; ++i) params_[offset + i] = (rng.unit() * 2 - 1) * scale;
    };
    init(w1(), kHidden * d_, 1.0 / std::sqrt(double(std::max<size_t>(d_, 1))));
    init(w2(), 3 * d_ * kHidden, 1.0 / std::sqrt(double(kHidden)));
    init(wv(), kHidden, 1.0 / std::sqrt(double(kHidden)));
  }

  struct Output {
    std::vector<double> hidden, probabilities;  ///< probabilities[3k + a]
    double value = 0;
  };

  Output forward(const std::vector<double>& s) const {
    Output out;
    out.hidden.assign(kHidden, 0.0);
    for (int j = 0; j < kHidden; ++j) {
      double a = params_[b1() + j];
      for (size_t i = 0; i < d_; ++i) a += params_[w1() + j * d_ + i] * s[i];
      out.hidden[j] = std::tanh(a);
    }
    std::vector<double>& p = out.probabilities;
    p.assign(3 * d_, 0.0);
    for (size_t o = 0; o < 3 * d_; ++o) {
      double a = params_[b2() + o];
      for (int j = 0; j < kHidden; ++j) a += params_[w2() + o * kHidden + j] * out.hidden[j];
      p[o] = a;
    }
    for (size_t k = 0; k < d_; ++k) {  // softmax over {down, stay, up}
      double m = std::max({p[3 * k], p[3 * k + 1], p[3 * k + 2]}), z = 0;
      for (int a = 0; a < 3; ++a) z += p[3 * k + a] = std::exp(p[3 * k + a] - m);
      for (int a = 0; a < 3; ++a) p[3 * k + a] /= z;
    }
    out.value = params_[bv()];
    for (int j = 0; j < kHidden; ++j) out.value += params_[wv() + j] * out.hidden[j];
    return out;
  }

  static double logProbability(const Output& out, const std::vector<int>& actions) {
    double lp = 0;
    for (size_t k = 0; k < actions.size(); ++k) lp += std::log(std::max(out.probabilities[3 * k + actions[k]], 1e-12));
    return lp;
  }

  /// Adds the gradient of PPO's objective at one step (to be maximized:
  /// clipped surrogate - value loss + entropy bonus) to the accumulator.
  void accumulate(const Step& step) {
    if (grad_.empty()) grad_.assign(size(), 0.0);
    Output out = forward(step.state);
    const std::vector<double>& p = out.probabilities;
    const double ratio = std::exp(logProbability(out, step.actions) - step.logProbability);
    // The clipped surrogate has no gradient where clipping binds.
    const bool clipped = (step.advantage > 0 && ratio > 1 + kClip) || (step.advantage < 0 && ratio < 1 - kClip);
    const double policyWeight = clipped ? 0.0 : step.advantage * ratio;
    std::vector<double> dh(kHidden, 0.0);
    for (size_t k = 0; k < d_; ++k) {
      double entropy = 0;
      for (int a = 0; a < 3; ++a) entropy -= p[3 * k + a] * std::log(std::max(p[3 * k + a], 1e-12));
      for (int a = 0; a < 3; ++a) {
        size_t o = 3 * k + a;
        double logP = std::log(std::max(p[o], 1e-12));
        double g = policyWeight * ((step.actions[k] == a ? 1.0 : 0.0) - p[o]) - kEntropyCoefficient * p[o] * (logP + entropy);
        grad_[b2() + o] += g;
        for (int j = 0; j < kHidden; ++j) grad_[w2() + o * kHidden + j] += g * out.hidden[j], dh[j] += g * params_[w2() + o * kHidden + j];
      }
    }
    const double gv = -kValueCoefficient * (out.value - step.target);  // d/dV of -c (V - target)^2 / 2
    grad_[bv()] += gv;
    for (int j = 0; j < kHidden; ++j) grad_[wv() + j] += gv * out.hidden[j], dh[j] += gv * params_[wv() + j];
    for (int j = 0; j < kHidden; ++j) {
      double g = dh[j] * (1.0 - out.hidden[j] * out.hidden[j]);
      grad_[b1() + j] += g;
      for (size_t i = 0; i < d_; ++i) grad_[w1() + j * d_ + i] += g * step.state[i];
    }
    ++samples_;
  }

  /// One Adam ascent step with the mean accumulated gradient.
  void step() {
    if (!samples_) return;
    constexpr double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
    ++t_;
    const double c1 = 1 - std::pow(beta1, double(t_)), c2 = 1 - std::pow(beta2, double(t_));
    for (size_t i = 0; i < params_.size(); ++i) {
      double g = grad_[i] / double(samples_);
      m_[i] = beta1 * m_[i] + (1 - beta1) * g;
      v_[i] = beta2 * v_[i] + (1 - beta2) * g * g;
      params_[i] += kLearningRate * (m_[i] / c1) / (std::sqrt(v_[i] / c2) + eps);
      grad_[i] = 0;
    }
    samples_ = 0;
  }

 private:
  // Offsets of each tensor in params_.
  size_t w1() const { return 0; }
  size_t b1() const { return w1() + kHidden * d_; }
  size_t w2() const { return b1() + kHidden; }
  size_t b2() const { return w2() + 3 * d_ * kHidden; }
  size_t wv() const { return b2() + 3 * d_; }
  size_t bv() const { return wv() + kHidden; }
  size_t size() const { return bv() + 1; }

  size_t d_;
  std::vector<double> params_, m_, v_, grad_;
  size_t samples_ = 0;
  int64_t t_ = 0;
};

class RlExplorer final : public Explorer {
 public:
  explicit RlExplorer(const StrategyOptions& o) : options_(o), rng_(o.seed ^ 0x7e1aULL) {}

  void observe(uint64_t index, double score) override { observed_[index] = score; }

  Expected<std::vector<uint64_t>> explore(TaskSpace& space, const CostModel& model, const std::set<uint64_t>& visited,
                                          size_t count) override {
    const auto& knobs = space.task().space.knobs;
    if (!agent_) agent_ = std::make_unique<ActorCritic>(knobs.size(), rng_);
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
    std::vector<std::vector<Step>> episodes(points.size());
    for (int t = 0; t < kEpisodeSteps; ++t) {
      std::vector<uint64_t> moved(points.size());
      for (size_t e = 0; e < points.size(); ++e) {
        std::vector<size_t> d = space.digits(points[e]);
        Step step;
        step.state = space.positions(points[e]);
        ActorCritic::Output out = agent_->forward(step.state);
        for (size_t k = 0; k < knobs.size(); ++k) {
          const double* p = &out.probabilities[3 * k];
          double r = rng_.unit();
          int a = r < p[0] ? 0 : r < p[0] + p[1] ? 1 : 2;
          step.actions.push_back(a);
          int64_t next = int64_t(d[k]) + a - 1;
          d[k] = size_t(std::clamp<int64_t>(next, 0, int64_t(knobs[k].values.size()) - 1));
        }
        step.logProbability = ActorCritic::logProbability(out, step.actions);
        step.value = out.value;
        episodes[e].push_back(std::move(step));
        moved[e] = space.fromDigits(d);
      }
      KILN_ASSIGN(std::vector<double> movedScores, predictScores(space, model, moved));
      for (size_t e = 0; e < points.size(); ++e) {
        episodes[e].back().reward =
            std::isfinite(movedScores[e]) ? movedScores[e] - (std::isfinite(scores[e]) ? scores[e] : movedScores[e]) : -1.0;
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
  /// PPO: generalized advantage estimates (an episode's end is terminal),
  /// normalized, then kEpochs passes over the steps in shuffled minibatches.
  void train(std::vector<std::vector<Step>>& episodes) {
    std::vector<double> advantages;
    for (std::vector<Step>& ep : episodes) {
      double gae = 0;
      for (size_t t = ep.size(); t-- > 0;) {
        double nextValue = t + 1 < ep.size() ? ep[t + 1].value : 0.0;
        double delta = ep[t].reward + kDiscount * nextValue - ep[t].value;
        gae = delta + kDiscount * kGae * gae;
        ep[t].advantage = gae;
        ep[t].target = gae + ep[t].value;
        advantages.push_back(gae);
      }
    }
    double mean = 0, var = 0;
    for (double a : advantages) mean += a;
    mean /= double(std::max<size_t>(advantages.size(), 1));
    for (double a : advantages) var += (a - mean) * (a - mean);
    const double sd = std::sqrt(var / double(std::max<size_t>(advantages.size(), 1))) + 1e-9;
    for (std::vector<Step>& ep : episodes)
      for (Step& s : ep) s.advantage = (s.advantage - mean) / sd;
    std::vector<const Step*> steps;
    for (const std::vector<Step>& ep : episodes)
      for (const Step& s : ep) steps.push_back(&s);
    for (int epoch = 0; epoch < kEpochs; ++epoch) {
      rng_.shuffle(steps);
      for (size_t i = 0; i < steps.size(); ++i) {
        agent_->accumulate(*steps[i]);
        if ((i + 1) % kMinibatch == 0 || i + 1 == steps.size()) agent_->step();
      }
    }
  }

  StrategyOptions options_;
  SplitMix64 rng_;
  std::unique_ptr<ActorCritic> agent_;
  std::map<uint64_t, double> observed_;
};

}  // namespace

std::unique_ptr<Explorer> makeRlExplorer(const StrategyOptions& options) { return std::make_unique<RlExplorer>(options); }

}  // namespace kiln::tune
