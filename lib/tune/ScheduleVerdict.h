//===- lib/tune/ScheduleVerdict.h - Which measured schedule a kernel gets --===//
//
// Given one kernel's generated-code records of a tuning database (its key's,
// in file order, library calls excluded), decides the configuration that
// kiln compile --tuning-db applies. Two sources, in this order:
//
// 1. The tuner's confirmations. kiln tune ends each kernel by measuring its
//    winner and the default once more side by side (strategy "confirm", the
//    default's record first) and keeps the winner only if it is faster in
//    that pair too. Those pairs decide: per confirmed configuration the mean
//    of its pairs' ratios (winner / default), a pair with a failed run
//    disqualifying it; the lowest mean below 1 is applied, else the default
//    is kept. Separate measurements made minutes apart on a machine whose
//    speed drifts are not compared with each other.
// 2. Without confirmations (a batch-mode import, a hand-written record):
//    the lowest mean time per configuration over its valid records, relative
//    to the default's time beside it where every record has one (anchor_ms,
//    interleaved timing), else as measured; the default is kept unless beaten.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <vector>

#include "kiln/tune/TuningDatabase.h"

namespace kiln::tune {

struct ScheduleVerdict {
  bool measured = false;                    ///< any valid record or confirmation (else: missing)
  const codegen::Config* winner = nullptr;  ///< the configuration to apply; null: keep the default
  double tunedMs = 0;    ///< the fastest non-default configuration's time (ms; 0: none measured)
  double defaultMs = 0;  ///< the default's (0: never measured)
  /// The fastest generated kernel's time, the default included (what a library call must beat).
  double generatedMs() const { return winner || defaultMs <= 0 ? tunedMs : defaultMs; }
};

/// `records` point into the database and must outlive the verdict (winner points at one's config).
ScheduleVerdict scheduleVerdict(const std::vector<const TuningRecord*>& records, const codegen::Config& defaultConfig);

}  // namespace kiln::tune
