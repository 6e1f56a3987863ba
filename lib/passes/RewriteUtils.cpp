//===- lib/passes/RewriteUtils.cpp - Small helpers every rewrite needs -----===//
//
// See RewriteUtils.h.
//
//===----------------------------------------------------------------------===//
#include "RewriteUtils.h"

#include <algorithm>
#include <cstring>

#include "kiln/ir/ShapeInference.h"

namespace kiln::passes {

std::string nameBase(const ir::Node& node) {
  if (!node.name().empty()) return node.name();
  return node.numOutputs() ? node.output(0)->name() : node.opType();
}

bool anyNode(const ir::Graph& graph, const std::function<bool(const ir::Node&)>& pred) {
  for (const ir::Node* n : graph.nodes()) {
    if (pred(*n)) return true;
    for (const ir::Graph* sub : n->subgraphs())
      if (anyNode(*sub, pred)) return true;
  }
  return false;
}

Expected<bool> rewriteGraphs(ir::Graph& graph, const std::function<Expected<bool>(ir::Graph&)>& rewrite) {
  bool changed = false;
  for (ir::Node* n : graph.nodes())
    for (ir::Graph* sub : n->subgraphs()) {
      KILN_ASSIGN(bool c, rewriteGraphs(*sub, rewrite));
      changed |= c;
    }
  KILN_ASSIGN(bool c, rewrite(graph));
  return changed || c;
}

std::vector<ir::Value*> definedValues(const ir::Graph& graph) {
  std::vector<ir::Value*> values(graph.inputs().begin(), graph.inputs().end());
  for (ir::Node* n : graph.nodes())
    for (ir::Value* r : n->outputs()) values.push_back(r);
  return values;
}

std::string foldedName(const std::string& name) {
  size_t pos = name.rfind("_folded");  // also "x_folded_2", made unique earlier
  return (pos == std::string::npos ? name : name.substr(0, pos)) + "_folded";
}

bool attributesEqual(const ir::Attribute& a, const ir::Attribute& b) {
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case ir::AttrKind::Int: return a.i() == b.i();
    case ir::AttrKind::Float: return a.f() == b.f() || (a.f() != a.f() && b.f() != b.f());
    case ir::AttrKind::String: return a.s() == b.s();
    case ir::AttrKind::Tensor: return a.t().bitwiseEqual(b.t());
    case ir::AttrKind::Ints: return a.ints() == b.ints();
    case ir::AttrKind::Floats: return a.floats() == b.floats();
    case ir::AttrKind::Strings: return a.strings() == b.strings();
    case ir::AttrKind::Tensors: {
      if (a.tensors().size() != b.tensors().size()) return false;
      for (size_t i = 0; i < a.tensors().size(); ++i)
        if (!a.tensors()[i].bitwiseEqual(b.tensors()[i])) return false;
      return true;
    }
    case ir::AttrKind::Graph:
    case ir::AttrKind::Graphs: return false;
  }
  return false;
}

const Tensor* constantValue(const ir::Value* v) {
  const ir::Node* p = v ? v->producer() : nullptr;
  // Exporters spell a repeated initializer as Identity(first one): the same value.
  while (isOp(p, ir::Op::Identity) && p->input(0)) p = p->input(0)->producer();
  if (!isOp(p, ir::Op::Constant) || !p->hasAttr("value")) return nullptr;
  return &p->getTensor("value");
}

ir::Value* makeConstant(ir::Graph& graph, Tensor value, const std::string& base, ir::Node* before) {
  std::string name = graph.uniqueValueName(base);
  ir::Node* n = graph.createNode(ir::opSchema("Constant"), {}, std::vector<std::string>{name}, "", before);
  ir::Type type = ir::TensorType::of(value);
  n->setAttr("value", ir::Attribute(std::move(value)));
  n->output(0)->setType(std::move(type));
  return n->output(0);
}

bool isConstantFilledWith(const ir::Value* v, double x) {
  const Tensor* t = constantValue(v);
  if (!t || t->numElements() == 0) return false;
  if (!isFloat(t->dtype()) && !isInteger(t->dtype())) return false;
  std::vector<double> values = t->toDoubles();
  return std::all_of(values.begin(), values.end(), [x](double e) { return e == x; });
}

