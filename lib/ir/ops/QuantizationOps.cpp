//===- lib/ir/ops/QuantizationOps.cpp - Linear (de)quantisation ------------===//
//
// QuantizeLinear, DequantizeLinear (per-tensor or per-axis) and
// DynamicQuantizeLinear. Quantized Conv/MatMul live with Conv and MatMul.
//
//===----------------------------------------------------------------------===//
#include "InferHelpers.h"
#include "OpFamilies.h"

namespace kiln::ir {
using namespace infer;

namespace {

Status checkScaleShape(const InferenceContext& ctx, const TensorType& x, size_t scaleIdx) {
  KILN_ASSIGN(TensorType scale, ctx.inputTensor(scaleIdx));
  if (!scale.hasRank() || scale.rank() == 0) return Status::ok();
  if (scale.rank() != 1) return shapeError("scale must be a scalar or 1-D, got " + scale.str());
  if (x.hasRank()) {
    KILN_ASSIGN(int64_t axis, normalizeAxis(ctx.node().getInt("axis"), x.rank()));
    if (scale.dim(0) >= 0 && x.dim(axis) >= 0 && scale.dim(0) != x.dim(axis) && scale.dim(0) != 1)
      return shapeError("per-axis scale " + scale.str() + " does not match axis " + std::to_string(axis) + " of " + x.str());
  }
  return Status::ok();
}

Status inferQuantize(InferenceContext& ctx) {
  KILN_ASSIGN(TensorType x, ctx.inputTensor(0));
  KILN_TRY(checkScaleShape(ctx, x, 1));
  DType out = DType::U8;
  if (ctx.hasInput(2)) {
    KILN_ASSIGN(TensorType zp, ctx.inputTensor(2));
    out = zp.dtype();
    if (out != DType::U8 && out != DType::I8) return shapeError("zero point must be uint8 or int8, got " + zp.str());
  }
  ctx.setOutputType(0, x.withDType(out));
  return Status::ok();
}

Status inferDequantize(InferenceContext& ctx) {
  KILN_ASSIGN(TensorType x, ctx.inputTensor(0));
  KILN_ASSIGN(TensorType scale, ctx.inputTensor(1));
  KILN_TRY(checkScaleShape(ctx, x, 1));
  if (ctx.hasInput(2)) KILN_TRY(requireSameDType(ctx, {0, 2}));
  ctx.setOutputType(0, x.withDType(scale.dtype()));
  return Status::ok();
}

Status inferDynamicQuantize(InferenceContext& ctx) {
  KILN_ASSIGN(TensorType x, ctx.inputTensor(0));
  if (x.dtype() != DType::F32) return shapeError("DynamicQuantizeLinear needs float32 input, got " + x.str());
  ctx.setOutputType(0, x.withDType(DType::U8));
  if (ctx.numOutputs() > 1) setOut(ctx, 1, DType::F32, {});
  if (ctx.numOutputs() > 2) setOut(ctx, 2, DType::U8, {});
  return Status::ok();
}

}  // namespace

void registerQuantizationOps(OpRegistry& r) {
  r.add(SchemaBuilder("QuantizeLinear").inputs(2, 3, {"x", "y_scale", "y_zero_point"}).outputs(1, 1, {"y"})
            .attr("axis", 1).attr("saturate", 1).pattern(FusionPattern::Elementwise).infer(inferQuantize)
            .doc("saturate(round(x / scale) + zero_point), per tensor or per axis.").build());
  r.add(SchemaBuilder("DequantizeLinear").inputs(2, 3, {"x", "x_scale", "x_zero_point"}).outputs(1, 1, {"y"})
            .attr("axis", 1).pattern(FusionPattern::Elementwise).infer(inferDequantize)
            .doc("(x - zero_point) * scale, per tensor or per axis.").build());
  r.add(SchemaBuilder("DynamicQuantizeLinear").inputs(1, 1, {"x"}).outputs(3, 3, {"y", "y_scale", "y_zero_point"})
            .pattern(FusionPattern::Opaque).infer(inferDynamicQuantize)
            .doc("Quantizes to uint8 with scale and zero point computed from the data's range.").build());
}

}  // namespace kiln::ir
