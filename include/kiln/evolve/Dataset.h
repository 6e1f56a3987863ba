//===- kiln/evolve/Dataset.h - Samples a variant's error is measured on -*- C++ -*-===//
//
// `kiln evolve --data DIR`: DIR holds one .npy per model input, named after
// the input, each with a leading axis over samples (N, then the input's
// dims), and optionally labels.npy (N, ...). Given splits live in DIR/train
// and DIR/test, each laid out so; otherwise a seeded shuffle holds out a
// share of the samples for testing. A variant's error is one of:
//
//   top1       the share of samples whose predicted class (the first
//              output's largest element; above 0.5 for a single one) is not
//              the label
//   mae        the mean absolute difference of the first output and the label
//   agreement  the share of samples whose predicted class differs from the
//              original model's (no labels needed)
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kiln/ir/Graph.h"
#include "kiln/support/Status.h"
#include "kiln/support/Tensor.h"

namespace kiln::evolve {

enum class Metric { Top1, Mae, Agreement };
const char* metricName(Metric metric);
Expected<Metric> parseMetric(const std::string& name);

struct Dataset {
  std::vector<Tensor> inputs;  ///< one per graph input, in its order: (N, the input's dims)
  Tensor labels;               ///< (N, ...); undefined when the data has none

  int64_t size() const { return inputs.empty() ? 0 : inputs[0].dim(0); }
  /// Sample i's inputs, each with its input's dims.
  std::vector<Tensor> sample(int64_t i) const;
  /// The samples at `indices`, in that order.
  Dataset subset(const std::vector<int64_t>& indices) const;
};

struct DataSplit {
  Dataset train, test;
};

/// Reads `dir` for `graph`'s inputs (static tensors). Without given splits,
/// `testShare` of the samples, drawn with `seed`, are held out.
Expected<DataSplit> loadDataSplit(const std::string& dir, const ir::Graph& graph, double testShare, uint64_t seed);

/// The error of `outputs` (each sample's first output) on `data` under
/// `metric`; `reference` holds the original model's outputs (agreement).
/// KE4003 when the labels do not fit the metric or the outputs.
Expected<double> datasetError(Metric metric, const std::vector<Tensor>& outputs, const Dataset& data,
                              const std::vector<Tensor>& reference);

}  // namespace kiln::evolve
