//===- lib/tune/ScheduleVerdict.cpp - Which measured schedule a kernel gets -===//
//
// See ScheduleVerdict.h.
//
//===----------------------------------------------------------------------===//
#include "ScheduleVerdict.h"

#include <limits>
#include <map>
#include <optional>
#include <set>

namespace kiln::tune {
namespace {

using codegen::Config;

/// What is averaged per configuration, and its raw times (for reporting in ms).
struct Mean {
  double sum = 0, rawSum = 0;
  int n = 0;
  const Config* config = nullptr;  ///< in the first record of it
  void add(double v, double raw, const Config& c) {
    sum += v, rawSum += raw, ++n;
    if (!config) config = &c;
  }
  double mean() const { return sum / n; }
  double rawMean() const { return rawSum / n; }
};

/// Source 1: the confirmation pairs; nullopt when there are none.
std::optional<ScheduleVerdict> fromConfirmations(const std::vector<const TuningRecord*>& records) {
  std::map<Config, Mean> ratios;        // per confirmed configuration: winner / default over its pairs
  std::set<Config> disqualified;        // a pair of it had a failed run
  Mean defaultTimes;
  const TuningRecord* pendingDefault = nullptr;
  bool any = false;
  for (const TuningRecord* r : records) {
    if (r->strategy != "confirm") continue;
    if (r->isDefault) {
      pendingDefault = r;
      continue;
    }
    if (!pendingDefault) continue;  // a winner's record without its default's: not a pair
    any = true;
    const TuningRecord& d = *pendingDefault;
    pendingDefault = nullptr;
    if (d.status != MeasureStatus::Ok || r->status != MeasureStatus::Ok || !(d.ms > 0)) {
      disqualified.insert(r->config);
      continue;
    }
    ratios[r->config].add(r->ms / d.ms, r->ms, r->config);
    defaultTimes.add(d.ms, d.ms, d.config);
  }
  if (!any) return std::nullopt;
  ScheduleVerdict v;
  v.measured = true;
  v.defaultMs = defaultTimes.n ? defaultTimes.rawMean() : 0;
  double bestRatio = std::numeric_limits<double>::infinity();
  for (const auto& [config, m] : ratios) {
    if (disqualified.count(config) || !(m.mean() < bestRatio)) continue;
    bestRatio = m.mean();
    v.tunedMs = m.rawMean();
    if (m.mean() < 1) v.winner = m.config;  // faster than the default beside it, on average over its pairs
  }
  return v;
}

/// Source 2: mean times, relative to the anchors where every valid record has one.
ScheduleVerdict fromMeans(const std::vector<const TuningRecord*>& records, const Config& defaultConfig) {
  bool anchored = true;
  for (const TuningRecord* r : records)
    if (r->status == MeasureStatus::Ok && !(r->anchorMs > 0)) anchored = false;
  std::map<Config, Mean> times;
  for (const TuningRecord* r : records)
    if (r->status == MeasureStatus::Ok) times[r->config].add(anchored ? r->ms / r->anchorMs : r->ms, r->ms, r->config);
  ScheduleVerdict v;
  v.measured = !times.empty();
  const auto d = times.find(defaultConfig);
  const double defaultMean = d != times.end() ? d->second.mean() : std::numeric_limits<double>::infinity();
  if (d != times.end()) v.defaultMs = d->second.rawMean();
  const Mean* best = nullptr;
  for (const auto& [config, m] : times)
    if (config != defaultConfig && (!best || m.mean() < best->mean())) best = &m;
  if (!best) return v;
  // In ms: as measured, or relative to the default and scaled by the default's mean time.
  v.tunedMs = anchored && v.defaultMs > 0 ? best->mean() / defaultMean * v.defaultMs : best->rawMean();
  if (best->mean() < defaultMean) v.winner = best->config;
  return v;
}

}  // namespace

ScheduleVerdict scheduleVerdict(const std::vector<const TuningRecord*>& records, const Config& defaultConfig) {
  std::optional<ScheduleVerdict> v = fromConfirmations(records);
  if (!v) return fromMeans(records, defaultConfig);
  if (v->defaultMs <= 0) {  // no pair without a failed run: the verdict stands (the default), the times from the means
    const ScheduleVerdict means = fromMeans(records, defaultConfig);
    v->defaultMs = means.defaultMs;
    v->tunedMs = means.tunedMs;
  }
  return *v;
}

}  // namespace kiln::tune