std::optional<Tensor> floatConstant(const ir::Value* v) {
  const Tensor* t = constantValue(v);
  if (!t || t->dtype() != DType::F32) return std::nullopt;
  return *t;
}

Tensor transposed2d(const Tensor& t) {
  KILN_CHECK(t.rank() == 2, "transposed2d of a rank-", t.rank(), " tensor");
  int64_t rows = t.dim(0), cols = t.dim(1);
  size_t size = dtypeSize(t.dtype());
  Tensor out = Tensor::forWrite(t.dtype(), {cols, rows});
  const auto* src = static_cast<const uint8_t*>(t.rawData());
  auto* dst = static_cast<uint8_t*>(out.mutableRawData());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      std::memcpy(dst + size_t(c * rows + r) * size, src + size_t(r * cols + c) * size, size);
  return out;
}

Tensor permuted(const Tensor& t, const std::vector<int64_t>& perm) {
  KILN_CHECK(int64_t(perm.size()) == t.rank(), "permuted: perm of ", perm.size(), " for rank ", t.rank());
  const size_t rank = perm.size();
  Dims out(rank), inStrides(rank, 1), strides(rank);
  for (int64_t d = t.rank() - 2; d >= 0; --d) inStrides[size_t(d)] = inStrides[size_t(d + 1)] * t.dim(d + 1);
  for (size_t i = 0; i < rank; ++i) {
    out[i] = t.dim(perm[i]);
    strides[i] = inStrides[size_t(perm[i])];  // the source step of output dim i
  }
  Tensor result = Tensor::forWrite(t.dtype(), out);
  const auto* src = static_cast<const uint8_t*>(t.rawData());
  auto* dst = static_cast<uint8_t*>(result.mutableRawData());
  // An odometer over the output index that keeps the source offset in step
  // (weight repacking permutes every conv's weights: ResNet-50's 100 MB).
  auto copyAll = [&]<size_t kSize>() {
    std::vector<int64_t> index(rank, 0);
    int64_t offset = 0;
    for (int64_t o = 0, n = result.numElements(); o < n; ++o) {
      std::memcpy(dst + size_t(o) * kSize, src + size_t(offset) * kSize, kSize);
      for (size_t i = rank; i-- > 0;) {
        if (++index[i] < out[i]) {
          offset += strides[i];
          break;
        }
        offset -= (out[i] - 1) * strides[i];
        index[i] = 0;
      }
    }
  };
  switch (dtypeSize(t.dtype())) {
    case 1: copyAll.template operator()<1>(); break;
    case 2: copyAll.template operator()<2>(); break;
    case 4: copyAll.template operator()<4>(); break;
    case 8: copyAll.template operator()<8>(); break;
    default: KILN_CHECK(false, "permuted: element size ", dtypeSize(t.dtype()));
  }
  return result;
}

Tensor concatenated(const std::vector<const Tensor*>& parts, int64_t axis) {
  KILN_CHECK(!parts.empty(), "concatenated of nothing");
  Dims dims = parts[0]->dims();
  size_t size = dtypeSize(parts[0]->dtype());
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= dims[size_t(d)];
  for (int64_t d = axis + 1; d < int64_t(dims.size()); ++d) inner *= dims[size_t(d)];
  dims[size_t(axis)] = 0;
  for (const Tensor* p : parts) dims[size_t(axis)] += p->dim(axis);
  Tensor out = Tensor::forWrite(parts[0]->dtype(), dims);
  auto* dst = static_cast<uint8_t*>(out.mutableRawData());
  for (int64_t o = 0; o < outer; ++o)
    for (const Tensor* p : parts) {
      size_t chunk = size_t(p->dim(axis) * inner) * size;
      std::memcpy(dst, static_cast<const uint8_t*>(p->rawData()) + size_t(o) * chunk, chunk);
      dst += chunk;
    }
  return out;
}

