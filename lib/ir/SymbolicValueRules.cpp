//===- lib/ir/SymbolicValueRules.cpp - Dim values through shape arithmetic --===//
//
// The value half of symbolic inference (SymbolicShapes.h): the elements of
// the small integer tensors that exports build shapes from (Shape, Gather,
// Concat, Slice, integer arithmetic, ...) as DimExprs. One function per op;
// each records values only when it can compute every element.
//
//===----------------------------------------------------------------------===//
#include <algorithm>

#include "SymbolicShapes.h"
#include "kiln/ir/ShapeUtils.h"

namespace kiln::ir::symbolic {
namespace {

/// ONNX's clamp of a Shape start or end to [0, rank].
int64_t clampToRank(int64_t x, int64_t rank) { return std::clamp<int64_t>(x < 0 ? x + rank : x, 0, rank); }

void shapeValues(RuleContext& ctx) {
  std::optional<std::vector<DimExpr>> dims = ctx.inputDims(0);
  if (!dims) return;
  const int64_t rank = int64_t(dims->size());
  const int64_t start = clampToRank(ctx.node().getInt("start"), rank);
  const int64_t end = ctx.node().hasAttr("end") ? clampToRank(ctx.node().getInt("end"), rank) : rank;
  if (start < end) ctx.setOutputValues(0, DimValues(dims->begin() + start, dims->begin() + end));
  else ctx.setOutputValues(0, {});
}

void sizeValues(RuleContext& ctx) {
  std::optional<std::vector<DimExpr>> dims = ctx.inputDims(0);
  if (!dims) return;
  DimExpr product(1);
  for (const DimExpr& d : *dims) product = product * d;
  ctx.setOutputValues(0, {product});
}

/// Identity, Reshape, Flatten, Squeeze, Unsqueeze and integer Casts keep the
/// elements in order.
void passValues(RuleContext& ctx) {
  if (const DimValues* v = ctx.inputValues(0)) ctx.setOutputValues(0, *v);
}

void concatValues(RuleContext& ctx) {
  DimValues out;
  for (size_t i = 0; i < ctx.numInputs(); ++i) {
    const DimValues* v = ctx.inputValues(i);
    if (!v || ctx.input(i)->rank() != 1) return;
    out.insert(out.end(), v->begin(), v->end());
  }
  ctx.setOutputValues(0, std::move(out));
}

void gatherValues(RuleContext& ctx) {
  const DimValues* data = ctx.inputValues(0);
  std::optional<std::vector<int64_t>> indices = ctx.inputInts(1);
  if (!data || !indices || ctx.input(0)->rank() != 1) return;
  const int64_t n = int64_t(data->size());
  DimValues out;
  for (int64_t i : *indices) {
    if (i < -n || i >= n) return;  // the static rule reports the bad index
    out.push_back((*data)[size_t(i < 0 ? i + n : i)]);
  }
  ctx.setOutputValues(0, std::move(out));
}

void sliceValues(RuleContext& ctx) {
  const DimValues* data = ctx.inputValues(0);
  std::optional<std::vector<int64_t>> starts = ctx.inputInts(1), ends = ctx.inputInts(2);
  std::optional<std::vector<int64_t>> axes = std::vector<int64_t>{}, steps = std::vector<int64_t>{};
  if (ctx.input(3)) axes = ctx.inputInts(3);
  if (ctx.input(4)) steps = ctx.inputInts(4);
  if (!data || !starts || !ends || !axes || !steps || ctx.input(0)->rank() != 1) return;
  Expected<std::vector<SliceDim>> sl = computeSlice({int64_t(data->size())}, *starts, *ends, *axes, *steps);
  if (!sl) return;
  DimValues out;
  for (int64_t i = 0; i < sl.value()[0].count; ++i) out.push_back((*data)[size_t(sl.value()[0].start + i * sl.value()[0].step)]);
  ctx.setOutputValues(0, std::move(out));
}

/// ONNX integer division truncates toward zero; a symbolic dividend is a dim
/// (never negative), where truncation is floor division.
std::optional<DimExpr> divide(const DimExpr& a, const DimExpr& b) {
  std::optional<int64_t> d = b.constant(), c = a.constant();
  if (!d || *d == 0) return std::nullopt;
  if (c) return DimExpr(*c / *d);
  if (*d < 0) return std::nullopt;
  return DimExpr::floorDiv(a, *d);
}

std::optional<DimExpr> combine(const RuleContext& ctx, const DimExpr& a, const DimExpr& b) {
  switch (ctx.node().op()) {
    case Op::Add: return a + b;
    case Op::Sub: return a - b;
    case Op::Mul: return a * b;
    case Op::Div: return divide(a, b);
    case Op::Min: return ctx.min(a, b);
    case Op::Max: return ctx.max(a, b);
    default: return std::nullopt;
  }
}

/// Binary integer arithmetic, with a one-element operand broadcast.
void arithmeticValues(RuleContext& ctx) {
  const DimValues* a = ctx.inputValues(0);
  const DimValues* b = ctx.numInputs() == 2 ? ctx.inputValues(1) : nullptr;
  if (!a || !b || !isInteger(ctx.input(0)->dtype())) return;
  if (a->size() != b->size() && a->size() != 1 && b->size() != 1) return;
  const size_t n = std::max(a->size(), b->size());
  DimValues out;
  for (size_t i = 0; i < n; ++i) {
    std::optional<DimExpr> e = combine(ctx, (*a)[a->size() == 1 ? 0 : i], (*b)[b->size() == 1 ? 0 : i]);
    if (!e || e->overflowed()) return;
    out.push_back(*e);
  }
  ctx.setOutputValues(0, std::move(out));
}

}  // namespace

void applyValueRule(RuleContext& ctx) {
  switch (ctx.node().op()) {
    case Op::Shape: shapeValues(ctx); return;
    case Op::Size: sizeValues(ctx); return;
    case Op::Cast:
      if (!ctx.output(0) || !isInteger(ctx.output(0)->dtype())) return;
      [[fallthrough]];
    case Op::Identity:
    case Op::Reshape:
    case Op::Flatten:
    case Op::Squeeze:
    case Op::Unsqueeze: passValues(ctx); return;
    case Op::Concat: concatValues(ctx); return;
    case Op::Gather: gatherValues(ctx); return;
    case Op::Slice: sliceValues(ctx); return;
    case Op::Add:
    case Op::Sub:
    case Op::Mul:
    case Op::Div:
    case Op::Min:
    case Op::Max: arithmeticValues(ctx); return;
    default: return;
  }
}

}  // namespace kiln::ir::symbolic
