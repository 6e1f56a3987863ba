//===- lib/support/Float16.cpp - binary16 <-> binary32 conversion ----------===//
//
// Bit-exact conversions between IEEE half and float, with round-to-nearest-even,
// subnormals, infinities and NaN handled.
//
//===----------------------------------------------------------------------===//
#include "kiln/support/Float16.h"

namespace kiln {

uint16_t Half::fromFloat(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t absx = x & 0x7fffffffu;
  if (absx > 0x7f800000u) return uint16_t(sign | 0x7e00u | ((absx >> 13) & 0x3ffu));  // NaN
  if (absx >= 0x47800000u) return uint16_t(sign | 0x7c00u);  // >= 65536 or inf
  if (absx < 0x38800000u) {  // result is a half subnormal or zero
    if (absx < 0x33000000u) return uint16_t(sign);  // below 2^-25: rounds to zero
    // value = M * 2^(e-150) with M the 24-bit significand; half unit is 2^-24.
    uint32_t mant = (absx & 0x7fffffu) | 0x800000u;
    int rshift = 126 - int(absx >> 23);
    uint32_t result = mant >> rshift;
    uint32_t rem = mant & ((1u << rshift) - 1);
    uint32_t halfway = 1u << (rshift - 1);
    if (rem > halfway || (rem == halfway && (result & 1))) ++result;
    return uint16_t(sign | result);
  }
  // normal
  uint32_t result = ((absx - 0x38000000u) >> 13);
  uint32_t rem = absx & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (result & 1))) ++result;
  if (result >= 0x7c00u) return uint16_t(sign | 0x7c00u);
  return uint16_t(sign | result);
}

float Half::toFloat(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t out;
  if (exp == 0) {
    if (mant == 0) {
      out = sign;
    } else {  // subnormal: normalise
      int e = -1;
      do {
        ++e;
        mant <<= 1;
      } while ((mant & 0x400u) == 0);
      mant &= 0x3ffu;
      out = sign | (uint32_t(127 - 15 - e) << 23) | (mant << 13);
    }
  } else if (exp == 0x1f) {
    out = sign | 0x7f800000u | (mant << 13);
  } else {
    out = sign | ((exp + 112) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &out, 4);
  return f;
}

}  // namespace kiln
