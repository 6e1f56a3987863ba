//===- lib/passes/FastMath.cpp - fast-math ----------------------------------===//
//
// Replaces expensive f32 transcendental ops by the approximations of
// support/FastMath.h, which every target computes identically and which
// vectorise (no libm calls):
//   Exp -> kiln::FastExp      relative error <= 3e-7
//   Erf -> kiln::FastErf      absolute error <= 5e-7
//   Tanh -> kiln::FastTanh    absolute error <= 2e-7
//   Softmax -> kiln::FastSoftmax (FastExp inside)
//   kiln::Gelu{approximate=none} -> kiln::Gelu{approximate=fast} (FastErf inside)
// The per-op errors are measured over all f32 inputs by tests/unit; through a
// whole model they add up to the documented tolerance of 1e-5 relative
// (anchor: TVM's FastMath pass: fast_exp, fast_erf, fast_tanh, fast_softmax).
//
//===----------------------------------------------------------------------===//
#include "PatternRewriteDriver.h"
#include "RewriteUtils.h"
#include "kiln/passes/PassRegistry.h"

namespace kiln::passes {
namespace {

/// The kiln op replacing `n`, or null.
const char* replacementFor(const ir::Node& n) {
  if (!n.numInputs() || !n.input(0)->type().isTensor() || n.input(0)->tensorType().dtype() != DType::F32)
    return nullptr;
  if (isOp(&n, ir::Op::Exp)) return "kiln::FastExp";
  if (isOp(&n, ir::Op::Erf)) return "kiln::FastErf";
  if (isOp(&n, ir::Op::Tanh)) return "kiln::FastTanh";
  if (isOp(&n, ir::Op::Softmax)) return "kiln::FastSoftmax";
  if (n.op() == ir::Op::KilnGelu && n.getString("approximate") == "none") return "kiln::Gelu";
  return nullptr;
}

class Approximate final : public RewritePattern {
 public:
  bool matches(const ir::Node& n) const override { return replacementFor(n) != nullptr; }
  Status rewrite(ir::Node& n) const override {
    std::vector<std::pair<std::string, ir::Attribute>> attrs;
    if (isOp(&n, ir::Op::Softmax)) attrs.emplace_back("axis", n.getInt("axis"));
    if (isOp(&n, ir::Op::KilnGelu)) attrs.emplace_back("approximate", "fast");
    return replaceWithNewNode(&n, replacementFor(n), {n.input(0)}, attrs, n.name()).status();
  }
};

}  // namespace

PassInfo fastMathPass() {
  PassInfo p;
  p.name = "fast-math";
  p.summary = "Replace f32 exp, erf, tanh, softmax and GELU by fast approximations";
  p.description =
      "Rewrites f32 Exp, Erf, Tanh and Softmax into kiln::FastExp/FastErf/FastTanh/FastSoftmax and exact "
      "kiln::Gelu into its FastErf form (support/FastMath.h: exp within 3e-7 relative, erf within 5e-7 and tanh "
      "within 2e-7 absolute; anchor: TVM's FastMath). Through a model: within 1e-5 relative.";
  p.classes = {"MN", "BR", "SSD"};  // Table 4: FastMath is MN; BR; SSD
  p.tolerance = 1e-5;
  p.optLevel = 3;
  setPatterns(p, {std::make_shared<Approximate>()});
  return p;
}

}  // namespace kiln::passes
