//===- lib/frontend/onnx/BlockQuantization.cpp - Element-wise Quantize/Dequantize -===//
//
// The QuantizeLinear and DequantizeLinear forms kiln's opset-17 ops lack,
// written as their element-wise definitions:
//   Quantize:   y = saturate(round(x / scale) + zero_point)   (round half to even)
//               float8: y = cast(x / scale + zero_point), saturating when asked
//   Dequantize: y = (x - zero_point) * scale
// Blocked forms (block_size > 0, opset 21 on) hold one scale (and zero point)
// per block of block_size elements along `axis`, [.., ceil(D / block_size), ..]:
// each parameter is repeated over its block. The float8 and 4-bit forms run
// on their carriers (kiln/support/NarrowTypes.h), with per-tensor or per-axis
// parameters too.
//
//===----------------------------------------------------------------------===//
#include <limits>

#include "NewerOpsetForms.h"
#include "kiln/support/NarrowTypes.h"

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

/// x's rank, the quantization axis (normalised when blocked), and x's dims when blocked.
struct Blocked {
  Dims dims;
  int64_t rank = 0;
  int64_t axis = 1;
};

Expected<Blocked> blockedOperand(NodeDraft& d, int64_t block) {
  KILN_TRY(requireInputs(d, 2));
  if (block < 0) return Error(ErrorCode::BadAttribute, "block_size must not be negative");
  Blocked k;
  if (block > 0) {
    KILN_ASSIGN(k.dims, staticInputDims(d, 0, "for blocked quantization"));
    k.rank = int64_t(k.dims.size());
  } else {
    KILN_ASSIGN(k.rank, inputRank(d, 0));
  }
  KILN_ASSIGN(k.axis, d.takeInt("axis", 1));
  if (block == 0) return k;  // per-tensor and per-axis parameters: alongAxis normalises the axis
  KILN_ASSIGN(std::vector<int64_t> axes, normalizedAxes({k.axis}, k.rank));
  k.axis = axes[0];
  return k;
}

/// A per-tensor parameter as it is; a per-axis one (1-D of more than one
/// entry) reshaped to lie along `axis` of x's rank.
Expected<ir::Value*> alongAxis(DraftBuilder& b, ir::Value* p, const Blocked& k) {
  if (!p->type().isTensor() || !p->type().tensor().hasRank())
    return Error(ErrorCode::ShapeMismatch, "a scale or zero point needs a known rank");
  const ir::TensorType& t = p->type().tensor();
  if (t.rank() == 0 || (t.rank() == 1 && t.dim(0) == 1)) return p;
  if (t.rank() != 1) return Error(ErrorCode::ShapeMismatch, "a per-axis scale or zero point must be 1-D");
  KILN_ASSIGN(std::vector<int64_t> axis, normalizedAxes({k.axis}, k.rank));
  std::vector<int64_t> shape(size_t(k.rank), 1);
  shape[size_t(axis[0])] = -1;
  KILN_ASSIGN(ir::Value* s, int64Constant(b, shape));
  return b.node("Reshape", {p, s}, {});
}

/// Parameter `slot` (scale or zero point) broadcastable against x, in type `to`.
Expected<ir::Value*> parameter(NodeDraft& d, DraftBuilder& b, size_t slot, const Blocked& k, int64_t block, DType to) {
  ir::Value* p = d.inputs[slot];
  if (block > 0) {
    KILN_ASSIGN(p, perElement(b, p, k.axis, block, k.dims));
  } else {
    KILN_ASSIGN(p, alongAxis(b, p, k));
  }
  KILN_ASSIGN(DType from, inputDType(d, slot));
  return castIfNeeded(b, p, from, to);
}

template <class T>
std::pair<double, double> rangeOf() {
  return {double(std::numeric_limits<T>::min()), double(std::numeric_limits<T>::max())};
}

Expected<std::pair<double, double>> quantizedRange(DType t, std::optional<NarrowType> narrow) {
  if (narrow && !isNarrowFloat(*narrow)) {
    const auto [lo, hi] = narrowIntRange(*narrow);
    return std::pair<double, double>{lo, hi};
  }
  switch (t) {
    case DType::U8: return rangeOf<uint8_t>();
    case DType::I8: return rangeOf<int8_t>();
    case DType::U16: return rangeOf<uint16_t>();
    case DType::I16: return rangeOf<int16_t>();
    default:
      return Error(ErrorCode::UnsupportedType, std::string("element-wise quantization to ") + dtypeName(t) +
                                                   " is not supported by kiln");
  }
}

}  // namespace

Status expandElementwiseQuantize(NodeDraft& d, DraftBuilder& b, int64_t block, std::optional<NarrowType> narrow,
                                 bool saturate) {
  KILN_ASSIGN(Blocked k, blockedOperand(d, block));
  KILN_ASSIGN(DType xt, inputDType(d, 0));
  DType qt = narrow ? narrowCarrier(*narrow) : DType::U8;
  if (hasInput(d, 2) && !narrow) {
    KILN_ASSIGN(qt, inputDType(d, 2));
  }
  KILN_ASSIGN(ir::Value* scale, parameter(d, b, 1, k, block, xt));
  KILN_ASSIGN(ir::Value* q, b.node("Div", {d.inputs[0], scale}, {}));
  const bool float8 = narrow && isNarrowFloat(*narrow);
  if (!float8) {
    KILN_ASSIGN(q, b.node("Round", {q}, {}));
  }
  if (hasInput(d, 2)) {
    KILN_ASSIGN(ir::Value* zp, parameter(d, b, 2, k, block, xt));
    KILN_ASSIGN(q, b.node("Add", {q, zp}, {}));
  }
  if (float8) {
    becomeNarrowCast(d, q, *narrow, saturate);
    return Status::ok();
  }
  KILN_ASSIGN(auto range, quantizedRange(qt, narrow));
  KILN_ASSIGN(ir::Value* lo, b.constant(scalarOf(xt, range.first)));
  KILN_ASSIGN(ir::Value* hi, b.constant(scalarOf(xt, range.second)));
  KILN_ASSIGN(ir::Value* clipped, b.node("Clip", {q, lo, hi}, {}));
  becomeNode(d, "Cast", {clipped}, {});
  d.set("to", int64_t(onnxDTypeCode(qt)));
  return Status::ok();
}

Status expandElementwiseDequantize(NodeDraft& d, DraftBuilder& b, int64_t block) {
  KILN_ASSIGN(Blocked k, blockedOperand(d, block));
  KILN_ASSIGN(DType xt, inputDType(d, 0));
  KILN_ASSIGN(DType st, inputDType(d, 1));
  KILN_ASSIGN(ir::Value* x, castIfNeeded(b, d.inputs[0], xt, st));
  if (hasInput(d, 2)) {
    KILN_ASSIGN(ir::Value* zp, parameter(d, b, 2, k, block, st));
    KILN_ASSIGN(x, b.node("Sub", {x, zp}, {}));
  }
  KILN_ASSIGN(ir::Value* scale, parameter(d, b, 1, k, block, st));
  becomeNode(d, "Mul", {x, scale}, {});
  return Status::ok();
}

}  // namespace kiln::onnx
