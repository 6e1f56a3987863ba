//===- lib/passes/FuseAttention.cpp - fuse-attention ------------------------===//
//
// Scaled dot-product attention as exported from PyTorch,
//   MatMul(q, kT) [* c | / c] [+ mask] -> Softmax(last axis) -> MatMul(., v)
// becomes one kiln::Attention(q, kT, v[, mask]){scale} (anchor: ONNX Runtime's
// AttentionFusion, FlashAttention's single kernel): the S x T score matrix is
// then never written to memory by generated code. q, kT and v must have the
// same rank and batch dims; every intermediate must have no other user. The
// softmax is computed in double in the reference: tolerance 1e-6.
//
//===----------------------------------------------------------------------===//
#include "PatternRewriteDriver.h"
#include "RewriteUtils.h"
#include "kiln/passes/PassRegistry.h"

namespace kiln::passes {
namespace {

struct Match {
  ir::Node* scoresMatMul = nullptr;
  ir::Node* outMatMul = nullptr;
  ir::Value* mask = nullptr;
  float scale = 1.0f;
};

/// `v`'s producer if it is `op` and `v` has no other user (nor is an output).
ir::Node* onlyFeeds(const ir::Value* v, ir::Op op) {
  ir::Node* p = v->producer();
  return isOp(p, op) && soleUser(v) && !isGraphOutput(v) ? p : nullptr;
}

bool chains(const ir::Value* q, const ir::Value* k, const ir::Value* v) {
  if (!q->type().isTensor() || !k->type().isTensor() || !v->type().isTensor()) return false;
  const ir::TensorType &tq = q->tensorType(), &tk = k->tensorType(), &tv = v->tensorType();
  if (!tq.isStatic() || !tk.isStatic() || !tv.isStatic() || tq.rank() < 2 || tk.rank() != tq.rank() ||
      tv.rank() != tq.rank() || tq.dtype() != DType::F32)
    return false;
  for (int64_t d = 0; d + 2 < tq.rank(); ++d)
    if (tk.dim(d) != tq.dim(d) || tv.dim(d) != tq.dim(d)) return false;
  return true;
}

std::optional<Match> findMatch(ir::Node* softmax) {
  if (!isOp(softmax, ir::Op::Softmax)) return std::nullopt;
  const ir::TensorType& t = softmax->input(0)->tensorType();
  if (!t.hasRank() || (softmax->getInt("axis") != -1 && softmax->getInt("axis") != t.rank() - 1)) return std::nullopt;
  ir::Node* out = soleUser(softmax->output(0));
  if (!isOp(out, ir::Op::MatMul) || out->input(0) != softmax->output(0) || isGraphOutput(softmax->output(0)))
    return std::nullopt;
  Match m{nullptr, out, nullptr, 1.0f};
  ir::Value* scores = softmax->input(0);
  if (ir::Node* add = onlyFeeds(scores, ir::Op::Add)) {
    for (int i = 0; i < 2 && !m.mask; ++i)
      if (ir::Node* p = add->input(i)->producer(); p && (isOp(p, ir::Op::Mul) || isOp(p, ir::Op::Div) || isOp(p, ir::Op::MatMul))) {
        scores = add->input(i);
        m.mask = add->input(1 - i);
      }
    if (!m.mask || add->output(0)->type() != scores->type()) return std::nullopt;
    if (!soleUser(scores) || isGraphOutput(scores)) return std::nullopt;
  }
  ir::Node* p = scores->producer();
  if ((isOp(p, ir::Op::Mul) || isOp(p, ir::Op::Div)) && soleUser(scores) && !isGraphOutput(scores)) {
    const Tensor* c = constantValue(p->input(1));
    if (!c || c->numElements() != 1 || c->dtype() != DType::F32) return std::nullopt;
    float v = c->data<float>()[0];
    m.scale = isOp(p, ir::Op::Mul) ? v : 1.0f / v;
    scores = p->input(0);
  }
  m.scoresMatMul = onlyFeeds(scores, ir::Op::MatMul);
  if (!m.scoresMatMul) return std::nullopt;
  if (!chains(m.scoresMatMul->input(0), m.scoresMatMul->input(1), out->input(1))) return std::nullopt;
  return m;
}

Status rewriteMatch(const Match& m) {
  ir::Graph& g = *m.outMatMul->graph();
  std::vector<ir::Value*> operands{m.scoresMatMul->input(0), m.scoresMatMul->input(1), m.outMatMul->input(1)};
  if (m.mask) operands.push_back(m.mask);
  KILN_ASSIGN(ir::Node * att, createTypedNode(g, "kiln::Attention", operands, {{"scale", m.scale}},
                                              nameBase(*m.outMatMul) + "_attention", m.outMatMul));
  if (att->output(0)->type() != m.outMatMul->output(0)->type())
    return Error(ErrorCode::Internal, "fuse-attention: result type " + att->output(0)->type().str() + " differs from " +
                                          m.outMatMul->output(0)->type().str());
  replaceValue(m.outMatMul->output(0), att->output(0), true);
  eraseWithDeadProducers(m.outMatMul);
  return Status::ok();
}

/// Rescans after each rewrite: the match reads users several levels down.
class FuseAttentionPattern final : public MatchingPattern<Match> {
 public:
  std::optional<Match> match(ir::Node& n) const override { return findMatch(&n); }
  Status apply(ir::Node&, const Match& m) const override { return rewriteMatch(m); }
  int usersRead() const override { return kAnywhere; }
};

}  // namespace

PassInfo fuseAttentionPass() {
  PassInfo p;
  p.name = "fuse-attention";
  p.summary = "Turn MatMul-scale-mask-Softmax-MatMul into kiln::Attention";
  p.description =
      "Matches scaled dot-product attention (MatMul of q and transposed k, optional constant scaling and mask "
      "Add, Softmax over the last axis, MatMul with v) and replaces it by one kiln::Attention (anchor: ONNX "
      "Runtime's AttentionFusion), so the score matrix need not be materialised. Within 1e-6 relative.";
  p.classes = {"BR"};  // not in Table 4: kiln adds it for transformer models
  p.tolerance = 1e-6;
  p.optLevel = 2;
  setPatterns(p, {std::make_shared<FuseAttentionPattern>()});
  return p;
}

}  // namespace kiln::passes
