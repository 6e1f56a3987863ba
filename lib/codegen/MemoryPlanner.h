//===- lib/codegen/MemoryPlanner.h - Arena offsets by liveness ------------===//
//
// Places intermediate buffers in one arena: two buffers may share bytes when
// their lifetimes (first and last step that touch them) do not overlap.
// Greedy by size, largest first, each at the lowest 64-byte aligned offset
// that fits among the already placed buffers it overlaps in time (the
// strategy TFLite's arena planner and ONNX Runtime's pattern planner use).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace kiln::codegen {

struct Lifetime {
  uint64_t bytes = 0;
  size_t first = 0, last = 0;  ///< steps, inclusive
};

struct MemoryPlan {
  std::vector<uint64_t> offsets;  ///< per lifetime
  uint64_t arenaBytes = 0;        ///< peak
  uint64_t unsharedBytes = 0;     ///< what the buffers would take without reuse
};

MemoryPlan planMemory(const std::vector<Lifetime>& buffers);

}  // namespace kiln::codegen
