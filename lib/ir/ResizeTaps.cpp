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
}  // namespace


std::array<double, 4> cubicCoeffs(double r, double a) {
  auto far = [&](double t) { return ((a * t - 5 * a) * t + 8 * a) * t - 4 * a; };
  auto near = [&](double t) { return ((a + 2) * t - (a + 3)) * t * t + 1; };
  return {far(r + 1), near(r), near(1 - r), far(2 - r)};
}

Expected<std::vector<ResizeTaps>> resizeTaps(const ir::Node& n, int64_t in, int64_t out, double scale, double roiStart,
                                       double roiEnd) {
  const std::string& ctm = n.getString("coordinate_transformation_mode");
  const std::string& mode = n.getString("mode");
  const std::string& nearestMode = n.getString("nearest_mode");
  bool exclude = n.getInt("exclude_outside") != 0;
  double a = n.getFloat("cubic_coeff_a");
  std::vector<ResizeTaps> taps(static_cast<size_t>(out));
  for (int64_t o = 0; o < out; ++o) {
    // As in the ONNX reference, the output length in these formulas is
    // scale * input length (not rounded).
    double x, xo = double(o), outLen = scale * double(in);
    if (ctm == "half_pixel") x = (xo + 0.5) / scale - 0.5;
    else if (ctm == "pytorch_half_pixel") x = outLen > 1 ? (xo + 0.5) / scale - 0.5 : -0.5;
    else if (ctm == "align_corners") x = outLen == 1 ? 0.0 : xo * double(in - 1) / (outLen - 1);
    else if (ctm == "asymmetric") x = xo / scale;
    else if (ctm == "tf_half_pixel_for_nn") x = (xo + 0.5) / scale;
    else if (ctm == "tf_crop_and_resize")
      x = outLen > 1 ? roiStart * double(in - 1) + xo * (roiEnd - roiStart) * double(in - 1) / (outLen - 1)
                     : 0.5 * (roiStart + roiEnd) * double(in - 1);
    else return resizeError("coordinate_transformation_mode '" + ctm + "' is not supported");
    ResizeTaps& t = taps[size_t(o)];
    if (ctm == "tf_crop_and_resize" && (x < 0 || x > double(in - 1))) {
      t.outside = true;
      continue;
    }
    auto clampIdx = [&](int64_t i) { return std::clamp<int64_t>(i, 0, in - 1); };
    int64_t fl = int64_t(std::floor(x));
    double r = x - double(fl);
    if (mode == "nearest") {
      int64_t i = fl;
      if (r > 0) {
        if (nearestMode == "round_prefer_floor") i = r <= 0.5 ? fl : fl + 1;
        else if (nearestMode == "round_prefer_ceil") i = r < 0.5 ? fl : fl + 1;
        else if (nearestMode == "floor") i = fl;
        else if (nearestMode == "ceil") i = fl + 1;
        else return resizeError("nearest_mode '" + nearestMode + "' is not supported");
      }
      t.taps.push_back({clampIdx(i), 1.0});
    } else if (mode == "linear") {
      t.taps.push_back({clampIdx(fl), 1 - r});
      if (r > 0) t.taps.push_back({clampIdx(fl + 1), r});
    } else {
      auto c = cubicCoeffs(r, a);
      double sum = 0;
      for (int k = 0; k < 4; ++k) {
        int64_t i = fl - 1 + k;
        double w = c[size_t(k)];
        if (exclude && (i < 0 || i >= in)) w = 0;
        sum += w;
        t.taps.push_back({clampIdx(i), w});
      }
      if (exclude && sum != 0)
        for (auto& p : t.taps) p.second /= sum;
    }
  }
  return taps;
}

}  // namespace kiln::ir
