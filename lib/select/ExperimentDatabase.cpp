//===- lib/select/ExperimentDatabase.cpp - kiln-experiment/1 records -------===//
//
// See kiln/select/ExperimentDatabase.h. Only the fields a query needs are
// parsed; the rest of a record is the study's business.
//
//===----------------------------------------------------------------------===//
#include "kiln/select/ExperimentDatabase.h"

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "kiln/select/ArchitectureClasses.h"
#include "kiln/support/File.h"

namespace kiln::select {
namespace {

double share(int64_t part, int64_t whole) { return whole > 0 ? std::min(1.0, double(part) / double(whole)) : 0.0; }

}  // namespace

std::vector<double> featureVector(const ArchitectureFeatures& f) {
  std::vector<double> v;
  for (const ClassScore& s : classify(f)) v.push_back(s.score);  // RN, MN, SSD, BR in classify's order
  const int64_t layers = std::max<int64_t>(1, f.layers());
  v.push_back(f.depthwiseShare());
  v.push_back(share(f.groupedConvs, f.convs));
  v.push_back(share(f.pointwiseConvs, f.convs));
  v.push_back(f.convShare());
  v.push_back(share(f.featureMapResidualAdds * 3, layers));
  v.push_back(share(f.attentionBlocks * 6, layers));
  v.push_back(share(f.layerNorms * 6, layers));
  v.push_back(share(f.mobileActivations, layers));
  v.push_back(f.nmsOps > 0 ? 1.0 : 0.0);
  v.push_back(std::min(1.0, std::log10(1.0 + double(f.parameters)) / 9.0));
  v.push_back(std::min(1.0, std::log10(1.0 + double(f.nodes)) / 5.0));
  return v;
}

std::string featuresToJson(const ArchitectureFeatures& f) {
  nlohmann::ordered_json j{{"nodes", f.nodes},
                           {"layers", f.layers()},
                           {"parameters", f.parameters},
                           {"parameter_bytes", f.parameterBytes},
                           {"convolutions", f.convs},
                           {"depthwise_convolutions", f.depthwiseConvs},
                           {"grouped_convolutions", f.groupedConvs},
                           {"pointwise_convolutions", f.pointwiseConvs},
                           {"dense_matmuls", f.denseMatmuls},
                           {"channels_last_pointwise", f.channelsLastPointwise},
                           {"depthwise_share", f.depthwiseShare()},
                           {"conv_share", f.convShare()},
                           {"residual_adds", f.residualAdds},
                           {"feature_map_residual_adds", f.featureMapResidualAdds},
                           {"attention_blocks", f.attentionBlocks},
                           {"layer_norms", f.layerNorms},
                           {"mobile_activations", f.mobileActivations},
                           {"nms_ops", f.nmsOps},
                           {"multi_scale_heads", f.multiScaleHeads},
                           {"box_heads", f.boxHeads},
                           {"op_histogram", f.opHistogram}};
  return j.dump();
}

double featureDistance(const std::vector<double>& a, const std::vector<double>& b) {
  double sum = 0;
  for (size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
    double d = (i < a.size() ? a[i] : 0.0) - (i < b.size() ? b[i] : 0.0);
    sum += d * d;
  }
  return std::sqrt(sum);
}

Expected<ExperimentSummary> parseExperimentRecord(const std::string& line) {
  nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return Error(ErrorCode::InvalidArgument, "not a JSON object");
  if (j.value("schema", "") != kExperimentSchema)
    return Error(ErrorCode::InvalidArgument, std::string("schema is not ") + kExperimentSchema);
  try {
    ExperimentSummary s;
    s.model = j.at("model").at("name").get<std::string>();
    s.modelHash = j.at("model").at("hash").get<std::string>();
    s.features = j.at("feature_vector").get<std::vector<double>>();
    s.backend = j.at("backend").get<std::string>();
    s.strategy = j.at("strategy").get<std::string>();
    s.label = j.at("label").get<std::string>();
    s.pipeline = j.at("pipeline").get<std::string>();
    s.irHash = j.at("ir_hash").is_null() ? "" : j.at("ir_hash").get<std::string>();
    s.ok = j.at("error").is_null();
    if (s.ok) {
      s.latencyMs = j.at("latency_ms").at("median").get<double>();
      s.compileMs = j.at("compile_ms").at("total").get<double>();
      if (!(s.latencyMs > 0) || !std::isfinite(s.compileMs))
        return Error(ErrorCode::InvalidArgument, "latency or compile time out of range");
    }
    return s;
  } catch (const nlohmann::json::exception& e) {
    return Error(ErrorCode::InvalidArgument, std::string("missing or mistyped field: ") + e.what());
  }
}

Expected<ExperimentDatabase> ExperimentDatabase::open(const std::string& path) {
  ExperimentDatabase db;
  db.path_ = path;
  auto take = [&](const std::string& line, size_t number) -> Status {
    KILN_ASSIGN(ExperimentSummary record, parseExperimentRecord(line));
    record.line = number;
    db.records_.push_back(std::move(record));
    return Status::ok();
  };
  KILN_ASSIGN(db.lines_, readRecordLines(path, take, db.problems_));
  return db;
}

Status ExperimentDatabase::append(const std::string& recordJson) {
  KILN_ASSIGN(ExperimentSummary s, parseExperimentRecord(recordJson));
  KILN_TRY(appendLine(path_, recordJson));
  s.line = ++lines_;
  records_.push_back(std::move(s));
  return Status::ok();
}

}  // namespace kiln::select
