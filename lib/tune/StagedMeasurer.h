//===- lib/tune/StagedMeasurer.h - A batch of candidates in three stages -===//
//
// What the CPU and CUDA measurers share (kiln/tune/Measurer.h): a batch is
// lowered one candidate after the other (cheap; a candidate that does not
// lower is a lower error), built in parallel on --build-threads (a failed
// build is a compile error), and only when every build has finished is each
// valid candidate bound to its arguments, run once, checked against the
// reference and timed, one at a time, so nothing else runs while a
// candidate is timed. The targets fill in how to lower, build and run.
// With MeasureOptions::interleave the batch also holds the task's default
// configuration (unless it is one of the candidates), every valid
// candidate is bound and checked first, and then all are timed in
// interleaved rounds (timeInterleaved); each result records the default's
// time as its anchor. Only targets with a `runner` can do that.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kiln/support/Stopwatch.h"
#include "kiln/support/ThreadPool.h"
#include "kiln/tune/Measurer.h"

namespace kiln::tune {

/// `Candidate` holds a `codegen::LoweredKernel lowered` and what its build makes.
template <class Candidate>
class StagedMeasurer : public Measurer {
 public:
  StagedMeasurer(std::map<std::string, Tensor> reference, MeasureOptions options)
      : reference_(std::move(reference)), options_(options) {}

  Expected<std::vector<MeasureResult>> measure(const TuningTask& task, const std::vector<codegen::Config>& asked) final {
    const codegen::KernelGroup& group = *task.groups.front();
    std::vector<codegen::Config> configs = asked;
    size_t anchor = configs.size();
    if (options_.interleave) {
      anchor = size_t(std::find(configs.begin(), configs.end(), task.space.defaultConfig()) - configs.begin());
      if (anchor == configs.size()) configs.push_back(task.space.defaultConfig());
    }
    std::vector<MeasureResult> results(configs.size());
    std::vector<Candidate> built(configs.size());
    for (size_t i = 0; i < configs.size(); ++i) {
      results[i].config = configs[i];
      Stopwatch timer;
      Status s = task.space.check(configs[i]);
      if (s.isOk()) s = lower(group, configs[i], "tune_" + std::to_string(i), built[i]);
      if (!s.isOk()) fail(results[i], MeasureStatus::LowerError, s.error().message());
      results[i].buildMs = timer.elapsedMs();
    }
    runOnThreads(built.size(), options_.buildThreads, [&](size_t i) {
      if (!results[i].ok()) return;
      Stopwatch timer;
      if (Status s = build(built[i]); !s.isOk()) fail(results[i], MeasureStatus::CompileError, s.error().message());
      results[i].buildMs += timer.elapsedMs();
    });
    std::shared_ptr<void> timing = beginTiming();
    if (options_.interleave) {
      KILN_TRY(timeBatchInterleaved(group, built, results));
      if (results[anchor].ok())
        for (MeasureResult& r : results) r.anchorMs = r.ok() ? results[anchor].ms : 0;
      results.resize(asked.size());
      return results;
    }
    for (size_t i = 0; i < configs.size(); ++i) {
      if (!results[i].ok()) continue;
      // A value the kernel reads that the reference lacks is the measurer's bug, not the candidate's.
      KILN_ASSIGN(KernelArguments args, bindKernelArguments(group, built[i].lowered, reference_));
      KILN_TRY(runAndTime(built[i], args, results[i]));
    }
    return results;
  }

 protected:
  static void fail(MeasureResult& r, MeasureStatus s, std::string why) {
    r.status = s;
    r.error = std::move(why);
  }

  /// After the first run: records the outputs' error in r; false (r marked
  /// wrong-output) when it exceeds the tolerance.
  bool outputsMatch(const KernelArguments& args, MeasureResult& r) const {
    take(checkOutputs(args.tensors, args.expected, options_.tolerance), r);
    return r.ok();
  }
  /// Copies what running a candidate gave into its result.
  static void take(const KernelOutcome& outcome, MeasureResult& r) {
    r.status = outcome.status;
    r.ms = outcome.ms;
    r.maxError = outcome.maxError;
    r.error = outcome.error;
  }

  virtual Status lower(const codegen::KernelGroup& group, const codegen::Config& config, const std::string& name,
                       Candidate& c) const = 0;
  virtual Status build(Candidate& c) const = 0;
  /// Runs once, checks with outputsMatch, times into r.ms. A failure of the
  /// candidate marks r; an error returned stops the whole measurement.
  virtual Status runAndTime(Candidate& c, KernelArguments& args, MeasureResult& r) const = 0;
  /// One run of a built candidate on `args` (which outlive it), for
  /// interleaved timing; null where the target cannot interleave.
  virtual std::function<void()> runner(Candidate& c, KernelArguments& args) const {
    (void)c, (void)args;
    return nullptr;
  }
  /// Held while the batch is run and timed (the CPU measurer pins its threads).
  virtual std::shared_ptr<void> beginTiming() const { return nullptr; }

  std::map<std::string, Tensor> reference_;
  MeasureOptions options_;

 private:
  /// Every valid candidate bound, run once and checked, then the ones whose outputs match timed together.
  Status timeBatchInterleaved(const codegen::KernelGroup& group, std::vector<Candidate>& built,
                              std::vector<MeasureResult>& results) const {
    std::vector<KernelArguments> args(built.size());
    std::vector<std::function<void()>> runs;
    std::vector<size_t> timed;
    for (size_t i = 0; i < built.size(); ++i) {
      if (!results[i].ok()) continue;
      KILN_ASSIGN(args[i], bindKernelArguments(group, built[i].lowered, reference_));
      std::function<void()> run = runner(built[i], args[i]);
      if (!run) return makeError(ErrorCode::InvalidArgument, "interleaved timing is not supported on target ", target());
      run();
      if (!outputsMatch(args[i], results[i])) continue;
      runs.push_back(std::move(run));
      timed.push_back(i);
    }
    std::vector<double> ms = timeInterleaved(runs, options_);
    for (size_t k = 0; k < timed.size(); ++k) results[timed[k]].ms = ms[k];
    return Status::ok();
  }
};

}  // namespace kiln::tune
