//===- lib/runtime/interpreter/kernels/DetectionKernels.cpp - NonMaxSuppression -===//
//
// Greedy per-(batch, class) non-maximum suppression: candidates above the
// score threshold in descending score order (ties: lower box index first), a
// box is kept unless its IoU with a kept box exceeds the IoU threshold. Kept
// boxes sit on a grid of candidate-sized cells, so each candidate meets only
// the kept boxes near it (a detector's class-offset boxes are far apart).
//
//===----------------------------------------------------------------------===//
#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>
#include <unordered_map>

#include "../KernelContext.h"
#include "KernelFamilies.h"
#include "KernelUtils.h"

namespace kiln::runtime {
using namespace kernels;

namespace {

struct Box {
  double y1, x1, y2, x2;
};

/// The kept boxes of one class, bucketed on a grid whose cells are as large
/// as the largest candidate: a box meets only boxes in the (at most 2x2)
/// cells it spans, so a candidate is compared with its neighbours instead of
/// with every kept box. Without usable extents (non-finite coordinates) one
/// cell holds everything, which is the plain greedy scan.
class KeptGrid {
 public:
  explicit KeptGrid(const std::vector<Box>& candidates) {
    double h = 0, w = 0;
    bool finite = true;
    for (const Box& b : candidates) {
      finite &= std::isfinite(b.y1) && std::isfinite(b.x1) && std::isfinite(b.y2) && std::isfinite(b.x2);
      h = std::max(h, b.y2 - b.y1), w = std::max(w, b.x2 - b.x1);
    }
    if (finite && h > 0 && w > 0) cellH_ = h, cellW_ = w;
  }
  template <class Visit>  // visit(kept index) returns false to stop
  void forNeighbours(const Box& b, Visit&& visit) const {
    auto [r0, c0, r1, c1] = span(b);
    for (int64_t r = r0; r <= r1; ++r)
      for (int64_t c = c0; c <= c1; ++c)
        if (auto it = cells_.find(key(r, c)); it != cells_.end())
          for (uint32_t k : it->second)
            if (!visit(k)) return;
  }
  void add(const Box& b, uint32_t index) {
    auto [r0, c0, r1, c1] = span(b);
    for (int64_t r = r0; r <= r1; ++r)
      for (int64_t c = c0; c <= c1; ++c) cells_[key(r, c)].push_back(index);
  }

 private:
  std::array<int64_t, 4> span(const Box& b) const {
    if (cellH_ == 0) return {0, 0, 0, 0};
    auto cell = [](double v, double size) { return int64_t(std::floor(std::clamp(v / size, -1e15, 1e15))); };
    return {cell(b.y1, cellH_), cell(b.x1, cellW_), cell(b.y2, cellH_), cell(b.x2, cellW_)};
  }
  static uint64_t key(int64_t r, int64_t c) { return uint64_t(r) * 0x9E3779B97F4A7C15ull ^ uint64_t(c); }
  double cellH_ = 0, cellW_ = 0;
  std::unordered_map<uint64_t, std::vector<uint32_t>> cells_;
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
      std::vector<Box> candidates;
      for (int64_t i : order) candidates.push_back(boxAt(b, i));
      // With a negative threshold every kept box suppresses (IoU 0 > t): use one cell.
      KeptGrid grid(iouThreshold >= 0 ? candidates : std::vector<Box>{});
      std::vector<int64_t> kept;
      std::vector<Box> keptBoxes;
      for (size_t o = 0; o < order.size(); ++o) {
        if (int64_t(kept.size()) >= maxOut) break;
        const Box& bi = candidates[o];
        bool keep = true;
        grid.forNeighbours(bi, [&](uint32_t k) { return keep = !(iou(bi, keptBoxes[k]) > iouThreshold); });
        if (keep) {
          grid.add(bi, uint32_t(kept.size()));
          kept.push_back(order[o]);
          keptBoxes.push_back(bi);
        }
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
