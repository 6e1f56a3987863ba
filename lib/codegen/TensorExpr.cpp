//===- lib/codegen/TensorExpr.cpp - ElementBuilder plumbing ---------------===//
//
// Index helpers, buffer parameters for values read from memory, the
// expression cache and output stores. The per-op element formulas are in
// ElementOps.cpp.
//
//===----------------------------------------------------------------------===//
#include "TensorExpr.h"

#include <algorithm>
#include <set>

#include "kiln/ir/Node.h"

namespace kiln::codegen {

Expected<Dims> staticDims(const ir::Value* v) {
  if (!v->type().isTensor()) {
    Error e = makeError(ErrorCode::CodegenUnsupported, "value '", v->name(), "' is a ", v->type().str(),
                        "; compiled models take and return tensors only");
    if (v->producer()) e.atNode(v->producer()->displayName(), v->producer()->opType());
    return e;
  }
  if (v->tensorType().hasRank() && v->tensorType().hasSymbolicDims()) {
    Error e = makeError(ErrorCode::CodegenUnsupported, "value '", v->name(), "' has dynamic dims (",
                        v->type().str(), "), which this kernel's schedule template does not take yet; "
                        "compile for one shape with --shape");
    if (v->producer()) e.atNode(v->producer()->displayName(), v->producer()->opType());
    return e;
  }
  if (!v->type().isTensor() || !v->tensorType().hasRank() || !v->tensorType().isStatic()) {
    Error e = makeError(ErrorCode::CodegenUnsupported, "value '", v->name(),
                        "' has no static shape; bind input dims with --shape");
    if (v->producer()) e.atNode(v->producer()->displayName(), v->producer()->opType());
    return e;
  }
  return v->tensorType().dims();
}

Expected<Dims> elementDims(const ir::Value* v) {
  if (!hasDynamicDims(v)) return staticDims(v);
  const ir::TensorType& t = v->tensorType();
  for (int64_t i = 0; i < t.rank(); ++i)
    if (t.dims()[size_t(i)] == ir::kUnknownDim && !t.dimExpr(i)) return staticDims(v);  // partly unknown
  return t.dims();
}

bool hasDynamicDims(const ir::Value* v) { return v->type().isTensor() && v->tensorType().hasSymbolicDims(); }

bool hasDynamicDims(const KernelGroup& g) {
  for (const ir::Value* v : g.inputs)
    if (hasDynamicDims(v)) return true;
  for (const ir::Node* n : g.nodes)
    for (const ir::Value* v : n->outputs())
      if (hasDynamicDims(v)) return true;
  return false;
}

Expected<Dims> dimsAt(const ir::Value* v, const ir::DimRanges* ranges, DimPoint point) {
  if (!hasDynamicDims(v)) return staticDims(v);
  KILN_ASSIGN(Dims dims, elementDims(v));
  std::map<std::string, int64_t> opt;
  std::map<std::string, std::pair<int64_t, int64_t>> bounds;
  if (ranges)
    for (const auto& [symbol, r] : *ranges) opt[symbol] = r.opt, bounds[symbol] = {r.min, r.max};
  for (int64_t i = 0; i < int64_t(dims.size()); ++i) {
    std::optional<DimExpr> e = v->tensorType().dimExpr(i);
    if (!e) continue;
    std::optional<int64_t> value;
    if (point == DimPoint::Opt) {
      if (Expected<int64_t> x = e->evaluate(opt)) value = *x;
    } else if (auto b = e->bounds(bounds)) {
      value = std::max<int64_t>(point == DimPoint::Min ? b->first : b->second, 0);
    }
    if (!value) {
      Error err = makeError(ErrorCode::CodegenUnsupported, "dim ", i, " of value '", v->name(), "' (", e->str(),
                            ") has no ", point == DimPoint::Opt ? "value" : "bound", " under the given shape ranges");
      if (v->producer()) err.atNode(v->producer()->displayName(), v->producer()->opType());
      return err;
    }
    dims[size_t(i)] = *value;
  }
  return dims;
}

Expected<ScalarType> valueScalarType(const ir::Value* v) {
  if (!v->type().isTensor()) return makeError(ErrorCode::CodegenUnsupported, "value '", v->name(), "' is not a tensor");
  return scalarTypeOf(v->tensorType().dtype());
}

namespace {

/// Constant dims as expressions (the builders fold them, so the index trees are those of int64 arithmetic).
ExprDims constantDims(const Dims& dims) {
  ExprDims out;
  for (int64_t d : dims) out.push_back(intImm(d));
  return out;
}

}  // namespace

Expr flatIndex(const Index& idx, const Dims& dims) { return flatIndex(idx, constantDims(dims)); }

Index unflatten(const Expr& flat, const Dims& dims) { return unflatten(flat, constantDims(dims)); }

Expr flatIndex(const Index& idx, const ExprDims& dims) {
  Expr flat = intImm(0);
  for (size_t i = 0; i < idx.size(); ++i) flat = flat * dims[i] + idx[i];
  return flat;
}

Index unflatten(const Expr& flat, const ExprDims& dims) {
  Index idx(dims.size());
  Expr stride = intImm(1);
  for (size_t i = dims.size(); i-- > 0;) {
    int64_t s = 0;
    const bool unit = isIntConstant(stride, &s) && s == 1;
    Expr q = unit ? flat : binary(BinaryOp::FloorDiv, flat, stride);
    idx[i] = i == 0 ? q : binary(BinaryOp::FloorMod, q, dims[i]);
    stride = stride * dims[i];
  }
  return idx;
}

Expr productOf(const ExprDims& dims, size_t begin, size_t end) {
  Expr p = intImm(1);
  for (size_t i = begin; i < std::min(end, dims.size()); ++i) p = p * dims[i];
  return p;
}

Index indexOf(const std::vector<Var>& vars) {
  Index idx;
  for (const Var& v : vars) idx.push_back(varRef(v));
  return idx;
}

Expr scalarConstant(ScalarType t, const Tensor& value) {
  if (isInteger(value.dtype()) && !isFloatType(t) && t != ScalarType::Bool) return intImm(value.toInt64s()[0], t);
  return constantOf(t, value.scalarAsDouble());
}

Expr clampIndex(const Expr& i, int64_t extent) {
  if (int64_t c; isIntConstant(i, &c)) return intImm(std::clamp<int64_t>(c, 0, extent - 1));
  return minOf(maxOf(i, intImm(0)), intImm(extent - 1));
}

Expr clampIndex(const Expr& i, const Expr& extent) {
  if (int64_t e; isIntConstant(extent, &e)) return clampIndex(i, e);
  return minOf(maxOf(i, intImm(0)), extent - intImm(1));
}

std::string identifierOf(const std::string& name) {
  std::string s;
  for (char c : name) s += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) s = "v" + s;
  return s.size() > 40 ? s.substr(0, 40) : s;
}

