//===- lib/runtime/interpreter/kernels/ElementwiseKernels.cpp - Elementwise ops -===//
//
// Unary math and activations, broadcasting arithmetic/comparison/logic,
// variadic Max/Min/Sum/Mean, Clip, Cast, Where, PRelu, BitShift, the Bitwise ops, Identity.
// Floats compute in ComputeType (float for f16/bf16); integers wrap.
//
//===----------------------------------------------------------------------===//
#include <cstring>
#include <functional>

#include "../KernelContext.h"
#include "KernelFamilies.h"
#include "KernelUtils.h"
#include "kiln/support/NarrowTypes.h"

namespace kiln::runtime {
using namespace kernels;

namespace {

// --- unary ----------------------------------------------------------------

/// y = f(x) elementwise; f takes and returns ComputeType<T>. `numeric` also
/// accepts integer types (float types only otherwise).
template <bool numeric, class F>
Status unary(KernelContext& ctx, F f) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.allocate(0);
  auto body = [&]<class T>() {
    const T* a = x.data<T>();
    T* o = y.mutableData<T>();
    for (int64_t i = 0; i < x.numElements(); ++i) o[i] = T(f(ComputeType<T>(a[i])));
  };
  if constexpr (numeric) return forNumeric(x.dtype(), body);
  else return forFloat(x.dtype(), body);
}
template <class F>
Status unaryFloat(KernelContext& ctx, F f) {
  return unary<false>(ctx, f);
}
template <class F>
Status unaryNumeric(KernelContext& ctx, F f) {
  return unary<true>(ctx, f);
}

#define KILN_UNARY_FLOAT(NAME, EXPR)                                         \
  Status NAME(KernelContext& ctx) {                                          \
    return unaryFloat(ctx, [&](auto x) -> decltype(x) { return EXPR; });     \
  }
KILN_UNARY_FLOAT(kExp, std::exp(x))
KILN_UNARY_FLOAT(kLog, std::log(x))
KILN_UNARY_FLOAT(kSin, std::sin(x))
KILN_UNARY_FLOAT(kCos, std::cos(x))
KILN_UNARY_FLOAT(kTan, std::tan(x))
KILN_UNARY_FLOAT(kAsin, std::asin(x))
KILN_UNARY_FLOAT(kAcos, std::acos(x))
KILN_UNARY_FLOAT(kAtan, std::atan(x))
KILN_UNARY_FLOAT(kSinh, std::sinh(x))
KILN_UNARY_FLOAT(kCosh, std::cosh(x))
KILN_UNARY_FLOAT(kAsinh, std::asinh(x))
KILN_UNARY_FLOAT(kAcosh, std::acosh(x))
KILN_UNARY_FLOAT(kAtanh, std::atanh(x))
KILN_UNARY_FLOAT(kSigmoid, x >= 0 ? 1 / (1 + std::exp(-x)) : std::exp(x) / (1 + std::exp(x)))
KILN_UNARY_FLOAT(kTanh, std::tanh(x))
KILN_UNARY_FLOAT(kSoftplus, x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x)))
KILN_UNARY_FLOAT(kSoftsign, x / (1 + std::fabs(x)))
KILN_UNARY_FLOAT(kErf, std::erf(x))
KILN_UNARY_FLOAT(kSqrt, std::sqrt(x))
KILN_UNARY_FLOAT(kReciprocal, 1 / x)
KILN_UNARY_FLOAT(kFloor, std::floor(x))
KILN_UNARY_FLOAT(kCeil, std::ceil(x))
KILN_UNARY_FLOAT(kRound, std::nearbyint(x))
KILN_UNARY_FLOAT(kHardSwish, x * std::max<decltype(x)>(0, std::min<decltype(x)>(1, x / 6 + decltype(x)(0.5))))
#undef KILN_UNARY_FLOAT

