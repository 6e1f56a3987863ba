//===- kiln/tune/Tuner.h - Tuning a model's kernels ---------------*- C++ -*-===//
//
// The tuning loop: measure every task's default schedule (the baseline, and
// each task's weight = groups sharing it x default time), then hand out the
// trial budget batch by batch to the task where it promises the largest
// end-to-end gain: priority = weight now (groups x best time) x (relative
// improvement its last batch made + 0.05), so untried tasks go first,
// heaviest first, and tasks that stopped improving yield to the others (the
// gradient rule of Ansor's task scheduler, simplified). Each task has its
// own strategy instance; every measurement is appended to the tuning
// database as it happens. Invalid candidates do not count as trials. On a
// target with library tactics each task's library call is measured beside
// its default (and again with the confirmation), and a task's weight is
// then the faster of the two: tuning a kernel a library call already beats
// gains nothing until it beats the call. Where the measurer times batches
// beside the default (MeasureOptions::interleave), candidates are compared,
// and their strategy learns them, by their time relative to the default's in
// the same rounds (scaled by the default's first time), so a batch caught in
// a slow or fast moment of a shared machine does not decide the winner; the
// database keeps the times as measured, with the anchor.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "kiln/tune/Measurer.h"
#include "kiln/tune/SearchStrategy.h"
#include "kiln/tune/TuningDatabase.h"
#include "kiln/tune/TuningTask.h"

namespace kiln::tune {

struct TuneProgress {
  size_t task = 0, tasks = 0;   ///< the task just measured (0-based), of how many
  std::string description;
  size_t trials = 0, budget = 0;  ///< valid measurements so far, of the budget
  size_t taskTrials = 0;
  double bestGflops = 0;        ///< the task's best so far
  double taskSpeedup = 1;       ///< the task's default time / best time
  double elapsedS = 0, etaS = 0;
};

struct TuneOptions {
  std::string strategy = "sa-as";
  size_t trials = 64;   ///< valid measured candidates, over all tasks (default baselines not counted)
  size_t batch = 8;     ///< candidates per measurement round
  size_t maxTasks = 0;  ///< tune only the heaviest N tasks (0: all)
  StrategyOptions search;  ///< search.seed seeds everything
  bool transfer = true;    ///< train model-guided strategies on the database's records of similar kernels too
  /// Also measure each task's library call where the target has one (CUDA:
  /// cuBLASLt, cuDNN), beside its default and again at the confirmation;
  /// not counted as trials.
  bool libraries = true;
  std::function<void(const TuneProgress&)> progress;
};

struct TaskOutcome {
  std::string signature, description, templateName;
  size_t groups = 0;
  double flops = 0;
  double defaultMs = 0, bestMs = 0;  ///< bestMs: the faster of default and tuned
  codegen::Config bestConfig;
  bool keptDefault = true;           ///< no candidate beat the default
  size_t trials = 0, invalid = 0;
  size_t reused = 0;                 ///< proposals whose code (kernel IR) was measured already: not measured again
  std::vector<double> curve;         ///< best time after each valid trial (the default before the first)
  double seconds = 0;
  std::string skipped;               ///< why the task was not tuned ("" when it was)
  size_t transferRows = 0;           ///< other kernels' records the cost model also learned from
  std::string library;               ///< the library call measured for it ("" if none)
  double libraryMs = 0;              ///< its time (0: not measured or failed)
  std::string libraryError;          ///< why it failed
  /// The library call beat bestMs: compiling with the database runs it.
  bool libraryFaster() const { return libraryMs > 0 && libraryMs < bestMs; }
};

struct TuneReport {
  std::string strategy, target, device;
  std::vector<TaskOutcome> tasks;
  size_t trials = 0, invalid = 0, reused = 0;
  size_t libraryTasks = 0;  ///< tasks whose library call was faster than their best kernel
  double seconds = 0;
  /// Sum over tasks of groups x time: an estimate of the kernels' share of end-to-end latency
  /// (tuned: the faster of each task's best kernel and its library call).
  double defaultKernelMs = 0, tunedKernelMs = 0;
};

Expected<TuneReport> tuneTasks(const TaskSet& tasks, Measurer& measurer, const TuneOptions& options,
                               TuningDatabase* database);

}  // namespace kiln::tune