Tensor joinedColumns(const std::vector<ColumnPart>& parts) {
  KILN_CHECK(!parts.empty(), "joinedColumns of nothing");
  const int64_t rows = parts[0].rows();
  int64_t cols = 0;
  for (const ColumnPart& p : parts) {
    KILN_CHECK(p.tensor->rank() == 2 && p.rows() == rows && p.tensor->dtype() == parts[0].tensor->dtype(),
               "joinedColumns of ", p.tensor->typeString(), " with ", parts[0].tensor->typeString());
    cols += p.cols();
  }
  Tensor out = Tensor::forWrite(parts[0].tensor->dtype(), {rows, cols});
  byElementSize(dtypeSize(out.dtype()), [&]<class U>() {
    U* dst = static_cast<U*>(out.mutableRawData());
    int64_t offset = 0;
    for (const ColumnPart& p : parts) {
      const U* src = static_cast<const U*>(p.tensor->rawData());
      const int64_t n = p.cols();
      if (!p.transposed) {
        for (int64_t r = 0; r < rows; ++r) std::memcpy(dst + r * cols + offset, src + r * n, size_t(n) * sizeof(U));
      } else {
        // Tiles of 32 x 32, so the strided side of the transpose stays in cache.
        constexpr int64_t kTile = 32;
        for (int64_t r0 = 0; r0 < rows; r0 += kTile)
          for (int64_t c0 = 0; c0 < n; c0 += kTile)
            for (int64_t c = c0; c < std::min(c0 + kTile, n); ++c)
              for (int64_t r = r0; r < std::min(r0 + kTile, rows); ++r) dst[r * cols + offset + c] = src[c * rows + r];
      }
      offset += n;
    }
  });
  return out;
}

const Tensor* transposedConstant(const ir::Value* v) {
  const ir::Node* t = v->producer();
  if (!isOp(t, ir::Op::Transpose)) return nullptr;
  const Tensor* w = constantValue(t->input(0));
  if (!w || w->rank() != 2) return nullptr;
  if (t->hasAttr("perm") && t->getInts("perm") != std::vector<int64_t>{1, 0}) return nullptr;
  return w;
}

bool isGraphOutput(const ir::Value* v) {
  return std::any_of(v->uses().begin(), v->uses().end(), [](const ir::Use& u) { return u.isGraphOutput(); });
}

ir::Node* soleUser(const ir::Value* v) {
  return v->uses().size() == 1 && !v->uses()[0].isGraphOutput() ? v->uses()[0].user : nullptr;
}

void replaceValue(ir::Value* from, ir::Value* to, bool takeName) {
  if (from == to) return;
  bool canTakeName = !to->isGraphInput() && !isGraphOutput(to) && to->graph() == from->graph();
  if (takeName && canTakeName && !isGraphOutput(from)) {
    std::string name = from->name();
    from->setName(from->graph()->uniqueValueName(name + "_replaced"));
    to->setName(name);
    from->replaceAllUsesWith(to);
    return;
  }
  if (!isGraphOutput(from)) {
    from->replaceAllUsesWith(to);
    return;
  }
  std::string name = from->name();
  ir::Graph& graph = *from->graph();
  if (to->isGraphInput() || isGraphOutput(to) || to->graph() != from->graph()) {
    // `to` must keep its own name: an Identity carries the output's name.
    from->setName(graph.uniqueValueName(name + "_replaced"));
    ir::Node* id =
        graph.createNode(ir::opSchema("Identity"), std::vector<ir::Value*>{to}, std::vector<std::string>{name});
    id->output(0)->setType(to->type());
    from->replaceAllUsesWith(id->output(0));
    // Keep the order topological: the Identity goes right after `to`'s producer.
    if (ir::Node* p = to->producer(); p && p->graph() == &graph) {
      std::vector<ir::Node*> nodes = graph.nodes();
      auto it = std::find(nodes.begin(), nodes.end(), p);
      if (it + 1 != nodes.end()) graph.moveBefore(id, *(it + 1));
    } else if (graph.firstNode() != id) {
      graph.moveBefore(id, graph.firstNode());
    }
    return;
  }
  from->setName(graph.uniqueValueName(name + "_replaced"));
  to->setName(name);
  from->replaceAllUsesWith(to);
}

