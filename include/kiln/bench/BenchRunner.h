//===- kiln/bench/BenchRunner.h - The measurement loop -----------*- C++ -*-===//
//
// Runs a prepared backend `warmup` times untimed, then `runs` times timed
// (steady clock around each run), summarises the latencies with outliers
// beyond `sigmas` standard deviations removed, and fills the measured fields
// of a BenchRecord: latency, throughput, peak host memory (the process's high
// water mark, which includes import and preparation), peak device memory, and
// NVML power/temperature for GPU backends. Progress goes to `progress` about
// every two seconds. runPairedBenchmark measures a backend against a baseline
// (kiln bench --versus-untuned) with their runs alternating one by one.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <ostream>
#include <vector>

#include "kiln/bench/Backend.h"
#include "kiln/bench/BenchRecord.h"

namespace kiln::bench {

struct BenchOptions {
  int warmup = 100;
  int runs = 1000;
  double sigmas = 3;
  int batch = 1;          ///< inferences per run, for throughput
  double maxSeconds = 0;  ///< stop timed runs after this long (0: no limit); at least one run is timed
};

/// Measures `backend` on `inputs`; `record` arrives with model, compile and
/// configuration fields filled by the caller and leaves with the measurements.
Status runBenchmark(Backend& backend, const std::vector<RuntimeValue>& inputs, const BenchOptions& options,
                    BenchRecord& record, std::ostream* progress);

/// Measures `backend` against `baseline` (the same model prepared another
/// way) in strictly alternating single runs, warm-up included, the baseline
/// first and last: b0 t0 b1 t1 ... t(n-1) bn. Pair i compares ti with the
/// mean of b(i) and b(i+1), the runs on either side of it. Fills `record` as
/// runBenchmark does (its latency is `backend`'s) and `record.versus`, named
/// `baselineName` (its latency summarises b0..b(n-1)). No GPU power
/// sampling (it would mix the two).
Status runPairedBenchmark(Backend& backend, Backend& baseline, const std::string& baselineName,
                          const std::vector<RuntimeValue>& inputs, const BenchOptions& options, BenchRecord& record,
                          std::ostream* progress);

}  // namespace kiln::bench
