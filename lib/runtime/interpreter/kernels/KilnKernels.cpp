//===- lib/runtime/interpreter/kernels/KilnKernels.cpp - kiln's own ops -----===//
//
// Reference kernels of the "kiln" domain (lib/ir/ops/KilnOps.cpp): Gelu, the
// fast-math approximations (computed with the very functions of
// support/FastMath.h that code generation mirrors), scaled dot-product
// Attention (in double, batch dims of q, kT and v equal, mask broadcast),
// channels-last ConvNHWC and channel-blocked ConvNCHWc (direct loops in
// double), and
// Fused / Composite groups, which run their body graph.
//
//===----------------------------------------------------------------------===//
#include <cmath>

#include "../KernelContext.h"
#include "KernelFamilies.h"
#include "KernelUtils.h"
#include "kiln/ir/Graph.h"
#include "kiln/ir/ShapeUtils.h"
#include "kiln/support/FastMath.h"

namespace kiln::runtime {
using namespace kernels;

namespace {

/// y = f(x) elementwise over an f32 tensor.
template <class F>
Status unaryF32(KernelContext& ctx, F f) {
  const Tensor& x = ctx.input(0);
  if (x.dtype() != DType::F32) return unsupportedDType(x.dtype());
  Tensor& y = ctx.allocate(0);
  const float* in = x.data<float>();
  float* out = y.mutableData<float>();
  for (int64_t i = 0; i < x.numElements(); ++i) out[i] = f(in[i]);
  return Status::ok();
}

Status kFastExp(KernelContext& ctx) { return unaryF32(ctx, fastExp); }
Status kFastErf(KernelContext& ctx) { return unaryF32(ctx, fastErf); }
Status kFastTanh(KernelContext& ctx) { return unaryF32(ctx, fastTanh); }

Status kGelu(KernelContext& ctx) {
  const std::string& mode = ctx.node().getString("approximate");
  if (mode == "fast") return unaryF32(ctx, [](float x) { return 0.5f * x * (1.0f + fastErf(x * 0.70710678f)); });
  if (mode != "none" && mode != "tanh") return kernelError("approximate must be none, tanh or fast, got '" + mode + "'");
  const Tensor& x = ctx.input(0);
  if (!isFloat(x.dtype())) return unsupportedDType(x.dtype());
  std::vector<double> v = loadValues<double>(x);
  for (double& e : v)
    e = mode == "none" ? 0.5 * e * (1.0 + std::erf(e * M_SQRT1_2))
                       : 0.5 * e * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (e + 0.044715 * e * e * e)));
  storeValues(ctx.allocate(0), v);
  return Status::ok();
}

Status kFastSoftmax(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.dtype() != DType::F32) return unsupportedDType(x.dtype());
  KILN_ASSIGN(int64_t axis, ir::normalizeAxis(ctx.node().getInt("axis"), x.rank()));
  int64_t outer = 1, n = x.dim(axis), inner = 1;
  for (int64_t d = 0; d < x.rank(); ++d) (d < axis ? outer : inner) *= d == axis ? 1 : x.dim(d);
  Tensor& y = ctx.allocate(0);
  const float* in = x.data<float>();
  float* out = y.mutableData<float>();
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      auto at = [&](int64_t k) { return (o * n + k) * inner + i; };
      float mx = -INFINITY;
      for (int64_t k = 0; k < n; ++k) mx = std::max(mx, in[at(k)]);
      float sum = 0;
      for (int64_t k = 0; k < n; ++k) sum += out[at(k)] = fastExp(in[at(k)] - mx);
      for (int64_t k = 0; k < n; ++k) out[at(k)] /= sum;
    }
  return Status::ok();
}

