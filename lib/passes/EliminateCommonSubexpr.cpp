//===- lib/passes/EliminateCommonSubexpr.cpp - eliminate-common-subexpr -----===//
//
// Two nodes with the same op, the same operands and equal attributes compute
// the same results; the later one is replaced by the earlier. Constants are
// compared by type and contents, so duplicated weights and the many identical
// shape constants exporters emit merge too. Random ops and nodes with
// subgraphs are never merged. Each graph (and subgraph) is handled on its
// own, in order, so chains of duplicates collapse in one run.
//
//===----------------------------------------------------------------------===//
#include <unordered_map>

#include "RewriteUtils.h"
#include "kiln/passes/PassRegistry.h"
#include "kiln/support/Hash.h"

namespace kiln::passes {
namespace {

bool mergeable(const ir::Node& n) {
  return !n.schema().nondeterministic && n.subgraphs().empty() && n.numOutputs() > 0;
}

/// A key of a constant's contents that equal contents share: its type and,
/// past 4 KiB, 64 evenly spaced 8-byte samples instead of every byte, so that
/// keying a model's weights (ResNet-50's 100 MB, after alter-op-layout's
/// repacking too; BERT-base's 414 MB) does not read them all. Equal keys are
/// then compared byte for byte (sameNode).
uint64_t contentKey(const Tensor& t) {
  constexpr size_t kWhole = 4096, kSamples = 64, kSample = 8;
  uint64_t h = hashCombine(uint64_t(t.dtype()), hashBytes(t.dims().data(), t.dims().size() * sizeof(int64_t)));
  const auto* bytes = static_cast<const uint8_t*>(t.rawData());
  const size_t size = t.byteSize();
  if (size <= kWhole) return hashCombine(h, hashBytes(bytes, size));
  for (size_t i = 0; i < kSamples; ++i) {
    size_t at = (size - kSample) / (kSamples - 1) * i;
    h = hashCombine(h, hashBytes(bytes + at, kSample));
  }
  return h;
}

uint64_t keyOf(const ir::Node& n) {
  uint64_t h = hashString(n.qualifiedOpType());
  for (const ir::Value* in : n.inputs()) h = hashCombine(h, uint64_t(reinterpret_cast<uintptr_t>(in)));
  h = hashCombine(h, n.numOutputs());
  for (const auto& [name, attr] : n.attributes()) {
    h = hashCombine(h, hashString(name));
    if (attr.kind() == ir::AttrKind::Tensor) h = hashCombine(h, contentKey(attr.t()));
  }
  return h;
}

bool sameNode(const ir::Node& a, const ir::Node& b) {
  if (&a.schema() != &b.schema() || a.inputs() != b.inputs() || a.numOutputs() != b.numOutputs()) return false;
  if (a.attributes().size() != b.attributes().size()) return false;
  for (size_t i = 0; i < a.attributes().size(); ++i) {
    const auto& [na, va] = a.attributes()[i];
    const auto& [nb, vb] = b.attributes()[i];
    if (na != nb || !attributesEqual(va, vb)) return false;
  }
  for (size_t i = 0; i < a.numOutputs(); ++i)
    if (a.output(i)->type() != b.output(i)->type()) return false;
  return true;
}

/// Visits the graph's nodes in order, calling `onDuplicate(later, earlier)`
/// for each node equal to an earlier one; stops when it returns true.
template <typename F>
void forEachDuplicate(const ir::Graph& graph, F&& onDuplicate) {
  std::unordered_multimap<uint64_t, ir::Node*> seen;
  for (ir::Node* n : graph.nodes()) {
    if (!mergeable(*n)) continue;
    uint64_t key = keyOf(*n);
    auto [lo, hi] = seen.equal_range(key);
    ir::Node* match = nullptr;
    for (auto it = lo; it != hi && !match; ++it)
      if (sameNode(*it->second, *n)) match = it->second;
    if (match) {
      if (onDuplicate(n, match)) return;
    } else {
      seen.emplace(key, n);
    }
  }
}

bool hasDuplicate(const ir::Graph& graph) {
  bool found = false;
  forEachDuplicate(graph, [&](ir::Node*, ir::Node*) { return found = true; });
  if (found) return true;
  for (const ir::Node* n : graph.nodes())
    for (const ir::Graph* sub : n->subgraphs())
      if (hasDuplicate(*sub)) return true;
  return false;
}

bool eliminate(ir::Graph& graph) {
  bool changed = false;
  for (ir::Node* n : graph.nodes())
    for (ir::Graph* sub : n->subgraphs()) changed |= eliminate(*sub);
  std::vector<std::pair<ir::Node*, ir::Node*>> merges;
  forEachDuplicate(graph, [&](ir::Node* later, ir::Node* earlier) {
    // Replace now so that users of `later` compare equal to users of `earlier`.
    for (size_t i = 0; i < later->numOutputs(); ++i) replaceValue(later->output(i), earlier->output(i));
    merges.emplace_back(later, earlier);
    return false;
  });
  for (auto& [later, earlier] : merges) {
    bool used = false;
    for (ir::Value* r : later->outputs()) used |= r->hasUses();
    if (!used) graph.eraseNode(later);
  }
  return changed || !merges.empty();
}

}  // namespace

PassInfo eliminateCommonSubexprPass() {
  PassInfo p;
  p.name = "eliminate-common-subexpr";
  p.summary = "Merge nodes that compute the same thing";
  p.description =
      "Replaces a node by an earlier one with the same op, operands and attributes (constants: same type and "
      "contents), in graph order so duplicated chains collapse in one run; recurses into subgraphs. Random ops "
      "and nodes with subgraphs are never merged. Exact.";
  p.classes = {"BL", "RN", "MN"};  // Table 4: EliminateCommonSubexpr is BL; RN; MN
  p.optLevel = 2;
  p.applicable = [](const ir::Graph& g, const PassOptions&) { return hasDuplicate(g); };
  p.run = [](ir::Graph& g, const PassOptions&, const PassContext&) -> Expected<bool> { return eliminate(g); };
  return p;
}

}  // namespace kiln::passes
