//===- kiln/bench/BenchRunner.h - The measurement loop -----------*- C++ -*-===//
//
// Runs a prepared backend `warmup` times untimed, then `runs` times timed
// (steady clock around each run), summarises the latencies with outliers
// beyond `sigmas` standard deviations removed, and fills the measured fields
// of a BenchRecord: latency, throughput, peak host memory (the process's high
// water mark, which includes import and preparation), peak device memory, and
// NVML power/temperature for GPU backends. Progress goes to `progress` about
// every two seconds.
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

}  // namespace kiln::bench
