//===- kiln/select/ArchPipeline.h - The arch strategy, run in place -*- C++ -*-===//
//
// What `--pipeline arch` runs when a model is compiled (kiln compile, run,
// bench, passes run): the graph's architecture classes, their passes in
// ordering-rule order, two rounds. The study's probe (SearchSpace.h) runs
// those rounds on a copy to learn the space, and the arch pipeline then runs
// again on the model; here the rounds run on the model itself, once, so a
// compile pays for the selection only the no-op checks of the passes that
// find nothing. The IR is the arch pipeline's (archOrder: the passes that
// were not applicable, or found nothing in the second round, are no-ops
// where the probe ran them), and so is the report: the records of those
// no-ops are left out, their time is in the total.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <string>
#include <vector>

#include "kiln/ir/Graph.h"
#include "kiln/passes/PassManager.h"
#include "kiln/select/SearchSpace.h"

namespace kiln::select {

struct ArchRun {
  std::vector<std::string> classes;  ///< the graph's classes, highest score first
  passes::PassReport report;         ///< the arch pipeline's passes, as runPipeline reports them
};

/// Runs the arch strategy on `graph` in place (`options`: the backend's
/// exclusions, bench::backendExclusions). A pass that fails leaves the graph
/// half rewritten: the error names it (the study's probe, on a copy, drops
/// such a pass instead).
Expected<ArchRun> runArchPipeline(ir::Graph& graph, const PruneOptions& options, const passes::RunOptions& run = {});

}  // namespace kiln::select
