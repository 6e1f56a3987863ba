//===- lib/codegen/FusionPlan.cpp - Fusion edges, decisions, partitioning ---===//
//
// Builds the fusion edges of a graph, sets the default decisions and merges
// nodes into kernel groups. Default heuristic (TVM's FuseOps rules, made
// explicit per edge): injective chains fuse; elementwise/broadcast consumers
// of an anchor (matmul, conv, pool, reduction, softmax, layernorm) fuse as its
// epilogue; injective producers fuse into reductions, softmax and layernorm
// (cheap to recompute while reducing) and Pad into conv and pooling, but not
// other prologues of matmul/conv (they would be recomputed for every use).
// Edges are honoured in id order; an edge whose merge would make a group that
// no template can lower, or a cycle among the groups (checked over groups, as
// they run: a path reaching one node of a group goes on from all of them), is
// recorded as not honoured.
//
//===----------------------------------------------------------------------===//
#include "kiln/codegen/FusionPlan.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <set>
#include <sstream>
#include <unordered_map>

#include "TensorExpr.h"
#include "kiln/ir/OpSchema.h"

namespace kiln::codegen {
namespace {

bool isAnchorRole(KernelRole r) { return r != KernelRole::Injective && r != KernelRole::Extern; }

bool isStaticTensor(const ir::Value* v) {
  return v->type().isTensor() && v->tensorType().hasRank() && v->tensorType().isStatic();
}

/// A tensor a kernel can hold: static, or every dim not static a dynamic dim (symbolic, within the shape ranges).
bool isKernelTensor(const ir::Value* v) { return isStaticTensor(v) || (hasDynamicDims(v) && elementDims(v).isOk()); }

/// Operands, then the values the node's subgraphs capture.
std::vector<ir::Value*> valuesRead(const ir::Node& n) {
  std::vector<ir::Value*> reads = n.inputs();
  if (!n.subgraphs().empty())
    for (ir::Value* v : ir::capturedValues(n)) reads.push_back(v);
  return reads;
}

bool isElementwiseLike(const ir::Node& n) {
  ir::FusionPattern p = n.schema().pattern;
  return p == ir::FusionPattern::Elementwise || p == ir::FusionPattern::Broadcast;
}

/// A name without spaces for the plan's text form.
std::string planName(const ir::Node& n) {
  std::string s = !n.name().empty() ? n.name() : (n.numOutputs() ? "%" + n.output(0)->name() : n.opType());
  std::replace(s.begin(), s.end(), ' ', '_');
  return s;
}

/// An If whose results all have static shapes: ModelLowering may compile its branches.
bool mayCompileBranches(const ir::Node& n) {
  if (n.op() != ir::Op::If) return false;
  for (const ir::Value* v : n.outputs())
    if (!isStaticTensor(v)) return false;
  return true;
}

bool defaultDecision(const FusionEdge& e) {
  switch (e.kind) {
    case EdgeKind::Chain: case EdgeKind::Epilogue: return true;
    // An If with static results stays a group of its own: the lowering may compile its branches into
    // steps around them.
    case EdgeKind::Host: return !mayCompileBranches(*e.producer) && !mayCompileBranches(*e.consumer);
    case EdgeKind::Prologue: {
      KernelRole r = roleOf(*e.consumer);
      if (r == KernelRole::Reduce || r == KernelRole::Softmax || r == KernelRole::LayerNorm) return true;
      return (r == KernelRole::Conv || r == KernelRole::Pool) && e.producer->op() == ir::Op::Pad;
    }
  }
  return false;
}

}  // namespace

const char* kernelRoleName(KernelRole r) {
  static const char* names[] = {"injective", "matmul", "conv", "pool", "reduce", "softmax", "layernorm", "attention", "extern"};
  return names[size_t(r)];
}

const char* edgeKindName(EdgeKind k) {
  static const char* names[] = {"chain", "epilogue", "prologue", "host"};
  return names[size_t(k)];
}

KernelRole roleOf(const ir::Node& n) {
  // Kernels have static shapes or dynamic dims; anything else runs on the host.
  for (const ir::Value* v : n.inputs())
    if (v && !isKernelTensor(v)) return KernelRole::Extern;
  for (const ir::Value* v : n.outputs())
    if (!isKernelTensor(v)) return KernelRole::Extern;
  using ir::Op;
  switch (n.op()) {
    case Op::MatMul: case Op::Gemm: case Op::KilnDense: return KernelRole::Matmul;  // Dense: simplify-fc-transpose's
    case Op::Conv: case Op::KilnConvNCHWc: return KernelRole::Conv;  // ConvNCHWc: alter-op-layout's
    case Op::MaxPool: case Op::AveragePool: case Op::GlobalAveragePool: case Op::GlobalMaxPool: return KernelRole::Pool;
    case Op::ReduceSum: case Op::ReduceMean: case Op::ReduceMax: case Op::ReduceMin: case Op::ReduceProd:
    case Op::ReduceL1: case Op::ReduceL2: case Op::ReduceSumSquare: case Op::ReduceLogSum: case Op::ReduceLogSumExp:
    case Op::ArgMax: case Op::ArgMin: return KernelRole::Reduce;
    // fast-math's softmax: code generation computes Exp and kiln::FastExp alike.
    case Op::Softmax: case Op::LogSoftmax: case Op::KilnFastSoftmax: return KernelRole::Softmax;
    case Op::LayerNormalization: return KernelRole::LayerNorm;
    case Op::KilnAttention: return KernelRole::Attention;
    default: return hasElementExpr(n) ? KernelRole::Injective : KernelRole::Extern;
  }
}

std::string FusionEdge::key() const { return planName(*producer) + "->" + planName(*consumer); }

std::string KernelGroup::name() const {
  const ir::Node* n = anchor ? anchor : nodes.front();
  std::string base = planName(*n);
  std::string clean;
  for (char c : base) clean += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return "k" + scope + std::to_string(id) + "_" + clean;
}

Expected<FusionPlan> FusionPlan::build(ir::Graph& graph, std::string scope) {
  FusionPlan plan;
  plan.graph_ = &graph;
  plan.scope_ = std::move(scope);
  std::unordered_map<const ir::Node*, size_t>& position = plan.position_;
  for (ir::Node* n : graph.nodes()) {
    if (n->op() == ir::Op::Constant) continue;
    if ((n->op() == ir::Op::KilnFused || n->op() == ir::Op::KilnComposite))
      return makeError(ErrorCode::CodegenUnsupported, "fusion planning needs a graph without kiln::",
                       n->opType(), " groups (node ", n->displayName(), "); run defuse-ops first");
    position[n] = plan.order_.size();
    plan.order_.push_back(n);
  }
  for (ir::Node* consumer : plan.order_) {
    std::set<ir::Node*> seen;
    KernelRole rc = roleOf(*consumer);
    for (ir::Value* v : valuesRead(*consumer)) {
      if (!v || !v->producer() || !position.count(v->producer()) || !seen.insert(v->producer()).second) continue;
      ir::Node* producer = v->producer();
      KernelRole rp = roleOf(*producer);
      FusionEdge e{.id = int(plan.edges_.size()), .producer = producer, .consumer = consumer};
      if (rp == KernelRole::Injective && rc == KernelRole::Injective) e.kind = EdgeKind::Chain;
      else if (isAnchorRole(rp) && rc == KernelRole::Injective && isElementwiseLike(*consumer)) e.kind = EdgeKind::Epilogue;
      else if (rp == KernelRole::Injective && isAnchorRole(rc)) e.kind = EdgeKind::Prologue;
      else if (rp == KernelRole::Extern && rc == KernelRole::Extern) e.kind = EdgeKind::Host;
      else continue;
      plan.edges_.push_back(e);
    }
  }
  plan.setDefaultDecisions();
  return plan;
}

void FusionPlan::setDefaultDecisions() {
  for (FusionEdge& e : edges_) e.fuse = defaultDecision(e);
  partition();
}

/// The groups while partition() merges them: union-find over plan positions, each root's
/// nodes (graph order) and positions, and who uses each node's results.
struct FusionPlan::PartitionState {
  std::vector<std::vector<uint32_t>> users;  ///< plan positions of the nodes that read a node's results
  std::vector<uint32_t> parent;
  std::vector<std::vector<ir::Node*>> nodes;       ///< by root
  std::vector<std::vector<uint32_t>> positions;    ///< by root

