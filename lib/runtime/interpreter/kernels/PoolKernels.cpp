//===- lib/runtime/interpreter/kernels/PoolKernels.cpp - Pooling ----------===//
//
// Max/average/Lp pooling over N-d windows (padding, dilation, ceil_mode,
// count_include_pad, MaxPool indices in either storage order), the global
// variants, MaxUnpool and MaxRoiPool.
//
//===----------------------------------------------------------------------===//
#include "../KernelContext.h"
#include "KernelFamilies.h"
#include "KernelUtils.h"

namespace kiln::runtime {
using namespace kernels;

namespace {

enum class Pool { Max, Avg, Lp };

template <Pool kind>
Status kPool(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const ir::Node& node = ctx.node();
  Dims in(x.dims().begin() + 2, x.dims().end());
  bool ceil = node.schema().findAttr("ceil_mode") && node.getInt("ceil_mode");
  KILN_ASSIGN(ir::WindowGeometry g, ir::computeWindowGeometry(node, in, node.getInts("kernel_shape"), ceil));
  Tensor& y = ctx.allocate(0);
  Tensor* indices = ctx.numOutputs() > 1 ? &ctx.allocate(1) : nullptr;
  bool includePad = kind == Pool::Avg && node.getInt("count_include_pad");
  bool columnMajor = kind == Pool::Max && node.getInt("storage_order");
  double p = kind == Pool::Lp ? double(node.getInt("p")) : 0;
  size_t s = in.size();
  int64_t inSize = numElements(in), outSize = numElements(g.output), kSize = numElements(g.kernel);
  int64_t planes = x.dim(0) * x.dim(1);
  Dims inStrides = stridesOf(in), colStrides(s, 1);
  for (size_t d = 1; d < s; ++d) colStrides[d] = colStrides[d - 1] * in[d - 1];  // column-major index
  std::vector<int64_t> oIdx(s), kIdx(s);
  return forNumeric(x.dtype(), [&]<class T>() {
    const T* px = x.data<T>();
    T* py = y.mutableData<T>();
    for (int64_t plane = 0; plane < planes; ++plane) {
      const T* src = px + plane * inSize;
      for (int64_t o = 0; o < outSize; ++o) {
        int64_t r = o;
        for (size_t d = s; d-- > 0;) {
          oIdx[d] = r % g.output[d];
          r /= g.output[d];
        }
        double acc = kind == Pool::Max ? -std::numeric_limits<double>::infinity() : 0.0;
        int64_t best = -1, count = 0;
        for (int64_t k = 0; k < kSize; ++k) {
          int64_t kr = k, off = 0, colOff = 0;
          bool inside = true, inPadded = true;
          for (size_t d = s; d-- > 0;) {
            kIdx[d] = kr % g.kernel[d];
            kr /= g.kernel[d];
            int64_t pos = oIdx[d] * g.strides[d] - g.padsBegin[d] + kIdx[d] * g.dilations[d];
            if (pos < 0 || pos >= in[d]) inside = false;
            if (pos < -g.padsBegin[d] || pos >= in[d] + g.padsEnd[d]) inPadded = false;
            off += pos * inStrides[d];
            colOff += pos * colStrides[d];
          }
          if (includePad && inPadded) ++count;
          if (!inside) continue;
          if (!includePad) ++count;
          double v = double(ComputeType<T>(src[off]));
          if constexpr (kind == Pool::Max) {
            if (v > acc || best < 0) {
              acc = v;
              best = columnMajor ? colOff : off;
            }
          } else if constexpr (kind == Pool::Avg) {
            acc += v;
          } else {
            acc += std::pow(std::fabs(v), p);
          }
        }
        double result = acc;
        if constexpr (kind == Pool::Avg) result = count ? acc / double(count) : 0.0;
        if constexpr (kind == Pool::Lp) result = std::pow(acc, 1.0 / p);
        if constexpr (kind == Pool::Max)
          if (best < 0) result = 0;
        py[plane * outSize + o] = convertValue<T, double>(result);
        if (indices) indices->mutableData<int64_t>()[plane * outSize + o] = plane * inSize + std::max<int64_t>(best, 0);
      }
    }
  });
}

template <Pool kind>
Status kGlobalPool(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.allocate(0);
  int64_t planes = x.dim(0) * x.dim(1), size = planes ? x.numElements() / planes : 0;
  double p = kind == Pool::Lp ? double(ctx.node().getInt("p")) : 0;
  return forFloat(x.dtype(), [&]<class T>() {
    const T* px = x.data<T>();
    for (int64_t plane = 0; plane < planes; ++plane) {
      double acc = kind == Pool::Max ? -std::numeric_limits<double>::infinity() : 0.0;
      for (int64_t i = 0; i < size; ++i) {
        double v = double(ComputeType<T>(px[plane * size + i]));
        if constexpr (kind == Pool::Max) acc = std::max(acc, v);
        else if constexpr (kind == Pool::Avg) acc += v;
        else acc += std::pow(std::fabs(v), p);
      }
      if constexpr (kind == Pool::Avg) acc = size ? acc / double(size) : 0.0;
      if constexpr (kind == Pool::Lp) acc = std::pow(acc, 1.0 / p);
      y.mutableData<T>()[plane] = T(acc);
    }
  });
}

Status kMaxUnpool(KernelContext& ctx) {
  const Tensor &x = ctx.input(0), &idx = ctx.input(1);
  if (idx.numElements() != x.numElements()) return kernelError("indices must have one entry per input element");
  Tensor& y = ctx.allocate(0);
  // Indices address the tensor MaxPool read (the default unpooled shape); an
  // explicit output_shape may be larger, with the extra positions at the end.
  const ir::Node& n = ctx.node();
  size_t s = size_t(x.rank()) - 2;
  const Dims& kernel = n.getInts("kernel_shape");
  Dims strides = n.hasAttr("strides") ? n.getInts("strides") : Dims(s, 1);
  Dims pads = n.hasAttr("pads") ? n.getInts("pads") : Dims(2 * s, 0);
  Dims natural(s), outSpatial(y.dims().begin() + 2, y.dims().end());
  for (size_t d = 0; d < s; ++d) natural[d] = (x.dim(int64_t(d) + 2) - 1) * strides[d] + kernel[d] - pads[d] - pads[d + s];
  int64_t naturalSize = numElements(natural), outSize = numElements(outSpatial);
  std::vector<int64_t> ind = idx.toInt64s();
  return forNumeric(x.dtype(), [&]<class T>() {
    for (int64_t i = 0; i < x.numElements(); ++i) {
      int64_t k = ind[size_t(i)], plane = naturalSize ? k / naturalSize : 0, r = naturalSize ? k % naturalSize : 0;
      int64_t off = 0, stride = 1;
      bool inside = k >= 0;
      for (size_t d = s; d-- > 0;) {
        int64_t c = r % natural[d];
        r /= natural[d];
        inside &= c < outSpatial[d];
        off += c * stride;
        stride *= outSpatial[d];
      }
      int64_t target = plane * outSize + off;
      if (!inside || target >= y.numElements()) continue;  // out-of-range indices are dropped
      y.mutableData<T>()[target] = x.data<T>()[i];
    }
  });
}

Status kMaxRoiPool(KernelContext& ctx) {
  const Tensor &x = ctx.input(0), &rois = ctx.input(1);
  if (x.rank() != 4 || rois.rank() != 2 || rois.dim(1) != 5) return kernelError("expects X [N,C,H,W] and rois [R,5]");
  Tensor& y = ctx.allocate(0);
  const Dims& pooled = ctx.node().getInts("pooled_shape");
  double scale = ctx.node().getFloat("spatial_scale");
  int64_t c = x.dim(1), h = x.dim(2), w = x.dim(3), ph = pooled[0], pw = pooled[1];
  return forFloat(x.dtype(), [&]<class T>() {
    for (int64_t r = 0; r < rois.dim(0); ++r) {
      int64_t b = convertValue<int64_t, double>(elementAsDouble(rois, r * 5));
      if (b < 0 || b >= x.dim(0)) continue;
      int64_t x1 = int64_t(std::round(elementAsDouble(rois, r * 5 + 1) * scale));
      int64_t y1 = int64_t(std::round(elementAsDouble(rois, r * 5 + 2) * scale));
      int64_t x2 = int64_t(std::round(elementAsDouble(rois, r * 5 + 3) * scale));
      int64_t y2 = int64_t(std::round(elementAsDouble(rois, r * 5 + 4) * scale));
      double binH = double(std::max<int64_t>(y2 - y1 + 1, 1)) / double(ph);
      double binW = double(std::max<int64_t>(x2 - x1 + 1, 1)) / double(pw);
      for (int64_t ch = 0; ch < c; ++ch)
        for (int64_t i = 0; i < ph; ++i)
          for (int64_t j = 0; j < pw; ++j) {
            int64_t hs = std::clamp<int64_t>(int64_t(std::floor(double(i) * binH)) + y1, 0, h);
            int64_t he = std::clamp<int64_t>(int64_t(std::ceil(double(i + 1) * binH)) + y1, 0, h);
            int64_t ws = std::clamp<int64_t>(int64_t(std::floor(double(j) * binW)) + x1, 0, w);
            int64_t we = std::clamp<int64_t>(int64_t(std::ceil(double(j + 1) * binW)) + x1, 0, w);
            double best = (he <= hs || we <= ws) ? 0.0 : -std::numeric_limits<double>::infinity();
            for (int64_t yy = hs; yy < he; ++yy)
              for (int64_t xx = ws; xx < we; ++xx)
                best = std::max(best, double(ComputeType<T>(x.data<T>()[((b * c + ch) * h + yy) * w + xx])));
            y.mutableData<T>()[((r * c + ch) * ph + i) * pw + j] = T(best);
          }
    }
  });
}

}  // namespace

void registerPoolKernels(KernelRegistry& r) {
  r.add("MaxPool", kPool<Pool::Max>);
  r.add("AveragePool", kPool<Pool::Avg>);
  r.add("LpPool", kPool<Pool::Lp>);
  r.add("GlobalMaxPool", kGlobalPool<Pool::Max>);
  r.add("GlobalAveragePool", kGlobalPool<Pool::Avg>);
  r.add("GlobalLpPool", kGlobalPool<Pool::Lp>);
  r.add("MaxUnpool", kMaxUnpool);
  r.add("MaxRoiPool", kMaxRoiPool);
}

}  // namespace kiln::runtime
