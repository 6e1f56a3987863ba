//===- kiln/runtime/StepDependencies.h - Which kernel steps may overlap -*- C++ -*-===//
//
// The CUDA runtime replays each run of consecutive kernel steps as one CUDA
// graph whose edges are the steps' data dependencies, so independent
// branches (an SSD head's per-scale convolutions, parallel attention
// projections) run concurrently on the GPU. A step must wait for an earlier
// one when they touch overlapping device bytes and either writes them:
// read-after-write on a value, and write-after-read / write-after-write where
// the memory plan reuses arena space. A step writes the intermediate and
// output buffers it is the first step to name (the lowering creates every
// result buffer for its producer); weights and inputs are only read.
// Library steps (cuBLASLt, cuDNN) join the graphs when their calls can be
// captured; they all use the executor's one workspace, so each waits for
// the library step before it as well.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <vector>

#include "kiln/runtime/Executable.h"

namespace kiln::runtime {

/// A run of consecutive kernel (and library) steps, [begin, end) in Executable::steps.
struct KernelSegment {
  uint32_t begin = 0, end = 0;
};

/// The maximal runs of kernel steps between host steps (and, unless
/// `withLibrarySteps`, library steps), in order.
std::vector<KernelSegment> kernelSegments(const Executable& exe, bool withLibrarySteps = false);

/// For each step of `segment`, the steps of the same segment it must wait
/// for: absolute step indices, ascending, transitively reduced (an edge
/// implied by a path through other steps is left out).
std::vector<std::vector<uint32_t>> kernelStepDependencies(const Executable& exe, KernelSegment segment);

/// How much a CUDA graph replay can overlap, for reports: over all segments,
/// the steps after a segment's first, and those among them that need not wait
/// for the step before them (no path joins the two, the edges being reduced).
struct StepOverlap {
  size_t segments = 0, steps = 0, independent = 0;
};
StepOverlap stepOverlap(const Executable& exe, bool withLibrarySteps = false);

}  // namespace kiln::runtime
