//===- kiln/frontend/onnx/OnnxImporter.h - ONNX model import -------*- C++ -*-===//
//
// Imports an ONNX model (opsets 7 to 17 of the default domain; older ones
// where a node's form did not change) into a kiln
// Module: initializers and Constant nodes become Constant nodes sharing the
// model's bytes (external data is memory-mapped), old op forms are rewritten
// to their opset-17 form, dynamic input dims can be bound, and every node is
// typed as it is created. Anything kiln cannot represent is a clear error
// naming the node, op and opset, never a crash.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <map>
#include <memory>
#include <string>

#include "kiln/ir/Module.h"
#include "kiln/support/RuntimeValue.h"
#include "kiln/support/Status.h"

namespace kiln::onnx {

/// Default-domain opsets kiln is designed for: every supported op's forms in
/// this range are normalised to their opset-17 form (kIrOpset), the form the
/// IR holds and the exporter writes. kMaxOpset is the newest opset ONNX
/// Runtime 1.30 loads; an op version kiln does not know is refused by name.
inline constexpr int64_t kMinOpset = 7;
inline constexpr int64_t kIrOpset = 17;
inline constexpr int64_t kMaxOpset = 26;
/// Older opsets import too when a node's op has the same form as in opset 7
/// (a form that changed shows up as an unknown attribute: a clear error).
inline constexpr int64_t kOldestOpset = 1;

struct ImportOptions {
  /// Concrete dims for graph inputs, by name (`--shape name:1x3x224x224`).
  std::map<std::string, Dims> inputShapes;
  /// Shape ranges for graph inputs, by name (`--min-shapes`, `--opt-shapes`,
  /// `--max-shapes`): a dim whose min and max differ stays dynamic, a
  /// symbolic dim with that range (Module::dimRanges); opt defaults to max.
  std::map<std::string, Dims> minShapes, optShapes, maxShapes;
};

/// Imports a .onnx file; external data is resolved next to it.
Expected<std::unique_ptr<ir::Module>> importOnnxFile(const std::string& path, const ImportOptions& options = {});
/// Imports a serialized ModelProto; external data is resolved in `baseDir`.
Expected<std::unique_ptr<ir::Module>> importOnnxBytes(const std::string& bytes, const std::string& baseDir,
                                                      const ImportOptions& options = {});

/// Parses "name:1x3x224x224" into options.inputShapes.
Status parseShapeBinding(const std::string& spec, ImportOptions& options);
/// Parses "name:1x3x48x80" given to `flag` (--min-shapes, ...) into `shapes`.
Status parseShapeRange(const std::string& flag, const std::string& spec, std::map<std::string, Dims>& shapes);

/// Reads a serialized TensorProto, SequenceProto or OptionalProto (.pb), as the
/// ONNX test data sets store inputs and outputs. `expected` says which to read.
Expected<RuntimeValue> readOnnxValueFile(const std::string& path, const ir::Type& expected);
/// Serializes a tensor as a TensorProto (.pb).
Expected<std::string> serializeTensorProto(const Tensor& tensor, const std::string& name);

}  // namespace kiln::onnx
