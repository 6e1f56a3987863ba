//===- lib/runtime/interpreter/kernels/ConvKernels.cpp - Convolutions -----===//
//
// Conv and ConvTranspose (any spatial rank, groups, dilation, padding) for
// float types, and the integer forms ConvInteger and QLinearConv (operands are
// shifted by their zero points and convolved in int32 with int64 sums), and
// kiln::DeformConv, whose taps sample the input bilinearly at moved positions.
//
//===----------------------------------------------------------------------===//
#include <cmath>

#include "../KernelContext.h"
#include "GemmCore.h"
#include "KernelFamilies.h"
#include "KernelUtils.h"

namespace kiln::runtime {
using namespace kernels;

namespace {

Dims spatial(const Dims& d) { return Dims(d.begin() + 2, d.end()); }

Expected<ir::WindowGeometry> convGeometry(const KernelContext& ctx, const Tensor& x, const Tensor& w) {
  return ir::computeWindowGeometry(ctx.node(), spatial(x.dims()), spatial(w.dims()), false);
}

template <class C>
void addBias(std::vector<C>& y, const Dims& yDims, const std::vector<C>& bias) {
  int64_t batch = yDims[0], m = yDims[1], size = 1;
  for (size_t d = 2; d < yDims.size(); ++d) size *= yDims[d];
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t c = 0; c < m; ++c)
      for (int64_t i = 0; i < size; ++i) y[size_t((n * m + c) * size + i)] += bias[size_t(c)];
}

Status kConv(KernelContext& ctx) {
  const Tensor &x = ctx.input(0), &w = ctx.input(1);
  KILN_ASSIGN(ir::WindowGeometry g, convGeometry(ctx, x, w));
  Tensor& y = ctx.allocate(0);
  int64_t group = ctx.node().getInt("group");
  auto run = [&]<class C>() {
    std::vector<C> xv = loadValues<C>(x), wv = loadValues<C>(w), yv(static_cast<size_t>(y.numElements()));
    convolve<C>(xv.data(), x.dims(), wv.data(), w.dims(), g, group, yv.data());
    if (ctx.hasInput(2)) addBias(yv, y.dims(), loadValues<C>(ctx.input(2)));
    storeValues(y, yv);
  };
  if (!isFloat(x.dtype())) return unsupportedDType(x.dtype());
  if (x.dtype() == DType::F64) run.template operator()<double>();
  else run.template operator()<float>();
  return Status::ok();
}

Status kConvTranspose(KernelContext& ctx) {
  const Tensor &x = ctx.input(0), &w = ctx.input(1);
  if (!isFloat(x.dtype())) return unsupportedDType(x.dtype());
  Dims kernel = spatial(w.dims());
  KILN_ASSIGN(ir::WindowGeometry g, ir::computeConvTransposeGeometry(ctx.node(), spatial(x.dims()), kernel));
  Tensor& y = ctx.allocate(0);
  int64_t group = ctx.node().getInt("group");
  int64_t batch = x.dim(0), c = x.dim(1), mg = w.dim(1), m = y.dim(1), cg = c / group;
  size_t s = kernel.size();
  int64_t inSize = 1, outSize = 1, kSize = 1;
  for (size_t d = 0; d < s; ++d) {
    inSize *= x.dim(int64_t(d) + 2);
    outSize *= y.dim(int64_t(d) + 2);
    kSize *= kernel[d];
  }
  std::vector<double> xv = loadValues<double>(x), wv = loadValues<double>(w), yv(static_cast<size_t>(y.numElements()), 0.0);
  std::vector<double> wt(static_cast<size_t>(mg * kSize * cg)), col(static_cast<size_t>(mg * kSize * inSize));
  Dims outStrides(s, 1);
  for (size_t d = s; d-- > 1;) outStrides[d - 1] = outStrides[d] * y.dim(int64_t(d) + 2);
  std::vector<int64_t> kIdx(s);
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t gi = 0; gi < group; ++gi) {
      transposeInto(wv.data() + gi * cg * mg * kSize, cg, mg * kSize, wt.data());
      gemm<double>(mg * kSize, inSize, cg, wt.data(), xv.data() + (n * c + gi * cg) * inSize, col.data());
      for (int64_t mm = 0; mm < mg; ++mm)
        for (int64_t k = 0; k < kSize; ++k) {
          int64_t rem = k;
          for (size_t d = s; d-- > 0;) {
            kIdx[d] = rem % kernel[d];
            rem /= kernel[d];
          }
          double* dst = yv.data() + (n * m + gi * mg + mm) * outSize;
          const double* src = col.data() + (mm * kSize + k) * inSize;
          for (int64_t i = 0; i < inSize; ++i) {
            int64_t r = i, off = 0;
            bool inside = true;
            for (size_t d = s; d-- > 0;) {
              int64_t id = r % x.dim(int64_t(d) + 2);
              r /= x.dim(int64_t(d) + 2);
              int64_t pos = id * g.strides[d] - g.padsBegin[d] + kIdx[d] * g.dilations[d];
              if (pos < 0 || pos >= y.dim(int64_t(d) + 2)) {
                inside = false;
                break;
              }
              off += pos * outStrides[d];
            }
            if (inside) dst[off] += src[i];
          }
        }
    }
  if (ctx.hasInput(2)) addBias(yv, y.dims(), loadValues<double>(ctx.input(2)));
  storeValues(y, yv);
  return Status::ok();
}

