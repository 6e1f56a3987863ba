//===- kiln/support/NarrowTypes.h - float8 and 4-bit integer values -*- C++ -*-===//
//
// ONNX's narrow element types (FLOAT8E4M3FN, FLOAT8E4M3FNUZ, FLOAT8E5M2,
// FLOAT8E5M2FNUZ, UINT4, INT4) have no DType: kiln computes them on a carrier
// type that holds every value exactly (f32 for the float8 types, u8 and i8 for
// the 4-bit ones). This header holds the formats and the value rules: decoding
// stored bits, and what ONNX Cast to a narrow type makes of a value (as the
// carrier's value). The importer decodes narrow tensors into carriers and
// writes casts to a narrow type as kiln::NarrowCast, which computes these rules.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <optional>
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
};

/// The narrow type of an ONNX data type code, or nullopt for any other code.
std::optional<NarrowType> narrowTypeFromOnnx(int code);
/// The carrier DType: f32 for the float8 types, u8 for UINT4, i8 for INT4.
DType narrowCarrier(NarrowType t);
bool isNarrowFloat(NarrowType t);
/// Short name for messages and the text IR: f8e4m3fn, f8e4m3fnuz, f8e5m2, f8e5m2fnuz, u4, i4.
const char* narrowTypeName(NarrowType t);

/// The parameters of a float8 format.
struct Float8Format {
  int mantissaBits;
  int bias;
  float maxFinite;
  bool hasInfinity;      ///< E5M2: IEEE infinities (and overflow without saturation gives one)
  bool unsignedZero;     ///< the FNUZ types: no -0, one NaN (0x80)
};
/// The format of a float8 type (`t` must be one).
const Float8Format& float8Format(NarrowType t);

/// The value of the float8 bit pattern `bits` of type `t`.
float float8Value(uint8_t bits, NarrowType t);

/// ONNX Cast of `x` to float8 type `t`: rounded to nearest even; values
/// beyond the largest finite one, and infinities, become +/-max when
/// `saturate`, else NaN (or +/-inf for E5M2); NaN stays NaN; the FNUZ types
/// have no -0.
float roundToFloat8(float x, NarrowType t, bool saturate);

/// ONNX Cast of an integer to UINT4 or INT4: its low four bits (INT4: as a
/// signed nibble, -8..7).
int wrapToInt4(int64_t v, NarrowType t);
/// ONNX Cast of a floating-point value to UINT4 or INT4 as ONNX Runtime
/// computes it: rounded half away from zero, then wrapped like an integer;
/// NaN and infinities give 0.
int castToInt4(double x, NarrowType t);

/// The value of nibble `nibble` (0..15) of a 4-bit type.
int int4Value(uint8_t nibble, NarrowType t);
/// The smallest and largest value of UINT4 (0, 15) or INT4 (-8, 7).
std::pair<int, int> int4Range(NarrowType t);

}  // namespace kiln