std::optional<std::vector<DimExpr>> knownDims(const ir::Value* v) {
  if (!v || !v->type().isTensor()) return std::nullopt;
  return v->tensorType().dimExprs();
}

std::optional<Tensor> reshapeShape(const ir::TensorType& from, const std::vector<DimExpr>& to) {
  std::vector<int64_t> shape;
  bool inferred = false;
  for (size_t i = 0; i < to.size(); ++i) {
    if (std::optional<int64_t> c = to[i].constant()) {
      shape.push_back(*c);
    } else if (int64_t(i) < from.rank() && from.dimExpr(int64_t(i)) == to[i]) {
      shape.push_back(0);
    } else if (!inferred) {
      shape.push_back(-1);
      inferred = true;
    } else {
      return std::nullopt;
    }
  }
  return Tensor::fromVector<int64_t>({int64_t(shape.size())}, shape);
}

Expected<ir::Node*> createTypedNode(ir::Graph& graph, const std::string& op, const std::vector<ir::Value*>& inputs,
                                    const std::vector<std::pair<std::string, ir::Attribute>>& attrs,
                                    const std::string& name, ir::Node* before, size_t numOutputs) {
  size_t sep = op.find("::");  // "kiln::Gelu": a kiln-domain op
  const ir::OpSchema& schema =
      sep == std::string::npos ? ir::opSchema(op) : ir::opSchema(op.substr(sep + 2), op.substr(0, sep));
  ir::Node* n = graph.createNode(schema, inputs, numOutputs, name, before);
  for (const auto& [k, v] : attrs) n->setAttr(k, v);
  if (Status s = ir::inferNodeTypes(*n); !s.isOk())
    return Error(ErrorCode::Internal, "a pass built an ill-typed " + op + ": " + s.error().message());
  return n;
}

ir::Node* earliestNode(const std::vector<ir::Node*>& nodes) {
  KILN_CHECK(!nodes.empty(), "earliestNode of nothing");
  for (ir::Node* n : nodes.front()->graph()->nodes())
    if (std::find(nodes.begin(), nodes.end(), n) != nodes.end()) return n;
  KILN_CHECK(false, "earliestNode: nodes are not in one graph");
  return nullptr;
}

Status replaceNode(ir::Node* node, ir::Value* result, const std::string& pass) {
  ir::Value* old = node->output(0);
  if (result->type() != old->type() && old->tensorType().isStatic())
    return Error(ErrorCode::Internal, pass + " changed the type of '" + old->name() + "' from " + old->type().str() +
                                          " to " + result->type().str());
  replaceValue(old, result, true);
  eraseWithDeadProducers(node);
  return Status::ok();
}

Expected<ir::Node*> replaceWithNewNode(ir::Node* node, const std::string& op, const std::vector<ir::Value*>& inputs,
                                       const std::vector<std::pair<std::string, ir::Attribute>>& attrs,
                                       const std::string& name) {
  KILN_ASSIGN(ir::Node * created, createTypedNode(*node->graph(), op, inputs, attrs, name, node));
  replaceValue(node->output(0), created->output(0), true);
  eraseWithDeadProducers(node);
  return created;
}

void eraseWithDeadProducers(ir::Node* node, std::vector<const ir::Node*>* erased) {
  std::vector<ir::Node*> work{node};
  while (!work.empty()) {
    ir::Node* n = work.back();
    work.pop_back();
    bool used = false;
    for (ir::Value* r : n->outputs()) used |= r->hasUses();
    if (used) continue;
    std::vector<ir::Node*> producers;
    for (ir::Value* in : n->inputs())
      if (in && in->producer() && in->producer()->graph() == n->graph()) producers.push_back(in->producer());
    n->graph()->eraseNode(n);
    if (erased) erased->push_back(n);
    for (ir::Node* p : producers)
      if (std::find(work.begin(), work.end(), p) == work.end()) work.push_back(p);
  }
}

}  // namespace kiln::passes
