//===- lib/frontend/onnx/BlockQuantization.cpp - Blocked Quantize/Dequantize -===//
//
// QuantizeLinear and DequantizeLinear from opset 21 on take block_size > 0:
// the scale (and zero point) hold one entry per block of block_size elements
// along `axis`, [.., ceil(D / block_size), ..]. kiln's opset-17 forms know
// only per-tensor and per-axis parameters, so a blocked node is written as
// its element-wise definition, with each parameter repeated over its block:
//   Quantize:   y = saturate(round(x / scale) + zero_point)   (round half to even)
//   Dequantize: y = (x - zero_point) * scale
//
//===----------------------------------------------------------------------===//
#include <limits>

#include "NewerOpsetForms.h"

namespace kiln::onnx {
namespace {

/// `p` [.., ceil(D / block), ..] with each entry repeated `block` times along
/// `axis` and cut to x's D: one parameter per element of x.
Expected<ir::Value*> perElement(DraftBuilder& b, ir::Value* p, int64_t axis, int64_t block, const Dims& x) {
  if (!p->type().isTensor() || !p->type().tensor().isStatic())
    return Error(ErrorCode::ShapeMismatch, "a blocked scale or zero point needs a static shape");
  Dims pd = p->type().tensor().dims();
  if (pd.size() != x.size()) return Error(ErrorCode::ShapeMismatch, "blocked parameters must have the input's rank");
  for (size_t a = 0; a < x.size(); ++a) {
    int64_t want = int64_t(a) == axis ? (x[a] + block - 1) / block : x[a];
    if (pd[a] != want)
      return Error(ErrorCode::ShapeMismatch, "blocked parameters' dim " + std::to_string(a) + " is " +
                                                 std::to_string(pd[a]) + ", expected " + std::to_string(want));
  }
  KILN_ASSIGN(ir::Value* one, int64Constant(b, {axis + 1}));
  KILN_ASSIGN(ir::Value* u, b.node("Unsqueeze", {p, one}, {}));
  std::vector<int64_t> expanded(pd.begin(), pd.end());
  expanded.insert(expanded.begin() + axis + 1, block);
  KILN_ASSIGN(ir::Value* shape, int64Constant(b, expanded));
  KILN_ASSIGN(ir::Value* e, b.node("Expand", {u, shape}, {}));
  std::vector<int64_t> merged(pd.begin(), pd.end());
  merged[size_t(axis)] *= block;
  KILN_ASSIGN(ir::Value* ms, int64Constant(b, merged));
  KILN_ASSIGN(ir::Value* r, b.node("Reshape", {e, ms}, {}));
  if (merged[size_t(axis)] == x[size_t(axis)]) return r;
  KILN_ASSIGN(ir::Value* s, int64Constant(b, {0}));
  KILN_ASSIGN(ir::Value* end, int64Constant(b, {x[size_t(axis)]}));
  KILN_ASSIGN(ir::Value* ax, int64Constant(b, {axis}));
  return b.node("Slice", {r, s, end, ax}, {});
}

struct Blocked {
  Dims dims;
  int64_t axis = 1;
};

Expected<Blocked> blockedOperand(NodeDraft& d, int64_t block) {
  KILN_TRY(requireInputs(d, 2));
  if (block < 1) return Error(ErrorCode::BadAttribute, "block_size must be positive");
  Blocked k;
  KILN_ASSIGN(k.dims, staticInputDims(d, 0, "for blocked quantization"));
  KILN_ASSIGN(int64_t axis, d.takeInt("axis", 1));
  KILN_ASSIGN(std::vector<int64_t> axes, normalizedAxes({axis}, int64_t(k.dims.size())));
  k.axis = axes[0];
  return k;
}

Expected<ir::Value*> parameter(NodeDraft& d, DraftBuilder& b, size_t slot, const Blocked& k, int64_t block, DType to) {
  KILN_ASSIGN(ir::Value* p, perElement(b, d.inputs[slot], k.axis, block, k.dims));
  KILN_ASSIGN(DType from, inputDType(d, slot));
  return castIfNeeded(b, p, from, to);
}

template <class T>
std::pair<double, double> rangeOf() {
  return {double(std::numeric_limits<T>::min()), double(std::numeric_limits<T>::max())};
}

Expected<std::pair<double, double>> quantizedRange(DType t) {
  switch (t) {
    case DType::U8: return rangeOf<uint8_t>();
    case DType::I8: return rangeOf<int8_t>();
    case DType::U16: return rangeOf<uint16_t>();
    case DType::I16: return rangeOf<int16_t>();
    default:
      return Error(ErrorCode::UnsupportedType, std::string("blocked quantization to ") + dtypeName(t) +
                                                   " is not supported by kiln");
  }
}

}  // namespace

Status expandBlockedQuantize(NodeDraft& d, DraftBuilder& b, int64_t block) {
  KILN_ASSIGN(Blocked k, blockedOperand(d, block));
  KILN_ASSIGN(DType xt, inputDType(d, 0));
  DType qt = DType::U8;
  if (hasInput(d, 2)) {
    KILN_ASSIGN(qt, inputDType(d, 2));
  }
  KILN_ASSIGN(auto range, quantizedRange(qt));
  KILN_ASSIGN(ir::Value* scale, parameter(d, b, 1, k, block, xt));
  KILN_ASSIGN(ir::Value* scaled, b.node("Div", {d.inputs[0], scale}, {}));
  KILN_ASSIGN(ir::Value* q, b.node("Round", {scaled}, {}));
  if (hasInput(d, 2)) {
    KILN_ASSIGN(ir::Value* zp, parameter(d, b, 2, k, block, xt));
    KILN_ASSIGN(q, b.node("Add", {q, zp}, {}));
  }
  KILN_ASSIGN(ir::Value* lo, b.constant(scalarOf(xt, range.first)));
  KILN_ASSIGN(ir::Value* hi, b.constant(scalarOf(xt, range.second)));
  KILN_ASSIGN(ir::Value* clipped, b.node("Clip", {q, lo, hi}, {}));
  d.opType = "Cast";
  d.inputs = {clipped};
  d.attrs.clear();
  d.set("to", int64_t(onnxDTypeCode(qt)));
  return Status::ok();
}

Status expandBlockedDequantize(NodeDraft& d, DraftBuilder& b, int64_t block) {
  KILN_ASSIGN(Blocked k, blockedOperand(d, block));
  KILN_ASSIGN(DType xt, inputDType(d, 0));
  KILN_ASSIGN(DType st, inputDType(d, 1));
  KILN_ASSIGN(ir::Value* x, castIfNeeded(b, d.inputs[0], xt, st));
  if (hasInput(d, 2)) {
    KILN_ASSIGN(ir::Value* zp, parameter(d, b, 2, k, block, st));
    KILN_ASSIGN(x, b.node("Sub", {x, zp}, {}));
  }
  KILN_ASSIGN(ir::Value* scale, parameter(d, b, 1, k, block, st));
  d.opType = "Mul";
  d.inputs = {x, scale};
  d.attrs.clear();
  return Status::ok();
}

}  // namespace kiln::onnx
