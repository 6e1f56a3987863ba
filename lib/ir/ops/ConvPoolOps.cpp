//===- lib/ir/ops/ConvPoolOps.cpp - Convolutions and pooling ---------------===//
//
// Conv, ConvTranspose, ConvInteger, QLinearConv, max/average/Lp pooling (local
// and global), MaxUnpool and MaxRoiPool, kiln::ConvNHWC (a 2-D Conv on
// channels-last data with [O, kH, kW, C/group] weights, made by convert-layout)
// and kiln::ConvNCHWc (channel-blocked data and prepacked weights, made by
// alter-op-layout), and kiln::DeformConv (ONNX DeformConv-19, which opset 17
// cannot spell). Window geometry comes from
// ShapeUtils so the interpreter computes the same pads and output sizes.
//
//===----------------------------------------------------------------------===//
#include "InferHelpers.h"
#include "OpFamilies.h"

namespace kiln::ir {
using namespace infer;

namespace {

Dims spatialOf(const TensorType& t) { return Dims(t.dims().begin() + 2, t.dims().end()); }

/// Conv-like inference: X at xIdx [N,C,...], W at wIdx [M,C/group,k...].
Status inferConvLike(InferenceContext& ctx, size_t xIdx, size_t wIdx, size_t biasIdx, DType outType) {
  KILN_ASSIGN(TensorType x, ctx.inputTensor(xIdx));
  KILN_ASSIGN(TensorType w, ctx.inputTensor(wIdx));
  if (!x.hasRank() || !w.hasRank()) {
    setUnranked(ctx, 0, outType);
    return Status::ok();
  }
  if (x.rank() < 3) return shapeError("input must have rank >= 3 (N, C, spatial...), got " + x.str());
  if (w.rank() != x.rank())
    return shapeError("weight " + w.str() + " must have the input's rank " + std::to_string(x.rank()));
  const Node& n = ctx.node();
  int64_t group = n.getInt("group");
  if (group <= 0) return attrError("group must be positive");
  int64_t c = x.dim(1), m = w.dim(0);
  if (c >= 0 && w.dim(1) >= 0 && c != w.dim(1) * group)
    return shapeError("input has " + std::to_string(c) + " channels but weight " + w.str() +
                      " with group " + std::to_string(group) + " expects " + std::to_string(w.dim(1) * group));
  if (m >= 0 && m % group != 0)
    return shapeError("output channels " + std::to_string(m) + " are not divisible by group " + std::to_string(group));
  Dims kernel = spatialOf(w);
  if (const Attribute* ks = n.findAttr("kernel_shape")) {
    if (ks->ints().size() != kernel.size())
      return attrError("kernel_shape has " + std::to_string(ks->ints().size()) + " dims, weight has " +
                       std::to_string(kernel.size()));
    for (size_t i = 0; i < kernel.size(); ++i)
      if (kernel[i] >= 0 && kernel[i] != ks->ints()[i])
        return attrError("kernel_shape does not match the weight shape " + w.str());
    kernel = ks->ints();
  }
  if (ctx.hasInput(biasIdx)) {
    KILN_ASSIGN(TensorType b, ctx.inputTensor(biasIdx));
    if (b.hasRank() && (b.rank() != 1 || (m >= 0 && b.dim(0) >= 0 && b.dim(0) != m)))
      return shapeError("bias must be 1-D with " + std::to_string(m) + " elements, got " + b.str());
  }
  for (int64_t k : kernel)
    if (k < 0) {
      Dims out = {x.dim(0), m};
      out.resize(size_t(x.rank()), kUnknownDim);
      setOut(ctx, 0, outType, out);
      return Status::ok();
    }
  KILN_ASSIGN(WindowGeometry g, computeWindowGeometry(n, spatialOf(x), kernel, false));
  Dims out = {x.dim(0), m};
  out.insert(out.end(), g.output.begin(), g.output.end());
  setOut(ctx, 0, outType, out);
  return Status::ok();
}

Status inferConv(InferenceContext& ctx) {
  KILN_TRY(requireSameDType(ctx, {0, 1, 2}));
  KILN_ASSIGN(TensorType x, ctx.inputTensor(0));
  return inferConvLike(ctx, 0, 1, 2, x.dtype());
}

Status inferConvInteger(InferenceContext& ctx) { return inferConvLike(ctx, 0, 1, 99, DType::I32); }

/// kiln::DeformConv (ONNX DeformConv-19): a 2-D Conv whose taps move by
/// `offset` [N, 2 * offset_group * kH * kW, oH, oW] and are scaled by `mask`.
Status inferDeformConv(InferenceContext& ctx) {
  KILN_TRY(requireSameDType(ctx, {0, 1, 2, 3, 4}));
  KILN_ASSIGN(TensorType x, ctx.inputTensor(0));
  if (x.hasRank() && x.rank() != 4) return shapeError("DeformConv takes 2-D images [N, C, H, W], got " + x.str());
  KILN_TRY(inferConvLike(ctx, 0, 1, 3, x.dtype()));
  int64_t offsetGroup = ctx.node().getInt("offset_group");
  if (offsetGroup < 1 || (x.hasRank() && x.dim(1) >= 0 && x.dim(1) % offsetGroup != 0))
    return attrError("offset_group must be positive and divide the input channels");
  KILN_ASSIGN(TensorType w, ctx.inputTensor(1));
  if (!x.hasRank() || !w.hasRank() || !x.isStatic() || !w.isStatic()) return Status::ok();
  KILN_ASSIGN(WindowGeometry g, computeWindowGeometry(ctx.node(), spatialOf(x), spatialOf(w), false));
  int64_t taps = w.dim(2) * w.dim(3);
  auto check = [&](size_t i, const char* what, int64_t channels) -> Status {
    if (!ctx.hasInput(i)) return Status::ok();
    KILN_ASSIGN(TensorType t, ctx.inputTensor(i));
    Dims want = {x.dim(0), channels, g.output[0], g.output[1]};
    if (t.isStatic() && t.dims() != want)
      return shapeError(std::string(what) + " must be " + TensorType(x.dtype(), want).str() + ", got " + t.str());
    return Status::ok();
  };
  KILN_TRY(check(2, "offset", 2 * offsetGroup * taps));
  KILN_TRY(check(4, "mask", offsetGroup * taps));
  return Status::ok();
}

Status inferQLinearConv(InferenceContext& ctx) {
  KILN_ASSIGN(TensorType yZero, ctx.inputTensor(7));
  return inferConvLike(ctx, 0, 3, 8, yZero.dtype());
}

Status inferConvTranspose(InferenceContext& ctx) {
  KILN_TRY(requireSameDType(ctx, {0, 1, 2}));
  KILN_ASSIGN(TensorType x, ctx.inputTensor(0));
  KILN_ASSIGN(TensorType w, ctx.inputTensor(1));
  if (!x.hasRank() || !w.hasRank()) {
    setUnranked(ctx, 0, x.dtype());
    return Status::ok();
  }
  if (x.rank() < 3 || w.rank() != x.rank())
    return shapeError("ConvTranspose needs input and weight of equal rank >= 3, got " + x.str() + " and " + w.str());
  int64_t group = ctx.node().getInt("group");
  if (group <= 0) return attrError("group must be positive");
  if (x.dim(1) >= 0 && w.dim(0) >= 0 && x.dim(1) != w.dim(0))
    return shapeError("input channels " + std::to_string(x.dim(1)) + " differ from weight dim 0 of " + w.str());
  int64_t m = w.dim(1) < 0 ? kUnknownDim : w.dim(1) * group;
  Dims kernel = spatialOf(w);
  if (const Attribute* ks = ctx.node().findAttr("kernel_shape")) kernel = ks->ints();
  Dims out = {x.dim(0), m};
  KILN_ASSIGN(WindowGeometry g, computeConvTransposeGeometry(ctx.node(), spatialOf(x), kernel));
  out.insert(out.end(), g.output.begin(), g.output.end());
  setOut(ctx, 0, x.dtype(), out);
  return Status::ok();
}

Status inferPool(InferenceContext& ctx) {
  KILN_ASSIGN(TensorType x, ctx.inputTensor(0));
  if (!x.hasRank()) {
    setUnranked(ctx, 0, x.dtype());
    if (ctx.numOutputs() > 1) setUnranked(ctx, 1, DType::I64);
    return Status::ok();
  }
  if (x.rank() < 3) return shapeError("input must have rank >= 3 (N, C, spatial...), got " + x.str());
  const Node& n = ctx.node();
  const Dims& kernel = n.getInts("kernel_shape");
  bool ceil = n.schema().findAttr("ceil_mode") && n.getInt("ceil_mode") != 0;
  KILN_ASSIGN(WindowGeometry g, computeWindowGeometry(n, spatialOf(x), kernel, ceil));
  Dims out = {x.dim(0), x.dim(1)};
  out.insert(out.end(), g.output.begin(), g.output.end());
  setOut(ctx, 0, x.dtype(), out);
  if (ctx.numOutputs() > 1) setOut(ctx, 1, DType::I64, out);
  return Status::ok();
}

Status inferGlobalPool(InferenceContext& ctx) {
  KILN_ASSIGN(TensorType x, ctx.inputTensor(0));
  if (!x.hasRank()) {
    setUnranked(ctx, 0, x.dtype());
    return Status::ok();
  }
  if (x.rank() < 3) return shapeError("input must have rank >= 3 (N, C, spatial...), got " + x.str());
  Dims out = x.dims();
  for (size_t i = 2; i < out.size(); ++i) out[i] = 1;
  setOut(ctx, 0, x.dtype(), out);
  return Status::ok();
}

Status inferMaxUnpool(InferenceContext& ctx) {
  KILN_ASSIGN(TensorType x, ctx.inputTensor(0));
  if (ctx.hasInput(2)) {
    auto shape = knownInts(ctx, 2);
    if (shape) KILN_TRY(checkRank(int64_t(shape->size()), "output_shape"));
    if (shape) setOut(ctx, 0, x.dtype(), *shape);
    else if (x.hasRank()) setOut(ctx, 0, x.dtype(), Dims(size_t(x.rank()), kUnknownDim));
    else setUnranked(ctx, 0, x.dtype());
    return Status::ok();
  }
  if (!x.hasRank()) {
    setUnranked(ctx, 0, x.dtype());
    return Status::ok();
  }
  const Node& n = ctx.node();
  const Dims& kernel = n.getInts("kernel_shape");
  size_t s = size_t(x.rank()) - 2;
  if (kernel.size() != s) return attrError("kernel_shape rank does not match the input");
  Dims strides = n.hasAttr("strides") ? n.getInts("strides") : Dims(s, 1);
  Dims pads = n.hasAttr("pads") ? n.getInts("pads") : Dims(2 * s, 0);
  if (strides.size() != s || pads.size() != 2 * s) return attrError("strides/pads rank does not match the input");
  Dims out = {x.dim(0), x.dim(1)};
  for (size_t i = 0; i < s; ++i)
    out.push_back(x.dim(int64_t(i) + 2) < 0 ? kUnknownDim
                                            : (x.dim(int64_t(i) + 2) - 1) * strides[i] + kernel[i] - pads[i] - pads[i + s]);
  setOut(ctx, 0, x.dtype(), out);
  return Status::ok();
}

Status inferMaxRoiPool(InferenceContext& ctx) {
  KILN_ASSIGN(TensorType x, ctx.inputTensor(0));
  KILN_ASSIGN(TensorType rois, ctx.inputTensor(1));
  KILN_TRY(requireRank(x, 4, "X"));
  KILN_TRY(requireRank(rois, 2, "rois"));
  const Dims& pooled = ctx.node().getInts("pooled_shape");
  if (pooled.size() != 2) return attrError("pooled_shape must have 2 values");
  setOut(ctx, 0, x.dtype(), {rois.hasRank() ? rois.dim(0) : kUnknownDim, x.hasRank() ? x.dim(1) : kUnknownDim,
                              pooled[0], pooled[1]});
  return Status::ok();
}

/// kiln::ConvNHWC: X [N, H, W, C], W [O, kH, kW, C/group], B [O] -> [N, OH, OW, O].
Status inferConvNhwc(InferenceContext& ctx) {
  KILN_TRY(requireSameDType(ctx, {0, 1, 2}));
  KILN_ASSIGN(TensorType x, ctx.inputTensor(0));
  KILN_ASSIGN(TensorType w, ctx.inputTensor(1));
  if (!x.isStatic() || !w.isStatic() || x.rank() != 4 || w.rank() != 4)
    return shapeError("needs static rank-4 input and weight, got " + x.str() + " and " + w.str());
  int64_t group = ctx.node().getInt("group");
  if (group <= 0 || x.dim(3) != w.dim(3) * group || w.dim(0) % group != 0)
    return shapeError("input " + x.str() + " and weight " + w.str() + " do not match with group " + std::to_string(group));
  KILN_ASSIGN(WindowGeometry g, computeWindowGeometry(ctx.node(), {x.dim(1), x.dim(2)}, {w.dim(1), w.dim(2)}, false));
  setOut(ctx, 0, x.dtype(), {x.dim(0), g.output[0], g.output[1], w.dim(0)});
  return Status::ok();
}

/// kiln::ConvNCHWc: X [N, C/c, H, W, c], W [O/o, C/c, kH, kW, c, o], B [O]
/// -> [N, O/o, OH, OW, o] (group 1; N, H and W may be unknown); depthwise (group C): W [C/c, 1, kH, kW, 1, c]
/// -> [N, C/c, OH, OW, c]; groups of g channels to g, g dividing c:
/// W [C/c, 1, kH, kW, c, c] (block-diagonal) -> [N, C/c, OH, OW, c].
Status inferConvNchwc(InferenceContext& ctx) {
  KILN_TRY(requireSameDType(ctx, {0, 1, 2}));
  KILN_ASSIGN(TensorType x, ctx.inputTensor(0));
  KILN_ASSIGN(TensorType w, ctx.inputTensor(1));
  // The batch and image dims may be unknown (dynamic); the blocks and lanes must be known.
  if (!w.isStatic() || !x.hasRank() || x.rank() != 5 || w.rank() != 6 || x.dim(1) < 0 || x.dim(4) < 0)
    return shapeError("needs a rank-5 input with known blocks and lanes and a static rank-6 weight, got " + x.str() +
                      " and " + w.str());
  const int64_t group = ctx.node().getInt("group");
  const int64_t channels = x.dim(1) * x.dim(4);
  const bool sameBlocks = w.dim(0) == x.dim(1) && w.dim(1) == 1 && w.dim(5) == x.dim(4);
  const bool matches =
      group == 1 ? x.dim(1) == w.dim(1) && x.dim(4) == w.dim(4)
                 : sameBlocks && group > 0 && channels % group == 0 &&
                       ((group == channels && w.dim(4) == 1) || (w.dim(4) == x.dim(4) && x.dim(4) % (channels / group) == 0));
  if (!matches)
    return shapeError("input " + x.str() + " and weight " + w.str() + " do not match (group must be 1, the " +
                      "channel count with weights [C/c, 1, kH, kW, 1, c], or a count whose groups fit in a block " +
                      "with weights [C/c, 1, kH, kW, c, c])");
  if (ctx.hasInput(2)) {
    KILN_ASSIGN(TensorType b, ctx.inputTensor(2));
    const int64_t outputs = w.dim(0) * w.dim(5);
    if (!b.hasRank() || b.rank() != 1 || b.dim(0) != outputs)
      return shapeError("bias must be 1-D with " + std::to_string(outputs) + " elements, got " + b.str());
  }
  KILN_ASSIGN(WindowGeometry g, computeWindowGeometry(ctx.node(), {x.dim(2), x.dim(3)}, {w.dim(2), w.dim(3)}, false));
  setOut(ctx, 0, x.dtype(), {x.dim(0), w.dim(0), g.output[0], g.output[1], w.dim(5)});
  return Status::ok();
}

SchemaBuilder windowAttrs(SchemaBuilder b) {
  return std::move(b.attr("auto_pad", "NOTSET").optionalAttr("pads", AttrKind::Ints)
                       .optionalAttr("strides", AttrKind::Ints));
}

}  // namespace

void registerConvPoolOps(OpRegistry& r) {
  r.add(windowAttrs(SchemaBuilder("ConvNCHWc", "kiln")).optionalAttr("kernel_shape", AttrKind::Ints)
            .inputs(2, 3, {"X", "W", "B"}).outputs(1, 1, {"Y"}).optionalAttr("dilations", AttrKind::Ints).attr("group", 1)
            .pattern(FusionPattern::OutEWiseFusable).infer(inferConvNchwc)
            .doc("2-D convolution on channel-blocked data: X [N,C/c,H,W,c], W [O/o,C/c,kH,kW,c,o], depthwise (group C) "
                 "W [C/c,1,kH,kW,1,c], or groups within a block W [C/c,1,kH,kW,c,c] (alter-op-layout).")
            .build());
  r.add(windowAttrs(SchemaBuilder("ConvNHWC", "kiln")).optionalAttr("kernel_shape", AttrKind::Ints)
            .inputs(2, 3, {"X", "W", "B"}).outputs(1, 1, {"Y"}).optionalAttr("dilations", AttrKind::Ints).attr("group", 1)
            .pattern(FusionPattern::OutEWiseFusable).infer(inferConvNhwc)
            .doc("2-D convolution on channels-last data: X [N,H,W,C], W [O,kH,kW,C/group] (convert-layout).").build());
  r.add(windowAttrs(SchemaBuilder("Conv")).optionalAttr("kernel_shape", AttrKind::Ints).inputs(2, 3, {"X", "W", "B"}).outputs(1, 1, {"Y"})
            .optionalAttr("dilations", AttrKind::Ints).attr("group", 1)
            .pattern(FusionPattern::OutEWiseFusable).infer(inferConv)
            .doc("N-D convolution (cross-correlation) with groups, dilation and padding.").build());
  r.add(windowAttrs(SchemaBuilder("ConvTranspose")).optionalAttr("kernel_shape", AttrKind::Ints).inputs(2, 3, {"X", "W", "B"}).outputs(1, 1, {"Y"})
            .optionalAttr("dilations", AttrKind::Ints).attr("group", 1)
            .optionalAttr("output_padding", AttrKind::Ints).optionalAttr("output_shape", AttrKind::Ints)
            .pattern(FusionPattern::OutEWiseFusable).infer(inferConvTranspose)
            .doc("Transposed convolution (gradient of Conv with respect to its input).").build());
  r.add(windowAttrs(SchemaBuilder("DeformConv", "kiln")).optionalAttr("kernel_shape", AttrKind::Ints)
            .inputs(3, 5, {"X", "W", "offset", "B", "mask"}).outputs(1, 1, {"Y"})
            .optionalAttr("dilations", AttrKind::Ints).attr("group", 1).attr("offset_group", 1)
            .pattern(FusionPattern::Opaque).infer(inferDeformConv)
            .doc("2-D deformable convolution: each tap samples X bilinearly at its position plus offset, times mask "
                 "(ONNX DeformConv-19).").build());
  r.add(windowAttrs(SchemaBuilder("ConvInteger")).optionalAttr("kernel_shape", AttrKind::Ints).inputs(2, 4, {"x", "w", "x_zero_point", "w_zero_point"})
            .outputs(1, 1, {"y"}).optionalAttr("dilations", AttrKind::Ints).attr("group", 1)
            .pattern(FusionPattern::OutEWiseFusable).infer(inferConvInteger)
            .doc("Integer convolution with zero points, accumulating in int32.").build());
  r.add(windowAttrs(SchemaBuilder("QLinearConv")).optionalAttr("kernel_shape", AttrKind::Ints)
            .inputs(8, 9, {"x", "x_scale", "x_zero_point", "w", "w_scale", "w_zero_point", "y_scale",
                           "y_zero_point", "B"})
            .outputs(1, 1, {"y"}).optionalAttr("dilations", AttrKind::Ints).attr("group", 1)
            .pattern(FusionPattern::OutEWiseFusable).infer(inferQLinearConv)
            .doc("Quantized convolution: dequantize, convolve, add int32 bias, requantize.").build());
  r.add(windowAttrs(SchemaBuilder("MaxPool")).requiredAttr("kernel_shape", AttrKind::Ints).inputs(1, 1, {"X"}).outputs(1, 2, {"Y", "Indices"})
            .attr("ceil_mode", 0).optionalAttr("dilations", AttrKind::Ints).attr("storage_order", 0)
            .pattern(FusionPattern::OutEWiseFusable).infer(inferPool)
            .doc("Max over sliding windows; optional flat indices of the maxima.").build());
  r.add(windowAttrs(SchemaBuilder("AveragePool")).requiredAttr("kernel_shape", AttrKind::Ints).inputs(1, 1, {"X"}).outputs(1, 1, {"Y"})
            .attr("ceil_mode", 0).attr("count_include_pad", 0)
            .pattern(FusionPattern::OutEWiseFusable).infer(inferPool)
            .doc("Mean over sliding windows (padding counted only with count_include_pad).").build());
  r.add(windowAttrs(SchemaBuilder("LpPool")).requiredAttr("kernel_shape", AttrKind::Ints).inputs(1, 1, {"X"}).outputs(1, 1, {"Y"}).attr("p", 2)
            .pattern(FusionPattern::OutEWiseFusable).infer(inferPool)
            .doc("Lp norm over sliding windows.").build());
  r.add(SchemaBuilder("GlobalAveragePool").inputs(1, 1, {"X"}).outputs(1, 1, {"Y"})
            .pattern(FusionPattern::CommReduce).infer(inferGlobalPool)
            .doc("Mean over all spatial dims (keeps them as 1).").build());
  r.add(SchemaBuilder("GlobalMaxPool").inputs(1, 1, {"X"}).outputs(1, 1, {"Y"})
            .pattern(FusionPattern::CommReduce).infer(inferGlobalPool)
            .doc("Maximum over all spatial dims (keeps them as 1).").build());
  r.add(SchemaBuilder("GlobalLpPool").inputs(1, 1, {"X"}).outputs(1, 1, {"Y"}).attr("p", 2)
            .pattern(FusionPattern::CommReduce).infer(inferGlobalPool)
            .doc("Lp norm over all spatial dims (keeps them as 1).").build());
  r.add(SchemaBuilder("MaxUnpool").inputs(2, 3, {"X", "I", "output_shape"}).outputs(1, 1, {"output"})
            .requiredAttr("kernel_shape", AttrKind::Ints).optionalAttr("pads", AttrKind::Ints)
            .optionalAttr("strides", AttrKind::Ints).pattern(FusionPattern::Opaque).infer(inferMaxUnpool)
            .doc("Scatters pooled values back to the positions recorded by MaxPool.").build());
  r.add(SchemaBuilder("MaxRoiPool").inputs(2, 2, {"X", "rois"}).outputs(1, 1, {"Y"})
            .requiredAttr("pooled_shape", AttrKind::Ints).attr("spatial_scale", 1.0f)
            .pattern(FusionPattern::Opaque).infer(inferMaxRoiPool)
            .doc("Max pooling over regions of interest to a fixed size.").build());
}

}  // namespace kiln::ir