/// Values of an 8-bit tensor minus its zero point(s); per-channel zero points
/// apply along dim 0 (the output channel of a weight).
Expected<std::vector<int32_t>> shifted(const Tensor& t, const Tensor* zeroPoint) {
  if (t.dtype() != DType::U8 && t.dtype() != DType::I8) return unsupportedDType(t.dtype());
  std::vector<int64_t> zp = zeroPoint ? zeroPoint->toInt64s() : std::vector<int64_t>{0};
  if (zp.empty()) zp.push_back(0);
  int64_t channels = t.rank() > 0 ? t.dim(0) : 1;
  if (zp.size() != 1 && int64_t(zp.size()) != channels)
    return kernelError("zero point has " + std::to_string(zp.size()) + " values for " + std::to_string(channels) + " channels");
  std::vector<int64_t> vals = t.toInt64s();
  int64_t per = channels ? t.numElements() / channels : 0;
  std::vector<int32_t> out(vals.size());
  for (size_t i = 0; i < vals.size(); ++i)
    out[i] = int32_t(vals[i] - zp[zp.size() == 1 ? 0 : size_t(int64_t(i) / per)]);
  return out;
}

Status kConvInteger(KernelContext& ctx) {
  const Tensor &x = ctx.input(0), &w = ctx.input(1);
  KILN_ASSIGN(ir::WindowGeometry g, convGeometry(ctx, x, w));
  KILN_ASSIGN(std::vector<int32_t> xv, shifted(x, ctx.hasInput(2) ? &ctx.input(2) : nullptr));
  if (ctx.hasInput(2) && ctx.input(2).numElements() != 1) return kernelError("x_zero_point must be a scalar");
  KILN_ASSIGN(std::vector<int32_t> wv, shifted(w, ctx.hasInput(3) ? &ctx.input(3) : nullptr));
  Tensor& y = ctx.allocate(0);
  convolve<int32_t>(xv.data(), x.dims(), wv.data(), w.dims(), g, ctx.node().getInt("group"), y.mutableData<int32_t>());
  return Status::ok();
}

Status kQLinearConv(KernelContext& ctx) {
  const Tensor &x = ctx.input(0), &w = ctx.input(3);
  KILN_ASSIGN(ir::WindowGeometry g, convGeometry(ctx, x, w));
  if (ctx.input(2).numElements() != 1 || ctx.input(1).numElements() != 1)
    return kernelError("x_scale and x_zero_point must be scalars");
  KILN_ASSIGN(std::vector<int32_t> xv, shifted(x, &ctx.input(2)));
  KILN_ASSIGN(std::vector<int32_t> wv, shifted(w, &ctx.input(5)));
  Tensor& y = ctx.allocate(0);
  int64_t m = y.dim(1), size = y.numElements() / std::max<int64_t>(1, y.dim(0) * m);
  std::vector<int32_t> acc(static_cast<size_t>(y.numElements()));
  convolve<int32_t>(xv.data(), x.dims(), wv.data(), w.dims(), g, ctx.node().getInt("group"), acc.data());
  std::vector<int64_t> bias = ctx.hasInput(8) ? ctx.input(8).toInt64s() : std::vector<int64_t>(size_t(m), 0);
  std::vector<double> wScale = ctx.input(4).toDoubles();
  float xScale = float(elementAsDouble(ctx.input(1), 0)), yScale = float(elementAsDouble(ctx.input(6), 0));
  int64_t yZero = ctx.input(7).toInt64s()[0];
  if (int64_t(bias.size()) != m || (wScale.size() != 1 && int64_t(wScale.size()) != m))
    return kernelError("bias and w_scale must have one value per output channel");
  bool isU8 = y.dtype() == DType::U8;
  for (int64_t i = 0; i < y.numElements(); ++i) {
    int64_t c = (i / size) % m;
    float scale = xScale * float(wScale[wScale.size() == 1 ? 0 : size_t(c)]) / yScale;
    double v = std::nearbyint(float(acc[size_t(i)] + bias[size_t(c)]) * scale) + double(yZero);
    v = std::clamp(v, isU8 ? 0.0 : -128.0, isU8 ? 255.0 : 127.0);
    if (isU8) y.mutableData<uint8_t>()[i] = uint8_t(v);
    else y.mutableData<int8_t>()[i] = int8_t(v);
  }
  return Status::ok();
}

