//===- lib/select/SearchSpace.cpp - Pruning the pass space -----------------===//
//
// See kiln/select/SearchSpace.h. The probe runs each candidate pass through
// the PassManager on a clone of the graph, so a pass that fails on this model
// is dropped with its error instead of failing every pipeline later.
//
//===----------------------------------------------------------------------===//
#include "kiln/select/SearchSpace.h"

#include <algorithm>
#include <set>

#include "kiln/passes/PassManager.h"
#include "kiln/passes/PassRegistry.h"
#include "kiln/select/OrderingRules.h"
#include "kiln/support/Stopwatch.h"

namespace kiln::select {
namespace {

bool sharesClass(const passes::PassInfo& p, const std::vector<std::string>& classes) {
  for (const std::string& c : p.classes)
    if (std::find(classes.begin(), classes.end(), c) != classes.end()) return true;
  return false;
}

}  // namespace

long double sequenceCount(size_t n) {
  long double total = 0, term = 1;  // term = n!/(n-k)!
  for (size_t k = 0; k <= n; ++k) {
    total += term;
    term *= static_cast<long double>(n - k);
  }
  return total;
}

long double SearchSpace::sequencesBefore() const { return sequenceCount(catalogueSize); }
long double SearchSpace::sequencesAfter() const { return sequenceCount(passes.size()); }

bool SearchSpace::contains(const std::string& pass) const {
  return std::any_of(passes.begin(), passes.end(), [&](const passes::PassInfo* p) { return p->name == pass; });
}

std::vector<const passes::PassInfo*> classCandidates(const ir::Graph& graph, const std::vector<std::string>& classes,
                                                     const PruneOptions& options, std::vector<DroppedPass>& dropped) {
  std::vector<const passes::PassInfo*> candidates;
  for (const passes::PassInfo& p : passes::allPasses()) {
    auto excluded = std::find_if(options.excluded.begin(), options.excluded.end(),
                                 [&](const ExcludedPass& e) { return e.pass == p.name; });
    if (excluded != options.excluded.end()) dropped.push_back({&p, excluded->reason});
    else if (!sharesClass(p, classes)) dropped.push_back({&p, "class"});
    else candidates.push_back(&p);
  }
  return orderByRules(std::move(candidates), &graph);
}

SearchSpace pruneSearchSpace(const ir::Graph& graph, const std::vector<std::string>& classes,
                             const PruneOptions& options) {
  SearchSpace space;
  space.classes = classes;
  space.catalogueSize = passes::allPasses().size();
  std::vector<const passes::PassInfo*> candidates = classCandidates(graph, classes, options, space.dropped);

  Stopwatch timer;
  std::unique_ptr<ir::Graph> probe = ir::cloneGraph(graph);
  std::set<const passes::PassInfo*> applicable, failed;
  for (int round = 0; round < 2; ++round) {
    for (const passes::PassInfo* p : candidates) {
      if (failed.count(p)) continue;
      auto report = passes::runPipeline(*probe, {passes::withDefaultOptions(*p)});
      if (!report) {
        // The clone may be half rewritten: start the next pass from a fresh one.
        space.dropped.push_back({p, "fails on this model: " + report.error().message()});
        failed.insert(p);
        probe = ir::cloneGraph(graph);
        continue;
      }
      const passes::PassRecord& r = report->passes.front();
      if (r.applicable) applicable.insert(p);
      if (r.changed) (round == 0 ? space.changedFirstRound : space.changedSecondRound).push_back(p);
    }
  }
  space.probeMs = timer.elapsedMs();
  for (const passes::PassInfo* p : candidates) {
    if (failed.count(p)) continue;
    if (applicable.count(p)) space.passes.push_back(p);
    else if (passes::applicableWithDefaults(*p, graph))
      // simplify-inference on a raw ResNet: alter-op-layout, ordered before it, folds the BatchNorms.
      space.dropped.push_back({p, "not applicable where the order puts it (passes before it did its work)"});
    else
      space.dropped.push_back({p, "not applicable"});
  }
  return space;
}

}  // namespace kiln::select
