//===- lib/passes/SimplifyExpr.cpp - simplify-expr --------------------------===//
//
// Local algebraic simplifications that leave every value unchanged:
//   Identity(x), Transpose(x) with the identity permutation -> x
//   x+0, 0+x, x-0, x*1, 1*x, x/1, x^1, Expand to x's own shape -> x
//   Transpose(Transpose(x, p), q)                 -> Transpose(x, p∘q), or x if that is the identity
//   chains of Reshape/Flatten/Squeeze/Unsqueeze    -> one Reshape to the result shape
//   a reshape-like op or Slice (steps 1) or Concat of one operand that keeps x's shape -> x
//   Pad by zeros everywhere (PyTorch's avg_pool2d export)  -> x
// The arithmetic rules fire only when the constant cannot broadcast x to a
// larger shape and has x's element type; x+0 turns -0 into +0 in IEEE
// arithmetic, which no later op distinguishes except 1/x. Rules repeat until
// nothing matches, so x*1+0 goes at once; each next match is the first in
// graph order (PatternRewriteDriver.h).
//
//===----------------------------------------------------------------------===//
#include <numeric>

#include "PatternRewriteDriver.h"
#include "RewriteUtils.h"
#include "kiln/passes/PassRegistry.h"

namespace kiln::passes {
namespace {

/// True when `c` broadcast against `x` yields x's shape and dtype.
bool broadcastKeepsShape(const ir::Value* x, const ir::Value* c) {
  if (!x->type().isTensor() || !c->type().isTensor()) return false;
  const ir::TensorType& tx = x->tensorType();
  const ir::TensorType& tc = c->tensorType();
  if (tx.dtype() != tc.dtype() || !tx.hasRank() || !tc.isStatic() || tc.rank() > tx.rank()) return false;
  for (int64_t i = 0; i < tc.rank(); ++i) {
    int64_t dc = tc.dim(tc.rank() - 1 - i), dx = tx.dim(tx.rank() - 1 - i);
    if (dc != 1 && dc != dx) return false;
  }
  return true;
}

/// `to` can replace `from` without an Identity to carry an output name.
bool replaceableCleanly(const ir::Value* from, const ir::Value* to) {
  return !isGraphOutput(from) || (!to->isGraphInput() && !isGraphOutput(to) && to->graph() == from->graph());
}

std::vector<int64_t> permOf(const ir::Node& t) {
  if (t.hasAttr("perm")) return t.getInts("perm");
  std::vector<int64_t> p(size_t(t.input(0)->tensorType().rank()));
  std::iota(p.rbegin(), p.rend(), 0);
  return p;
}

bool isIdentityPerm(const std::vector<int64_t>& p) {
  for (size_t i = 0; i < p.size(); ++i)
    if (p[i] != int64_t(i)) return false;
  return true;
}

/// The operand a node reduces to, or null when no identity rule matches.
ir::Value* identityOperand(const ir::Node& n) {
  auto constIs = [](const ir::Value* v, double x) { return v && isConstantFilledWith(v, x); };
  using ir::Op;
  const Op op = n.op();
  if (op == Op::Identity && n.input(0)->type() == n.output(0)->type()) return n.input(0);
  if (op == Op::Transpose && n.input(0)->type().isTensor() && n.input(0)->tensorType().hasRank() &&
      isIdentityPerm(permOf(n)))
    return n.input(0);
  if (op == Op::Add || op == Op::Mul) {
    double unit = op == Op::Add ? 0 : 1;
    for (int i = 0; i < 2; ++i)
      if (constIs(n.input(1 - i), unit) && broadcastKeepsShape(n.input(i), n.input(1 - i))) return n.input(i);
  }
  if ((op == Op::Sub && constIs(n.input(1), 0)) || (op == Op::Div && constIs(n.input(1), 1)) ||
      (op == Op::Pow && constIs(n.input(1), 1) && n.input(1)->tensorType().dtype() == n.input(0)->tensorType().dtype()))
    if (broadcastKeepsShape(n.input(0), n.input(1))) return n.input(0);
  // Equal types with every dim known (constant or the same symbolic dim): the op moves nothing.
  bool keepsShape = knownDims(n.output(0)) && n.input(0) && n.input(0)->type() == n.output(0)->type();
  if (keepsShape && (op == Op::Reshape || op == Op::Flatten || op == Op::Squeeze || op == Op::Unsqueeze || op == Op::Expand))
    return n.input(0);
  if (keepsShape && op == Op::Concat && n.numInputs() == 1) return n.input(0);
  if (keepsShape && op == Op::Pad && n.hasInput(1) && constIs(n.input(1), 0)) return n.input(0);  // all pads 0
  if (keepsShape && op == Op::Slice && (!n.input(4) || constIs(n.input(4), 1))) return n.input(0);
  return nullptr;
}

bool isReshapeLike(const ir::Node* n) {
  return isOp(n, ir::Op::Reshape) || isOp(n, ir::Op::Flatten) || isOp(n, ir::Op::Squeeze) || isOp(n, ir::Op::Unsqueeze);
}


/// What a rule makes of a node: its result replaced by a value it reads
/// (identity ops and arithmetic, inverse transposes), one Transpose of the
/// inner transpose's input, or one Reshape of the first reshape's input.
enum class Rule { kReplace, kComposeTransposes, kMergeReshapes };
struct Match {
  Rule rule = Rule::kReplace;
  ir::Value* from = nullptr;     ///< the replacement (kReplace) or the new op's input
  std::vector<int64_t> perm{};   ///< kComposeTransposes: the composed permutation
};

/// x -> its operand (identity ops and arithmetic).
std::optional<Match> identityMatch(const ir::Node& n) {
  if (ir::Value* x = identityOperand(n); x && replaceableCleanly(n.output(0), x)) return Match{Rule::kReplace, x};
  return std::nullopt;
}

/// Transpose(Transpose(x)): x when the permutations cancel, else one Transpose.
std::optional<Match> transposesMatch(const ir::Node& n) {
  const ir::Node* inner = n.input(0) ? n.input(0)->producer() : nullptr;
  if (!isOp(&n, ir::Op::Transpose) || !isOp(inner, ir::Op::Transpose) || !inner->input(0)->tensorType().hasRank())
    return std::nullopt;
  std::vector<int64_t> p = permOf(*inner), q = permOf(n), composed(q.size());
  for (size_t i = 0; i < q.size(); ++i) composed[i] = p[size_t(q[i])];
  // Inverse transposes cancel whatever else reads the inner one; other
  // compositions only when the inner one has no other user.
  if (isIdentityPerm(composed) && replaceableCleanly(n.output(0), inner->input(0)))
    return Match{Rule::kReplace, inner->input(0)};
  if (soleUser(inner->output(0)) == &n) return Match{Rule::kComposeTransposes, inner->input(0), std::move(composed)};
  return std::nullopt;
}

/// The shape operand of one Reshape from `from` to `to`'s dims (symbolic dims named as reshapeShape can).
std::optional<Tensor> mergedShape(const ir::Value* from, const ir::Value* to) {
  std::optional<std::vector<DimExpr>> dims = knownDims(to);
  if (!dims || !from->type().isTensor()) return std::nullopt;
  return reshapeShape(from->tensorType(), *dims);
}

/// A chain of reshape-like ops -> one Reshape to the result's shape.
std::optional<Match> reshapesMatch(const ir::Node& n) {
  const ir::Node* inner = n.input(0) ? n.input(0)->producer() : nullptr;
  if (isReshapeLike(&n) && isReshapeLike(inner) && soleUser(inner->output(0)) == &n &&
      mergedShape(inner->input(0), n.output(0)))
    return Match{Rule::kMergeReshapes, inner->input(0)};
  return std::nullopt;
}

/// Applies `m`, matched at `n`.
Status simplified(ir::Node* n, const Match& m) {
  ir::Graph& g = *n->graph();
  ir::Value* result = m.from;
  if (m.rule == Rule::kComposeTransposes) {
    KILN_ASSIGN(ir::Node * t, createTypedNode(g, "Transpose", {m.from}, {{"perm", m.perm}}, n->name(), n));
    result = t->output(0);
  } else if (m.rule == Rule::kMergeReshapes) {
    ir::Value* shape = makeConstant(g, *mergedShape(m.from, n->output(0)), n->output(0)->name() + "_shape", n);
    KILN_ASSIGN(ir::Node * r, createTypedNode(g, "Reshape", {m.from, shape}, {}, n->name(), n));
    result = r->output(0);
  }
  replaceValue(n->output(0), result, /*takeName=*/m.rule != Rule::kReplace);
  eraseWithDeadProducers(n);
  return Status::ok();
}

/// One rule: `find` is its matcher.
template <std::optional<Match> (*find)(const ir::Node&)>
class SimplifyRule final : public MatchingPattern<Match> {
 public:
  std::optional<Match> match(ir::Node& n) const override { return find(n); }
  Status apply(ir::Node& n, const Match& m) const override { return simplified(&n, m); }
};

}  // namespace

PassInfo simplifyExprPass() {
  PassInfo p;
  p.name = "simplify-expr";
  p.summary = "Remove identity arithmetic and merge consecutive reshapes and transposes";
  p.description =
      "Drops Identity, x+0, x-0, x*1, x/1, x^1 and shape-preserving Reshape/Flatten/Squeeze/Unsqueeze/Expand/"
      "Slice/Concat and Pad by zeros; composes Transpose pairs (removing identity permutations) and collapses chains of "
      "reshape-like ops into one Reshape to the result shape. Exact except that x+0 maps -0 to +0.";
  // Table 4: SimplifyExpr is RN; MN; SSD; in kiln's -O3 (BL). kiln adds BR:
  // the reshape chains left by folding a transformer's constants.
  p.classes = {"BL", "RN", "MN", "SSD", "BR"};
  p.optLevel = 1;
  setPatterns(p, {std::make_shared<SimplifyRule<identityMatch>>(), std::make_shared<SimplifyRule<transposesMatch>>(),
                  std::make_shared<SimplifyRule<reshapesMatch>>()});
  return p;
}

}  // namespace kiln::passes
