//===- lib/ir/ops/NormalizationOps.cpp - Normalisation, softmax, dropout ---===//
//
// BatchNormalization (inference and training modes), Instance/Layer/LRN/MVN/Lp
// normalisation, Softmax/LogSoftmax/Hardmax along one axis, and Dropout.
//
//===----------------------------------------------------------------------===//
#include "InferHelpers.h"
#include "OpFamilies.h"

namespace kiln::ir {
using namespace infer;

namespace {

/// Checks that input i is 1-D with `c` elements (when both are known).
Status requireChannelVector(const InferenceContext& ctx, size_t i, int64_t c, const char* what) {
  if (!ctx.hasInput(i)) return Status::ok();
  KILN_ASSIGN(TensorType t, ctx.inputTensor(i));
  if (!t.hasRank()) return Status::ok();
  if (t.rank() != 1 || (c >= 0 && t.dim(0) >= 0 && t.dim(0) != c))
    return shapeError(std::string(what) + " must be 1-D with " + std::to_string(c) + " elements, got " + t.str());
  return Status::ok();
}

Status inferBatchNorm(InferenceContext& ctx) {
  KILN_ASSIGN(TensorType x, ctx.inputTensor(0));
  int64_t c = x.hasRank() && x.rank() >= 2 ? x.dim(1) : kUnknownDim;
  if (x.hasRank() && x.rank() < 2) return shapeError("input must have rank >= 2, got " + x.str());
  static const char* const kNames[] = {"", "scale", "B", "input_mean", "input_var"};
  for (size_t i = 1; i < 5; ++i) KILN_TRY(requireChannelVector(ctx, i, c, kNames[i]));
  ctx.setOutputType(0, x);
  KILN_ASSIGN(TensorType mean, ctx.inputTensor(3));
  for (size_t i = 1; i < ctx.numOutputs(); ++i) setOut(ctx, i, mean.dtype(), {c});
  return Status::ok();
}

Status inferInstanceNorm(InferenceContext& ctx) {
  KILN_ASSIGN(TensorType x, ctx.inputTensor(0));
  if (x.hasRank() && x.rank() < 3) return shapeError("input must have rank >= 3, got " + x.str());
  int64_t c = x.hasRank() ? x.dim(1) : kUnknownDim;
  KILN_TRY(requireChannelVector(ctx, 1, c, "scale"));
  KILN_TRY(requireChannelVector(ctx, 2, c, "B"));
  ctx.setOutputType(0, x);
  return Status::ok();
}

Status inferLayerNorm(InferenceContext& ctx) {
  KILN_ASSIGN(TensorType x, ctx.inputTensor(0));
  ctx.setOutputType(0, x);
  if (!x.hasRank()) {
    for (size_t i = 1; i < ctx.numOutputs(); ++i) setUnranked(ctx, i, DType::F32);
    return Status::ok();
  }
  KILN_ASSIGN(int64_t axis, normalizeAxis(ctx.node().getInt("axis"), x.rank()));
  auto stash = dtypeFromOnnx(int(ctx.node().getInt("stash_type")));
  if (!stash || !isFloat(*stash)) return attrError("stash_type must be a floating-point type");
  Dims stats = x.dims();
  for (size_t d = size_t(axis); d < stats.size(); ++d) stats[d] = 1;
  for (size_t i = 1; i < ctx.numOutputs(); ++i) setOut(ctx, i, *stash, stats);
  return Status::ok();
}

Status inferAxisOp(InferenceContext& ctx) {
  KILN_ASSIGN(TensorType x, ctx.inputTensor(0));
  if (x.hasRank()) KILN_TRY(normalizeAxis(ctx.node().getInt("axis"), x.rank()).status());
  ctx.setOutputType(0, x);
  return Status::ok();
}

Status inferDropout(InferenceContext& ctx) {
  KILN_ASSIGN(TensorType x, ctx.inputTensor(0));
  ctx.setOutputType(0, x);
  if (ctx.numOutputs() > 1) ctx.setOutputType(1, x.withDType(DType::Bool));
  return Status::ok();
}

}  // namespace

void registerNormalizationOps(OpRegistry& r) {
  r.add(SchemaBuilder("BatchNormalization").inputs(5, 5, {"X", "scale", "B", "input_mean", "input_var"})
            .outputs(1, 3, {"Y", "running_mean", "running_var"})
            .attr("epsilon", 1e-5f).attr("momentum", 0.9f).attr("training_mode", 0)
            .pattern(FusionPattern::Broadcast).infer(inferBatchNorm)
            .doc("Per-channel normalisation with running statistics (batch statistics in training_mode).")
            .build());
  r.add(SchemaBuilder("InstanceNormalization").inputs(3, 3, {"input", "scale", "B"}).outputs(1, 1, {"output"})
            .attr("epsilon", 1e-5f).pattern(FusionPattern::Opaque).infer(inferInstanceNorm)
            .doc("Normalises each (N, C) slice over its spatial dims, then scales and shifts.").build());
  r.add(SchemaBuilder("LayerNormalization").inputs(2, 3, {"X", "Scale", "B"})
            .outputs(1, 3, {"Y", "Mean", "InvStdDev"}).attr("axis", -1).attr("epsilon", 1e-5f)
            .attr("stash_type", 1).pattern(FusionPattern::Opaque).infer(inferLayerNorm)
            .doc("Normalises over the dims from axis on, then scales and shifts.").build());
  r.add(SchemaBuilder("LRN").inputs(1, 1, {"X"}).outputs(1, 1, {"Y"}).requiredAttr("size", AttrKind::Int)
            .attr("alpha", 0.0001f).attr("beta", 0.75f).attr("bias", 1.0f)
            .pattern(FusionPattern::Opaque).infer(sameAsInput0)
            .doc("Local response normalisation across channels.").build());
  r.add(SchemaBuilder("MeanVarianceNormalization").inputs(1, 1, {"X"}).outputs(1, 1, {"Y"})
            .attr("axes", std::vector<int64_t>{0, 2, 3}).pattern(FusionPattern::Opaque).infer(sameAsInput0)
            .doc("(x - mean) / sqrt(variance) over the given axes.").build());
  r.add(SchemaBuilder("LpNormalization").inputs(1, 1, {"input"}).outputs(1, 1, {"output"})
            .attr("axis", -1).attr("p", 2).pattern(FusionPattern::Opaque).infer(inferAxisOp)
            .doc("Divides by the Lp norm along axis.").build());
  for (const char* name : {"Softmax", "LogSoftmax", "Hardmax"})
    r.add(SchemaBuilder(name).inputs(1, 1, {"input"}).outputs(1, 1, {"output"}).attr("axis", -1)
              .pattern(FusionPattern::Opaque).infer(inferAxisOp)
              .doc(std::string(name) + " along one axis (opset 13 semantics).").build());
  r.add(SchemaBuilder("Dropout").inputs(1, 3, {"data", "ratio", "training_mode"}).outputs(1, 2, {"output", "mask"})
            .optionalAttr("seed", AttrKind::Int).pattern(FusionPattern::Elementwise).infer(inferDropout)
            .doc("Identity at inference; random zeroing with scaling when training_mode is true.")
            .nondeterministic().build());
}

}  // namespace kiln::ir
