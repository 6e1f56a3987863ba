//===- lib/evolve/Variation.cpp - Mutation and crossover of patches --------===//
//
// See kiln/evolve/Variation.h.
//
//===----------------------------------------------------------------------===//
#include "kiln/evolve/Variation.h"

#include <algorithm>
#include <functional>
#include <unordered_map>

#include "PatchRepair.h"
#include "kiln/ir/CloneModule.h"

namespace kiln::evolve {

namespace {

bool staticTensor(const ir::Value* v) { return v && v->type().isTensor() && v->tensorType().isStatic(); }

bool isConstant(const ir::Value* v) { return !v->isGraphInput() && v->producer()->opType() == "Constant"; }

/// What an edit may name in one graph: its nodes in order and where each is.
class EditSite {
 public:
  explicit EditSite(const ir::Graph& graph) : g_(graph), nodes_(graph.nodes()) {
    for (size_t i = 0; i < nodes_.size(); ++i) position_[nodes_[i]] = i;
  }

  /// A node an edit may delete or copy: an op over static tensors, not a
  /// constant, not a repair, without subgraphs.
  bool editable(const ir::Node* n) const {
    if (n->opType() == "Constant" || !n->subgraphs().empty() || isRepairValue(*n->output(0))) return false;
    for (const ir::Value* v : n->outputs())
      if (!staticTensor(v)) return false;
    return true;
  }

  /// The nodes `pred` accepts.
  std::vector<ir::Node*> nodesWhere(const std::function<bool(const ir::Node*)>& pred) const {
    std::vector<ir::Node*> out;
    for (ir::Node* n : nodes_)
      if (pred(n)) out.push_back(n);
    return out;
  }

  /// Every operand a rewiring edit may change: a floating, non-constant
  /// tensor operand of an editable node.
  std::vector<std::pair<ir::Node*, uint32_t>> mutableOperands() const {
    std::vector<std::pair<ir::Node*, uint32_t>> out;
    for (ir::Node* n : nodes_) {
      if (!editable(n)) continue;
      for (uint32_t i = 0; i < n->numInputs(); ++i) {
        const ir::Value* v = n->input(i);
        if (staticTensor(v) && isFloat(v->tensorType().dtype()) && !isConstant(v)) out.emplace_back(n, i);
      }
    }
    return out;
  }

  /// A value computed before `place` (not a constant: weights are not
  /// activations) of `type`'s element type, other than `exclude`, half the
  /// time of its very shape when there is one; null when none.
  const ir::Value* valueFor(const ir::Node* place, const ir::TensorType& type, const ir::Value* exclude,
                            std::mt19937_64& rng) const {
    std::vector<const ir::Value*> sameType, sameShape;
    auto consider = [&](const ir::Value* v) {
      if (v == exclude || !staticTensor(v) || isConstant(v) || isRepairValue(*v) || v->tensorType().dtype() != type.dtype())
        return;
      sameType.push_back(v);
      if (v->tensorType().dims() == type.dims()) sameShape.push_back(v);
    };
    for (const ir::Value* v : g_.inputs()) consider(v);
    for (size_t i = 0; i < position_.at(place); ++i)
      for (const ir::Value* v : nodes_[i]->outputs()) consider(v);
    const auto& pool = !sameShape.empty() && std::bernoulli_distribution(0.5)(rng) ? sameShape : sameType;
    return pool.empty() ? nullptr : pool[std::uniform_int_distribution<size_t>(0, pool.size() - 1)(rng)];
  }

  bool taken(const std::string& name) const { return g_.isValueNameTaken(name); }

  bool before(const ir::Value* v, const ir::Node* place) const {
    return v->isGraphInput() || position_.at(v->producer()) < position_.at(place);
  }

