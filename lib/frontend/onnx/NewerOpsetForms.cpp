//===- lib/frontend/onnx/NewerOpsetForms.cpp - Op forms of opset 18 on -----===//
//
// The table of op versions from opset 18 to 26 (ONNX's operator_sets.h and
// release notes: 18 with ONNX 1.13, ... 26 with 1.21) and the rewrites that
// bring them into their opset-17 form:
//   Reduce*-18/20: the axes input becomes the attribute, or ReduceSum-13's
//     axes input when computed at run time (noop_with_empty_axes with no
//     axes reduces each element alone: |x|, log x, x^2 or x);
//   Pad-18+: the axes input becomes full pads;
//   Split-18: num_outputs becomes equal or ceil-sized parts; Resize-18/19:
//     axes widen scales/sizes/roi to every dim, keep_aspect_ratio_policy
//     becomes scales (on an edge-padded input where a length rounds up),
//     antialias becomes MatMuls (AntialiasResize.cpp);
//   DFT-20: the axis input becomes the attribute; GridSample-20: linear/cubic
//     are bilinear/bicubic;
//   Cast/Quantize/Dequantize-19+, AveragePool-19, LpPool-18: new attributes at
//     their defaults are dropped, other values are refused (AveragePool's
//     dilations and Col2Im become convolutions, WindowOpExpansions.cpp);
//     Bitwise*-18, DeformConv-19, TensorScatter-24, BitCast-26 and CumProd-26,
//     which opset 17 cannot spell, become the kiln domain's ops.
//
//===----------------------------------------------------------------------===//
#include "NewerOpsetForms.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "kiln/ir/ResizeTaps.h"

