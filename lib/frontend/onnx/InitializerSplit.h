//===- lib/frontend/onnx/InitializerSplit.h - Weights read past protobuf ---===//
//
// protobuf copies every `bytes` field it parses into a std::string of its
// own: for a model with embedded weights, all of them, into 16-byte aligned
// heap blocks in 4 KiB pages that kiln copies or packs again later.
// splitInitializerData walks the protobuf wire format of a ModelProto far
// enough to find the raw_data of the main graph's initializers, and returns
// the model's bytes without the large ones (what is left is the graph and
// its metadata) and where each one's bytes lie in the original. The
// importer parses the small copy and copies each initializer's bytes from
// the mapped file into a kiln buffer of its own (64-byte aligned, in huge
// pages where large), which later passes and code generation may then
// write over. Anything the walk does not expect (a group, a bad varint, a
// length past the end, a second graph field) gives nullopt, and the
// importer parses the original bytes as before, so malformed files get
// protobuf's verdict.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kiln::onnx {

/// Where a field's bytes lie in the original message.
struct ByteRange {
  size_t offset = 0;
  size_t size = 0;
};

struct SplitModel {
  /// The ModelProto's bytes without the split raw_data fields.
  std::string message;
  /// One entry per initializer of the main graph, in order: its raw_data's
  /// place in the original bytes, or nullopt where it was left in `message`.
  std::vector<std::optional<ByteRange>> rawData;
};

/// Splits out the raw_data of the main graph's initializers holding at least
/// `minBytes`; nullopt when the bytes do not walk as a ModelProto or hold no
/// such initializer.
std::optional<SplitModel> splitInitializerData(const uint8_t* data, size_t size, size_t minBytes);

}  // namespace kiln::onnx
