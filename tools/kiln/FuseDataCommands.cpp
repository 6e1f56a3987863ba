//===- tools/kiln/FuseDataCommands.cpp - `kiln fuse --collect` and `--train` ===//
//
// The offline half of fusion search (FuseOptions.h): --collect runs Gibbs
// sampling over a model's fusion decisions and writes its dataset, with a
// progress line per edge; --train fits the advantage model on datasets of
// several models and writes it, reporting how well it ranks each dataset's
// significant edges (the rank correlation of predicted and measured
// |advantage|, on the training data: a check that it learned something,
// not of how it generalizes).
//
//===----------------------------------------------------------------------===//
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>

#include "FuseOptions.h"
#include "kiln/fuse/AdvantageModel.h"

namespace kiln::cli {

namespace {

/// Spearman's rank correlation of `a` and `b` (ties ranked in order).
double rankCorrelation(const std::vector<float>& a, const std::vector<float>& b) {
  auto ranks = [](const std::vector<float>& v) {
    std::vector<size_t> order(v.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) { return v[x] < v[y]; });
    std::vector<double> r(v.size());
    for (size_t k = 0; k < order.size(); ++k) r[order[k]] = double(k);
    return r;
  };
  const std::vector<double> ra = ranks(a), rb = ranks(b);
  const double n = double(a.size());
  if (n < 2) return 0;
  double d2 = 0;
  for (size_t i = 0; i < ra.size(); ++i) d2 += (ra[i] - rb[i]) * (ra[i] - rb[i]);
  return 1 - 6 * d2 / (n * (n * n - 1));
}

}  // namespace

int collectMode(const FuseOptions& o) {
  std::unique_ptr<ir::Module> module;
  auto evaluator = makeFuseEvaluator(o, module);
  if (!evaluator) return reportError(evaluator.error());
  auto start = startDecisions(o, **evaluator);
  if (!start) return reportError(start.error());
  std::ofstream out(o.collect);
  if (!out) return reportError(Error(ErrorCode::IoError, "cannot write " + o.collect));
  fuse::GibbsOptions g = o.gibbs;
  g.seed = o.search.seed, g.fromRandom = o.from == "random", g.radius = o.search.radius, g.start = std::move(*start);
  g.maxSeconds = o.search.maxSeconds, g.target = o.target;
  g.model = std::filesystem::path(o.model.path).filename().string();  // no machine's paths in a shipped model
  const bool terminal = isatty(STDERR_FILENO);
  if (!o.quiet)
    std::cerr << "kiln fuse: Gibbs sampling " << (*evaluator)->edgeCount() << " fusion edges, " << g.sweeps
              << " sweep(s) at temperature " << g.temperature << " from the " << o.from << " configuration\n";
  auto samples = fuse::gibbsSample(**evaluator, g, out, [&](const fuse::GibbsProgress& p) {
    if (o.quiet || (!terminal && p.edge != p.edges)) return;
    std::cerr << (terminal ? "\r" : "") << std::fixed << std::setprecision(3) << "kiln fuse: sweep " << p.sweep
              << " edge " << p.edge << "/" << p.edges << "  " << p.samples << " samples  now " << p.currentMs
              << " ms  " << std::setprecision(0) << p.elapsedSeconds << " s" << (terminal ? "\033[K" : "\n") << std::flush;
  });
  if (terminal && !o.quiet) std::cerr << "\n";
  if (!samples) return reportError(samples.error());
  out.close();
  if (!out) return reportError(Error(ErrorCode::IoError, "cannot write " + o.collect));
  std::cout << "collected " << *samples << " samples of " << o.model.path << " into " << o.collect << " ("
            << (*evaluator)->partitionsMeasured() << " partitions measured, " << (*evaluator)->kernelsCompiled()
            << " kernels compiled)\n";
  return 0;
}

int trainMode(const FuseOptions& o) {
  if (o.output.empty()) return reportError(Error(ErrorCode::InvalidArgument, "--train needs -o MODEL.json"));
  std::vector<fuse::AdvantageDataset> data;
  for (const std::string& path : o.train) {
    auto d = fuse::AdvantageDataset::read(path);
    if (!d) return reportError(d.error());
    data.push_back(std::move(*d));
  }
  fuse::AdvantageTrainOptions t;
  t.seed = o.search.seed;
  auto model = fuse::AdvantageModel::train(data, t);
  if (!model) return reportError(model.error());
  if (Status s = (*model)->save(o.output); !s.isOk()) return reportError(s.error());
  std::cout << "trained the advantage model on " << data.size() << " dataset(s) into " << o.output << "\n";
  for (const fuse::AdvantageDataset& d : data) {
    std::vector<std::vector<float>> x;
    for (const fuse::AdvantageSample& s : d.samples) x.push_back(s.features);
    auto predicted = (*model)->predict(x);
    if (!predicted) return reportError(predicted.error());
    std::cout << "  " << d.model << ": " << d.samples.size() << " samples, rank correlation " << std::fixed
              << std::setprecision(2) << rankCorrelation(*predicted, fuse::AdvantageModel::labels(d)) << "\n";
  }
  return 0;
}

}  // namespace kiln::cli
