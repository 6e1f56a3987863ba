//===- kiln/support/DType.h - Element types and type dispatch ------*- C++ -*-===//
//
// The element types kiln tensors can hold, their names (f32, i64, ...), sizes and
// ONNX codes, and `dispatchDType`, which calls a template lambda with the C++
// type that corresponds to a runtime DType:
//
//   dispatchDType(t, [&]<class T>() { sum<T>(...); });
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

#include "kiln/support/Float16.h"

namespace kiln {

enum class DType : uint8_t {
  Undefined = 0,
  F32, F64, F16, BF16,
  I8, I16, I32, I64,
  U8, U16, U32, U64,
  Bool,
};

/// Short name used in the text IR and messages: f32, bf16, i64, bool, ...
const char* dtypeName(DType t);
/// Inverse of dtypeName; nullopt for an unknown name.
std::optional<DType> parseDType(std::string_view name);
size_t dtypeSize(DType t);
bool isFloat(DType t);
bool isInteger(DType t);        ///< signed or unsigned, not bool
bool isSignedInteger(DType t);
bool isUnsignedInteger(DType t);

/// ONNX TensorProto.DataType code of a dtype, and back (nullopt if kiln lacks it).
int onnxDTypeCode(DType t);
std::optional<DType> dtypeFromOnnx(int code);
/// Name of an ONNX data type code, e.g. "STRING" (for messages about unsupported types).
const char* onnxDTypeCodeName(int code);

/// C++ storage type for a DType.
template <DType> struct DTypeToCpp;
template <> struct DTypeToCpp<DType::F32> { using type = float; };
template <> struct DTypeToCpp<DType::F64> { using type = double; };
template <> struct DTypeToCpp<DType::F16> { using type = Half; };
template <> struct DTypeToCpp<DType::BF16> { using type = BFloat16; };
template <> struct DTypeToCpp<DType::I8> { using type = int8_t; };
template <> struct DTypeToCpp<DType::I16> { using type = int16_t; };
template <> struct DTypeToCpp<DType::I32> { using type = int32_t; };
template <> struct DTypeToCpp<DType::I64> { using type = int64_t; };
template <> struct DTypeToCpp<DType::U8> { using type = uint8_t; };
template <> struct DTypeToCpp<DType::U16> { using type = uint16_t; };
template <> struct DTypeToCpp<DType::U32> { using type = uint32_t; };
template <> struct DTypeToCpp<DType::U64> { using type = uint64_t; };
template <> struct DTypeToCpp<DType::Bool> { using type = bool; };

/// DType of a C++ storage type.
template <class T> constexpr DType dtypeOf();
template <> constexpr DType dtypeOf<float>() { return DType::F32; }
template <> constexpr DType dtypeOf<double>() { return DType::F64; }
template <> constexpr DType dtypeOf<Half>() { return DType::F16; }
template <> constexpr DType dtypeOf<BFloat16>() { return DType::BF16; }
template <> constexpr DType dtypeOf<int8_t>() { return DType::I8; }
template <> constexpr DType dtypeOf<int16_t>() { return DType::I16; }
template <> constexpr DType dtypeOf<int32_t>() { return DType::I32; }
template <> constexpr DType dtypeOf<int64_t>() { return DType::I64; }
template <> constexpr DType dtypeOf<uint8_t>() { return DType::U8; }
template <> constexpr DType dtypeOf<uint16_t>() { return DType::U16; }
template <> constexpr DType dtypeOf<uint32_t>() { return DType::U32; }
template <> constexpr DType dtypeOf<uint64_t>() { return DType::U64; }
template <> constexpr DType dtypeOf<bool>() { return DType::Bool; }

template <class T>
inline constexpr bool isHalfLike = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;
template <class T>
inline constexpr bool isFloatLike = std::is_floating_point_v<T> || isHalfLike<T>;

/// Type used to compute with values of T: float for f16/bf16, T otherwise.
template <class T> struct ComputeTypeOf { using type = T; };
template <> struct ComputeTypeOf<Half> { using type = float; };
template <> struct ComputeTypeOf<BFloat16> { using type = float; };
template <class T> using ComputeType = typename ComputeTypeOf<T>::type;

[[noreturn]] void dtypeDispatchFailed(DType t);

/// Calls `f.template operator()<T>()` with T the storage type of `t`.
/// `t` must not be Undefined (checked).
template <class F>
decltype(auto) dispatchDType(DType t, F&& f) {
  switch (t) {
    case DType::F32: return f.template operator()<float>();
    case DType::F64: return f.template operator()<double>();
    case DType::F16: return f.template operator()<Half>();
    case DType::BF16: return f.template operator()<BFloat16>();
    case DType::I8: return f.template operator()<int8_t>();
    case DType::I16: return f.template operator()<int16_t>();
    case DType::I32: return f.template operator()<int32_t>();
    case DType::I64: return f.template operator()<int64_t>();
    case DType::U8: return f.template operator()<uint8_t>();
    case DType::U16: return f.template operator()<uint16_t>();
    case DType::U32: return f.template operator()<uint32_t>();
    case DType::U64: return f.template operator()<uint64_t>();
    case DType::Bool: return f.template operator()<bool>();
    case DType::Undefined: break;
  }
  dtypeDispatchFailed(t);
}

}  // namespace kiln
