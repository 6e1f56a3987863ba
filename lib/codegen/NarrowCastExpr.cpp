//===- lib/codegen/NarrowCastExpr.cpp - kiln::NarrowCast as an expression -===//
//
// float8: |x| rounded to nearest even on the multiples of its quantum
// 2^(max(ilogb |x|, 1 - bias) - mantissa bits), which two exact power-of-two
// scalings and a round compute; then overflow and the sign. UINT4 / INT4: x
// rounded half away from zero (as ONNX Runtime casts), then its low four bits.
//
//===----------------------------------------------------------------------===//
#include "NarrowCastExpr.h"

#include <cmath>
#include <limits>

namespace kiln::codegen {
namespace {

Expr float8Expr(const Expr& x, NarrowType to, bool saturate) {
  const Float8Format& f = float8Format(to);
  const Expr xf = cast(ScalarType::F32, x);  // f64 reaches float8 through f32, as in ONNX Runtime
  const Expr a = unary(UnaryOp::Abs, xf);
  const Expr binade = maxOf(unary(UnaryOp::Ilogb, a), floatImm(1 - f.bias));
  const Expr bits = floatImm(f.mantissaBits);
  Expr r = unary(UnaryOp::Round, a * unary(UnaryOp::Exp2i, bits - binade)) * unary(UnaryOp::Exp2i, binade - bits);
  const double overflow = saturate       ? double(f.maxFinite)
                          : f.hasInfinity ? std::numeric_limits<double>::infinity()
                                          : std::numeric_limits<double>::quiet_NaN();
  r = select(binary(BinaryOp::Gt, r, floatImm(f.maxFinite)), floatImm(overflow), r);
  return select(binary(BinaryOp::Lt, xf, floatImm(0)), unary(UnaryOp::Neg, r), r);
}

Expr int4Expr(const Expr& x, NarrowType to) {
  Expr k;
  if (isFloatType(x->type)) {
    const Expr a = unary(UnaryOp::Abs, x), whole = unary(UnaryOp::Floor, a);
    Expr r = whole + select(binary(BinaryOp::Ge, a - whole, constantOf(x->type, 0.5)), constantOf(x->type, 1),
                            constantOf(x->type, 0));
    r = select(binary(BinaryOp::Lt, x, constantOf(x->type, 0)), unary(UnaryOp::Neg, r), r);
    // Beyond 2^62 (and for inf and NaN) the low four bits are 0; the guard keeps the conversion defined.
    const Expr fits = binary(BinaryOp::Lt, unary(UnaryOp::Abs, r), constantOf(x->type, 0x1p62));
    k = cast(ScalarType::I64, select(fits, r, constantOf(x->type, 0)));
  } else {
    k = cast(ScalarType::I64, x);
  }
  if (to == NarrowType::U4) return cast(ScalarType::U8, binary(BinaryOp::FloorMod, k, intImm(16)));
  return cast(ScalarType::I8, binary(BinaryOp::FloorMod, k + intImm(8), intImm(16)) - intImm(8));
}

}  // namespace

Expr narrowCastExpr(const Expr& x, NarrowType to, bool saturate) {
  return isNarrowFloat(to) ? float8Expr(x, to, saturate) : int4Expr(x, to);
}

}  // namespace kiln::codegen
