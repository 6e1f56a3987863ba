//===- lib/frontend/onnx/ContribOps.cpp - com.microsoft ops as opset-17 ops -===//
//
// The com.microsoft ops that ONNX Runtime's graph optimiser writes (and the
// models of Olive and optimum carry), written at import as the opset-17 ops
// they fuse, so that kiln's own passes fuse them again for its kernels
// (ONNX Runtime's docs/ContribOperators.md is the spec):
//   FusedConv, FusedGemm     Conv / Gemm (+ Z), then the named activation
//   FusedMatMul              alpha * MatMul of (transposed) operands
//   Gelu, BiasGelu, FastGelu GELU of x (+ bias), erf or tanh form
//   QuickGelu                x * sigmoid(alpha x)
//   BiasAdd                  x + bias + skip
//   SimplifiedLayerNormalization (default domain) and
//   Skip[Simplified]LayerNormalization
//                            (input + skip + bias), then layer or RMS norm
//   Attention, MultiHeadAttention, GroupQueryAttention, RotaryEmbedding
//                            scaled dot-product attention (AttentionExpansions.cpp)
//   MatMulNBits              MatMul by the weight dequantised at import (MatMulNBits.cpp)
// Other contrib ops are refused by name.
//
//===----------------------------------------------------------------------===//
#include <cmath>

#include "ContribOps.h"
#include "NewerOpsetForms.h"

