//===- kiln/tune/ScheduleFeatures.h - What the cost model sees ----*- C++ -*-===//
//
// Features of one schedule, after AutoTVM's three families: knob values (the
// configuration itself), loop-structure ("itervar") statistics of the kernel
// IR the configuration produces (parallel extent, vector width, unrolled
// iterations, innermost extent, loop depth, arithmetic executed, global bytes
// read and written, arithmetic intensity), and access-pattern ("curve")
// statistics (share of loads contiguous / broadcast / strided along the
// innermost loop, reuse of global buffers, local and shared memory per
// thread). Counts are products of constant loop bounds, on a log scale.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <string>
#include <vector>

#include "kiln/codegen/KernelIR.h"
#include "kiln/codegen/ScheduleTemplate.h"

namespace kiln::tune {

struct KernelStats {
  double flops = 0;              ///< float arithmetic executed
  double loads = 0, stores = 0;  ///< global accesses executed
  double loadBytes = 0, storeBytes = 0;
  double globalBytes = 0;        ///< sizes of the global buffers (what is touched at least once)
  double parallelExtent = 1;     ///< product of parallel / block / thread loop extents
  double vectorWidth = 1;        ///< largest vectorized loop extent
  double unrolled = 1;           ///< largest product of nested unrolled extents
  double innermostExtent = 0;    ///< extent of the innermost loop around the most-executed store
  double loopDepth = 0;
  double contiguousLoads = 0, broadcastLoads = 0, stridedLoads = 0;  ///< executed, by innermost-loop stride 1 / 0 / other
  double localBytes = 0, sharedBytes = 0;  ///< allocated
};
KernelStats kernelStats(const codegen::Kernel& kernel);

/// The feature vector: knob values in knob order, then the statistics.
std::vector<float> scheduleFeatures(const codegen::KnobSpace& space, const codegen::Config& config,
                                    const codegen::Kernel& kernel);
/// Names of scheduleFeatures' entries (knob names, then the statistics).
std::vector<std::string> scheduleFeatureNames(const codegen::KnobSpace& space);
/// How many entries come from the kernel IR (the part comparable across tasks).
size_t kernelFeatureCount();

}  // namespace kiln::tune
