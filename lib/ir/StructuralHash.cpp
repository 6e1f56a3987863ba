//===- lib/ir/StructuralHash.cpp - Merkle hashing of dataflow graphs -------===//
//
// Each value's hash is derived from its producer's op, attributes and operand
// hashes (Merkle style), so hashes do not depend on names or on the order of
// independent nodes. A graph's hash combines its input types, its ordered
// output hashes and an order-independent sum over all node hashes.
//
//===----------------------------------------------------------------------===//
#include "kiln/ir/StructuralHash.h"

#include <cstring>
#include <unordered_map>

#include "kiln/ir/OpSchema.h"
#include "kiln/support/Hash.h"

namespace kiln::ir {
namespace {

class Hasher {
 public:
  uint64_t graph(const Graph& g) {
    uint64_t h = hashString("graph");
    for (size_t i = 0; i < g.inputs().size(); ++i) {
      Value* in = g.inputs()[i];
      uint64_t vh = hashCombine(hashCombine(hashString("input"), i), type(in->type()));
      values_[in] = vh;
      h = hashCombine(h, vh);
    }
    uint64_t nodesSum = 0;
    for (Node* n : g.nodes()) nodesSum += node(*n);
    h = hashCombine(h, nodesSum);
    for (Value* out : g.outputs()) h = hashCombine(h, valueHash(out));
    return h;
  }

 private:
  uint64_t valueHash(const Value* v) {
    auto it = values_.find(v);
    return it == values_.end() ? hashString(v->name()) : it->second;  // unreachable for verified IR
  }

  uint64_t type(const Type& t) { return hashString(t.str()); }

  uint64_t node(const Node& n) {
    uint64_t h = hashString(n.qualifiedOpType());
    for (size_t i = 0; i < n.numInputs(); ++i)
      h = hashCombine(h, n.input(i) ? valueHash(n.input(i)) : hashString("none"));
    for (const auto& [name, a] : n.attributes()) h = hashCombine(hashCombine(h, hashString(name)), attribute(a));
    h = hashCombine(h, n.numOutputs());
    for (size_t i = 0; i < n.numOutputs(); ++i) {
      uint64_t vh = hashCombine(hashCombine(h, i), type(n.output(i)->type()));
      values_[n.output(i)] = vh;
      h = hashCombine(h, vh);
    }
    return h;
  }

  uint64_t attribute(const Attribute& a) {
    uint64_t h = uint64_t(a.kind()) + 1;
    auto floatBits = [](float f) {
      uint32_t b;
      std::memcpy(&b, &f, 4);
      return uint64_t(b);
    };
    switch (a.kind()) {
      case AttrKind::Int: return hashCombine(h, uint64_t(a.i()));
      case AttrKind::Float: return hashCombine(h, floatBits(a.f()));
      case AttrKind::String: return hashCombine(h, hashString(a.s()));
      case AttrKind::Tensor: return hashCombine(h, a.t().contentHash());
      case AttrKind::Graph: return hashCombine(h, graph(*a.g()));
      case AttrKind::Ints:
        for (int64_t v : a.ints()) h = hashCombine(h, uint64_t(v));
        return hashCombine(h, a.ints().size());
      case AttrKind::Floats:
        for (float v : a.floats()) h = hashCombine(h, floatBits(v));
        return hashCombine(h, a.floats().size());
      case AttrKind::Strings:
        for (const auto& v : a.strings()) h = hashCombine(h, hashString(v));
        return hashCombine(h, a.strings().size());
      case AttrKind::Tensors:
        for (const auto& v : a.tensors()) h = hashCombine(h, v.contentHash());
        return hashCombine(h, a.tensors().size());
      case AttrKind::Graphs:
        for (const auto& g : a.graphs()) h = hashCombine(h, graph(*g));
        return hashCombine(h, a.graphs().size());
    }
    return h;
  }

  std::unordered_map<const Value*, uint64_t> values_;
};

}  // namespace

uint64_t structuralHash(const Graph& graph) {
  Hasher h;
  return h.graph(graph);
}

std::string structuralHashHex(const Graph& graph) {
  static const char* kHex = "0123456789abcdef";
  uint64_t h = structuralHash(graph);
  std::string s(16, '0');
  for (int i = 15; i >= 0; --i, h >>= 4) s[size_t(i)] = kHex[h & 15];
  return s;
}

}  // namespace kiln::ir
