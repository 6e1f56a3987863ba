//===- lib/select/ArchPipeline.cpp - The arch strategy, run in place -------===//
//
// See kiln/select/ArchPipeline.h. The two rounds run pass by pass through
// the PassManager (verification and hooks as the caller asks); the report
// keeps the first round's records of passes applicable in either round and
// the second round's records of passes that changed the IR, which is
// archOrder's pipeline, then dead-code elimination where archOrder adds it.
//
//===----------------------------------------------------------------------===//
#include "kiln/select/ArchPipeline.h"

#include "kiln/select/ArchitectureClasses.h"
#include "kiln/select/ArchitectureFeatures.h"
#include "kiln/select/Strategies.h"
#include "kiln/support/Stopwatch.h"

namespace kiln::select {

Expected<ArchRun> runArchPipeline(ir::Graph& graph, const PruneOptions& options, const passes::RunOptions& run) {
  Stopwatch total;
  ArchRun result;
  result.classes = classesOf(classify(computeFeatures(graph)));
  std::vector<DroppedPass> dropped;
  const std::vector<const passes::PassInfo*> candidates = classCandidates(result.classes, options, dropped);
  std::vector<passes::PassRecord> rounds[2];
  for (auto& records : rounds)
    for (const passes::PassInfo* p : candidates) {
      auto report = passes::runPipeline(graph, {passes::withDefaultOptions(*p)}, run);
      if (!report)
        return std::move(report).error().withContext("--pipeline arch (the graph is left half rewritten; "
                                                     "--disable-pass " + p->name + " leaves the pass out)");
      records.push_back(std::move(report->passes.front()));
    }
  std::vector<const passes::PassInfo*> firstRound, changedSecondRound;
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (rounds[0][i].applicable || rounds[1][i].applicable) {
      firstRound.push_back(candidates[i]);
      result.report.passes.push_back(rounds[0][i]);
    }
  }
  for (size_t i = 0; i < candidates.size(); ++i)
    if (rounds[1][i].changed) {
      changedSecondRound.push_back(candidates[i]);
      result.report.passes.push_back(rounds[1][i]);
    }
  const std::vector<const passes::PassInfo*> order = archOrder(firstRound, changedSecondRound);
  if (order.size() > firstRound.size() + changedSecondRound.size()) {  // the closing cleanup
    KILN_ASSIGN(passes::PassReport cleanup, passes::runPipeline(graph, {passes::withDefaultOptions(*order.back())}, run));
    result.report.passes.push_back(std::move(cleanup.passes.front()));
  }
  result.report.pipeline = passes::printPipeline(passes::pipelineOf(order));
  result.report.totalMs = total.elapsedMs();
  return result;
}

}  // namespace kiln::select
