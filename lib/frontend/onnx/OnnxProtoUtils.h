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

/// Resolves external-data files relative to a model's directory, mapping each
/// file once, and holds where the raw_data split out of the parsed message
/// lies (InitializerSplit.h).
class ExternalDataResolver {
 public:
  explicit ExternalDataResolver(std::string baseDir) : baseDir_(std::move(baseDir)) {}
  /// Bytes [offset, offset+length) of `location` (relative, inside the model dir).
  Expected<std::shared_ptr<Buffer>> read(const std::string& location, size_t offset, size_t length);
  /// `proto`'s raw_data was split out of the message: its bytes are [data, data+size), alive while importing.
  void setSplitRawData(const ::onnx::TensorProto* proto, const uint8_t* data, size_t size) {
    split_[proto] = {data, size};
  }
  /// The split raw_data of `proto`, or {nullptr, 0} when it has none.
  std::pair<const uint8_t*, size_t> splitRawData(const ::onnx::TensorProto& proto) const {
    auto it = split_.find(&proto);
    return it == split_.end() ? std::pair<const uint8_t*, size_t>{nullptr, 0} : it->second;
  }

 private:
  std::string baseDir_;
  std::map<std::string, std::shared_ptr<MappedFile>> files_;
  std::map<const ::onnx::TensorProto*, std::pair<const uint8_t*, size_t>> split_;
};

/// Converts a TensorProto. Raw data is adopted (moved out of the proto) rather
/// than copied; raw data split out of the message is copied into a buffer of
/// kiln's own; external data is mapped through `resolver` (null: not allowed).
Expected<Tensor> tensorFromProto(::onnx::TensorProto& proto, ExternalDataResolver* resolver);
/// Converts a TypeProto (tensor, sequence or optional).
Expected<ir::Type> typeFromProto(const ::onnx::TypeProto& proto);

/// Writes `tensor` as raw data into `proto`.
void tensorToProto(const Tensor& tensor, ::onnx::TensorProto* proto);
void typeToProto(const ir::Type& type, ::onnx::TypeProto* proto);

}  // namespace kiln::onnx
