//===- kiln/passes/OptLevels.h - The -O0..-O3 pipelines -----------*- C++ -*-===//
//
// The pipelines behind -O0..-O3, written as straight-line code in
// lib/passes/OptLevels.cpp with the reason for every ordering constraint.
// -O3 is the default of `kiln run` and `kiln compile`, and mirrors the
// research's baseline (BL): the passes TVM enables at OPT_LEVEL=3 that kiln has.
// Like TVM's AlterOpLayout, which asks the target for each op's layout, the
// layout pass belongs to -O3 only for a target whose kernels want it: on
// "cpu" -O3 ends with alter-op-layout (channel-blocked convolutions); for
// "cuda", "interpreter" or no target (kiln-opt, `kiln passes run`) it does not.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <string_view>
#include <vector>

#include "kiln/passes/Pipeline.h"

namespace kiln::passes {

inline constexpr int kMaxOptLevel = 3;
inline constexpr int kDefaultOptLevel = 3;

/// The pipeline of opt level `level` (0..3) for `target` (a backend name:
/// "cpu", "cuda", "interpreter"; empty for none); an InvalidArgument error
/// for another level.
Expected<std::vector<PipelineEntry>> optLevelPipeline(int level, std::string_view target = {});

}  // namespace kiln::passes
