//===- lib/passes/SimplifyFcTranspose.cpp - simplify-fc-transpose -----------===//
//
// Exporters often store a dense layer's weights as [N, K] (PyTorch's Linear)
// and transpose them in the graph: MatMul(x, Transpose(W)) or
// Gemm(x, W, transB=1). This pass lets such layers read W as stored:
//   MatMul(x, Transpose(W, perm=[1,0]))   -> kiln::Dense(x, W)
//   Gemm(x, W, C, transB=1)               -> kiln::Dense(x, W) + C
//                                             (alpha = beta = 1, A not transposed)
// so nothing writes Wᵀ: fold-constant would otherwise transpose every weight
// matrix (340 MB of writes on BERT-base's raw export), and canonicalize-ops a
// Gemm's. Code generation packs the matmul panels straight from W (the
// same panels, so the kernels are the same). Only 2-D float constant weights
// and x of rank >= 2. The MatMul form is exact; a Gemm's result is rounded
// once while Dense+Add rounds twice, hence the tolerance of 1e-6 (as
// canonicalize-ops, which would make the same MatMul+Add of it).
//
//===----------------------------------------------------------------------===//
#include "PatternRewriteDriver.h"
#include "RewriteUtils.h"
#include "kiln/passes/PassRegistry.h"

namespace kiln::passes {
namespace {

/// W [N, K] when `n` is a dense layer reading it transposed, else null.
ir::Value* storedWeights(const ir::Node& n) {
  if (n.numInputs() < 2 || !n.input(0) || !n.input(0)->type().isTensor() || !n.input(0)->tensorType().hasRank() ||
      n.input(0)->tensorType().rank() < 2 || !isFloat(n.input(0)->tensorType().dtype()))
    return nullptr;
  if (isOp(&n, ir::Op::Gemm)) {
    if (n.getInt("transB") == 0 || n.getInt("transA") != 0 || n.getFloat("alpha") != 1.0f) return nullptr;
    if (n.hasInput(2) && n.getFloat("beta") != 1.0f) return nullptr;
    const Tensor* w = constantValue(n.input(1));
    return w && w->rank() == 2 ? n.input(1) : nullptr;
  }
  if (isOp(&n, ir::Op::MatMul) && transposedConstant(n.input(1))) return n.input(1)->producer()->input(0);
  return nullptr;
}

Status simplifyNode(ir::Node* n, ir::Value* w) {
  KILN_ASSIGN(ir::Node * dense, createTypedNode(*n->graph(), "kiln::Dense", {n->input(0), w}, {}, n->name(), n));
  ir::Value* result = dense->output(0);
  if (isOp(n, ir::Op::Gemm) && n->hasInput(2)) {
    KILN_ASSIGN(ir::Node * add, createTypedNode(*n->graph(), "Add", {result, n->input(2)}, {}, nameBase(*n) + "_bias", n));
    result = add->output(0);
  }
  return replaceNode(n, result, "simplify-fc-transpose");
}

class DenseOfStoredWeights final : public RewritePattern {
 public:
  bool matches(const ir::Node& n) const override { return storedWeights(n) != nullptr; }
  Status rewrite(ir::Node& n) const override { return simplifyNode(&n, storedWeights(n)); }
};

}  // namespace

PassInfo simplifyFcTransposePass() {
  PassInfo p;
  p.name = "simplify-fc-transpose";
  p.summary = "Let dense layers read their [N, K] weights as stored (kiln::Dense), no transposed copy";
  p.description =
      "Replaces MatMul(x, Transpose(W)) and Gemm(x, W, C, transB=1) (alpha = beta = 1) with constant 2-D W by "
      "kiln::Dense(x, W) (+ C), x @ Wᵀ read from W as stored, so no pass writes the transposed weights; code "
      "generation packs the matmul panels from W directly. MatMul: exact; Gemm: its bias added after rounding "
      "(within 1e-6 relative).";
  // Table 4: SimplifyFCTranspose is MN; BR. kiln adds RN: a ResNet ends in the
  // same Linear classifier (Gemm, transB=1) as a MobileNet.
  p.classes = {"RN", "MN", "BR"};
  p.optLevel = 2;
  p.tolerance = 1e-6;
  setPatterns(p, {std::make_shared<DenseOfStoredWeights>()});
  return p;
}

}  // namespace kiln::passes
