//===- lib/passes/SimplifyInference.cpp - simplify-inference ----------------===//
//
// Rewrites training-time constructs for inference:
//   Dropout (not in training mode)            -> its operand (mask: all true)
//   BatchNormalization after a Conv/Gemm/MatMul with constant weights, the
//     op's only user                          -> the op with folded weights
//   any other inference BatchNormalization    -> x * s + t, s = scale/sqrt(var+eps),
//                                                t = B - mean*s (per channel)
// Statistics and weights are combined in double and rounded once, so results
// differ from the unfolded graph only by f32 rounding (relative 1e-6 typical).
//
//===----------------------------------------------------------------------===//
#include "PatternRewriteDriver.h"
#include "RewriteUtils.h"
#include "WeightFolding.h"
#include "kiln/passes/PassRegistry.h"

namespace kiln::passes {
namespace {

bool isInferenceDropout(const ir::Node& n) {
  if (!isOp(&n, ir::Op::Dropout)) return false;
  if (n.hasInput(2) && !isConstantFilledWith(n.input(2), 0)) return false;  // training_mode may be on
  if (n.numOutputs() < 2 || !n.output(1)->hasUses()) return true;
  return n.output(1)->tensorType().isStatic();
}

/// The producer a BatchNormalization folds into, or null.
ir::Node* foldTarget(const ir::Node& bn, int64_t channels) {
  ir::Node* p = bn.input(0)->producer();
  if (!p || soleUser(p->output(0)) != &bn || isGraphOutput(p->output(0))) return nullptr;
  bool isConv = isOp(p, ir::Op::Conv);
  if (!isConv && bn.input(0)->tensorType().rank() != 2) return nullptr;  // Gemm/MatMul: channels are the last axis
  auto n = foldableOutputChannels(*p, true);
  return n && *n == channels ? p : nullptr;
}

/// True when an inference BatchNormalization folds into its producer's
/// weights or, on f32 data of rank 2 or more, becomes a Mul and an Add.
bool batchNormRewritable(const ir::Node& bn) {
  auto affine = isOp(&bn, ir::Op::BatchNormalization) ? inferenceBatchNormAffine(bn) : std::nullopt;
  if (!affine) return false;
  if (foldTarget(bn, int64_t(affine->first.size()))) return true;
  const ir::TensorType& type = bn.input(0)->tensorType();
  return type.hasRank() && type.rank() >= 2 && type.dtype() == DType::F32;
}

Status rewriteBatchNorm(ir::Node* bn) {
  auto affine = inferenceBatchNormAffine(*bn);
  auto& [s, t] = *affine;
  ir::Graph& g = *bn->graph();
  ir::Value* result = nullptr;
  if (ir::Node* target = foldTarget(*bn, int64_t(s.size()))) {
    KILN_ASSIGN(result, foldAffineIntoWeights(*target, s, t));
  } else {
    const ir::TensorType& type = bn->input(0)->tensorType();
    Dims dims(size_t(type.rank() - 1), 1);
    dims[0] = int64_t(s.size());
    std::vector<float> sf(s.begin(), s.end()), tf(t.begin(), t.end());
    ir::Value* sv = makeConstant(g, Tensor::fromVector<float>(dims, sf), nameBase(*bn) + "_scale", bn);
    ir::Value* tv = makeConstant(g, Tensor::fromVector<float>(dims, tf), nameBase(*bn) + "_shift", bn);
    KILN_ASSIGN(ir::Node * mul, createTypedNode(g, "Mul", {bn->input(0), sv}, {}, nameBase(*bn) + "_mul", bn));
    KILN_ASSIGN(ir::Node * add, createTypedNode(g, "Add", {mul->output(0), tv}, {}, nameBase(*bn) + "_add", bn));
    result = add->output(0);
  }
  replaceValue(bn->output(0), result, true);
  eraseWithDeadProducers(bn);
  return Status::ok();
}

void rewriteDropout(ir::Node* d) {
  ir::Graph& g = *d->graph();
  if (d->numOutputs() > 1 && d->output(1)->hasUses()) {
    const Dims& dims = d->output(1)->tensorType().dims();
    Tensor mask = Tensor::zeros(DType::Bool, dims);
    std::fill_n(static_cast<uint8_t*>(mask.mutableRawData()), mask.byteSize(), uint8_t(1));
    replaceValue(d->output(1), makeConstant(g, std::move(mask), d->output(1)->name() + "_ones", d));
  }
  replaceValue(d->output(0), d->input(0));
  eraseWithDeadProducers(d);
}

class DropDropout final : public RewritePattern {
 public:
  bool matches(const ir::Node& n) const override { return isInferenceDropout(n); }
  Status rewrite(ir::Node& n) const override {
    rewriteDropout(&n);
    return Status::ok();
  }
};

class FoldBatchNorm final : public RewritePattern {
 public:
  bool matches(const ir::Node& n) const override { return batchNormRewritable(n); }
  Status rewrite(ir::Node& n) const override { return rewriteBatchNorm(&n); }
};

}  // namespace

PassInfo simplifyInferencePass() {
  PassInfo p;
  p.name = "simplify-inference";
  p.summary = "Fold BatchNormalization into weights and drop Dropout";
  p.description =
      "Replaces inference-mode Dropout by its operand, folds a BatchNormalization into the Conv, Gemm or "
      "MatMul (constant weights) that feeds only it, and turns any other inference BatchNormalization into a "
      "per-channel Mul and Add. Statistics are combined in double and rounded once: differences from the "
      "unfolded graph are f32 rounding (documented tolerance: relative 1e-5).";
  p.classes = {"BL", "RN", "MN", "SSD"};  // Table 4: SimplifyInference is RN; MN; SSD
  p.tolerance = 1e-5;
  p.optLevel = 1;
  setPatterns(p, {std::make_shared<DropDropout>(), std::make_shared<FoldBatchNorm>()});
  return p;
}

}  // namespace kiln::passes
