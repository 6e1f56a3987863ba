//===- lib/passes/ForwardFoldScaleAxis.cpp - forward-fold-scale-axis --------===//
//
// Folds per-channel scaling into the weights of the Conv, Gemm or MatMul next
// to it:
//   Conv(x * s)                 -> Conv'(x)   s per input channel, group 1:
//                                              W'[o,c,..] = W[o,c,..] * s[c]
//   op(x) * s, op(x) + t        -> op'(x)     s, t per output channel (MatMul:
//                                              scaling only, it has no bias)
// where s and t are f32 constants that broadcast along the channel axis only
// (or are single values) and op's result has no other user. Zero padding
// commutes with the scaling, so the forward fold is exact up to f32 rounding
// of the new weights (relative 1e-6 typical), as is the backward one.
//
//===----------------------------------------------------------------------===//
#include "PatternRewriteDriver.h"
#include "RewriteUtils.h"
#include "WeightFolding.h"
#include "kiln/passes/PassRegistry.h"

namespace kiln::passes {
namespace {

struct Fold {
  enum class Kind { None, InputScale, OutputScale, OutputShift } kind = Kind::None;
  ir::Node* op = nullptr;          ///< the Conv/Gemm/MatMul
  ir::Node* affine = nullptr;      ///< the Mul or Add
  std::vector<double> values;      ///< per channel
  size_t xOperand = 0;             ///< InputScale: the Mul operand that is not the scale
};

/// A backward fold: `n` is Mul/Add by a per-output-channel constant of op's result.
Fold outputFold(ir::Node& n) {
  Fold f;
  bool mul = isOp(&n, ir::Op::Mul), add = isOp(&n, ir::Op::Add);
  if (!mul && !add) return f;
  for (size_t i = 0; i < 2 && !f.op; ++i) {
    ir::Node* op = n.input(i)->producer();
    if (!op || soleUser(op->output(0)) != &n || isGraphOutput(op->output(0))) continue;
    auto channels = foldableOutputChannels(*op, add);
    const ir::TensorType& t = op->output(0)->tensorType();
    if (!channels || !t.hasRank() || t.rank() < 2 || n.output(0)->type() != op->output(0)->type()) continue;
    int64_t axis = isOp(op, ir::Op::Conv) ? 1 : t.rank() - 1;
    auto values = perChannelValues(n.input(1 - i), axis, t.rank(), *channels);
    if (!values) continue;
    f = {mul ? Fold::Kind::OutputScale : Fold::Kind::OutputShift, op, &n, std::move(*values)};
  }
  return f;
}

/// A forward fold: `conv` (group 1) reads x*s with s per input channel.
Fold inputFold(ir::Node& conv) {
  Fold f;
  if (!isOp(&conv, ir::Op::Conv) || conv.getInt("group") != 1) return f;
  ir::Node* mul = conv.input(0)->producer();
  if (!isOp(mul, ir::Op::Mul) || soleUser(mul->output(0)) != &conv || isGraphOutput(mul->output(0))) return f;
  const Tensor* w = constantValue(conv.input(1));
  if (!w || w->dtype() != DType::F32 || !foldableOutputChannels(conv, false)) return f;
  for (size_t i = 0; i < 2; ++i) {
    const ir::TensorType& t = mul->input(i)->tensorType();
    if (!t.hasRank() || t != mul->output(0)->tensorType()) continue;
    auto values = perChannelValues(mul->input(1 - i), 1, t.rank(), w->dim(1));
    if (values) return {Fold::Kind::InputScale, &conv, mul, std::move(*values), i};
  }
  return f;
}

Fold findFold(ir::Node& n) {
  Fold f = inputFold(n);
  return f.kind != Fold::Kind::None ? f : outputFold(n);
}

void applyInputFold(const Fold& f) {
  ir::Node& conv = *f.op;
  ir::Graph& g = *conv.graph();
  const Tensor& w = *constantValue(conv.input(1));
  Tensor w2 = w.clone();
  float* d = w2.mutableData<float>();
  int64_t inner = w.numElements() / (w.dim(0) * w.dim(1));
  for (int64_t i = 0; i < w.numElements(); ++i) d[i] = float(double(d[i]) * f.values[size_t((i / inner) % w.dim(1))]);
  ir::Value* x = f.affine->input(f.xOperand);
  ir::Node* oldWeights = conv.input(1)->producer();
  conv.setInput(1, makeConstant(g, std::move(w2), foldedName(conv.input(1)->name()), &conv));
  conv.setInput(0, x);
  eraseWithDeadProducers(f.affine);
  eraseWithDeadProducers(oldWeights);
}

Status applyFold(const Fold& f) {
  if (f.kind == Fold::Kind::InputScale) {
    applyInputFold(f);
    return Status::ok();
  }
  std::vector<double> ones(f.values.size(), 1.0), zeros(f.values.size(), 0.0);
  bool scale = f.kind == Fold::Kind::OutputScale;
  KILN_ASSIGN(ir::Value * folded, foldAffineIntoWeights(*f.op, scale ? f.values : ones, scale ? zeros : f.values));
  replaceValue(f.affine->output(0), folded, true);
  eraseWithDeadProducers(f.affine);
  return Status::ok();
}

class FoldScaleAxis final : public MatchingPattern<Fold> {
 public:
  std::optional<Fold> match(ir::Node& n) const override {
    Fold f = findFold(n);
    return f.kind == Fold::Kind::None ? std::nullopt : std::optional<Fold>(f);
  }
  Status apply(ir::Node&, const Fold& f) const override { return applyFold(f); }
};

}  // namespace

PassInfo forwardFoldScaleAxisPass() {
  PassInfo p;
  p.name = "forward-fold-scale-axis";
  p.summary = "Fold per-channel Mul/Add into Conv, Gemm and MatMul weights";
  p.description =
      "Folds a per-input-channel Mul feeding a Conv (group 1) into its weights, and a per-output-channel Mul "
      "or Add of a Conv, Gemm or MatMul result (its only user) into weights and bias (MatMul: Mul only). "
      "Exact up to f32 rounding of the new weights (documented tolerance: relative 1e-5).";
  p.classes = {"BL", "BR"};  // Table 4: ForwardFoldScaleAxis is BR; in kiln's -O3 (BL)
  p.tolerance = 1e-5;
  p.optLevel = 2;
  setPatterns(p, {std::make_shared<FoldScaleAxis>()});
  return p;
}

}  // namespace kiln::passes