 private:
  const ir::Graph& g_;
  std::vector<ir::Node*> nodes_;
  std::unordered_map<const ir::Node*, size_t> position_;
};

template <class T>
const T& anyOf(const std::vector<T>& items, std::mt19937_64& rng) {
  return items[std::uniform_int_distribution<size_t>(0, items.size() - 1)(rng)];
}

std::optional<Edit> randomDelete(const EditSite& site, std::mt19937_64& rng) {
  const auto nodes = site.nodesWhere([&](const ir::Node* n) {
    if (!site.editable(n)) return false;
    for (const ir::Value* v : n->outputs())
      if (!isFloat(v->tensorType().dtype())) return false;
    return true;
  });
  if (nodes.empty()) return std::nullopt;
  const ir::Node* n = anyOf(nodes, rng);
  Edit e{EditKind::Delete, n->output(0)->name(), {}, "", "", 0};
  for (const ir::Value* out : n->outputs()) {
    const ir::Value* with = site.valueFor(n, out->tensorType(), nullptr, rng);
    if (!with) return std::nullopt;
    e.values.push_back(with->name());
  }
  return e;
}

std::optional<Edit> randomCopy(const EditSite& site, std::mt19937_64& rng) {
  const auto sources = site.nodesWhere([&](const ir::Node* n) { return site.editable(n) && n->numInputs() > 0; });
  const auto places = site.mutableOperands();
  if (sources.empty() || places.empty()) return std::nullopt;
  const ir::Node* src = anyOf(sources, rng);
  const auto& [into, input] = anyOf(places, rng);
  Edit e{EditKind::Copy, src->output(0)->name(), {}, into->output(0)->name(), "", input};
  e.as = src->output(0)->name() + ".copy" + std::to_string(std::uniform_int_distribution<int>(0, 999999)(rng));
  if (site.taken(e.as)) return std::nullopt;
  for (const ir::Value* v : src->inputs()) {
    if (!v) {
      e.values.push_back("");
    } else if (isConstant(v) || !staticTensor(v)) {  // weights and shapes stay the original's
      if (!site.before(v, into)) return std::nullopt;
      e.values.push_back(v->name());
    } else {
      const ir::Value* with = site.valueFor(into, v->tensorType(), nullptr, rng);
      if (!with) return std::nullopt;
      e.values.push_back(with->name());
    }
  }
  return e;
}

std::optional<Edit> randomOperand(const EditSite& site, std::mt19937_64& rng) {
  const auto places = site.mutableOperands();
  if (places.empty()) return std::nullopt;
  const auto& [user, input] = anyOf(places, rng);
  const ir::Value* current = user->input(input);
  const ir::Value* with = site.valueFor(user, current->tensorType(), current, rng);
  if (!with) return std::nullopt;
  return Edit{EditKind::Operand, user->output(0)->name(), {with->name()}, "", "", input};
}

}  // namespace

std::optional<Edit> randomEdit(const ir::Graph& variant, std::mt19937_64& rng) {
  const EditSite site(variant);
  switch (std::uniform_int_distribution<int>(0, 2)(rng)) {
    case 0: return randomDelete(site, rng);
    case 1: return randomCopy(site, rng);
    default: return randomOperand(site, rng);
  }
}

std::optional<Patch> mutated(const ir::Module& original, const Patch& patch, std::mt19937_64& rng, int tries) {
  auto variant = patchedModule(original, patch);
  if (!variant) return std::nullopt;
  for (int t = 0; t < tries; ++t) {
    std::optional<Edit> edit = randomEdit((*variant)->graph(), rng);
    if (!edit) continue;
    Patch candidate = patch;
    candidate.push_back(std::move(*edit));
    if (patchedModule(original, candidate)) return candidate;
  }
  return std::nullopt;
}

std::pair<Patch, Patch> messyCrossover(const Patch& a, const Patch& b, std::mt19937_64& rng) {
  Patch all = a;
  all.insert(all.end(), b.begin(), b.end());
  std::shuffle(all.begin(), all.end(), rng);
  const size_t cut = std::uniform_int_distribution<size_t>(0, all.size())(rng);
  return {Patch(all.begin(), all.begin() + long(cut)), Patch(all.begin() + long(cut), all.end())};
}

}  // namespace kiln::evolve