Status kAttention(KernelContext& ctx) {
  const Tensor &q = ctx.input(0), &k = ctx.input(1), &v = ctx.input(2);
  if (!isFloat(q.dtype())) return unsupportedDType(q.dtype());
  if (q.rank() < 2 || k.rank() != q.rank() || v.rank() != q.rank())
    return kernelError("q, kT and v must have one rank >= 2");
  int64_t r = q.rank(), S = q.dim(r - 2), D = q.dim(r - 1), T = k.dim(r - 1), Dv = v.dim(r - 1);
  for (int64_t d = 0; d < r - 2; ++d)
    if (k.dim(d) != q.dim(d) || v.dim(d) != q.dim(d)) return kernelError("q, kT and v must have equal batch dims");
  if (k.dim(r - 2) != D || v.dim(r - 2) != T) return kernelError("q, kT and v dims do not chain");
  int64_t batch = S > 0 ? q.numElements() / (S * D) : 0;
  Dims scoreDims = q.dims();
  scoreDims[size_t(r - 1)] = T;
  std::vector<double> mask;
  if (ctx.hasInput(3)) {
    const Tensor& m = ctx.input(3);
    KILN_ASSIGN(Dims b, ir::broadcastDims(scoreDims, m.dims()));
    if (b != scoreDims) return kernelError("mask does not broadcast to the scores' shape");
    std::vector<double> mv = loadValues<double>(m);
    mask.resize(size_t(numElements(scoreDims)));
    std::array<Dims, 1> strides = {broadcastStrides(m.dims(), scoreDims)};
    forEachBroadcast<1>(scoreDims, strides, [&](int64_t o, const std::array<int64_t, 1>& off) { mask[size_t(o)] = mv[size_t(off[0])]; });
  }
  double scale = ctx.node().getFloat("scale");
  std::vector<double> qv = loadValues<double>(q), kv = loadValues<double>(k), vv = loadValues<double>(v);
  std::vector<double> out(static_cast<size_t>(batch * S * Dv), 0.0), p(static_cast<size_t>(T));
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t s = 0; s < S; ++s) {
      double mx = -INFINITY;
      for (int64_t t = 0; t < T; ++t) {
        double acc = 0;
        for (int64_t d = 0; d < D; ++d) acc += qv[size_t((b * S + s) * D + d)] * kv[size_t((b * D + d) * T + t)];
        acc *= scale;
        if (!mask.empty()) acc += mask[size_t((b * S + s) * T + t)];
        p[size_t(t)] = acc;
        mx = std::max(mx, acc);
      }
      double sum = 0;
      for (double& e : p) sum += e = std::exp(e - mx);
      for (int64_t t = 0; t < T; ++t)
        for (int64_t d = 0; d < Dv; ++d) out[size_t((b * S + s) * Dv + d)] += p[size_t(t)] / sum * vv[size_t((b * T + t) * Dv + d)];
    }
  storeValues(ctx.allocate(0), out);
  return Status::ok();
}

/// Direct NHWC convolution in double (the reference for convert-layout).
Status kConvNhwc(KernelContext& ctx) {
  const Tensor &x = ctx.input(0), &w = ctx.input(1);
  if (!isFloat(x.dtype())) return unsupportedDType(x.dtype());
  const int64_t N = x.dim(0), H = x.dim(1), W = x.dim(2), C = x.dim(3);
  const int64_t O = w.dim(0), KH = w.dim(1), KW = w.dim(2), CG = w.dim(3);
  const int64_t group = ctx.node().getInt("group"), OG = O / group;
  KILN_ASSIGN(ir::WindowGeometry g, ir::computeWindowGeometry(ctx.node(), {H, W}, {KH, KW}, false));
  const int64_t OH = g.output[0], OW = g.output[1];
  std::vector<double> xv = loadValues<double>(x), wv = loadValues<double>(w);
  std::vector<double> bias = ctx.hasInput(2) ? loadValues<double>(ctx.input(2)) : std::vector<double>(size_t(O), 0.0);
  std::vector<double> y(size_t(N * OH * OW * O));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow)
        for (int64_t o = 0; o < O; ++o) {
          double acc = bias[size_t(o)];
          const int64_t c0 = (o / OG) * CG;
          for (int64_t kh = 0; kh < KH; ++kh) {
            int64_t ih = oh * g.strides[0] - g.padsBegin[0] + kh * g.dilations[0];
            if (ih < 0 || ih >= H) continue;
            for (int64_t kw = 0; kw < KW; ++kw) {
              int64_t iw = ow * g.strides[1] - g.padsBegin[1] + kw * g.dilations[1];
              if (iw < 0 || iw >= W) continue;
              const double* xp = &xv[size_t(((n * H + ih) * W + iw) * C + c0)];
              const double* wp = &wv[size_t(((o * KH + kh) * KW + kw) * CG)];
              for (int64_t c = 0; c < CG; ++c) acc += xp[c] * wp[c];
            }
          }
          y[size_t(((n * OH + oh) * OW + ow) * O + o)] = acc;
        }
  storeValues(ctx.allocate(0), y);
  return Status::ok();
}

