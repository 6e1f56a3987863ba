//===- kiln/fuse/GibbsSampling.h - Fusion datasets by Gibbs sampling -*- C++ -*-===//
//
// Data collection for the advantage model (shared/seeds/004, section 4.1).
// From the default or a random configuration, each sweep visits the edges in
// order; at each edge both decisions are evaluated (the current one comes
// from the evaluator's cache) and the next decision is drawn with
// p(d) proportional to exp(-cost(d) / (temperature * current cost)), so the
// temperature is relative: 0.05 makes a 5% slower choice e times less likely.
// Every step where both configurations are valid writes one line: the
// edge's features under the configuration, both latencies and the
// configuration itself. The first line names the model, target, radius and
// feature names (kiln-fuse-data/1; AdvantageDataset::read reads it back).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <functional>
#include <ostream>
#include <string>

#include "kiln/fuse/FusionEvaluator.h"

namespace kiln::fuse {

struct GibbsOptions {
  int sweeps = 1;
  double temperature = 0.05;
  uint64_t seed = 0;
  bool fromRandom = false;
  Decisions start;         ///< when not empty, the configuration to start from (a saved plan's)
  int radius = 1;          ///< the neighbourhood the features describe
  double maxSeconds = 0;   ///< stop after this long (0: the sweeps alone)
  std::string model;       ///< recorded in the dataset's first line
  std::string target = "cpu";
};

struct GibbsProgress {
  int sweep = 0;
  size_t edge = 0, edges = 0;
  size_t samples = 0;       ///< lines written so far
  double currentMs = 0;     ///< the configuration's latency after this step
  double elapsedSeconds = 0;
};

/// Runs the sweeps, writing the dataset to `out`; the number of samples written.
Expected<size_t> gibbsSample(FusionEvaluator& evaluator, const GibbsOptions& options, std::ostream& out,
                             const std::function<void(const GibbsProgress&)>& progress = nullptr);

}  // namespace kiln::fuse
