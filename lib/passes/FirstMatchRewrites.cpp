//===- lib/passes/FirstMatchRewrites.cpp - Rewrite the first match, resumably ---===//
//
// See FirstMatchRewrites.h. Why resuming gives the rescan's rewrites: every
// node before the match n answered "none" when scanned, and a rewrite can
// change that answer only for a node whose results it changed the users of
// (a producer of an input of a node it erased or created) or whose users'
// inputs it changed (a producer of an input of a user of a replaced
// result). The first are producers of `replaced`'s inputs to five levels,
// the second are listed before the rewrite (Constant nodes left out: the
// finder gives nothing there, and the weights sit at the top of the graph).
// The scan resumes at the earliest of them still there, or at n (or the
// nearest node before it that the rewrite cannot erase) when that is
// earlier. A rewrite that erases a node outside what the contract allows
// makes the scan start over, as does one that leaves nothing before n.
//
//===----------------------------------------------------------------------===//
#include "FirstMatchRewrites.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

namespace kiln::passes {
namespace {

/// Nodes numbered in graph order, kGap apart. A node created since is
/// numbered when the scan reaches it (one after the node before it): the
/// scan always reaches it before a rewrite can ask where it is, because
/// rewrites create nodes after the node where they were found.
class Positions {
 public:
  explicit Positions(const ir::Graph& g) : graph_(g) { renumber(); }

  void renumber() {
    at_.clear();
    int64_t p = 0;
    for (const ir::Node* n = graph_.firstNode(); n; n = graph_.nextNode(n)) at_[n] = p += kGap;
  }
  /// Where `n` is, numbering it after `previous` if it is new; renumbers all
  /// when that would break the order (more than kGap nodes created in one gap).
  int64_t reach(const ir::Node* n, int64_t previous) {
    auto it = at_.find(n);
    if (it == at_.end()) it = at_.emplace(n, previous + 1).first;
    if (it->second > previous) return it->second;
    renumber();
    return at_.at(n);
  }
  const int64_t* find(const ir::Node* n) const {
    auto it = at_.find(n);
    return it == at_.end() ? nullptr : &it->second;
  }
  void forget(const ir::Node* n) { at_.erase(n); }

 private:
  static constexpr int64_t kGap = int64_t(1) << 20;
  const ir::Graph& graph_;
  std::unordered_map<const ir::Node*, int64_t> at_;
};

/// The producers (in `g`) of `node`'s inputs, and of theirs, to `levels` levels.
std::vector<ir::Node*> producersOf(const ir::Graph& g, ir::Node* node, int levels, std::unordered_set<const ir::Node*>& seen) {
  std::vector<ir::Node*> found, level{node};
  for (int depth = 0; depth < levels && !level.empty(); ++depth) {
    std::vector<ir::Node*> next;
    for (const ir::Node* n : level)
      for (const ir::Value* in : n->inputs()) {
        ir::Node* p = in ? in->producer() : nullptr;
        if (p && p->graph() == &g && seen.insert(p).second) next.push_back(p);
      }
    found.insert(found.end(), next.begin(), next.end());
    level = std::move(next);
  }
  return found;
}

}  // namespace

Expected<int64_t> applyFirstMatchRewrites(ir::Graph& graph, const LocalRewriteFinder& find) {
  Positions positions(graph);
  int64_t applied = 0;
  for (ir::Node* from = graph.firstNode(); from;) {
    if (!positions.find(from)) positions.renumber();
    int64_t previous = *positions.find(from) - 1;
    ir::Node* n = from;
    std::optional<LocalRewrite> rewrite;
    for (; n; n = graph.nextNode(n)) {
      previous = positions.reach(n, previous);
      if ((rewrite = find(n))) break;
    }
    if (!rewrite) break;

    // What the rewrite may erase: `replaced` and producers to four levels
    // (their inputs' producers, the fifth level, are candidates too).
    ir::Node* replaced = rewrite->replaced;
    std::unordered_set<const ir::Node*> erasable{replaced};
    std::vector<ir::Node*> candidates = producersOf(graph, replaced, 4, erasable);
    std::unordered_set<const ir::Node*> fifth(erasable);
    for (size_t i = 0, levels = candidates.size(); i < levels; ++i) {
      const std::vector<ir::Node*> more = producersOf(graph, candidates[i], 1, fifth);
      candidates.insert(candidates.end(), more.begin(), more.end());
    }
    // `fifth` holds every candidate so far and `replaced`: the users' other operands' producers are added.
    for (const ir::Value* result : replaced->outputs())
      for (const ir::Use& use : result->uses())
        if (use.user) {
          const std::vector<ir::Node*> more = producersOf(graph, use.user, 1, fifth);
          candidates.insert(candidates.end(), more.begin(), more.end());
        }
    candidates.push_back(n);
    // n, or the nearest node before it that the rewrite cannot erase.
    ir::Node* kept = n;
    while (kept && erasable.count(kept)) kept = graph.prevNode(kept);

    std::vector<const ir::Node*> erased;
    KILN_TRY(rewrite->apply(erased));
    ++applied;
    for (const ir::Node* e : erased) positions.forget(e);
    const bool contained = std::all_of(erased.begin(), erased.end(), [&](const ir::Node* e) { return erasable.count(e) > 0; });
    if (!contained || !kept) {
      from = graph.firstNode();
      continue;
    }
    from = kept;
    for (ir::Node* c : candidates) {
      if (std::find(erased.begin(), erased.end(), c) != erased.end() || c->opType() == "Constant") continue;
      const int64_t* at = positions.find(c);
      if (at && *at < *positions.find(from)) from = c;
    }
  }
  return applied;
}

}  // namespace kiln::passes
