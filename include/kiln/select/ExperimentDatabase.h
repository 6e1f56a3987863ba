//===- kiln/select/ExperimentDatabase.h - Pass-selection experiments -*- C++ -*-===//
//
// Every compile+measure of a pass-selection study is one JSON record
// ("kiln-experiment/1", fields in docs/pass-selection.md) on one line of a
// .jsonl file. Records are appended with one write of the whole line on a
// descriptor opened O_APPEND, so concurrent studies never interleave lines;
// reading reports a corrupt or foreign line by number and skips it. The
// database keeps each record's text and the fields later runs query: which
// model (content hash) with which features, which pipeline, how fast. The
// `learned` strategy picks pipelines of the nearest architectures from it.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <string>
#include <vector>

#include "kiln/select/ArchitectureFeatures.h"
#include "kiln/support/Status.h"

namespace kiln::select {

inline constexpr const char* kExperimentSchema = "kiln-experiment/1";

/// The queried fields of one record.
struct ExperimentSummary {
  size_t line = 0;
  std::string model, modelHash, backend, strategy, label, pipeline, irHash;
  std::vector<double> features;  ///< featureVector() of the model
  bool ok = false;               ///< compiled, ran and matched the reference
  double latencyMs = 0;          ///< median
  double compileMs = 0;          ///< passes + code generation
};

/// A fixed-length description of an architecture for nearest-neighbour
/// queries: class scores, convolution kinds' shares, residual/attention/
/// normalisation densities, detection post-processing, log size. Each entry
/// is in [0, 1] roughly, so plain Euclidean distance weighs them alike.
std::vector<double> featureVector(const ArchitectureFeatures& features);
/// The features as a JSON object (text): counts, shares, the op histogram.
std::string featuresToJson(const ArchitectureFeatures& features);
double featureDistance(const std::vector<double>& a, const std::vector<double>& b);

class ExperimentDatabase {
 public:
  /// Reads `path` (a missing file is an empty database); a line that is not a
  /// kiln-experiment/1 record is skipped and listed in problems().
  static Expected<ExperimentDatabase> open(const std::string& path);

  /// Appends one record (a JSON object on one line, without newline).
  Status append(const std::string& recordJson);

  const std::string& path() const { return path_; }
  const std::vector<ExperimentSummary>& records() const { return records_; }
  const std::vector<std::string>& problems() const { return problems_; }

 private:
  std::string path_;
  size_t lines_ = 0;
  std::vector<ExperimentSummary> records_;
  std::vector<std::string> problems_;
};

/// The summary of one record line; an error says what is wrong with it.
Expected<ExperimentSummary> parseExperimentRecord(const std::string& line);

}  // namespace kiln::select
