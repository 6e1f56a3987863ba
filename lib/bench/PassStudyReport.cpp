//===- lib/bench/PassStudyReport.cpp - Records and table of a pass study ---===//
//
// kiln-experiment/1 records (one per pipeline, fields in
// docs/pass-selection.md), the kiln-pass-study/1 document and the table
// `kiln passes compare` prints. Ratios are against the baseline: the O3
// entry when the study has one, else its first entry.
//
//===----------------------------------------------------------------------===//
#include <cmath>
#include <iomanip>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "kiln/bench/PassStudy.h"
#include "kiln/select/ExperimentDatabase.h"
#include "kiln/support/Strings.h"

namespace kiln::bench {
namespace {

using Json = nlohmann::ordered_json;

Json optional(const std::optional<double>& v) { return v ? Json(*v) : Json(); }

Json latencyJson(const LatencySummary& l) {
  return {{"median", l.p50}, {"mean", l.mean}, {"p90", l.p90}, {"min", l.min}, {"max", l.max}, {"stddev", l.stddev},
          {"samples", l.samples}};
}

const StudyEntry* baseline(const PassStudy& s) {
  if (const StudyEntry* o3 = s.find("O3")) return o3;
  return s.entries.empty() ? nullptr : &s.entries.front();
}

}  // namespace

/// Letters for distinct IR: the first IR seen is A, the next B, ... (AA after Z).
std::map<std::string, std::string> irLetters(const PassStudy& s) {
  std::map<std::string, std::string> letters;
  for (const StudyEntry& e : s.entries) {
    if (e.irHash.empty() || letters.count(e.irHash)) continue;
    size_t n = letters.size();
    std::string name;
    do {
      name.insert(name.begin(), char('A' + n % 26));
      n = n / 26;
    } while (n-- > 0);
    letters[e.irHash] = name;
  }
  return letters;
}

std::string experimentRecordJson(const PassStudy& s, const StudyEntry& e) {
  Json j;
  j["schema"] = select::kExperimentSchema;
  j["date"] = s.date;
  j["kiln_version"] = KILN_VERSION;
  j["machine"] = {{"host", s.machine.host}, {"cpu", s.machine.cpu}, {"cores", s.machine.cores}, {"os", s.machine.os},
                  {"gpu", e.bench && !e.bench->gpuName.empty() ? Json(e.bench->gpuName) : Json()}};
  j["backend"] = s.backend;
  j["model"] = {{"name", s.modelName}, {"path", s.modelPath}, {"hash", s.modelHash}};
  j["classes"] = s.classes;
  j["features"] = Json::parse(select::featuresToJson(s.features));
  j["feature_vector"] = select::featureVector(s.features);
  j["strategy"] = e.candidate.strategy;
  j["label"] = e.candidate.label;
  j["note"] = e.candidate.note;
  j["pipeline"] = e.pipelineText;
  j["pass_count"] = e.candidate.pipeline.size();
  j["ir_hash"] = e.irHash.empty() ? Json() : Json(e.irHash);
  j["measured_as"] = e.measuredAs.empty() ? Json() : Json(e.measuredAs);
  j["compile_ms"] = {{"import", optional(e.compile.importMs)},
                     {"passes", e.error.starts_with("passes") ? Json() : Json(e.passesMs)},
                     {"codegen", optional(e.compile.codegenMs)},
                     {"total", e.compile.totalMs()}};
  Json passes = Json::array();
  for (const passes::PassRecord& r : e.passRecords)
    passes.push_back({{"pass", r.pass}, {"ms", r.ms}, {"applicable", r.applicable}, {"changed", r.changed}});
  j["passes"] = passes;
  if (e.bench) {
    const BenchRecord& b = *e.bench;
    j["latency_ms"] = latencyJson(b.latencyMs);
    j["latency_ms"]["rounds"] = e.roundMedians;
    j["throughput_per_s"] = b.throughputPerS;
    j["runs"] = b.runsCompleted;
    j["threads"] = b.threads;
    j["memory"] = {{"peak_host_bytes", b.peakHostBytes},
                   {"peak_device_bytes", b.peakDeviceBytes ? Json(*b.peakDeviceBytes) : Json()}};
    j["power_w"] = b.gpu ? Json{{"mean", b.gpu->powerMeanW}, {"max", b.gpu->powerMaxW}} : Json();
  } else {
    j["latency_ms"] = nullptr;
    j["throughput_per_s"] = nullptr;
    j["runs"] = 0;
    j["threads"] = nullptr;
    j["memory"] = nullptr;
    j["power_w"] = nullptr;
  }
  j["max_rel_error"] = e.bench ? Json(e.maxRelError) : Json();
  j["selection_agreement"] = e.bench ? Json(e.selectionAgreement) : Json();
  j["pareto"] = e.pareto;
  j["error"] = e.error.empty() ? Json() : Json(e.error);
  return j.dump();
}

std::string studyToJson(const PassStudy& s) {
  Json j;
  j["schema"] = kStudySchema;
  j["model"] = {{"name", s.modelName}, {"path", s.modelPath}, {"hash", s.modelHash}};
  j["backend"] = s.backend;
  j["date"] = s.date;
  j["machine"] = {{"host", s.machine.host}, {"cpu", s.machine.cpu}, {"cores", s.machine.cores}, {"os", s.machine.os}};
  j["classes"] = s.classes;
  Json scores = Json::array();
  for (const select::ClassScore& c : s.scores) scores.push_back({{"name", c.name}, {"score", c.score}});
  j["scores"] = scores;
  Json dropped = Json::array();
  for (const select::DroppedPass& d : s.space.dropped) dropped.push_back({{"pass", d.pass->name}, {"reason", d.reason}});
  std::vector<std::string> kept;
  for (const passes::PassInfo* p : s.space.passes) kept.push_back(p->name);
  j["space"] = {{"catalogue", s.space.catalogueSize},
                {"passes", kept},
                {"dropped", dropped},
                {"sequences_before", double(s.space.sequencesBefore())},
                {"sequences_after", double(s.space.sequencesAfter())},
                {"probe_ms", s.space.probeMs}};
  j["settings"] = {{"warmup", s.options.bench.warmup},
                   {"runs", s.options.bench.runs},
                   {"max_seconds", s.options.bench.maxSeconds},
                   {"compile_repeats", s.options.compileRepeats},
                   {"tolerance", s.options.tolerance},
                   {"rounds", s.options.rounds},
                   {"seed", s.options.seed}};
  const std::map<std::string, std::string> letters = irLetters(s);
  Json strategies = Json::array();
  for (const StudyStrategy& st : s.strategies) {
    std::vector<std::string> labels, pareto;
    for (size_t i : st.entries) {
      labels.push_back(s.entries[i].candidate.label);
      if (s.entries[i].pareto) pareto.push_back(s.entries[i].candidate.label);
    }
    strategies.push_back({{"strategy", st.spec}, {"note", st.note}, {"pipelines", labels}, {"pareto_front", pareto}});
  }
  j["strategies"] = strategies;
  Json records = Json::array();
  for (const StudyEntry& e : s.entries) {
    Json r = Json::parse(experimentRecordJson(s, e));
    r["ir"] = e.irHash.empty() ? Json() : Json(letters.at(e.irHash));
    records.push_back(std::move(r));
  }
  j["records"] = records;
  return j.dump(2);
}

void printStudyTable(std::ostream& os, const PassStudy& s) {
  const std::string classes = joinStrings(s.classes);
  std::ostringstream counts;
  counts << std::setprecision(3) << s.space.sequencesBefore() << " -> " << s.space.sequencesAfter();
  os << s.modelName << " on " << s.backend << ": classes " << (classes.empty() ? "none" : classes) << "; pruned space "
     << s.space.passes.size() << " of " << s.space.catalogueSize << " passes (orderings " << counts.str() << ", probe "
     << std::fixed << std::setprecision(1) << s.space.probeMs << " ms)\n";
  const StudyEntry* base = baseline(s);
  const std::map<std::string, std::string> letters = irLetters(s);
  os << std::left << std::setw(16) << "pipeline" << std::right << std::setw(7) << "passes" << std::setw(12) << "optimise ms"
     << std::setw(12) << "codegen ms" << std::setw(13) << "latency ms" << std::setw(10) << "x lat" << std::setw(11)
     << "x optimise" << std::setw(6) << "IR" << "  note\n";
  for (const StudyEntry& e : s.entries) {
    os << std::left << std::setw(16) << e.candidate.label << std::right << std::setw(7) << e.candidate.pipeline.size();
    if (!e.ok()) {
      os << "  failed: " << e.error << "\n";
      continue;
    }
    os << std::setprecision(2) << std::setw(12) << e.passesMs << std::setw(12) << e.compile.codegenMs.value_or(0)
       << std::setprecision(3) << std::setw(13) << e.bench->latencyMs.p50;
    if (base && base->ok()) {
      os << std::setprecision(3) << std::setw(10) << e.bench->latencyMs.p50 / base->bench->latencyMs.p50 << std::setw(11)
         << (base->passesMs > 0 ? e.passesMs / base->passesMs : 0.0);
    } else {
      os << std::setw(10) << "-" << std::setw(11) << "-";
    }
    os << std::setw(6) << letters.at(e.irHash) << "  " << (e.pareto ? "Pareto " : "")
       << (e.measuredAs != e.candidate.label ? "same IR as " + e.measuredAs + " " : "") << e.candidate.note << "\n";
  }
  for (const StudyStrategy& st : s.strategies)
    if (!st.note.empty()) os << st.spec << ": " << st.note << "\n";
  if (base) os << "x lat, x optimise: relative to " << base->candidate.label << " (below 1: better)\n";
  os.unsetf(std::ios::floatfield);
}

}  // namespace kiln::bench
