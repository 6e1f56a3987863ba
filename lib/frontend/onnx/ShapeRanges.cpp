//===- lib/frontend/onnx/ShapeRanges.cpp - Input shape ranges at import ----===//
//
// rangedInputType and checkRangeCoverage (ShapeRanges.h).
//
//===----------------------------------------------------------------------===//
#include "ShapeRanges.h"

#include "kiln/ir/ShapeUtils.h"

namespace kiln::onnx {
namespace {

Error rangeError(const std::string& message) { return Error(ErrorCode::ShapeBinding, message); }

const Dims* find(const std::map<std::string, Dims>& shapes, const std::string& name) {
  auto it = shapes.find(name);
  return it == shapes.end() ? nullptr : &it->second;
}

bool rangesName(const ImportOptions& o, const std::string& name) {
  return find(o.minShapes, name) || find(o.optShapes, name) || find(o.maxShapes, name);
}

/// The symbol a dynamic dim of input `name` is known by.
std::string dimSymbol(const std::string& name, const ir::TensorType& t, size_t axis) {
  if (axis < t.dimSymbols().size() && !t.dimSymbols()[axis].empty()) return t.dimSymbols()[axis];
  return name + "." + std::to_string(axis);
}

}  // namespace

Expected<ir::Type> rangedInputType(const std::string& name, const ir::Type& declared, const ImportOptions& options,
                                   std::map<std::string, ir::DimRange>& ranges) {
  if (!rangesName(options, name) || options.inputShapes.count(name)) return declared;
  const Dims* lo = find(options.minShapes, name);
  const Dims* hi = find(options.maxShapes, name);
  const Dims* opt = find(options.optShapes, name);
  if (!lo || !hi)
    return rangeError("input '" + name + "' has " + (lo ? "--min-shapes but no --max-shapes" : "no --min-shapes") +
                      (lo || hi ? "" : " and no --max-shapes") + "; a range needs both (--opt-shapes defaults to the max)");
  if (!opt) opt = hi;
  if (!declared.isTensor()) return rangeError("input '" + name + "' is a " + declared.str() + ", not a tensor");
  const ir::TensorType& t = declared.tensor();
  const size_t rank = t.hasRank() ? size_t(t.rank()) : lo->size();
  for (const Dims* d : {lo, opt, hi})
    if (d->size() != rank)
      return rangeError("input '" + name + "' has rank " + std::to_string(rank) + " (" + t.str() + "); a range gives " +
                        dimsToString(*d));
  std::vector<DimExpr> dims;
  for (size_t axis = 0; axis < rank; ++axis) {
    const ir::DimRange r{(*lo)[axis], (*opt)[axis], (*hi)[axis]};
    const std::string where = "input '" + name + "' dim " + std::to_string(axis);
    if (r.min > r.opt || r.opt > r.max)
      return rangeError(where + ": min " + std::to_string(r.min) + ", opt " + std::to_string(r.opt) + ", max " +
                        std::to_string(r.max) + "; a range needs min <= opt <= max");
    const int64_t fixed = t.hasRank() ? t.dim(int64_t(axis)) : ir::kUnknownDim;
    if (fixed >= 0 && (r.min != fixed || r.max != fixed))
      return rangeError(where + " is fixed at " + std::to_string(fixed) + " in the model; the range gives " + r.str());
    if (r.min == r.max) {
      dims.emplace_back(r.min);
      continue;
    }
    const std::string symbol = dimSymbol(name, t, axis);
    auto [it, added] = ranges.emplace(symbol, r);
    if (!added && it->second != r)
      return rangeError(where + " ('" + symbol + "') is given " + r.str() + ", but another input's '" + symbol +
                        "' is given " + it->second.str() + "; dims that share a name share a range");
    dims.push_back(DimExpr::symbol(symbol));
  }
  ir::TensorType ranged = ir::TensorType::ofExprs(t.dtype(), dims);
  if (t.hasRank()) ranged.setDimSymbols(t.dimSymbols());
  return ir::Type(ranged);
}

Status checkRangeCoverage(const ir::Graph& graph, const ImportOptions& options) {
  std::map<std::string, const ir::Value*> inputs;
  for (const ir::Value* v : graph.inputs()) inputs[v->name()] = v;
  for (const auto* shapes : {&options.minShapes, &options.optShapes, &options.maxShapes})
    for (const auto& [name, dims] : *shapes) {
      if (!inputs.count(name)) {
        std::string names;
        for (const auto& [n, v] : inputs) names += (names.empty() ? "" : ", ") + n;
        return rangeError("a shape range names '" + name + "', which is not a graph input (inputs: " + names + ")");
      }
      if (options.inputShapes.count(name))
        return rangeError("input '" + name + "' has both --shape and a shape range; give one");
    }
  if (options.minShapes.empty() && options.optShapes.empty() && options.maxShapes.empty()) return Status::ok();
  for (const ir::Value* v : graph.inputs()) {
    if (!v->type().isTensor()) continue;
    const ir::TensorType& t = v->tensorType();
    if (!t.hasRank())
      return rangeError("input '" + v->name() + "' has an unknown rank; give its shape with --shape or a shape range");
    for (int64_t axis = 0; axis < t.rank(); ++axis) {
      if (t.dimExpr(axis)) continue;
      const std::string symbol = dimSymbol(v->name(), t, size_t(axis));
      return rangeError("input '" + v->name() + "' dim " + std::to_string(axis) + " ('" + symbol +
                        "') is dynamic and has no range; give it one with --min-shapes/--opt-shapes/--max-shapes, "
                        "or fix it with --shape");
    }
  }
  return Status::ok();
}

}  // namespace kiln::onnx
