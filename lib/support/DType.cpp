//===- lib/support/DType.cpp - Element type names, sizes and ONNX codes ----===//
//
// Tables for DType: text names, byte sizes, classification, and the mapping
// to and from ONNX TensorProto.DataType codes.
//
//===----------------------------------------------------------------------===//
#include "kiln/support/DType.h"

#include "kiln/support/Status.h"

namespace kiln {
namespace {
struct DTypeInfo {
  DType type;
  const char* name;
  size_t size;
  int onnxCode;
};
constexpr DTypeInfo kInfos[] = {
    {DType::F32, "f32", 4, 1},   {DType::F64, "f64", 8, 11},  {DType::F16, "f16", 2, 10},
    {DType::BF16, "bf16", 2, 16}, {DType::I8, "i8", 1, 3},    {DType::I16, "i16", 2, 5},
    {DType::I32, "i32", 4, 6},   {DType::I64, "i64", 8, 7},   {DType::U8, "u8", 1, 2},
    {DType::U16, "u16", 2, 4},   {DType::U32, "u32", 4, 12},  {DType::U64, "u64", 8, 13},
    {DType::Bool, "bool", 1, 9},
};
const DTypeInfo* info(DType t) {
  for (const auto& i : kInfos)
    if (i.type == t) return &i;
  return nullptr;
}
}  // namespace

const char* dtypeName(DType t) {
  const DTypeInfo* i = info(t);
  return i ? i->name : "undefined";
}

std::optional<DType> parseDType(std::string_view name) {
  for (const auto& i : kInfos)
    if (name == i.name) return i.type;
  return std::nullopt;
}

size_t dtypeSize(DType t) {
  const DTypeInfo* i = info(t);
  KILN_CHECK(i, "dtypeSize of undefined dtype");
  return i->size;
}

bool isFloat(DType t) {
  return t == DType::F32 || t == DType::F64 || t == DType::F16 || t == DType::BF16;
}
bool isSignedInteger(DType t) {
  return t == DType::I8 || t == DType::I16 || t == DType::I32 || t == DType::I64;
}
bool isUnsignedInteger(DType t) {
  return t == DType::U8 || t == DType::U16 || t == DType::U32 || t == DType::U64;
}
bool isInteger(DType t) { return isSignedInteger(t) || isUnsignedInteger(t); }

int onnxDTypeCode(DType t) {
  const DTypeInfo* i = info(t);
  return i ? i->onnxCode : 0;
}

std::optional<DType> dtypeFromOnnx(int code) {
  for (const auto& i : kInfos)
    if (i.onnxCode == code) return i.type;
  return std::nullopt;
}

const char* onnxDTypeCodeName(int code) {
  static const char* const kNames[] = {
      "UNDEFINED", "FLOAT",  "UINT8",  "INT8",      "UINT16",     "INT16",
      "INT32",     "INT64",  "STRING", "BOOL",      "FLOAT16",    "DOUBLE",
      "UINT32",    "UINT64", "COMPLEX64", "COMPLEX128", "BFLOAT16", "FLOAT8E4M3FN", "FLOAT8E4M3FNUZ",
      "FLOAT8E5M2", "FLOAT8E5M2FNUZ", "UINT4", "INT4", "FLOAT4E2M1", "FLOAT8E8M0", "UINT2", "INT2"};
  if (code >= 0 && code < int(sizeof(kNames) / sizeof(kNames[0]))) return kNames[code];
  return "UNKNOWN";
}

void dtypeDispatchFailed(DType t) {
  checkFailed("dispatchDType", __FILE__, __LINE__,
              std::string("no C++ type for dtype ") + dtypeName(t));
}

}  // namespace kiln
