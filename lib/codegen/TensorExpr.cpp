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
  if (!v->type().isTensor() || !v->tensorType().hasRank() || !v->tensorType().isStatic()) {
    Error e = makeError(ErrorCode::CodegenUnsupported, "value '", v->name(),
                        "' has no static shape; bind input dims with --shape");
    if (v->producer()) e.atNode(v->producer()->displayName(), v->producer()->opType());
    return e;
  }
  return v->tensorType().dims();
}

Expected<ScalarType> valueScalarType(const ir::Value* v) {
  if (!v->type().isTensor()) return makeError(ErrorCode::CodegenUnsupported, "value '", v->name(), "' is not a tensor");
  return scalarTypeOf(v->tensorType().dtype());
}

Expr flatIndex(const Index& idx, const Dims& dims) {
  Expr flat = intImm(0);
  for (size_t i = 0; i < idx.size(); ++i) flat = flat * dims[i] + idx[i];
  return flat;
}

Index unflatten(const Expr& flat, const Dims& dims) {
  Index idx(dims.size());
  int64_t stride = 1;
  for (size_t i = dims.size(); i-- > 0;) {
    Expr q = stride == 1 ? flat : floorDiv(flat, stride);
    idx[i] = i == 0 ? q : floorMod(q, dims[i]);
    stride *= dims[i];
  }
  return idx;
}

Index indexOf(const std::vector<Var>& vars) {
  Index idx;
  for (const Var& v : vars) idx.push_back(varRef(v));
  return idx;
}

Expr clampIndex(const Expr& i, int64_t extent) {
  if (int64_t c; isIntConstant(i, &c)) return intImm(std::clamp<int64_t>(c, 0, extent - 1));
  return minOf(maxOf(i, intImm(0)), intImm(extent - 1));
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
  KILN_ASSIGN(Dims dims, staticDims(v));
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
      result = constantOf(t, p->getTensor("value").scalarAsDouble());
    } else {
      KILN_ASSIGN(Buffer b, bufferFor(v));
      KILN_ASSIGN(Dims dims, staticDims(v));
      result = cast(computeType(b->type), load(b, flatIndex(idx, dims)));
    }
  } else {
    KILN_ASSIGN(result, compute(*v->producer(), v->index(), idx));
  }
  cache_[key] = {idx, result};
  return result;
}

Expected<Expr> ElementBuilder::atFlat(const ir::Value* v, const Expr& flat) {
  KILN_ASSIGN(Dims dims, staticDims(v));
  const ir::Node* p = v->producer();
  bool constantScalar = p && p->op() == ir::Op::Constant && p->hasAttr("value") && p->getTensor("value").numElements() == 1;
  if (sources_.count(v) || inGroup(p) || constantScalar) return at(v, unflatten(flat, dims));
  KILN_ASSIGN(Buffer b, bufferFor(v));
  return cast(computeType(b->type), load(b, flat));
}

Expected<std::vector<Stmt>> ElementBuilder::storeOutputs(const std::vector<ir::Value*>& values, const Index& idx) {
  std::vector<Stmt> stores;
  for (const ir::Value* v : values) {
    KILN_ASSIGN(Expr e, at(v, idx));
    KILN_ASSIGN(Buffer b, bufferFor(v));
    KILN_ASSIGN(Dims dims, staticDims(v));
    stores.push_back(store(b, flatIndex(idx, dims), e));
  }
  return stores;
}

}  // namespace kiln::codegen