/// X[c] at (y, x), bilinear, reading 0 outside the image (as ONNX Runtime and
/// torchvision's deformable convolution do).
double bilinearOrZero(const double* plane, int64_t h, int64_t w, double y, double x) {
  if (y <= -1 || y >= double(h) || x <= -1 || x >= double(w)) return 0.0;
  int64_t y0 = int64_t(std::floor(y)), x0 = int64_t(std::floor(x));
  double fy = y - double(y0), fx = x - double(x0), sum = 0.0;
  for (int64_t dy = 0; dy < 2; ++dy)
    for (int64_t dx = 0; dx < 2; ++dx) {
      int64_t yy = y0 + dy, xx = x0 + dx;
      if (yy < 0 || yy >= h || xx < 0 || xx >= w) continue;
      sum += (dy ? fy : 1 - fy) * (dx ? fx : 1 - fx) * plane[yy * w + xx];
    }
  return sum;
}

/// kiln::DeformConv: per image and offset group, the moved taps are sampled
/// into columns [C/offset_group * kH * kW] per output position, then each
/// output channel sums its group's columns against its weights.
Status kDeformConv(KernelContext& ctx) {
  const Tensor &x = ctx.input(0), &w = ctx.input(1);
  KILN_ASSIGN(ir::WindowGeometry g, convGeometry(ctx, x, w));
  Tensor& y = ctx.allocate(0);
  if (!isFloat(x.dtype())) return unsupportedDType(x.dtype());
  int64_t group = ctx.node().getInt("group"), offsetGroups = ctx.node().getInt("offset_group");
  if (x.rank() != 4 || w.rank() != 4 || group < 1 || offsetGroups < 1)
    return kernelError("DeformConv takes 2-D images and positive group and offset_group");
  int64_t batch = x.dim(0), c = x.dim(1), h = x.dim(2), wd = x.dim(3), m = w.dim(0), kh = w.dim(2), kw = w.dim(3);
  int64_t oh = g.output[0], ow = g.output[1], taps = kh * kw, cg = c / group, cOff = c / offsetGroups, mg = m / group;
  if (c % offsetGroups != 0 || m % group != 0 || w.dim(1) != cg || g.output.size() != 2 ||
      ctx.input(2).numElements() != batch * offsetGroups * 2 * taps * oh * ow ||
      (ctx.hasInput(3) && ctx.input(3).numElements() != m) ||
      (ctx.hasInput(4) && ctx.input(4).numElements() != batch * offsetGroups * taps * oh * ow))
    return kernelError("DeformConv operands do not match X, W and the output size");
  std::vector<double> xv = loadValues<double>(x), wv = loadValues<double>(w), off = loadValues<double>(ctx.input(2));
  std::vector<double> bias = ctx.hasInput(3) ? loadValues<double>(ctx.input(3)) : std::vector<double>(size_t(m), 0.0);
  std::vector<double> mask = ctx.hasInput(4) ? loadValues<double>(ctx.input(4)) : std::vector<double>();
  std::vector<double> yv(size_t(y.numElements())), cols(size_t(c * taps));
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t py = 0; py < oh; ++py)
      for (int64_t px = 0; px < ow; ++px) {
        for (int64_t ci = 0; ci < c; ++ci)
          for (int64_t t = 0; t < taps; ++t) {
            int64_t og = ci / cOff, at = py * ow + px;
            int64_t offY = ((n * offsetGroups + og) * 2 * taps + 2 * t) * oh * ow + at;
            double sy = double(py * g.strides[0] - g.padsBegin[0] + (t / kw) * g.dilations[0]) + off[size_t(offY)];
            double sx = double(px * g.strides[1] - g.padsBegin[1] + (t % kw) * g.dilations[1]) + off[size_t(offY + oh * ow)];
            double scale = mask.empty() ? 1.0 : mask[size_t(((n * offsetGroups + og) * taps + t) * oh * ow + at)];
            cols[size_t(ci * taps + t)] = scale * bilinearOrZero(&xv[size_t((n * c + ci) * h * wd)], h, wd, sy, sx);
          }
        for (int64_t mo = 0; mo < m; ++mo) {
          int64_t gi = mo / mg;
          double sum = bias[size_t(mo)];
          for (int64_t k = 0; k < cg * taps; ++k) sum += wv[size_t(mo * cg * taps + k)] * cols[size_t(gi * cg * taps + k)];
          yv[size_t(((n * m + mo) * oh + py) * ow + px)] = sum;
        }
      }
  storeValues(y, yv);
  return Status::ok();
}

}  // namespace

void registerConvKernels(KernelRegistry& r) {
  r.add("kiln::DeformConv", kDeformConv);
  r.add("Conv", kConv);
  r.add("ConvTranspose", kConvTranspose);
  r.add("ConvInteger", kConvInteger);
  r.add("QLinearConv", kQLinearConv);
}

}  // namespace kiln::runtime
