//===- lib/bench/BenchRecord.cpp - JSON and table forms of a record --------===//
//
// Field names and units here are the schema (docs/benchmarking.md); change
// them only together with the schema version and the ONNX Runtime driver.
//
//===----------------------------------------------------------------------===//
#include "kiln/bench/BenchRecord.h"

#include <iomanip>
#include <nlohmann/json.hpp>
#include <sstream>

namespace kiln::bench {
namespace {

nlohmann::ordered_json latencyJson(const LatencySummary& l) {
  return {{"mean", l.mean}, {"stddev", l.stddev}, {"min", l.min}, {"max", l.max},
          {"p50", l.p50},   {"p90", l.p90},       {"p99", l.p99}};
}

void printLatency(std::ostream& os, const LatencySummary& l) {
  os << "mean " << l.mean << "  p50 " << l.p50 << "  p90 " << l.p90 << "  p99 " << l.p99 << "  (min " << l.min << ", max "
     << l.max << ", stddev " << l.stddev << ")\n";
}

nlohmann::json optionalNumber(const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(); }

std::string megabytes(uint64_t bytes) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(1) << double(bytes) / (1024.0 * 1024.0) << " MiB";
  return os.str();
}

std::string phase(const std::optional<double>& v) {
  if (!v) return "-";
  std::ostringstream os;
  os << std::fixed << std::setprecision(1) << *v;
  return os.str();
}

}  // namespace

std::string toJsonLine(const BenchRecord& r) {
  nlohmann::ordered_json j;
  j["schema"] = kBenchSchema;
  j["runtime"] = r.runtime;
  j["runtime_version"] = r.runtimeVersion;
  j["backend"] = r.backend;
  j["model"] = r.model;
  j["model_path"] = r.modelPath;
  j["date"] = r.date;
  j["machine"] = {{"host", r.machine.host}, {"cpu", r.machine.cpu}, {"cores", r.machine.cores},
                  {"os", r.machine.os}, {"gpu", r.gpuName.empty() ? nlohmann::json() : nlohmann::json(r.gpuName)}};
  nlohmann::ordered_json inputs = nlohmann::ordered_json::object();
  for (const auto& [name, dims] : r.inputShapes) inputs[name] = dims;
  j["config"] = {{"warmup", r.warmup}, {"runs", r.runs},       {"threads", r.threads}, {"batch", r.batch},
                 {"sigmas", r.sigmas}, {"seed", r.seed},       {"options", r.options}, {"inputs", inputs}};
  j["launch"] = r.launch.empty() ? nlohmann::json() : nlohmann::json(r.launch);
  j["runs_completed"] = r.runsCompleted;
  j["samples"] = r.latencyMs.samples;
  j["outliers"] = r.latencyMs.outliers;
  j["latency_ms"] = latencyJson(r.latencyMs);
  j["throughput_per_s"] = r.throughputPerS;
  j["compile_ms"] = {{"import", optionalNumber(r.compileMs.importMs)},
                     {"passes", optionalNumber(r.compileMs.passesMs)},
                     {"codegen", optionalNumber(r.compileMs.codegenMs)},
                     {"total", r.compileMs.totalMs()}};
  j["memory"] = {{"peak_host_bytes", r.peakHostBytes},
                 {"peak_device_bytes", r.peakDeviceBytes ? nlohmann::json(*r.peakDeviceBytes) : nlohmann::json()}};
  if (r.gpu)
    j["gpu"] = {{"name", r.gpu->name},
                {"power_w_mean", r.gpu->powerMeanW},
                {"power_w_max", r.gpu->powerMaxW},
                {"temperature_c_max", r.gpu->temperatureMaxC},
                {"samples", r.gpu->samples}};
  else
    j["gpu"] = nullptr;
  if (r.versus)
    j["versus"] = {{"baseline", r.versus->baseline},
                   {"baseline_latency_ms", latencyJson(r.versus->baselineMs)},
                   {"ratio_of_medians", r.versus->ratioOfMedians},
                   {"median_pair_ratio", r.versus->medianPairRatio},
                   {"pairs", r.versus->pairs},
                   {"pairs_faster", r.versus->pairsFaster}};
  else
    j["versus"] = nullptr;
  j["wall_s"] = r.wallS;
  return j.dump();
}

void printTable(std::ostream& os, const BenchRecord& r) {
  const LatencySummary& l = r.latencyMs;
  auto flags = os.flags();
  os << std::fixed << std::setprecision(3);
  os << "model        " << r.model << "\n"
     << "backend      " << r.backend << (r.options.empty() ? "" : " (" + r.options + ")") << ", " << r.threads
     << (r.threads == 1 ? " thread" : " threads") << ", batch " << r.batch << "\n"
     << "runs         " << r.runsCompleted << " timed after " << r.warmup << " warm-up; " << l.outliers
     << " outliers beyond " << std::defaultfloat << r.sigmas << std::fixed << " sigma removed\n"
     << "latency ms   ";
  printLatency(os, l);
  if (r.versus) {
    const PairedComparison& v = *r.versus;
    os << std::left << std::setw(13) << (v.baseline.size() < 13 ? v.baseline : "baseline") << std::right;
    printLatency(os, v.baselineMs);
    os << "versus       " << v.pairs << " alternating pairs with " << v.baseline << ": p50 ratio " << v.ratioOfMedians
       << ", median of pair ratios " << v.medianPairRatio << ", faster in " << v.pairsFaster << " of " << v.pairs << "\n";
  }
  os << std::setprecision(2) << "throughput   " << r.throughputPerS << " inferences/s\n"
     << std::setprecision(1) << "compile ms   import " << phase(r.compileMs.importMs) << "  passes "
     << phase(r.compileMs.passesMs) << "  codegen " << phase(r.compileMs.codegenMs) << "  total "
     << r.compileMs.totalMs() << "\n"
     << "memory       peak host " << megabytes(r.peakHostBytes) << ", peak device "
     << (r.peakDeviceBytes ? megabytes(*r.peakDeviceBytes) : std::string("-")) << "\n";
  if (!r.launch.empty()) os << "launch       " << r.launch << "\n";
  if (r.gpu)
    os << "gpu          " << r.gpu->name << ": power mean " << r.gpu->powerMeanW << " W, max " << r.gpu->powerMaxW
       << " W; temperature max " << r.gpu->temperatureMaxC << " C\n";
  os << "machine      " << r.machine.cpu << ", " << r.machine.cores << " cores, " << r.machine.os
     << (r.gpuName.empty() ? "" : ", " + r.gpuName) << "\n";
  os.flags(flags);
}

}  // namespace kiln::bench