/// The names templates give kernel-local buffers (acc, shared tiles,
/// fragments, register tiles, argmax state, softmax's row state): parameters never take them.
const std::set<std::string>& localBufferNames() {
  static const std::set<std::string> names{"acc", "As", "Bs", "af", "bf", "regA", "regB", "best", "at", "exps", "rowmax", "rowsum", "rowsq"};
  return names;
}

std::string ElementBuilder::uniqueParamName(std::string name) const {
  auto taken = [&](const std::string& n) {
    if (localBufferNames().count(n)) return true;
    for (const Buffer& b : params_)
      if (b->name == n) return true;
    return false;
  };
  const std::string base = name;
  for (size_t i = params_.size(); taken(name); ++i) name = base + "_" + std::to_string(i);
  return name;
}

bool ElementBuilder::inGroup(const ir::Node* n) const {
  return n && std::find(group_.nodes.begin(), group_.nodes.end(), n) != group_.nodes.end();
}

Expected<Buffer> ElementBuilder::bufferFor(const ir::Value* v) {
  if (auto it = buffers_.find(v); it != buffers_.end()) return it->second;
  KILN_ASSIGN(Dims dims, dimsAt(v, group_.dimRanges, DimPoint::Max));
  KILN_ASSIGN(ScalarType type, valueScalarType(v));
  int64_t size = 1;
  for (int64_t d : dims) size *= d;
  Buffer b = makeBuffer(uniqueParamName(identifierOf(v->name())), type, MemoryScope::Global, std::max<int64_t>(size, 1));
  buffers_[v] = b;
  params_.push_back(b);
  paramValues_.push_back(v);
  return b;
}

Expected<Buffer> ElementBuilder::packedBuffer(const ir::Value* v, const PackSpec& pack, int64_t size) {
  KILN_ASSIGN(ScalarType type, valueScalarType(v));
  Buffer b = makeBuffer(uniqueParamName(identifierOf(v->name()) + "_packed"), type, MemoryScope::Global, size);
  params_.push_back(b);
  paramValues_.push_back(v);
  packs_.resize(params_.size());
  packs_.back() = pack;
  return b;
}

Buffer ElementBuilder::tableBuffer(const std::string& name, Tensor data) {
  Buffer b = makeBuffer(uniqueParamName(name), *scalarTypeOf(data.dtype()), MemoryScope::Global,
                        std::max<int64_t>(data.numElements(), 1));
  params_.push_back(b);
  paramValues_.push_back(nullptr);
  packs_.resize(params_.size());
  packs_.back().kind = "table";
  packs_.back().table = std::move(data);
  return b;
}

