//===- kiln/ir/Module.h - A model: main graph plus metadata ------*- C++ -*-===//
//
// A Module owns the main graph, the model metadata that export writes back
// (producer, doc string, opset imports, metadata properties). Weight tensors in
// Constant nodes share buffers that keep their storage (protobuf strings, mapped
// external-data files) alive, so weights are never copied at import.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "kiln/ir/Graph.h"

namespace kiln::ir {

/// The values a dynamic dim takes: the range an artifact serves and the
/// value it is tuned for (trtexec's min, opt and max shapes).
struct DimRange {
  int64_t min = 0;
  int64_t opt = 0;
  int64_t max = 0;
  bool operator==(const DimRange&) const = default;
  /// "1..512 (opt 128)"
  std::string str() const {
    return std::to_string(min) + ".." + std::to_string(max) + " (opt " + std::to_string(opt) + ")";
  }
};

/// Dynamic dims' ranges by symbol.
using DimRanges = std::map<std::string, DimRange>;

class Module {
 public:
  Module() : graph_(std::make_unique<Graph>("main")) {}
  /// A module around an existing root graph.
  explicit Module(std::unique_ptr<Graph> graph) : graph_(std::move(graph)) {}

  Graph& graph() { return *graph_; }
  const Graph& graph() const { return *graph_; }

  std::string name;  ///< model name (graph name in ONNX)
  std::string producerName;
  std::string producerVersion;
  std::string docString;
  int64_t irVersion = 8;
  int64_t modelVersion = 0;
  /// Opset per domain as declared by the source model ("" is the default domain).
  std::map<std::string, int64_t> opsetImports;
  std::vector<std::pair<std::string, std::string>> metadataProps;
  /// The dynamic dims that symbolic types refer to, by symbol.
  DimRanges dimRanges;
  /// The graph inputs and outputs the model gives the STRING type, by name:
  /// kiln holds them as i64 ids into the string pool (support/StringPool.h).
  std::set<std::string> stringInputs, stringOutputs;

 private:
  std::unique_ptr<Graph> graph_;
};

}  // namespace kiln::ir
