//===- lib/passes/RecognizeGelu.cpp - recognize-gelu ------------------------===//
//
// GELU exported as primitive ops, x·0.5·(1 + erf(x/√2)) in any of PyTorch's
// orders:
//   Mul(Mul(x, Add(Erf(x/√2), 1)), 0.5)   or   Mul(Mul(x, 0.5), Add(Erf(x/√2), 1))
// with x/√2 as Div(x, √2) or Mul(x, 1/√2), becomes kiln::Gelu(x) (anchor:
// ONNX Runtime's GeluFusion; ONNX opset 20's Gelu). One elementwise op is
// what the matmul templates fuse as an epilogue. Intermediates must have no
// other user. Computed exactly instead of rounded per op: tolerance 1e-6.
//
//===----------------------------------------------------------------------===//
#include <cmath>

#include "PatternRewriteDriver.h"
#include "RewriteUtils.h"
#include "kiln/passes/PassRegistry.h"

namespace kiln::passes {
namespace {

bool isNear(const ir::Value* v, double x) {
  const Tensor* t = constantValue(v);
  return t && t->numElements() == 1 && isFloat(t->dtype()) && std::abs(t->toDoubles()[0] - x) <= 1e-6 * std::abs(x);
}

/// The operand of a binary node other than `v` (null if `v` is not an operand).
ir::Value* otherOperand(const ir::Node* n, const ir::Value* v) {
  if (n->numInputs() != 2) return nullptr;
  return n->input(0) == v ? n->input(1) : n->input(1) == v ? n->input(0) : nullptr;
}

bool singleUse(const ir::Value* v, const ir::Node* user) { return soleUser(v) == user && !isGraphOutput(v); }

struct Match {
  ir::Value* x = nullptr;
  ir::Node* root = nullptr;
};

/// Matches from the Erf node.
std::optional<Match> findMatch(ir::Node* erf) {
  if (!isOp(erf, ir::Op::Erf)) return std::nullopt;
  ir::Node* scaled = erf->input(0)->producer();
  if (!scaled || !singleUse(erf->input(0), erf)) return std::nullopt;
  ir::Value* x = scaled->input(0);
  bool byDiv = isOp(scaled, ir::Op::Div) && isNear(scaled->input(1), M_SQRT2);
  bool byMul = isOp(scaled, ir::Op::Mul) && isNear(scaled->input(1), M_SQRT1_2);
  if (!byDiv && !byMul) return std::nullopt;
  if (!x->type().isTensor() || x->tensorType().dtype() != DType::F32) return std::nullopt;
  ir::Node* add = soleUser(erf->output(0));
  if (!isOp(add, ir::Op::Add) || !isNear(otherOperand(add, erf->output(0)), 1.0) || isGraphOutput(erf->output(0)))
    return std::nullopt;
  ir::Node* mul = soleUser(add->output(0));
  if (!isOp(mul, ir::Op::Mul) || isGraphOutput(add->output(0))) return std::nullopt;
  ir::Value* other = otherOperand(mul, add->output(0));
  ir::Node* root = nullptr;
  if (other == x) {  // x·(1 + erf) then ·0.5
    ir::Node* half = soleUser(mul->output(0));
    if (isOp(half, ir::Op::Mul) && !isGraphOutput(mul->output(0)) && isNear(otherOperand(half, mul->output(0)), 0.5))
      root = half;
  } else if (ir::Node* h = other ? other->producer() : nullptr;
             isOp(h, ir::Op::Mul) && singleUse(other, mul) && otherOperand(h, x) && isNear(otherOperand(h, x), 0.5)) {
    root = mul;  // (x·0.5)·(1 + erf)
  }
  if (!root || root->output(0)->type() != x->type()) return std::nullopt;
  return Match{x, root};
}

Status rewriteMatch(const Match& m) {
  return replaceWithNewNode(m.root, "kiln::Gelu", {m.x}, {}, nameBase(*m.root) + "_gelu").status();
}

/// Rescans after each rewrite: the match reads users several levels down.
class RecognizeGeluPattern final : public MatchingPattern<Match> {
 public:
  std::optional<Match> match(ir::Node& n) const override { return findMatch(&n); }
  Status apply(ir::Node&, const Match& m) const override { return rewriteMatch(m); }
  int usersRead() const override { return kAnywhere; }
};

}  // namespace

PassInfo recognizeGeluPass() {
  PassInfo p;
  p.name = "recognize-gelu";
  p.summary = "Turn spelled-out erf GELU into kiln::Gelu";
  p.description =
      "Matches x*0.5*(1+erf(x/sqrt(2))) in PyTorch's export orders (x/sqrt(2) as Div or Mul) and replaces the "
      "five ops by one kiln::Gelu (anchor: ONNX Runtime's GeluFusion, ONNX opset 20 Gelu). Within 1e-6 relative.";
  p.classes = {"BR"};  // not in Table 4: kiln adds it for exported BERT models
  p.tolerance = 1e-6;
  p.optLevel = 2;
  setPatterns(p, {std::make_shared<RecognizeGeluPattern>()});
  return p;
}

}  // namespace kiln::passes
