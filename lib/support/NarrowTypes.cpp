//===- lib/support/NarrowTypes.cpp - float8 and 4-bit integer values ------===//
//
// The formats of ONNX's float8 types and the value rules of casts to them and
// to the 4-bit integers (see NarrowTypes.h). Rounding works on the value, not
// the bits: a float8 value is a multiple of the quantum 2^(binade - mantissa
// bits), the binade clamped below at the smallest normal one, so rounding to
// nearest even is nearbyint of the value over its quantum.
//
//===----------------------------------------------------------------------===//
#include "kiln/support/NarrowTypes.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "kiln/support/Status.h"

namespace kiln {

std::optional<NarrowType> narrowTypeFromOnnx(int code) {
  if (code >= int(NarrowType::F8E4M3FN) && code <= int(NarrowType::I4)) return NarrowType(code);
  return std::nullopt;
}

bool isNarrowFloat(NarrowType t) { return int(t) <= int(NarrowType::F8E5M2FNUZ); }

DType narrowCarrier(NarrowType t) {
  if (isNarrowFloat(t)) return DType::F32;
  return t == NarrowType::U4 ? DType::U8 : DType::I8;
}

const char* narrowTypeName(NarrowType t) {
  switch (t) {
    case NarrowType::F8E4M3FN: return "f8e4m3fn";
    case NarrowType::F8E4M3FNUZ: return "f8e4m3fnuz";
    case NarrowType::F8E5M2: return "f8e5m2";
    case NarrowType::F8E5M2FNUZ: return "f8e5m2fnuz";
    case NarrowType::U4: return "u4";
    case NarrowType::I4: return "i4";
  }
  return "?";
}

const Float8Format& float8Format(NarrowType t) {
  static constexpr Float8Format kE4M3FN{3, 7, 448.0f, false, false};
  static constexpr Float8Format kE4M3FNUZ{3, 8, 240.0f, false, true};
  static constexpr Float8Format kE5M2{2, 15, 57344.0f, true, false};
  static constexpr Float8Format kE5M2FNUZ{2, 16, 57344.0f, false, true};
  switch (t) {
    case NarrowType::F8E4M3FN: return kE4M3FN;
    case NarrowType::F8E4M3FNUZ: return kE4M3FNUZ;
    case NarrowType::F8E5M2: return kE5M2;
    case NarrowType::F8E5M2FNUZ: return kE5M2FNUZ;
    default: break;
  }
  KILN_CHECK(false, "float8Format of a 4-bit integer type");
  return kE4M3FN;
}

float float8Value(uint8_t bits, NarrowType t) {
  const Float8Format& f = float8Format(t);
  constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
  const int m = f.mantissaBits, exponentMask = (1 << (7 - m)) - 1;
  const bool negative = (bits & 0x80) != 0;
  const int exponent = (bits >> m) & exponentMask, mantissa = bits & ((1 << m) - 1);
  if (f.unsignedZero && bits == 0x80) return kNaN;
  if (t == NarrowType::F8E4M3FN && (bits & 0x7f) == 0x7f) return kNaN;
  if (f.hasInfinity && exponent == exponentMask) {
    if (mantissa != 0) return kNaN;
    return negative ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity();
  }
  float v = exponent == 0 ? std::ldexp(float(mantissa), 1 - f.bias - m)
                          : std::ldexp(float((1 << m) + mantissa), exponent - f.bias - m);
  return negative ? -v : v;
}

float roundToFloat8(float x, NarrowType t, bool saturate) {
  const Float8Format& f = float8Format(t);
  if (std::isnan(x)) return std::numeric_limits<float>::quiet_NaN();
  const double a = std::fabs(double(x));
  double r = a;
  if (std::isfinite(a) && a > 0) {
    int e = 0;
    std::frexp(a, &e);  // a = s * 2^e with s in [0.5, 1): the binade is e - 1
    const int quantum = std::max(e - 1, 1 - f.bias) - f.mantissaBits;
    r = std::ldexp(std::nearbyint(std::ldexp(a, -quantum)), quantum);
  }
  if (r > double(f.maxFinite)) {
    if (saturate) r = f.maxFinite;
    else r = f.hasInfinity ? std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
  }
  if (!std::signbit(x) || std::isnan(r)) return float(r);
  return f.unsignedZero && r == 0 ? 0.0f : float(-r);
}

int wrapToInt4(int64_t v, NarrowType t) {
  const int low = int(uint64_t(v) & 15u);
  return t == NarrowType::I4 && low >= 8 ? low - 16 : low;
}

int castToInt4(double x, NarrowType t) {
  if (!std::isfinite(x)) return 0;
  // fmod is exact, so the low bits of a rounded value of any size survive.
  return wrapToInt4(int64_t(std::fmod(std::round(x), 16.0)), t);
}

int int4Value(uint8_t nibble, NarrowType t) {
  const int v = nibble & 15;
  return t == NarrowType::I4 && v >= 8 ? v - 16 : v;
}

std::pair<int, int> int4Range(NarrowType t) {
  return t == NarrowType::I4 ? std::pair<int, int>{-8, 7} : std::pair<int, int>{0, 15};
}

}  // namespace kiln
