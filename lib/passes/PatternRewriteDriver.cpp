//===- lib/passes/PatternRewriteDriver.cpp - One worklist for every rewrite pass ---===//
//
// See PatternRewriteDriver.h. The worklist is the nodes from a cursor on, in
// graph order: nodes are visited one after the other, and a rewrite queues
// the nodes whose match it may have changed by moving the cursor back to the
// earliest of them. Those are found by listening to the graph: every node
// the rewrite created, erased, moved or modified, every node whose operands
// or result types changed, and the producers of their inputs to usersRead()
// levels (a match reads that far down). Everything after the cursor is
// visited again because a match may read producers at any depth, and they
// come before it. The node the rewrite was found at is visited again too
// when it is still there. Nodes before the cursor answered "no match" and
// nothing they read changed, so the next rewrite is the one a rescan from
// the first node would find. Constant nodes never move the cursor back:
// patterns do not match there or read their uses, and the weights sit at
// the top of the graph.
//
//===----------------------------------------------------------------------===//
#include "PatternRewriteDriver.h"

#include <algorithm>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "RewriteUtils.h"

namespace kiln::passes {
namespace {

/// Graph order as numbers kept up to date through the graph's listener, and
/// the nodes a rewrite touched.
class Worklist final : public ir::GraphListener {
 public:
  Worklist(ir::Graph& graph, int usersRead)
      : graph_(graph), root_(*graph.root()), previous_(root_.listener()), levels_(usersRead) {
    renumber();
    root_.setListener(this);
  }
  ~Worklist() override { root_.setListener(previous_); }
  Worklist(const Worklist&) = delete;
  Worklist& operator=(const Worklist&) = delete;

  /// Starts recording at `node`, the node a rewrite may now change.
  void begin(const ir::Node& node) {
    from_ = position_.at(&node);
    touched_.clear();
  }
  /// The node to visit after the rewrite: the earliest it may have changed
  /// the match of, or the node it was found at (or the first after it).
  ir::Node* resume() const {
    int64_t at = from_;
    for (const ir::Node* n : touched_)
      if (auto it = position_.find(n); it != position_.end() && !isOp(n, ir::Op::Constant)) at = std::min(at, it->second);
    auto it = order_.lower_bound(at);
    return it == order_.end() ? nullptr : it->second;
  }

  void nodeInserted(ir::Node& node) override {
    if (node.graph() == &graph_) number(node);
    touch(&node, levels_);
  }
  void nodeErasing(ir::Node& node) override {
    touch(&node, levels_);
    if (auto it = position_.find(&node); it != position_.end()) {
      order_.erase(it->second);
      position_.erase(it);
    }
  }
  void nodeMoved(ir::Node& node) override {
    if (node.graph() == &graph_) {
      order_.erase(position_.at(&node));
      number(node);
    }
    touch(&node, levels_);
  }
  void nodeModified(ir::Node& node) override { touch(&node, levels_); }
  void inputChanged(ir::Node& user, ir::Value* before, ir::Value* after) override {
    touch(&user, levels_);
    if (before) usesChanged(*before);
    if (after) usesChanged(*after);
  }
  void outputChanged(ir::Graph&, ir::Value& value) override { usesChanged(value); }
  void typeChanged(ir::Value& value) override { usesChanged(value); }

 private:
  static constexpr int64_t kGap = int64_t(1) << 32;

  void renumber() {
    position_.clear();
    order_.clear();
    int64_t p = 0;
    for (ir::Node* n = graph_.firstNode(); n; n = graph_.nextNode(n)) {
      position_[n] = p += kGap;
      order_[p] = n;
    }
  }
  /// Numbers a node just placed between its neighbours (all numbered).
  void number(ir::Node& node) {
    const ir::Node* prev = graph_.prevNode(&node);
    const ir::Node* next = graph_.nextNode(&node);
    const int64_t lo = prev ? position_.at(prev) : 0;
    const int64_t hi = next ? position_.at(next) : lo + 2 * kGap;
    if (hi - lo < 2) return renumber();
    position_[&node] = lo + (hi - lo) / 2;
    order_[lo + (hi - lo) / 2] = &node;
  }
  /// A match may read a value's uses from its producer or from a user (a
  /// co-operand's single use): both are recorded, with their producers.
  void usesChanged(const ir::Value& value) {
    touch(value.producer(), levels_);
    for (const ir::Use& use : value.uses()) touch(use.user, levels_);
  }
  /// Records `node` (or the node of graph_ holding it) and the producers of
  /// its inputs to `levels` levels.
  void touch(ir::Node* node, int levels) {
    ir::Node* local = node ? ir::ancestorIn(graph_, node) : nullptr;
    if (!local) return;
    touched_.push_back(local);
    for (int depth = 0, begin = int(touched_.size()) - 1; depth < levels; ++depth) {
      const int end = int(touched_.size());
      for (int i = begin; i < end; ++i)
        for (const ir::Value* in : touched_[size_t(i)]->inputs())
          if (ir::Node* p = in ? in->producer() : nullptr; p && p->graph() == &graph_) touched_.push_back(p);
      begin = end;
    }
  }