namespace kiln::onnx {
Error refuseForm(const NodeDraft& d, const std::string& what) {
  return Error(ErrorCode::OnnxUnsupportedOp, d.opType + ": " + what + " is not supported by kiln");
}

Expected<int64_t> boundedProduct(const std::vector<int64_t>& factors, int64_t cap, const std::string& what) {
  int64_t p = 1;
  for (int64_t f : factors) {
    if (f < 1 || f > cap / p) return Error(ErrorCode::ShapeMismatch, what + " must be positive and at most " + std::to_string(cap));
    p *= f;
  }
  return p;
}

Expected<std::vector<int64_t>> intsOr(const NodeDraft& d, const char* name, size_t n, int64_t dflt) {
  KILN_ASSIGN(const ir::Attribute* a, d.attrAs(name, ir::AttrKind::Ints));
  return a ? a->ints() : std::vector<int64_t>(n, dflt);
}

namespace {

/// Drops an int attribute that must hold `expected` (refused otherwise).
Status dropIntAt(NodeDraft& d, const char* name, int64_t expected) {
  KILN_ASSIGN(auto a, d.takeAs(name, ir::AttrKind::Int));
  if (a && a->i() != expected) return refuseForm(d, std::string(name) + "=" + std::to_string(a->i()));
  return Status::ok();
}

/// Drops an ints attribute whose entries must all be 1 (dilations).
Status dropUnitInts(NodeDraft& d, const char* name) {
  KILN_ASSIGN(auto a, d.takeAs(name, ir::AttrKind::Ints));
  if (a && std::any_of(a->ints().begin(), a->ints().end(), [](int64_t v) { return v != 1; }))
    return refuseForm(d, std::string(name) + " other than 1");
  return Status::ok();
}

/// Reduce*-18 whose axes are computed at run time: the reductions that are
/// sums become ReduceSum-13, which takes its axes as an input (the mean
/// divides by Size(x) / Size(sum)); max, min and product, which opset 17
/// cannot spell so, become the kiln domain's ops of the same name.
Status reduceAxesAtRunTime(NodeDraft& d, DraftBuilder& b) {
  const std::string op = d.opType;
  if (op == "ReduceMax" || op == "ReduceMin" || op == "ReduceProd") {
    d.domain = "kiln";
    return Status::ok();
  }
  KILN_ASSIGN(DType dt, inputDType(d, 0));
  ir::Value *x = d.inputs[0], *summand = x;
  if (op == "ReduceSumSquare" || op == "ReduceL2") {
    KILN_ASSIGN(summand, b.node("Mul", {x, x}, {}));
  } else if (op == "ReduceL1") {
    KILN_ASSIGN(summand, b.node("Abs", {x}, {}));
  } else if (op == "ReduceLogSumExp") {
    KILN_ASSIGN(summand, b.node("Exp", {x}, {}));
  }
  d.opType = "ReduceSum";
  d.inputs = {summand, d.inputs[1]};
  if (op == "ReduceSum" || op == "ReduceSumSquare" || op == "ReduceL1") return Status::ok();
  KILN_ASSIGN(ir::Value* sum, b.node("ReduceSum", d.inputs, d.attrs));
  d.attrs.clear();
  if (op == "ReduceL2" || op == "ReduceLogSum" || op == "ReduceLogSumExp") {
    d.opType = op == "ReduceL2" ? "Sqrt" : "Log";
    d.inputs = {sum};
    return Status::ok();
  }
  // ReduceMean: the sum over Size(x) / Size(sum) elements (at least 1).
  KILN_ASSIGN(ir::Value* total, b.node("Size", {x}, {}));
  KILN_ASSIGN(ir::Value* kept, b.node("Size", {sum}, {}));
  KILN_ASSIGN(ir::Value* one, b.constant(scalarOf(DType::I64, 1)));
  KILN_ASSIGN(ir::Value* keptAtLeast1, b.node("Max", {kept, one}, {}));
  KILN_ASSIGN(ir::Value* count, b.node("Div", {total, keptAtLeast1}, {}));
  KILN_ASSIGN(ir::Value* countAs, castIfNeeded(b, count, DType::I64, dt));
  d.opType = "Div";
  d.inputs = {sum, countAs};
  return Status::ok();
}

/// Reduce*-18 (and ReduceMax/ReduceMin-20): axes is an input.
Status reduceAxesInput(NodeDraft& d, DraftBuilder& b) {
  if (hasInput(d, 1) && !b.knownValue(d.inputs[1])) return reduceAxesAtRunTime(d, b);
  KILN_ASSIGN(auto noop, d.takeAs("noop_with_empty_axes", ir::AttrKind::Int));
  std::vector<int64_t> axes;
  if (hasInput(d, 1)) {
    KILN_ASSIGN(axes, knownInputInts(d, 1, b, "axes"));
  }
  d.inputs.resize(1);
  if (axes.empty() && noop && noop->i() != 0) {
    // Nothing is reduced: each element is its own group.
    d.attrs.clear();
    if (d.opType == "ReduceL1" || d.opType == "ReduceL2") d.opType = "Abs";
    else if (d.opType == "ReduceLogSum") d.opType = "Log";
    else if (d.opType == "ReduceSumSquare") d.opType = "Mul", d.inputs.push_back(d.inputs[0]);
    else d.opType = "Identity";
  } else if (!axes.empty()) {
    d.set("axes", axes);
  }
  return Status::ok();
}

/// Pad-18 on: pads of the listed axes only.
Status padAxesInput(NodeDraft& d, DraftBuilder& b) {
  if (!hasInput(d, 3)) {
    d.inputs.resize(std::min<size_t>(d.inputs.size(), 3));
    return Status::ok();
  }
  KILN_ASSIGN(int64_t rank, inputRank(d, 0));
  KILN_ASSIGN(std::vector<int64_t> given, knownInputInts(d, 3, b, "axes"));
  KILN_ASSIGN(std::vector<int64_t> axes, normalizedAxes(given, rank));
  KILN_ASSIGN(std::vector<int64_t> pads, knownInputInts(d, 1, b, "pads"));
  if (pads.size() != 2 * axes.size())
    return Error(ErrorCode::ShapeMismatch, "pads has " + std::to_string(pads.size()) + " values for " +
                                               std::to_string(axes.size()) + " axes (2 per axis)");
  std::vector<int64_t> full(size_t(2 * rank), 0);
  for (size_t k = 0; k < axes.size(); ++k) {
    full[size_t(axes[k])] = pads[k];
    full[size_t(axes[k] + rank)] = pads[k + axes.size()];
  }
  KILN_ASSIGN(d.inputs[1], b.constant(Tensor::fromVector<int64_t>({2 * rank}, full)));
  d.inputs.resize(3);
  while (!d.inputs.empty() && !d.inputs.back()) d.inputs.pop_back();
  return Status::ok();
}

/// Split-18: num_outputs parts of ceil(dim / num_outputs), the last smaller.
Status splitNumOutputs(NodeDraft& d, DraftBuilder& b) {
  KILN_ASSIGN(auto num, d.takeAs("num_outputs", ir::AttrKind::Int));
  if (!num) return Status::ok();
  if (hasInput(d, 1)) return Error(ErrorCode::BadAttribute, "Split has both the split input and num_outputs");
  int64_t n = num->i();
  if (n < 1 || size_t(n) != d.outputs.size())
    return Error(ErrorCode::BadAttribute, "num_outputs is " + std::to_string(n) + " but the node has " +
                                              std::to_string(d.outputs.size()) + " outputs");
  const ir::Value* x = d.inputs.empty() ? nullptr : d.inputs[0];
  if (!x || !x->type().isTensor() || !x->type().tensor().hasRank()) return Status::ok();
  const ir::TensorType& t = x->type().tensor();
  int64_t axis = 0;
  KILN_ASSIGN(const ir::Attribute* axisAttr, d.attrAs("axis", ir::AttrKind::Int));
  if (axisAttr) axis = axisAttr->i();
  KILN_ASSIGN(std::vector<int64_t> axes, normalizedAxes({axis}, t.rank()));
  int64_t dim = t.dim(axes[0]);
  if (dim < 0 || dim % n == 0) return Status::ok();  // equal parts: the opset-17 default
  int64_t chunk = (dim + n - 1) / n;
  if (chunk * (n - 1) >= dim)
    return Error(ErrorCode::ShapeMismatch, "axis of " + std::to_string(dim) + " cannot be split into " +
                                               std::to_string(n) + " non-empty parts of " + std::to_string(chunk));
  std::vector<int64_t> sizes(size_t(n), chunk);
  sizes.back() = dim - chunk * (n - 1);
  growInputs(d, 2);
  KILN_ASSIGN(d.inputs[1], b.constant(Tensor::fromVector<int64_t>({n}, sizes)));
  return Status::ok();
}

/// Resize-18/19 with axes: roi, scales and sizes widened to every dim.
Status widenResizeInputs(NodeDraft& d, DraftBuilder& b, const std::vector<int64_t>& axes, int64_t rank) {
  if (hasInput(d, 1)) {  // roi: starts then ends of the listed axes
    KILN_ASSIGN(DType dt, inputDType(d, 1));
    const Tensor* roi = b.knownValue(d.inputs[1]);
    if (!roi) return refuseForm(d, "a roi computed at run time with axes");
    std::vector<double> given = roi->toDoubles(), full(size_t(2 * rank), 0.0);
    if (given.size() == 2 * axes.size()) {
      for (int64_t i = 0; i < rank; ++i) full[size_t(i + rank)] = 1.0;
      for (size_t k = 0; k < axes.size(); ++k) {
        full[size_t(axes[k])] = given[k];
        full[size_t(axes[k] + rank)] = given[k + axes.size()];
      }
      KILN_ASSIGN(d.inputs[1], b.constant(Tensor::fromVector<double>({2 * rank}, full).castTo(dt)));
    }
  }
  if (hasInput(d, 2)) {
    const Tensor* scales = b.knownValue(d.inputs[2]);
    if (!scales || scales->numElements() != int64_t(axes.size())) return refuseForm(d, "scales not known at import with axes");
    std::vector<double> given = scales->toDoubles(), full(size_t(rank), 1.0);
    for (size_t k = 0; k < axes.size(); ++k) full[size_t(axes[k])] = given[k];
    KILN_ASSIGN(d.inputs[2], b.constant(Tensor::fromVector<double>({rank}, full).castTo(DType::F32)));
  }
  if (hasInput(d, 3)) {
    KILN_ASSIGN(std::vector<int64_t> given, knownInputInts(d, 3, b, "sizes"));
    KILN_ASSIGN(Dims full, staticInputDims(d, 0, "to resize some axes by sizes"));
    if (given.size() != axes.size()) return Error(ErrorCode::ShapeMismatch, "sizes and axes differ in length");
    for (size_t k = 0; k < axes.size(); ++k) full[size_t(axes[k])] = given[k];
    KILN_ASSIGN(d.inputs[3], b.constant(Tensor::fromVector<int64_t>({rank}, full)));
  }
  return Status::ok();
}

/// A Resize by `scales` whose output along some axes must be longer than
/// floor(dim * scale): the input is edge-padded at the end of those axes by
/// `extra`, resized, and sliced to `lengths`. Sampling positions do not depend
/// on the input's length in the modes allowed here, and edge padding reads
/// what clamping to the last element reads.
Status edgePaddedResize(NodeDraft& d, DraftBuilder& b, const std::vector<float>& scales,
                        const std::vector<int64_t>& extra, const Dims& lengths) {
  KILN_ASSIGN(const ir::Attribute* ct, d.attrAs("coordinate_transformation_mode", ir::AttrKind::String));
  const std::string mode = ct ? ct->s() : "half_pixel";
  KILN_ASSIGN(int64_t excludeOutside, d.takeInt("exclude_outside", 0));
  // pytorch_half_pixel samples a length-1 output at 0, which the padded resize's longer output does not.
  bool paddedToOne = false;
  for (size_t a = 0; a < extra.size(); ++a) paddedToOne = paddedToOne || (extra[a] > 0 && lengths[a] == 1);
  const bool lengthFree = mode == "half_pixel" || mode == "asymmetric" || mode == "tf_half_pixel_for_nn" ||
                          (mode == "pytorch_half_pixel" && !paddedToOne);
  if (!lengthFree || excludeOutside)
    return refuseForm(d, "keep_aspect_ratio_policy with coordinate_transformation_mode '" + mode +
                             (excludeOutside ? "' and exclude_outside=1" : "'") + " where an output length rounds up");
  const int64_t rank = int64_t(scales.size());
  std::vector<int64_t> pads(size_t(2 * rank), 0), starts(size_t(rank), 0);
  std::copy(extra.begin(), extra.end(), pads.begin() + rank);
  KILN_ASSIGN(ir::Value* padAmounts, int64Constant(b, pads));
  KILN_ASSIGN(ir::Value* padded, b.node("Pad", {d.inputs[0], padAmounts}, {{"mode", ir::Attribute(std::string("edge"))}}));
  KILN_ASSIGN(ir::Value* scaleValue, b.constant(Tensor::fromVector<float>({rank}, scales)));
  KILN_ASSIGN(ir::Value* resized, b.node("Resize", {padded, nullptr, scaleValue}, d.attrs));
  KILN_ASSIGN(ir::Value* begin, int64Constant(b, starts));
  KILN_ASSIGN(ir::Value* end, int64Constant(b, std::vector<int64_t>(lengths.begin(), lengths.end())));
  becomeNode(d, "Slice", {resized, begin, end}, {});
  return Status::ok();
}

/// keep_aspect_ratio_policy not_larger / not_smaller with full-rank sizes: one
/// scale, the smallest or largest sizes[i] / dim[i] over `axes`, and output
/// lengths round(scale * dim[i]) there. align_corners samples by the lengths
/// alone, so it becomes opset 17's sizes form. Elsewhere the common scale
/// samples (as in ONNX Runtime): opset 17's scales form, whose lengths are
/// floored, and an edge-padded resize where a length rounds up.
Status keepAspectRatio(NodeDraft& d, DraftBuilder& b, const std::string& policy, const std::vector<int64_t>& axes) {
  if (policy != "not_larger" && policy != "not_smaller") return refuseForm(d, "keep_aspect_ratio_policy '" + policy + "'");
  KILN_ASSIGN(std::vector<int64_t> sizes, knownInputInts(d, 3, b, "sizes"));
  KILN_ASSIGN(Dims dims, staticInputDims(d, 0, "to keep the aspect ratio"));
  if (sizes.size() != dims.size()) return Error(ErrorCode::ShapeMismatch, "sizes must have one value per input dim");
  if (std::any_of(sizes.begin(), sizes.end(), [](int64_t v) { return v < 0; }))
    return Error(ErrorCode::ShapeMismatch, "sizes must not be negative");
  if (axes.empty()) return Error(ErrorCode::BadAttribute, "keep_aspect_ratio_policy needs at least one axis");
  float scale = policy == "not_larger" ? INFINITY : 0.0f;
  for (int64_t a : axes) {
    if (dims[size_t(a)] < 1) return refuseForm(d, "keep_aspect_ratio_policy on an empty dim");
    float r = float(sizes[size_t(a)]) / float(dims[size_t(a)]);
    scale = policy == "not_larger" ? std::min(scale, r) : std::max(scale, r);
  }
  std::vector<float> scales(dims.size(), 1.0f);
  std::vector<int64_t> extra(dims.size(), 0);
  Dims lengths = dims;
  for (int64_t a : axes) {
    const int64_t dim = dims[size_t(a)];
    lengths[size_t(a)] = int64_t(std::floor(double(dim) * double(scale) + 0.5));
    // The smallest f32 scale whose floored length is the target; its sampling
    // positions differ from the common scale's by at most 1e-5 of a step.
    float s = scale;
    while (ir::resizedLength(dim, double(s)) < lengths[size_t(a)] && double(s - scale) <= 1e-5 * double(scale))
      s = std::nextafter(s, INFINITY);
    if (ir::resizedLength(dim, double(s)) < lengths[size_t(a)]) {
      s = scale;
      while (ir::resizedLength(dim + extra[size_t(a)], double(s)) < lengths[size_t(a)]) ++extra[size_t(a)];
    }
    scales[size_t(a)] = s;
  }
  KILN_ASSIGN(const ir::Attribute* ct, d.attrAs("coordinate_transformation_mode", ir::AttrKind::String));
  if (ct && ct->s() == "align_corners") {
    KILN_ASSIGN(d.inputs[3], int64Constant(b, std::vector<int64_t>(lengths.begin(), lengths.end())));
    d.inputs[2] = nullptr;
    return Status::ok();
  }
  if (std::any_of(extra.begin(), extra.end(), [](int64_t e) { return e > 0; }))
    return edgePaddedResize(d, b, scales, extra, lengths);
  KILN_ASSIGN(d.inputs[2], b.constant(Tensor::fromVector<float>({int64_t(dims.size())}, scales)));
  d.inputs.resize(3);
  return Status::ok();
}

/// Resize-18/19: antialias, axes and keep_aspect_ratio_policy.
Status resizeAxes(NodeDraft& d, DraftBuilder& b) {
  KILN_ASSIGN(int64_t antialias, d.takeInt("antialias", 0));
  KILN_ASSIGN(auto policy, d.takeAs("keep_aspect_ratio_policy", ir::AttrKind::String));
  KILN_ASSIGN(auto axesAttr, d.takeAs("axes", ir::AttrKind::Ints));
  KILN_ASSIGN(const ir::Attribute* mode, d.attrAs("mode", ir::AttrKind::String));
  bool keepAspect = policy && policy->s() != "stretch" && hasInput(d, 3);
  bool filtered = antialias != 0 && mode && mode->s() != "nearest";  // antialias leaves nearest alone
  if (!axesAttr && !keepAspect && !filtered) return Status::ok();
  KILN_ASSIGN(int64_t rank, inputRank(d, 0));
  std::vector<int64_t> axes(static_cast<size_t>(rank));
  for (int64_t i = 0; i < rank; ++i) axes[size_t(i)] = i;
  if (axesAttr) {
    KILN_ASSIGN(axes, normalizedAxes(axesAttr->ints(), rank));
    KILN_TRY(widenResizeInputs(d, b, axes, rank));
  }
  if (keepAspect) KILN_TRY(keepAspectRatio(d, b, policy->s(), axes));
  if (filtered && d.opType != "Resize")
    return refuseForm(d, "antialias=1 with keep_aspect_ratio_policy where an output length rounds up");
  return filtered ? expandAntialiasedResize(d, b) : Status::ok();
}

/// An op with no opset-17 spelling (BitwiseAnd-18, DeformConv-19, ...): the kiln
/// domain's op of the same name and semantics, which export writes as such.
Status intoKilnDomain(NodeDraft& d, DraftBuilder&) {
  d.domain = "kiln";
  return Status::ok();
}

/// DFT-20: (input, dft_length, axis) with axis an input defaulting to -2.
Status dftAxisInput(NodeDraft& d, DraftBuilder& b) {
  int64_t axis = -2;
  if (hasInput(d, 2)) {
    KILN_ASSIGN(std::vector<int64_t> given, knownInputInts(d, 2, b, "axis"));
    if (given.size() != 1) return Error(ErrorCode::ShapeMismatch, "axis must hold one value");
    axis = given[0];
  }
  KILN_ASSIGN(int64_t rank, inputRank(d, 0));
  // Counted from the back over every dim (the last one holds the complex parts).
  if (axis < 0) axis += rank;
  d.set("axis", axis);
  d.inputs.resize(std::min<size_t>(d.inputs.size(), 2));
  while (!d.inputs.empty() && !d.inputs.back()) d.inputs.pop_back();
  return Status::ok();
}

Status gridSampleModes(NodeDraft& d, DraftBuilder&) {
  KILN_ASSIGN(int64_t rank, inputRank(d, 0));
  if (rank != 4 && rank != 5)
    return refuseForm(d, "sampling a rank-" + std::to_string(rank) + " input (only 2-D images and 3-D volumes)");
  KILN_ASSIGN(auto mode, d.takeAs("mode", ir::AttrKind::String));
  std::string m = mode ? mode->s() : "linear";
  d.set("mode", m == "linear" ? std::string("bilinear") : m == "cubic" ? std::string("bicubic") : m);
  return Status::ok();
}

/// Cast and CastLike from opset 19 on: saturate matters only for float8
/// results and round_mode only for FLOAT8E8M0 ones; a cast to a narrow type
/// becomes kiln::NarrowCast onto its carrier.
Status castSaturate(NodeDraft& d, DraftBuilder& b) {
  KILN_ASSIGN(int64_t saturate, d.takeInt("saturate", 1));
  KILN_ASSIGN(auto roundMode, d.takeAs("round_mode", ir::AttrKind::String));
  const std::string modeName = roundMode ? roundMode->s() : "up";
  std::optional<ScaleRounding> rounding = scaleRoundingFromName(modeName);
  if (!rounding) return Error(ErrorCode::BadAttribute, "round_mode '" + modeName + "' is not up, down or nearest");
  std::optional<NarrowType> to;
  if (d.opType == "CastLike") {
    if (hasInput(d, 1)) to = b.narrowType(d.inputs[1]);
  } else {
    KILN_ASSIGN(const ir::Attribute* target, d.attrAs("to", ir::AttrKind::Int));
    if (target) to = narrowTypeFromOnnx(int(target->i()));
  }
  if (!to) return Status::ok();
  KILN_TRY(requireInputs(d, 1));
  becomeNarrowCast(d, d.inputs[0], *to, saturate != 0);
  if (*to == NarrowType::F8E8M0) d.set("round_mode", int64_t(*rounding));
  return Status::ok();
}

Status averagePoolDilations(NodeDraft& d, DraftBuilder& b) {
  KILN_ASSIGN(const ir::Attribute* dil, d.attrAs("dilations", ir::AttrKind::Ints));
  if (dil && std::any_of(dil->ints().begin(), dil->ints().end(), [](int64_t v) { return v != 1; }))
    return expandDilatedAveragePool(d, b);
  return dropUnitInts(d, "dilations");
}

/// LpPool's ceil_mode=1 as zero padding at the end of each spatial axis: the
/// padded zeros add nothing to the sum of |x|^p, and the extra padding makes
/// the floor-mode output as long as the ceil-mode one (whose last window
/// starts inside the input or its begin padding).
Status lpPoolCeilAsPadding(NodeDraft& d) {
  KILN_ASSIGN(Dims dims, staticInputDims(d, 0, "for LpPool ceil_mode=1"));
  KILN_ASSIGN(const ir::Attribute* autoPad, d.attrAs("auto_pad", ir::AttrKind::String));
  if (autoPad && autoPad->s() != "NOTSET") return refuseForm(d, "ceil_mode=1 with auto_pad");
  KILN_ASSIGN(const ir::Attribute* kernel, d.attrAs("kernel_shape", ir::AttrKind::Ints));
  size_t spatial = dims.size() - 2;
  if (!kernel || kernel->ints().size() != spatial)
    return Error(ErrorCode::BadAttribute, "kernel_shape must have one entry per spatial axis");
  KILN_ASSIGN(std::vector<int64_t> strides, intsOr(d, "strides", spatial, 1));
  KILN_ASSIGN(std::vector<int64_t> pads, intsOr(d, "pads", 2 * spatial, 0));
  if (strides.size() != spatial || pads.size() != 2 * spatial)
    return Error(ErrorCode::BadAttribute, "strides and pads must match the spatial rank");
  for (size_t a = 0; a < spatial; ++a) {
    if (strides[a] < 1) return Error(ErrorCode::BadAttribute, "strides must be positive");
    pads[a + spatial] += ceilModeExtraPad(dims[a + 2], pads[a], pads[a + spatial], kernel->ints()[a], strides[a]);
  }
  d.set("pads", pads);
  return Status::ok();
}

Status lpPoolCeilDilations(NodeDraft& d, DraftBuilder&) {
  KILN_ASSIGN(int64_t ceil, d.takeInt("ceil_mode", 0));
  if (ceil) {
    KILN_TRY(lpPoolCeilAsPadding(d));
  }
  return dropUnitInts(d, "dilations");
}

/// The narrow type QuantizeLinear produces: output_dtype's (taken) or the zero point's.
Expected<std::optional<NarrowType>> quantizedNarrowType(NodeDraft& d, const DraftBuilder& b) {
  KILN_ASSIGN(const ir::Attribute* outType, d.attrAs("output_dtype", ir::AttrKind::Int));
  std::optional<NarrowType> zp = hasInput(d, 2) ? b.narrowType(d.inputs[2]) : std::nullopt;
  std::optional<NarrowType> want = outType ? narrowTypeFromOnnx(int(outType->i())) : std::nullopt;
  if (!want) return zp;
  if (hasInput(d, 2) && zp != want) return Error(ErrorCode::BadAttribute, "output_dtype differs from y_zero_point's type");
  d.take("output_dtype");
  return want;
}

Expected<DType> outputDType(int64_t code) {
  std::optional<DType> t = dtypeFromOnnx(int(code));
  if (!t) return Error(ErrorCode::UnsupportedType, "output_dtype " + std::to_string(code) + " is not a type kiln supports");
  return *t;
}

/// output_dtype as the zero point's type (the opset-17 form's output type).
Status quantizeOutputType(NodeDraft& d, DraftBuilder& b) {
  KILN_ASSIGN(auto outType, d.takeAs("output_dtype", ir::AttrKind::Int));
  if (!outType || outType->i() == 0) return Status::ok();
  KILN_ASSIGN(DType want, outputDType(outType->i()));
  if (hasInput(d, 2)) {
    KILN_ASSIGN(DType zp, inputDType(d, 2));
    if (zp != want) return Error(ErrorCode::BadAttribute, "output_dtype differs from y_zero_point's type");
    return Status::ok();
  }
  if (want == DType::U8) return Status::ok();
  growInputs(d, 3);
  KILN_ASSIGN(d.inputs[2], b.constant(scalarOf(want, 0)));
  return Status::ok();
}

Status quantizeBlocks(NodeDraft& d, DraftBuilder& b) {
  KILN_ASSIGN(int64_t saturate, d.takeInt("saturate", 1));
  KILN_ASSIGN(int64_t block, d.takeInt("block_size", 0));
  KILN_TRY(dropIntAt(d, "precision", 0));
  KILN_ASSIGN(std::optional<NarrowType> narrow, quantizedNarrowType(d, b));
  if (narrow) return expandElementwiseQuantize(d, b, block, narrow, saturate != 0);
  KILN_TRY(quantizeOutputType(d, b));
  return block != 0 ? expandElementwiseQuantize(d, b, block, std::nullopt, true) : Status::ok();
}

Status dequantizeBlocks(NodeDraft& d, DraftBuilder& b) {
  KILN_ASSIGN(int64_t block, d.takeInt("block_size", 0));
  KILN_ASSIGN(auto outType, d.takeAs("output_dtype", ir::AttrKind::Int));
  KILN_ASSIGN(DType scale, inputDType(d, 1));
  std::optional<NarrowType> narrow = hasInput(d, 0) ? b.narrowType(d.inputs[0]) : std::nullopt;
  // float8 carriers are f32, which kiln's DequantizeLinear does not take.
  if (block != 0 || (narrow && isNarrowFloat(*narrow))) {
    KILN_TRY(expandElementwiseDequantize(d, b, block));
  }
  if (!outType || outType->i() == 0) return Status::ok();
  KILN_ASSIGN(DType want, outputDType(outType->i()));
  if (want == scale) return Status::ok();
  KILN_ASSIGN(ir::Value* deq, b.node(d.opType, d.inputs, d.attrs));
  d.opType = "Cast";
  d.inputs = {deq};
  d.attrs.clear();
  d.set("to", int64_t(outType->i()));
  return Status::ok();
}

constexpr std::string_view kReduceOps[] = {"ReduceL1",  "ReduceL2",   "ReduceLogSum",
                                                        "ReduceLogSumExp", "ReduceMax", "ReduceMean",
                                                        "ReduceMin", "ReduceProd", "ReduceSumSquare"};

/// Ops whose versions 19, 21, 23, 24 and 25 only add element types (float8,
/// int4, float4, float8e8m0, int2); Cast/CastLike, Pad and Quantize/
/// DequantizeLinear, which also gained attributes, have handlers.
constexpr std::string_view kTypeOnlyFrom19[] = {"Constant", "Identity", "If",   "Loop",
                                                "Reshape",  "Scan",     "Shape", "Size"};
/// The same from version 21 on (ConstantOfShape's first is 20).
constexpr std::string_view kTypeOnlyFrom21[] = {"ConstantOfShape", "Flatten", "Squeeze", "Transpose", "Unsqueeze"};

/// The opset-22 versions (bfloat16 for every floating-point op that lacked it).
constexpr std::string_view kBfloat16At22[] = {
    "EyeLike", "RandomUniform", "RandomNormal", "RandomUniformLike", "RandomNormalLike", "Multinomial",
    "Bernoulli", "ThresholdedRelu", "Selu", "Elu", "HardSigmoid", "HardSwish", "Softsign", "Softplus",
    "Sin", "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh", "Round",
    "Det", "NegativeLogLikelihoodLoss", "MaxPool", "MaxUnpool", "MaxRoiPool", "Conv", "ConvTranspose",
    "GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool", "InstanceNormalization", "LpNormalization",
    "Dropout", "RoiAlign", "RNN", "GRU", "LSTM", "DeformConv", "AveragePool", "LpPool", "GridSample"};

std::vector<NewerOpVersion> buildTable() {
  std::vector<NewerOpVersion> t;
  auto add = [&](std::string_view op, int since, FormHandler h) { t.push_back({op, since, h}); };
  for (std::string_view op : kReduceOps) add(op, 18, reduceAxesInput);
  add("ReduceMax", 20, reduceAxesInput);
  add("ReduceMin", 20, reduceAxesInput);
  for (int v : {18, 19, 21, 23, 24, 25}) add("Pad", v, padAxesInput);
  add("Split", 18, splitNumOutputs);
  add("Resize", 18, resizeAxes);
  add("Resize", 19, resizeAxes);
  add("ScatterND", 18, nullptr);  // reduction max/min, which kiln's form has
  add("ScatterElements", 18, nullptr);
  add("OptionalGetElement", 18, nullptr);  // a plain tensor is accepted too
  add("OptionalHasElement", 18, nullptr);
  add("LpPool", 18, lpPoolCeilDilations);
  add("AveragePool", 19, averagePoolDilations);
  for (int v : {19, 21, 23, 24, 25}) {
    add("Cast", v, castSaturate);
    add("CastLike", v, castSaturate);
    add("QuantizeLinear", v, quantizeBlocks);
    add("DequantizeLinear", v, dequantizeBlocks);
    for (std::string_view op : kTypeOnlyFrom19) add(op, v, nullptr);
    if (v >= 21)
      for (std::string_view op : kTypeOnlyFrom21) add(op, v, nullptr);
  }
  add("Equal", 19, nullptr);
  add("ConstantOfShape", 20, nullptr);
  add("DFT", 20, dftAxisInput);
  add("GridSample", 20, gridSampleModes);
  add("IsInf", 20, nullptr);
  add("IsNaN", 20, nullptr);
  add("QLinearMatMul", 21, nullptr);
  for (std::string_view op : kBfloat16At22) {
    FormHandler h = op == "AveragePool" ? averagePoolDilations
                    : op == "LpPool"    ? lpPoolCeilDilations
                    : op == "GridSample" ? gridSampleModes
                                         : nullptr;
    add(op, 22, op == "DeformConv" ? intoKilnDomain : h);
  }
  add("TopK", 24, nullptr);
  add("SplitToSequence", 24, nullptr);
  // Ops that opsets 18 on introduced.
  add("Mish", 18, expandMish);
  add("Mish", 22, expandMish);
  add("GroupNormalization", 18, expandGroupNormalization18);
  add("GroupNormalization", 21, expandGroupNormalization21);
  add("CenterCropPad", 18, expandCenterCropPad);
  add("Gelu", 20, expandGelu);
  add("RMSNormalization", 23, expandRmsNormalization);
  add("Swish", 24, expandSwish);
  for (std::string_view op : {"BitwiseAnd", "BitwiseOr", "BitwiseXor", "BitwiseNot"}) add(op, 18, intoKilnDomain);
  add("Col2Im", 18, expandCol2Im);
  add("DeformConv", 19, intoKilnDomain);
  add("AffineGrid", 20, expandAffineGrid);
  for (std::string_view op : {"RegexFullMatch", "StringConcat", "StringSplit"}) add(op, 20, intoKilnDomain);
  add("ImageDecoder", 20, intoKilnDomain);
  add("Attention", 23, expandAttention);
  add("Attention", 24, expandAttention);
  add("RotaryEmbedding", 23, expandRotaryEmbedding);
  add("TensorScatter", 24, intoKilnDomain);
  add("BitCast", 26, intoKilnDomain);
  add("CumProd", 26, intoKilnDomain);
  return t;
}

const std::vector<NewerOpVersion>& table() {
  static const std::vector<NewerOpVersion> t = buildTable();
  return t;
}

}  // namespace

std::optional<NewerOpVersion> newerOpVersion(std::string_view op, int64_t opset) {
  std::optional<NewerOpVersion> best;
  for (const NewerOpVersion& v : table())
    if (v.op == op && v.since <= opset && (!best || v.since > best->since)) best = v;
  return best;
}

int firstNewerVersion(std::string_view op) {
  int first = 0;
  for (const NewerOpVersion& v : table())
    if (v.op == op && (first == 0 || v.since < first)) first = v.since;
  return first;
}

Status normalizeNewerForm(NodeDraft& d, const NewerOpVersion& version, DraftBuilder& b) {
  return version.handler ? version.handler(d, b) : Status::ok();
}

}  // namespace kiln::onnx
