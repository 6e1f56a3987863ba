//===- lib/tune/CostModel.cpp - XGBoost ranking of schedules ---------------===//
//
// See kiln/tune/CostModel.h. Dense row-major matrices go through
// XGBoost's C API; every call's status is checked and its message kept.
//
//===----------------------------------------------------------------------===//
#include "kiln/tune/CostModel.h"

#include <cmath>
#include <string>

#include <xgboost/c_api.h>

namespace kiln::tune {

namespace {

Status xgbCheck(int rc, const char* what) {
  if (rc == 0) return Status::ok();
  return makeError(ErrorCode::Internal, "XGBoost ", what, " failed: ", XGBGetLastError());
}

/// A DMatrix freed when it goes out of scope.
struct Matrix {
  DMatrixHandle handle = nullptr;
  ~Matrix() {
    if (handle) XGDMatrixFree(handle);
  }
};

Status makeMatrix(const std::vector<std::vector<float>>& x, size_t width, Matrix& m) {
  std::vector<float> flat;
  flat.reserve(x.size() * width);
  for (const std::vector<float>& row : x) {
    if (row.size() != width)
      return makeError(ErrorCode::Internal, "cost model rows of width ", row.size(), " and ", width);
    flat.insert(flat.end(), row.begin(), row.end());
  }
  return xgbCheck(XGDMatrixCreateFromMat(flat.data(), x.size(), width, NAN, &m.handle), "DMatrix creation");
}

}  // namespace

CostModel::CostModel(CostModelOptions options) : options_(options) {}

CostModel::~CostModel() {
  if (booster_) XGBoosterFree(booster_);
}

Status CostModel::fit(const std::vector<std::vector<float>>& x, const std::vector<float>& y,
                      const std::vector<unsigned>& groups, const std::vector<float>& weights) {
  if (x.empty() || x.size() != y.size())
    return makeError(ErrorCode::Internal, "cost model fit with ", x.size(), " rows and ", y.size(), " scores");
  const size_t width = x.front().size();
  Matrix train;
  KILN_TRY(makeMatrix(x, width, train));
  KILN_TRY(xgbCheck(XGDMatrixSetFloatInfo(train.handle, "label", y.data(), y.size()), "setting labels"));
  const bool ranking = options_.objective.rfind("rank:", 0) == 0;
  std::vector<unsigned> sizes = groups.empty() ? std::vector<unsigned>{unsigned(x.size())} : groups;
  if (ranking) KILN_TRY(xgbCheck(XGDMatrixSetUIntInfo(train.handle, "group", sizes.data(), sizes.size()), "setting groups"));
  if (!weights.empty()) {
    if (weights.size() != x.size())
      return makeError(ErrorCode::Internal, "cost model fit with ", x.size(), " rows and ", weights.size(), " weights");
    KILN_TRY(xgbCheck(XGDMatrixSetFloatInfo(train.handle, "weight", weights.data(), weights.size()), "setting weights"));
  }
  BoosterHandle booster = nullptr;
  KILN_TRY(xgbCheck(XGBoosterCreate(&train.handle, 1, &booster), "booster creation"));
  const std::pair<const char*, std::string> params[] = {
      {"objective", options_.objective},
      {"max_depth", std::to_string(options_.maxDepth)},
      {"eta", std::to_string(options_.eta)},
      {"min_child_weight", "1"},
      {"gamma", "0.0001"},
      {"nthread", "1"},  // deterministic and cheap at these sizes; the measurer owns the cores
      {"seed", std::to_string(options_.seed % 2147483647)},
      {"verbosity", "0"},
  };
  Status status = Status::ok();
  for (const auto& [name, value] : params)
    if (status.isOk()) status = xgbCheck(XGBoosterSetParam(booster, name, value.c_str()), "setting a parameter");
  for (int i = 0; status.isOk() && i < options_.rounds; ++i)
    status = xgbCheck(XGBoosterUpdateOneIter(booster, i, train.handle), "training");
  if (!status.isOk()) {
    XGBoosterFree(booster);
    return status;
  }
  if (booster_) XGBoosterFree(booster_);
  booster_ = booster;
  width_ = width;
  return Status::ok();
}

Expected<std::vector<float>> CostModel::predict(const std::vector<std::vector<float>>& x) const {
  if (!booster_ || x.empty()) return std::vector<float>(x.size(), 0.0f);
  Matrix m;
  KILN_TRY(makeMatrix(x, width_, m));
  bst_ulong length = 0;
  const float* out = nullptr;
  KILN_TRY(xgbCheck(XGBoosterPredict(booster_, m.handle, 0, 0, 0, &length, &out), "prediction"));
  if (length != x.size()) return makeError(ErrorCode::Internal, "XGBoost predicted ", length, " scores for ", x.size(), " rows");
  return std::vector<float>(out, out + length);
}

}  // namespace kiln::tune

namespace kiln::tune {

Expected<std::string> CostModel::save() const {
  if (!booster_) return makeError(ErrorCode::InvalidArgument, "the cost model is not trained");
  bst_ulong length = 0;
  const char* out = nullptr;
  KILN_TRY(xgbCheck(XGBoosterSaveModelToBuffer(booster_, R"({"format": "json"})", &length, &out), "saving the model"));
  return std::string(out, length);
}

Status CostModel::load(const std::string& json, size_t width) {
  BoosterHandle booster = nullptr;
  KILN_TRY(xgbCheck(XGBoosterCreate(nullptr, 0, &booster), "booster creation"));
  if (Status s = xgbCheck(XGBoosterLoadModelFromBuffer(booster, json.data(), json.size()), "loading a model"); !s.isOk()) {
    XGBoosterFree(booster);
    return s;
  }
  if (booster_) XGBoosterFree(booster_);
  booster_ = booster;
  width_ = width;
  return Status::ok();
}

}  // namespace kiln::tune
