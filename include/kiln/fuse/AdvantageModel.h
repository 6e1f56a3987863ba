//===- kiln/fuse/AdvantageModel.h - Learned local advantage of an edge -*- C++ -*-===//
//
// The local advantage function of shared/seeds/004 (section 4.2): from an
// edge's features (EdgeFeatures.h), how much flipping its decision changes
// the cost. Trained offline by regression on Gibbs-sampling datasets
// (GibbsSampling.h) of several graphs: each sample's label is
// log(1 + |cost(fuse) - cost(split)| / sigma), sigma the graph's median
// absolute advantage, so that graphs of every scale weigh alike; the sign is
// not learned. The 10% most significant samples of each graph carry 90% of
// its weight (prioritized sampling). Beside it, kiln trains a second
// regressor on the signed label (the same scale, negative where fusing is
// faster), which the ranked strategy uses to try likely gains first. Saved
// as JSON (kiln-advantage/1) with both sets of XGBoost trees; a model only
// loads where its feature names match.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kiln/support/Status.h"
#include "kiln/tune/CostModel.h"

namespace kiln::fuse {

/// One Gibbs step's two evaluations of an edge, as a dataset line holds them.
struct AdvantageSample {
  std::vector<float> features;  ///< the edge's under the configuration of the step
  double fuseMs = 0, splitMs = 0;
  double advantage() const { return fuseMs - splitMs; }
};

/// One graph's samples (one dataset file).
struct AdvantageDataset {
  std::string model;
  std::string target;
  int radius = 1;
  std::vector<AdvantageSample> samples;
  /// Reads a dataset file (kiln-fuse-data/1 JSON lines); errors name the line.
  static Expected<AdvantageDataset> read(const std::string& path);
};

struct AdvantageTrainOptions {
  int rounds = 100;
  int maxDepth = 5;
  double eta = 0.1;
  double significantShare = 0.1;   ///< the top share of samples by |advantage| ...
  double significantWeight = 0.9;  ///< ... carry this share of a graph's weight
  uint64_t seed = 0;
};

class AdvantageModel {
 public:
  static Expected<std::unique_ptr<AdvantageModel>> train(const std::vector<AdvantageDataset>& data,
                                                         const AdvantageTrainOptions& options = {});
  static Expected<std::unique_ptr<AdvantageModel>> load(const std::string& path);
  Status save(const std::string& path) const;

  /// Predicted |advantage| (log-scaled as trained) of each row of edge features.
  Expected<std::vector<float>> predict(const std::vector<std::vector<float>>& rows) const;
  /// Predicted signed advantage (log-scaled; above 0: fusing the edge is slower) of each row.
  Expected<std::vector<float>> predictSigned(const std::vector<std::vector<float>>& rows) const;
  /// The transformed labels of each sample of `data`, as train() fits them: |advantage| and signed.
  static std::vector<float> labels(const AdvantageDataset& data);
  static std::vector<float> signedLabels(const AdvantageDataset& data);

  const std::string& target() const { return target_; }
  int radius() const { return radius_; }
  const std::vector<std::string>& trainedOn() const { return graphs_; }

 private:
  std::unique_ptr<tune::CostModel> booster_;  ///< |advantage|
  std::unique_ptr<tune::CostModel> signed_;   ///< signed advantage
  std::string target_ = "cpu";
  int radius_ = 1;
  std::vector<std::string> graphs_;
  size_t samples_ = 0;
};

}  // namespace kiln::fuse