  uint32_t find(uint32_t x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  }
  const std::vector<uint32_t>& members(uint32_t p) { return positions[find(p)]; }
};

bool FusionPlan::mergeable(const std::vector<ir::Node*>& members, PartitionState& groups) const {
  std::set<const ir::Node*> in(members.begin(), members.end());
  ir::Node* anchor = nullptr;
  size_t externs = 0;
  for (ir::Node* m : members) externs += roleOf(*m) == KernelRole::Extern;
  if (externs && externs != members.size()) return false;  // host steps and kernels do not mix
  for (ir::Node* m : members) {
    KernelRole r = roleOf(*m);
    if (isAnchorRole(r)) {
      if (anchor) return false;
      anchor = m;
    }
  }
  auto usedOnlyInside = [&](const ir::Node* m) {
    for (const ir::Value* v : m->outputs())
      for (const ir::Use& u : v->uses())
        if (u.isGraphOutput() || !in.count(ir::ancestorIn(*graph_, u.user))) return false;
    return true;
  };
  if (anchor) {
    // Members reachable from the anchor inside the group are its epilogue.
    std::set<const ir::Node*> downstream{anchor};
    for (ir::Node* m : members)  // members are in graph order, so one sweep suffices
      for (const ir::Value* v : m->inputs())
        if (v && v->producer() && downstream.count(v->producer()) && m != anchor) downstream.insert(m);
    const ir::Type& anchorType = anchor->output(0)->type();
    if (!anchorType.isTensor()) return false;
    for (ir::Node* m : members) {
      if (m == anchor) continue;
      if (downstream.count(m)) {
        if (!isElementwiseLike(*m) || m->numOutputs() != 1 || !m->output(0)->type().isTensor() ||
            m->output(0)->tensorType().dims() != anchorType.tensor().dims())
          return false;
      } else if (!usedOnlyInside(m)) {
        return false;
      }
    }
  }
  return !reentered(members, groups);
}

bool FusionPlan::reentered(const std::vector<ir::Node*>& members, PartitionState& groups) const {
  // The group runs as one kernel, so no path may leave it and come back. Paths run over
  // groups, not nodes: another group runs as one unit too, so a path that reaches one of
  // its nodes goes on from all of them (two groups that each feed the other are a cycle
  // even when no path of nodes is). Positions do not bound such paths: the search covers
  // everything downstream of the group.
  std::vector<uint8_t> inside(order_.size(), 0), reached(order_.size(), 0);
  for (ir::Node* m : members) inside[position_.at(m)] = 1;
  std::vector<uint32_t> work;
  auto reach = [&](uint32_t p) {
    for (uint32_t mate : groups.members(p))
      if (!reached[mate]) {
        reached[mate] = 1;
        work.push_back(mate);
      }
  };
  for (ir::Node* m : members)
    for (uint32_t user : groups.users[position_.at(m)])
      if (!inside[user]) reach(user);
  while (!work.empty()) {
    uint32_t n = work.back();
    work.pop_back();
    for (uint32_t user : groups.users[n]) {
      if (inside[user]) return true;
      reach(user);
    }
  }
  return false;
}

void FusionPlan::partition() {
  const auto& pos = position_;
  PartitionState state;
  const size_t n = order_.size();
  state.users.resize(n);
  state.parent.resize(n);
  std::iota(state.parent.begin(), state.parent.end(), 0u);
  state.nodes.resize(n);
  state.positions.resize(n);
  for (size_t i = 0; i < n; ++i) {
    state.nodes[i] = {order_[i]};
    state.positions[i] = {uint32_t(i)};
    for (const ir::Value* v : order_[i]->outputs())
      for (const ir::Use& u : v->uses()) {
        const ir::Node* user = u.isGraphOutput() ? nullptr : ir::ancestorIn(*graph_, u.user);
        if (auto it = user ? pos.find(user) : pos.end(); it != pos.end()) state.users[i].push_back(uint32_t(it->second));
      }
  }
  auto find = [&](size_t x) { return state.find(uint32_t(x)); };
  for (FusionEdge& e : edges_) {
    e.honored = false;
    uint32_t a = find(pos.at(e.producer)), b = find(pos.at(e.consumer));
    if (a == b) {
      e.honored = e.fuse;
      continue;
    }
    if (!e.fuse) continue;
    std::vector<ir::Node*> merged = state.nodes[a];
    merged.insert(merged.end(), state.nodes[b].begin(), state.nodes[b].end());
    std::sort(merged.begin(), merged.end(), [&](ir::Node* x, ir::Node* y) { return pos.at(x) < pos.at(y); });
    if (!mergeable(merged, state)) continue;
    state.parent[b] = a;
    state.nodes[a] = std::move(merged);
    state.nodes[b].clear();
    state.positions[a].insert(state.positions[a].end(), state.positions[b].begin(), state.positions[b].end());
    state.positions[b].clear();
    e.honored = true;
  }
  // Edges inside a group whose decision is split are still in one kernel.
  for (FusionEdge& e : edges_)
    if (!e.fuse && find(pos.at(e.producer)) == find(pos.at(e.consumer))) e.honored = true;

  groups_.clear();
  groupIndex_.assign(order_.size(), -1);
  for (size_t i = 0; i < order_.size(); ++i) {
    size_t root = find(i);
    if (groupIndex_[root] < 0) {
      groupIndex_[root] = int(groups_.size());
      groups_.push_back(makeGroup(int(groups_.size()), state.nodes[root]));
    }
    groupIndex_[i] = groupIndex_[root];
  }
}

KernelGroup FusionPlan::makeGroup(int id, std::vector<ir::Node*> nodes) const {
  KernelGroup g;
  g.id = id;
  g.scope = scope_;
  g.dimRanges = dimRanges_;
  g.nodes = std::move(nodes);
  g.role = KernelRole::Injective;
  for (ir::Node* n : g.nodes)
    if (KernelRole r = roleOf(*n); r != KernelRole::Injective && !g.anchor) {  // host steps: named by their first op
      g.role = r;
      g.anchor = n;
    }
  std::set<const ir::Node*> in(g.nodes.begin(), g.nodes.end());
  std::set<ir::Value*> seenInputs;
  for (ir::Node* n : g.nodes) {
    for (ir::Value* v : valuesRead(*n))
      if (v && (!v->producer() || !in.count(v->producer())) && seenInputs.insert(v).second) g.inputs.push_back(v);
    for (ir::Value* v : n->outputs()) {
      bool external = false;
      for (const ir::Use& u : v->uses()) external |= u.isGraphOutput() || !in.count(ir::ancestorIn(*graph_, u.user));
      if (external) g.outputs.push_back(v);
    }
  }
  return g;
}

void FusionPlan::setDimRanges(const ir::DimRanges* ranges) {
  dimRanges_ = ranges;
  for (KernelGroup& g : groups_) g.dimRanges = ranges;
}

const KernelGroup& FusionPlan::groupOf(const ir::Node* n) const {
  auto it = position_.find(n);
  KILN_CHECK(it != position_.end(), "node ", n->displayName(), " is not in the fusion plan");
  return groups_[size_t(groupIndex_[it->second])];
}

std::string FusionPlan::print() const {
  std::ostringstream os;
  os << "# fusion plan of @" << graph_->name() << ": " << edges_.size() << " edges, " << groups_.size()
     << " kernels\n";
  for (const FusionEdge& e : edges_) {
    os << "edge e" << e.id << " " << planName(*e.producer) << " -> " << planName(*e.consumer) << " "
       << edgeKindName(e.kind) << " " << (e.fuse ? "fuse" : "split");
    if (e.fuse != e.honored) os << (e.fuse ? " (not honored)" : " (joined by other edges)");
    os << "\n";
  }
  for (const KernelGroup& g : groups_) {
    os << "kernel " << g.name() << " " << kernelRoleName(g.role) << ":";
    for (const ir::Node* n : g.nodes) os << " " << planName(*n);
    os << "\n";
  }
  return os.str();
}

Status FusionPlan::applyDecisions(const std::string& text) {
  std::map<std::string, FusionEdge*> byKey;
  for (FusionEdge& e : edges_) byKey[e.key()] = &e;
  std::istringstream in(text);
  std::string line;
  int lineNo = 0;
  while (std::getline(in, line)) {
    ++lineNo;
    std::istringstream ls(line);
    std::string word, id, producer, arrow, consumer, kind, decision;
    if (!(ls >> word) || word[0] == '#' || word == "kernel") continue;
    auto where = [&] { return "fusion plan line " + std::to_string(lineNo) + ": "; };
    if (word != "edge") return makeError(ErrorCode::FusionPlanFormat, where(), "expected 'edge' or 'kernel', got '", word, "'");
    if (!(ls >> id >> producer >> arrow >> consumer >> kind >> decision) || arrow != "->")
      return makeError(ErrorCode::FusionPlanFormat, where(), "expected 'edge <id> <producer> -> <consumer> <kind> fuse|split'");
    auto it = byKey.find(producer + "->" + consumer);
    if (it == byKey.end())
      return makeError(ErrorCode::FusionPlanFormat, where(), "'", producer, " -> ", consumer,
                       "' is not a fusion edge of graph @", graph_->name());
    if (decision != "fuse" && decision != "split")
      return makeError(ErrorCode::FusionPlanFormat, where(), "decision must be fuse or split, got '", decision, "'");
    it->second->fuse = decision == "fuse";
  }
  partition();
  return Status::ok();
}

}  // namespace kiln::codegen
