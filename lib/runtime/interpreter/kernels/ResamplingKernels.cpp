//===- lib/runtime/interpreter/kernels/ResamplingKernels.cpp - Resize, GridSample, RoiAlign -===//
//
// Resize follows the ONNX reference: per dim, each output coordinate maps to
// an input coordinate by coordinate_transformation_mode, then to taps (1, 2 or
// 4 input indices with weights; edges clamp, exclude_outside renormalises,
// tf_crop_and_resize extrapolates), applied separably. GridSample (2-D and
// 3-D) and RoiAlign sample linearly (or nearest/bicubic) as ONNX Runtime does.
//
//===----------------------------------------------------------------------===//
#include "../KernelContext.h"
#include "KernelFamilies.h"
#include "KernelUtils.h"
#include "kiln/ir/ResizeTaps.h"

namespace kiln::runtime {
using namespace kernels;

namespace {

using ir::ResizeTaps;
using ir::cubicCoeffs;

Status kResize(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (!isFloat(x.dtype()) && x.dtype() != DType::U8 && x.dtype() != DType::I8 && x.dtype() != DType::I32 && x.dtype() != DType::I64)
    return unsupportedDType(x.dtype());
  Tensor& y = ctx.allocate(0);
  int64_t rank = x.rank();
  std::vector<double> scales(size_t(rank), 1.0);
  if (ir::resizesBySizes(ctx.node(), ctx.hasInput(3) ? &ctx.input(3) : nullptr)) {
    for (int64_t d = 0; d < rank; ++d) scales[size_t(d)] = x.dim(d) ? double(y.dim(d)) / double(x.dim(d)) : 1.0;
  } else if (ctx.hasInput(2) && ctx.input(2).numElements() > 0) {
    scales = ctx.input(2).toDoubles();
  }
  std::vector<double> roi;
  if (ctx.hasInput(1) && ctx.input(1).numElements() > 0) roi = ctx.input(1).toDoubles();
  if (!roi.empty() && int64_t(roi.size()) != 2 * rank) return kernelError("roi must have 2 * rank values");
  std::vector<std::vector<ResizeTaps>> taps;
  for (int64_t d = 0; d < rank; ++d) {
    double rs = roi.empty() ? 0.0 : roi[size_t(d)], re = roi.empty() ? 1.0 : roi[size_t(d + rank)];
    KILN_ASSIGN(auto t, ir::resizeTaps(ctx.node(), x.dim(d), y.dim(d), scales[size_t(d)], rs, re));
    taps.push_back(std::move(t));
  }
  double extrapolation = ctx.node().getFloat("extrapolation_value");
  std::vector<double> xv = x.toDoubles(), out(static_cast<size_t>(y.numElements()));
  Dims inStrides = stridesOf(x.dims());
  std::vector<int64_t> idx(static_cast<size_t>(rank));
  // Separable interpolation, dim by dim (recursively, like the ONNX reference).
  std::function<double(int64_t, int64_t)> interp = [&](int64_t d, int64_t offset) -> double {
    if (d == rank) return xv[size_t(offset)];
    const ResizeTaps& t = taps[size_t(d)][size_t(idx[size_t(d)])];
    if (t.outside) return extrapolation;
    double s = 0;
    for (const auto& [i, w] : t.taps)
      if (w != 0) s += w * interp(d + 1, offset + i * inStrides[size_t(d)]);
    return s;
  };
  for (int64_t o = 0; o < y.numElements(); ++o) {
    int64_t r = o;
    for (int64_t d = rank - 1; d >= 0; --d) {
      idx[size_t(d)] = r % y.dim(d);
      r /= y.dim(d);
    }
    out[size_t(o)] = interp(0, 0);
  }
  return forNumeric(y.dtype(), [&]<class T>() {
    for (size_t i = 0; i < out.size(); ++i) {
      double v = out[i];
      if constexpr (std::is_integral_v<T>) v = std::nearbyint(v);
      y.mutableData<T>()[i] = convertValue<T, double>(v);
    }
  });
}

double reflect(double x, double lo, double hi) {
  double range = hi - lo;
  if (range <= 0) return lo;
  if (x < lo) {
    double dx = lo - x;
    int64_t n = int64_t(dx / range);
    double r = dx - double(n) * range;
    return n % 2 == 0 ? lo + r : hi - r;
  }
  if (x > hi) {
    double dx = x - hi;
    int64_t n = int64_t(dx / range);
    double r = dx - double(n) * range;
    return n % 2 == 0 ? hi - r : lo + r;
  }
  return x;
}

/// GridSample over S = 2 or 3 spatial dims (ONNX Runtime's rules): X [N, C,
/// D1..DS], grid [N, O1..OS, S] whose last axis lists coordinates from the
/// innermost dim out (x, y, z). Nearest and (bi/tri)linear sample any S;
/// bicubic only 2-D images.
class GridSampler {
 public:
  GridSampler(const ir::Node& n, const Dims& spatial)
      : align_(n.getInt("align_corners") != 0), mode_(n.getString("mode")), pad_(n.getString("padding_mode")),
        len_(spatial) {}

