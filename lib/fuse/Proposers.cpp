//===- lib/fuse/Proposers.cpp - What each search strategy tries next ------===//
//
// One class per strategy of kiln/fuse/FusionSearch.h. The guided and ranked
// strategies ask the advantage model about every edge under the current
// best, once per best: guided its |advantage| regressor, ranked its signed
// one, which it reads per class of alike edges (EdgeFeatures.h).
//
//===----------------------------------------------------------------------===//
#include "Proposers.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <map>
#include <set>
#include <tuple>

#include "kiln/fuse/EdgeFeatures.h"

namespace kiln::fuse {

namespace {

/// `best` with the k-neighbourhood of `edge` redrawn at random (and `edge` flipped when nothing changed).
Decisions mutateNeighbourhood(FusionEvaluator& evaluator, const Decisions& best, size_t edge, int radius,
                              std::mt19937_64& rng) {
  Decisions d = best;
  for (size_t e : edgeNeighbourhood(evaluator.plan(), edge, radius)) d[e] = rng() & 1;
  if (d == best) d[edge] = !d[edge];
  return d;
}

class RandomProposer : public Proposer {
 public:
  RandomProposer(FusionEvaluator& evaluator, int radius) : evaluator_(evaluator), radius_(radius) {}
  Expected<Decisions> propose(const Decisions& best, std::mt19937_64& rng) override {
    const size_t edge = std::uniform_int_distribution<size_t>(0, best.size() - 1)(rng);
    return mutateNeighbourhood(evaluator_, best, edge, radius_, rng);
  }

 private:
  FusionEvaluator& evaluator_;
  int radius_;
};

/// The edges in order of predicted |advantage| under `best`, largest first.
Expected<std::vector<size_t>> rankEdges(FusionEvaluator& evaluator, const AdvantageModel& model, const Decisions& best) {
  KILN_ASSIGN(std::vector<float> predicted,
              model.predict(edgeFeatures(evaluator.planUnder(best), model.radius())));
  std::vector<size_t> order(predicted.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return predicted[a] > predicted[b]; });
  return order;
}

/// How many of `n` ranked edges the top `alpha` share holds (at least one).
size_t topShare(double alpha, size_t n) { return std::clamp<size_t>(size_t(std::ceil(alpha * double(n))), 1, n); }

class GuidedProposer : public Proposer {
 public:
  GuidedProposer(FusionEvaluator& evaluator, const SearchOptions& o) : evaluator_(evaluator), options_(o) {}
  Expected<Decisions> propose(const Decisions& best, std::mt19937_64& rng) override {
    if (ranking_.empty()) {
      KILN_ASSIGN(ranking_, rankEdges(evaluator_, *options_.advantage, best));
    }
    const size_t edge = ranking_[std::uniform_int_distribution<size_t>(0, topShare(options_.alpha, ranking_.size()) - 1)(rng)];
    return mutateNeighbourhood(evaluator_, best, edge, options_.radius, rng);
  }
  void improved(const Decisions&, const Decisions&) override { ranking_.clear(); }

