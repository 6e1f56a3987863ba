//===- lib/bench/BenchRunner.cpp - Warm-up, timed runs, summary ------------===//
//
// The loop is deliberately plain: no batching of runs and no work between
// runs besides reading the clock, so per-run latency is what an application
// calling the runtime in a loop would see.
//
//===----------------------------------------------------------------------===//
#include "kiln/bench/BenchRunner.h"

#include <algorithm>

#include "kiln/support/Stopwatch.h"

namespace kiln::bench {
namespace {

/// Prints "<what> i/n" lines at most every two seconds.
class Progress {
 public:
  explicit Progress(std::ostream* os) : os_(os) {}
  void update(const char* what, int done, int total) {
    if (!os_ || sinceLast_.elapsedMs() < 2000) return;
    sinceLast_.restart();
    *os_ << "kiln bench: " << what << " " << done << "/" << total << "\n" << std::flush;
  }

 private:
  std::ostream* os_;
  Stopwatch sinceLast_;
};

Status checkOptions(const BenchOptions& options) {
  if (options.warmup < 0 || options.runs < 1)
    return Error(ErrorCode::InvalidArgument, "benchmark needs --warmup >= 0 and --runs >= 1");
  if (options.batch < 1) return Error(ErrorCode::InvalidArgument, "benchmark needs --batch >= 1");
  return Status::ok();
}

/// One run, timed; `what` names it in an error ("timed run 3").
Expected<double> timedRun(Backend& backend, const std::vector<RuntimeValue>& inputs, const std::string& what) {
  Stopwatch run;
  auto out = backend.run(inputs);
  const double ms = run.elapsedMs();
  if (!out) return std::move(out).error().withContext(what);
  return ms;
}

/// The fields every benchmark fills once its timed runs are done.
void finishRecord(const Backend& backend, const BenchOptions& options, const std::vector<double>& times,
                  const Stopwatch& total, BenchRecord& record) {
  record.warmup = options.warmup;
  record.runs = options.runs;
  record.runsCompleted = int(times.size());
  record.sigmas = options.sigmas;
  record.batch = options.batch;
  record.threads = backend.threads();
  record.backend = backend.name();
  record.latencyMs = summarizeLatencies(times, options.sigmas);
  record.throughputPerS = record.latencyMs.mean > 0 ? options.batch * 1000.0 / record.latencyMs.mean : 0;
  record.peakHostBytes = peakResidentBytes();
  record.peakDeviceBytes = backend.peakDeviceBytes();
  record.machine = describeMachine();
  record.date = utcTimestamp();
  record.wallS = total.elapsedMs() / 1000.0;
}

}  // namespace

Status runBenchmark(Backend& backend, const std::vector<RuntimeValue>& inputs, const BenchOptions& options,
                    BenchRecord& record, std::ostream* progress) {
  KILN_TRY(checkOptions(options));
  Stopwatch total;
  Progress bar(progress);
  for (int i = 0; i < options.warmup; ++i) {
    auto out = backend.run(inputs);
    if (!out) return std::move(out).error().withContext("warm-up run " + std::to_string(i + 1));
    bar.update("warm-up", i + 1, options.warmup);
  }
  GpuMonitor monitor;
  bool sampleGpu = backend.usesGpu() && monitor.available();
  if (sampleGpu) monitor.start();
  std::vector<double> times;
  times.reserve(size_t(options.runs));
  Stopwatch timedPhase;
  for (int i = 0; i < options.runs; ++i) {
    auto ms = timedRun(backend, inputs, "timed run " + std::to_string(i + 1));
    if (!ms) {
      if (sampleGpu) monitor.stop();
      return std::move(ms).error();
    }
    times.push_back(*ms);
    bar.update("timed run", i + 1, options.runs);
    if (options.maxSeconds > 0 && timedPhase.elapsedMs() > options.maxSeconds * 1000) break;
  }
  if (sampleGpu) record.gpu = monitor.stop();
  if (monitor.available()) record.gpuName = monitor.deviceName();

  finishRecord(backend, options, times, total, record);
  return Status::ok();
}

Status runPairedBenchmark(Backend& backend, Backend& baseline, const std::string& baselineName,
                          const std::vector<RuntimeValue>& inputs, const BenchOptions& options, BenchRecord& record,
                          std::ostream* progress) {
  KILN_TRY(checkOptions(options));
  Stopwatch total;
  Progress bar(progress);
  // Strict alternation, baseline first: b0 t0 b1 t1 ... t(n-1) bn. Each run
  // follows a run of the other model (none finds its own data warm from the
  // run before), and run ti is compared with the mean of the baseline runs on
  // either side of it, which cancels a linear drift across the three.
  auto base = [&](int i, const std::string& what) {
    return timedRun(baseline, inputs, baselineName + " " + what + " " + std::to_string(i + 1));
  };
  auto own = [&](int i, const std::string& what) { return timedRun(backend, inputs, what + " " + std::to_string(i + 1)); };
  for (int i = 0; i < options.warmup; ++i) {
    KILN_TRY(base(i, "warm-up run"));
    KILN_TRY(own(i, "warm-up run"));
    bar.update("warm-up pair", i + 1, options.warmup);
  }
  std::vector<double> times, baseTimes, ratios;
  KILN_ASSIGN(double before, base(0, "timed run"));
  Stopwatch timedPhase;
  for (int i = 0; i < options.runs; ++i) {
    KILN_ASSIGN(double ms, own(i, "timed run"));
    KILN_ASSIGN(double after, base(i + 1, "timed run"));
    times.push_back(ms);
    baseTimes.push_back(before);
    ratios.push_back(ms / (0.5 * (before + after)));
    before = after;
    bar.update("timed pair", i + 1, options.runs);
    if (options.maxSeconds > 0 && timedPhase.elapsedMs() > options.maxSeconds * 1000) break;
  }
  GpuMonitor monitor;
  if (monitor.available()) record.gpuName = monitor.deviceName();
  finishRecord(backend, options, times, total, record);
  PairedComparison v;
  v.baseline = baselineName;
  v.baselineMs = summarizeLatencies(baseTimes, options.sigmas);
  v.ratioOfMedians = v.baselineMs.p50 > 0 ? record.latencyMs.p50 / v.baselineMs.p50 : 0;
  v.medianPairRatio = median(ratios);
  v.pairs = int(ratios.size());
  v.pairsFaster = int(std::count_if(ratios.begin(), ratios.end(), [](double r) { return r < 1; }));
  record.versus = v;
  return Status::ok();
}

}  // namespace kiln::bench
