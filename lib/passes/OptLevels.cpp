//===- lib/passes/OptLevels.cpp - The -O0..-O3 pipelines --------------------===//
//
// Straight-line pipelines. Each level extends the one below, so a model's
// outputs can be checked level by level. Every ordering constraint is stated
// where it applies. Passes TVM keeps above OPT_LEVEL=3 (combine-parallel-*)
// and those only some architectures want are in no level; the pass-selection
// strategies and --pipeline reach them. They must run after
// simplify-inference when combined (a BatchNorm between a Conv and its Split
// no longer folds). A target may add the layout its kernels want at -O3
// (targetLayoutPasses).
//
//===----------------------------------------------------------------------===//
#include "kiln/passes/OptLevels.h"
#include "kiln/support/Strings.h"

#include <string>

namespace kiln::passes {

namespace {

/// The passes -O`level` adds for `target` alone.
std::vector<std::string> targetLayoutPasses(int level, std::string_view target) {
  // The CPU conv kernels run 1.6x faster on ResNet-50 channel-blocked
  // (docs/performance.md); the interpreter would run kiln::ConvNCHWc on
  // reference loops and the GPU has no template for it.
  if (level >= 3 && target == "cpu") return {"alter-op-layout"};
  return {};
}

}  // namespace

Expected<std::vector<PipelineEntry>> optLevelPipeline(int level, std::string_view target) {
  if (level < 0 || level > kMaxOptLevel)
    return Error(ErrorCode::InvalidArgument, "opt level must be 0 to " + std::to_string(kMaxOptLevel) + ", got " +
                                                 std::to_string(level));
  std::vector<std::string> p;
  if (level >= 3) {
    // BL: a model saved after fuse-ops or merge-composite gets its groups
    // inlined first, so every graph pass below sees plain ops.
    p.push_back("defuse-ops");
  }
  if (level >= 1) {
    // BatchNorm statistics become weights first, so later folds see plain
    // Conv/Gemm weights and the Mul/Add of unfoldable BatchNorms.
    p.push_back("simplify-inference");
    // Constants next, so simplify-expr's x*1 / x+0 rules see folded operands.
    p.push_back("fold-constant");
    // Matrix-product Einsums become MatMuls before simplify-expr, which
    // merges the transposes around them with their neighbours'.
    p.push_back("lower-einsum");
    // ConvTranspose becomes Conv (kernel templates) while its weights are
    // plain constants; simplify-expr then merges the reshapes around it.
    p.push_back("lower-conv-transpose");
    p.push_back("simplify-expr");
  }
  if (level >= 2) {
    // Shape arithmetic on static shapes becomes constants only after
    // fold-constant made the weights final; it re-infers types, so the
    // reshapes it makes static are then merged by a second simplify-expr.
    p.push_back("dynamic-to-static");
    // RNN, GRU and LSTM unroll into MatMuls and element-wise ops (kernel
    // templates) once their shapes are static and the Ifs exporters guard
    // them with (on shapes) are inlined.
    p.push_back("lower-recurrent");
    // Convolutions with few output positions and a long reduction become a
    // window Gather and a MatMul, once their shapes are static.
    p.push_back("lower-narrow-conv");
    // After folding, identical constants and the ops over them merge.
    p.push_back("eliminate-common-subexpr");
    p.push_back("simplify-expr");
    // Padding must be merged into convs before scale folding looks at the
    // conv's operand (a Pad between Mul and Conv blocks the forward fold).
    p.push_back("fold-explicit-padding");
    p.push_back("forward-fold-scale-axis");
  }
  if (level >= 3) {
    // BL passes. Dense layers become MatMul+Add and constant Sub/Div become
    // Add/Mul only now: forward-fold-scale-axis above folds a Gemm's scaling
    // into its bias, which MatMul lacks.
    p.push_back("canonicalize-ops");
    // Cast cleanup after simplify-expr removed the identities between casts.
    p.push_back("canonicalize-cast");
    // The target's layouts last among the rewrites (TVM's AlterOpLayout
    // follows CanonicalizeOps too): BatchNorms and padding are folded into
    // the convs by now, so a conv chain stays blocked between convs.
    for (std::string& pass : targetLayoutPasses(level, target)) p.push_back(std::move(pass));
    // New duplicates appear after the rewrites above (e.g. folded weights).
    p.push_back("eliminate-common-subexpr");
  }
  if (level >= 1) {
    // Last: every pass above may orphan nodes.
    p.push_back("dead-code-elimination");
  }
  return parsePipeline(joinStrings(p));
}

}  // namespace kiln::passes
