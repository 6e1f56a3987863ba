//===- lib/support/Statistics.cpp - Latency summaries ----------------------===//
//
// Medians, outlier removal and nearest-rank percentiles; see Statistics.h for the
// definitions (they are part of the benchmark record's meaning).
//
//===----------------------------------------------------------------------===//
#include "kiln/support/Statistics.h"

#include <algorithm>
#include <cmath>

namespace kiln {
namespace {

void meanAndStddev(const std::vector<double>& v, double& mean, double& stddev) {
  mean = 0;
  for (double x : v) mean += x;
  mean /= double(v.size());
  double sq = 0;
  for (double x : v) sq += (x - mean) * (x - mean);
  stddev = std::sqrt(sq / double(v.size()));
}

}  // namespace

double nearestRankPercentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  double rank = std::ceil(p / 100.0 * double(sorted.size()));
  size_t index = rank < 1 ? 0 : std::min(sorted.size(), size_t(rank)) - 1;
  return sorted[index];
}

double median(std::vector<double> values) {
  const size_t n = values.size();
  if (n == 0) return 0;
  std::sort(values.begin(), values.end());
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

double upperMedian(std::vector<double> values) {
  if (values.empty()) return 0;
  std::nth_element(values.begin(), values.begin() + long(values.size() / 2), values.end());
  return values[values.size() / 2];
}

LatencySummary summarizeLatencies(std::vector<double> values, double sigmas) {
  LatencySummary s;
  if (values.empty()) return s;
  double mean, stddev;
  meanAndStddev(values, mean, stddev);
  if (sigmas > 0 && stddev > 0) {
    auto far = [&](double x) { return std::abs(x - mean) > sigmas * stddev; };
    size_t before = values.size();
    values.erase(std::remove_if(values.begin(), values.end(), far), values.end());
    s.outliers = before - values.size();
  }
  std::sort(values.begin(), values.end());
  s.samples = values.size();
  meanAndStddev(values, s.mean, s.stddev);
  s.min = values.front();
  s.max = values.back();
  s.p50 = nearestRankPercentile(values, 50);
  s.p90 = nearestRankPercentile(values, 90);
  s.p99 = nearestRankPercentile(values, 99);
  return s;
}

}  // namespace kiln
