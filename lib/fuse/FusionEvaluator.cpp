//===- lib/fuse/FusionEvaluator.cpp - Fusion configurations, measured -----===//
//
// See kiln/fuse/FusionEvaluator.h. A configuration's partition is hashed
// from its groups' node names; a new partition is lowered (lowerModel with
// the configuration's plan text) through the KernelCache, run
// once against the interpreter's outputs and timed with tune::timeKernel, or
// anchored: with tune::timeInterleaved beside the default partition (a slow
// model in single runs alternating with the default's).
//
//===----------------------------------------------------------------------===//
#include "kiln/fuse/FusionEvaluator.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <optional>

#include "kiln/codegen/Compiler.h"
#include "kiln/fuse/FusionDatabase.h"
#include "kiln/fuse/KernelCache.h"
#include "kiln/runtime/Interpreter.h"
#include "kiln/support/Hash.h"
#include "kiln/support/Statistics.h"
#include "kiln/support/Stopwatch.h"
#include "kiln/tune/KernelTiming.h"

namespace kiln::fuse {

const char* evaluationStatusName(EvaluationStatus s) {
  switch (s) {
    case EvaluationStatus::Ok: return "ok";
    case EvaluationStatus::Invalid: return "invalid";
    case EvaluationStatus::WrongOutput: return "wrong-output";
  }
  return "?";
}

std::string decisionString(const Decisions& d) {
  std::string s;
  for (bool b : d) s += b ? '1' : '0';
  return s;
}

namespace {

/// The partition the plan's groups form, as one number: each group's node names in order.
uint64_t partitionHash(const codegen::FusionPlan& plan) {
  uint64_t h = 0;
  for (const codegen::KernelGroup& g : plan.groups()) {
    uint64_t gh = hashString("group");
    for (const ir::Node* n : g.nodes) gh = hashString(n->name(), gh);
    h = hashCombine(h, gh);
  }
  return h;
}

/// The graph as the database knows it: its fusion edges and its input types.
uint64_t graphFingerprint(const codegen::FusionPlan& plan) {
  uint64_t h = hashString("kiln-fuse-graph");
  for (const codegen::FusionEdge& e : plan.edges()) h = hashString(e.key() + codegen::edgeKindName(e.kind), h);
  for (const ir::Value* in : plan.graph().inputs()) h = hashString(in->name() + in->type().str(), h);
  return h;
}

/// A run longer than this is timed in single runs beside the anchor's, kSlowRunPairs pairs of them,
/// with no warm-up runs of its own: these runs are most of a trial's cost (docs/fusion-search.md).
constexpr double kSlowRunMs = 20;
constexpr int kSlowRunPairs = 3;
/// A paired run of a faster model repeats it for about this long.
constexpr double kPairSampleMs = 10;
/// pairedRatio lowers both partitions afresh for every this many pairs, so that no one placement
/// of their buffers decides the median (docs/fusion-search.md).
constexpr int kConfirmBlockPairs = 5;

/// Runs `run` for a while: the first partition measured would otherwise pay for a cold process
/// (page faults on the weights, the thread pool's first wake-ups) and look slower than it is.
void warmUp(const std::function<void()>& run) {
  Stopwatch clock;
  for (int i = 0; i < 3 || clock.elapsedMs() < 200; ++i) run();
}

}  // namespace

struct FusionEvaluator::Impl {
  ir::Graph* graph = nullptr;
  std::vector<Tensor> inputs;
  EvaluatorOptions options;
  std::unique_ptr<codegen::FusionPlan> plan;
  Decisions defaults;
  std::vector<RuntimeValue> reference;
  KernelCache cache;                                     ///< every partition's kernels
  std::map<uint64_t, Evaluation> measured;               ///< by partitionHash
  std::unique_ptr<FusionDatabase> database;              ///< useDatabase's
  uint64_t fingerprint = 0;                              ///< the graph's, for the database
  bool warm = false;                                     ///< a partition was timed in this process
  std::unique_ptr<CachedModel> anchor;                   ///< the default partition, when timing is anchored
  std::optional<double> anchorMs;                        ///< the default's time, measured alone

