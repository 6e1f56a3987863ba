//===- kiln/bench/PassStudy.h - Compare pass selections on a model -*- C++ -*-===//
//
// The engine of `kiln passes compare`: classifies the model, prunes the pass
// space, runs each strategy (kiln/select/Strategies.h) and compiles and
// measures every pipeline it proposes on a backend. Per pipeline: the pass
// pipeline runs `compileRepeats` times on fresh copies of the imported graph
// (median time; the research's compile time), the result's structural hash
// identifies its IR, and only the first pipeline of each distinct IR is
// compiled by the backend (`compileRepeats` times too, median), checked against the reference interpreter on the
// unoptimised graph (max|out - ref| / max|ref| within `tolerance`, integer
// outputs exact; outputs behind NonMaxSuppression/TopK, whose selections may
// flip with rounding, by agreement: row counts within 2% and 98% of the
// elements within tolerance) and benchmarked; later
// pipelines with the same IR share its measurement and name it. A pipeline
// that fails (a pass error, code generation, wrong outputs) is recorded with
// its error and the study goes on. After the strategies, every distinct IR is
// measured again in further rounds (see `rounds`). Every entry then becomes a
// kiln-experiment/1 record appended to the experiment database when one is
// given.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "kiln/bench/BenchRecord.h"
#include "kiln/bench/BenchRunner.h"
#include "kiln/passes/PassManager.h"
#include "kiln/select/ArchitectureClasses.h"
#include "kiln/select/ExperimentDatabase.h"
#include "kiln/select/SearchSpace.h"
#include "kiln/select/Strategies.h"

namespace kiln::bench {

inline constexpr const char* kStudySchema = "kiln-pass-study/1";

struct StudyOptions {
  std::string backend = "cpu";
  BackendOptions backendOptions;
  BenchOptions bench{.warmup = 10, .runs = 100, .sigmas = 3, .batch = 1, .maxSeconds = 10};
  int compileRepeats = 3;  ///< runs of each pass pipeline and of code generation for each IR (median times)
  /// Largest relative output difference from the reference accepted. Deep
  /// random-weight models amplify rounding: BERT-base's 12 layers turn
  /// fuse-attention's 1e-7 into 4e-4, so the default is 1e-3.
  double tolerance = 1e-3;
  /// Measurement rounds: round 1 runs while the strategies propose (evolve
  /// ranks by it); after them every distinct IR is measured again rounds-1
  /// times in turn (the compiled code kept), so a machine's drift over the
  /// study does not favour the pipelines measured first. With rounds > 1 an
  /// entry's latency is the median of rounds 2..R (the upper one of two).
  int rounds = 4;
  uint64_t seed = 0;
  std::string modelName, modelPath;
  double importMs = 0;
  select::ExperimentDatabase* database = nullptr;  ///< records appended here; `learned` reads it
  std::ostream* progress = nullptr;
};

struct StudyEntry {
  select::Candidate candidate;
  std::string pipelineText;
  std::vector<passes::PassRecord> passRecords;  ///< of the run with the median time
  double passesMs = 0;                          ///< median over the repeats
  std::string irHash;
  std::string measuredAs;  ///< label of the entry whose identical IR was measured (own label if measured)
  CompilePhases compile;   ///< import (shared), passes, code generation
  std::optional<BenchRecord> bench;  ///< the median later round's measurement
  std::vector<double> roundMedians;  ///< latency median of each round
  double maxRelError = 0;  ///< elementwise-compared outputs vs the reference
  double selectionAgreement = 1;  ///< least share of agreeing elements of a selection output
  std::string error;       ///< empty when it compiled, ran and matched
  bool pareto = false;     ///< on evolve's final Pareto front

  bool ok() const { return error.empty() && bench.has_value(); }
};

struct StudyStrategy {
  std::string spec;
  std::string note;
  std::vector<size_t> entries;  ///< indices into PassStudy::entries
};

struct PassStudy {
  std::string modelName, modelPath, modelHash, backend, date, device;
  MachineInfo machine;
  select::ArchitectureFeatures features;
  std::vector<select::ClassScore> scores;
  std::vector<std::string> classes;
  select::SearchSpace space;
  std::vector<StudyEntry> entries;
  std::vector<StudyStrategy> strategies;
  StudyOptions options;

  /// The entry labelled `label`, or nullptr.
  const StudyEntry* find(const std::string& label) const;
};

/// Runs the study. Errors: a backend that cannot be created, a reference
/// run that fails, a strategy that cannot start (learned without records).
Expected<PassStudy> runPassStudy(const ir::Module& module, const std::vector<RuntimeValue>& inputs,
                                 const std::vector<select::StrategySpec>& strategies, StudyOptions options);

/// The passes a backend cannot compile the result of well, with the reason
/// (code generation plans its own fusion and refuses kiln:: groups; it has no
/// kernel template for alter-op-layout's blocked convolutions or
/// fuse-attention's Attention, which then run on the reference kernels).
std::vector<select::ExcludedPass> backendExclusions(const std::string& backend);

/// A letter per distinct IR in order of first appearance (A, B, ..., Z, AA, ...):
/// pipelines that produced identical IR share a letter in the table and chart.
std::map<std::string, std::string> irLetters(const PassStudy& study);

/// One entry as a kiln-experiment/1 record (one line of JSON).
std::string experimentRecordJson(const PassStudy& study, const StudyEntry& entry);
/// The whole study as kiln-pass-study/1 JSON (space, strategies, records).
std::string studyToJson(const PassStudy& study);
/// The comparison table: one row per pipeline, latency and compile time
/// relative to the first strategy's first pipeline, identical IR marked.
void printStudyTable(std::ostream& os, const PassStudy& study);
/// An SVG chart: latency and compile time per pipeline, coloured by strategy,
/// pipelines with identical IR marked with the same letter.
std::string studyChartSvg(const PassStudy& study);

}  // namespace kiln::bench