  /// The value at input coordinates `p` (one per spatial dim, outer first) of `img`.
  double sample(const double* img, std::vector<double> p) const {
    const size_t S = len_.size();
    bool outside = false;
    for (size_t s = 0; s < S; ++s) {
      if (mode_ == "nearest") p[s] = std::nearbyint(p[s]);
      outside = outside || p[s] < lo(s) || p[s] > hi(s);
    }
    // A point outside along any dim moves along every dim, as in ONNX Runtime.
    for (size_t s = 0; outside && s < S; ++s) {
      if (pad_ == "border") p[s] = std::clamp(p[s], 0.0, double(len_[s] - 1));
      else if (pad_ == "reflection") p[s] = reflect(p[s], lo(s), hi(s));
    }
    std::vector<int64_t> at(S);
    if (mode_ == "nearest") {
      for (size_t s = 0; s < S; ++s) at[s] = int64_t(std::nearbyint(p[s]));
      return pixel(img, at);
    }
    if (mode_ == "bicubic") return bicubic(img, p);
    double v = 0;
    for (size_t corner = 0; corner < (size_t(1) << S); ++corner) {
      double w = 1;
      for (size_t s = 0; s < S; ++s) {
        const double base = std::floor(p[s]), frac = p[s] - base;
        const bool upper = (corner >> s) & 1;
        at[s] = int64_t(base) + upper;
        w *= upper ? frac : 1 - frac;
      }
      v += w * pixel(img, at);
    }
    return v;
  }

  /// Grid value `g` (in [-1, 1] across the image) as a coordinate along spatial dim `s`.
  double denormalize(double g, size_t s) const {
    const double len = double(len_[s]);
    return align_ ? (g + 1) / 2 * (len - 1) : ((g + 1) * len - 1) / 2;
  }

 private:
  double lo(size_t) const { return align_ ? 0 : -0.5; }
  double hi(size_t s) const { return align_ ? double(len_[s] - 1) : double(len_[s]) - 0.5; }

  double pixel(const double* img, const std::vector<int64_t>& at) const {
    int64_t offset = 0;
    for (size_t s = 0; s < len_.size(); ++s) {
      int64_t i = at[s];
      if (pad_ == "zeros" && (i < 0 || i >= len_[s])) return 0.0;
      if (pad_ == "reflection") i = int64_t(reflect(double(i), lo(s), hi(s)));
      offset = offset * len_[s] + std::clamp<int64_t>(i, 0, len_[s] - 1);
    }
    return img[offset];
  }

  double bicubic(const double* img, const std::vector<double>& p) const {
    const int64_t y0 = int64_t(std::floor(p[0])) - 1, x0 = int64_t(std::floor(p[1])) - 1;
    auto cy = cubicCoeffs(p[0] - double(y0 + 1), -0.75), cx = cubicCoeffs(p[1] - double(x0 + 1), -0.75);
    double v = 0;
    for (int i = 0; i < 4; ++i) {
      double row = 0;
      for (int j = 0; j < 4; ++j) row += cx[size_t(j)] * pixel(img, {y0 + i, x0 + j});
      v += cy[size_t(i)] * row;
    }
    return v;
  }

