//===- lib/frontend/onnx/InitializerSplit.cpp - Weights read past protobuf -===//
//
// See InitializerSplit.h. The walk knows three messages of onnx.proto:
// ModelProto (field 7: graph), GraphProto (field 5: initializer) and
// TensorProto (field 9: raw_data); every other field is copied as it is.
// A message field that protobuf would merge from several occurrences (two
// graphs) is not split, nor is a raw_data that occurs twice: the parse of
// the original handles those.
//
//===----------------------------------------------------------------------===//
#include "InitializerSplit.h"

namespace kiln::onnx {
namespace {

constexpr uint32_t kModelGraph = 7, kGraphInitializer = 5, kTensorRawData = 9;
constexpr int kLengthDelimited = 2;

/// One field of a message: [begin, end) in the bytes, its value at `value`
/// (for a length-delimited field, the payload after its length).
struct WireField {
  uint32_t number = 0;
  int wireType = 0;
  const uint8_t* begin = nullptr;
  const uint8_t* value = nullptr;
  const uint8_t* end = nullptr;
};

class WireReader {
 public:
  WireReader(const uint8_t* begin, const uint8_t* end) : at_(begin), end_(end) {}
  bool done() const { return at_ == end_; }

  /// The next field, or false when the bytes are not a well-formed field.
  bool next(WireField& f) {
    f.begin = at_;
    uint64_t tag = 0;
    if (!varint(tag) || (tag >> 3) == 0 || (tag >> 3) > 0x1fffffff) return false;
    f.number = uint32_t(tag >> 3);
    f.wireType = int(tag & 7);
    f.value = at_;
    uint64_t skip = 0;
    switch (f.wireType) {
      case 0: if (!varint(skip)) return false; skip = 0; break;
      case 1: skip = 8; break;
      case kLengthDelimited: if (!varint(skip)) return false; f.value = at_; break;
      case 5: skip = 4; break;
      default: return false;  // groups (3, 4) and the unused types
    }
    if (skip > uint64_t(end_ - at_)) return false;
    at_ += skip;
    f.end = at_;
    return true;
  }

 private:
  bool varint(uint64_t& v) {
    v = 0;
    for (int shift = 0; shift < 70; shift += 7) {
      if (at_ == end_) return false;
      const uint8_t byte = *at_++;
      v |= uint64_t(byte & 0x7f) << shift;
      if (!(byte & 0x80)) return shift < 63 || byte <= 1;
    }
    return false;
  }
  const uint8_t* at_;
  const uint8_t* end_;
};

void putVarint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(char(uint8_t(v) | 0x80));
    v >>= 7;
  }
  out.push_back(char(v));
}

/// The walk over a ModelProto. A dry walk only finds the initializers it
/// would split, writing nothing: a model with none (its weights in Constant
/// nodes or external files) is not copied for nothing.
struct Walk {
  const uint8_t* base;
  size_t minBytes;
  bool dry;
  SplitModel result;
  size_t splitCount = 0;

  void put(std::string& out, const uint8_t* begin, const uint8_t* end) const {
    if (!dry) out.append(reinterpret_cast<const char*>(begin), end - begin);
  }
  void putMessageField(std::string& out, uint32_t number, const std::string& payload) const {
    if (dry) return;
    putVarint(out, uint64_t(number) << 3 | kLengthDelimited);
    putVarint(out, payload.size());
    out += payload;
  }

  /// A TensorProto without its raw_data when that is large; false: not a well-formed message.
  bool tensor(const uint8_t* begin, const uint8_t* end, std::string& out) {
    WireReader reader(begin, end);
    WireField f;
    std::optional<WireField> raw;
    int rawFields = 0;
    while (!reader.done()) {
      if (!reader.next(f)) return false;
      if (f.number == kTensorRawData) {
        if (f.wireType != kLengthDelimited) return false;
        raw = f;
        ++rawFields;
      }
    }
    const bool split = rawFields == 1 && size_t(raw->end - raw->value) >= minBytes;
    result.rawData.push_back(split ? std::optional<ByteRange>(ByteRange{size_t(raw->value - base),
                                                                        size_t(raw->end - raw->value)})
                                   : std::nullopt);
    if (!split) {
      put(out, begin, end);
      return true;
    }
    ++splitCount;
    put(out, begin, raw->begin);
    put(out, raw->end, end);
    return true;
  }

  bool graph(const uint8_t* begin, const uint8_t* end, std::string& out) {
    WireReader reader(begin, end);
    WireField f;
    while (!reader.done()) {
      if (!reader.next(f)) return false;
      if (f.number != kGraphInitializer) {
        put(out, f.begin, f.end);
        continue;
      }
      if (f.wireType != kLengthDelimited) return false;
      std::string payload;
      if (!tensor(f.value, f.end, payload)) return false;
      putMessageField(out, kGraphInitializer, payload);
    }
    return true;
  }

  bool model(const uint8_t* begin, const uint8_t* end) {
    WireReader reader(begin, end);
    WireField f;
    int graphs = 0;
    while (!reader.done()) {
      if (!reader.next(f)) return false;
      if (f.number != kModelGraph) {
        put(result.message, f.begin, f.end);
        continue;
      }
      if (f.wireType != kLengthDelimited || ++graphs > 1) return false;
      std::string payload;
      if (!graph(f.value, f.end, payload)) return false;
      putMessageField(result.message, kModelGraph, payload);
    }
    return true;
  }
};

}  // namespace

std::optional<SplitModel> splitInitializerData(const uint8_t* data, size_t size, size_t minBytes) {
  Walk count{data, minBytes, /*dry=*/true, {}};
  if (!count.model(data, data + size) || count.splitCount == 0) return std::nullopt;
  Walk walk{data, minBytes, /*dry=*/false, {}};
  if (!walk.model(data, data + size)) return std::nullopt;  // not reached: the dry walk read the same bytes
  return std::move(walk.result);
}

}  // namespace kiln::onnx
