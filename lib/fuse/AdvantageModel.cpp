//===- lib/fuse/AdvantageModel.cpp - Learned local advantage of an edge ---===//
//
// See kiln/fuse/AdvantageModel.h. The regressor is tune::CostModel with a
// squared-error objective and per-row weights; its trees travel inside the
// model file as XGBoost's own JSON.
//
//===----------------------------------------------------------------------===//
#include "kiln/fuse/AdvantageModel.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include <nlohmann/json.hpp>

#include "kiln/fuse/EdgeFeatures.h"
#include "kiln/support/File.h"

namespace kiln::fuse {

namespace {

constexpr const char* kDataSchema = "kiln-fuse-data/1";
constexpr const char* kModelSchema = "kiln-advantage/1";

/// `j[key]` when it is a string, else `fallback` (nlohmann's value() throws on a wrong type).
std::string stringField(const nlohmann::json& j, const char* key, const std::string& fallback) {
  return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : fallback;
}

int intField(const nlohmann::json& j, const char* key, int fallback) {
  return j.contains(key) && j[key].is_number_integer() && j[key].get<int64_t>() >= 0 && j[key].get<int64_t>() < 64
             ? int(j[key].get<int64_t>())
             : fallback;
}

Status featureNamesMatch(const nlohmann::json& names, const std::string& what) {
  if (names != nlohmann::json(edgeFeatureNames()))
    return makeError(ErrorCode::InvalidArgument, what,
                     " was made with other edge features than this kiln's (collect or train it again)");
  return Status::ok();
}

/// The median of the non-zero |advantage|s (1 when there are none).
double advantageScale(const AdvantageDataset& data) {
  std::vector<double> a;
  for (const AdvantageSample& s : data.samples)
    if (s.advantage() != 0) a.push_back(std::fabs(s.advantage()));
  if (a.empty()) return 1;
  std::nth_element(a.begin(), a.begin() + a.size() / 2, a.end());
  return a[a.size() / 2];
}

/// Per sample: the graph's top share by |advantage| splits `significantWeight`, the rest the remainder;
/// scaled so that the mean weight is 1 (XGBoost's min_child_weight counts in those units).
std::vector<float> prioritizedWeights(const AdvantageDataset& data, const AdvantageTrainOptions& o) {
  const size_t n = data.samples.size();
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return std::fabs(data.samples[a].advantage()) > std::fabs(data.samples[b].advantage());
  });
  const size_t top = std::clamp<size_t>(size_t(std::ceil(double(n) * o.significantShare)), 1, n);
  std::vector<float> w(n, 0.0f);
  for (size_t k = 0; k < n; ++k)
    w[order[k]] = k < top ? float(double(n) * o.significantWeight / double(top))
                          : float(double(n) * (1 - o.significantWeight) / double(std::max<size_t>(1, n - top)));
  return w;
}

}  // namespace

Expected<AdvantageDataset> AdvantageDataset::read(const std::string& path) {
  KILN_ASSIGN(std::string text, readFile(path));
  std::istringstream in(text);
  AdvantageDataset d;
  std::string line;
  size_t number = 0;
  auto bad = [&](const std::string& why) {
    return makeError(ErrorCode::InvalidArgument, path, ":", number, ": ", why);
  };
  while (std::getline(in, line)) {
    ++number;
    if (line.empty()) continue;
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object()) return bad("not a JSON object");
    if (number == 1) {
      if (stringField(j, "schema", "") != kDataSchema) return bad(std::string("not a fusion dataset (schema ") + kDataSchema + ")");
      if (!j.contains("features")) return bad("no feature names");
      KILN_TRY(featureNamesMatch(j["features"], path));
      d.model = stringField(j, "model", "");
      d.target = stringField(j, "target", "cpu");
      d.radius = intField(j, "radius", 1);
      continue;
    }
    if (!j.contains("features") || !j["features"].is_array() || j["features"].size() != edgeFeatureNames().size())
      return bad("a sample needs " + std::to_string(edgeFeatureNames().size()) + " features");
    if (!j.contains("fuse_ms") || !j["fuse_ms"].is_number() || !j.contains("split_ms") || !j["split_ms"].is_number())
      return bad("a sample needs fuse_ms and split_ms");
    AdvantageSample s;
    for (const nlohmann::json& f : j["features"]) {
      if (!f.is_number() || !(std::fabs(f.get<double>()) < 1e30)) return bad("a feature is not a finite number");
      s.features.push_back(float(f.get<double>()));
    }
    s.fuseMs = j["fuse_ms"].get<double>(), s.splitMs = j["split_ms"].get<double>();
    if (!std::isfinite(s.fuseMs) || !std::isfinite(s.splitMs) || s.fuseMs < 0 || s.splitMs < 0)
      return bad("a latency is negative or not finite");
    d.samples.push_back(std::move(s));
  }
  if (number == 0) return makeError(ErrorCode::InvalidArgument, path, ": empty fusion dataset");
  return d;
}

std::vector<float> AdvantageModel::labels(const AdvantageDataset& data) {
  const double sigma = advantageScale(data);
  std::vector<float> y;
  for (const AdvantageSample& s : data.samples) y.push_back(float(std::log1p(std::fabs(s.advantage()) / sigma)));
  return y;
}

std::vector<float> AdvantageModel::signedLabels(const AdvantageDataset& data) {
  std::vector<float> y = labels(data);
  for (size_t i = 0; i < y.size(); ++i)
    if (data.samples[i].advantage() < 0) y[i] = -y[i];
  return y;
}

