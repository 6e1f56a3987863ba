//===- kiln/bench/BenchRecord.h - One benchmark's result ----------*- C++ -*-===//
//
// The record every benchmark writes, whatever ran it (kiln on any backend, or
// a peer such as ONNX Runtime through scripts/ort_reference.js): schema
// "kiln-bench/1", one JSON object per benchmark run, one per line in .jsonl
// files, so later tools aggregate records from any source. The fields are
// documented in docs/benchmarking.md; a field that does not apply (a phase
// the backend lacks, device memory on the CPU) is null, never omitted.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "kiln/bench/Backend.h"
#include "kiln/bench/GpuMonitor.h"
#include "kiln/support/ProcessInfo.h"
#include "kiln/support/Statistics.h"
#include "kiln/support/Tensor.h"

namespace kiln::bench {

inline constexpr const char* kBenchSchema = "kiln-bench/1";

/// A paired measurement against a baseline (kiln bench --versus-untuned):
/// the record's timed runs alternated one by one with the baseline's (the
/// same model prepared without the tuning database), so the machine's drift
/// and its neighbours' load hit both alike.
struct PairedComparison {
  std::string baseline;        ///< what the record is compared with, e.g. "untuned"
  LatencySummary baselineMs;   ///< the baseline's runs, summarised as the record's own
  double ratioOfMedians = 0;   ///< the record's p50 over the baseline's
  double medianPairRatio = 0;  ///< the median over the record's runs of (run / mean of the baseline runs beside it)
  int pairs = 0;
  int pairsFaster = 0;         ///< pairs in which the record's run was the faster
};

struct BenchRecord {
  // What ran, where and when.
  std::string runtime = "kiln";
  std::string runtimeVersion;
  std::string backend;
  std::string model;      ///< file name
  std::string modelPath;
  std::string date;       ///< UTC, ISO 8601
  MachineInfo machine;
  std::string gpuName;    ///< empty when no GPU was seen
  // How it ran.
  int warmup = 0, runs = 0, runsCompleted = 0;
  int threads = 1, batch = 1;
  double sigmas = 3;
  uint64_t seed = 0;
  std::string options;    ///< backend options as given ("-O0", a pipeline, ...)
  std::vector<std::pair<std::string, Dims>> inputShapes;
  std::string launch;     ///< how a run launches on the device (Backend::launchSummary); empty on the host
  // What was measured.
  LatencySummary latencyMs;
  double throughputPerS = 0;  ///< batch * 1000 / mean latency
  CompilePhases compileMs;
  uint64_t peakHostBytes = 0;
  std::optional<uint64_t> peakDeviceBytes;
  std::optional<GpuSample> gpu;
  std::optional<PairedComparison> versus;  ///< set by runPairedBenchmark
  double wallS = 0;
};

/// The record as one line of JSON (no trailing newline).
std::string toJsonLine(const BenchRecord& record);

/// A readable summary of the record.
void printTable(std::ostream& os, const BenchRecord& record);

}  // namespace kiln::bench
