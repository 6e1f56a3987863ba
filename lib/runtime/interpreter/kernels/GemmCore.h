//===- lib/runtime/interpreter/kernels/GemmCore.h - Reference GEMM and conv cores -===//
//
// A cache-blocked row-major GEMM with a wide accumulator (double for floats,
// int64 for integers) and an N-d im2col convolution built on it. Conv, MatMul,
// Gemm and their integer/quantized forms share these; operands are converted
// to one computation type (float, double or int32) before the call.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <algorithm>
#include <vector>

#include "KernelUtils.h"
#include "kiln/ir/ShapeUtils.h"

namespace kiln::runtime::kernels {

/// Accumulator type for a computation type.
template <class T>
using AccumulatorOf = std::conditional_t<std::is_floating_point_v<T>, double, int64_t>;

/// C[M,N] = alpha * A[M,K] @ B[K,N] + beta * C, all row-major and contiguous.
/// With beta == 0, C is overwritten (never read).
template <class T>
void gemm(int64_t M, int64_t N, int64_t K, const T* A, const T* B, T* C, double alpha = 1.0, double beta = 0.0) {
  using Acc = AccumulatorOf<T>;
  constexpr int64_t kBlock = 256;
  std::vector<Acc> acc(static_cast<size_t>(std::min(N, kBlock)));
  for (int64_t j0 = 0; j0 < N; j0 += kBlock) {
    int64_t nb = std::min(kBlock, N - j0);
    for (int64_t i = 0; i < M; ++i) {
      std::fill(acc.begin(), acc.begin() + nb, Acc(0));
      const T* a = A + i * K;
      for (int64_t k = 0; k < K; ++k) {
        Acc av = Acc(a[k]);
        if (av == Acc(0)) continue;
        const T* b = B + k * N + j0;
        if constexpr (std::is_floating_point_v<Acc>) {
          for (int64_t j = 0; j < nb; ++j) acc[size_t(j)] += av * Acc(b[j]);
        } else {  // integers wrap (no signed overflow)
          for (int64_t j = 0; j < nb; ++j) acc[size_t(j)] = wrapAdd(acc[size_t(j)], wrapMul(av, Acc(b[j])));
        }
      }
      T* c = C + i * N + j0;
      for (int64_t j = 0; j < nb; ++j) {
        if constexpr (std::is_floating_point_v<T>) {
          double v = alpha * double(acc[size_t(j)]);
          if (beta != 0.0) v += beta * double(c[j]);
          c[j] = T(v);
        } else {
          c[j] = T(acc[size_t(j)]);
        }
      }
    }
  }
}

/// Copies a row-major [rows, cols] matrix transposed into `out` ([cols, rows]).
template <class T>
void transposeInto(const T* in, int64_t rows, int64_t cols, T* out) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) out[c * rows + r] = in[r * cols + c];
}

/// Direct N-d convolution via im2col + gemm. x: [N, C, spatial...], w: [M, C/group,
/// kernel...]; out: [N, M, outSpatial...] (overwritten). Bias is added by the caller.
template <class T>
void convolve(const T* x, const Dims& xDims, const T* w, const Dims& wDims, const ir::WindowGeometry& g,
              int64_t group, T* out) {
  int64_t batch = xDims[0], channels = xDims[1], m = wDims[0];
  size_t s = xDims.size() - 2;
  int64_t cg = channels / group, mg = m / group;
  int64_t inSize = 1, outSize = 1, kSize = 1;
  for (size_t d = 0; d < s; ++d) {
    inSize *= xDims[d + 2];
    outSize *= g.output[d];
    kSize *= g.kernel[d];
  }
  bool pointwise = true;
  for (size_t d = 0; d < s; ++d)
    pointwise &= g.kernel[d] == 1 && g.strides[d] == 1 && g.padsBegin[d] == 0 && g.padsEnd[d] == 0;
  Dims inStrides(s, 1);
  for (size_t d = s; d-- > 1;) inStrides[d - 1] = inStrides[d] * xDims[d + 2];
  std::vector<T> col(pointwise ? 0 : static_cast<size_t>(cg * kSize * outSize));
  std::vector<int64_t> kIdx(s), oIdx(s);
  for (int64_t n = 0; n < batch; ++n) {
    for (int64_t gi = 0; gi < group; ++gi) {
      const T* xg = x + (n * channels + gi * cg) * inSize;
      const T* src = xg;
      if (!pointwise) {
        // col[(c * kSize + k) * outSize + o] = x[c, o * stride - pad + k * dilation]
        for (int64_t k = 0; k < kSize; ++k) {
          int64_t rem = k;
          for (size_t d = s; d-- > 0;) {
            kIdx[d] = rem % g.kernel[d];
            rem /= g.kernel[d];
          }
          for (int64_t o = 0; o < outSize; ++o) {
            int64_t r = o, off = 0;
            bool inside = true;
            for (size_t d = s; d-- > 0;) {
              int64_t od = r % g.output[d];
              r /= g.output[d];
              int64_t pos = od * g.strides[d] - g.padsBegin[d] + kIdx[d] * g.dilations[d];
              if (pos < 0 || pos >= xDims[d + 2]) {
                inside = false;
                break;
              }
              off += pos * inStrides[d];
            }
            for (int64_t c = 0; c < cg; ++c)
              col[size_t((c * kSize + k) * outSize + o)] = inside ? xg[c * inSize + off] : T(0);
          }
        }
        src = col.data();
      }
      gemm<T>(mg, outSize, cg * kSize, w + gi * mg * cg * kSize, src, out + (n * m + gi * mg) * outSize);
    }
  }
}

}  // namespace kiln::runtime::kernels
