//===- kiln/support/FastMath.h - Fast approximations of exp, erf, tanh -*- C++ -*-===//
//
// The approximations the fast-math pass substitutes (as kiln::FastExp,
// kiln::FastErf, kiln::FastTanh, kiln::FastSoftmax and kiln::Gelu with
// approximate="fast"). The interpreter's kernels call these functions and the
// code generators emit the same formulas, so every target computes the same
// values. Branch-free apart from clamping, no libm calls: they vectorise.
// Maximum errors over all finite f32 inputs, measured by tests/unit:
//   fastExp   relative 3e-7 (x in [-87.3, 88.7]; 0 below, +inf above)
//   fastErf   absolute 5e-7
//   fastTanh  absolute 2e-7
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace kiln {

/// Documented maximum errors (checked by tests/unit/SupportTest.cpp).
inline constexpr double kFastExpMaxRelError = 3e-7;
inline constexpr double kFastErfMaxAbsError = 5e-7;
inline constexpr double kFastTanhMaxAbsError = 2e-7;

/// e^x: x = n ln2 + r with |r| <= ln2/2 (Cody-Waite split of ln2), e^r by a
/// degree-6 Taylor polynomial, 2^n put into the exponent bits.
inline float fastExp(float x) {
  if (!(x > -87.33654f)) return x != x ? x : 0.0f;  // NaN stays NaN
  if (x > 88.72283f) return INFINITY;
  const float n = std::nearbyint(x * 1.44269504088896341f);
  const float r = (x - n * 0.693359375f) + n * 2.12194440e-4f;  // ln2 = 0.693359375 - 2.12194440e-4
  float p = 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  // 2^n in two steps, so n = 128 (x just below 88.72) does not overflow the exponent.
  int32_t e = int32_t(n);
  int32_t half = e / 2;
  uint32_t b1 = uint32_t(half + 127) << 23, b2 = uint32_t(e - half + 127) << 23;
  float s1, s2;
  std::memcpy(&s1, &b1, 4);
  std::memcpy(&s2, &b2, 4);
  return p * s1 * s2;
}

/// erf(x) = 1 - t·P(t)·e^{-x²}, t = 1/(1 + p|x|) (Abramowitz & Stegun 7.1.26),
/// odd in x; the Maclaurin series below 0.25, where the subtraction loses bits.
inline float fastErf(float x) {
  const float a = std::fabs(x);
  if (a < 0.25f) {
    const float x2 = x * x;
    return x * (1.12837917f + x2 * (-0.37612639f + x2 * (0.11283792f + x2 * -0.02686617f)));
  }
  const float t = 1.0f / (1.0f + 0.3275911f * a);
  float p = 1.061405429f;
  p = p * t - 1.453152027f;
  p = p * t + 1.421413741f;
  p = p * t - 0.284496736f;
  p = p * t + 0.254829592f;
  const float y = 1.0f - p * t * fastExp(-a * a);
  return std::copysign(y, x);
}

/// tanh(x) = sign(x)·(1 - 2/(e^{2|x|} + 1)), and x·(1 - x²/3 + 2x⁴/15) near 0
/// where the subtraction would cancel.
inline float fastTanh(float x) {
  const float a = std::fabs(x);
  if (a < 0.0625f) {
    const float x2 = x * x;
    return x * (1.0f + x2 * (-1.0f / 3.0f + x2 * (2.0f / 15.0f)));
  }
  if (a > 9.0f) return std::copysign(1.0f, x);
  return std::copysign(1.0f - 2.0f / (fastExp(2.0f * a) + 1.0f), x);
}

}  // namespace kiln
