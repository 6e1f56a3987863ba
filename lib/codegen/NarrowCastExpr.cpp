//===- lib/codegen/NarrowCastExpr.cpp - kiln::NarrowCast as an expression -===//
//
// float8 and float4: |x| rounded to nearest even on the multiples of its
// quantum 2^(max(ilogb |x|, 1 - bias) - mantissa bits), which two exact
// power-of-two scalings and a round compute; then overflow and the sign.
// FLOAT8E8M0: the power of two at or below x (2^-127 for the subnormal range,
// where ilogb reads -127), doubled when the rounding mode says so; then the
// ends and NaN. 4- and 2-bit integers: x rounded half away from zero (as ONNX
// Runtime casts), then its low bits.
//
//===----------------------------------------------------------------------===//
#include "NarrowCastExpr.h"

#include <cmath>
#include <limits>

namespace kiln::codegen {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

Expr miniFloatExpr(const Expr& x, NarrowType to, bool saturate) {
  const MiniFloatFormat& f = miniFloatFormat(to);
  saturate = saturate || f.finiteOnly;
  const Expr xf = cast(ScalarType::F32, x);  // f64 reaches the narrow floats through f32, as in ONNX Runtime
  const Expr a = unary(UnaryOp::Abs, xf);
  // Clamped to 127 so that inf and NaN (ilogb 128) keep both scalings within Exp2i's range.
  const Expr binade = minOf(maxOf(unary(UnaryOp::Ilogb, a), floatImm(1 - f.bias)), floatImm(127));
  const Expr bits = floatImm(f.mantissaBits);
  Expr r = unary(UnaryOp::Round, a * unary(UnaryOp::Exp2i, bits - binade)) * unary(UnaryOp::Exp2i, binade - bits);
  const double overflow = saturate       ? double(f.maxFinite)
                          : f.hasInfinity ? std::numeric_limits<double>::infinity()
                                          : kNaN;
  r = select(binary(BinaryOp::Gt, r, floatImm(f.maxFinite)), floatImm(overflow), r);
  r = select(binary(BinaryOp::Lt, xf, floatImm(0)), unary(UnaryOp::Neg, r), r);
  if (f.finiteOnly) r = select(unary(UnaryOp::IsNan, xf), floatImm(f.maxFinite), r);
  return r;
}

Expr e8m0Expr(const Expr& x, bool saturate, ScaleRounding rounding) {
  const Expr a = cast(ScalarType::F32, x);
  const Expr e = unary(UnaryOp::Ilogb, a);
  const Expr normal = unary(UnaryOp::Exp2i, minOf(maxOf(e, floatImm(-126)), floatImm(127)));
  const Expr below = select(binary(BinaryOp::Lt, e, floatImm(-126)), floatImm(0x1p-127), normal);
  Expr r = below;
  if (rounding == ScaleRounding::Up) r = select(binary(BinaryOp::Gt, a, below), below * floatImm(2), below);
  if (rounding == ScaleRounding::Nearest)
    r = select(binary(BinaryOp::Ge, a, below * floatImm(1.5)), below * floatImm(2), below);
  r = select(binary(BinaryOp::Gt, a, floatImm(0x1p127)), floatImm(saturate ? 0x1p127 : kNaN), r);
  r = select(binary(BinaryOp::Lt, a, floatImm(0x1p-127)), floatImm(saturate ? 0x1p-127 : kNaN), r);
  return select(unary(UnaryOp::IsNan, a), floatImm(kNaN), r);
}

Expr narrowIntExpr(const Expr& x, NarrowType to) {
  Expr k;
  if (isFloatType(x->type)) {
    const Expr a = unary(UnaryOp::Abs, x), whole = unary(UnaryOp::Floor, a);
    Expr r = whole + select(binary(BinaryOp::Ge, a - whole, constantOf(x->type, 0.5)), constantOf(x->type, 1),
                            constantOf(x->type, 0));
    r = select(binary(BinaryOp::Lt, x, constantOf(x->type, 0)), unary(UnaryOp::Neg, r), r);
    // Beyond 2^62 (and for inf and NaN) the low bits are 0; the guard keeps the conversion defined.
    const Expr fits = binary(BinaryOp::Lt, unary(UnaryOp::Abs, r), constantOf(x->type, 0x1p62));
    k = cast(ScalarType::I64, select(fits, r, constantOf(x->type, 0)));
  } else {
    k = cast(ScalarType::I64, x);
  }
  const auto [lo, hi] = narrowIntRange(to);
  const int64_t count = int64_t(hi) - lo + 1;
  if (lo == 0) return cast(ScalarType::U8, binary(BinaryOp::FloorMod, k, intImm(count)));
  return cast(ScalarType::I8, binary(BinaryOp::FloorMod, k - intImm(lo), intImm(count)) + intImm(lo));
}

}  // namespace

Expr narrowCastExpr(const Expr& x, NarrowType to, bool saturate, ScaleRounding rounding) {
  if (to == NarrowType::F8E8M0) return e8m0Expr(x, saturate, rounding);
  return isNarrowFloat(to) ? miniFloatExpr(x, to, saturate) : narrowIntExpr(x, to);
}

}  // namespace kiln::codegen