namespace kiln::onnx {
namespace {


Expected<ir::Value*> scalarLike(DraftBuilder& b, const NodeDraft& d, double v) {
  KILN_ASSIGN(DType dt, inputDType(d, 0));
  return b.constant(scalarOf(dt, v));
}

/// The activation a fused op names, applied to `y`, as the draft's last node.
Status finishWithActivation(NodeDraft& d, DraftBuilder& b, ir::Value* y, const std::string& act,
                            const std::vector<float>& params) {
  auto param = [&](size_t i, float dflt) { return i < params.size() ? params[i] : dflt; };
  d.attrs.clear();
  d.inputs = {y};
  if (act.empty()) d.opType = "Identity";
  else if (act == "Relu" || act == "Tanh" || act == "Sigmoid") d.opType = act;
  else if (act == "LeakyRelu") d.opType = act, d.set("alpha", param(0, 0.01f));
  else if (act == "HardSigmoid") d.opType = act, d.set("alpha", param(0, 0.2f)), d.set("beta", param(1, 0.5f));
  else if (act == "Elu") d.opType = act, d.set("alpha", param(0, 1.0f));
  else if (act == "Clip") {
    if (params.size() != 2) return Error(ErrorCode::BadAttribute, "Clip activation needs 2 activation_params (min, max)");
    KILN_ASSIGN(DType dt, inputDType(d, 0));
    KILN_ASSIGN(ir::Value* lo, b.constant(scalarOf(dt, params[0])));
    KILN_ASSIGN(ir::Value* hi, b.constant(scalarOf(dt, params[1])));
    d.opType = "Clip";
    d.inputs = {y, lo, hi};
  } else {
    return Error(ErrorCode::OnnxUnsupportedOp, d.opType + ": activation '" + act + "' is not supported by kiln");
  }
  return Status::ok();
}

Expected<std::string> takeActivation(NodeDraft& d) {
  KILN_ASSIGN(auto act, d.takeAs("activation", ir::AttrKind::String));
  return act ? act->s() : std::string();
}

Status fusedConv(NodeDraft& d, DraftBuilder& b) {
  KILN_TRY(requireInputs(d, 2));
  KILN_ASSIGN(std::string act, takeActivation(d));
  KILN_ASSIGN(auto params, d.takeAs("activation_params", ir::AttrKind::Floats));
  std::vector<ir::Value*> convInputs(d.inputs.begin(), d.inputs.begin() + std::min<size_t>(3, d.inputs.size()));
  while (!convInputs.back()) convInputs.pop_back();
  KILN_ASSIGN(ir::Value* y, b.node("Conv", convInputs, d.attrs));
  if (hasInput(d, 3)) {
    KILN_ASSIGN(y, b.node("Add", {y, d.inputs[3]}, {}));
  }
  return finishWithActivation(d, b, y, act, params ? params->floats() : std::vector<float>{});
}

Status fusedGemm(NodeDraft& d, DraftBuilder& b) {
  KILN_TRY(requireInputs(d, 2));
  KILN_ASSIGN(std::string act, takeActivation(d));
  std::vector<float> params;
  for (const char* name : {"activation_alpha", "activation_beta", "activation_gamma"}) {
    KILN_ASSIGN(auto p, d.takeAs(name, ir::AttrKind::Float));
    if (p) params.push_back(p->f());
  }
  KILN_ASSIGN(ir::Value* y, b.node("Gemm", d.inputs, d.attrs));
  return finishWithActivation(d, b, y, act, params);
}

/// `x` with its last two dims swapped.
Expected<ir::Value*> transposeLastTwo(DraftBuilder& b, ir::Value* x) {
  if (!x->type().isTensor() || !x->type().tensor().hasRank() || x->type().tensor().rank() < 2)
    return Error(ErrorCode::ShapeMismatch, "a transposed FusedMatMul operand needs a known rank of 2 or more");
  int64_t rank = x->type().tensor().rank();
  std::vector<int64_t> perm;
  for (int64_t i = 0; i < rank; ++i) perm.push_back(i);
  std::swap(perm[size_t(rank - 1)], perm[size_t(rank - 2)]);
  return b.node("Transpose", {x}, {{"perm", ir::Attribute(perm)}});
}

Status fusedMatMul(NodeDraft& d, DraftBuilder& b) {
  KILN_TRY(requireInputs(d, 2));
  KILN_ASSIGN(float alpha, d.takeFloat("alpha", 1.0f));
  KILN_ASSIGN(int64_t transA, d.takeInt("transA", 0));
  KILN_ASSIGN(int64_t transB, d.takeInt("transB", 0));
  KILN_ASSIGN(int64_t batchA, d.takeInt("transBatchA", 0));
  KILN_ASSIGN(int64_t batchB, d.takeInt("transBatchB", 0));
  if (batchA || batchB) return Error(ErrorCode::OnnxUnsupportedOp, "FusedMatMul: transBatchA/B is not supported by kiln");
  ir::Value* a = d.inputs[0];
  ir::Value* c = d.inputs[1];
  if (transA) {
    KILN_ASSIGN(a, transposeLastTwo(b, a));
  }
  if (transB) {
    KILN_ASSIGN(c, transposeLastTwo(b, c));
  }
  d.attrs.clear();
  if (alpha == 1.0f) {
    d.opType = "MatMul";
    d.inputs = {a, c};
    return Status::ok();
  }
  KILN_ASSIGN(ir::Value* y, b.node("MatMul", {a, c}, {}));
  KILN_ASSIGN(ir::Value* s, scalarLike(b, d, alpha));
  d.opType = "Mul";
  d.inputs = {y, s};
  return Status::ok();
}

/// x, plus the bias input `i` when present.
Expected<ir::Value*> withBias(DraftBuilder& b, const NodeDraft& d, size_t i) {
  if (!hasInput(d, i)) return d.inputs[0];
  return b.node("Add", {d.inputs[0], d.inputs[i]}, {});
}

Status gelu(NodeDraft& d, DraftBuilder& b, bool tanhForm) {
  KILN_TRY(requireInputs(d, 1));
  KILN_ASSIGN(DType dt, inputDType(d, 0));
  KILN_ASSIGN(ir::Value* x, withBias(b, d, 1));
  KILN_ASSIGN(ir::Value* y, buildGelu(b, x, dt, tanhForm));
  return finishWith(d, y);
}

Status erfGelu(NodeDraft& d, DraftBuilder& b) { return gelu(d, b, false); }
Status fastGelu(NodeDraft& d, DraftBuilder& b) { return gelu(d, b, true); }

Status biasGelu(NodeDraft& d, DraftBuilder& b) {
  KILN_TRY(requireInputs(d, 2));
  return gelu(d, b, false);
}

Status quickGelu(NodeDraft& d, DraftBuilder& b) {
  KILN_TRY(requireInputs(d, 1));
  KILN_ASSIGN(float alpha, d.takeFloat("alpha", 1.702f));
  KILN_ASSIGN(ir::Value* a, scalarLike(b, d, alpha));
  KILN_ASSIGN(ir::Value* ax, b.node("Mul", {d.inputs[0], a}, {}));
  KILN_ASSIGN(ir::Value* s, b.node("Sigmoid", {ax}, {}));
  d.opType = "Mul";
  d.inputs = {d.inputs[0], s};
  d.attrs.clear();
  return Status::ok();
}

Status biasAdd(NodeDraft& d, DraftBuilder& b) {
  KILN_TRY(requireInputs(d, 3));
  KILN_ASSIGN(ir::Value* xb, b.node("Add", {d.inputs[0], d.inputs[1]}, {}));
  d.opType = "Add";
  d.inputs = {xb, d.inputs[2]};
  d.attrs.clear();
  return Status::ok();
}

/// input + skip (+ bias input `biasSlot`): the sum both skip norms normalise,
/// also their optional output 3.
Expected<ir::Value*> skipSum(NodeDraft& d, DraftBuilder& b, size_t biasSlot) {
  KILN_TRY(requireInputs(d, 3));
  KILN_ASSIGN(ir::Value* sum, b.node("Add", {d.inputs[0], d.inputs[1]}, {}));
  if (hasInput(d, biasSlot)) {
    KILN_ASSIGN(sum, b.node("Add", {sum, d.inputs[biasSlot]}, {}));
  }
  if (d.outputs.size() > 3) d.computedOutputs.emplace_back(d.outputs[3], sum);
  return sum;
}

Status skipLayerNormalization(NodeDraft& d, DraftBuilder& b) {
  KILN_ASSIGN(float eps, d.takeFloat("epsilon", 1e-12f));
  KILN_ASSIGN(ir::Value* sum, skipSum(d, b, 4));
  std::vector<ir::Value*> norm = {sum, d.inputs[2]};
  if (hasInput(d, 3)) norm.push_back(d.inputs[3]);
  d.opType = "LayerNormalization";
  d.inputs = norm;
  d.attrs.clear();
  d.set("axis", int64_t(-1));
  d.set("epsilon", eps);
  d.outputs.resize(std::min<size_t>(d.outputs.size(), 3));  // output, mean, inv_std_var
  return Status::ok();
}

Status skipSimplifiedLayerNormalization(NodeDraft& d, DraftBuilder& b) {
  KILN_ASSIGN(float eps, d.takeFloat("epsilon", 1e-12f));
  KILN_ASSIGN(ir::Value* sum, skipSum(d, b, 3));
  if (d.outputs.size() > 1 && !d.outputs[1].empty())
    return Error(ErrorCode::OnnxUnsupportedOp, "SkipSimplifiedLayerNormalization: the mean output is not supported by kiln");
  KILN_ASSIGN(DType dt, inputDType(d, 0));
  KILN_ASSIGN(std::vector<int64_t> axes, axesFrom(-1, sum->type().tensor().rank()));
  ir::Value* invRms = nullptr;
  bool wantsInvRms = d.outputs.size() > 2 && !d.outputs[2].empty();
  KILN_ASSIGN(ir::Value* norm, buildRmsNormalized(b, sum, dt, axes, eps, 1, wantsInvRms ? &invRms : nullptr));
  if (wantsInvRms) d.computedOutputs.emplace_back(d.outputs[2], invRms);
  d.outputs.resize(1);
  d.opType = "Mul";
  d.inputs = {norm, d.inputs[2]};
  d.attrs.clear();
  return Status::ok();
}

struct ContribEntry {
  std::string_view domain, op;
  FormHandler handler;
};

constexpr ContribEntry kContribOps[] = {
    {"com.microsoft", "FusedConv", fusedConv},
    {"com.microsoft", "FusedGemm", fusedGemm},
    {"com.microsoft", "FusedMatMul", fusedMatMul},
    {"com.microsoft", "Gelu", erfGelu},
    {"com.microsoft", "BiasGelu", biasGelu},
    {"com.microsoft", "FastGelu", fastGelu},
    {"com.microsoft", "QuickGelu", quickGelu},
    {"com.microsoft", "BiasAdd", biasAdd},
    {"com.microsoft", "SkipLayerNormalization", skipLayerNormalization},
    {"com.microsoft", "SkipSimplifiedLayerNormalization", skipSimplifiedLayerNormalization},
    {"com.microsoft", "SimplifiedLayerNormalization", expandRmsNormalization},
    {"com.microsoft", "Attention", expandContribAttention},
    {"com.microsoft", "MultiHeadAttention", expandMultiHeadAttention},
    {"com.microsoft", "GroupQueryAttention", expandGroupQueryAttention},
    {"com.microsoft", "RotaryEmbedding", expandContribRotaryEmbedding},
    {"com.microsoft", "MatMulNBits", expandMatMulNBits},
    {"", "SimplifiedLayerNormalization", expandRmsNormalization},  // ONNX Runtime files it in the default domain
};

}  // namespace

FormHandler contribOpHandler(std::string_view domain, std::string_view op) {
  for (const ContribEntry& e : kContribOps)
    if (e.domain == domain && e.op == op) return e.handler;
  return nullptr;
}

}  // namespace kiln::onnx
