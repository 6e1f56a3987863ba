//===- lib/passes/SimplifyFcTranspose.cpp - simplify-fc-transpose -----------===//
//
// Exporters often store a dense layer's weights as [N, K] and transpose them
// in the graph: MatMul(x, Transpose(W)) or Gemm(x, W, transB=1). This pass
// stores constant weights pre-transposed instead:
//   MatMul(x, Transpose(W, perm=[1,0]))  -> MatMul(x, Wᵀ)
//   Gemm(x, W, transB=1)                 -> Gemm(x, Wᵀ, transB=0)
// so every dense layer reads its weights row-major [K, N], as the matmul
// templates expect. Only 2-D constant weights are rewritten. Exact.
//
//===----------------------------------------------------------------------===//
#include "RewriteUtils.h"
#include "kiln/passes/PassRegistry.h"

namespace kiln::passes {
namespace {

const Tensor* transposedWeights(const ir::Node& n) {
  if (isOp(&n, "Gemm") && n.getInt("transB") != 0) {
    const Tensor* w = constantValue(n.input(1));
    return w && w->rank() == 2 ? w : nullptr;
  }
  return isOp(&n, "MatMul") ? transposedConstant(n.input(1)) : nullptr;
}

Expected<bool> simplifyNode(ir::Node* n) {
  const Tensor* w = transposedWeights(*n);
  if (!w) return false;
  ir::Value* old = n->input(1);
  std::string base = isOp(n, "Gemm") ? old->name() : old->producer()->input(0)->name();
  n->setInput(1, makeConstant(*n->graph(), transposed2d(*w), base + "_t", n));
  if (isOp(n, "Gemm")) n->setAttr("transB", int64_t(0));
  if (!old->hasUses()) eraseWithDeadProducers(old->producer());
  return true;
}

}  // namespace

PassInfo simplifyFcTransposePass() {
  PassInfo p;
  p.name = "simplify-fc-transpose";
  p.summary = "Store dense-layer weights pre-transposed";
  p.description =
      "Replaces MatMul(x, Transpose(W)) and Gemm(x, W, transB=1) with constant 2-D W by a MatMul/Gemm over the "
      "transposed constant, so dense layers read [K, N] row-major weights. Exact.";
  p.classes = {"MN", "BR"};  // Table 4: SimplifyFCTranspose is MN; BR
  p.optLevel = 2;
  p.applicable = [](const ir::Graph& g, const PassOptions&) { return anyNode(g, [](const ir::Node& n) { return transposedWeights(n) != nullptr; }); };
  p.run = [](ir::Graph& g, const PassOptions&, const PassContext&) -> Expected<bool> { return rewriteNodes(g, simplifyNode); };
  return p;
}

}  // namespace kiln::passes