/// Direct channel-blocked convolution in double (the reference for
/// alter-op-layout). Grouped (group != 1): output block ob reads input block
/// ob only; depthwise (weights [C/c, 1, kH, kW, 1, c]) output lane oi reads
/// only input lane oi, groups within a block (weights [C/c, 1, kH, kW, c, c],
/// block-diagonal) every lane of the block.
Status kConvNchwc(KernelContext& ctx) {
  const Tensor &x = ctx.input(0), &w = ctx.input(1);
  if (!isFloat(x.dtype())) return unsupportedDType(x.dtype());
  const int64_t N = x.dim(0), CB = x.dim(1), H = x.dim(2), W = x.dim(3), c = x.dim(4);
  const int64_t OB = w.dim(0), WCB = w.dim(1), KH = w.dim(2), KW = w.dim(3), wc = w.dim(4), o = w.dim(5);
  const bool sameBlock = ctx.node().getInt("group") != 1, depthwise = sameBlock && wc == 1;
  KILN_ASSIGN(ir::WindowGeometry g, ir::computeWindowGeometry(ctx.node(), {H, W}, {KH, KW}, false));
  const int64_t OH = g.output[0], OW = g.output[1];
  std::vector<double> xv = loadValues<double>(x), wv = loadValues<double>(w);
  std::vector<double> bias = ctx.hasInput(2) ? loadValues<double>(ctx.input(2)) : std::vector<double>(size_t(OB * o), 0.0);
  std::vector<double> y(size_t(N * OB * OH * OW * o));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t ob = 0; ob < OB; ++ob)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow)
          for (int64_t oi = 0; oi < o; ++oi) {
            double acc = bias[size_t(ob * o + oi)];
            for (int64_t cb = sameBlock ? ob : 0; cb < (sameBlock ? ob + 1 : CB); ++cb)
              for (int64_t kh = 0; kh < KH; ++kh) {
                int64_t ih = oh * g.strides[0] - g.padsBegin[0] + kh * g.dilations[0];
                if (ih < 0 || ih >= H) continue;
                for (int64_t kw = 0; kw < KW; ++kw) {
                  int64_t iw = ow * g.strides[1] - g.padsBegin[1] + kw * g.dilations[1];
                  if (iw < 0 || iw >= W) continue;
                  for (int64_t ci = depthwise ? oi : 0; ci < (depthwise ? oi + 1 : c); ++ci) {
                    const int64_t wcb = sameBlock ? 0 : cb, wci = depthwise ? 0 : ci;
                    acc += xv[size_t((((n * CB + cb) * H + ih) * W + iw) * c + ci)] *
                           wv[size_t(((((ob * WCB + wcb) * KH + kh) * KW + kw) * wc + wci) * o + oi)];
                  }
                }
              }
            y[size_t((((n * OB + ob) * OH + oh) * OW + ow) * o + oi)] = acc;
          }
  storeValues(ctx.allocate(0), y);
  return Status::ok();
}

Status kGroup(KernelContext& ctx) {
  std::vector<RuntimeValue> inputs;
  for (size_t i = 0; i < ctx.numInputs(); ++i) inputs.push_back(ctx.hasInput(i) ? ctx.value(i) : RuntimeValue());
  KILN_ASSIGN(std::vector<RuntimeValue> outputs, ctx.runSubgraph(*ctx.node().getGraph("body"), inputs));
  for (size_t i = 0; i < outputs.size(); ++i) ctx.setOutput(i, std::move(outputs[i]));
  return Status::ok();
}

}  // namespace

void registerKilnKernels(KernelRegistry& r) {
  r.add("kiln::Gelu", kGelu);
  r.add("kiln::FastExp", kFastExp);
  r.add("kiln::FastErf", kFastErf);
  r.add("kiln::FastTanh", kFastTanh);
  r.add("kiln::FastSoftmax", kFastSoftmax);
  r.add("kiln::Attention", kAttention);
  r.add("kiln::ConvNHWC", kConvNhwc);
  r.add("kiln::ConvNCHWc", kConvNchwc);
  r.add("kiln::Fused", kGroup);
  r.add("kiln::Composite", kGroup);
}

}  // namespace kiln::runtime
