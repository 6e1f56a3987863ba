//===- kiln/support/NarrowTypes.h - float8, float4 and 4-/2-bit integers -*- C++ -*-===//
//
// ONNX's narrow element types (the float8 types, FLOAT8E8M0, FLOAT4E2M1,
// UINT4/INT4 and UINT2/INT2) have no DType: kiln computes them on a carrier
// type that holds every value exactly (f32 for the floating-point ones, u8 and
// i8 for the integers). This header holds the formats and the value rules:
// decoding stored bits, and what ONNX Cast to a narrow type makes of a value
// (as the carrier's value). The importer decodes narrow tensors into carriers
// and writes casts to a narrow type as kiln::NarrowCast, which computes these rules.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>

#include "kiln/support/DType.h"

namespace kiln {

/// ONNX TensorProto.DataType codes of the narrow types kiln computes on carriers.
enum class NarrowType : int {
  F8E4M3FN = 17,
  F8E4M3FNUZ = 18,
  F8E5M2 = 19,
  F8E5M2FNUZ = 20,
  U4 = 21,
  I4 = 22,
  F4E2M1 = 23,
  F8E8M0 = 24,
  U2 = 25,
  I2 = 26,
};

/// The narrow type of an ONNX data type code, or nullopt for any other code.
std::optional<NarrowType> narrowTypeFromOnnx(int code);
/// The carrier DType: f32 for the floating-point types, u8 for UINT4 and
/// UINT2, i8 for INT4 and INT2.
DType narrowCarrier(NarrowType t);
/// The float8 types, FLOAT8E8M0 and FLOAT4E2M1.
bool isNarrowFloat(NarrowType t);
/// Bits a stored element takes: 8, 4 (packed two to a byte) or 2 (four to a byte).
int narrowBits(NarrowType t);
/// Short name for messages and the text IR: f8e4m3fn, f8e4m3fnuz, f8e5m2,
/// f8e5m2fnuz, f8e8m0, f4e2m1, u4, i4, u2, i2.
const char* narrowTypeName(NarrowType t);

/// How a cast to FLOAT8E8M0 picks between the two powers of two around a
/// value (Cast-24's round_mode; ties of "nearest" go up, as in ONNX Runtime).
enum class ScaleRounding : int { Up = 0, Down = 1, Nearest = 2 };
std::optional<ScaleRounding> scaleRoundingFromName(std::string_view name);

/// The parameters of a sign-exponent-mantissa type: the float8 types but
/// E8M0, and FLOAT4E2M1.
struct MiniFloatFormat {
  int mantissaBits;
  int bias;
  float maxFinite;
  bool hasInfinity;      ///< E5M2: IEEE infinities (and overflow without saturation gives one)
  bool unsignedZero;     ///< the FNUZ types: no -0, one NaN (0x80)
  bool finiteOnly;       ///< FLOAT4E2M1: no NaN either; casts always saturate and NaN becomes +max
};
/// The format of `t`, which must be a float8 type other than E8M0, or FLOAT4E2M1.
const MiniFloatFormat& miniFloatFormat(NarrowType t);

/// The value of the stored pattern `bits` (its low narrowBits(t) bits) of a
/// floating-point narrow type.
float narrowFloatValue(uint8_t bits, NarrowType t);

/// ONNX Cast of `x` to the floating-point narrow type `t`.
/// - float8: rounded to nearest even; values beyond the largest finite one,
///   and infinities, become +/-max when `saturate`, else NaN (or +/-inf for
///   E5M2); NaN stays NaN; the FNUZ types have no -0.
/// - FLOAT4E2M1: rounded to nearest even, always saturating; NaN becomes 6.
/// - FLOAT8E8M0 (2^-127 .. 2^127, unsigned): a power of two picked by
///   `rounding`; values below 2^-127 (zero and negatives too) and above 2^127
///   (+inf too) become the nearest end when `saturate`, else NaN.
float roundToNarrowFloat(float x, NarrowType t, bool saturate, ScaleRounding rounding = ScaleRounding::Up);

/// ONNX Cast of an integer to a 4- or 2-bit integer type: its low bits (as a
/// signed value for INT4 and INT2).
int wrapToNarrowInt(int64_t v, NarrowType t);
/// ONNX Cast of a floating-point value to a 4- or 2-bit integer type as ONNX
/// Runtime computes it: rounded half away from zero, then wrapped like an
/// integer; NaN and infinities give 0.
int castToNarrowInt(double x, NarrowType t);

/// The value of the stored pattern `bits` (its low narrowBits(t) bits) of a
/// 4- or 2-bit integer type.
int narrowIntValue(uint8_t bits, NarrowType t);
/// The smallest and largest value: UINT4 (0, 15), INT4 (-8, 7), UINT2 (0, 3), INT2 (-2, 1).
std::pair<int, int> narrowIntRange(NarrowType t);

}  // namespace kiln
