//===- lib/frontend/onnx/AntialiasResize.cpp - Resize-18 antialias as MatMuls -===//
//
// Resize-18's antialias=1 widens a downsampling linear or cubic filter by
// 1 / scale, which opset 17's Resize cannot spell. A resize along one axis is
// a linear map of that axis, so the importer writes each resized axis as a
// MatMul by its constant [out, in] tap matrix (ir::resizeTaps with
// antialias): the last axis as X · Mᵀ, the one before it as M · X, any other
// between two Transposes that swap it with the last. tf_crop_and_resize
// (whose outside taps read a constant) is refused.
//
//===----------------------------------------------------------------------===//
#include <cmath>

#include "NewerOpsetForms.h"
#include "kiln/ir/ResizeTaps.h"

namespace kiln::onnx {
namespace {

Expected<std::string> stringAttr(const NodeDraft& d, const char* name, const char* dflt) {
  KILN_ASSIGN(const ir::Attribute* a, d.attrAs(name, ir::AttrKind::String));
  return a ? a->s() : std::string(dflt);
}

Expected<ir::ResizeSampling> samplingOf(const NodeDraft& d) {
  ir::ResizeSampling s;
  s.antialias = true;
  KILN_ASSIGN(s.coordinateMode, stringAttr(d, "coordinate_transformation_mode", "half_pixel"));
  KILN_ASSIGN(s.mode, stringAttr(d, "mode", "nearest"));
  KILN_ASSIGN(const ir::Attribute* a, d.attrAs("cubic_coeff_a", ir::AttrKind::Float));
  if (a) s.cubicCoeffA = a->f();
  KILN_ASSIGN(const ir::Attribute* exclude, d.attrAs("exclude_outside", ir::AttrKind::Int));
  s.excludeOutside = exclude && exclude->i() != 0;
  return s;
}

/// The [out, in] matrix whose row o holds output o's tap weights, or its
/// [in, out] transpose.
Tensor tapMatrix(const std::vector<ir::ResizeTaps>& taps, int64_t in, bool transposed) {
  size_t outLen = taps.size();
  std::vector<float> m(outLen * size_t(in), 0.0f);
  for (size_t o = 0; o < outLen; ++o)
    for (const auto& [i, w] : taps[o].taps) m[transposed ? size_t(i) * outLen + o : o * size_t(in) + size_t(i)] += float(w);
  Dims dims = {int64_t(outLen), in};
  if (transposed) std::swap(dims[0], dims[1]);
  return Tensor::fromVector<float>(dims, m);
}

bool isIdentity(const std::vector<ir::ResizeTaps>& taps, int64_t in) {
  if (int64_t(taps.size()) != in) return false;
  for (size_t o = 0; o < taps.size(); ++o) {
    double own = 0, other = 0;
    for (const auto& [i, w] : taps[o].taps) (size_t(i) == o ? own : other) += std::abs(w);
    if (std::abs(own - 1) > 1e-12 || other > 1e-12) return false;
  }
  return true;
}

/// Each axis's scale and output length, from the full-rank scales or sizes.
Status scalesAndLengths(const NodeDraft& d, DraftBuilder& b, const Dims& dims, std::vector<double>& scales,
                        Dims& out) {
  size_t rank = dims.size();
  scales.assign(rank, 1.0);
  out = dims;
  if (hasInput(d, 3)) {
    KILN_ASSIGN(std::vector<int64_t> sizes, knownInputInts(d, 3, b, "sizes"));
    if (sizes.size() != rank) return Error(ErrorCode::ShapeMismatch, "Resize: sizes must have one value per input dim");
    for (size_t a = 0; a < rank; ++a) {
      if (sizes[a] < 1 || dims[a] < 1) return Error(ErrorCode::ShapeMismatch, "Resize: sizes and dims must be positive");
      out[a] = sizes[a];
      scales[a] = double(sizes[a]) / double(dims[a]);
    }
    return Status::ok();
  }
  const Tensor* given = hasInput(d, 2) ? b.knownValue(d.inputs[2]) : nullptr;
  if (!given) return refuseForm(d, "antialias=1 with scales or sizes computed at run time");
  scales = given->toDoubles();
  if (scales.size() != rank) return Error(ErrorCode::ShapeMismatch, "Resize: scales must have one value per input dim");
  for (size_t a = 0; a < rank; ++a) {
    if (!(scales[a] > 0)) return Error(ErrorCode::ShapeMismatch, "Resize: scales must be positive");
    // float(scale) as stored, and the length as inferResize computes it.
    scales[a] = double(float(scales[a]));
    out[a] = ir::resizedLength(dims[a], scales[a]);
  }
  return Status::ok();
}

}  // namespace

Status expandAntialiasedResize(NodeDraft& d, DraftBuilder& b) {
  KILN_ASSIGN(ir::ResizeSampling s, samplingOf(d));
  if (s.coordinateMode == "tf_crop_and_resize") return refuseForm(d, "antialias=1 with tf_crop_and_resize");
  KILN_ASSIGN(Dims dims, staticInputDims(d, 0, "for Resize antialias=1"));
  KILN_ASSIGN(DType dt, inputDType(d, 0));
  if (!isFloat(dt)) return refuseForm(d, "antialias=1 on a non-float input");
  std::vector<double> scales;
  Dims out;
  KILN_TRY(scalesAndLengths(d, b, dims, scales, out));
  int64_t rank = int64_t(dims.size());
  ir::Value* y = d.inputs[0];
  for (int64_t a = rank - 1; a >= 0; --a) {
    // Bounds the taps (about 2 / scale <= 2 * in per output) and the tap matrix.
    KILN_TRY(boundedProduct({dims[size_t(a)], out[size_t(a)]}, kMaxBuiltConstantElements,
                            "Resize antialias=1: input times output length").status());
    KILN_ASSIGN(std::vector<ir::ResizeTaps> taps, ir::resizeTaps(s, dims[size_t(a)], out[size_t(a)], scales[size_t(a)], 0, 1));
    if (isIdentity(taps, dims[size_t(a)])) continue;
    const bool secondLast = a == rank - 2;
    KILN_ASSIGN(ir::Value* m, b.constant(tapMatrix(taps, dims[size_t(a)], !secondLast).castTo(dt)));
    if (secondLast) {
      KILN_ASSIGN(y, b.node("MatMul", {m, y}, {}));
      continue;
    }
    std::vector<int64_t> swap(static_cast<size_t>(rank));
    for (int64_t i = 0; i < rank; ++i) swap[size_t(i)] = i;
    std::swap(swap[size_t(a)], swap.back());
    const std::vector<std::pair<std::string, ir::Attribute>> perm = {{"perm", ir::Attribute(swap)}};
    if (a != rank - 1) {
      KILN_ASSIGN(y, b.node("Transpose", {y}, perm));
    }
    KILN_ASSIGN(y, b.node("MatMul", {y, m}, {}));
    if (a != rank - 1) {
      KILN_ASSIGN(y, b.node("Transpose", {y}, perm));
    }
  }
  return finishWith(d, y);
}

}  // namespace kiln::onnx
