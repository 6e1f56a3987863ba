//===- kiln/passes/OptLevels.h - The -O0..-O3 pipelines -----------*- C++ -*-===//
//
// The pipelines behind -O0..-O3, written as straight-line code in
// lib/passes/OptLevels.cpp with the reason for every ordering constraint.
// -O3 is the default of `kiln run` and `kiln compile`, and mirrors the
// research's baseline (BL): the passes TVM enables at OPT_LEVEL=3 that kiln has.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <vector>

#include "kiln/passes/Pipeline.h"

namespace kiln::passes {

inline constexpr int kMaxOptLevel = 3;
inline constexpr int kDefaultOptLevel = 3;

/// The pipeline of opt level `level` (0..3); an InvalidArgument error otherwise.
Expected<std::vector<PipelineEntry>> optLevelPipeline(int level);

}  // namespace kiln::passes
