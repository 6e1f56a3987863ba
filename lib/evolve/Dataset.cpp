//===- lib/evolve/Dataset.cpp - Samples a variant's error is measured on ---===//
//
// See kiln/evolve/Dataset.h.
//
//===----------------------------------------------------------------------===//
#include "kiln/evolve/Dataset.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <numeric>
#include <random>

#include "kiln/support/Npy.h"

namespace kiln::evolve {

namespace {

/// Rows `indices` of `t` along its leading axis.
Tensor rows(const Tensor& t, const std::vector<int64_t>& indices) {
  Dims dims = t.dims();
  const size_t rowBytes = dims[0] == 0 ? 0 : t.byteSize() / size_t(dims[0]);
  dims[0] = int64_t(indices.size());
  Tensor out = Tensor::forWrite(t.dtype(), dims);
  auto* dst = static_cast<uint8_t*>(out.mutableRawData());
  const auto* src = static_cast<const uint8_t*>(t.rawData());
  for (size_t k = 0; k < indices.size(); ++k)
    std::memcpy(dst + k * rowBytes, src + size_t(indices[k]) * rowBytes, rowBytes);
  return out;
}

/// Reads DIR's arrays for `graph`'s inputs (and labels.npy when present).
Expected<Dataset> loadDataset(const std::filesystem::path& dir, const ir::Graph& graph) {
  Dataset data;
  for (const ir::Value* in : graph.inputs()) {
    const std::filesystem::path file = dir / (in->name() + ".npy");
    if (!std::filesystem::exists(file))
      return makeError(ErrorCode::InvalidArgument, "--data ", dir.string(), " has no ", file.filename().string(),
                       " for the model's input '", in->name(), "'");
    if (!in->type().isTensor() || !in->tensorType().isStatic())
      return makeError(ErrorCode::InvalidArgument, "input '", in->name(), "' is ", in->type().str(),
                       ": kiln evolve needs static input shapes (bind them with --shape)");
    KILN_ASSIGN(Tensor t, readNpy(file.string()));
    const ir::TensorType& want = in->tensorType();
    if (t.rank() != want.rank() + 1 || !std::equal(want.dims().begin(), want.dims().end(), t.dims().begin() + 1) ||
        t.dtype() != want.dtype())
      return makeError(ErrorCode::InvalidArgument, file.string(), " is ", t.typeString(), "; input '", in->name(),
                       "' needs samples of ", want.str(), " along a leading axis");
    if (!data.inputs.empty() && t.dim(0) != data.size())
      return makeError(ErrorCode::InvalidArgument, file.string(), " holds ", t.dim(0), " samples, the other inputs ",
                       data.size());
    data.inputs.push_back(std::move(t));
  }
  if (data.inputs.empty()) return makeError(ErrorCode::InvalidArgument, "the model has no inputs to feed samples to");
  const std::filesystem::path labels = dir / "labels.npy";
  if (std::filesystem::exists(labels)) {
    KILN_ASSIGN(data.labels, readNpy(labels.string()));
    if (data.labels.rank() == 0 || data.labels.dim(0) != data.size())
      return makeError(ErrorCode::InvalidArgument, labels.string(), " is ", data.labels.typeString(), ": it needs ",
                       data.size(), " samples along its leading axis");
  }
  return data;
}

/// The predicted class of one output: its largest element, or for a single
/// element whether it is above 0.5.
int64_t predictedClass(const Tensor& out) {
  const std::vector<double> v = out.toDoubles();
  if (v.size() == 1) return v[0] > 0.5 ? 1 : 0;
  return int64_t(std::max_element(v.begin(), v.end()) - v.begin());
}

}  // namespace

const char* metricName(Metric metric) {
  switch (metric) {
    case Metric::Top1: return "top1";
    case Metric::Mae: return "mae";
    case Metric::Agreement: return "agreement";
  }
  return "?";
}

Expected<Metric> parseMetric(const std::string& name) {
  for (Metric m : {Metric::Top1, Metric::Mae, Metric::Agreement})
    if (name == metricName(m)) return m;
  return makeError(ErrorCode::InvalidArgument, "--metric must be top1, mae or agreement, not '", name, "'");
}

std::vector<Tensor> Dataset::sample(int64_t i) const {
  std::vector<Tensor> out;
  for (const Tensor& t : inputs) {
    Tensor row = rows(t, {i});
    out.push_back(row.reshaped(Dims(t.dims().begin() + 1, t.dims().end())));
  }
  return out;
}

Dataset Dataset::subset(const std::vector<int64_t>& indices) const {
  Dataset out;
  for (const Tensor& t : inputs) out.inputs.push_back(rows(t, indices));
  if (labels.defined()) out.labels = rows(labels, indices);
  return out;
}

Expected<DataSplit> loadDataSplit(const std::string& dir, const ir::Graph& graph, double testShare, uint64_t seed) {
  const std::filesystem::path root(dir);
  if (!std::filesystem::is_directory(root))
    return makeError(ErrorCode::IoError, "--data ", dir, " is not a directory");
  if (std::filesystem::is_directory(root / "train") && std::filesystem::is_directory(root / "test")) {
    DataSplit split;
    KILN_ASSIGN(split.train, loadDataset(root / "train", graph));
    KILN_ASSIGN(split.test, loadDataset(root / "test", graph));
    return split;
  }
  if (!(testShare >= 0 && testShare < 1))
    return makeError(ErrorCode::InvalidArgument, "--test-share must be in [0, 1), not ", testShare);
  KILN_ASSIGN(Dataset all, loadDataset(root, graph));
  std::vector<int64_t> order(size_t(all.size()));
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 rng(seed);
  std::shuffle(order.begin(), order.end(), rng);
  const auto testCount = long(std::llround(testShare * double(order.size())));
  if (order.size() - size_t(testCount) == 0)
    return makeError(ErrorCode::InvalidArgument, "--data ", dir, " leaves no training samples");
  DataSplit split;
  split.test = all.subset(std::vector<int64_t>(order.begin(), order.begin() + testCount));
  split.train = all.subset(std::vector<int64_t>(order.begin() + testCount, order.end()));
  return split;
}

Expected<double> datasetError(Metric metric, const std::vector<Tensor>& outputs, const Dataset& data,
                              const std::vector<Tensor>& reference) {
  if (outputs.empty()) return 0.0;
  if (metric != Metric::Agreement && !data.labels.defined())
    return makeError(ErrorCode::InvalidArgument, "--metric ", metricName(metric),
                     " needs labels.npy beside the inputs (or --metric agreement)");
  if (metric == Metric::Agreement && reference.size() != outputs.size())
    return makeError(ErrorCode::Internal, "agreement needs the original's outputs for every sample");
  const std::vector<double> labels = data.labels.defined() ? data.labels.toDoubles() : std::vector<double>();
  const size_t perSample = labels.size() / outputs.size();
  double sum = 0;
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (metric == Metric::Agreement) {
      sum += predictedClass(outputs[i]) != predictedClass(reference[i]);
    } else if (metric == Metric::Top1) {
      if (perSample != 1)
        return makeError(ErrorCode::InvalidArgument, "--metric top1 needs one class label per sample, labels.npy has ",
                         perSample);
      sum += double(predictedClass(outputs[i])) != labels[i];
    } else {
      const std::vector<double> out = outputs[i].toDoubles();
      if (out.size() != perSample)
        return makeError(ErrorCode::InvalidArgument, "--metric mae compares the first output (", out.size(),
                         " elements a sample) with labels of ", perSample);
      double e = 0;
      for (size_t j = 0; j < out.size(); ++j) e += std::fabs(out[j] - labels[i * perSample + j]);
      sum += std::isfinite(e) ? e / double(perSample) : HUGE_VAL;
    }
  }
  return sum / double(outputs.size());
}

}  // namespace kiln::evolve
