//===- lib/evolve/VariantEvaluator.cpp - A patch's latency and error -------===//
//
// See kiln/evolve/VariantEvaluator.h.
//
//===----------------------------------------------------------------------===//
#include "kiln/evolve/VariantEvaluator.h"

#include <algorithm>

#include "kiln/fuse/KernelCache.h"
#include "kiln/ir/Verifier.h"
#include "kiln/passes/PassManager.h"
#include "kiln/support/Statistics.h"
#include "kiln/support/Stopwatch.h"
#include "kiln/tune/KernelTiming.h"

namespace kiln::evolve {

namespace {

/// A variant compiled: its module must live as long as its executor.
struct Compiled {
  std::unique_ptr<ir::Module> module;
  fuse::CachedModel model;
};

/// A paired sample repeats runs for about this long, so that a fast model's
/// sample is not one noisy sub-millisecond run.
constexpr double kPairSampleMs = 10;

}  // namespace

struct VariantEvaluator::Impl {
  const ir::Module* original = nullptr;
  DataSplit data;
  Metric metric = Metric::Top1;
  std::vector<passes::PipelineEntry> pipeline;
  fuse::KernelCache cache;
  std::unique_ptr<Compiled> baseline;  ///< the original, compiled
  std::vector<Tensor> trainReference, testReference;
  VariantScore originalScore;

  Expected<std::unique_ptr<Compiled>> compile(const Patch& patch, size_t* compiled, int* repairs = nullptr) {
    auto c = std::make_unique<Compiled>();
    PatchReport report;
    KILN_ASSIGN(c->module, patchedModule(*original, patch, &report));
    if (repairs) *repairs = report.repairNodes;
    passes::RunOptions run;
    run.hashes = false;
    KILN_TRY(passes::runPipeline(c->module->graph(), pipeline, run).status());
    KILN_TRY(ir::verify(c->module->graph()));
    KILN_ASSIGN(c->model, cache.lower(c->module->graph(), {}, compiled));
    return c;
  }

  /// Each sample's first output.
  static Expected<std::vector<Tensor>> outputsOn(const Compiled& c, const Dataset& data) {
    std::vector<Tensor> out;
    for (int64_t i = 0; i < data.size(); ++i) {
      KILN_ASSIGN(std::vector<Tensor> result, c.model.executor->run(data.sample(i)));
      out.push_back(std::move(result.at(0)));
    }
    return out;
  }

  Status score(const Compiled& c, VariantScore& s) const {
    KILN_ASSIGN(std::vector<Tensor> train, outputsOn(c, data.train));
    KILN_ASSIGN(std::vector<Tensor> test, outputsOn(c, data.test));
    KILN_ASSIGN(s.trainError, datasetError(metric, train, data.train, trainReference));
    KILN_ASSIGN(s.testError, datasetError(metric, test, data.test, testReference));
    return Status::ok();
  }

  std::function<void()> runner(const Compiled& c) const {
    return [&c, inputs = data.train.sample(0)] { (void)c.model.executor->run(inputs); };
  }

  static tune::MeasureOptions timing() {
    tune::MeasureOptions t;
    t.pinThreads = false;
    return t;
  }
};

VariantEvaluator::VariantEvaluator() : impl_(std::make_unique<Impl>()) {}
VariantEvaluator::~VariantEvaluator() = default;

Expected<std::unique_ptr<VariantEvaluator>> VariantEvaluator::create(const ir::Module& original, DataSplit data,
                                                                     Metric metric,
                                                                     std::vector<passes::PipelineEntry> pipeline) {
  std::unique_ptr<VariantEvaluator> e(new VariantEvaluator);
  Impl& m = *e->impl_;
  m.original = &original, m.data = std::move(data), m.metric = metric, m.pipeline = std::move(pipeline);
  Stopwatch clock;
  auto baseline = m.compile({}, &m.originalScore.kernelsCompiled);
  if (!baseline) return Error(baseline.error()).withContext("the original model");
  m.baseline = std::move(*baseline);
  KILN_ASSIGN(m.trainReference, Impl::outputsOn(*m.baseline, m.data.train));
  KILN_ASSIGN(m.testReference, Impl::outputsOn(*m.baseline, m.data.test));
  KILN_TRY(m.score(*m.baseline, m.originalScore));
  m.originalScore.ms = tune::timeKernel(m.runner(*m.baseline), Impl::timing());
  m.originalScore.valid = true;
  m.originalScore.seconds = clock.elapsedMs() / 1000;
  return e;
}

const VariantScore& VariantEvaluator::original() const { return impl_->originalScore; }
size_t VariantEvaluator::kernelsCompiled() const { return impl_->cache.compiledCount(); }

VariantScore VariantEvaluator::evaluate(const Patch& patch) {
  Impl& m = *impl_;
  Stopwatch clock;
  VariantScore s;
  auto c = m.compile(patch, &s.kernelsCompiled, &s.repairNodes);
  Status scored = c ? m.score(**c, s) : Status(c.error());
  if (!scored.isOk()) {
    s.error = scored.error().str();
  } else {
    const std::vector<double> ms = tune::timeInterleaved({m.runner(**c), m.runner(*m.baseline)}, Impl::timing());
    s.ms = ms[0] / ms[1] * m.originalScore.ms;
    s.valid = true;
  }
  s.seconds = clock.elapsedMs() / 1000;
  return s;
}

Expected<double> VariantEvaluator::pairedRatio(const Patch& patch, int pairs) {
  Impl& m = *impl_;
  KILN_ASSIGN(std::unique_ptr<Compiled> c, m.compile(patch, nullptr));
  const std::function<void()> runs[2] = {m.runner(*c), m.runner(*m.baseline)};
  const int repeat = int(std::clamp(kPairSampleMs / std::max(m.originalScore.ms, 1e-3), 1.0, 1e5));
  auto sample = [&](int which) {
    runs[which]();  // untimed: each sample starts warm
    Stopwatch clock;
    for (int i = 0; i < repeat; ++i) runs[which]();
    return clock.elapsedMs();
  };
  std::vector<double> ratios;
  for (int p = 0; p < pairs; ++p) {
    const bool baselineFirst = p % 2 == 0;
    const double first = sample(baselineFirst ? 1 : 0), second = sample(baselineFirst ? 0 : 1);
    ratios.push_back(baselineFirst ? second / first : first / second);
  }
  return ratios.empty() ? 1.0 : upperMedian(std::move(ratios));
}

}  // namespace kiln::evolve