Status kAbs(KernelContext& ctx) {
  return unaryNumeric(ctx, [](auto x) -> decltype(x) {
    if constexpr (std::is_unsigned_v<decltype(x)>) return x;
    else if constexpr (std::is_integral_v<decltype(x)>) return x < 0 ? wrapSub<decltype(x)>(0, x) : x;
    else return std::fabs(x);
  });
}
Status kNeg(KernelContext& ctx) {
  return unaryNumeric(ctx, [](auto x) -> decltype(x) { return wrapSub<decltype(x)>(0, x); });
}
Status kSign(KernelContext& ctx) {
  return unaryNumeric(ctx, [](auto x) -> decltype(x) {
    using C = decltype(x);
    return x > C(0) ? C(1) : (x < C(0) ? C(-1) : C(0));
  });
}
Status kRelu(KernelContext& ctx) {
  return unaryNumeric(ctx, [](auto x) -> decltype(x) { return x > decltype(x)(0) ? x : decltype(x)(0); });
}
Status kNot(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.allocate(0);
  const bool* a = x.data<bool>();
  bool* o = y.mutableData<bool>();
  for (int64_t i = 0; i < x.numElements(); ++i) o[i] = !a[i];
  return Status::ok();
}

Status kElu(KernelContext& ctx) {
  double alpha = ctx.node().getFloat("alpha");
  return unaryFloat(ctx, [&](auto x) -> decltype(x) { return x >= 0 ? x : decltype(x)(alpha * std::expm1(x)); });
}
Status kCelu(KernelContext& ctx) {
  double alpha = ctx.node().getFloat("alpha");
  return unaryFloat(ctx, [&](auto x) -> decltype(x) {
    return decltype(x)(std::max<double>(0, x) + std::min<double>(0, alpha * std::expm1(double(x) / alpha)));
  });
}
Status kSelu(KernelContext& ctx) {
  double alpha = ctx.node().getFloat("alpha"), gamma = ctx.node().getFloat("gamma");
  return unaryFloat(ctx, [&](auto x) -> decltype(x) {
    return decltype(x)(x > 0 ? gamma * x : gamma * alpha * std::expm1(double(x)));
  });
}
Status kLeakyRelu(KernelContext& ctx) {
  auto alpha = ctx.node().getFloat("alpha");
  return unaryFloat(ctx, [&](auto x) -> decltype(x) { return x >= 0 ? x : decltype(x)(alpha) * x; });
}
Status kHardSigmoid(KernelContext& ctx) {
  auto alpha = ctx.node().getFloat("alpha"), beta = ctx.node().getFloat("beta");
  return unaryFloat(ctx, [&](auto x) -> decltype(x) {
    using C = decltype(x);
    return std::max<C>(0, std::min<C>(1, C(alpha) * x + C(beta)));
  });
}
Status kThresholdedRelu(KernelContext& ctx) {
  auto alpha = ctx.node().getFloat("alpha");
  return unaryFloat(ctx, [&](auto x) -> decltype(x) { return x > decltype(x)(alpha) ? x : decltype(x)(0); });
}
Status kShrink(KernelContext& ctx) {
  double bias = ctx.node().getFloat("bias"), lambd = ctx.node().getFloat("lambd");
  return unaryNumeric(ctx, [&](auto x) -> decltype(x) {
    double v = double(x);
    return decltype(x)(v < -lambd ? v + bias : (v > lambd ? v - bias : 0.0));
  });
}
Status kIsNaN(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.allocate(0);
  return forFloat(x.dtype(), [&]<class T>() {
    for (int64_t i = 0; i < x.numElements(); ++i) y.mutableData<bool>()[i] = std::isnan(float(x.data<T>()[i]));
  });
}
Status kIsInf(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.allocate(0);
  bool neg = ctx.node().getInt("detect_negative") != 0, pos = ctx.node().getInt("detect_positive") != 0;
  return forFloat(x.dtype(), [&]<class T>() {
    for (int64_t i = 0; i < x.numElements(); ++i) {
      double v = double(ComputeType<T>(x.data<T>()[i]));
      y.mutableData<bool>()[i] = std::isinf(v) && ((v > 0 && pos) || (v < 0 && neg));
    }
  });
}

Status kIdentity(KernelContext& ctx) {
  ctx.setOutput(0, ctx.value(0));
  return Status::ok();
}

