//===- lib/frontend/onnx/OnnxProtoUtils.h - Proto <-> kiln conversions ----===//
//
// Conversions between ONNX protobuf messages (TensorProto, TypeProto) and kiln
// tensors and types, shared by the importer, the exporter and the value-file
// reader. Errors name the tensor or value they concern.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <onnx/onnx-data_pb.h>

#include <map>
#include <memory>
#include <string>

#include "kiln/ir/Type.h"
#include "kiln/support/File.h"
#include "kiln/support/Status.h"

namespace kiln::onnx {

/// Resolves external-data files relative to a model's directory, mapping each file once.
class ExternalDataResolver {
 public:
  explicit ExternalDataResolver(std::string baseDir) : baseDir_(std::move(baseDir)) {}
  /// Bytes [offset, offset+length) of `location` (relative, inside the model dir).
  Expected<std::shared_ptr<Buffer>> read(const std::string& location, size_t offset, size_t length);

 private:
  std::string baseDir_;
  std::map<std::string, std::shared_ptr<MappedFile>> files_;
};

/// Converts a TensorProto. Raw data is adopted (moved out of the proto) rather
/// than copied; external data is mapped through `resolver` (null: not allowed).
Expected<Tensor> tensorFromProto(::onnx::TensorProto& proto, ExternalDataResolver* resolver);
/// Converts a TypeProto (tensor, sequence or optional).
Expected<ir::Type> typeFromProto(const ::onnx::TypeProto& proto);

/// Writes `tensor` as raw data into `proto`.
void tensorToProto(const Tensor& tensor, ::onnx::TensorProto* proto);
void typeToProto(const ir::Type& type, ::onnx::TypeProto* proto);

}  // namespace kiln::onnx
