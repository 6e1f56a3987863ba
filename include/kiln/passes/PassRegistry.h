//===- kiln/passes/PassRegistry.h - The catalogue of passes --------*- C++ -*-===//
//
// registerAllPasses() fills the registry explicitly (no static initialisers:
// a pass exists because this list names it). Lookups are by name.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <string>
#include <vector>

#include "kiln/passes/PassInfo.h"

namespace kiln::passes {

/// Registers every pass kiln has; idempotent.
void registerAllPasses();
/// The registered passes in registration order.
const std::vector<PassInfo>& allPasses();
/// The pass of that name, or nullptr.
const PassInfo* findPass(const std::string& name);

// One function per pass file, called by registerAllPasses().
PassInfo deadCodeEliminationPass();
PassInfo foldConstantPass();
PassInfo eliminateCommonSubexprPass();
PassInfo simplifyExprPass();
PassInfo simplifyInferencePass();
PassInfo canonicalizeCastPass();
PassInfo foldExplicitPaddingPass();
PassInfo forwardFoldScaleAxisPass();
PassInfo dynamicToStaticPass();
PassInfo lowerEinsumPass();
PassInfo lowerConvTransposePass();
PassInfo lowerRecurrentPass();
PassInfo lowerNarrowConvPass();
PassInfo canonicalizeOpsPass();
PassInfo simplifyFcTransposePass();
PassInfo combineParallelDensePass();
PassInfo combineParallelConv2dPass();
PassInfo recognizeLayerNormPass();
PassInfo recognizeGeluPass();
PassInfo fuseAttentionPass();
PassInfo fastMathPass();
PassInfo fuseOpsPass();
PassInfo defuseOpsPass();
PassInfo mergeCompositePass();
PassInfo toMixedPrecisionPass();
PassInfo batchingOpsPass();
PassInfo convertLayoutPass();
PassInfo alterOpLayoutPass();

}  // namespace kiln::passes