Status kCast(KernelContext& ctx) {
  const ir::TensorType& t = ctx.outputType(0).tensor();
  ctx.setOutput(0, ctx.input(0).castTo(t.dtype()));
  return Status::ok();
}

/// kiln::BitCast: the input's bytes under the output's type (widths match).
Status kBitCast(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.allocate(0);
  if (y.numElements() != x.numElements() || dtypeSize(y.dtype()) != dtypeSize(x.dtype()))
    return kernelError("bitcast between types of different widths");
  std::memcpy(y.mutableRawData(), x.rawData(), size_t(x.numElements()) * dtypeSize(x.dtype()));
  return Status::ok();
}

/// A value cast to a 4- or 2-bit integer type: integers wrap, floating-point values round first.
template <class T>
int narrowIntOf(T v, NarrowType to) {
  if constexpr (isFloatLike<T>) return castToNarrowInt(double(ComputeType<T>(v)), to);
  else return wrapToNarrowInt(int64_t(v), to);
}

/// kiln::NarrowCast: ONNX Cast to a narrow type, as its carrier's values.
/// Floating-point inputs reach the narrow floats through f32, as in ONNX Runtime.
Status kNarrowCast(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  std::optional<NarrowType> to = narrowTypeFromOnnx(int(ctx.node().getInt("to")));
  if (!to) return kernelError("NarrowCast to a type that is not narrow");
  const bool saturate = ctx.node().getInt("saturate") != 0;
  const auto rounding = ScaleRounding(ctx.node().getInt("round_mode"));
  Tensor& y = ctx.allocate(0);
  return dispatchDType(x.dtype(), [&]<class T>() -> Status {
    const T* in = x.data<T>();
    auto write = [&]<class C>(auto rule) {
      C* out = y.mutableData<C>();
      for (int64_t i = 0; i < x.numElements(); ++i) out[i] = C(rule(in[i]));
    };
    if (isNarrowFloat(*to))
      write.template operator()<float>(
          [&](T v) { return roundToNarrowFloat(float(ComputeType<T>(v)), *to, saturate, rounding); });
    else if (narrowCarrier(*to) == DType::U8)
      write.template operator()<uint8_t>([&](T v) { return narrowIntOf(v, *to); });
    else
      write.template operator()<int8_t>([&](T v) { return narrowIntOf(v, *to); });
    return Status::ok();
  });
}

// --- broadcasting binary ------------------------------------------------------

/// out[i] = f(a[ia], b[ib]) with numpy broadcasting; TA/TB input types, TO output type.
template <class TA, class TB, class TO, class F>
void broadcast2(const Tensor& a, const Tensor& b, Tensor& out, F f) {
  const TA* pa = a.data<TA>();
  const TB* pb = b.data<TB>();
  TO* po = out.mutableData<TO>();
  if (a.dims() == b.dims()) {
    for (int64_t i = 0; i < out.numElements(); ++i) po[i] = f(pa[i], pb[i]);
    return;
  }
  if (b.numElements() == 1 && a.dims() == out.dims()) {
    for (int64_t i = 0; i < out.numElements(); ++i) po[i] = f(pa[i], pb[0]);
    return;
  }
  std::array<Dims, 2> strides = {broadcastStrides(a.dims(), out.dims()), broadcastStrides(b.dims(), out.dims())};
  forEachBroadcast<2>(out.dims(), strides, [&](int64_t o, const std::array<int64_t, 2>& off) {
    po[o] = f(pa[off[0]], pb[off[1]]);
  });
}

enum class Arith { Add, Sub, Mul, Div };

