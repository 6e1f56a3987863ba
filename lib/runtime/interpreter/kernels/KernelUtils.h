//===- lib/runtime/interpreter/kernels/KernelUtils.h - Kernel building blocks -===//
//
// Shared pieces of the reference kernels: errors, dtype dispatch restricted to
// the types an op accepts, strides, broadcast iteration, and integer
// arithmetic that wraps instead of overflowing (ONNX semantics, no UB).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "../KernelContext.h"
#include "kiln/ir/ShapeUtils.h"

namespace kiln::runtime::kernels {

inline Error kernelError(const std::string& msg) { return Error(ErrorCode::ExecFailure, msg); }
inline Error unsupportedDType(DType t) {
  return Error(ErrorCode::ExecUnsupported, std::string("element type ") + dtypeName(t) + " is not supported by this kernel");
}

/// f(<T>) for float types (f32, f64, f16, bf16), else an error.
template <class F>
Status forFloat(DType t, F&& f) {
  if (!isFloat(t)) return unsupportedDType(t);
  dispatchDType(t, [&]<class T>() {
    if constexpr (isFloatLike<T>) f.template operator()<T>();
  });
  return Status::ok();
}
/// f(<T>) for every numeric type (not bool).
template <class F>
Status forNumeric(DType t, F&& f) {
  if (t == DType::Bool || t == DType::Undefined) return unsupportedDType(t);
  dispatchDType(t, [&]<class T>() {
    if constexpr (!std::is_same_v<T, bool>) f.template operator()<T>();
  });
  return Status::ok();
}
/// f(<T>) for integer types.
template <class F>
Status forInteger(DType t, F&& f) {
  if (!isInteger(t)) return unsupportedDType(t);
  dispatchDType(t, [&]<class T>() {
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) f.template operator()<T>();
  });
  return Status::ok();
}
/// f(<T>) for any type.
template <class F>
Status forAny(DType t, F&& f) {
  if (t == DType::Undefined) return unsupportedDType(t);
  dispatchDType(t, [&]<class T>() { f.template operator()<T>(); });
  return Status::ok();
}

/// Row-major strides of dims.
inline Dims stridesOf(const Dims& dims) {
  Dims s(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) s[i - 1] = s[i] * dims[i];
  return s;
}

/// Strides of `in` aligned to `out`'s rank, 0 where `in` is broadcast.
inline Dims broadcastStrides(const Dims& in, const Dims& out) {
  Dims s(out.size(), 0);
  Dims own = stridesOf(in);
  size_t off = out.size() - in.size();
  for (size_t i = 0; i < in.size(); ++i) s[i + off] = in[i] == 1 ? 0 : own[i];
  return s;
}

/// Calls f(outFlat, offsets) for every output position, where offsets[k] is
/// the flat position in input k (strides from broadcastStrides).
template <size_t N, class F>
void forEachBroadcast(const Dims& out, const std::array<Dims, N>& strides, F&& f) {
  int64_t total = numElements(out);
  if (total == 0) return;
  std::array<int64_t, N> off{};
  size_t rank = out.size();
  if (rank == 0) {
    f(int64_t(0), off);
    return;
  }
  int64_t inner = out[rank - 1];
  std::array<int64_t, N> innerStride;
  for (size_t k = 0; k < N; ++k) innerStride[k] = strides[k][rank - 1];
  std::vector<int64_t> idx(rank, 0);
  for (int64_t o = 0; o < total; o += inner) {
    std::array<int64_t, N> p = off;
    for (int64_t j = 0; j < inner; ++j) {
      f(o + j, p);
      for (size_t k = 0; k < N; ++k) p[k] += innerStride[k];
    }
    for (size_t d = rank - 1; d-- > 0;) {
      ++idx[d];
      for (size_t k = 0; k < N; ++k) off[k] += strides[k][d];
      if (idx[d] < out[d]) break;
      for (size_t k = 0; k < N; ++k) off[k] -= strides[k][d] * out[d];
      idx[d] = 0;
    }
  }
}

/// Wrapping integer arithmetic (two's complement), no signed overflow.
template <class T>
T wrapAdd(T a, T b) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    using U = std::make_unsigned_t<T>;
    return T(U(a) + U(b));
  } else {
    return T(ComputeType<T>(a) + ComputeType<T>(b));
  }
}
template <class T>
T wrapSub(T a, T b) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    using U = std::make_unsigned_t<T>;
    return T(U(a) - U(b));
  } else {
    return T(ComputeType<T>(a) - ComputeType<T>(b));
  }
}
template <class T>
T wrapMul(T a, T b) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    using U = std::make_unsigned_t<T>;
    using W = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, U>;  // avoid int promotion overflow
    return T(U(W(U(a)) * W(U(b))));
  } else {
    return T(ComputeType<T>(a) * ComputeType<T>(b));
  }
}

/// Every element of `t` converted to C (Cast semantics; f16/bf16 widen exactly).
template <class C>
std::vector<C> loadValues(const Tensor& t) {
  std::vector<C> v(static_cast<size_t>(t.numElements()));
  dispatchDType(t.dtype(), [&]<class T>() {
    const T* p = t.data<T>();
    for (size_t i = 0; i < v.size(); ++i) v[i] = convertValue<C, T>(p[i]);
  });
  return v;
}

/// Writes `values` into `t`, whatever its dtype (Cast semantics).
template <class C>
void storeValues(Tensor& t, const std::vector<C>& values) {
  dispatchDType(t.dtype(), [&]<class T>() {
    T* p = t.mutableData<T>();
    for (size_t i = 0; i < values.size(); ++i) p[i] = convertValue<T, C>(values[i]);
  });
}

/// Reads element i of any tensor as double / int64.
inline double elementAsDouble(const Tensor& t, int64_t i) {
  double v = 0;
  dispatchDType(t.dtype(), [&]<class T>() { v = convertValue<double, T>(t.data<T>()[i]); });
  return v;
}

/// Scalar operand value (0-D or a single element) or an error naming it.
inline Expected<double> scalarOperand(const KernelContext& ctx, size_t i, const char* what) {
  const Tensor& t = ctx.input(i);
  if (t.numElements() != 1) return kernelError(std::string(what) + " must hold one value, got " + t.typeString());
  return elementAsDouble(t, 0);
}

/// Integer scalar operand read exactly (no round trip through double, so
/// INT64_MAX, torch's "no limit", survives); float operands are truncated.
inline Expected<int64_t> scalarIntOperand(const KernelContext& ctx, size_t i, const char* what) {
  const Tensor& t = ctx.input(i);
  if (t.numElements() != 1) return kernelError(std::string(what) + " must hold one value, got " + t.typeString());
  return t.toInt64s()[0];  // exact for integers, saturating for floats
}

/// Normalises an index into [0, dim), accepting negatives; error when out of range.
inline Expected<int64_t> checkIndex(int64_t idx, int64_t dim, const char* what) {
  int64_t n = idx < 0 ? idx + dim : idx;
  if (n < 0 || n >= dim)
    return kernelError(std::string(what) + " " + std::to_string(idx) + " is out of range for a dim of " + std::to_string(dim));
  return n;
}

}  // namespace kiln::runtime::kernels
