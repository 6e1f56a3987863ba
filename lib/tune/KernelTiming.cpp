//===- lib/tune/KernelTiming.cpp - How a candidate is judged ---------------===//
//
// See kiln/tune/KernelTiming.h.
//
//===----------------------------------------------------------------------===//
#include "kiln/tune/KernelTiming.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "kiln/support/ProcessInfo.h"
#include "kiln/support/Statistics.h"
#include "kiln/support/Stopwatch.h"

namespace kiln::tune {

const char* measureStatusName(MeasureStatus s) {
  switch (s) {
    case MeasureStatus::Ok: return "ok";
    case MeasureStatus::LowerError: return "lower-error";
    case MeasureStatus::CompileError: return "compile-error";
    case MeasureStatus::WrongOutput: return "wrong-output";
    case MeasureStatus::RunError: return "run-error";
  }
  return "?";
}

KernelOutcome checkOutputs(const std::vector<Tensor>& args, const ExpectedOutputs& expected, double tolerance) {
  KernelOutcome out;
  for (const auto& [a, want] : expected) out.maxError = std::max(out.maxError, maxRelativeError(args[a], *want));
  if (!(out.maxError <= tolerance)) {
    out.status = MeasureStatus::WrongOutput;
    out.error = "largest relative error " + std::to_string(out.maxError) + " > tolerance " + std::to_string(tolerance);
  }
  return out;
}

namespace {

/// Runs `timer` once, checks its outputs, times it; what the driver or library refuses is a run error, and so is a
/// timer that could not be made, except for no driver or device when `noDeviceIsError`.
Expected<KernelOutcome> measureOnTimer(Expected<std::unique_ptr<runtime::CudaKernelTimer>> timer, std::vector<Tensor>& args,
                                       const ExpectedOutputs& expected, const MeasureOptions& options, bool noDeviceIsError) {
  auto runError = [](const Error& e) {
    KernelOutcome out;
    out.status = MeasureStatus::RunError;
    out.error = e.message();
    return out;
  };
  if (!timer) {
    if (noDeviceIsError && timer.error().code() == ErrorCode::DeviceUnavailable) return std::move(timer).error();
    return runError(timer.error());
  }
  std::vector<size_t> outputs;
  for (const auto& e : expected) outputs.push_back(e.first);
  if (Status s = (*timer)->runOnce(args, outputs); !s.isOk()) return runError(s.error());
  KernelOutcome out = checkOutputs(args, expected, options.tolerance);
  if (!out.ok()) return out;
  runtime::CudaTimingOptions timing;
  timing.warmup = options.warmup;
  timing.repeats = options.repeats;
  timing.minSampleMs = options.minSampleMs;
  timing.flushL2 = options.flushL2;
  Expected<double> ms = (*timer)->time(timing);
  if (!ms) return runError(ms.error());
  out.ms = *ms;
  return out;
}

}  // namespace

Expected<KernelOutcome> measureCudaKernel(const std::vector<uint8_t>& image, const runtime::CudaKernelLaunch& launch,
                                          std::vector<Tensor>& args, const ExpectedOutputs& expected,
                                          const MeasureOptions& options) {
  return measureOnTimer(runtime::CudaKernelTimer::create(image, launch, args), args, expected, options, true);
}

Expected<KernelOutcome> measureCudaLibraryCall(const runtime::LibraryCall& call, std::vector<Tensor>& args,
                                               const ExpectedOutputs& expected, const MeasureOptions& options) {
  // A library that is not installed fails the call (as a run error), not the tuning run.
  return measureOnTimer(runtime::CudaKernelTimer::createLibrary(call, args), args, expected, options, false);
}

std::string installedLibraryVersion(const std::string& library) {
  std::optional<runtime::LibraryRoutine> routine = runtime::libraryRoutineNamed(library);
  if (!routine) return "";
  Expected<std::string> version = runtime::libraryVersion(*routine);
  return version ? *version : std::string();
}

double maxRelativeError(const Tensor& got, const Tensor& want) {
  std::vector<double> g = got.toDoubles(), w = want.toDoubles();
  // A kernel over dynamic dims writes a run's result packed at the start of a buffer sized for the maxima.
  if (g.size() < w.size()) return INFINITY;
  double squares = 0;
  for (double v : w) squares += std::isfinite(v) ? v * v : 0;
  const double rms = w.empty() ? 0 : std::sqrt(squares / double(w.size()));
  double worst = 0;
  for (size_t i = 0; i < w.size(); ++i) {
    double err = std::fabs(g[i] - w[i]);
    if (std::isnan(g[i]) != std::isnan(w[i])) err = INFINITY;
    if (std::isnan(err)) err = 0;  // both NaN
    worst = std::max(worst, err / std::max({1.0, std::fabs(w[i]), rms}));
  }
  return worst;
}

namespace {

/// Warm-up runs, then how many back-to-back runs make a sample of minSampleMs.
int calibrateRuns(const std::function<void()>& run, const MeasureOptions& options) {
  for (int w = 0; w < options.warmup; ++w) run();
  Stopwatch once;
  run();
  const double single = std::max(once.elapsedMs(), 1e-6);
  return int(std::clamp(std::ceil(options.minSampleMs / single), 1.0, 1e6));
}

double sampleMs(const std::function<void()>& run, int inner) {
  Stopwatch timer;
  for (int k = 0; k < inner; ++k) run();
  return timer.elapsedMs() / inner;
}

}  // namespace

double timeKernel(const std::function<void()>& run, const MeasureOptions& options) {
  const int inner = calibrateRuns(run, options);
  std::vector<double> samples;
  for (int s = 0; s < std::max(options.repeats, 1); ++s) samples.push_back(sampleMs(run, inner));
  return median(std::move(samples));
}

std::vector<double> timeInterleaved(const std::vector<std::function<void()>>& runs, const MeasureOptions& options) {
  std::vector<int> inner;
  for (const auto& run : runs) inner.push_back(calibrateRuns(run, options));
  std::vector<std::vector<double>> samples(runs.size());
  for (int s = 0; s < std::max(options.repeats, 1); ++s)
    for (size_t i = 0; i < runs.size(); ++i) {
      runs[i]();
      samples[i].push_back(sampleMs(runs[i], inner[i]));
    }
  std::vector<double> out;
  for (auto& s : samples) out.push_back(median(std::move(s)));
  return out;
}

std::string cpuDeviceName() {
  MachineInfo m = describeMachine();
  return m.cpu + ", " + std::to_string(m.cores) + " logical cores";
}

}  // namespace kiln::tune
