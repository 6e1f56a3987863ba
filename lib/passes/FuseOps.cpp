//===- lib/passes/FuseOps.cpp - fuse-ops ------------------------------------===//
//
// TVM-style operator fusion by fusion pattern (OpSchema::pattern). Walking the
// graph in order, a node joins the group of one of its producers when the
// group can absorb it:
//   group of elementwise/broadcast/injective ops  + elementwise/broadcast/injective
//                                                 + a reduction (the group becomes a reduction)
//   an out-elementwise-fusable anchor (Conv, MatMul, Gemm, ...) + elementwise/broadcast epilogues
//   a reduction                                   + elementwise/broadcast epilogues
// Opaque ops, constants and control flow never fuse. A node joins only if its
// other operands are defined before the group starts (no cycles), and only
// while the group has fewer than max-depth ops. Each group of two or more ops
// becomes a kiln::Fused node (body = the ops, pattern = the group's kind),
// which code generation lowers to one kernel; defuse-ops undoes it. Values
// are unchanged (the body runs the same ops): exact.
//
//===----------------------------------------------------------------------===//
#include <unordered_map>

#include "GroupOutlining.h"
#include "RewriteUtils.h"
#include "kiln/ir/OpSchema.h"
#include "kiln/passes/PassRegistry.h"

namespace kiln::passes {
namespace {

using ir::FusionPattern;

struct Group {
  std::vector<ir::Node*> members;
  FusionPattern kind = FusionPattern::Opaque;
  size_t firstPosition = 0;
};

bool fusible(const ir::Node& n) {
  if (n.schema().pattern == FusionPattern::Opaque || isOp(&n, ir::Op::Constant) || !n.subgraphs().empty() ||
      n.schema().nondeterministic || isGroupNode(n))
    return false;
  for (const ir::Value* r : n.outputs())
    if (!r->type().isTensor()) return false;
  return true;
}

bool isInjectiveLike(FusionPattern p) {
  return p == FusionPattern::Elementwise || p == FusionPattern::Broadcast || p == FusionPattern::Injective;
}

/// The group kind after adding an op of pattern `p`, or Opaque if it cannot join.
FusionPattern absorb(FusionPattern kind, FusionPattern p) {
  bool epilogue = p == FusionPattern::Elementwise || p == FusionPattern::Broadcast;
  switch (kind) {
    case FusionPattern::Elementwise: case FusionPattern::Broadcast: case FusionPattern::Injective:
      if (isInjectiveLike(p)) return std::max(kind, p);
      return p == FusionPattern::CommReduce ? FusionPattern::CommReduce : FusionPattern::Opaque;
    case FusionPattern::OutEWiseFusable: case FusionPattern::CommReduce:
      return epilogue ? kind : FusionPattern::Opaque;
    default: return FusionPattern::Opaque;
  }
}

/// Groups of `g` (each with >= 2 members) chosen greedily in graph order.
std::vector<Group> planGroups(const ir::Graph& g, int64_t maxDepth) {
  if (isGroupBody(g)) return {};
  std::vector<ir::Node*> nodes = g.nodes();
  std::unordered_map<const ir::Node*, size_t> position, groupOf;
  for (size_t i = 0; i < nodes.size(); ++i) position[nodes[i]] = i;
  std::vector<Group> groups;
  for (ir::Node* n : nodes) {
    if (!fusible(*n)) continue;
    FusionPattern p = n->schema().pattern;
    std::optional<size_t> chosen;
    for (const ir::Value* in : n->inputs()) {
      const ir::Node* producer = in ? in->producer() : nullptr;
      auto it = producer ? groupOf.find(producer) : groupOf.end();
      if (it == groupOf.end() || chosen == it->second) continue;
      Group& candidate = groups[it->second];
      if (int64_t(candidate.members.size()) >= maxDepth || absorb(candidate.kind, p) == FusionPattern::Opaque) continue;
      bool acyclic = true;  // every other operand is defined before the group starts
      for (const ir::Value* other : n->inputs()) {
        const ir::Node* q = other ? other->producer() : nullptr;
        if (!q || q->graph() != &g || q->numInputs() == 0) continue;  // constants move up when outlined
        auto gq = groupOf.find(q);
        if (gq != groupOf.end() && gq->second == it->second) continue;
        acyclic &= position.at(q) < candidate.firstPosition;
      }
      if (acyclic) {
        chosen = it->second;
        break;
      }
    }
    if (chosen) {
      groups[*chosen].kind = absorb(groups[*chosen].kind, p);
      groups[*chosen].members.push_back(n);
      groupOf[n] = *chosen;
    } else {
      groupOf[n] = groups.size();
      groups.push_back({{n}, p, position.at(n)});
    }
  }
  std::vector<Group> out;
  for (Group& gr : groups)
    if (gr.members.size() >= 2) out.push_back(std::move(gr));
  return out;
}

bool hasGroup(const ir::Graph& g, int64_t maxDepth) {
  if (!planGroups(g, maxDepth).empty()) return true;
  return anyNode(g, [&](const ir::Node& n) {
    for (const ir::Graph* sub : n.subgraphs())
      if (!planGroups(*sub, maxDepth).empty()) return true;
    return false;
  });
}

Expected<bool> fuse(ir::Graph& g, int64_t maxDepth) {
  return rewriteGraphs(g, [maxDepth](ir::Graph& graph) -> Expected<bool> {
    std::vector<Group> groups = planGroups(graph, maxDepth);
    for (const Group& group : groups)
      KILN_TRY(outlineGroup(group.members, "kiln::Fused", {{"pattern", std::string(ir::fusionPatternName(group.kind))}})
                   .status());
    return !groups.empty();
  });
}

}  // namespace

PassInfo fuseOpsPass() {
  PassInfo p;
  p.name = "fuse-ops";
  p.summary = "Group fusible ops into kiln::Fused nodes, one kernel each";
  p.description =
      "TVM-style fusion by op pattern: injective/elementwise chains, reductions with their injective inputs "
      "and elementwise epilogues, and Conv/MatMul/Gemm anchors with elementwise epilogues become kiln::Fused "
      "nodes (at most max-depth ops each) that code generation lowers to one kernel. Exact.";
  p.classes = {"RN", "MN", "SSD", "BR"};  // Table 4: FuseOps is RN; MN; SSD; BR
  p.optLevel = 1;
  p.options = {{"max-depth", PassOptionSpec::Kind::Int, "256", "most ops in one fused group (TVM's default is 256)"}};
  p.applicable = [](const ir::Graph& g, const PassOptions&) { return hasGroup(g, 256); };
  p.run = [](ir::Graph& g, const PassOptions& o, const PassContext&) -> Expected<bool> {
    int64_t maxDepth = o.getInt("max-depth");
    if (maxDepth < 2) return Error(ErrorCode::InvalidArgument, "fuse-ops: max-depth must be >= 2");
    return fuse(g, maxDepth);
  };
  return p;
}

}  // namespace kiln::passes
