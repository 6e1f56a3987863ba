//===- kiln/support/Statistics.h - Latency summaries -------------*- C++ -*-===//
//
// Medians of repeated timings (the tuner's samples, the replayed tuning
// tables), and summaries of them as the benchmark methodology of the pass-
// selection research prescribes: samples further than k standard deviations
// from the mean are dropped (once), then mean, standard deviation, min, max
// and nearest-rank percentiles are taken over what is left. The ONNX Runtime
// driver (scripts/ort_reference.js) implements the same definitions so that
// kiln and its peers are summarised identically.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstddef>
#include <vector>

namespace kiln {

struct LatencySummary {
  size_t samples = 0;   ///< samples kept
  size_t outliers = 0;  ///< samples dropped (beyond `sigmas` standard deviations)
  double mean = 0, stddev = 0, min = 0, max = 0;
  double p50 = 0, p90 = 0, p99 = 0;
};

/// Nearest-rank percentile (p in [0, 100]) of sorted values: the value at rank
/// ceil(p/100 * n) (1-based), the first value for p = 0. Empty input gives 0.
double nearestRankPercentile(const std::vector<double>& sorted, double p);

/// The median: the middle value of an odd count, the mean of the two middle
/// values of an even count. Empty input gives 0.
double median(std::vector<double> values);

/// The upper median: the value at index n / 2 of the sorted values (the
/// middle one of an odd count, the higher middle one of an even count), so
/// always one of the values; Python's statistics.median_high. Empty input gives 0.
double upperMedian(std::vector<double> values);

/// Summarises `values` after dropping those with |x - mean| > sigmas * stddev
/// (population standard deviation of all values; nothing is dropped when
/// sigmas <= 0 or the values are all equal).
LatencySummary summarizeLatencies(std::vector<double> values, double sigmas = 3.0);

}  // namespace kiln
