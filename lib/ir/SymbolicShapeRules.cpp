//===- lib/ir/SymbolicShapeRules.cpp - Result dims over symbolic dims -------===//
//
// The dims half of symbolic inference (SymbolicShapes.h): each op's result
// dims as DimExprs of its operands' dims and dim values. One function per op
// or op family, each the symbolic twin of the op's static rule; the static
// rule has already checked the operands, so a rule here only computes, and
// returns without refining where an operand it needs is not expressible.
//
//===----------------------------------------------------------------------===//
#include <algorithm>
#include <cmath>
#include <numeric>

#include "SymbolicShapes.h"
#include "kiln/ir/OpSchema.h"
#include "kiln/ir/ShapeUtils.h"

namespace kiln::ir::symbolic {
namespace {

using Exprs = std::vector<DimExpr>;

/// The node's `axis` attribute normalized for `rank` dims; nullopt when out of range.
std::optional<size_t> axisAttr(const RuleContext& ctx, size_t rank) {
  int64_t axis = ctx.node().getInt("axis");
  if (axis < 0) axis += int64_t(rank);
  if (axis < 0 || axis >= int64_t(rank)) return std::nullopt;
  return size_t(axis);
}

int64_t intAttr(const Node& n, const char* name, int64_t fallback) {
  return n.hasAttr(name) ? n.getInt(name) : fallback;
}

/// Every result of input 0's rank gets input 0's dims (Elementwise ops,
/// softmax and the normalizations).
void sameAsInput0(RuleContext& ctx, size_t outputs) {
  std::optional<Exprs> x = ctx.inputDims(0);
  if (!x) return;
  for (size_t i = 0; i < outputs; ++i)
    if (const TensorType* out = ctx.output(i); out && out->hasRank() && out->rank() == int64_t(x->size()))
      ctx.setOutputDims(i, *x);
}

/// Each operand's dims as expressions, nullopt where a dim is unknown.
std::optional<std::vector<std::optional<DimExpr>>> partialDims(const TensorType* t) {
  if (!t || !t->hasRank()) return std::nullopt;
  std::vector<std::optional<DimExpr>> dims;
  for (int64_t d = 0; d < t->rank(); ++d) dims.push_back(t->dimExpr(d));
  return dims;
}

/// Broadcast ops: the operands' dims broadcast, dim by dim.
void broadcastInputs(RuleContext& ctx) {
  std::vector<std::optional<DimExpr>> out;
  for (size_t i = 0; i < ctx.numInputs(); ++i) {
    if (!ctx.input(i)) continue;
    std::optional<std::vector<std::optional<DimExpr>>> dims = partialDims(ctx.input(i));
    if (!dims) return;
    out = broadcastDimByDim(out, *dims);
  }
  ctx.setSomeOutputDims(0, out);
}

void matmulDims(RuleContext& ctx) {
  std::optional<Exprs> a = ctx.inputDims(0), b = ctx.inputDims(1);
  if (!a || !b || a->empty() || b->empty()) return;
  const bool vectorA = a->size() == 1, vectorB = b->size() == 1;
  if (vectorA) a->insert(a->begin(), DimExpr(1));
  if (vectorB) b->push_back(DimExpr(1));
  std::optional<Exprs> out = broadcastExprs(Exprs(a->begin(), a->end() - 2), Exprs(b->begin(), b->end() - 2));
  if (!out) return;
  if (!vectorA) out->push_back((*a)[a->size() - 2]);
  if (!vectorB) out->push_back(b->back());
  ctx.setOutputDims(0, *out);
}

/// kiln::Dense: X [..., M, K] times W [N, K] transposed is [..., M, N].
void denseDims(RuleContext& ctx) {
  std::optional<Exprs> x = ctx.inputDims(0), w = ctx.inputDims(1);
  if (!x || !w || x->size() < 2 || w->size() != 2) return;
  Exprs out(x->begin(), x->end() - 1);
  out.push_back((*w)[0]);
  ctx.setOutputDims(0, out);
}

void gemmDims(RuleContext& ctx) {
  std::optional<Exprs> a = ctx.inputDims(0), b = ctx.inputDims(1);
  if (!a || !b || a->size() != 2 || b->size() != 2) return;
  const Node& n = ctx.node();
  ctx.setOutputDims(0, {(*a)[n.getInt("transA") ? 1 : 0], (*b)[n.getInt("transB") ? 0 : 1]});
}

void transposeDims(RuleContext& ctx) {
  std::optional<Exprs> x = ctx.inputDims(0);
  if (!x) return;
  std::vector<int64_t> perm(x->size());
  std::iota(perm.rbegin(), perm.rend(), 0);
  if (ctx.node().hasAttr("perm")) perm = ctx.node().getInts("perm");
  if (perm.size() != x->size()) return;
  Exprs out;
  for (int64_t p : perm) out.push_back((*x)[size_t(p)]);
  ctx.setOutputDims(0, out);
}

DimExpr product(Exprs::const_iterator begin, Exprs::const_iterator end) {
  DimExpr p(1);
  for (auto it = begin; it != end; ++it) p = p * *it;
  return p;
}

void reshapeDims(RuleContext& ctx) {
  std::optional<Exprs> x = ctx.inputDims(0);
  const DimValues* target = ctx.inputValues(1);
  if (!target) return;
  const bool allowZero = ctx.node().getInt("allowzero") != 0;
  Exprs out = *target;
  std::optional<size_t> inferred;
  for (size_t i = 0; i < out.size(); ++i) {
    std::optional<int64_t> c = out[i].constant();
    if (c == -1) inferred = i;
    else if (c == 0 && !allowZero) {
      if (!x || i >= x->size()) return;
      out[i] = (*x)[i];
    }
  }
  if (inferred) {
    if (!x) return;
    out[*inferred] = DimExpr(1);
    std::optional<DimExpr> rest = DimExpr::divideExact(product(x->begin(), x->end()), product(out.begin(), out.end()));
    if (!rest) return;
    out[*inferred] = *rest;
  }
  ctx.setOutputDims(0, out);
}

void flattenDims(RuleContext& ctx) {
  std::optional<Exprs> x = ctx.inputDims(0);
  if (!x) return;
  int64_t axis = ctx.node().getInt("axis");
  if (axis < 0) axis += int64_t(x->size());
  if (axis < 0 || axis > int64_t(x->size())) return;
  ctx.setOutputDims(0, {product(x->begin(), x->begin() + axis), product(x->begin() + axis, x->end())});
}

/// Squeeze and Unsqueeze with known axes (input 1). Squeeze without axes
/// drops the dims that are 1, which a symbolic dim may or may not be.
void squeezeDims(RuleContext& ctx, bool insert) {
  std::optional<Exprs> x = ctx.inputDims(0);
  std::optional<std::vector<int64_t>> axes = ctx.input(1) ? ctx.inputInts(1) : std::nullopt;
  if (!x || !axes) return;
  const int64_t rank = int64_t(x->size()) + (insert ? int64_t(axes->size()) : 0);
  Expected<std::vector<int64_t>> norm = normalizeAxes(*axes, rank);
  if (!norm) return;
  std::vector<int64_t> sorted = norm.value();
  std::sort(sorted.begin(), sorted.end());
  Exprs out = *x;
  if (insert)
    for (int64_t a : sorted) out.insert(out.begin() + std::min<int64_t>(a, int64_t(out.size())), DimExpr(1));
  else
    for (auto a = sorted.rbegin(); a != sorted.rend(); ++a) out.erase(out.begin() + *a);
  ctx.setOutputDims(0, out);
}

void concatDims(RuleContext& ctx) {
  std::optional<Exprs> out = ctx.inputDims(0);
  if (!out || out->empty()) return;
  std::optional<size_t> axis = axisAttr(ctx, out->size());
  if (!axis) return;
  for (size_t i = 1; i < ctx.numInputs(); ++i) {
    std::optional<Exprs> dims = ctx.inputDims(i);
    if (!dims || dims->size() != out->size()) return;
    (*out)[*axis] = (*out)[*axis] + (*dims)[*axis];
  }
  ctx.setOutputDims(0, *out);
}

/// Bounds at or past this are "to the end" (no dim is this large).
constexpr int64_t kToTheEnd = int64_t(1) << 40;

/// A Slice start or end on dim d, clamped to [0, d] as ONNX says for a
/// positive step. A symbolic bound is a dim value, never negative.
DimExpr clampedBound(const RuleContext& ctx, const DimExpr& bound, const DimExpr& d) {
  std::optional<int64_t> x = bound.constant();
  if (!x) return ctx.min(bound, d);
  if (*x >= kToTheEnd) return d;
  if (*x < 0) return *x <= -kToTheEnd ? DimExpr(0) : ctx.max(d + bound, DimExpr(0));
  return ctx.min(bound, d);
}

void sliceDims(RuleContext& ctx) {
  std::optional<Exprs> x = ctx.inputDims(0);
  const DimValues* starts = ctx.inputValues(1);
  const DimValues* ends = ctx.inputValues(2);
  std::optional<std::vector<int64_t>> axes = std::vector<int64_t>{}, steps = std::vector<int64_t>{};
  if (ctx.input(3)) axes = ctx.inputInts(3);
  if (ctx.input(4)) steps = ctx.inputInts(4);
  if (!x || !starts || !ends || !axes || !steps || starts->size() != ends->size()) return;
  if (axes->empty())
    for (size_t i = 0; i < starts->size(); ++i) axes->push_back(int64_t(i));
  if (steps->empty()) steps->assign(starts->size(), 1);
  Expected<std::vector<int64_t>> norm = normalizeAxes(*axes, int64_t(x->size()));
  if (!norm || steps->size() != starts->size() || norm->size() != starts->size()) return;
  Exprs out = *x;
  for (size_t i = 0; i < norm->size(); ++i) {
    const int64_t step = (*steps)[i];
    if (step <= 0) return;  // reversed slices of symbolic dims stay unknown
    DimExpr& d = out[size_t((*norm)[i])];
    DimExpr span = ctx.max(clampedBound(ctx, (*ends)[i], d) - clampedBound(ctx, (*starts)[i], d), DimExpr(0));
    d = DimExpr::ceilDiv(span, step);
  }
  ctx.setOutputDims(0, out);
}

void gatherDims(RuleContext& ctx) {
  std::optional<Exprs> data = ctx.inputDims(0), indices = ctx.inputDims(1);
  if (!data || !indices || data->empty()) return;
  std::optional<size_t> axis = axisAttr(ctx, data->size());
  if (!axis) return;
  Exprs out(data->begin(), data->begin() + int64_t(*axis));
  out.insert(out.end(), indices->begin(), indices->end());
  out.insert(out.end(), data->begin() + int64_t(*axis) + 1, data->end());
  ctx.setOutputDims(0, out);
}

/// The Reduce ops (axes from the attribute or input 1) and ArgMax/ArgMin.
void reduceDims(RuleContext& ctx) {
  std::optional<Exprs> x = ctx.inputDims(0);
  if (!x) return;
  const Node& n = ctx.node();
  std::optional<std::vector<int64_t>> axes = std::vector<int64_t>{};
  if (n.op() == Op::ArgMax || n.op() == Op::ArgMin) axes = std::vector<int64_t>{n.getInt("axis")};
  else if (ctx.numInputs() > 1 && ctx.input(1)) axes = ctx.inputInts(1);
  else if (n.hasAttr("axes")) axes = n.getInts("axes");
  if (!axes) return;
  if (axes->empty() && n.schema().findAttr("noop_with_empty_axes") && n.getInt("noop_with_empty_axes")) {
    ctx.setOutputDims(0, *x);
    return;
  }
  Expected<std::vector<int64_t>> norm = normalizeAxes(*axes, int64_t(x->size()));
  if (!norm) return;
  const bool keep = intAttr(n, "keepdims", 1) != 0;
  Exprs out;
  for (size_t d = 0; d < x->size(); ++d) {
    bool reduced = norm->empty() || std::count(norm->begin(), norm->end(), int64_t(d));
    if (!reduced) out.push_back((*x)[d]);
    else if (keep) out.emplace_back(1);
  }
  ctx.setOutputDims(0, out);
}

void expandDims(RuleContext& ctx) {
  std::optional<Exprs> x = ctx.inputDims(0);
  const DimValues* shape = ctx.inputValues(1);
  if (!x || !shape) return;
  if (std::optional<Exprs> out = broadcastExprs(*x, *shape)) ctx.setOutputDims(0, *out);
}

void constantOfShapeDims(RuleContext& ctx) {
  if (const DimValues* shape = ctx.inputValues(0)) ctx.setOutputDims(0, *shape);
}

void rangeDims(RuleContext& ctx) {
  const DimValues* start = ctx.inputValues(0);
  const DimValues* limit = ctx.inputValues(1);
  std::optional<std::vector<int64_t>> delta = ctx.inputInts(2);
  if (!start || !limit || !delta || start->size() != 1 || limit->size() != 1 || delta->size() != 1) return;
  if ((*delta)[0] <= 0) return;
  ctx.setOutputDims(0, {DimExpr::ceilDiv(ctx.max(limit->front() - start->front(), DimExpr(0)), (*delta)[0])});
}

/// Conv and the windowed pools: N from the input, channels from the static
/// rule, each spatial dim floor((in + pads - effective kernel) / stride) + 1,
/// or ceil(in / stride) with SAME padding. ceil_mode pools stay unknown.
/// kiln::ConvNCHWc ([N, C/c, H, W, c] data, [O/o, C/c, kH, kW, c, o]
/// weights) the same over H and W, its lanes from the static rule.
void windowDims(RuleContext& ctx) {
  std::optional<Exprs> x = ctx.inputDims(0);
  const TensorType* out = ctx.output(0);
  const Node& n = ctx.node();
  if (!x || x->size() < 3 || !out || out->rank() != int64_t(x->size())) return;
  if (n.schema().findAttr("ceil_mode") && n.getInt("ceil_mode")) return;
  const bool blocked = n.op() == Op::KilnConvNCHWc;
  const size_t spatial = blocked ? 2 : x->size() - 2;
  Dims kernel;
  const TensorType* w = ctx.input(1);
  if (blocked) {
    if (!w || !w->isStatic() || w->rank() != 6 || out->dim(4) < 0) return;
    kernel = {w->dim(2), w->dim(3)};
  } else if (n.hasAttr("kernel_shape")) {
    kernel = n.getInts("kernel_shape");
  } else if (w && w->isStatic() && w->rank() == int64_t(x->size())) {
    kernel.assign(w->dims().begin() + 2, w->dims().end());
  }
  if (kernel.size() != spatial) return;
  Expected<WindowGeometry> g = computeWindowGeometry(n, Dims(spatial, kUnknownDim), kernel, false);
  if (!g) return;
  const std::string autoPad = n.hasAttr("auto_pad") ? n.getString("auto_pad") : "NOTSET";
  const bool same = autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER";
  Exprs dims = {(*x)[0], out->dim(1) >= 0 ? DimExpr(out->dim(1)) : (*x)[1]};
  if (out->dim(1) < 0 && n.op() != Op::MaxPool && n.op() != Op::AveragePool && n.op() != Op::LpPool) return;
  for (size_t i = 0; i < spatial; ++i) {
    const DimExpr& in = (*x)[i + 2];
    const int64_t effK = (kernel[i] - 1) * g->dilations[i] + 1;
    if (same) dims.push_back(DimExpr::ceilDiv(in, g->strides[i]));
    else
      dims.push_back(DimExpr::floorDiv(in + DimExpr(g->padsBegin[i] + g->padsEnd[i] - effK), g->strides[i]) +
                     DimExpr(1));
  }
  if (blocked) dims.emplace_back(out->dim(4));
  ctx.setOutputDims(0, dims);
}

/// GlobalAveragePool and friends: [N, C, 1, ...].
void globalPoolDims(RuleContext& ctx) {
  std::optional<Exprs> x = ctx.inputDims(0);
  if (!x || x->size() < 2) return;
  Exprs out = {(*x)[0], (*x)[1]};
  out.resize(x->size(), DimExpr(1));
  ctx.setOutputDims(0, out);
}

void padDims(RuleContext& ctx) {
  std::optional<Exprs> x = ctx.inputDims(0);
  std::optional<std::vector<int64_t>> pads = ctx.inputInts(1);
  if (!x || !pads || pads->size() != 2 * x->size()) return;
  Exprs out = *x;
  for (size_t d = 0; d < out.size(); ++d) out[d] = out[d] + DimExpr((*pads)[d] + (*pads)[d + out.size()]);
  ctx.setOutputDims(0, out);
}

void tileDims(RuleContext& ctx) {
  std::optional<Exprs> x = ctx.inputDims(0);
  const DimValues* repeats = ctx.inputValues(1);
  if (!x || !repeats || repeats->size() != x->size()) return;
  Exprs out = *x;
  for (size_t d = 0; d < out.size(); ++d) out[d] = out[d] * (*repeats)[d];
  ctx.setOutputDims(0, out);
}

/// Split: every result is the input with the split axis as the static rule
/// sized it (a symbolic split axis stays unknown).
void splitDims(RuleContext& ctx) {
  std::optional<Exprs> x = ctx.inputDims(0);
  if (!x || x->empty()) return;
  std::optional<size_t> axis = axisAttr(ctx, x->size());
  if (!axis) return;
  for (size_t i = 0; i < ctx.node().numOutputs(); ++i) {
    const TensorType* out = ctx.output(i);
    if (!out || out->rank() != int64_t(x->size()) || out->dim(int64_t(*axis)) < 0) continue;
    ctx.setOutputDims(i, *x);
  }
}

/// A dim resized by `scale` (floor(d * scale)) when the scale is a whole
/// number or its reciprocal; nullopt for other scales.
std::optional<DimExpr> scaledDim(const DimExpr& d, double scale) {
  if (scale >= 1 && scale == std::floor(scale)) return d * DimExpr(int64_t(scale));
  const double inverse = 1 / scale;
  if (scale > 0 && scale < 1 && inverse == std::floor(inverse) && scale * inverse == 1)
    return DimExpr::floorDiv(d, int64_t(inverse));
  return std::nullopt;
}

/// Resize to known sizes (input 3, as dim values) or by known scales (input 2).
void resizeDims(RuleContext& ctx) {
  std::optional<Exprs> x = ctx.inputDims(0);
  if (!x) return;
  if (const DimValues* sizes = ctx.input(3) ? ctx.inputValues(3) : nullptr; sizes && !sizes->empty()) {
    if (sizes->size() == x->size()) ctx.setOutputDims(0, *sizes);
    return;
  }
  const Tensor* scales = ctx.inputTensor(2);
  if (!scales || scales->numElements() != int64_t(x->size()) || !isFloat(scales->dtype())) return;
  const std::vector<double> s = scales->toDoubles();
  Exprs out;
  for (size_t d = 0; d < x->size(); ++d) {
    std::optional<DimExpr> e = scaledDim((*x)[d], s[d]);
    if (!e) return;
    out.push_back(*e);
  }
  ctx.setOutputDims(0, out);
}

bool isWindowed(Op op) {
  return op == Op::Conv || op == Op::ConvInteger || op == Op::MaxPool || op == Op::AveragePool || op == Op::LpPool ||
         op == Op::KilnConvNCHWc;
}

}  // namespace

void applyShapeRule(RuleContext& ctx) {
  const Node& n = ctx.node();
  const Op op = n.op();
  if (isWindowed(op)) windowDims(ctx);
  else if (op == Op::GlobalAveragePool || op == Op::GlobalMaxPool || op == Op::GlobalLpPool) globalPoolDims(ctx);
  else if (op == Op::BatchNormalization || op == Op::Softmax || op == Op::LogSoftmax || op == Op::Hardmax ||
           op == Op::LayerNormalization || op == Op::InstanceNormalization || op == Op::LRN ||
           op == Op::KilnFastSoftmax)
    sameAsInput0(ctx, 1);
  else if (op == Op::Expand) expandDims(ctx);
  else if (n.schema().pattern == FusionPattern::Elementwise) sameAsInput0(ctx, n.numOutputs());
  else if (n.schema().pattern == FusionPattern::Broadcast) broadcastInputs(ctx);
  else {
    switch (op) {
      case Op::MatMul: matmulDims(ctx); break;
      case Op::Gemm: gemmDims(ctx); break;
      case Op::KilnDense: denseDims(ctx); break;
      case Op::Transpose: transposeDims(ctx); break;
      case Op::Reshape: reshapeDims(ctx); break;
      case Op::Flatten: flattenDims(ctx); break;
      case Op::Squeeze: squeezeDims(ctx, false); break;
      case Op::Unsqueeze: squeezeDims(ctx, true); break;
      case Op::Concat: concatDims(ctx); break;
      case Op::Slice: sliceDims(ctx); break;
      case Op::Gather: gatherDims(ctx); break;
      case Op::ArgMax: case Op::ArgMin:
      case Op::ReduceL1: case Op::ReduceL2: case Op::ReduceLogSum: case Op::ReduceLogSumExp:
      case Op::ReduceMax: case Op::ReduceMean: case Op::ReduceMin: case Op::ReduceProd:
      case Op::ReduceSum: case Op::ReduceSumSquare: case Op::KilnReduceMax: case Op::KilnReduceMin:
      case Op::KilnReduceProd: reduceDims(ctx); break;
      case Op::ConstantOfShape: constantOfShapeDims(ctx); break;
      case Op::Range: rangeDims(ctx); break;
      case Op::Pad: padDims(ctx); break;
      case Op::Tile: tileDims(ctx); break;
      case Op::Split: splitDims(ctx); break;
      case Op::Resize: resizeDims(ctx); break;
      case Op::Identity: sameAsInput0(ctx, 1); break;
      default: break;
    }
  }
}

}  // namespace kiln::ir::symbolic