  /// Sets the plan's decisions and partitions it.
  void apply(const Decisions& d) {
    for (size_t i = 0; i < d.size() && i < plan->edges().size(); ++i) plan->edges()[i].fuse = d[i];
    plan->partition();
  }

  /// The partition of `d` lowered, its kernels from the cache or compiled now (counted in `compiled`).
  Expected<CachedModel> lower(const Decisions& d, size_t& compiled) {
    apply(d);
    codegen::CompileOptions co;
    co.fusionPlanText = plan->print();
    return cache.lower(*graph, co, &compiled);
  }

  /// Whether one run is long enough that its timing needs no warm-up of its own.
  bool slow() const { return anchorMs && *anchorMs > kSlowRunMs; }

  tune::MeasureOptions timing() const {
    tune::MeasureOptions t;
    t.warmup = options.warmup, t.repeats = options.repeats, t.minSampleMs = options.minSampleMs;
    t.pinThreads = false;
    return t;
  }

  /// Milliseconds of one run of `r`. Anchored, a partition other than the
  /// default's is timed in interleaved rounds beside the default's (the
  /// anchor, lowered once and timed alone first), and its time is its ratio
  /// to the anchor in those rounds times the anchor's first time: the
  /// machine's drift between evaluations divides out.
  Expected<double> time(const CachedModel& r, bool isDefault) {
    auto run = [this](const CachedModel& x) { return [this, &x] { (void)x.executor->run(inputs); }; };
    if (!warm) warmUp(run(r)), warm = true;
    if (!options.anchored || isDefault) {
      const double ms = tune::timeKernel(run(r), timing());
      if (isDefault && !anchorMs) anchorMs = ms;
      return ms;
    }
    if (!anchor) {
      size_t compiled = 0;
      KILN_ASSIGN(CachedModel a, lower(defaults, compiled));
      anchor = std::make_unique<CachedModel>(std::move(a));
      if (!anchorMs) anchorMs = tune::timeKernel(run(*anchor), timing());
    }
    if (slow()) {  // pairs of warm single runs in alternation
      KILN_ASSIGN(std::vector<double> ratios, alternate(r, *anchor, kSlowRunPairs, -1, 1));
      return upperMedian(std::move(ratios)) * *anchorMs;
    }
    // Rounds are fewer for slower models (about 0.6 s of rounds, at least 3): see docs/fusion-search.md.
    tune::MeasureOptions t = timing();
    t.repeats = std::min(t.repeats, std::max(3, int(600 / (2 * *anchorMs))));
    const std::vector<double> ms = tune::timeInterleaved({run(r), run(*anchor)}, t);
    return ms[0] / ms[1] * *anchorMs;
  }

  /// How many back-to-back runs one paired sample takes for a model whose run lasts `runMs`: about
  /// kPairSampleMs of them, so that a fast model's pairs are not single noisy runs.
  static int sampleRuns(double runMs) {
    return int(std::clamp(std::ceil(kPairSampleMs / std::max(runMs, 1e-3)), 1.0, 1e5));
  }

  /// Milliseconds of one run of `r`: the mean of `runs` back-to-back runs after an untimed one, so
  /// that the partition runs warm, as it does in service, not in the caches the other one left.
  Expected<double> once(const CachedModel& r, int runs) const {
    KILN_TRY(r.executor->run(inputs).status());
    Stopwatch clock;
    for (int i = 0; i < runs; ++i) KILN_TRY(r.executor->run(inputs).status());
    return clock.elapsedMs() / runs;
  }

  /// `pairs` pairs of samples of `runs` runs of `c` and `b`, `b` first in even pairs: each pair's
  /// c / b. With `maxSlower` >= 0 it stops once more pairs than that find `c` slower.
  Expected<std::vector<double>> alternate(const CachedModel& c, const CachedModel& b, int pairs, int maxSlower,
                                          int runs) const {
    std::vector<double> ratios;
    int slower = 0;
    for (int p = 0; p < pairs && (maxSlower < 0 || slower <= maxSlower); ++p) {
      const bool baselineFirst = p % 2 == 0;
      KILN_ASSIGN(double x, once(baselineFirst ? b : c, runs));
      KILN_ASSIGN(double y, once(baselineFirst ? c : b, runs));
      ratios.push_back(baselineFirst ? y / x : x / y);
      slower += ratios.back() >= 1;
    }
    return ratios;
  }