  bool align_;
  std::string mode_, pad_;
  Dims len_;
};

Status kGridSample(KernelContext& ctx) {
  const Tensor &x = ctx.input(0), &grid = ctx.input(1);
  if (!isFloat(x.dtype())) return unsupportedDType(x.dtype());
  const int64_t S = x.rank() - 2;
  if ((S != 2 && S != 3) || grid.rank() != x.rank() || grid.dim(x.rank() - 1) != S || grid.dim(0) != x.dim(0))
    return kernelError("GridSample expects X [N,C,H,W] and grid [N,Ho,Wo,2], or X [N,C,D,H,W] and grid [N,Do,Ho,Wo,3]");
  if (S == 3 && ctx.node().getString("mode") == "bicubic") return kernelError("GridSample: bicubic samples 2-D images only");
  Tensor& y = ctx.allocate(0);
  const Dims spatial(x.dims().begin() + 2, x.dims().end());
  const GridSampler sampler(ctx.node(), spatial);
  const int64_t N = x.dim(0), C = x.dim(1), image = numElements(spatial);
  const int64_t points = numElements(Dims(grid.dims().begin() + 1, grid.dims().end() - 1));
  std::vector<double> xv = x.toDoubles(), gv = grid.toDoubles(), out(static_cast<size_t>(y.numElements()));
  std::vector<double> p(static_cast<size_t>(S));
  for (int64_t b = 0; b < N; ++b)
    for (int64_t o = 0; o < points; ++o) {
      const double* g = gv.data() + (b * points + o) * S;
      for (int64_t s = 0; s < S; ++s) p[size_t(s)] = sampler.denormalize(g[S - 1 - s], size_t(s));
      for (int64_t c = 0; c < C; ++c)
        out[size_t((b * C + c) * points + o)] = sampler.sample(xv.data() + (b * C + c) * image, p);
    }
  storeValues(y, out);
  return Status::ok();
}

Status kRoiAlign(KernelContext& ctx) {
  const Tensor &x = ctx.input(0), &rois = ctx.input(1), &batch = ctx.input(2);
  if (!isFloat(x.dtype())) return unsupportedDType(x.dtype());
  if (rois.rank() != 2 || rois.dim(1) != 4 || batch.numElements() != rois.dim(0))
    return kernelError("rois must be [R, 4] with one batch index per roi");
  Tensor& y = ctx.allocate(0);
  const ir::Node& n = ctx.node();
  bool halfPixel = n.getString("coordinate_transformation_mode") == "half_pixel";
  bool isMax = n.getString("mode") == "max";
  int64_t ph = n.getInt("output_height"), pw = n.getInt("output_width"), ratio = n.getInt("sampling_ratio");
  double scale = n.getFloat("spatial_scale"), offset = halfPixel ? 0.5 : 0.0;
  int64_t C = x.dim(1), H = x.dim(2), W = x.dim(3);
  std::vector<double> xv = x.toDoubles(), rv = rois.toDoubles(), out(static_cast<size_t>(y.numElements()));
  std::vector<int64_t> bi = batch.toInt64s();
  for (int64_t r = 0; r < rois.dim(0); ++r) {
    if (bi[size_t(r)] < 0 || bi[size_t(r)] >= x.dim(0)) return kernelError("batch index out of range");
    double x1 = rv[size_t(r * 4)] * scale - offset, y1 = rv[size_t(r * 4 + 1)] * scale - offset;
    double x2 = rv[size_t(r * 4 + 2)] * scale - offset, y2 = rv[size_t(r * 4 + 3)] * scale - offset;
    double rw = x2 - x1, rh = y2 - y1;
    if (!halfPixel) {
      rw = std::max(rw, 1.0);
      rh = std::max(rh, 1.0);
    }
    double bh = rh / double(ph), bw = rw / double(pw);
    int64_t gh = ratio > 0 ? ratio : int64_t(std::ceil(rh / double(ph)));
    int64_t gw = ratio > 0 ? ratio : int64_t(std::ceil(rw / double(pw)));
    double count = double(std::max<int64_t>(gh * gw, 1));
    for (int64_t c = 0; c < C; ++c) {
      const double* img = xv.data() + (bi[size_t(r)] * C + c) * H * W;
      for (int64_t i = 0; i < ph; ++i)
        for (int64_t j = 0; j < pw; ++j) {
          double acc = isMax ? -std::numeric_limits<double>::infinity() : 0.0;
          bool any = false;
          for (int64_t iy = 0; iy < gh; ++iy)
            for (int64_t ix = 0; ix < gw; ++ix) {
              double yy = y1 + double(i) * bh + (double(iy) + 0.5) * bh / double(gh);
              double xx = x1 + double(j) * bw + (double(ix) + 0.5) * bw / double(gw);
              if (yy < -1.0 || yy > double(H) || xx < -1.0 || xx > double(W)) {
                if (isMax) {
                  acc = std::max(acc, 0.0);
                  any = true;
                }
                continue;
              }
              yy = std::max(yy, 0.0);
              xx = std::max(xx, 0.0);
              int64_t yl = int64_t(yy), xl = int64_t(xx), yh, xh;
              if (yl >= H - 1) yh = yl = H - 1, yy = double(yl);
              else yh = yl + 1;
              if (xl >= W - 1) xh = xl = W - 1, xx = double(xl);
              else xh = xl + 1;
              double ly = yy - double(yl), lx = xx - double(xl), hy = 1 - ly, hx = 1 - lx;
              double v1 = hy * hx * img[yl * W + xl], v2 = hy * lx * img[yl * W + xh];
              double v3 = ly * hx * img[yh * W + xl], v4 = ly * lx * img[yh * W + xh];
              if (isMax) acc = std::max({acc, v1, v2, v3, v4});
              else acc += v1 + v2 + v3 + v4;
              any = true;
            }
          out[size_t(((r * C + c) * ph + i) * pw + j)] = isMax ? (any ? acc : 0.0) : acc / count;
        }
    }
  }
  storeValues(y, out);
  return Status::ok();
}

}  // namespace

void registerResamplingKernels(KernelRegistry& r) {
  r.add("Resize", kResize);
  r.add("GridSample", kGridSample);
  r.add("RoiAlign", kRoiAlign);
}

}  // namespace kiln::runtime
