//===- kiln/support/Float16.h - IEEE half and bfloat16 storage types -*- C++ -*-===//
//
// 16-bit floating-point storage types. Arithmetic happens in float: both types
// convert implicitly to and from float, rounding to nearest even on the way in,
// which is what ONNX Runtime and PyTorch do for f16/bf16 CPU kernels.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <cstring>

namespace kiln {

/// IEEE 754 binary16.
struct Half {
  uint16_t bits = 0;
  Half() = default;
  Half(float f) : bits(fromFloat(f)) {}  // NOLINT: implicit like a builtin float type
  operator float() const { return toFloat(bits); }  // NOLINT
  static Half fromBits(uint16_t b) { Half h; h.bits = b; return h; }
  static uint16_t fromFloat(float f);
  static float toFloat(uint16_t h);
};

/// bfloat16: the upper half of a float32.
struct BFloat16 {
  uint16_t bits = 0;
  BFloat16() = default;
  BFloat16(float f) : bits(fromFloat(f)) {}  // NOLINT
  operator float() const {  // NOLINT
    uint32_t u = uint32_t(bits) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
  static BFloat16 fromBits(uint16_t b) { BFloat16 h; h.bits = b; return h; }
  static uint16_t fromFloat(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40);  // quiet NaN
    u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest even
    return uint16_t(u >> 16);
  }
};

}  // namespace kiln
