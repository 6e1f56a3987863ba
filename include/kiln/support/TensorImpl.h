//===- kiln/support/TensorImpl.h - Template bodies for Tensor.h ---*- C++ -*-===//
//
// Value conversion with ONNX Cast semantics and Tensor::fromVector. Include
// Tensor.h, not this file.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cmath>
#include <cstring>
#include <limits>

namespace kiln {

template <class To, class From>
To convertValue(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (std::is_same_v<To, bool>) {
    if constexpr (isHalfLike<From>) return float(v) != 0.0f;
    else return v != From(0);
  } else if constexpr (isHalfLike<To>) {
    if constexpr (isHalfLike<From>) return To(float(v));
    else return To(static_cast<float>(v));
  } else if constexpr (std::is_floating_point_v<To>) {
    if constexpr (isHalfLike<From>) return To(float(v));
    else return static_cast<To>(v);
  } else {
    // integer destination
    if constexpr (isFloatLike<From>) {
      double d = double(static_cast<ComputeType<From>>(v));
      if (std::isnan(d)) return To(0);
      d = std::trunc(d);
      constexpr double lo = double(std::numeric_limits<To>::lowest());
      constexpr double hi = double(std::numeric_limits<To>::max());
      if (d <= lo) return std::numeric_limits<To>::lowest();
      if (d >= hi) return std::numeric_limits<To>::max();
      return static_cast<To>(d);
    } else {
      return static_cast<To>(v);  // integer -> integer wraps (two's complement), like ONNX
    }
  }
}

template <class T>
Tensor Tensor::fromVector(Dims dims, const std::vector<T>& values) {
  Tensor t = zeros(dtypeOf<T>(), std::move(dims));
  KILN_CHECK(size_t(t.numElements()) == values.size(), "fromVector: ", values.size(),
             " values for ", t.typeString());
  T* out = t.mutableData<T>();
  for (size_t i = 0; i < values.size(); ++i) out[i] = values[i];
  return t;
}

}  // namespace kiln
