//===- lib/runtime/core/StepDependencies.cpp - Kernel step data dependencies ===//
//
// See StepDependencies.h. Each step's accesses are byte ranges in a memory
// space (the arena, or one buffer's own allocation); two steps conflict
// when ranges of the same space overlap and one of the two writes. The
// segment's dependency sets are then reduced with ancestor bit sets.
//
//===----------------------------------------------------------------------===//
#include "kiln/runtime/StepDependencies.h"

#include <algorithm>

namespace kiln::runtime {
namespace {

/// The memory space every library step writes: the executor's one workspace.
constexpr uint64_t kLibraryWorkspaceSpace = ~uint64_t(0);

struct Access {
  uint64_t space = 0;  ///< 0: the arena; id + 1: buffer id's own allocation; kLibraryWorkspaceSpace
  uint64_t begin = 0, end = 0;
  bool write = false;
};

bool conflict(const Access& a, const Access& b) {
  return a.space == b.space && a.begin < b.end && b.begin < a.end && (a.write || b.write);
}

}  // namespace

std::vector<KernelSegment> kernelSegments(const Executable& exe, bool withLibrarySteps) {
  std::vector<KernelSegment> segments;
  for (uint32_t s = 0; s < exe.steps.size(); ++s) {
    const StepKind kind = exe.steps[s].kind;
    if (kind != StepKind::Kernel && !(withLibrarySteps && kind == StepKind::Library)) continue;
    if (segments.empty() || segments.back().end != s) segments.push_back({s, s});
    segments.back().end = s + 1;
  }
  return segments;
}

std::vector<std::vector<uint32_t>> kernelStepDependencies(const Executable& exe, KernelSegment segment) {
  // The first step naming a buffer produces it (host steps included: their outputs).
  std::vector<int64_t> producer(exe.buffers.size(), -1);
  for (uint32_t s = 0; s < segment.end; ++s)
    for (uint32_t id : exe.steps[s].args)
      if (id < producer.size() && producer[id] < 0) producer[id] = s;
  const uint32_t n = segment.end - segment.begin;
  std::vector<std::vector<Access>> accesses(n);
  for (uint32_t i = 0; i < n; ++i) {
    const uint32_t s = segment.begin + i;
    for (uint32_t id : exe.steps[s].args) {
      if (id >= exe.buffers.size()) continue;
      const BufferSpec& b = exe.buffers[id];
      if (b.dynamic || !b.bytes()) continue;
      Access a;
      const bool arena = b.kind == BufferKind::Intermediate;
      a.space = arena ? 0 : uint64_t(id) + 1;
      a.begin = arena ? b.offset : 0;
      a.end = a.begin + b.bytes();
      a.write = producer[id] == int64_t(s) && (b.kind == BufferKind::Intermediate || b.kind == BufferKind::Output);
      accesses[i].push_back(a);
    }
    if (exe.steps[s].kind == StepKind::Library) accesses[i].push_back({kLibraryWorkspaceSpace, 0, 1, true});
  }
  // Direct conflicts, then the transitive reduction through ancestor sets.
  const size_t words = (n + 63) / 64;
  std::vector<std::vector<uint64_t>> ancestors(n, std::vector<uint64_t>(words, 0));
  std::vector<std::vector<uint32_t>> deps(n);
  for (uint32_t i = 0; i < n; ++i) {
    std::vector<uint32_t> direct;
    for (uint32_t j = 0; j < i; ++j) {
      bool hit = false;
      for (const Access& a : accesses[j]) {
        for (const Access& b : accesses[i]) hit = hit || conflict(a, b);
        if (hit) break;
      }
      if (hit) direct.push_back(j);
    }
    // Latest first: a later predecessor's ancestors can cover an earlier one.
    std::vector<uint64_t> covered(words, 0);
    for (auto it = direct.rbegin(); it != direct.rend(); ++it) {
      uint32_t j = *it;
      if (!(covered[j / 64] >> (j % 64) & 1)) deps[i].push_back(j);
      for (size_t w = 0; w < words; ++w) covered[w] |= ancestors[j][w];
      covered[j / 64] |= uint64_t(1) << (j % 64);
    }
    ancestors[i] = covered;
    std::sort(deps[i].begin(), deps[i].end());
  }
  std::vector<std::vector<uint32_t>> result(n);
  for (uint32_t i = 0; i < n; ++i)
    for (uint32_t j : deps[i]) result[i].push_back(segment.begin + j);
  return result;
}

StepOverlap stepOverlap(const Executable& exe, bool withLibrarySteps) {
  StepOverlap o;
  for (const KernelSegment& segment : kernelSegments(exe, withLibrarySteps)) {
    ++o.segments;
    std::vector<std::vector<uint32_t>> deps = kernelStepDependencies(exe, segment);
    for (uint32_t s = segment.begin + 1; s < segment.end; ++s, ++o.steps) {
      const std::vector<uint32_t>& d = deps[s - segment.begin];
      o.independent += std::find(d.begin(), d.end(), s - 1) == d.end();
    }
  }
  return o;
}

}  // namespace kiln::runtime
