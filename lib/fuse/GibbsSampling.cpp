//===- lib/fuse/GibbsSampling.cpp - Fusion datasets by Gibbs sampling -----===//
//
// See kiln/fuse/GibbsSampling.h. A random start is redrawn until it is
// valid; a step where one decision is invalid takes the other without a
// sample.
//
//===----------------------------------------------------------------------===//
#include "kiln/fuse/GibbsSampling.h"

#include <algorithm>
#include <cmath>
#include <random>

#include <nlohmann/json.hpp>

#include "kiln/fuse/EdgeFeatures.h"
#include "kiln/support/Stopwatch.h"

namespace kiln::fuse {

Expected<size_t> gibbsSample(FusionEvaluator& evaluator, const GibbsOptions& options, std::ostream& out,
                             const std::function<void(const GibbsProgress&)>& progress) {
  if (!(options.temperature > 0)) return makeError(ErrorCode::InvalidArgument, "the temperature must be positive");
  std::mt19937_64 rng(options.seed);
  Stopwatch clock;
  KILN_ASSIGN(Configured start, startConfiguration(evaluator, options.fromRandom, rng, options.start));
  auto [config, currentMs] = start;
  out << nlohmann::json({{"schema", "kiln-fuse-data/1"},
                         {"model", options.model},
                         {"target", options.target},
                         {"radius", options.radius},
                         {"edges", config.size()},
                         {"features", edgeFeatureNames()}})
             .dump()
      << "\n";
  size_t samples = 0;
  for (int sweep = 1; sweep <= options.sweeps; ++sweep) {
    for (size_t v = 0; v < config.size(); ++v) {
      if (options.maxSeconds > 0 && clock.elapsedMs() / 1000 >= options.maxSeconds) return samples;
      Decisions fused = config, split = config;
      fused[v] = true, split[v] = false;
      KILN_ASSIGN(Evaluation f, evaluator.evaluate(fused));
      KILN_ASSIGN(Evaluation s, evaluator.evaluate(split));
      if (f.ok() && s.ok()) {
        const std::vector<float> features = edgeFeatures(evaluator.planUnder(config), v, options.radius);
        out << nlohmann::json({{"sweep", sweep},
                               {"edge", v},
                               {"config", decisionString(config)},
                               {"fuse_ms", f.ms},
                               {"split_ms", s.ms},
                               {"features", features}})
                   .dump()
            << "\n";
        ++samples;
        // p(fuse) = 1 / (1 + exp((f - s) / T)), T relative to the current cost.
        const double t = options.temperature * currentMs;
        const double pFuse = 1 / (1 + std::exp(std::clamp((f.ms - s.ms) / t, -50.0, 50.0)));
        config[v] = std::uniform_real_distribution<double>(0, 1)(rng) < pFuse;
      } else if (f.ok() != s.ok()) {
        config[v] = f.ok();
      }
      currentMs = config[v] ? (f.ok() ? f.ms : currentMs) : (s.ok() ? s.ms : currentMs);
      if (progress) progress({sweep, v + 1, config.size(), samples, currentMs, clock.elapsedMs() / 1000});
    }
  }
  return samples;
}

}  // namespace kiln::fuse
