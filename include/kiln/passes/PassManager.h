//===- kiln/passes/PassManager.h - Running pipelines, measured ----*- C++ -*-===//
//
// Runs a pipeline over a graph and records, per pass: wall time, whether it
// was applicable and whether it changed the IR, the structural hash (unless
// RunOptions::hashes is off) and node count before and after. With
// verifyEach the IR (and its types) is verified after every pass, and a pass
// that reports no change must have left the structural hash as it was; a
// failure names the pass. A repeated entry whose last run left the graph
// unchanged, with no change since, is skipped as the same no-op. The report
// prints as a table or as JSON (schema "kiln-pass-report/1"), which the
// pass-selection experiments consume.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "kiln/passes/Pipeline.h"

namespace kiln::passes {

struct PassRecord {
  std::string pass;
  std::string options;  ///< as printed in the pipeline, e.g. "{max-depth=8}"
  /// Why the entry did not run: "disabled", "opt level", or "unchanged since it
  /// last ran" (the same pass and options left the graph unchanged, and no pass
  /// changed it since); empty when it ran.
  std::string skipped;
  bool applicable = false;
  bool changed = false;
  double ms = 0;
  std::string hashBefore, hashAfter;
  size_t nodesBefore = 0, nodesAfter = 0;
};

struct PassReport {
  std::string pipeline;
  std::vector<PassRecord> passes;
  double totalMs = 0;
};

struct RunOptions {
  PassContext context;
  /// Hash the IR before and after each pass for the report. Off (commands that
  /// print no report: compile, run, bench, tune), hashBefore/After are empty and
  /// the weights are not read for them (BERT-base's first hash reads 414 MB);
  /// verifyEach hashes regardless (its change check compares them).
  bool hashes = true;
  /// Called after each pass that changed the IR (for --print-after-change).
  std::function<void(const PassRecord&, const ir::Graph&)> afterChange = nullptr;
};

/// Runs the pipeline in order. Passes whose requiredPasses did not run earlier in
/// the pipeline are an error before anything runs.
Expected<PassReport> runPipeline(ir::Graph& graph, const std::vector<PipelineEntry>& pipeline,
                                 const RunOptions& options = {});

/// An afterChange hook that prints "// ----- IR after <pass> -----" and the
/// graph to `os` (--print-after-change); weights elided when asked.
std::function<void(const PassRecord&, const ir::Graph&)> printIrAfterChange(std::ostream& os, bool elideWeights);

void printReportTable(std::ostream& os, const PassReport& report);
std::string reportToJson(const PassReport& report);

/// Total node count of a graph including nested subgraphs.
size_t countNodes(const ir::Graph& graph);

}  // namespace kiln::passes
