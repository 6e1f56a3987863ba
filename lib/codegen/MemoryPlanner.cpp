//===- lib/codegen/MemoryPlanner.cpp - Greedy-by-size arena placement ------===//
//
// See MemoryPlanner.h. Quadratic in the number of buffers, which is the
// number of kernel outputs (a few thousand at most).
//
//===----------------------------------------------------------------------===//
#include "MemoryPlanner.h"

#include <algorithm>
#include <numeric>

namespace kiln::codegen {

MemoryPlan planMemory(const std::vector<Lifetime>& buffers) {
  constexpr uint64_t kAlign = 64;
  MemoryPlan plan;
  plan.offsets.assign(buffers.size(), 0);
  std::vector<size_t> order(buffers.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return buffers[a].bytes > buffers[b].bytes; });
  std::vector<size_t> placed;
  for (size_t i : order) {
    const Lifetime& b = buffers[i];
    uint64_t size = (b.bytes + kAlign - 1) / kAlign * kAlign;
    plan.unsharedBytes += size;
    std::vector<std::pair<uint64_t, uint64_t>> busy;  // [offset, end) of overlapping buffers
    for (size_t j : placed) {
      const Lifetime& o = buffers[j];
      if (o.first <= b.last && b.first <= o.last)
        busy.push_back({plan.offsets[j], plan.offsets[j] + (o.bytes + kAlign - 1) / kAlign * kAlign});
    }
    std::sort(busy.begin(), busy.end());
    uint64_t offset = 0;
    for (const auto& [start, end] : busy) {
      if (start >= offset + size) break;
      offset = std::max(offset, end);
    }
    plan.offsets[i] = offset;
    plan.arenaBytes = std::max(plan.arenaBytes, offset + size);
    placed.push_back(i);
  }
  return plan;
}

}  // namespace kiln::codegen
