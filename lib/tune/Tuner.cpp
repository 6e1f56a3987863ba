//===- lib/tune/Tuner.cpp - Tuning a model's kernels -----------------------===//
//
// See kiln/tune/Tuner.h. A candidate whose kernel IR equals one already
// measured in the run (TaskSpace::codeKey) is not measured again: the
// strategy learns the earlier result for it, the database gets a copy
// marked strategy "same-code", and it costs no trial. A task's strategy is
// made again when the task is first tuned, so its cost model also learns
// from the kernels of its template measured earlier in the same run.
//
//===----------------------------------------------------------------------===//
#include "kiln/tune/Tuner.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "kiln/support/Hash.h"
#include "kiln/support/ProcessInfo.h"
#include "kiln/support/Stopwatch.h"
#include "kiln/tune/ScheduleFeatures.h"

namespace kiln::tune {

using namespace codegen;

namespace {

struct TaskState {
  const TuningTask* task = nullptr;
  std::shared_ptr<TaskSpace> space;  ///< features for the records, shared with the strategy
  std::unique_ptr<SearchStrategy> strategy;
  TaskOutcome outcome;
  double lastGain = 1.0;  ///< relative improvement of the last batch (1 before any)
  bool exhausted = false;
  size_t attempts = 0;   ///< candidates proposed (measured, invalid or reused)
  bool started = false;  ///< its first round was proposed
  std::vector<MeasureResult> defaultResults;
  std::map<uint64_t, MeasureResult> byCode;  ///< code key -> its measurement in this run

  /// `results` as the loop compares them and the strategy learns them: one
  /// timed beside the default (interleaved, its anchorMs) as its time
  /// relative to that default's, times the default's first time
  /// (outcome.defaultMs, which only the confirmation after the search
  /// replaces), so the machine's drift between batches divides out; others
  /// as measured.
  std::vector<MeasureResult> comparable(std::vector<MeasureResult> results) const {
    for (MeasureResult& r : results)
      if (r.ok() && r.anchorMs > 0 && outcome.defaultMs > 0) r.ms = r.ms / r.anchorMs * outcome.defaultMs;
    return results;
  }

  /// Those of `configs` to measure: not those whose code (kernel IR) was
  /// measured already in this run or comes earlier in the batch.
  std::vector<Config> newCode(const std::vector<Config>& configs) {
    std::vector<Config> fresh;
    std::set<uint64_t> batch;
    for (const Config& c : configs) {
      std::optional<uint64_t> key = space->codeKey(space->indexOf(c));
      if (key && (byCode.count(*key) || !batch.insert(*key).second)) continue;
      fresh.push_back(c);
    }
    return fresh;
  }
  /// The results of `configs`: measured ones as measured, the others copied from their code's measurement.
  std::vector<MeasureResult> withReused(const std::vector<Config>& configs,
                                        const std::vector<MeasureResult>& measured) {
    std::map<std::string, const MeasureResult*> byConfig;
    for (const MeasureResult& r : measured) {
      byConfig[configToString(r.config)] = &r;
      if (std::optional<uint64_t> key = space->codeKey(space->indexOf(r.config))) byCode.emplace(*key, r);
    }
    std::vector<MeasureResult> out;
    for (const Config& c : configs) {
      auto it = byConfig.find(configToString(c));
      if (it != byConfig.end()) {
        out.push_back(*it->second);
        continue;
      }
      MeasureResult r = byCode.at(*space->codeKey(space->indexOf(c)));
      r.config = c;
      out.push_back(std::move(r));
      ++outcome.reused;
    }
    return out;
  }
};

class TuningRun {
 public:
  TuningRun(Measurer& measurer, const TuneOptions& options, TuningDatabase* db)
      : measurer_(measurer), options_(options), db_(db) {}

