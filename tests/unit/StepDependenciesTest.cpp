//===- tests/unit/StepDependenciesTest.cpp - Kernel step dependency graph -===//
//
// The edges the CUDA runtime builds its graphs from: independent steps get
// none, a value's readers wait for its producer, a step reusing arena space
// waits for the space's earlier readers and writers, redundant edges are
// dropped, and host steps split the steps into segments; library steps
// join the segments when asked and wait for each other (one workspace).
//
//===----------------------------------------------------------------------===//
#include <catch2/catch.hpp>

#include "kiln/runtime/StepDependencies.h"

using namespace kiln;
using namespace kiln::runtime;

namespace {

uint32_t addBuffer(Executable& exe, const char* name, BufferKind kind, uint64_t offset = 0) {
  BufferSpec b;
  b.name = name;
  b.dtype = DType::F32;
  b.dims = {4};  // 16 bytes
  b.kind = kind;
  b.offset = offset;
  exe.buffers.push_back(b);
  return uint32_t(exe.buffers.size() - 1);
}

void addStep(Executable& exe, StepKind kind, std::vector<uint32_t> args) {
  KernelStep s;
  s.kind = kind;
  s.args = std::move(args);
  exe.steps.push_back(std::move(s));
}

}  // namespace

TEST_CASE("kernel steps depend on producers and on earlier users of reused arena space, nothing more") {
  Executable exe;
  exe.target = "cuda";
  uint32_t x = addBuffer(exe, "x", BufferKind::Input), w = addBuffer(exe, "w", BufferKind::Weight);
  uint32_t a = addBuffer(exe, "a", BufferKind::Intermediate, 0), b = addBuffer(exe, "b", BufferKind::Intermediate, 16);
  uint32_t c = addBuffer(exe, "c", BufferKind::Intermediate, 0);  // a's space, once a is dead
  uint32_t y = addBuffer(exe, "y", BufferKind::Output), z = addBuffer(exe, "z", BufferKind::Output);
  uint32_t h = addBuffer(exe, "h", BufferKind::Intermediate, 32);
  addStep(exe, StepKind::Kernel, {a, x, w});  // 0: a = f(x, w)
  addStep(exe, StepKind::Kernel, {b, x});     // 1: b = g(x), independent of 0 (both only read x)
  addStep(exe, StepKind::Kernel, {y, a, b});  // 2: y = f(a, b)
  addStep(exe, StepKind::Kernel, {c, b});     // 3: c = g(b), overwrites a's bytes: after 2 (and so after 0 and 1)
  addStep(exe, StepKind::Host, {c, h});       // 4: host step h = H(c)
  addStep(exe, StepKind::Kernel, {z, h, w});  // 5: z = f(h, w)

  std::vector<KernelSegment> segments = kernelSegments(exe);
  REQUIRE(segments.size() == 2);
  CHECK(segments[0].begin == 0);
  CHECK(segments[0].end == 4);
  CHECK(segments[1].begin == 5);
  CHECK(segments[1].end == 6);

  auto deps = kernelStepDependencies(exe, segments[0]);
  REQUIRE(deps.size() == 4);
  CHECK(deps[0].empty());
  CHECK(deps[1].empty());
  CHECK(deps[2] == std::vector<uint32_t>{0, 1});
  CHECK(deps[3] == std::vector<uint32_t>{2});  // 0 and 1 are implied through 2

  // Without the reader in between, the reuse waits on the old value's producer and on b's producer.
  Executable direct = exe;
  direct.steps[2].args = {y, b};
  auto deps2 = kernelStepDependencies(direct, segments[0]);
  CHECK(deps2[2] == std::vector<uint32_t>{1});
  CHECK(deps2[3] == std::vector<uint32_t>{0, 1});

  // Step 1 need not wait for step 0; 2 and 3 wait for their predecessors; 5 starts a segment.
  const StepOverlap overlap = stepOverlap(exe);
  CHECK(overlap.segments == 2);
  CHECK(overlap.steps == 3);
  CHECK(overlap.independent == 1);

  // The second segment's first step reads the host step's result; nothing in its segment precedes it.
  auto deps3 = kernelStepDependencies(exe, segments[1]);
  REQUIRE(deps3.size() == 1);
  CHECK(deps3[0].empty());
}

TEST_CASE("library steps join the kernel segments when captured, and each waits for the library step before it") {
  Executable exe;
  exe.target = "cuda";
  uint32_t x = addBuffer(exe, "x", BufferKind::Input), w = addBuffer(exe, "w", BufferKind::Weight);
  uint32_t a = addBuffer(exe, "a", BufferKind::Intermediate, 0), b = addBuffer(exe, "b", BufferKind::Intermediate, 16);
  uint32_t c = addBuffer(exe, "c", BufferKind::Intermediate, 32), y = addBuffer(exe, "y", BufferKind::Output);
  addStep(exe, StepKind::Kernel, {a, x});      // 0: a = f(x)
  addStep(exe, StepKind::Library, {x, w, b});  // 1: b = x W (library), independent of 0
  addStep(exe, StepKind::Library, {x, w, c});  // 2: c = x W (library), no data shared with 1 but its workspace
  addStep(exe, StepKind::Kernel, {y, a, b, c});  // 3: y = f(a, b, c)

  // Without capture the library steps split the kernels; with it, one segment.
  std::vector<KernelSegment> apart = kernelSegments(exe), together = kernelSegments(exe, true);
  REQUIRE(apart.size() == 2);
  CHECK(apart[0].end == 1);
  CHECK(apart[1].begin == 3);
  REQUIRE(together.size() == 1);
  CHECK(together[0].begin == 0);
  CHECK(together[0].end == 4);

  auto deps = kernelStepDependencies(exe, together[0]);
  REQUIRE(deps.size() == 4);
  CHECK(deps[0].empty());
  CHECK(deps[1].empty());                              // beside the kernel
  CHECK(deps[2] == std::vector<uint32_t>{1});          // the shared workspace orders the two calls
  CHECK(deps[3] == std::vector<uint32_t>{0, 2});       // 1 is implied through 2
  CHECK(stepOverlap(exe, true).segments == 1);
  CHECK(stepOverlap(exe, true).independent == 1);      // step 1 beside step 0
  CHECK(stepOverlap(exe).segments == 2);
}
