//===- lib/bench/AppliedTuning.h - A tuning database for a backend ---------===//
//
// What the cpu and cuda backends do with BackendOptions::tuningDb: open the
// database (it must exist), find the graph's kernels as kiln tune names
// them for the target, and take the configurations the database gives the
// device the backend runs on (kiln/tune/TuningDatabase.h's rules: the
// fastest measured configuration where it beats the default).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <string>

#include "kiln/tune/TuningDatabase.h"

namespace kiln::bench {

inline Expected<tune::TuningApplication> appliedTuning(const std::string& path, ir::Graph& graph,
                                                       codegen::KernelTarget target, const std::string& device,
                                                       const std::string& toolkit) {
  KILN_ASSIGN(tune::TuningDatabase db, tune::TuningDatabase::open(path, true));
  KILN_ASSIGN(tune::TaskSet tasks, tune::extractTasks(graph, target));
  return tune::applyTuningDatabase(tasks, db, target == codegen::KernelTarget::Cpu ? "cpu" : "cuda", device, toolkit);
}

}  // namespace kiln::bench
