//===- kiln/tune/KernelTiming.h - How a candidate is judged -------*- C++ -*-===//
//
// What the in-process measurer and the lean batch measurer (kiln-measure)
// share, so a candidate is judged the same way wherever it runs: the error
// measure against the reference, the timing protocol, and the name of the
// CPU the times belong to. Depends only on kiln_support (no LLVM).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <functional>
#include <string>

#include "kiln/support/Tensor.h"

namespace kiln::tune {

struct MeasureOptions {
  int warmup = 1;            ///< untimed runs after the correctness check
  int repeats = 5;           ///< timed samples; the median is the result
  double minSampleMs = 1.0;  ///< a sample runs the kernel until this much time passed
  double tolerance = 1e-3;   ///< maxRelativeError allowed vs the interpreter
  int buildThreads = 0;      ///< parallel builds (0: one per core)
  bool pinThreads = true;    ///< pin the kernel thread pool while timing
  bool flushL2 = false;      ///< CUDA: evict the L2 cache before every timed launch
};

/// Largest |got - want| / max(1, |want|, rms(want)) (infinite where one is
/// NaN and the other not): long reductions summed in another order are not
/// mistaken for wrong code where values are large.
double maxRelativeError(const Tensor& got, const Tensor& want);

/// Median milliseconds of one run: `warmup` runs, one calibration run, then
/// `repeats` samples of enough back-to-back runs to last minSampleMs.
double timeKernel(const std::function<void()>& run, const MeasureOptions& options);

/// "<CPU model>, <N> logical cores": the device key of CPU tuning records.
std::string cpuDeviceName();

}  // namespace kiln::tune
