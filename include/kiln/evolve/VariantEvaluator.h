//===- kiln/evolve/VariantEvaluator.h - A patch's latency and error -*- C++ -*-===//
//
// The fitness of one individual of `kiln evolve` on this CPU: the patch is
// applied to the original model, the variant optimized by the same pass
// pipeline as the original and lowered through the kernel cache that all
// variants share (kiln/fuse/KernelCache.h: a variant compiles only the
// kernels whose code is new), run on every training and test sample, and
// timed in interleaved rounds beside the original (its time is its ratio
// to the original's in those rounds times the original's own time, so
// that the machine's drift between evaluations divides out). A variant
// that does not apply, optimize, lower or run is invalid: it is never
// timed, and its error says why.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kiln/evolve/Dataset.h"
#include "kiln/evolve/Patch.h"
#include "kiln/passes/Pipeline.h"

namespace kiln::evolve {

struct VariantScore {
  bool valid = false;
  std::string error;  ///< why not valid
  double ms = 0;      ///< latency of one run
  double trainError = 0, testError = 0;
  size_t kernelsCompiled = 0;  ///< kernels this variant compiled (the others were cached)
  int repairNodes = 0;         ///< nodes its patch's repairs added (PatchReport)
  double seconds = 0;          ///< wall time of the evaluation
};

class VariantEvaluator {
 public:
  /// Evaluates variants of `original` (which must outlive the evaluator),
  /// each optimized by `pipeline`; the original itself is evaluated here
  /// (an error when it fails: nothing could be compared with it).
  static Expected<std::unique_ptr<VariantEvaluator>> create(const ir::Module& original, DataSplit data,
                                                            Metric metric,
                                                            std::vector<passes::PipelineEntry> pipeline);
  ~VariantEvaluator();

  const VariantScore& original() const;
  VariantScore evaluate(const Patch& patch);
  /// The variant's latency over the original's in `pairs` pairs of warm runs
  /// in alternation (the median; below 1: faster).
  Expected<double> pairedRatio(const Patch& patch, int pairs);

  size_t kernelsCompiled() const;

 private:
  VariantEvaluator();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kiln::evolve