template <Arith op>
Status kArith(KernelContext& ctx) {
  const Tensor &a = ctx.input(0), &b = ctx.input(1);
  Tensor& out = ctx.allocate(0);
  bool divByZero = false;
  Status s = forNumeric(a.dtype(), [&]<class T>() {
    broadcast2<T, T, T>(a, b, out, [&](T x, T y) -> T {
      if constexpr (op == Arith::Add) return wrapAdd(x, y);
      if constexpr (op == Arith::Sub) return wrapSub(x, y);
      if constexpr (op == Arith::Mul) return wrapMul(x, y);
      if constexpr (op == Arith::Div) {
        if constexpr (std::is_integral_v<T>) {
          if (y == 0) {
            divByZero = true;
            return 0;
          }
          if constexpr (std::is_signed_v<T>)
            if (y == T(-1)) return wrapSub<T>(0, x);  // avoids MIN / -1 overflow
          return T(x / y);
        } else {
          return T(ComputeType<T>(x) / ComputeType<T>(y));
        }
      }
    });
  });
  KILN_TRY(s);
  if (divByZero) return kernelError("integer division by zero");
  return Status::ok();
}

Status kPow(KernelContext& ctx) {
  const Tensor &a = ctx.input(0), &b = ctx.input(1);
  Tensor& out = ctx.allocate(0);
  return forNumeric(a.dtype(), [&]<class T>() {
    (void)forNumeric(b.dtype(), [&]<class E>() {
      broadcast2<T, E, T>(a, b, out, [](T x, E y) -> T {
        T r;
        if constexpr (std::is_same_v<T, float> && (std::is_same_v<E, float> || isHalfLike<E>))
          r = std::pow(x, float(y));
        else if constexpr (isHalfLike<T>)
          r = T(std::pow(float(x), float(ComputeType<E>(y))));
        else
          r = convertValue<T, double>(std::pow(double(x), double(ComputeType<E>(y))));
        return r;
      });
    });
  });
}

Status kMod(KernelContext& ctx) {
  const Tensor &a = ctx.input(0), &b = ctx.input(1);
  Tensor& out = ctx.allocate(0);
  bool fmod = ctx.node().getInt("fmod") != 0;
  if (isFloat(a.dtype()) && !fmod) return kernelError("Mod of floating-point values needs fmod=1");
  bool divByZero = false;
  Status s = forNumeric(a.dtype(), [&]<class T>() {
    broadcast2<T, T, T>(a, b, out, [&](T x, T y) -> T {
      if constexpr (std::is_integral_v<T>) {
        if (y == 0) {
          divByZero = true;
          return 0;
        }
        if constexpr (std::is_signed_v<T>)
          if (y == T(-1)) return 0;
        T r = T(x % y);
        if (!fmod && r != 0 && ((r < 0) != (y < 0))) r = T(r + y);
        return r;
      } else {
        return T(std::fmod(ComputeType<T>(x), ComputeType<T>(y)));
      }
    });
  });
  KILN_TRY(s);
  if (divByZero) return kernelError("integer modulo by zero");
  return Status::ok();
}

Status kBitShift(KernelContext& ctx) {
  const Tensor &a = ctx.input(0), &b = ctx.input(1);
  Tensor& out = ctx.allocate(0);
  bool left = ctx.node().getString("direction") == "LEFT";
  return forInteger(a.dtype(), [&]<class T>() {
    if constexpr (std::is_unsigned_v<T>) {
      broadcast2<T, T, T>(a, b, out, [&](T x, T y) -> T {
        if (y >= sizeof(T) * 8) return 0;
        using W = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, T>;
        return T(left ? W(x) << y : W(x) >> y);
      });
    }
  });
}

/// BitwiseAnd/Or/Xor: `Op` (std::bit_and<>, ...) of broadcast integers.
template <class Op>
Status kBitwise(KernelContext& ctx) {
  const Tensor &a = ctx.input(0), &b = ctx.input(1);
  Tensor& out = ctx.allocate(0);
  return forInteger(a.dtype(), [&]<class T>() { broadcast2<T, T, T>(a, b, out, [](T x, T y) { return T(Op{}(x, y)); }); });
}
Status kBitwiseNot(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.allocate(0);
  return forInteger(x.dtype(), [&]<class T>() {
    for (int64_t i = 0; i < x.numElements(); ++i) y.mutableData<T>()[i] = T(~x.data<T>()[i]);
  });
}

