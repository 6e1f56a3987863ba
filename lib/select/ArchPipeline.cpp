//===- lib/select/ArchPipeline.cpp - The arch strategy, run in place -------===//
//
// See kiln/select/ArchPipeline.h. The two rounds run as one pipeline through
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
  std::vector<const passes::PassInfo*> candidates = classCandidates(graph, result.classes, options, dropped);
  // A pass that requires others fails the probe's one-pass runs, so it is never in arch's space.
  std::erase_if(candidates, [](const passes::PassInfo* p) { return !p->requiredPasses.empty(); });
  // Both rounds as one pipeline: the graph is hashed once and then only after a pass changed it.
  std::vector<passes::PipelineEntry> rounds;
  for (int round = 0; round < 2; ++round)
    for (const passes::PassInfo* p : candidates) rounds.push_back(passes::withDefaultOptions(*p));
  auto ran = passes::runPipeline(graph, rounds, run);
  if (!ran)
    return std::move(ran).error().withContext("--pipeline arch (the graph is left half rewritten; --disable-pass PASS "
                                              "leaves a pass out)");
  const size_t n = candidates.size();
  auto record = [&](int round, size_t i) -> const passes::PassRecord& { return ran->passes[size_t(round) * n + i]; };
  std::vector<const passes::PassInfo*> firstRound, changedSecondRound;
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (record(0, i).applicable || record(1, i).applicable) {
      firstRound.push_back(candidates[i]);
      result.report.passes.push_back(record(0, i));
    }
  }
  for (size_t i = 0; i < candidates.size(); ++i)
    if (record(1, i).changed) {
      changedSecondRound.push_back(candidates[i]);
      result.report.passes.push_back(record(1, i));
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