Buffer ElementBuilder::workspace(const std::string& name, ScalarType type, int64_t size) {
  Buffer b = makeBuffer(uniqueParamName(name), type, MemoryScope::Global, std::max<int64_t>(size, 1));
  params_.push_back(b);
  paramValues_.push_back(nullptr);
  return b;
}

Expected<Expr> ElementBuilder::at(const ir::Value* v, const Index& idx) {
  std::pair<const ir::Value*, std::vector<const ExprNode*>> key{v, {}};
  for (const Expr& e : idx) key.second.push_back(e.get());
  if (auto it = cache_.find(key); it != cache_.end()) return it->second.second;
  Expr result;
  if (auto s = sources_.find(v); s != sources_.end()) {
    result = s->second(idx);
  } else if (!inGroup(v->producer())) {
    const ir::Node* p = v->producer();
    if (p && p->op() == ir::Op::Constant && p->hasAttr("value") &&
        p->getTensor("value").numElements() == 1 && p->getTensor("value").dtype() != DType::Undefined) {
      KILN_ASSIGN(ScalarType t, valueScalarType(v));
      result = scalarConstant(t, p->getTensor("value"));
    } else {
      KILN_ASSIGN(Buffer b, bufferFor(v));
      KILN_ASSIGN(ExprDims d, dims(v));
      result = cast(computeType(b->type), load(b, flatIndex(idx, d)));
    }
  } else {
    KILN_ASSIGN(result, compute(*v->producer(), v->index(), idx));
  }
  cache_[key] = {idx, result};
  return result;
}

Expected<Expr> ElementBuilder::atFlat(const ir::Value* v, const Expr& flat) {
  KILN_ASSIGN(ExprDims d, dims(v));
  const ir::Node* p = v->producer();
  bool constantScalar = p && p->op() == ir::Op::Constant && p->hasAttr("value") && p->getTensor("value").numElements() == 1;
  if (sources_.count(v) || inGroup(p) || constantScalar) return at(v, unflatten(flat, d));
  KILN_ASSIGN(Buffer b, bufferFor(v));
  return cast(computeType(b->type), load(b, flat));
}

Expected<std::vector<Stmt>> ElementBuilder::storeOutputs(const std::vector<ir::Value*>& values, const Index& idx) {
  std::vector<Stmt> stores;
  for (const ir::Value* v : values) {
    KILN_ASSIGN(Expr e, at(v, idx));
    KILN_ASSIGN(Buffer b, bufferFor(v));
    KILN_ASSIGN(ExprDims d, dims(v));
    stores.push_back(store(b, flatIndex(idx, d), e));
  }
  return stores;
}

Expected<ExprDims> ElementBuilder::dims(const ir::Value* v) {
  KILN_ASSIGN(Dims d, elementDims(v));
  ExprDims out;
  for (size_t i = 0; i < d.size(); ++i) {
    if (d[i] != ir::kUnknownDim) {
      out.push_back(intImm(d[i]));
      continue;
    }
    KILN_ASSIGN(Expr e, extent(*v->tensorType().dimExpr(int64_t(i))));
    out.push_back(e);
  }
  return out;
}

Expected<Expr> ElementBuilder::extent(const DimExpr& d) {
  auto symbolExtent = [&](const std::string& symbol) -> Expected<Expr> {
    for (const auto& [name, e] : extents_)
      if (name == symbol) return varRef(e.var);
    auto r = group_.dimRanges ? group_.dimRanges->find(symbol) : ir::DimRanges::const_iterator();
    if (!group_.dimRanges || r == group_.dimRanges->end())
      return makeError(ErrorCode::CodegenUnsupported, "dynamic dim '", symbol, "' has no shape range");
    extents_.push_back({symbol, RunTimeExtent{makeVar("dim_" + identifierOf(symbol)), r->second.max}});
    return varRef(extents_.back().second.var);
  };
  Expr sum = intImm(0);
  for (const auto& [coefficient, factors] : d.terms()) {
    Expr term = intImm(coefficient);
    for (const DimExpr::Factor& f : factors) {
      Expr x;
      if (f.kind == DimExpr::Factor::Kind::Symbol) {
        KILN_ASSIGN(x, symbolExtent(f.name));
      } else {
        KILN_ASSIGN(Expr a, extent(f.operands[0]));
        if (f.kind == DimExpr::Factor::Kind::FloorDiv) {
          x = floorDiv(a, f.divisor);
        } else {
          KILN_ASSIGN(Expr b, extent(f.operands[1]));
          x = binary(f.kind == DimExpr::Factor::Kind::Min ? BinaryOp::Min : BinaryOp::Max, a, b);
        }
      }
      term = term * x;
    }
    sum = sum + term;
  }
  return sum;
}

}  // namespace kiln::codegen