  /// The largest error of `got` against the interpreter's outputs; a description of the worst output in `where`.
  double outputError(const std::vector<Tensor>& got, std::string& where) const {
    double worst = 0;
    for (size_t i = 0; i < got.size() && i < reference.size(); ++i) {
      if (!reference[i].isTensor()) continue;
      const double e = tune::maxRelativeError(got[i], reference[i].tensor());
      if (e > worst) worst = e, where = "output " + std::to_string(i);
    }
    return worst;
  }
};

FusionEvaluator::FusionEvaluator() : impl_(std::make_unique<Impl>()) {}
FusionEvaluator::~FusionEvaluator() = default;

Expected<std::unique_ptr<FusionEvaluator>> FusionEvaluator::create(ir::Graph& graph, std::vector<Tensor> inputs,
                                                                   EvaluatorOptions options) {
  for (const ir::Value* in : graph.inputs())
    if (!in->type().isTensor() || !in->tensorType().isStatic())
      return makeError(ErrorCode::InvalidArgument, "fusion search needs static input shapes: input '", in->name(), "' is ",
                       in->type().str(), " (bind it with --shape)");
  std::unique_ptr<FusionEvaluator> e(new FusionEvaluator);
  Impl& m = *e->impl_;
  m.graph = &graph;
  m.inputs = std::move(inputs);
  m.options = options;
  KILN_ASSIGN(codegen::FusionPlan plan, codegen::FusionPlan::build(graph));
  m.plan = std::make_unique<codegen::FusionPlan>(std::move(plan));
  for (const codegen::FusionEdge& edge : m.plan->edges()) m.defaults.push_back(edge.fuse);
  m.fingerprint = graphFingerprint(*m.plan);
  runtime::Interpreter interpreter(graph);
  KILN_ASSIGN(m.reference, interpreter.run(std::vector<RuntimeValue>(m.inputs.begin(), m.inputs.end())));
  return e;
}

const codegen::FusionPlan& FusionEvaluator::plan() const { return *impl_->plan; }
size_t FusionEvaluator::edgeCount() const { return impl_->defaults.size(); }
const Decisions& FusionEvaluator::defaultDecisions() const { return impl_->defaults; }
size_t FusionEvaluator::kernelsCompiled() const { return impl_->cache.compiledCount(); }
size_t FusionEvaluator::partitionsMeasured() const { return impl_->measured.size(); }

std::string FusionEvaluator::planText(const Decisions& decisions) {
  impl_->apply(decisions);
  return impl_->plan->print();
}

bool FusionEvaluator::evaluated(const Decisions& decisions) {
  impl_->apply(decisions);
  return impl_->measured.count(partitionHash(*impl_->plan)) > 0;
}

const codegen::FusionPlan& FusionEvaluator::planUnder(const Decisions& decisions) {
  impl_->apply(decisions);
  return *impl_->plan;
}

Expected<Decisions> FusionEvaluator::decisionsOf(const std::string& planText) {
  impl_->apply(impl_->defaults);
  KILN_TRY(impl_->plan->applyDecisions(planText));
  Decisions d;
  for (const codegen::FusionEdge& edge : impl_->plan->edges()) d.push_back(edge.fuse);
  return d;
}

Expected<Evaluation> FusionEvaluator::evaluate(const Decisions& decisions) {
  Impl& m = *impl_;
  if (decisions.size() != m.defaults.size())
    return makeError(ErrorCode::InvalidArgument, "a fusion configuration of ", decisions.size(), " decisions for a plan of ",
                     m.defaults.size(), " edges");
  Stopwatch timer;
  m.apply(decisions);
  const uint64_t partition = partitionHash(*m.plan);
  if (auto it = m.measured.find(partition); it != m.measured.end()) {
    Evaluation e = it->second;
    e.cached = true, e.kernelsCompiled = 0, e.seconds = timer.elapsedMs() / 1000;
    return e;
  }
  if (m.database)
    if (auto it = m.database->records().find(partition); it != m.database->records().end()) {
      Evaluation e = it->second;
      e.replayed = true, e.seconds = timer.elapsedMs() / 1000;
      if (decisions == m.defaults && e.ok() && !m.anchorMs) m.anchorMs = e.ms;  // the runs' shared scale
      return m.measured[partition] = e;
    }
  Evaluation e;
  Expected<CachedModel> runnable = m.lower(decisions, e.kernelsCompiled);
  if (!runnable) {  // a group no template lowers: rejected without a measurement
    e.status = EvaluationStatus::Invalid;
    e.error = runnable.error().str();
  } else {
    auto first = runnable->executor->run(m.inputs);
    if (!first) return std::move(first).error();
    std::string where;
    const double error = m.outputError(*first, where);
    if (!(error <= m.options.tolerance)) {
      e.status = EvaluationStatus::WrongOutput;
      e.error = where + " differs from the interpreter's by " + std::to_string(error);
    } else {
      KILN_ASSIGN(e.ms, m.time(*runnable, decisions == m.defaults));
    }
  }
  e.seconds = timer.elapsedMs() / 1000;
  m.measured[partition] = e;
  if (m.database) KILN_TRY(m.database->append(partition, e));
  return e;
}

Status FusionEvaluator::useDatabase(const std::string& path) {
  KILN_ASSIGN(impl_->database, FusionDatabase::open(path, impl_->fingerprint));
  return Status::ok();
}

Expected<std::vector<double>> FusionEvaluator::pairedRatios(const Decisions& candidate, const Decisions& baseline,
                                                            int pairs, int maxSlower) {
  // Both sides are lowered afresh, the default too (not the anchor): where a process's buffers land
  // moves a partition's time by a few percent, and fresh lowerings draw that anew.
  Impl& m = *impl_;
  size_t compiled = 0;
  KILN_ASSIGN(CachedModel c, m.lower(candidate, compiled));
  KILN_ASSIGN(CachedModel b, m.lower(baseline, compiled));
  // Samples last about kPairSampleMs; where nothing was timed in this process (every partition
  // replayed from --db), a run of the baseline sizes them.
  double runMs = m.anchorMs.value_or(0);
  if (!m.anchorMs) {
    KILN_ASSIGN(runMs, m.once(b, 1));
  }
  return m.alternate(c, b, pairs, maxSlower, Impl::sampleRuns(runMs));
}

Expected<double> FusionEvaluator::pairedRatio(const Decisions& candidate, const Decisions& baseline, int pairs) {
  std::vector<double> ratios;
  for (int done = 0; done < pairs; done += kConfirmBlockPairs) {
    KILN_ASSIGN(std::vector<double> block, pairedRatios(candidate, baseline, std::min(kConfirmBlockPairs, pairs - done)));
    ratios.insert(ratios.end(), block.begin(), block.end());
  }
  return ratios.empty() ? 1.0 : upperMedian(std::move(ratios));
}

Expected<Configured> startConfiguration(FusionEvaluator& evaluator, bool fromRandom, std::mt19937_64& rng,
                                        const Decisions& given) {
  KILN_ASSIGN(Evaluation byDefault, evaluator.evaluate(evaluator.defaultDecisions()));
  if (!byDefault.ok()) return makeError(ErrorCode::Internal, "the default fusion plan fails: ", byDefault.error);
  if (!given.empty()) {
    KILN_ASSIGN(Evaluation e, evaluator.evaluate(given));
    if (!e.ok())
      return makeError(ErrorCode::InvalidArgument, "the starting fusion plan is ", evaluationStatusName(e.status), ": ",
                       e.error);
    return Configured{given, e.ms};
  }
  for (int attempt = 0; fromRandom && attempt < 100; ++attempt) {
    Decisions d(evaluator.edgeCount());
    for (size_t i = 0; i < d.size(); ++i) d[i] = rng() & 1;
    KILN_ASSIGN(Evaluation e, evaluator.evaluate(d));
    if (e.ok()) return Configured{d, e.ms};
  }
  return Configured{evaluator.defaultDecisions(), byDefault.ms};
}

}  // namespace kiln::fuse
