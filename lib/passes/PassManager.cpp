//===- lib/passes/PassManager.cpp - Running pipelines, measured ------------===//
//
// Instrumentation is on unless asked otherwise: counting a graph costs far
// less than any pass that walks it, and the report is what the pass-selection
// experiments are made of. Hashing reads every weight once (each buffer caches
// its hash), more than -O3's passes take on BERT-base, so commands that print
// no report leave it off (RunOptions::hashes).
//
//===----------------------------------------------------------------------===//
#include "kiln/passes/PassManager.h"

#include <iomanip>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "kiln/ir/Printer.h"
#include "kiln/ir/StructuralHash.h"
#include "kiln/ir/Verifier.h"
#include "kiln/support/Stopwatch.h"

namespace kiln::passes {
namespace {

std::string optionsText(const PipelineEntry& e) {
  std::string printed = printPipeline({e});
  return printed.substr(e.pass->name.size());
}

}  // namespace

size_t countNodes(const ir::Graph& graph) {
  size_t n = 0;
  for (const ir::Node* node : graph.nodes()) {
    ++n;
    for (const ir::Graph* sub : node->subgraphs()) n += countNodes(*sub);
  }
  return n;
}

Expected<PassReport> runPipeline(ir::Graph& graph, const std::vector<PipelineEntry>& pipeline,
                                 const RunOptions& options) {
  std::set<std::string> seen;
  for (const PipelineEntry& e : pipeline) {
    for (const std::string& required : e.pass->requiredPasses)
      if (!seen.count(required))
        return Error(ErrorCode::InvalidArgument,
                     "pass '" + e.pass->name + "' requires '" + required + "' earlier in the pipeline");
    seen.insert(e.pass->name);
  }
  PassReport report;
  report.pipeline = printPipeline(pipeline);
  Stopwatch total;
  // Each pass starts from the graph the previous one left: hash and count it
  // once, not again before the next pass.
  const bool hashing = options.hashes || options.context.verifyEach;  // verifyEach's change check compares hashes
  std::string hash = hashing ? ir::structuralHashHex(graph) : std::string();
  size_t nodes = countNodes(graph);
  // A pass is a function of the graph and its options: an entry that left the
  // graph unchanged would leave it unchanged again while no pass changed it
  // since (arch's second round; O3's repeated passes).
  size_t changes = 0;
  std::map<std::pair<const PassInfo*, std::string>, size_t> unchangedAt;  // (pass, options) -> `changes` then
  for (const PipelineEntry& e : pipeline) {
    PassRecord r;
    r.pass = e.pass->name;
    r.options = optionsText(e);
    r.hashBefore = hash;
    r.nodesBefore = nodes;
    const PassContext& ctx = options.context;
    if (ctx.disabledPasses.count(r.pass)) r.skipped = "disabled";
    else if (e.pass->optLevel > ctx.optLevel && !ctx.requiredPasses.count(r.pass)) r.skipped = "opt level";
    else if (auto at = unchangedAt.find({e.pass, r.options}); at != unchangedAt.end() && at->second == changes)
      r.skipped = "unchanged since it last ran";
    if (!r.skipped.empty()) {
      r.hashAfter = r.hashBefore;
      r.nodesAfter = r.nodesBefore;
      report.passes.push_back(std::move(r));
      continue;
    }
    Stopwatch timer;
    r.applicable = !e.pass->applicable || e.pass->applicable(graph, e.options);
    if (r.applicable) {
      auto changed = e.pass->run(graph, e.options, options.context);
      if (!changed) return std::move(changed).error().withContext("in pass '" + e.pass->name + "'");
      r.changed = *changed;
    }
    r.ms = timer.elapsedMs();
    r.hashAfter = r.changed && hashing ? ir::structuralHashHex(graph) : r.hashBefore;
    r.nodesAfter = r.changed ? countNodes(graph) : r.nodesBefore;
    if (options.context.verifyEach) {
      Status s = ir::verify(graph);
      if (!s.isOk()) return std::move(s).error().withContext("IR invalid after pass '" + e.pass->name + "'");
      // A pass that reports "unchanged" must not have changed the IR: the
      // report, --print-after-change and pass selection rely on the flag.
      if (!r.changed && ir::structuralHashHex(graph) != r.hashBefore)
        return Error(ErrorCode::Internal, "pass '" + e.pass->name + "' changed the IR but reported no change");
    }
    if (r.changed && options.afterChange) options.afterChange(r, graph);
    if (r.changed) ++changes;
    else unchangedAt[{e.pass, r.options}] = changes;
    hash = r.hashAfter;
    nodes = r.nodesAfter;
    report.passes.push_back(std::move(r));
  }
  report.totalMs = total.elapsedMs();
  return report;
}

void printReportTable(std::ostream& os, const PassReport& report) {
  auto flags = os.flags();
  os << "pipeline: " << (report.pipeline.empty() ? "(empty)" : report.pipeline) << "\n";
  os << std::left << std::setw(32) << "pass" << std::right << std::setw(10) << "ms" << std::setw(9) << "changed"
     << std::setw(8) << "nodes" << std::setw(8) << "after" << "  hash before -> after\n";
  os << std::fixed << std::setprecision(3);
  for (const PassRecord& r : report.passes) {
    os << std::left << std::setw(32) << (r.pass + r.options) << std::right << std::setw(10) << r.ms << std::setw(9)
       << (!r.skipped.empty() ? "skip" : !r.applicable ? "n/a" : r.changed ? "yes" : "no") << std::setw(8) << r.nodesBefore << std::setw(8)
       << r.nodesAfter << "  " << r.hashBefore << " -> " << r.hashAfter << "\n";
  }
  os << "total " << report.totalMs << " ms\n";
  os.flags(flags);
}

std::function<void(const PassRecord&, const ir::Graph&)> printIrAfterChange(std::ostream& os, bool elideWeights) {
  return [&os, elideWeights](const PassRecord& r, const ir::Graph& g) {
    os << "// ----- IR after " << r.pass << r.options << " -----\n"
       << ir::printGraph(g, {.elideResources = elideWeights});
  };
}

std::string reportToJson(const PassReport& report) {
  nlohmann::ordered_json j;
  j["schema"] = "kiln-pass-report/1";
  j["pipeline"] = report.pipeline;
  j["total_ms"] = report.totalMs;
  j["passes"] = nlohmann::ordered_json::array();
  for (const PassRecord& r : report.passes)
    j["passes"].push_back({{"pass", r.pass},
                           {"options", r.options},
                           {"skipped", r.skipped},
                           {"applicable", r.applicable},
                           {"changed", r.changed},
                           {"ms", r.ms},
                           {"nodes_before", r.nodesBefore},
                           {"nodes_after", r.nodesAfter},
                           {"hash_before", r.hashBefore},
                           {"hash_after", r.hashAfter}});
  return j.dump();
}

}  // namespace kiln::passes
