//===- lib/support/NarrowTypes.cpp - float8, float4 and 4-/2-bit integers --===//
//
// The formats of ONNX's narrow floating-point types and the value rules of
// casts to them and to the narrow integers (see NarrowTypes.h). Rounding works
// on the value, not the bits: a mini-float value is a multiple of the quantum
// 2^(binade - mantissa bits), the binade clamped below at the smallest normal
// one, so rounding to nearest even is nearbyint of the value over its quantum.
//
//===----------------------------------------------------------------------===//
#include "kiln/support/NarrowTypes.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "kiln/support/Status.h"

namespace kiln {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

bool isNarrowInteger(NarrowType t) {
  return t == NarrowType::U4 || t == NarrowType::I4 || t == NarrowType::U2 || t == NarrowType::I2;
}

bool isSignedNarrowInteger(NarrowType t) { return t == NarrowType::I4 || t == NarrowType::I2; }

/// Cast to FLOAT8E8M0: values are 2^k for k in -127..127.
float roundToE8M0(float x, bool saturate, ScaleRounding rounding) {
  constexpr float kMin = 0x1p-127f, kMax = 0x1p127f;
  if (std::isnan(x)) return kNaN;
  if (!(x >= kMin)) return saturate ? kMin : kNaN;  // zero, negatives and -inf too
  if (x > kMax) return saturate ? kMax : kNaN;
  int e = 0;
  const float s = std::frexp(x, &e);  // x = s * 2^e with s in [0.5, 1)
  const float below = std::ldexp(1.0f, e - 1);
  const bool up = rounding == ScaleRounding::Up ? s > 0.5f : rounding == ScaleRounding::Nearest && s >= 0.75f;
  return up ? 2 * below : below;
}

}  // namespace

std::optional<NarrowType> narrowTypeFromOnnx(int code) {
  if (code >= int(NarrowType::F8E4M3FN) && code <= int(NarrowType::I2)) return NarrowType(code);
  return std::nullopt;
}

bool isNarrowFloat(NarrowType t) { return !isNarrowInteger(t); }

DType narrowCarrier(NarrowType t) {
  if (isNarrowFloat(t)) return DType::F32;
  return isSignedNarrowInteger(t) ? DType::I8 : DType::U8;
}

int narrowBits(NarrowType t) {
  switch (t) {
    case NarrowType::U4: case NarrowType::I4: case NarrowType::F4E2M1: return 4;
    case NarrowType::U2: case NarrowType::I2: return 2;
    default: return 8;
  }
}

const char* narrowTypeName(NarrowType t) {
  switch (t) {
    case NarrowType::F8E4M3FN: return "f8e4m3fn";
    case NarrowType::F8E4M3FNUZ: return "f8e4m3fnuz";
    case NarrowType::F8E5M2: return "f8e5m2";
    case NarrowType::F8E5M2FNUZ: return "f8e5m2fnuz";
    case NarrowType::U4: return "u4";
    case NarrowType::I4: return "i4";
    case NarrowType::F4E2M1: return "f4e2m1";
    case NarrowType::F8E8M0: return "f8e8m0";
    case NarrowType::U2: return "u2";
    case NarrowType::I2: return "i2";
  }
  return "?";
}

std::optional<ScaleRounding> scaleRoundingFromName(std::string_view name) {
  if (name == "up") return ScaleRounding::Up;
  if (name == "down") return ScaleRounding::Down;
  if (name == "nearest") return ScaleRounding::Nearest;
  return std::nullopt;
}

const MiniFloatFormat& miniFloatFormat(NarrowType t) {
  static constexpr MiniFloatFormat kE4M3FN{3, 7, 448.0f, false, false, false};
  static constexpr MiniFloatFormat kE4M3FNUZ{3, 8, 240.0f, false, true, false};
  static constexpr MiniFloatFormat kE5M2{2, 15, 57344.0f, true, false, false};
  static constexpr MiniFloatFormat kE5M2FNUZ{2, 16, 57344.0f, false, true, false};
  static constexpr MiniFloatFormat kE2M1{1, 1, 6.0f, false, false, true};
  switch (t) {
    case NarrowType::F8E4M3FN: return kE4M3FN;
    case NarrowType::F8E4M3FNUZ: return kE4M3FNUZ;
    case NarrowType::F8E5M2: return kE5M2;
    case NarrowType::F8E5M2FNUZ: return kE5M2FNUZ;
    case NarrowType::F4E2M1: return kE2M1;
    default: break;
  }
  KILN_CHECK(false, "miniFloatFormat of a type with no sign-exponent-mantissa format");
  return kE4M3FN;
}

float narrowFloatValue(uint8_t bits, NarrowType t) {
  if (t == NarrowType::F8E8M0) return bits == 0xff ? kNaN : std::ldexp(1.0f, int(bits) - 127);
  const MiniFloatFormat& f = miniFloatFormat(t);
  const int width = narrowBits(t), m = f.mantissaBits, exponentMask = (1 << (width - 1 - m)) - 1;
  const unsigned signBit = 1u << (width - 1);
  bits &= uint8_t((1u << width) - 1);
  const bool negative = (bits & signBit) != 0;
  const int exponent = (bits >> m) & exponentMask, mantissa = bits & ((1 << m) - 1);
  if (f.unsignedZero && bits == signBit) return kNaN;
  if (t == NarrowType::F8E4M3FN && (bits & 0x7f) == 0x7f) return kNaN;
  if (f.hasInfinity && exponent == exponentMask) {
    if (mantissa != 0) return kNaN;
    return negative ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity();
  }
  float v = exponent == 0 ? std::ldexp(float(mantissa), 1 - f.bias - m)
                          : std::ldexp(float((1 << m) + mantissa), exponent - f.bias - m);
  return negative ? -v : v;
}

float roundToNarrowFloat(float x, NarrowType t, bool saturate, ScaleRounding rounding) {
  if (t == NarrowType::F8E8M0) return roundToE8M0(x, saturate, rounding);
  const MiniFloatFormat& f = miniFloatFormat(t);
  if (std::isnan(x)) return f.finiteOnly ? f.maxFinite : kNaN;
  saturate = saturate || f.finiteOnly;
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

int wrapToNarrowInt(int64_t v, NarrowType t) {
  const int width = narrowBits(t);
  const int low = int(uint64_t(v) & ((1u << width) - 1));
  return isSignedNarrowInteger(t) && low >= (1 << (width - 1)) ? low - (1 << width) : low;
}

int castToNarrowInt(double x, NarrowType t) {
  if (!std::isfinite(x)) return 0;
  // fmod is exact, so the low bits of a rounded value of any size survive.
  return wrapToNarrowInt(int64_t(std::fmod(std::round(x), 16.0)), t);
}

int narrowIntValue(uint8_t bits, NarrowType t) { return wrapToNarrowInt(bits, t); }

std::pair<int, int> narrowIntRange(NarrowType t) {
  const int width = narrowBits(t);
  if (isSignedNarrowInteger(t)) return {-(1 << (width - 1)), (1 << (width - 1)) - 1};
  return {0, (1 << width) - 1};
}

}  // namespace kiln