enum class Cmp { Eq, Lt, Gt, Le, Ge };
template <Cmp op>
Status kCompare(KernelContext& ctx) {
  const Tensor &a = ctx.input(0), &b = ctx.input(1);
  Tensor& out = ctx.allocate(0);
  return forAny(a.dtype(), [&]<class T>() {
    broadcast2<T, T, bool>(a, b, out, [](T x, T y) -> bool {
      auto cx = ComputeType<T>(x), cy = ComputeType<T>(y);
      if constexpr (op == Cmp::Eq) return cx == cy;
      if constexpr (op == Cmp::Lt) return cx < cy;
      if constexpr (op == Cmp::Gt) return cx > cy;
      if constexpr (op == Cmp::Le) return cx <= cy;
      return cx >= cy;
    });
  });
}

enum class Logic { And, Or, Xor };
template <Logic op>
Status kLogic(KernelContext& ctx) {
  Tensor& out = ctx.allocate(0);
  broadcast2<bool, bool, bool>(ctx.input(0), ctx.input(1), out, [](bool x, bool y) {
    if constexpr (op == Logic::And) return x && y;
    if constexpr (op == Logic::Or) return x || y;
    return x != y;
  });
  return Status::ok();
}

Status kPRelu(KernelContext& ctx) {
  const Tensor &x = ctx.input(0), &slope = ctx.input(1);
  Tensor& out = ctx.allocate(0);
  return forNumeric(x.dtype(), [&]<class T>() {
    broadcast2<T, T, T>(x, slope, out, [](T v, T s) -> T {
      return ComputeType<T>(v) < 0 ? T(ComputeType<T>(v) * ComputeType<T>(s)) : v;
    });
  });
}

enum class Fold { Max, Min, Sum, Mean };
template <Fold op>
Status kVariadic(KernelContext& ctx) {
  Tensor& out = ctx.allocate(0);
  const Dims& dims = out.dims();
  DType dt = out.dtype();
  return forNumeric(dt, [&]<class T>() {
    using C = ComputeType<T>;
    std::vector<C> acc(static_cast<size_t>(out.numElements()));
    for (size_t k = 0; k < ctx.numInputs(); ++k) {
      const Tensor& in = ctx.input(k);
      const T* p = in.data<T>();
      std::array<Dims, 1> strides = {broadcastStrides(in.dims(), dims)};
      forEachBroadcast<1>(dims, strides, [&](int64_t o, const std::array<int64_t, 1>& off) {
        C v = C(p[off[0]]);
        C& a = acc[size_t(o)];
        if (k == 0) {
          a = v;
        } else if constexpr (op == Fold::Max) {
          a = (a != a || v != v) ? (a != a ? a : v) : std::max(a, v);  // NaN propagates
        } else if constexpr (op == Fold::Min) {
          a = (a != a || v != v) ? (a != a ? a : v) : std::min(a, v);
        } else {
          a = wrapAdd<C>(a, v);
        }
      });
    }
    T* o = out.mutableData<T>();
    for (int64_t i = 0; i < out.numElements(); ++i) {
      C v = acc[size_t(i)];
      if constexpr (op == Fold::Mean) v = C(v / C(ctx.numInputs()));
      o[i] = T(v);
    }
  });
}

Status kWhere(KernelContext& ctx) {
  const Tensor &c = ctx.input(0), &x = ctx.input(1), &y = ctx.input(2);
  Tensor& out = ctx.allocate(0);
  return forAny(x.dtype(), [&]<class T>() {
    const bool* pc = c.data<bool>();
    const T *px = x.data<T>(), *py = y.data<T>();
    T* po = out.mutableData<T>();
    std::array<Dims, 3> strides = {broadcastStrides(c.dims(), out.dims()), broadcastStrides(x.dims(), out.dims()),
                                   broadcastStrides(y.dims(), out.dims())};
    forEachBroadcast<3>(out.dims(), strides, [&](int64_t o, const std::array<int64_t, 3>& off) {
      po[o] = pc[off[0]] ? px[off[1]] : py[off[2]];
    });
  });
}

