//===- lib/frontend/onnx/TensorProtoConverter.cpp - Tensor and type protos -===//
//
// TensorProto <-> Tensor (raw, typed-field and external storage), TypeProto
// <-> Type, and reading .pb value files (tensors, sequences, optionals).
//
//===----------------------------------------------------------------------===//
#include <cstring>

#include "OnnxProtoUtils.h"
#include "kiln/ir/ShapeUtils.h"
#include "kiln/frontend/onnx/OnnxImporter.h"
#include "kiln/support/NarrowTypes.h"
#include "kiln/support/StringPool.h"

namespace kiln::onnx {

namespace {

Error tensorError(ErrorCode code, const ::onnx::TensorProto& p, const std::string& msg) {
  return Error(code, "tensor '" + p.name() + "': " + msg);
}

bool isSafeRelativePath(const std::string& path) {
  if (path.empty() || path[0] == '/') return false;
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    std::string part = path.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (part == "..") return false;
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return path.find('\0') == std::string::npos;
}

// Copies `count` values of a repeated field into `out` converting each to T.
template <class T, class Field>
void copyField(const Field& field, T* out) {
  for (int i = 0; i < field.size(); ++i) out[i] = static_cast<T>(field.Get(i));
}

}  // namespace

Expected<std::shared_ptr<Buffer>> ExternalDataResolver::read(const std::string& location, size_t offset,
                                                             size_t length) {
  if (!isSafeRelativePath(location))
    return Error(ErrorCode::OnnxExternalData,
                 "external data location '" + location + "' must be a relative path inside the model's directory");
  auto it = files_.find(location);
  if (it == files_.end()) {
    std::string path = baseDir_.empty() ? location : baseDir_ + "/" + location;
    auto file = MappedFile::open(path);
    if (!file) return Error(ErrorCode::OnnxExternalData, "external data file: " + file.error().message());
    it = files_.emplace(location, *file).first;
  }
  auto buf = MappedFile::slice(it->second, offset, length);
  if (!buf) return Error(ErrorCode::OnnxExternalData, "external data file '" + location + "': " + buf.error().message());
  return *buf;
}

namespace {

/// The bytes a tensor keeps outside its typed fields: its external data or
/// raw_data, `bytes` long (null when the values are in the typed fields).
/// `what` describes the tensor's type and dims for messages.
Expected<std::shared_ptr<Buffer>> storedBytes(::onnx::TensorProto& p, ExternalDataResolver* resolver, size_t bytes,
                                              const std::string& what) {
  if (p.data_location() == ::onnx::TensorProto::EXTERNAL) {
    if (!resolver) return tensorError(ErrorCode::OnnxExternalData, p, "external data is not allowed here");
    std::string location;
    int64_t offset = 0, length = -1;
    for (const auto& kv : p.external_data()) {
      const std::string& v = kv.value();
      auto parseNum = [&](int64_t& out) -> Status {
        if (v.empty() || v.size() > 18 || v.find_first_not_of("0123456789") != std::string::npos)
          return tensorError(ErrorCode::OnnxExternalData, p, "external data " + kv.key() + " '" + v + "' is not a number");
        out = std::stoll(v);
        return Status::ok();
      };
      if (kv.key() == "location") location = v;
      else if (kv.key() == "offset") KILN_TRY(parseNum(offset));
      else if (kv.key() == "length") KILN_TRY(parseNum(length));
    }
    if (location.empty()) return tensorError(ErrorCode::OnnxExternalData, p, "external data has no location");
    if (length >= 0 && size_t(length) != bytes)
      return tensorError(ErrorCode::OnnxExternalData, p, "external data length " + std::to_string(length) +
                                                           " does not match " + std::to_string(bytes) + " bytes of " +
                                                           what);
    auto buf = resolver->read(location, size_t(offset), bytes);
    if (!buf) return Error(buf.error()).withContext("tensor '" + p.name() + "'");
    return *buf;
  }
  if (auto [splitData, splitSize] = resolver ? resolver->splitRawData(p) : std::pair<const uint8_t*, size_t>();
      splitData || p.has_raw_data()) {
    const size_t held = splitData ? splitSize : p.raw_data().size();
    if (held != bytes)
      return tensorError(ErrorCode::OnnxBadTensorData, p, "raw data holds " + std::to_string(held) + " bytes, " +
                                                            what + " needs " + std::to_string(bytes));
    return splitData ? Buffer::copyOf(splitData, splitSize) : Buffer::adoptString(std::move(*p.mutable_raw_data()));
  }
  return std::shared_ptr<Buffer>();
}

/// The typed field that holds a tensor of `dtype` when it has no raw data, and how many values it holds.
std::pair<const char*, int64_t> typedField(const ::onnx::TensorProto& p, DType dtype) {
  switch (dtype) {
    case DType::F32: return {"float_data", p.float_data_size()};
    case DType::F64: return {"double_data", p.double_data_size()};
    case DType::I64: return {"int64_data", p.int64_data_size()};
    case DType::U32: case DType::U64: return {"uint64_data", p.uint64_data_size()};
    default: return {"int32_data", p.int32_data_size()};
  }
}

/// A narrow tensor as its carrier: f32 values, or u8 / i8 ones. Elements
/// narrower than a byte are packed from the low bits up (two 4-bit or four
/// 2-bit elements to a byte).
Expected<Tensor> narrowTensorFromProto(::onnx::TensorProto& p, NarrowType type, const Dims& dims, int64_t n,
                                       ExternalDataResolver* resolver) {
  const int width = narrowBits(type), perByte = 8 / width;
  const size_t bytes = (size_t(n) + size_t(perByte) - 1) / size_t(perByte);
  const std::string what = std::string(narrowTypeName(type)) + "[" + dimsToString(dims) + "]";
  KILN_ASSIGN(std::shared_ptr<Buffer> stored, storedBytes(p, resolver, bytes, what));
  // The bytes' count is checked against what the model holds before anything is allocated.
  if (!stored && size_t(p.int32_data_size()) != bytes)
    return tensorError(ErrorCode::OnnxBadTensorData, p, "int32_data holds " + std::to_string(p.int32_data_size()) +
                                                          " values, " + what + " needs " + std::to_string(bytes));
  std::vector<uint8_t> packed(bytes);
  if (stored) std::memcpy(packed.data(), stored->data(), bytes);
  else
    for (size_t i = 0; i < bytes; ++i) packed[i] = uint8_t(p.int32_data(int(i)));
  Tensor t = Tensor::zeros(narrowCarrier(type), dims);
  for (int64_t i = 0; i < n; ++i) {
    const uint8_t element = uint8_t(packed[size_t(i / perByte)] >> (width * (i % perByte)));
    if (isNarrowFloat(type)) t.mutableData<float>()[i] = narrowFloatValue(element, type);
    else if (narrowCarrier(type) == DType::U8) t.mutableData<uint8_t>()[i] = uint8_t(narrowIntValue(element, type));
    else t.mutableData<int8_t>()[i] = int8_t(narrowIntValue(element, type));
  }
  return t;
}

/// A STRING tensor as the i64 ids of its strings (kiln/support/StringPool.h).
/// ONNX keeps strings in string_data only: raw_data and external data do not apply.
Expected<Tensor> stringTensorFromProto(const ::onnx::TensorProto& p, const Dims& dims, int64_t n) {
  if (p.has_raw_data() || p.data_location() == ::onnx::TensorProto::EXTERNAL)
    return tensorError(ErrorCode::OnnxBadTensorData, p, "a STRING tensor keeps its strings in string_data");
  if (p.string_data_size() != n)
    return tensorError(ErrorCode::OnnxBadTensorData, p, "string_data holds " + std::to_string(p.string_data_size()) +
                                                          " strings, string[" + dimsToString(dims) + "] needs " +
                                                          std::to_string(n));
  auto t = stringTensor(dims, std::vector<std::string>(p.string_data().begin(), p.string_data().end()));
  if (!t) return tensorError(ErrorCode::OnnxBadTensorData, p, t.error().message());
  return t;
}

}  // namespace

Expected<Tensor> tensorFromProto(::onnx::TensorProto& p, ExternalDataResolver* resolver) {
  int code = p.data_type();
  auto dtype = dtypeFromOnnx(code);
  std::optional<NarrowType> narrow = narrowTypeFromOnnx(code);
  if (!dtype && !narrow && code != kOnnxStringCode) {
    if (code == 14 || code == 15)
      return tensorError(ErrorCode::UnsupportedType, p, std::string("element type ") + onnxDTypeCodeName(code) +
                                                          " is not supported by kiln");
    return tensorError(ErrorCode::OnnxUnknownDType, p, "unknown element type code " + std::to_string(code));
  }
  if (p.dims_size() > ir::kMaxRank)
    return tensorError(ErrorCode::OnnxBadTensorData, p, "rank " + std::to_string(p.dims_size()) + " is above kiln's limit of " +
                                                          std::to_string(ir::kMaxRank));
  Dims dims(p.dims().begin(), p.dims().end());
  for (int64_t d : dims)
    if (d < 0) return tensorError(ErrorCode::OnnxBadTensorData, p, "negative dim " + std::to_string(d));
  auto n = checkedNumElements(dims);
  if (!n) return tensorError(ErrorCode::OnnxBadTensorData, p, "dims [" + dimsToString(dims) + "] are too large");
  if (p.has_segment()) return tensorError(ErrorCode::UnsupportedType, p, "segmented tensors are not supported");
  if (narrow) return narrowTensorFromProto(p, *narrow, dims, *n, resolver);
  if (code == kOnnxStringCode) return stringTensorFromProto(p, dims, *n);
  size_t bytes = size_t(*n) * dtypeSize(*dtype);

  KILN_ASSIGN(std::shared_ptr<Buffer> buffer,
              storedBytes(p, resolver, bytes, std::string(dtypeName(*dtype)) + "[" + dimsToString(dims) + "]"));
  if (!buffer) {
    const auto [field, held] = typedField(p, *dtype);
    if (held != *n)  // checked before anything is allocated
      return tensorError(ErrorCode::OnnxBadTensorData, p, std::string(field) + " holds " + std::to_string(held) +
                                                            " values, " + dtypeName(*dtype) + "[" + dimsToString(dims) +
                                                            "] needs " + std::to_string(*n));
    Tensor t = Tensor::zeros(*dtype, dims);
    Status s = dispatchDType(*dtype, [&]<class T>() -> Status {
      T* out = t.mutableData<T>();
      if constexpr (std::is_same_v<T, float>) {
        copyField(p.float_data(), out);
      } else if constexpr (std::is_same_v<T, double>) {
        copyField(p.double_data(), out);
      } else if constexpr (std::is_same_v<T, int64_t>) {
        copyField(p.int64_data(), out);
      } else if constexpr (std::is_same_v<T, uint32_t> || std::is_same_v<T, uint64_t>) {
        copyField(p.uint64_data(), out);
      } else if constexpr (isHalfLike<T>) {
        for (int i = 0; i < p.int32_data_size(); ++i) out[i] = T::fromBits(uint16_t(p.int32_data(i)));
      } else if constexpr (std::is_same_v<T, bool>) {
        for (int i = 0; i < p.int32_data_size(); ++i) out[i] = p.int32_data(i) != 0;
      } else {
        copyField(p.int32_data(), out);
      }
      return Status::ok();
    });
    KILN_TRY(s);
    return t;
  }
  Tensor t(*dtype, dims, buffer);
  if (*dtype == DType::Bool) {  // only 0 and 1 are valid bool bytes
    const uint8_t* b = buffer->data();
    for (size_t i = 0; i < bytes; ++i)
      if (b[i] > 1) {
        Tensor copy = t.clone();
        auto* c = static_cast<uint8_t*>(copy.mutableRawData());
        for (size_t j = 0; j < bytes; ++j) c[j] = c[j] ? 1 : 0;
        return copy;
      }
  }
  return t;
}

Expected<ir::Type> typeFromProto(const ::onnx::TypeProto& proto) {
  switch (proto.value_case()) {
    case ::onnx::TypeProto::kTensorType: {
      const auto& tt = proto.tensor_type();
      DType dtype = DType::Undefined;
      if (tt.elem_type() != 0) {
        auto d = dtypeFromOnnx(tt.elem_type());
        if (auto narrow = narrowTypeFromOnnx(tt.elem_type())) d = narrowCarrier(*narrow);  // computed on its carrier
        if (tt.elem_type() == kOnnxStringCode) d = DType::I64;  // ids into the string pool
        if (!d) {
          int c = tt.elem_type();
          if (c == 14 || c == 15 || (c >= 23 && c <= 26))
            return Error(ErrorCode::UnsupportedType, std::string("element type ") + onnxDTypeCodeName(c) +
                                                         " is not supported by kiln");
          return Error(ErrorCode::OnnxUnknownDType, "unknown element type code " + std::to_string(c));
        }
        dtype = *d;
      }
      if (!tt.has_shape()) return ir::Type(ir::TensorType::unranked(dtype));
      KILN_TRY(ir::checkRank(tt.shape().dim_size(), "a declared type"));
      Dims dims;
      std::vector<std::string> symbols;
      bool anySymbol = false;
      for (const auto& d : tt.shape().dim()) {
        if (d.has_dim_value()) {
          if (d.dim_value() < 0) return Error(ErrorCode::ShapeMismatch, "negative dim " + std::to_string(d.dim_value()));
          dims.push_back(d.dim_value());
          symbols.emplace_back();
        } else {
          dims.push_back(ir::kUnknownDim);
          symbols.push_back(d.has_dim_param() ? d.dim_param() : "");
          anySymbol |= d.has_dim_param() && !d.dim_param().empty();
        }
      }
      ir::TensorType t(dtype, dims);
      if (anySymbol) t.setDimSymbols(symbols);
      return ir::Type(t);
    }
    case ::onnx::TypeProto::kSequenceType: {
      KILN_ASSIGN(ir::Type elem, typeFromProto(proto.sequence_type().elem_type()));
      if (!elem.isTensor()) return Error(ErrorCode::UnsupportedType, "sequences of " + elem.str() + " are not supported");
      return ir::Type::sequence(elem);
    }
    case ::onnx::TypeProto::kOptionalType: {
      KILN_ASSIGN(ir::Type elem, typeFromProto(proto.optional_type().elem_type()));
      if (elem.isOptional()) return Error(ErrorCode::UnsupportedType, "nested optionals are not supported");
      return ir::Type::optional(elem);
    }
    case ::onnx::TypeProto::kMapType: return Error(ErrorCode::UnsupportedType, "map types are not supported");
    case ::onnx::TypeProto::kSparseTensorType:
      return Error(ErrorCode::UnsupportedType, "sparse tensors are not supported");
    default: return ir::Type();
  }
}

void tensorToProto(const Tensor& t, ::onnx::TensorProto* p) {
  p->set_data_type(onnxDTypeCode(t.dtype()));
  for (int64_t d : t.dims()) p->add_dims(d);
  p->set_raw_data(std::string(static_cast<const char*>(t.rawData()), t.byteSize()));
}

void typeToProto(const ir::Type& type, ::onnx::TypeProto* p) {
  if (type.isSequence()) {
    typeToProto(type.element(), p->mutable_sequence_type()->mutable_elem_type());
    return;
  }
  if (type.isOptional()) {
    typeToProto(type.element(), p->mutable_optional_type()->mutable_elem_type());
    return;
  }
  const ir::TensorType& t = type.tensor();
  auto* tt = p->mutable_tensor_type();
  tt->set_elem_type(onnxDTypeCode(t.dtype()));
  if (!t.hasRank()) return;
  auto* shape = tt->mutable_shape();
  for (int64_t i = 0; i < t.rank(); ++i) {
    auto* d = shape->add_dim();
    if (t.dim(i) >= 0) d->set_dim_value(t.dim(i));
    else if (size_t(i) < t.dimSymbols().size() && !t.dimSymbols()[size_t(i)].empty())
      d->set_dim_param(t.dimSymbols()[size_t(i)]);
  }
}

Expected<RuntimeValue> readOnnxValueFile(const std::string& path, const ir::Type& expected) {
  KILN_ASSIGN(std::string bytes, readFile(path));
  auto malformed = [&](const char* what) {
    return Error(ErrorCode::FileFormat, "'" + path + "' is not a valid serialized " + what);
  };
  if (expected.isTensor()) {
    ::onnx::TensorProto proto;
    if (!proto.ParseFromString(bytes)) return malformed("TensorProto");
    auto t = tensorFromProto(proto, nullptr);
    if (!t) return Error(t.error()).withContext("'" + path + "'");
    return RuntimeValue(*t);
  }
  if (expected.isSequence()) {
    ::onnx::SequenceProto proto;
    if (!proto.ParseFromString(bytes)) return malformed("SequenceProto");
    std::vector<Tensor> elems;
    for (auto& tp : *proto.mutable_tensor_values()) {
      KILN_ASSIGN(Tensor t, tensorFromProto(tp, nullptr));
      elems.push_back(t);
    }
    DType elemType = expected.element().isTensor() ? expected.element().tensor().dtype() : DType::Undefined;
    if (!elems.empty()) elemType = elems[0].dtype();
    return RuntimeValue::sequence(elemType, elems);
  }
  ::onnx::OptionalProto proto;
  if (!proto.ParseFromString(bytes)) return malformed("OptionalProto");
  if (proto.has_tensor_value()) {
    KILN_ASSIGN(Tensor t, tensorFromProto(*proto.mutable_tensor_value(), nullptr));
    return RuntimeValue::some(RuntimeValue(t));
  }
  if (proto.has_sequence_value()) {
    std::vector<Tensor> elems;
    for (auto& tp : *proto.mutable_sequence_value()->mutable_tensor_values()) {
      KILN_ASSIGN(Tensor t, tensorFromProto(tp, nullptr));
      elems.push_back(t);
    }
    DType elemType = elems.empty() ? DType::F32 : elems[0].dtype();
    const ir::Type& inner = expected.element();
    if (elems.empty() && inner.isSequence() && inner.element().isTensor()) elemType = inner.element().tensor().dtype();
    return RuntimeValue::some(RuntimeValue::sequence(elemType, elems));
  }
  return RuntimeValue::none();
}

Expected<std::string> serializeTensorProto(const Tensor& tensor, const std::string& name) {
  ::onnx::TensorProto proto;
  proto.set_name(name);
  tensorToProto(tensor, &proto);
  std::string out;
  if (!proto.SerializeToString(&out)) return Error(ErrorCode::Internal, "cannot serialize tensor '" + name + "'");
  return out;
}

}  // namespace kiln::onnx
