//===- lib/ir/ops/KilnOps.cpp - kiln's own ops (domain "kiln") --------------===//
//
// Ops that kiln's passes produce and its code generators consume; ONNX has no
// equivalent in opset 17:
//   kiln::Gelu        0.5·x·(1 + erf(x/√2)); approximate = "none" | "tanh" | "fast"
//   kiln::FastExp, kiln::FastErf, kiln::FastTanh, kiln::FastSoftmax
//                     the fast-math approximations of support/FastMath.h
//   kiln::Attention   softmax(q @ kT · scale [+ mask]) @ v, with k already transposed
//   kiln::Dense       x @ Wᵀ: a dense layer reading its weights W [N, K] as stored
//   kiln::Fused       a fused group (fuse-ops): its body runs as one kernel
//   kiln::Composite   a named pattern (merge-composite) for library offload
// Fused and Composite own a body graph whose inputs are the node's operands
// and whose outputs are its results; defuse-ops inlines them back.
//
//===----------------------------------------------------------------------===//
#include <climits>

#include "InferHelpers.h"
#include "OpFamilies.h"
#include "kiln/ir/Graph.h"

namespace kiln::ir {
namespace {

using namespace infer;

Status floatSameType(InferenceContext& ctx) {
  KILN_ASSIGN(TensorType x, ctx.inputTensor(0));
  if (x.dtype() != DType::Undefined && !isFloat(x.dtype()))
    return shapeError("needs a float operand, got " + x.str());
  ctx.setOutputType(0, x);
  return Status::ok();
}

Status inferAttention(InferenceContext& ctx) {
  KILN_TRY(requireSameDType(ctx, {0, 1, 2}));
  KILN_ASSIGN(TensorType q, ctx.inputTensor(0));
  KILN_ASSIGN(TensorType k, ctx.inputTensor(1));
  KILN_ASSIGN(TensorType v, ctx.inputTensor(2));
  if (!q.hasRank() || !k.hasRank() || !v.hasRank()) {
    setUnranked(ctx, 0, q.dtype());
    return Status::ok();
  }
  KILN_ASSIGN(Dims scores, matmulDims(q.dims(), k.dims()));
  if (ctx.hasInput(3)) {
    KILN_ASSIGN(TensorType mask, ctx.inputTensor(3));
    if (mask.hasRank()) KILN_TRY(broadcastDims(scores, mask.dims()).status());
  }
  KILN_ASSIGN(Dims out, matmulDims(scores, v.dims()));
  setOut(ctx, 0, q.dtype(), out);
  return Status::ok();
}

Status inferDense(InferenceContext& ctx) {
  KILN_TRY(requireSameDType(ctx, {0, 1}));
  KILN_ASSIGN(TensorType x, ctx.inputTensor(0));
  KILN_ASSIGN(TensorType w, ctx.inputTensor(1));
  KILN_TRY(requireRank(w, 2, "W"));
  if (!x.hasRank() || !w.hasRank()) {
    setUnranked(ctx, 0, x.dtype());
    return Status::ok();
  }
  if (x.rank() < 2) return shapeError("X must have rank >= 2 ([..., M, K]), got " + x.str());
  const int64_t k = x.dim(x.rank() - 1);
  if (k >= 0 && w.dim(1) >= 0 && k != w.dim(1))
    return shapeError("inner dims differ: X " + x.str() + ", W " + w.str() + " (W is [N, K])");
  Dims out(x.dims().begin(), x.dims().end() - 1);
  out.push_back(w.dim(0));
  setOut(ctx, 0, x.dtype(), out);
  return Status::ok();
}

Status inferGroup(InferenceContext& ctx) {
  Graph* body = ctx.node().getGraph("body");
  if (body->inputs().size() != ctx.numInputs() || body->outputs().size() != ctx.numOutputs())
    return shapeError("body takes " + std::to_string(body->inputs().size()) + " inputs and returns " +
                      std::to_string(body->outputs().size()) + " values; the node has " +
                      std::to_string(ctx.numInputs()) + " operands and " + std::to_string(ctx.numOutputs()) +
                      " results");
  std::vector<Type> types;
  for (size_t i = 0; i < ctx.numInputs(); ++i) types.push_back(ctx.inputType(i));
  KILN_TRY(ctx.inferSubgraph(*body, types));
  for (size_t i = 0; i < ctx.numOutputs(); ++i) ctx.setOutputType(i, body->outputs()[i]->type());
  return Status::ok();
}

SchemaBuilder unary(const char* name, const char* doc) {
  return std::move(SchemaBuilder(name, "kiln").inputs(1, 1, {"X"}).outputs(1, 1, {"Y"})
                       .pattern(FusionPattern::Elementwise).infer(floatSameType).doc(doc));
}

}  // namespace

void registerKilnOps(OpRegistry& r) {
  r.add(unary("Gelu", "0.5·x·(1 + erf(x/√2)); approximate \"tanh\" uses the tanh formula, \"fast\" FastErf.")
            .attr("approximate", "none").build());
  r.add(unary("FastExp", "e^x within 3e-7 relative (support/FastMath.h).").build());
  r.add(unary("FastErf", "erf(x) within 5e-7 absolute (support/FastMath.h).").build());
  r.add(unary("FastTanh", "tanh(x) within 2e-7 absolute (support/FastMath.h).").build());
  r.add(SchemaBuilder("FastSoftmax", "kiln").inputs(1, 1, {"input"}).outputs(1, 1, {"output"}).attr("axis", -1)
            .pattern(FusionPattern::Opaque).infer(floatSameType)
            .doc("Softmax along axis with FastExp.").build());
  r.add(SchemaBuilder("Attention", "kiln").inputs(3, 4, {"q", "kT", "v", "mask"}).outputs(1, 1, {"output"})
            .attr("scale", 1.0f).pattern(FusionPattern::Opaque).infer(inferAttention)
            .doc("softmax(q @ kT * scale + mask) @ v over the last axis (scaled dot-product attention).").build());
  r.add(SchemaBuilder("Dense", "kiln").inputs(2, 2, {"X", "W"}).outputs(1, 1, {"Y"})
            .pattern(FusionPattern::OutEWiseFusable).infer(inferDense)
            .doc("X @ Wᵀ for X [..., M, K] and W [N, K]: a dense layer whose weights stay as stored (simplify-fc-transpose).").build());
  r.add(SchemaBuilder("Fused", "kiln").inputs(0, INT_MAX, {"inputs"}).requiredInputs(0).outputs(1, INT_MAX, {"outputs"})
            .requiredAttr("body", AttrKind::Graph).attr("pattern", "injective")
            .pattern(FusionPattern::Opaque).infer(inferGroup)
            .doc("A fused group made by fuse-ops; its body is one kernel.").build());
  r.add(SchemaBuilder("Composite", "kiln").inputs(0, INT_MAX, {"inputs"}).requiredInputs(0)
            .outputs(1, INT_MAX, {"outputs"}).requiredAttr("body", AttrKind::Graph)
            .requiredAttr("name", AttrKind::String).pattern(FusionPattern::Opaque).infer(inferGroup)
            .doc("A named pattern made by merge-composite (e.g. conv2d_bias_relu), for library offload.").build());
}

}  // namespace kiln::ir
