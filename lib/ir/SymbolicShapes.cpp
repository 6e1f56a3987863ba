//===- lib/ir/SymbolicShapes.cpp - Symbolic refinement of inferred types ---===//
//
// RuleContext (SymbolicShapes.h) and the step the inference driver runs after
// each node's static rule: pick the node's symbolic rule, then keep what it
// derived (result dims in the result types, dim values in the driver's maps).
//
//===----------------------------------------------------------------------===//
#include "SymbolicShapes.h"

namespace kiln::ir::symbolic {

const Tensor* lookupKnown(const Value* v, const KnownValues& known) {
  if (!v) return nullptr;
  if (Node* p = v->producer(); p && p->op() == Op::Constant && p->hasAttr("value")) return &p->getTensor("value");
  auto it = known.find(v);
  return it == known.end() ? nullptr : &it->second;
}

std::optional<std::vector<int64_t>> constantValues(const DimValues& values) {
  std::vector<int64_t> out;
  for (const DimExpr& e : values) {
    std::optional<int64_t> c = e.constant();
    if (!c) return std::nullopt;
    out.push_back(*c);
  }
  return out;
}

RuleContext::RuleContext(const Node& node, std::vector<std::optional<Type>>& results, const KnownValues& known,
                         const KnownDimValues& dimValues, const SymbolRanges& ranges)
    : node_(node), results_(results), known_(known), dimValues_(dimValues), ranges_(ranges) {}

const TensorType* RuleContext::input(size_t i) const {
  if (i >= node_.numInputs() || !node_.input(i) || !node_.input(i)->type().isTensor()) return nullptr;
  return &node_.input(i)->tensorType();
}

std::optional<std::vector<DimExpr>> RuleContext::inputDims(size_t i) const {
  const TensorType* t = input(i);
  return t ? t->dimExprs() : std::nullopt;
}

const DimValues* RuleContext::inputValues(size_t i) const {
  if (!input(i)) return nullptr;
  const Value* v = node_.input(i);
  if (auto it = dimValues_.find(v); it != dimValues_.end()) return &it->second;
  if (auto it = constantValues_.find(i); it != constantValues_.end()) return &it->second;
  const Tensor* t = inputTensor(i);
  if (!t || !isInteger(t->dtype()) || size_t(t->numElements()) > kMaxDimValues) return nullptr;
  DimValues values;
  for (int64_t x : t->toInt64s()) values.emplace_back(x);
  return &(constantValues_[i] = std::move(values));
}

const Tensor* RuleContext::inputTensor(size_t i) const { return input(i) ? lookupKnown(node_.input(i), known_) : nullptr; }

std::optional<std::vector<int64_t>> RuleContext::inputInts(size_t i) const {
  const DimValues* values = inputValues(i);
  return values ? constantValues(*values) : std::nullopt;
}

const TensorType* RuleContext::output(size_t i) const {
  if (i >= results_.size() || !results_[i] || !results_[i]->isTensor()) return nullptr;
  return &results_[i]->tensor();
}

void RuleContext::setSomeOutputDims(size_t i, const std::vector<std::optional<DimExpr>>& dims) {
  const TensorType* before = output(i);
  if (!before) return;
  const bool sameRank = before->hasRank() && before->rank() == int64_t(dims.size());
  TensorType t(before->dtype(), Dims(dims.size(), kUnknownDim));
  for (size_t d = 0; d < dims.size(); ++d) {
    if (sameRank && before->dimExpr(int64_t(d))) t.setDimExpr(int64_t(d), *before->dimExpr(int64_t(d)));
    if (sameRank && before->dim(int64_t(d)) >= 0) continue;  // the static rule's value stands
    if (dims[d]) t.setDimExpr(int64_t(d), *dims[d]);
  }
  results_[i] = Type(std::move(t));
}

void RuleContext::setOutputDims(size_t i, const std::vector<DimExpr>& dims) {
  setSomeOutputDims(i, std::vector<std::optional<DimExpr>>(dims.begin(), dims.end()));
}

DimExpr RuleContext::min(const DimExpr& a, const DimExpr& b) const {
  if (std::optional<std::pair<int64_t, int64_t>> diff = (a - b).bounds(ranges_)) {
    if (diff->second <= 0) return a;
    if (diff->first >= 0) return b;
  }
  return DimExpr::min(a, b);
}

DimExpr RuleContext::max(const DimExpr& a, const DimExpr& b) const {
  if (std::optional<std::pair<int64_t, int64_t>> diff = (a - b).bounds(ranges_)) {
    if (diff->first >= 0) return a;
    if (diff->second <= 0) return b;
  }
  return DimExpr::max(a, b);
}

void RuleContext::setOutputValues(size_t i, DimValues values) {
  if (values.size() <= kMaxDimValues) outputValues_[i] = std::move(values);
}

bool needsSymbolicRule(const Node& node, const KnownDimValues& dimValues) {
  for (size_t i = 0; i < node.numInputs(); ++i) {
    const Value* v = node.input(i);
    if (!v) continue;
    if (v->type().isTensor() && v->tensorType().hasSymbolicDims()) return true;
    if (dimValues.count(v)) return true;
  }
  return false;
}

namespace {

/// The values as a tensor of result i's type, when they are all constant and
/// the type is static with as many elements.
std::optional<Tensor> constantTensor(const TensorType* type, const DimValues& values) {
  if (!type || !type->isStatic() || !isInteger(type->dtype()) || *type->numElements() != int64_t(values.size()))
    return std::nullopt;
  std::optional<std::vector<int64_t>> ints = constantValues(values);
  if (!ints) return std::nullopt;
  return Tensor::fromVector<int64_t>(type->dims(), *ints).castTo(type->dtype());
}

}  // namespace

void refine(const Node& node, std::vector<std::optional<Type>>& results, KnownValues& known,
            KnownDimValues& dimValues, const SymbolRanges& ranges) {
  if (!needsSymbolicRule(node, dimValues)) return;
  RuleContext ctx(node, results, known, dimValues, ranges);
  applyShapeRule(ctx);
  applyValueRule(ctx);
  for (const auto& [i, values] : ctx.outputValues()) {
    const Value* out = node.output(i);
    if (std::optional<Tensor> t = constantTensor(ctx.output(i), values)) known[out] = std::move(*t);
    else dimValues[out] = values;
  }
}

std::vector<std::optional<DimExpr>> broadcastDimByDim(const std::vector<std::optional<DimExpr>>& a,
                                                      const std::vector<std::optional<DimExpr>>& b) {
  const size_t rank = std::max(a.size(), b.size());
  const std::optional<DimExpr> one = DimExpr(1);
  std::vector<std::optional<DimExpr>> out(rank);
  for (size_t k = 0; k < rank; ++k) {
    const std::optional<DimExpr>& x = k < rank - a.size() ? one : a[k - (rank - a.size())];
    const std::optional<DimExpr>& y = k < rank - b.size() ? one : b[k - (rank - b.size())];
    if (!x || !y) continue;  // against an unknown dim: the static rule's result stands
    if (*x == *y || y == one) {
      out[k] = x;
    } else if (x == one) {
      out[k] = y;
    } else if (x->constant()) {
      out[k] = x;  // a symbolic dim broadcast against n is n (from 1, or an error at run time)
    } else if (y->constant()) {
      out[k] = y;
    }
  }
  return out;
}

std::optional<std::vector<DimExpr>> broadcastExprs(const std::vector<DimExpr>& a, const std::vector<DimExpr>& b) {
  std::vector<DimExpr> out;
  for (const std::optional<DimExpr>& d : broadcastDimByDim({a.begin(), a.end()}, {b.begin(), b.end()})) {
    if (!d) return std::nullopt;
    out.push_back(*d);
  }
  return out;
}

}  // namespace kiln::ir::symbolic
