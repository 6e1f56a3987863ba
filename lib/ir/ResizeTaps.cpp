//===- lib/ir/ResizeTaps.cpp - Resize sampling positions and weights -------===//
//
// See ResizeTaps.h; the formulas are the ONNX reference's.
//
//===----------------------------------------------------------------------===//
#include "kiln/ir/ResizeTaps.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace kiln::ir {
namespace {
Error resizeError(const std::string& msg) { return Error(ErrorCode::ExecUnsupported, "Resize: " + msg); }

/// The input coordinate that output coordinate `o` maps back to. As in the
/// ONNX reference, the output length in these formulas is scale * input
/// length (not rounded).
Expected<double> sourceCoordinate(const std::string& ctm, int64_t o, int64_t in, int64_t out, double scale,
                                  double roiStart, double roiEnd) {
  double xo = double(o), outLen = scale * double(in);
  if (ctm == "half_pixel") return (xo + 0.5) / scale - 0.5;
  if (ctm == "half_pixel_symmetric")  // half_pixel, recentred for the rounding of the output length
    return 0.5 * double(in) * (1 - double(out) / outLen) + (xo + 0.5) / scale - 0.5;
  if (ctm == "pytorch_half_pixel") return outLen > 1 ? (xo + 0.5) / scale - 0.5 : -0.5;
  if (ctm == "align_corners") return outLen == 1 ? 0.0 : xo * double(in - 1) / (outLen - 1);
  if (ctm == "asymmetric") return xo / scale;
  if (ctm == "tf_half_pixel_for_nn") return (xo + 0.5) / scale;
  if (ctm == "tf_crop_and_resize")
    return outLen > 1 ? roiStart * double(in - 1) + xo * (roiEnd - roiStart) * double(in - 1) / (outLen - 1)
                      : 0.5 * (roiStart + roiEnd) * double(in - 1);
  return resizeError("coordinate_transformation_mode '" + ctm + "' is not supported");
}

/// Keys' cubic kernel at distance t (coefficient a); 0 from 2 on.
double cubicKernel(double t, double a) {
  t = std::abs(t);
  if (t <= 1) return ((a + 2) * t - (a + 3)) * t * t + 1;
  if (t < 2) return ((a * t - 5 * a) * t + 8 * a) * t - 4 * a;
  return 0.0;
}

/// Antialiased taps around x for scale < 1: the linear (support 1) or cubic
/// (support 2) filter stretched by 1 / scale, normalised over its taps; the
/// neighbours are those of the fraction in (0, 1] (an integer x counts as
/// the left neighbour's 1), as in the ONNX reference.
std::vector<std::pair<int64_t, double>> antialiasTaps(const ResizeSampling& s, double x, double scale) {
  int64_t base = int64_t(std::floor(x));
  double ratio = x - double(base);
  if (ratio == 0) ratio = 1, --base;
  double support = s.mode == "linear" ? 1.0 : 2.0;
  int64_t start = int64_t(std::floor(-support / scale)) + 1, count = 2 - 2 * start;
  std::vector<std::pair<int64_t, double>> taps;
  double sum = 0;
  for (int64_t j = start; j < start + count; ++j) {
    double t = (double(j) - ratio) * scale;
    double w = s.mode == "linear" ? std::max(0.0, 1 - std::abs(t)) : cubicKernel(t, s.cubicCoeffA);
    taps.push_back({base + j, w});
    sum += w;
  }
  if (sum != 0)
    for (auto& p : taps) p.second /= sum;
  return taps;
}
}  // namespace

ResizeSampling ResizeSampling::of(const Node& n) {
  ResizeSampling s;
  s.coordinateMode = n.getString("coordinate_transformation_mode");
  s.mode = n.getString("mode");
  s.nearestMode = n.getString("nearest_mode");
  s.excludeOutside = n.getInt("exclude_outside") != 0;
  s.cubicCoeffA = n.getFloat("cubic_coeff_a");
  return s;
}

int64_t resizedLength(int64_t in, double scale) { return int64_t(std::floor(double(in) * scale + 1e-9)); }

bool resizesBySizes(const Node& n, const Tensor* knownSizes) {
  return n.numInputs() > 3 && n.hasInput(3) && (!knownSizes || knownSizes->numElements() > 0);
}

std::array<double, 4> cubicCoeffs(double r, double a) {
  return {cubicKernel(r + 1, a), cubicKernel(r, a), cubicKernel(1 - r, a), cubicKernel(2 - r, a)};
}

Expected<std::vector<ResizeTaps>> resizeTaps(const Node& n, int64_t in, int64_t out, double scale, double roiStart,
                                             double roiEnd) {
  return resizeTaps(ResizeSampling::of(n), in, out, scale, roiStart, roiEnd);
}

Expected<std::vector<ResizeTaps>> resizeTaps(const ResizeSampling& s, int64_t in, int64_t out, double scale,
                                             double roiStart, double roiEnd) {
  const std::string& ctm = s.coordinateMode;
  std::vector<ResizeTaps> taps(static_cast<size_t>(out));
  for (int64_t o = 0; o < out; ++o) {
    KILN_ASSIGN(double x, sourceCoordinate(ctm, o, in, out, scale, roiStart, roiEnd));
    ResizeTaps& t = taps[size_t(o)];
    if (ctm == "tf_crop_and_resize" && (x < 0 || x > double(in - 1))) {
      t.outside = true;
      continue;
    }
    auto clampIdx = [&](int64_t i) { return std::clamp<int64_t>(i, 0, in - 1); };
    int64_t fl = int64_t(std::floor(x));
    double r = x - double(fl);
    if (s.mode == "nearest") {
      int64_t i = fl;
      if (r > 0) {
        if (s.nearestMode == "round_prefer_floor") i = r <= 0.5 ? fl : fl + 1;
        else if (s.nearestMode == "round_prefer_ceil") i = r < 0.5 ? fl : fl + 1;
        else if (s.nearestMode == "floor") i = fl;
        else if (s.nearestMode == "ceil") i = fl + 1;
        else return resizeError("nearest_mode '" + s.nearestMode + "' is not supported");
      }
      t.taps.push_back({clampIdx(i), 1.0});
    } else if (s.antialias && scale < 1) {
      t.taps = antialiasTaps(s, x, scale);
    } else if (s.mode == "linear") {
      t.taps.push_back({fl, 1 - r});
      if (r > 0) t.taps.push_back({fl + 1, r});
    } else {
      auto c = cubicCoeffs(r, s.cubicCoeffA);
      for (int k = 0; k < 4; ++k) t.taps.push_back({fl - 1 + k, c[size_t(k)]});
    }
    if (s.excludeOutside && s.mode != "nearest") {
      double sum = 0;
      for (auto& p : t.taps) {
        if (p.first < 0 || p.first >= in) p.second = 0;
        sum += p.second;
      }
      if (sum != 0)
        for (auto& p : t.taps) p.second /= sum;
    }
    for (auto& p : t.taps) p.first = clampIdx(p.first);
  }
  return taps;
}

}  // namespace kiln::ir