 private:
  FusionEvaluator& evaluator_;
  const SearchOptions& options_;
  std::vector<size_t> ranking_;
};

/// Each edge's predicted gain from flipping it under `best` (a fused edge gains what fusing costs, a
/// split one what fusing saves), from the signed regressor.
Expected<std::vector<float>> predictedGains(FusionEvaluator& evaluator, const AdvantageModel& model,
                                            const Decisions& best) {
  KILN_ASSIGN(std::vector<float> advantage, model.predictSigned(edgeFeatures(evaluator.planUnder(best), model.radius())));
  for (size_t i = 0; i < advantage.size(); ++i)
    if (!best[i]) advantage[i] = -advantage[i];
  return advantage;
}

/// A move of ranked search: every edge of one class (edgeClasses) set to one decision.
struct ClassMove {
  size_t cls = 0;
  bool fuse = false;
  bool operator<(const ClassMove& o) const { return std::tie(cls, fuse) < std::tie(o.cls, o.fuse); }
};

/// kiln's own: moves that set a whole class of edges (a repeated block's same decision) at once,
/// those the model predicts to gain first (the mean predicted gain of the edges they flip, largest
/// first), each tried once; once they are spent, random neighbourhood mutations screened by the
/// model: of kScreened uniform draws, the one whose flipped edges' predicted gains sum highest.
/// Every improvement re-predicts, and its changes are first repeated on the rest of their classes.
class RankedProposer : public Proposer {
 public:
  static constexpr int kScreened = 8;
  RankedProposer(FusionEvaluator& evaluator, const SearchOptions& o)
      : evaluator_(evaluator), random_(evaluator, o.radius), options_(o), classes_(edgeClasses(evaluator.plan())) {}
  Expected<Decisions> propose(const Decisions& best, std::mt19937_64& rng) override {
    if (gains_.empty()) {
      KILN_ASSIGN(gains_, predictedGains(evaluator_, *options_.advantage, best));
      rankMoves(best);
    }
    while (!repeats_.empty() || next_ < moves_.size()) {
      const bool repeat = !repeats_.empty();
      const ClassMove move = repeat ? repeats_.front() : moves_[next_++];
      if (repeat) repeats_.pop_front();
      if (!tried_.insert(move).second && !repeat) continue;
      Decisions d = best;
      for (size_t i = 0; i < d.size(); ++i)
        if (classes_[i] == move.cls) d[i] = move.fuse;
      if (d != best) return d;
    }
    Decisions chosen;
    float chosenGain = 0;
    for (int k = 0; k < kScreened; ++k) {
      KILN_ASSIGN(Decisions d, random_.propose(best, rng));
      float gain = 0;
      for (size_t i = 0; i < d.size(); ++i) gain += d[i] != best[i] ? gains_[i] : 0.0f;
      if (chosen.empty() || gain > chosenGain) chosen = std::move(d), chosenGain = gain;
    }
    return chosen;
  }
  /// Re-predicts, and first repeats the improvement's changes on the rest of their classes.
  void improved(const Decisions& previous, const Decisions& best) override {
    gains_.clear();
    std::set<ClassMove> changed;
    for (size_t i = 0; i < best.size(); ++i)
      if (best[i] != previous[i] && changed.insert(ClassMove{classes_[i], best[i]}).second)
        repeats_.push_back(ClassMove{classes_[i], best[i]});
  }

 private:
  /// The untried moves under `best` whose flipped edges gain on average, the largest mean first.
  void rankMoves(const Decisions& best) {
    std::map<ClassMove, std::pair<float, int>> flipped;  // the gains of the edges each move flips
    for (size_t i = 0; i < best.size(); ++i) {
      auto& [sum, count] = flipped[ClassMove{classes_[i], !best[i]}];
      sum += gains_[i], ++count;
    }
    std::vector<std::pair<float, ClassMove>> ranked;
    for (const auto& [move, gain] : flipped)
      if (gain.first > 0 && !tried_.count(move)) ranked.push_back({gain.first / float(gain.second), move});
    std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    moves_.clear(), next_ = 0;
    for (const auto& r : ranked) moves_.push_back(r.second);
  }

  FusionEvaluator& evaluator_;
  RandomProposer random_;
  const SearchOptions& options_;
  std::vector<size_t> classes_;
  std::vector<float> gains_;
  std::vector<ClassMove> moves_;
  std::deque<ClassMove> repeats_;  ///< the last improvement's changes, for the rest of their classes
  std::set<ClassMove> tried_;
  size_t next_ = 0;
};

}  // namespace

std::unique_ptr<Proposer> makeProposer(FusionEvaluator& evaluator, const SearchOptions& options) {
  if (options.strategy == "guided") return std::make_unique<GuidedProposer>(evaluator, options);
  if (options.strategy == "ranked") return std::make_unique<RankedProposer>(evaluator, options);
  return std::make_unique<RandomProposer>(evaluator, options.radius);
}

}  // namespace kiln::fuse
