//===- tools/kiln/FuseDataCommands.cpp - `kiln fuse --collect, --train, --score` ===//
//
// The offline half of fusion search (FuseOptions.h): --collect runs Gibbs
// sampling over a model's fusion decisions and writes its dataset, with a
// progress line per edge; --train fits the advantage model on datasets of
// several models and writes it; --score reports how well a model ranks the
// edges of datasets it was not trained on (how it generalizes; --train
// prints the same on its training data, a check that it learned at all):
// the rank correlation of predicted and measured |advantage|, the share of
// the significant decisions (top 10% by |advantage|, the seed's) the model
// also ranks in its top 10%, and how often the signed regressor gets their
// direction right.
//
//===----------------------------------------------------------------------===//
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <set>

#include <nlohmann/json.hpp>

#include "FuseOptions.h"
#include "kiln/fuse/AdvantageModel.h"
#include "kiln/support/File.h"
#include "kiln/support/Strings.h"

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

namespace {

/// How well `model` ranks one dataset's edges (see scoreMode).
struct DatasetScore {
  size_t samples = 0;
  double rankCorrelation = 0;  ///< of predicted and measured |advantage|
  double topRecall = 0;        ///< of the measured top share, the part the model also puts in its top share
  double topSignAgreement = 0; ///< of the measured top share, the part whose sign the signed regressor predicts
};

constexpr double kTopShare = 0.1;  // the seed's "significant" decisions: the top 10% by |advantage|

/// The indices of the `share` largest of `v` (at least one).
std::vector<size_t> topIndices(const std::vector<float>& v, double share) {
  std::vector<size_t> order(v.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return v[a] > v[b]; });
  order.resize(std::min(order.size(), std::max<size_t>(1, size_t(std::ceil(double(v.size()) * share)))));
  return order;
}

Expected<DatasetScore> scoreDataset(const fuse::AdvantageModel& model, const fuse::AdvantageDataset& d) {
  std::vector<std::vector<float>> x;
  for (const fuse::AdvantageSample& s : d.samples) x.push_back(s.features);
  KILN_ASSIGN(std::vector<float> predicted, model.predict(x));
  KILN_ASSIGN(std::vector<float> predictedSign, model.predictSigned(x));
  const std::vector<float> measured = fuse::AdvantageModel::labels(d), measuredSign = fuse::AdvantageModel::signedLabels(d);
  DatasetScore score;
  score.samples = d.samples.size();
  if (d.samples.empty()) return score;
  score.rankCorrelation = rankCorrelation(predicted, measured);
  const std::vector<size_t> top = topIndices(measured, kTopShare), predictedTop = topIndices(predicted, kTopShare);
  const std::set<size_t> predictedSet(predictedTop.begin(), predictedTop.end());
  size_t found = 0, agree = 0;
  for (size_t i : top) found += predictedSet.count(i), agree += (predictedSign[i] > 0) == (measuredSign[i] > 0);
  score.topRecall = double(found) / double(top.size());
  score.topSignAgreement = double(agree) / double(top.size());
  return score;
}

/// Reads every dataset of `paths`.
Expected<std::vector<fuse::AdvantageDataset>> readDatasets(const std::vector<std::string>& paths) {
  std::vector<fuse::AdvantageDataset> data;
  for (const std::string& path : paths) {
    KILN_ASSIGN(fuse::AdvantageDataset d, fuse::AdvantageDataset::read(path));
    data.push_back(std::move(d));
  }
  return data;
}

/// One line per dataset of how `model` ranks its edges; with `json`, the same as a kiln-advantage-score/1 record.
Status reportScores(const fuse::AdvantageModel& model, const std::vector<fuse::AdvantageDataset>& data,
                    const std::string& json) {
  nlohmann::json records = nlohmann::json::array();
  for (const fuse::AdvantageDataset& d : data) {
    KILN_ASSIGN(DatasetScore s, scoreDataset(model, d));
    std::cout << "  " << d.model << ": " << s.samples << " samples, rank correlation " << std::fixed
              << std::setprecision(2) << s.rankCorrelation << ", top " << int(kTopShare * 100) << "% recall "
              << s.topRecall << ", top " << int(kTopShare * 100) << "% sign " << s.topSignAgreement << "\n";
    records.push_back({{"model", d.model}, {"samples", s.samples}, {"rank_correlation", s.rankCorrelation},
                       {"top_recall", s.topRecall}, {"top_sign_agreement", s.topSignAgreement}});
  }
  if (json.empty()) return Status::ok();
  return writeFile(json, nlohmann::json{{"schema", "kiln-advantage-score/1"}, {"top_share", kTopShare},
                                         {"trained_on", model.trainedOn()}, {"datasets", records}}
                             .dump(1) + "\n");
}

}  // namespace

int trainMode(const FuseOptions& o) {
  if (o.output.empty()) return reportError(Error(ErrorCode::InvalidArgument, "--train needs -o MODEL.json"));
  auto data = readDatasets(o.train);
  if (!data) return reportError(data.error());
  fuse::AdvantageTrainOptions t;
  t.seed = o.search.seed;
  auto model = fuse::AdvantageModel::train(*data, t);
  if (!model) return reportError(model.error());
  if (Status s = (*model)->save(o.output); !s.isOk()) return reportError(s.error());
  std::cout << "trained the advantage model on " << data->size() << " dataset(s) into " << o.output
            << " (scores on its own training data):\n";
  if (Status s = reportScores(**model, *data, ""); !s.isOk()) return reportError(s.error());
  return 0;
}

int scoreMode(const FuseOptions& o) {
  auto data = readDatasets(o.score);
  if (!data) return reportError(data.error());
  const std::string path = advantageModelPath(o);
  auto model = fuse::AdvantageModel::load(path);
  if (!model) return reportError(model.error());
  std::cout << "advantage model " << path << " (trained on " << joinStrings((*model)->trainedOn(), ", ") << "):\n";
  if (Status s = reportScores(**model, *data, o.jsonFile); !s.isOk()) return reportError(s.error());
  return 0;
}

}  // namespace kiln::cli
