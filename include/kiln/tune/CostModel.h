//===- kiln/tune/CostModel.h - XGBoost ranking of schedules -------*- C++ -*-===//
//
// The statistical cost model of AutoTVM: gradient-boosted trees (libxgboost)
// over schedule features, trained with a pairwise ranking objective on the
// throughput of what was measured (only the order of candidates matters to
// the search), retrained from scratch as results arrive. Rows come in
// groups (one per task) so that transfer data from other kernels is only
// ranked against its own kernel. A regression objective serves other
// learned models (fusion search's advantage function).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kiln/support/Status.h"

namespace kiln::tune {

struct CostModelOptions {
  int rounds = 40;      ///< boosting rounds per fit
  int maxDepth = 6;
  double eta = 0.3;
  uint64_t seed = 0;
  /// XGBoost's objective: the schedule ranking's, or "reg:squarederror" for a regressor (kiln/fuse's advantage model).
  std::string objective = "rank:pairwise";
};

class CostModel {
 public:
  explicit CostModel(CostModelOptions options = {});
  ~CostModel();
  CostModel(const CostModel&) = delete;
  CostModel& operator=(const CostModel&) = delete;

  /// Trains a new model on rows `x` (all the same width) with scores `y`
  /// (higher is better); `groups` gives consecutive group sizes summing to
  /// x.size() (empty: one group; ranking objectives only); `weights`, when
  /// given, weighs each row.
  Status fit(const std::vector<std::vector<float>>& x, const std::vector<float>& y,
             const std::vector<unsigned>& groups = {}, const std::vector<float>& weights = {});
  /// Predicted scores (higher is better); an untrained model gives zeros.
  Expected<std::vector<float>> predict(const std::vector<std::vector<float>>& x) const;
  bool trained() const { return booster_ != nullptr; }
  size_t width() const { return width_; }
  /// The trained model as XGBoost's JSON, and back (rows of `width` features).
  Expected<std::string> save() const;
  Status load(const std::string& json, size_t width);

 private:
  CostModelOptions options_;
  void* booster_ = nullptr;  ///< BoosterHandle
  size_t width_ = 0;
};

}  // namespace kiln::tune