  ir::Graph& graph_;
  ir::Graph& root_;
  ir::GraphListener* previous_;
  const int levels_;
  std::unordered_map<const ir::Node*, int64_t> position_;
  std::map<int64_t, ir::Node*> order_;
  std::vector<ir::Node*> touched_;
  int64_t from_ = 0;
};

const RewritePattern* firstMatch(const ir::Node& node, const PatternList& patterns) {
  if (isOp(&node, ir::Op::Constant)) return nullptr;
  for (const auto& p : patterns)
    if (p->matches(node)) return p.get();
  return nullptr;
}

/// Rewrites at `node` with the first pattern that matches there; false when none does.
Expected<bool> rewriteAt(ir::Node& node, const PatternList& patterns) {
  if (isOp(&node, ir::Op::Constant)) return false;
  for (const auto& p : patterns) {
    KILN_ASSIGN(bool rewrote, p->matchAndRewrite(node));
    if (rewrote) return true;
  }
  return false;
}

/// The rewrites of `graph` itself (not its nested graphs).
Expected<int64_t> rewriteGraph(ir::Graph& graph, const PatternList& patterns, const std::string& pass) {
  int usersRead = 1;
  bool rescan = false;
  for (const auto& p : patterns) {
    rescan |= p->usersRead() == RewritePattern::kAnywhere;
    usersRead = std::max(usersRead, p->usersRead());
  }
  Worklist worklist(graph, usersRead);
  // Every rewrite here replaces or moves what it matched; many more rewrites
  // than nodes mean one pattern undoes another's work.
  const int64_t limit = 64 * (int64_t(graph.numNodes()) + 16);
  int64_t applied = 0;
  for (ir::Node* n = graph.firstNode(); n;) {
    if (applied == limit && firstMatch(*n, patterns))
      return makeError(ErrorCode::Internal, pass, " rewrote ", limit, " times without reaching a graph where none of its ",
                       "rules matches (last at node ", n->displayName(), ")")
          .atNode(n->displayName(), n->opType());
    worklist.begin(*n);
    KILN_ASSIGN(bool rewrote, rewriteAt(*n, patterns));
    if (!rewrote) {
      n = graph.nextNode(n);
      continue;
    }
    ++applied;
    n = rescan ? graph.firstNode() : worklist.resume();
  }
  return applied;
}

}  // namespace

Expected<int64_t> applyPatterns(ir::Graph& graph, const PatternList& patterns, const std::string& pass) {
  const bool nested = anyNode(graph, [](const ir::Node& n) { return !n.subgraphs().empty(); });
  int64_t total = 0;
  for (bool first = true;; first = false) {
    int64_t inNested = 0;
    for (ir::Node* n : nested ? graph.nodes() : std::vector<ir::Node*>())
      for (ir::Graph* sub : n->subgraphs()) {
        KILN_ASSIGN(int64_t applied, applyPatterns(*sub, patterns, pass));
        inNested += applied;
      }
    total += inNested;
    if (!first && inNested == 0) return total;  // the graph's last rewrites saw these nested graphs
    KILN_ASSIGN(int64_t applied, rewriteGraph(graph, patterns, pass));
    total += applied;
    if (!nested || applied == 0) return total;
  }
}

bool anyPatternMatches(const ir::Graph& graph, const PatternList& patterns) {
  return anyNode(graph, [&](const ir::Node& n) { return firstMatch(n, patterns) != nullptr; });
}

void setPatterns(PassInfo& pass, PatternList patterns) {
  pass.applicable = [patterns](const ir::Graph& g, const PassOptions&) { return anyPatternMatches(g, patterns); };
  pass.run = [patterns, name = pass.name](ir::Graph& g, const PassOptions&, const PassContext&) -> Expected<bool> {
    KILN_ASSIGN(int64_t applied, applyPatterns(g, patterns, name));
    return applied > 0;
  };
}

}  // namespace kiln::passes
