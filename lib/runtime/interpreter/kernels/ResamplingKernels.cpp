//===- lib/runtime/interpreter/kernels/ResamplingKernels.cpp - Resize, GridSample, RoiAlign -===//
//
// Resize follows the ONNX reference: per dim, each output coordinate maps to
// an input coordinate by coordinate_transformation_mode, then to taps (1, 2 or
// 4 input indices with weights; edges clamp, exclude_outside renormalises,
// tf_crop_and_resize extrapolates), applied separably. GridSample and RoiAlign
// sample bilinearly (or nearest/bicubic) as ONNX Runtime does.
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

Status kGridSample(KernelContext& ctx) {
  const Tensor &x = ctx.input(0), &grid = ctx.input(1);
  if (!isFloat(x.dtype())) return unsupportedDType(x.dtype());
  if (x.rank() != 4 || grid.rank() != 4 || grid.dim(3) != 2 || grid.dim(0) != x.dim(0))
    return kernelError("GridSample expects X [N,C,H,W] and grid [N,Ho,Wo,2]");
  Tensor& y = ctx.allocate(0);
  const ir::Node& n = ctx.node();
  bool align = n.getInt("align_corners") != 0;
  const std::string &mode = n.getString("mode"), &pad = n.getString("padding_mode");
  int64_t N = x.dim(0), C = x.dim(1), H = x.dim(2), W = x.dim(3), Ho = grid.dim(1), Wo = grid.dim(2);
  double xMin = align ? 0 : -0.5, xMax = align ? double(W - 1) : double(W) - 0.5;
  double yMin = align ? 0 : -0.5, yMax = align ? double(H - 1) : double(H) - 0.5;
  std::vector<double> xv = x.toDoubles(), gv = grid.toDoubles(), out(static_cast<size_t>(y.numElements()));
  auto denorm = [&](double v, int64_t len) { return align ? (v + 1) / 2 * double(len - 1) : ((v + 1) * double(len) - 1) / 2; };
  for (int64_t b = 0; b < N; ++b)
    for (int64_t c = 0; c < C; ++c) {
      const double* img = xv.data() + (b * C + c) * H * W;
      auto pixel = [&](int64_t r, int64_t col) -> double {
        if (pad == "zeros") return (r >= 0 && r < H && col >= 0 && col < W) ? img[r * W + col] : 0.0;
        if (pad == "border") return img[std::clamp<int64_t>(r, 0, H - 1) * W + std::clamp<int64_t>(col, 0, W - 1)];
        int64_t rr = std::clamp<int64_t>(int64_t(reflect(double(r), yMin, yMax)), 0, H - 1);
        int64_t cc = std::clamp<int64_t>(int64_t(reflect(double(col), xMin, xMax)), 0, W - 1);
        return img[rr * W + cc];
      };
      for (int64_t oy = 0; oy < Ho; ++oy)
        for (int64_t ox = 0; ox < Wo; ++ox) {
          size_t g = size_t(((b * Ho + oy) * Wo + ox) * 2);
          double px = denorm(gv[g], W), py = denorm(gv[g + 1], H);
          if (mode == "nearest") {
            px = std::nearbyint(px);
            py = std::nearbyint(py);
          }
          if (px < xMin || px > xMax || py < yMin || py > yMax) {
            if (pad == "border") {
              px = std::clamp(px, 0.0, double(W - 1));
              py = std::clamp(py, 0.0, double(H - 1));
            } else if (pad == "reflection") {
              px = reflect(px, xMin, xMax);
              py = reflect(py, yMin, yMax);
            }
          }
          double v;
          if (mode == "nearest") {
            v = pixel(int64_t(std::nearbyint(py)), int64_t(std::nearbyint(px)));
          } else if (mode == "bilinear") {
            int64_t x1 = int64_t(std::floor(px)), y1 = int64_t(std::floor(py));
            double dx = px - double(x1), dy = py - double(y1);
            v = (1 - dy) * ((1 - dx) * pixel(y1, x1) + dx * pixel(y1, x1 + 1)) +
                dy * ((1 - dx) * pixel(y1 + 1, x1) + dx * pixel(y1 + 1, x1 + 1));
          } else {
            int64_t x0 = int64_t(std::floor(px)) - 1, y0 = int64_t(std::floor(py)) - 1;
            auto cx = cubicCoeffs(px - double(x0 + 1), -0.75), cy = cubicCoeffs(py - double(y0 + 1), -0.75);
            v = 0;
            for (int i = 0; i < 4; ++i) {
              double row = 0;
              for (int j = 0; j < 4; ++j) row += cx[size_t(j)] * pixel(y0 + i, x0 + j);
              v += cy[size_t(i)] * row;
            }
          }
          out[size_t(((b * C + c) * Ho + oy) * Wo + ox)] = v;
        }
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
