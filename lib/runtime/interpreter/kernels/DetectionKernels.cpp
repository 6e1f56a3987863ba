//===- lib/runtime/interpreter/kernels/DetectionKernels.cpp - NonMaxSuppression -===//
//
// Greedy per-(batch, class) non-maximum suppression: candidates above the
// score threshold in descending score order (ties: lower box index first), a
// box is kept unless its IoU with a kept box exceeds the IoU threshold.
//
//===----------------------------------------------------------------------===//
#include <numeric>

#include "../KernelContext.h"
#include "KernelFamilies.h"
#include "KernelUtils.h"

namespace kiln::runtime {
using namespace kernels;

namespace {

struct Box {
  double y1, x1, y2, x2;
};

Status kNonMaxSuppression(KernelContext& ctx) {
  const Tensor &boxes = ctx.input(0), &scores = ctx.input(1);
  int64_t batches = boxes.dim(0), n = boxes.dim(1), classes = scores.dim(1);
  int64_t maxOut = 0;
  if (ctx.hasInput(2) && ctx.input(2).numElements() > 0) maxOut = ctx.input(2).toInt64s()[0];
  double iouThreshold = ctx.hasInput(3) && ctx.input(3).numElements() > 0 ? elementAsDouble(ctx.input(3), 0) : 0.0;
  std::optional<double> scoreThreshold;
  if (ctx.hasInput(4) && ctx.input(4).numElements() > 0) scoreThreshold = elementAsDouble(ctx.input(4), 0);
  bool center = ctx.node().getInt("center_point_box") != 0;
  std::vector<double> bv = boxes.toDoubles(), sv = scores.toDoubles();
  auto boxAt = [&](int64_t b, int64_t i) {
    const double* p = bv.data() + (b * n + i) * 4;
    if (center) return Box{p[1] - p[3] / 2, p[0] - p[2] / 2, p[1] + p[3] / 2, p[0] + p[2] / 2};
    return Box{std::min(p[0], p[2]), std::min(p[1], p[3]), std::max(p[0], p[2]), std::max(p[1], p[3])};
  };
  auto iou = [](const Box& a, const Box& b) {
    double ih = std::max(0.0, std::min(a.y2, b.y2) - std::max(a.y1, b.y1));
    double iw = std::max(0.0, std::min(a.x2, b.x2) - std::max(a.x1, b.x1));
    double inter = ih * iw;
    double uni = (a.y2 - a.y1) * (a.x2 - a.x1) + (b.y2 - b.y1) * (b.x2 - b.x1) - inter;
    return uni > 0 ? inter / uni : 0.0;
  };
  std::vector<int64_t> selected;
  for (int64_t b = 0; b < batches; ++b)
    for (int64_t c = 0; c < classes; ++c) {
      const double* s = sv.data() + (b * classes + c) * n;
      std::vector<int64_t> order;
      for (int64_t i = 0; i < n; ++i)
        if (!scoreThreshold || s[i] > *scoreThreshold) order.push_back(i);
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t bb) { return s[a] > s[bb]; });
      std::vector<int64_t> kept;
      for (int64_t i : order) {
        if (int64_t(kept.size()) >= maxOut) break;
        Box bi = boxAt(b, i);
        bool keep = true;
        for (int64_t k : kept)
          if (iou(bi, boxAt(b, k)) > iouThreshold) {
            keep = false;
            break;
          }
        if (keep) kept.push_back(i);
      }
      for (int64_t k : kept) selected.insert(selected.end(), {b, c, k});
    }
  Tensor& y = ctx.allocate(0, DType::I64, {int64_t(selected.size() / 3), 3});
  std::copy(selected.begin(), selected.end(), y.mutableData<int64_t>());
  return Status::ok();
}

}  // namespace

void registerDetectionKernels(KernelRegistry& r) { r.add("NonMaxSuppression", kNonMaxSuppression); }

}  // namespace kiln::runtime
