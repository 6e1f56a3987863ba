//===- lib/bench/BenchRunner.cpp - Warm-up, timed runs, summary ------------===//
//
// The loop is deliberately plain: no batching of runs and no work between
// runs besides reading the clock, so per-run latency is what an application
// calling the runtime in a loop would see.
//
//===----------------------------------------------------------------------===//
#include "kiln/bench/BenchRunner.h"

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

}  // namespace

Status runBenchmark(Backend& backend, const std::vector<RuntimeValue>& inputs, const BenchOptions& options,
                    BenchRecord& record, std::ostream* progress) {
  if (options.warmup < 0 || options.runs < 1)
    return Error(ErrorCode::InvalidArgument, "benchmark needs --warmup >= 0 and --runs >= 1");
  if (options.batch < 1) return Error(ErrorCode::InvalidArgument, "benchmark needs --batch >= 1");
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
    Stopwatch run;
    auto out = backend.run(inputs);
    double ms = run.elapsedMs();
    if (!out) {
      if (sampleGpu) monitor.stop();
      return std::move(out).error().withContext("timed run " + std::to_string(i + 1));
    }
    times.push_back(ms);
    bar.update("timed run", i + 1, options.runs);
    if (options.maxSeconds > 0 && timedPhase.elapsedMs() > options.maxSeconds * 1000) break;
  }
  if (sampleGpu) record.gpu = monitor.stop();
  if (monitor.available()) record.gpuName = monitor.deviceName();

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
  return Status::ok();
}

}  // namespace kiln::bench
