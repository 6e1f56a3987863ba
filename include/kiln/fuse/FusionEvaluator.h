//===- kiln/fuse/FusionEvaluator.h - Fusion configurations, measured -*- C++ -*-===//
//
// What fusion search asks of a target: the cost of a fusion configuration
// (one fuse-or-split decision per edge of the graph's fusion plan), measured
// end to end. A configuration is partitioned as the plan partitions it (an
// edge whose merge no kernel can run is not honored), so configurations
// that give one partition are one measurement, cached by the partition. The
// model is lowered with the configuration's plan; each kernel is compiled
// once per distinct code (kernelBodyKey) and kept, so a configuration
// compiles only the kernels its new groups make. Every new partition's
// outputs are checked against the interpreter's on the same inputs before
// it is timed; one whose lowering fails is invalid and never measured.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "kiln/codegen/FusionPlan.h"
#include "kiln/ir/Graph.h"
#include "kiln/support/Status.h"
#include "kiln/support/Tensor.h"

namespace kiln::fuse {

/// One fuse (true) or split decision per fusion edge, in edge-id order.
using Decisions = std::vector<bool>;
/// The decisions as a string of 0 (split) and 1 (fuse), edge e0 first.
std::string decisionString(const Decisions& d);

struct EvaluatorOptions {
  int warmup = 2;            ///< untimed runs of a new partition after its check
  int repeats = 7;           ///< timed samples (rounds, anchored); the median is the cost
  double minSampleMs = 2.0;  ///< a sample repeats runs until this long
  /// Largest error against the interpreter (relative to an output's scale): fusion reorders fp32 sums,
  /// which moves a deep transformer's outputs by a few 1e-4; a wrong kernel is off by far more.
  double tolerance = 1e-3;
  /// Time each partition in interleaved rounds beside the default's and scale the ratio by the default's
  /// time, so that drift of the machine between evaluations cancels (the tuner's anchored CPU timing).
  bool anchored = true;
};

enum class EvaluationStatus : uint8_t { Ok, Invalid, WrongOutput };
const char* evaluationStatusName(EvaluationStatus s);

struct Evaluation {
  EvaluationStatus status = EvaluationStatus::Ok;
  double ms = 0;            ///< median latency of one run (ok only)
  bool cached = false;      ///< a configuration of a partition this evaluator evaluated already
  bool replayed = false;    ///< answered from the database (useDatabase), measured by an earlier run
  size_t kernelsCompiled = 0;  ///< kernels compiled for it (0 when every one was cached)
  double seconds = 0;       ///< wall time of this evaluation (lowering, compiling, checking, timing)
  std::string error;        ///< why not ok
  bool ok() const { return status == EvaluationStatus::Ok; }
};

class FusionEvaluator {
 public:
  /// Evaluates configurations of `graph` (static shapes, optimized as it is
  /// to be compiled; it must outlive the evaluator) on `inputs` on this CPU.
  static Expected<std::unique_ptr<FusionEvaluator>> create(ir::Graph& graph, std::vector<Tensor> inputs,
                                                           EvaluatorOptions options = {});
  ~FusionEvaluator();

  /// The plan whose edges the decisions set (its groups as last partitioned).
  const codegen::FusionPlan& plan() const;
  size_t edgeCount() const;
  /// The default heuristic's decisions.
  const Decisions& defaultDecisions() const;
  /// `decisions` as a plan text `kiln compile --fusion-plan` applies.
  std::string planText(const Decisions& decisions);

  Expected<Evaluation> evaluate(const Decisions& decisions);
  /// Whether `decisions` partition the graph as an evaluated configuration
  /// did (evaluate() would answer from the cache). Partitions, lowers nothing.
  bool evaluated(const Decisions& decisions);
  /// The plan partitioned under `decisions` (for features of its edges).
  const codegen::FusionPlan& planUnder(const Decisions& decisions);
  /// The configuration a saved plan's text sets (FusionPlan::print form): the default's decisions,
  /// then the plan's; an error names the plan line that is not an edge of this graph.
  Expected<Decisions> decisionsOf(const std::string& planText);
  /// `candidate` against `baseline`, both lowered afresh, in alternating
  /// warm runs, `pairs` of each:
  /// each pair's candidate / baseline (below 1: candidate faster). With
  /// `maxSlower` >= 0, the runs stop early once more pairs than that find
  /// the candidate slower.
  Expected<std::vector<double>> pairedRatios(const Decisions& candidate, const Decisions& baseline, int pairs,
                                             int maxSlower = -1);
  /// The median of pairedRatios over blocks of 5 pairs, each block with
  /// both partitions lowered afresh (1 for no pairs).
  Expected<double> pairedRatio(const Decisions& candidate, const Decisions& baseline, int pairs);

  /// Records every new measurement in the database at `path` and answers
  /// from its records of this graph (FusionDatabase.h).
  Status useDatabase(const std::string& path);

  /// Kernels compiled so far and distinct partitions evaluated.
  size_t kernelsCompiled() const;
  size_t partitionsMeasured() const;

 private:
  FusionEvaluator();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// A configuration with its latency.
struct Configured {
  Decisions decisions;
  double ms = 0;
};

/// Where a search or a Gibbs sweep starts: the default configuration (evaluated first either way),
/// `given` when it is not empty (an error when it is invalid or computes wrong outputs), or with
/// `fromRandom` uniform random draws until one is valid (up to 100; the default when none is).
/// An error when the default itself fails.
Expected<Configured> startConfiguration(FusionEvaluator& evaluator, bool fromRandom, std::mt19937_64& rng,
                                        const Decisions& given = {});

}  // namespace kiln::fuse