Expected<std::unique_ptr<AdvantageModel>> AdvantageModel::train(const std::vector<AdvantageDataset>& data,
                                                                const AdvantageTrainOptions& options) {
  std::vector<std::vector<float>> x;
  std::vector<float> y, signedY, w;
  auto model = std::make_unique<AdvantageModel>();
  for (const AdvantageDataset& d : data) {
    if (d.samples.empty()) continue;
    if (!model->graphs_.empty() && d.target != model->target_)
      return makeError(ErrorCode::InvalidArgument, "datasets of targets ", model->target_, " and ", d.target, " mixed");
    model->target_ = d.target, model->radius_ = d.radius;
    if (std::find(model->graphs_.begin(), model->graphs_.end(), d.model) == model->graphs_.end())
      model->graphs_.push_back(d.model);
    const std::vector<float> magnitude = labels(d), direction = signedLabels(d), weights = prioritizedWeights(d, options);
    for (size_t i = 0; i < d.samples.size(); ++i) x.push_back(d.samples[i].features);
    y.insert(y.end(), magnitude.begin(), magnitude.end());
    signedY.insert(signedY.end(), direction.begin(), direction.end());
    w.insert(w.end(), weights.begin(), weights.end());
  }
  if (x.empty()) return makeError(ErrorCode::InvalidArgument, "no samples to train the advantage model on");
  tune::CostModelOptions o;
  o.rounds = options.rounds, o.maxDepth = options.maxDepth, o.eta = options.eta, o.seed = options.seed;
  o.objective = "reg:squarederror";
  model->booster_ = std::make_unique<tune::CostModel>(o);
  KILN_TRY(model->booster_->fit(x, y, {}, w));
  model->signed_ = std::make_unique<tune::CostModel>(o);
  KILN_TRY(model->signed_->fit(x, signedY, {}, w));
  model->samples_ = x.size();
  return model;
}

namespace {

Status checkWidth(const std::vector<std::vector<float>>& rows) {
  for (const std::vector<float>& r : rows)
    if (r.size() != edgeFeatureNames().size())
      return makeError(ErrorCode::InvalidArgument, "edge features of width ", r.size(), " for an advantage model of width ",
                       edgeFeatureNames().size());
  return Status::ok();
}

}  // namespace

Expected<std::vector<float>> AdvantageModel::predict(const std::vector<std::vector<float>>& rows) const {
  KILN_TRY(checkWidth(rows));
  if (!booster_) return makeError(ErrorCode::InvalidArgument, "the advantage model is not trained");
  return booster_->predict(rows);
}

Expected<std::vector<float>> AdvantageModel::predictSigned(const std::vector<std::vector<float>>& rows) const {
  KILN_TRY(checkWidth(rows));
  if (!signed_) return makeError(ErrorCode::InvalidArgument, "the advantage model has no signed regressor");
  return signed_->predict(rows);
}

Status AdvantageModel::save(const std::string& path) const {
  if (!booster_ || !signed_) return makeError(ErrorCode::InvalidArgument, "the advantage model is not trained");
  KILN_ASSIGN(std::string trees, booster_->save());
  KILN_ASSIGN(std::string signedTrees, signed_->save());
  nlohmann::json j = {{"schema", kModelSchema},
                      {"target", target_},
                      {"radius", radius_},
                      {"trained_on", graphs_},
                      {"samples", samples_},
                      {"features", edgeFeatureNames()},
                      {"xgboost", nlohmann::json::parse(trees)},
                      {"xgboost_signed", nlohmann::json::parse(signedTrees)}};
  return writeFile(path, j.dump() + "\n");
}

Expected<std::unique_ptr<AdvantageModel>> AdvantageModel::load(const std::string& path) {
  KILN_ASSIGN(std::string text, readFile(path));
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object() || stringField(j, "schema", "") != kModelSchema)
    return makeError(ErrorCode::InvalidArgument, path, ": not an advantage model (schema ", kModelSchema, ")");
  if (!j.contains("features")) return makeError(ErrorCode::InvalidArgument, path, ": an advantage model needs features");
  KILN_TRY(featureNamesMatch(j["features"], path));
  if (!j.contains("xgboost") || !j["xgboost"].is_object() || !j.contains("xgboost_signed") || !j["xgboost_signed"].is_object())
    return makeError(ErrorCode::InvalidArgument, path, ": an advantage model needs xgboost and xgboost_signed trees");
  auto model = std::make_unique<AdvantageModel>();
  model->target_ = stringField(j, "target", "cpu");
  model->radius_ = intField(j, "radius", 1);
  if (j.contains("trained_on") && j["trained_on"].is_array())
    for (const nlohmann::json& g : j["trained_on"])
      if (g.is_string()) model->graphs_.push_back(g.get<std::string>());
  if (j.contains("samples") && j["samples"].is_number_unsigned()) model->samples_ = j["samples"].get<size_t>();
  model->booster_ = std::make_unique<tune::CostModel>();
  model->signed_ = std::make_unique<tune::CostModel>();
  for (auto [booster, key] : {std::pair{model->booster_.get(), "xgboost"}, std::pair{model->signed_.get(), "xgboost_signed"}})
    if (Status s = booster->load(j[key].dump(), edgeFeatureNames().size()); !s.isOk())
      return makeError(ErrorCode::InvalidArgument, path, ": ", s.error().message());
  return model;
}

}  // namespace kiln::fuse
