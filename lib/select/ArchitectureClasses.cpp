//===- lib/select/ArchitectureClasses.cpp - RN, MN, SSD, BR from features ---===//
//
// See kiln/select/ArchitectureClasses.h. Each class's score is a weighted
// sum of criteria, each in [0, 1]:
//
//   RN  = dense * (0.4 cnn + 0.4 min(1, feature-map residual adds / 3) + 0.2 no attention)
//         where cnn: at least 3 convolutions, which with the channels-last
//         pointwise layers (ConvNeXt's MLPs) make half the layers, or at
//         least 16 of them whatever their share (a convolutional trunk:
//         DETR's ResNet-50 is 54 of its 123 layers; ResNet-18 has 20), and
//         dense = clamp(1 - 3 * depthwise share): depthwise CNNs are MN's
//   MN  = cnn * (0.7 min(1, depthwise share / 0.15) + 0.3 mobile activations or pointwise convs)
//         (pointwise: 1x1 convolutions or channels-last pointwise layers, a third of them)
//   SSD = min(1, 0.7 NMS + 0.3 multi-scale heads + 0.3 box heads): a
//         detector exported without NMS (YOLO) still applies by its heads,
//         RAFT's correlation pyramid (rank-4 maps joined) does not
//   BR  = attention * (0.6 + 0.2 layer norms + 0.2 no convolutional backbone)
//
// The weights make the research's four classes separate on their own
// models with wide margins (a class applies at 0.5): ResNet-50 RN 1.0,
// MobileNetV2 MN 1.0 and RN 0 (its residual adds join depthwise blocks),
// SSDLite SSD 1.0 and MN, BERT BR 1.0.
//
//===----------------------------------------------------------------------===//
#include "kiln/select/ArchitectureClasses.h"

#include <algorithm>
#include <cstdio>

namespace kiln::select {
namespace {

std::string percent(double share) {
  char text[16];
  std::snprintf(text, sizeof text, "%.0f%%", share * 100);
  return text;
}

std::string count(int64_t n, const char* what) { return std::to_string(n) + " " + what; }

int priority(const std::string& name) {
  static const char* order[] = {"SSD", "BR", "MN", "RN"};
  return int(std::find(std::begin(order), std::end(order), name) - std::begin(order));
}

}  // namespace

std::vector<ClassScore> classify(const ArchitectureFeatures& f) {
  // A vision transformer's patch embedding (ViT, Swin: one conv) or an
  // audio model's feature extractor (wav2vec 2.0: seven) stays under 16.
  constexpr int64_t kBackboneConvs = 16;
  const bool cnn = f.convs >= 3 && (f.convShare() >= 0.5 || f.convs >= kBackboneConvs);
  const double dense = std::clamp(1.0 - 3.0 * f.depthwiseShare(), 0.0, 1.0);
  const std::string convText = count(f.convs, "convolutions") +
                               (f.channelsLastPointwise ? " and " + count(f.channelsLastPointwise, "channels-last pointwise layers")
                                                        : std::string()) +
                               " of " + count(f.layers(), "layers");
  std::vector<ClassScore> scores;

  ClassScore rn{"RN", 0, {}};
  if (!cnn) {
    rn.reasons.push_back("not a CNN (" + convText + ")");
  } else {
    const double residual = std::min(1.0, double(f.featureMapResidualAdds) / 3.0);
    rn.score = dense * (0.4 + 0.4 * residual + 0.2 * (f.attentionBlocks == 0));
    rn.reasons.push_back("CNN (" + convText + ")");
    rn.reasons.push_back(count(f.featureMapResidualAdds, "residual adds between feature maps"));
    if (dense < 1) rn.reasons.push_back(percent(f.depthwiseShare()) + " of convolutions depthwise (lowers RN)");
    if (f.attentionBlocks) rn.reasons.push_back(count(f.attentionBlocks, "attention blocks"));
  }
  scores.push_back(rn);

  ClassScore mn{"MN", 0, {}};
  if (!cnn || f.depthwiseConvs == 0) {
    mn.reasons.push_back(cnn ? "no depthwise convolutions" : "not a CNN (" + convText + ")");
  } else {
    const double depthwise = std::min(1.0, f.depthwiseShare() / 0.15);
    const int64_t pointwise = f.pointwiseConvs + f.channelsLastPointwise;
    const bool mobile = f.mobileActivations > 0 || pointwise * 3 >= f.convs + f.channelsLastPointwise;
    mn.score = 0.7 * depthwise + 0.3 * mobile;
    mn.reasons.push_back(count(f.depthwiseConvs, "depthwise convolutions") + " (" + percent(f.depthwiseShare()) + " of " +
                         count(f.convs, "convolutions") + ")");
    mn.reasons.push_back(count(pointwise, "pointwise convolutions") + ", " +
                         count(f.mobileActivations, "ReLU6/hard-swish activations"));
  }
  scores.push_back(mn);

  ClassScore ssd{"SSD", std::min(1.0, 0.7 * (f.nmsOps > 0) + 0.3 * (f.multiScaleHeads > 0) + 0.3 * (f.boxHeads > 0)), {}};
  ssd.reasons.push_back(f.nmsOps ? count(f.nmsOps, "NMS ops (detection post-processing)") : "no NMS post-processing");
  ssd.reasons.push_back(f.multiScaleHeads ? count(f.multiScaleHeads, "multi-scale head concatenations") + ", " +
                                                count(f.boxHeads, "of box predictions")
                                          : "no multi-scale heads");
  scores.push_back(ssd);

  ClassScore br{"BR", 0, {}};
  if (!f.attentionBlocks) {
    br.reasons.push_back("no attention blocks");
  } else {
    br.score = 0.6 + 0.2 * (f.layerNorms > 0) + 0.2 * !cnn;
    br.reasons.push_back(count(f.attentionBlocks, "attention blocks"));
    br.reasons.push_back(count(f.layerNorms, "layer norms"));
    if (cnn) br.reasons.push_back("convolutional backbone (" + convText + ")");
  }
  scores.push_back(br);

  std::stable_sort(scores.begin(), scores.end(), [](const ClassScore& a, const ClassScore& b) {
    return a.score != b.score ? a.score > b.score : priority(a.name) < priority(b.name);
  });
  return scores;
}

std::vector<std::string> classesOf(const std::vector<ClassScore>& scores) {
  std::vector<std::string> names;
  for (const ClassScore& s : scores)
    if (s.score >= kClassThreshold) names.push_back(s.name);
  return names;
}

}  // namespace kiln::select
