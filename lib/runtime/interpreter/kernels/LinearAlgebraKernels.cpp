//===- lib/runtime/interpreter/kernels/LinearAlgebraKernels.cpp - Matrix ops -===//
//
// MatMul (numpy broadcasting), Gemm, kiln::Dense (x @ Wᵀ, W [N, K] as
// stored), MatMulInteger, QLinearMatMul, a general
// Einsum (explicit sum over all label assignments) and Det (LU with partial
// pivoting).
//
//===----------------------------------------------------------------------===//
#include <map>

#include "../KernelContext.h"
#include "GemmCore.h"
#include "KernelFamilies.h"
#include "KernelUtils.h"

namespace kiln::runtime {
using namespace kernels;

namespace {

/// Batched matrix product of a [..., M, K] and b [..., K, N] (1-D operands
/// promoted) into `out` (dims already inferred), in computation type C.
template <class C>
void batchedMatMul(const std::vector<C>& a, Dims ad, const std::vector<C>& b, Dims bd, std::vector<C>& out) {
  if (ad.size() == 1) ad.insert(ad.begin(), 1);
  if (bd.size() == 1) bd.push_back(1);
  int64_t m = ad[ad.size() - 2], k = ad.back(), n = bd.back();
  Dims batchA(ad.begin(), ad.end() - 2), batchB(bd.begin(), bd.end() - 2);
  Dims batch = *ir::broadcastDims(batchA, batchB);
  std::array<Dims, 2> strides = {broadcastStrides(batchA, batch), broadcastStrides(batchB, batch)};
  out.assign(static_cast<size_t>(numElements(batch) * m * n), C(0));
  forEachBroadcast<2>(batch, strides, [&](int64_t o, const std::array<int64_t, 2>& off) {
    gemm<C>(m, n, k, a.data() + off[0] * m * k, b.data() + off[1] * k * n, out.data() + o * m * n);
  });
}

Status kMatMul(KernelContext& ctx) {
  const Tensor &a = ctx.input(0), &b = ctx.input(1);
  Tensor& y = ctx.allocate(0);
  auto run = [&]<class C>() {
    std::vector<C> out;
    batchedMatMul<C>(loadValues<C>(a), a.dims(), loadValues<C>(b), b.dims(), out);
    storeValues(y, out);
  };
  if (a.dtype() == DType::F64) run.template operator()<double>();
  else if (isFloat(a.dtype())) run.template operator()<float>();
  else if (isInteger(a.dtype())) run.template operator()<int64_t>();
  else return unsupportedDType(a.dtype());
  return Status::ok();
}

/// kiln::Dense: every row of x [..., K] times Wᵀ (W [N, K]).
Status kDense(KernelContext& ctx) {
  const Tensor &x = ctx.input(0), &w = ctx.input(1);
  Tensor& y = ctx.allocate(0);
  const int64_t n = w.dim(0), k = w.dim(1), rows = k == 0 ? 0 : x.numElements() / k;
  auto run = [&]<class C>() {
    std::vector<C> xv = loadValues<C>(x), wv = loadValues<C>(w), wt(wv.size()), out(static_cast<size_t>(rows * n));
    transposeInto(wv.data(), n, k, wt.data());
    gemm<C>(rows, n, k, xv.data(), wt.data(), out.data());
    storeValues(y, out);
  };
  if (x.dtype() == DType::F64) run.template operator()<double>();
  else if (isFloat(x.dtype())) run.template operator()<float>();
  else return unsupportedDType(x.dtype());
  return Status::ok();
}

Status kGemm(KernelContext& ctx) {
  const Tensor &a = ctx.input(0), &b = ctx.input(1);
  Tensor& y = ctx.allocate(0);
  const ir::Node& n = ctx.node();
  bool ta = n.getInt("transA"), tb = n.getInt("transB");
  double alpha = n.getFloat("alpha"), beta = n.getFloat("beta");
  int64_t m = y.dim(0), nn = y.dim(1), k = ta ? a.dim(0) : a.dim(1);
  auto run = [&]<class C>() {
    std::vector<C> av = loadValues<C>(a), bv = loadValues<C>(b), yv(static_cast<size_t>(m * nn), C(0));
    if (ta) {
      std::vector<C> t(av.size());
      transposeInto(av.data(), k, m, t.data());
      av.swap(t);
    }
    if (tb) {
      std::vector<C> t(bv.size());
      transposeInto(bv.data(), nn, k, t.data());
      bv.swap(t);
    }
    double b2 = 0.0;
    if (ctx.hasInput(2) && beta != 0.0) {
      std::vector<C> cv = loadValues<C>(ctx.input(2));
      std::array<Dims, 1> strides = {broadcastStrides(ctx.input(2).dims(), y.dims())};
      forEachBroadcast<1>(y.dims(), strides, [&](int64_t o, const std::array<int64_t, 1>& off) { yv[size_t(o)] = cv[size_t(off[0])]; });
      b2 = beta;
    }
    gemm<C>(m, nn, k, av.data(), bv.data(), yv.data(), alpha, b2);
    storeValues(y, yv);
  };
  if (a.dtype() == DType::F64) run.template operator()<double>();
  else if (isFloat(a.dtype())) run.template operator()<float>();
  else if (isInteger(a.dtype())) run.template operator()<int64_t>();
  else return unsupportedDType(a.dtype());
  return Status::ok();
}

/// a - zero point (scalar, or per row of a [..., M, K] / per column of b [..., K, N]).
Expected<std::vector<int64_t>> shiftByZeroPoint(const Tensor& t, const Tensor* zp, bool perRow) {
  if (t.dtype() != DType::U8 && t.dtype() != DType::I8) return unsupportedDType(t.dtype());
  std::vector<int64_t> v = t.toInt64s();
  if (!zp) return v;
  std::vector<int64_t> z = zp->toInt64s();
  if (z.size() == 1) {
    for (auto& x : v) x -= z[0];
    return v;
  }
  int64_t rows = t.rank() >= 2 ? t.dim(t.rank() - 2) : 1, cols = t.dims().back();
  if (int64_t(z.size()) != (perRow ? rows : cols)) return kernelError("zero point size does not match the operand");
  for (size_t i = 0; i < v.size(); ++i) v[i] -= z[size_t(perRow ? (int64_t(i) / cols) % rows : int64_t(i) % cols)];
  return v;
}

Status kMatMulInteger(KernelContext& ctx) {
  const Tensor &a = ctx.input(0), &b = ctx.input(1);
  KILN_ASSIGN(auto av, shiftByZeroPoint(a, ctx.hasInput(2) ? &ctx.input(2) : nullptr, true));
  KILN_ASSIGN(auto bv, shiftByZeroPoint(b, ctx.hasInput(3) ? &ctx.input(3) : nullptr, false));
  std::vector<int64_t> out;
  batchedMatMul<int64_t>(av, a.dims(), bv, b.dims(), out);
  storeValues(ctx.allocate(0), out);
  return Status::ok();
}

Status kQLinearMatMul(KernelContext& ctx) {
  const Tensor &a = ctx.input(0), &b = ctx.input(3);
  KILN_ASSIGN(auto av, shiftByZeroPoint(a, &ctx.input(2), true));
  KILN_ASSIGN(auto bv, shiftByZeroPoint(b, &ctx.input(5), false));
  std::vector<int64_t> acc;
  batchedMatMul<int64_t>(av, a.dims(), bv, b.dims(), acc);
  Tensor& y = ctx.allocate(0);
  float scale = float(elementAsDouble(ctx.input(1), 0)) * float(elementAsDouble(ctx.input(4), 0)) /
                float(elementAsDouble(ctx.input(6), 0));
  double zero = elementAsDouble(ctx.input(7), 0);
  bool isU8 = y.dtype() == DType::U8;
  for (size_t i = 0; i < acc.size(); ++i) {
    double v = std::clamp(std::nearbyint(float(acc[i]) * scale) + zero, isU8 ? 0.0 : -128.0, isU8 ? 255.0 : 127.0);
    if (isU8) y.mutableData<uint8_t>()[i] = uint8_t(v);
    else y.mutableData<int8_t>()[i] = int8_t(v);
  }
  return Status::ok();
}

Status kEinsum(KernelContext& ctx) {
  std::vector<int64_t> ranks;
  for (size_t i = 0; i < ctx.numInputs(); ++i) ranks.push_back(ctx.input(i).rank());
  KILN_ASSIGN(ir::EinsumSpec spec, ir::parseEinsum(ctx.node().getString("equation"), ranks));
  std::map<char, int64_t> size;
  for (size_t i = 0; i < ctx.numInputs(); ++i)
    for (size_t k = 0; k < spec.inputs[i].size(); ++k) {
      int64_t& s = size[spec.inputs[i][k]];
      s = std::max(s, ctx.input(i).dim(int64_t(k)));
    }
  std::string labels = spec.output;
  for (const auto& [c, s] : size)
    if (labels.find(c) == std::string::npos) labels += c;
  size_t nl = labels.size();
  // Stride of each label in each operand (summed when a label repeats: diagonals).
  std::vector<std::vector<int64_t>> strides(ctx.numInputs(), std::vector<int64_t>(nl, 0));
  for (size_t i = 0; i < ctx.numInputs(); ++i) {
    Dims st = stridesOf(ctx.input(i).dims());
    for (size_t k = 0; k < spec.inputs[i].size(); ++k)
      if (ctx.input(i).dim(int64_t(k)) != 1 || size[spec.inputs[i][k]] == 1)
        strides[i][labels.find(spec.inputs[i][k])] += st[k];
  }
  Tensor& y = ctx.allocate(0);
  Dims dims(nl);
  for (size_t l = 0; l < nl; ++l) dims[l] = size[labels[l]];
  int64_t outCount = y.numElements(), total = numElements(dims), inner = outCount ? total / outCount : 0;
  std::vector<std::vector<double>> vals;
  for (size_t i = 0; i < ctx.numInputs(); ++i) vals.push_back(ctx.input(i).toDoubles());
  std::vector<double> out(static_cast<size_t>(outCount), 0.0);
  std::vector<int64_t> idx(nl, 0);
  for (int64_t o = 0; o < outCount; ++o)
    for (int64_t s = 0; s < inner; ++s) {
      int64_t r = o * inner + s;
      for (size_t l = nl; l-- > 0;) {
        idx[l] = r % dims[l];
        r /= dims[l];
      }
      double prod = 1;
      for (size_t i = 0; i < vals.size(); ++i) {
        int64_t off = 0;
        for (size_t l = 0; l < nl; ++l) off += idx[l] * strides[i][l];
        prod *= vals[i][size_t(off)];
      }
      out[size_t(o)] += prod;
    }
  storeValues(y, out);
  return Status::ok();
}

Status kDet(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (!isFloat(x.dtype())) return unsupportedDType(x.dtype());
  Tensor& y = ctx.allocate(0);
  int64_t n = x.dim(x.rank() - 1), count = y.numElements();
  std::vector<double> v = x.toDoubles(), out(static_cast<size_t>(count));
  for (int64_t b = 0; b < count; ++b) {
    std::vector<double> m(v.begin() + b * n * n, v.begin() + (b + 1) * n * n);
    double det = 1;
    for (int64_t c = 0; c < n; ++c) {
      int64_t p = c;
      for (int64_t r = c + 1; r < n; ++r)
        if (std::fabs(m[size_t(r * n + c)]) > std::fabs(m[size_t(p * n + c)])) p = r;
      if (m[size_t(p * n + c)] == 0) {
        det = 0;
        break;
      }
      if (p != c) {
        for (int64_t k = 0; k < n; ++k) std::swap(m[size_t(p * n + k)], m[size_t(c * n + k)]);
        det = -det;
      }
      det *= m[size_t(c * n + c)];
      for (int64_t r = c + 1; r < n; ++r) {
        double f = m[size_t(r * n + c)] / m[size_t(c * n + c)];
        for (int64_t k = c; k < n; ++k) m[size_t(r * n + k)] -= f * m[size_t(c * n + k)];
      }
    }
    out[size_t(b)] = det;
  }
  storeValues(y, out);
  return Status::ok();
}

}  // namespace

void registerLinearAlgebraKernels(KernelRegistry& r) {
  r.add("MatMul", kMatMul);
  r.add("Gemm", kGemm);
  r.add("kiln::Dense", kDense);
  r.add("MatMulInteger", kMatMulInteger);
  r.add("QLinearMatMul", kQLinearMatMul);
  r.add("Einsum", kEinsum);
  r.add("Det", kDet);
}

}  // namespace kiln::runtime