  /// Appends a record; `how` overrides its strategy field ("confirm", "same-code", "library").
  Status record(const TuningTask& task, TaskSpace* space, const MeasureResult& r, bool isDefault,
                const char* how = nullptr) {
    if (!db_) return Status::ok();
    TuningRecord rec;
    rec.target = measurer_.target();
    rec.device = measurer_.device();
    rec.toolkit = measurer_.toolkit();
    rec.signature = task.signature;
    rec.spaceVersion = task.spaceVersion;
    rec.templateName = task.templateName;
    rec.description = task.description;
    rec.config = r.config;
    rec.status = r.status;
    rec.ms = r.ms;
    rec.anchorMs = r.anchorMs;
    rec.flops = task.flops;
    rec.isDefault = isDefault;
    rec.strategy = how ? how : isDefault ? "default" : options_.strategy;
    rec.seed = options_.search.seed;
    rec.time = utcTimestamp();
    rec.library = r.library;
    rec.libraryVersion = r.libraryVersion;
    if (space && r.library.empty() && task.space.check(r.config).isOk())
      if (const std::vector<float>* f = space->features(space->indexOf(r.config))) rec.features = *f;
    return db_->append(std::move(rec));
  }

  Measurer& measurer_;
  const TuneOptions& options_;
  TuningDatabase* db_;
};

/// Measures the task's library call (where the target has one) and records
/// it; the task's libraryMs is the latest valid time (0 when it failed).
Status measureLibrary(TaskState& s, Measurer& measurer, TuningRun& run, const char* how) {
  KILN_ASSIGN(std::optional<MeasureResult> r, measurer.measureLibrary(*s.task));
  if (!r) return Status::ok();
  KILN_TRY(run.record(*s.task, nullptr, *r, false, how));
  TaskOutcome& o = s.outcome;
  o.library = r->library;
  o.libraryMs = r->ok() ? r->ms : 0;
  o.libraryError = r->ok() ? std::string() : std::string(measureStatusName(r->status)) + ": " + r->error;
  return Status::ok();
}

/// A task's strategy, trained on the database's records of other kernels of its template (transfer).
Status makeTaskStrategy(TaskState& s, Measurer& measurer, const TuneOptions& options, const TuningDatabase* database) {
  StrategyOptions so = options.search;
  so.seed = hashCombine(options.search.seed, hashString(s.task->signature));
  if (options.transfer && database)
    so.transfer = transferDataFor(*s.task, *database, measurer.target(), measurer.device(), measurer.toolkit(),
                                  s.task->space.knobs.size() + kernelFeatureCount());
  s.outcome.transferRows = so.transfer.x.size();
  KILN_ASSIGN(s.strategy, makeStrategy(options.strategy, s.space, so));
  return Status::ok();
}

/// Measures the task's default schedule, the baseline of its candidates (and its library call).
Status measureBaseline(TaskState& s, Measurer& measurer, TuningRun& run, const TuneOptions& options) {
  KILN_ASSIGN(std::vector<MeasureResult> r, measurer.measure(*s.task, {s.task->space.defaultConfig()}));
  KILN_TRY(run.record(*s.task, s.space.get(), r.front(), true));
  if (!r.front().ok()) {  // nothing to compare candidates with: not tuned, and said so
    s.exhausted = true;
    s.outcome.skipped = std::string("default schedule ") + measureStatusName(r.front().status) + ": " + r.front().error;
    return Status::ok();
  }
  s.outcome.defaultMs = s.outcome.bestMs = r.front().ms;
  s.defaultResults = s.comparable(s.withReused({r.front().config}, r));
  KILN_TRY(s.strategy->update(s.defaultResults));
  s.outcome.bestConfig = r.front().config;
  s.outcome.curve.push_back(r.front().ms);
  if (options.libraries) KILN_TRY(measureLibrary(s, measurer, run, "library"));
  return Status::ok();
}

/// The tasks to tune, heaviest first (only the maxTasks heaviest when nonzero; the rest marked exhausted).
std::vector<TaskState*> activeTasks(std::vector<TaskState>& states, size_t maxTasks) {
  std::vector<TaskState*> active;
  for (TaskState& s : states)
    if (!s.exhausted) active.push_back(&s);
  std::stable_sort(active.begin(), active.end(), [](TaskState* a, TaskState* b) {
    return double(a->outcome.groups) * a->outcome.defaultMs > double(b->outcome.groups) * b->outcome.defaultMs;
  });
  if (maxTasks && active.size() > maxTasks) {
    for (size_t i = maxTasks; i < active.size(); ++i) active[i]->exhausted = true;
    active.resize(maxTasks);
  }
  return active;
}

/// The task the next round goes to: the largest uses x best time x (last round's gain + 0.05); null when all are done.
TaskState* nextTask(const std::vector<TaskState*>& active) {
  TaskState* pick = nullptr;
  double priority = -1;
  for (TaskState* s : active) {
    if (s->exhausted) continue;
    // A library call faster than the kernel bounds what tuning it can gain end to end.
    const double now = s->outcome.libraryMs > 0 ? std::min(s->outcome.bestMs, s->outcome.libraryMs) : s->outcome.bestMs;
    double p = double(s->outcome.groups) * now * (s->lastGain + 0.05);
    if (p > priority) priority = p, pick = s;
  }
  return pick;
}

/// Measures `configs` of the task (those with new code; the rest reuse what measured their code), updates its
/// strategy, outcome and the report, and records everything.
Status measureRound(TaskState& t, const std::vector<Config>& configs, Measurer& measurer, TuningRun& run,
                    TuneReport& report) {
  Stopwatch taskClock;
  // Configurations that compile to code measured before (a knob another makes irrelevant) are not measured again.
  std::vector<Config> fresh = t.newCode(configs);
  std::vector<MeasureResult> results;
  if (!fresh.empty()) {
    KILN_ASSIGN(results, measurer.measure(*t.task, fresh));
  }
  std::vector<MeasureResult> all = t.withReused(configs, results);
  KILN_TRY(t.strategy->update(t.comparable(all)));
  t.attempts += configs.size() - fresh.size();
  report.reused += configs.size() - fresh.size();
  const double before = t.outcome.bestMs;
  TaskOutcome& o = t.outcome;
  const std::vector<MeasureResult> scored = t.comparable(results);
  for (size_t i = 0; i < results.size(); ++i) {
    ++t.attempts;
    KILN_TRY(run.record(*t.task, t.space.get(), results[i], false));  // as measured, with its anchor
    if (!results[i].ok()) {
      ++o.invalid, ++report.invalid;
      continue;
    }
    ++o.trials, ++report.trials;
    if (scored[i].ms < o.bestMs) {
      o.bestMs = scored[i].ms;
      o.bestConfig = scored[i].config;
      o.keptDefault = false;
    }
    o.curve.push_back(o.bestMs);
  }
  for (const MeasureResult& r : all)  // the copies are recorded too, marked, after what they copy
    if (std::none_of(fresh.begin(), fresh.end(), [&](const Config& c) { return c == r.config; }))
      KILN_TRY(run.record(*t.task, t.space.get(), r, false, "same-code"));
  o.seconds += taskClock.elapsedMs() / 1000.0;
  t.lastGain = (before - o.bestMs) / before;
  return Status::ok();
}

void reportProgress(const TuneOptions& options, const std::vector<TaskState>& states, const TaskState& t,
                    const TuneReport& report, const Stopwatch& clock) {
  const TaskOutcome& o = t.outcome;
  TuneProgress p;
  p.task =
      size_t(std::find_if(states.begin(), states.end(), [&](const TaskState& s) { return &s == &t; }) - states.begin());
  p.tasks = states.size();
  p.description = t.task->description;
  p.trials = report.trials;
  p.budget = options.trials;
  p.taskTrials = o.trials;
  p.bestGflops = o.flops / (o.bestMs * 1e6);
  p.taskSpeedup = o.defaultMs / o.bestMs;
  p.elapsedS = clock.elapsedMs() / 1000.0;
  p.etaS = report.trials ? p.elapsedS / double(report.trials) * double(options.trials - report.trials) : 0;
  options.progress(p);
}

/// Confirmation: the winner and the default measured again side by side;
/// the winner stays only if it is faster in this round too (noise and the
/// winner's curse otherwise make "tuned" kernels that are not faster).
Status confirmWinner(TaskState& s, Measurer& measurer, TuningRun& run) {
  TaskOutcome& o = s.outcome;
  if (o.skipped.empty() && o.libraryMs > 0) KILN_TRY(measureLibrary(s, measurer, run, "confirm"));
  if (!o.skipped.empty() || o.keptDefault) return Status::ok();
  KILN_ASSIGN(std::vector<MeasureResult> again,
              measurer.measure(*s.task, {s.task->space.defaultConfig(), o.bestConfig}));
  KILN_TRY(run.record(*s.task, s.space.get(), again[0], true, "confirm"));
  KILN_TRY(run.record(*s.task, s.space.get(), again[1], false, "confirm"));
  if (!again[0].ok() || !again[1].ok() || !(again[1].ms < again[0].ms)) {
    o.keptDefault = true;
    o.bestMs = o.defaultMs;
    o.bestConfig = s.task->space.defaultConfig();
    return Status::ok();
  }
  o.defaultMs = again[0].ms;  // the pair measured together is the fairest comparison
  o.bestMs = again[1].ms;
  return Status::ok();
}

/// The outcomes into the report, with the model-level sums of kernel time.
void summarize(std::vector<TaskState>& states, TuneReport& report) {
  for (TaskState& s : states) {
    if (!s.outcome.skipped.empty()) {
      report.tasks.push_back(std::move(s.outcome));
      continue;
    }
    TaskOutcome& o = s.outcome;
    report.libraryTasks += o.libraryFaster();
    report.defaultKernelMs += double(o.groups) * o.defaultMs;
    report.tunedKernelMs += double(o.groups) * (o.libraryFaster() ? o.libraryMs : o.bestMs);
    report.tasks.push_back(std::move(s.outcome));
  }
}

}  // namespace

Expected<TuneReport> tuneTasks(const TaskSet& tasks, Measurer& measurer, const TuneOptions& options,
                               TuningDatabase* database) {
  Stopwatch clock;
  TuningRun run(measurer, options, database);
  TuneReport report;
  report.strategy = options.strategy;
  report.target = measurer.target();
  report.device = measurer.device();
  std::vector<TaskState> states;
  for (const TuningTask& task : tasks.tasks) {
    TaskState s;
    s.task = &task;
    s.space = std::make_shared<TaskSpace>(task);
    KILN_TRY(makeTaskStrategy(s, measurer, options, database));
    s.outcome.signature = task.signature;
    s.outcome.description = task.description;
    s.outcome.templateName = task.templateName;
    s.outcome.groups = task.groups.size();
    s.outcome.flops = task.flops;
    states.push_back(std::move(s));
  }
  for (TaskState& s : states) KILN_TRY(measureBaseline(s, measurer, run, options));
  std::vector<TaskState*> active = activeTasks(states, options.maxTasks);
  const size_t batch = std::max<size_t>(options.batch, 1);
  while (report.trials < options.trials) {
    TaskState* pick = nextTask(active);
    if (!pick) break;      // every space exhausted
    if (!pick->started) {  // made again, so that kernels of its template tuned earlier in this run count too
      pick->started = true;
      if (options.transfer && database) {
        KILN_TRY(makeTaskStrategy(*pick, measurer, options, database));
        KILN_TRY(pick->strategy->update(pick->defaultResults));
      }
    }
    size_t want = std::min(batch, options.trials - report.trials);
    KILN_ASSIGN(std::vector<Config> configs, pick->strategy->next(want));
    if (configs.empty() || pick->attempts > 4 * options.trials + 64) {
      pick->exhausted = true;
      continue;
    }
    KILN_TRY(measureRound(*pick, configs, measurer, run, report));
    if (options.progress) reportProgress(options, states, *pick, report, clock);
  }
  for (TaskState& s : states) KILN_TRY(confirmWinner(s, measurer, run));
  summarize(states, report);
  report.seconds = clock.elapsedMs() / 1000.0;
  return report;
}

}  // namespace kiln::tune
