//===- kiln/select/ArchitectureClasses.h - RN, MN, SSD, BR from features -*- C++ -*-===//
//
// The research's architecture classes (shared/seeds/001, Table 4), scored
// from ArchitectureFeatures in [0, 1] with the reasons behind each score:
//
//   RN   residual CNN with dense convolutions (ResNet; plain CNNs score lower)
//   MN   depthwise-separable CNN (MobileNet, EfficientNet, ShuffleNet, ...)
//   SSD  detector: NMS post-processing, multi-scale heads
//   BR   transformer: attention blocks, layer norms (BERT, ViT, ...)
//
// Several may apply (SSDLite on MobileNetV3 is SSD and MN): classify()
// returns every class, highest score first (ties: SSD, BR, MN, RN, the more
// specific first); those scoring at least kClassThreshold are the model's
// classes, whose passes pass selection considers.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <string>
#include <vector>

#include "kiln/select/ArchitectureFeatures.h"

namespace kiln::select {

inline constexpr double kClassThreshold = 0.5;

struct ClassScore {
  std::string name;  ///< "RN", "MN", "SSD" or "BR"
  double score = 0;
  std::vector<std::string> reasons;  ///< what raised or lowered the score
};

/// Every class's score, highest first.
std::vector<ClassScore> classify(const ArchitectureFeatures& features);

/// The names of the classes scoring at least kClassThreshold, highest first.
std::vector<std::string> classesOf(const std::vector<ClassScore>& scores);

}  // namespace kiln::select
