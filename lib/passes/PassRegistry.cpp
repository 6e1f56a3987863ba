//===- lib/passes/PassRegistry.cpp - The catalogue of passes ---------------===//
//
// The explicit list of passes and typed option access.
//
//===----------------------------------------------------------------------===//
#include "kiln/passes/PassRegistry.h"

#include <mutex>

namespace kiln::passes {
namespace {

std::vector<PassInfo>& registry() {
  static std::vector<PassInfo> passes;
  return passes;
}

}  // namespace

void registerAllPasses() {
  static std::once_flag once;
  std::call_once(once, [] {
    std::vector<PassInfo>& r = registry();
    r.push_back(deadCodeEliminationPass());
    r.push_back(foldConstantPass());
    r.push_back(eliminateCommonSubexprPass());
    r.push_back(simplifyExprPass());
    r.push_back(simplifyInferencePass());
    r.push_back(canonicalizeCastPass());
    r.push_back(foldExplicitPaddingPass());
    r.push_back(forwardFoldScaleAxisPass());
    r.push_back(dynamicToStaticPass());
    r.push_back(lowerEinsumPass());
    r.push_back(lowerConvTransposePass());
    r.push_back(lowerRecurrentPass());
    r.push_back(lowerNarrowConvPass());
    r.push_back(canonicalizeOpsPass());
    r.push_back(simplifyFcTransposePass());
    r.push_back(combineParallelDensePass());
    r.push_back(combineParallelConv2dPass());
    r.push_back(recognizeLayerNormPass());
    r.push_back(recognizeGeluPass());
    r.push_back(fuseAttentionPass());
    r.push_back(fastMathPass());
    r.push_back(fuseOpsPass());
    r.push_back(defuseOpsPass());
    r.push_back(mergeCompositePass());
    r.push_back(toMixedPrecisionPass());
    r.push_back(batchingOpsPass());
    r.push_back(convertLayoutPass());
    r.push_back(alterOpLayoutPass());
  });
}

const std::vector<PassInfo>& allPasses() {
  registerAllPasses();
  return registry();
}

const PassInfo* findPass(const std::string& name) {
  for (const PassInfo& p : allPasses())
    if (p.name == name) return &p;
  return nullptr;
}

int64_t PassOptions::getInt(const std::string& name) const { return std::stoll(values_.at(name)); }
bool PassOptions::getBool(const std::string& name) const { return values_.at(name) == "true"; }
const std::string& PassOptions::getString(const std::string& name) const { return values_.at(name); }

}  // namespace kiln::passes