Status kClip(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& out = ctx.allocate(0);
  return forNumeric(x.dtype(), [&]<class T>() {
    using C = ComputeType<T>;
    C lo = std::numeric_limits<C>::lowest(), hi = std::numeric_limits<C>::max();
    if constexpr (std::is_floating_point_v<C>) {
      lo = -std::numeric_limits<C>::infinity();
      hi = std::numeric_limits<C>::infinity();
    }
    if (ctx.hasInput(1)) lo = C(ctx.input(1).data<T>()[0]);
    if (ctx.hasInput(2)) hi = C(ctx.input(2).data<T>()[0]);
    const T* p = x.data<T>();
    T* o = out.mutableData<T>();
    for (int64_t i = 0; i < x.numElements(); ++i) {
      C v = C(p[i]);
      o[i] = T(v < lo ? lo : (v > hi ? hi : v));
    }
  });
}

}  // namespace

void registerElementwiseKernels(KernelRegistry& r) {
  r.add("Exp", kExp);
  r.add("Log", kLog);
  r.add("Sin", kSin);
  r.add("Cos", kCos);
  r.add("Tan", kTan);
  r.add("Asin", kAsin);
  r.add("Acos", kAcos);
  r.add("Atan", kAtan);
  r.add("Sinh", kSinh);
  r.add("Cosh", kCosh);
  r.add("Asinh", kAsinh);
  r.add("Acosh", kAcosh);
  r.add("Atanh", kAtanh);
  r.add("Sigmoid", kSigmoid);
  r.add("Tanh", kTanh);
  r.add("Softplus", kSoftplus);
  r.add("Softsign", kSoftsign);
  r.add("Erf", kErf);
  r.add("Sqrt", kSqrt);
  r.add("Reciprocal", kReciprocal);
  r.add("Floor", kFloor);
  r.add("Ceil", kCeil);
  r.add("Round", kRound);
  r.add("HardSwish", kHardSwish);
  r.add("Abs", kAbs);
  r.add("Neg", kNeg);
  r.add("Sign", kSign);
  r.add("Relu", kRelu);
  r.add("Not", kNot);
  r.add("Elu", kElu);
  r.add("Celu", kCelu);
  r.add("Selu", kSelu);
  r.add("LeakyRelu", kLeakyRelu);
  r.add("HardSigmoid", kHardSigmoid);
  r.add("ThresholdedRelu", kThresholdedRelu);
  r.add("Shrink", kShrink);
  r.add("IsNaN", kIsNaN);
  r.add("IsInf", kIsInf);
  r.add("Identity", kIdentity);
  r.add("Cast", kCast);
  r.add("CastLike", kCast);
  r.add("kiln::BitCast", kBitCast);
  r.add("kiln::NarrowCast", kNarrowCast);
  r.add("Add", kArith<Arith::Add>);
  r.add("Sub", kArith<Arith::Sub>);
  r.add("Mul", kArith<Arith::Mul>);
  r.add("Div", kArith<Arith::Div>);
  r.add("Pow", kPow);
  r.add("Mod", kMod);
  r.add("BitShift", kBitShift);
  r.add("kiln::BitwiseAnd", kBitwise<std::bit_and<>>);
  r.add("kiln::BitwiseOr", kBitwise<std::bit_or<>>);
  r.add("kiln::BitwiseXor", kBitwise<std::bit_xor<>>);
  r.add("kiln::BitwiseNot", kBitwiseNot);
  r.add("Equal", kCompare<Cmp::Eq>);
  r.add("Less", kCompare<Cmp::Lt>);
  r.add("Greater", kCompare<Cmp::Gt>);
  r.add("LessOrEqual", kCompare<Cmp::Le>);
  r.add("GreaterOrEqual", kCompare<Cmp::Ge>);
  r.add("And", kLogic<Logic::And>);
  r.add("Or", kLogic<Logic::Or>);
  r.add("Xor", kLogic<Logic::Xor>);
  r.add("PRelu", kPRelu);
  r.add("Max", kVariadic<Fold::Max>);
  r.add("Min", kVariadic<Fold::Min>);
  r.add("Sum", kVariadic<Fold::Sum>);
  r.add("Mean", kVariadic<Fold::Mean>);
  r.add("Where", kWhere);
  r.add("Clip", kClip);
}

}  // namespace kiln::runtime
