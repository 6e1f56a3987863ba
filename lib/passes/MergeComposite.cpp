//===- lib/passes/MergeComposite.cpp - merge-composite ----------------------===//
//
// Wraps named patterns into kiln::Composite nodes so a target can hand each
// one to a library call (cuDNN fused conv, cuBLASLt matmul with epilogue, a
// fused attention or layernorm kernel) - TVM's MergeComposite with its usual
// pattern table:
//   conv2d_bias_relu   Conv [+ per-channel bias Add] -> Relu | Clip
//   dense_bias_gelu    MatMul(x, W) + b -> kiln::Gelu
//   dense_bias_relu    MatMul(x, W) + b -> Relu      (also Gemm -> Relu)
//   dense_bias         MatMul(x, W) + b
//   attention          kiln::Attention (after fuse-attention)
//   layernorm          LayerNormalization (after recognize-layer-norm)
// W and b are constants; every intermediate has no other user. Longer
// patterns are tried first. The body runs the same ops: exact.
//
//===----------------------------------------------------------------------===//
#include <algorithm>

#include "GroupOutlining.h"
#include "PatternRewriteDriver.h"
#include "RewriteUtils.h"
#include "kiln/passes/PassRegistry.h"

namespace kiln::passes {
namespace {

struct Match {
  std::string name;
  std::vector<ir::Node*> members;  ///< in graph order
};

/// The single consumer of `n`'s only result when it is one of `ops`.
ir::Node* nextIf(const ir::Node* n, std::initializer_list<ir::Op> ops) {
  if (n->numOutputs() != 1 || isGraphOutput(n->output(0))) return nullptr;
  ir::Node* u = soleUser(n->output(0));
  return u && std::find(ops.begin(), ops.end(), u->op()) != ops.end() ? u : nullptr;
}

/// An Add of `v` and a constant (the bias of the op producing `v`).
bool isBiasAdd(const ir::Node* add, const ir::Value* v) {
  if (!add) return false;
  const ir::Value* other = add->input(0) == v ? add->input(1) : add->input(0);
  return constantValue(other) && add->output(0)->type() == v->type();
}

std::optional<Match> findMatch(ir::Node* n) {
  if (isGroupBody(*n->graph())) return std::nullopt;
  if (n->op() == ir::Op::KilnAttention) return Match{"attention", {n}};
  if (isOp(n, ir::Op::LayerNormalization) && n->numOutputs() == 1) return Match{"layernorm", {n}};
  if (isOp(n, ir::Op::Conv) && constantValue(n->input(1))) {
    std::vector<ir::Node*> m{n};
    ir::Node* add = nextIf(n, {ir::Op::Add});
    if (isBiasAdd(add, n->output(0))) m.push_back(add);
    if (ir::Node* act = nextIf(m.back(), {ir::Op::Relu, ir::Op::Clip})) {
      m.push_back(act);
      return Match{"conv2d_bias_relu", m};
    }
    return std::nullopt;
  }
  if (isOp(n, ir::Op::Gemm) && constantValue(n->input(1))) {
    if (ir::Node* act = nextIf(n, {ir::Op::Relu})) return Match{"dense_bias_relu", {n, act}};
    return std::nullopt;
  }
  if (isOp(n, ir::Op::MatMul) && constantValue(n->input(1))) {
    ir::Node* add = nextIf(n, {ir::Op::Add});
    if (!isBiasAdd(add, n->output(0))) return std::nullopt;
    if (ir::Node* gelu = nextIf(add, {ir::Op::KilnGelu})) return Match{"dense_bias_gelu", {n, add, gelu}};
    if (ir::Node* relu = nextIf(add, {ir::Op::Relu})) return Match{"dense_bias_relu", {n, add, relu}};
    return Match{"dense_bias", {n, add}};
  }
  return std::nullopt;
}

Status rewriteMatch(const Match& m) {
  return outlineGroup(m.members, "kiln::Composite", {{"name", m.name}}).status();
}

/// Rescans after each rewrite: the match reads users several levels down.
class MergeCompositePattern final : public MatchingPattern<Match> {
 public:
  std::optional<Match> match(ir::Node& n) const override { return findMatch(&n); }
  Status apply(ir::Node&, const Match& m) const override { return rewriteMatch(m); }
  int usersRead() const override { return kAnywhere; }
};

}  // namespace

PassInfo mergeCompositePass() {
  PassInfo p;
  p.name = "merge-composite";
  p.summary = "Wrap named patterns (conv+bias+relu, dense+bias+gelu, attention, ...) into kiln::Composite";
  p.description =
      "Outlines conv2d_bias_relu, dense_bias_gelu, dense_bias_relu, dense_bias, attention and layernorm patterns "
      "into kiln::Composite nodes named after the pattern, for library offload (anchor: TVM's MergeComposite). "
      "Exact.";
  p.classes = {"RN", "MN", "SSD"};  // Table 4: MergeComposite is RN; MN; SSD
  p.optLevel = 3;
  setPatterns(p, {std::make_shared<MergeCompositePattern>()});
  return p;
}

}  // namespace kiln::passes
