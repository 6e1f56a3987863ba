//===- lib/passes/DefuseOps.cpp - defuse-ops --------------------------------===//
//
// The inverse of fuse-ops and merge-composite: every kiln::Fused and
// kiln::Composite node is replaced by the ops of its body, so later passes
// (or another fusion plan) see the plain graph again. Fusing then defusing
// gives back the same IR up to value names. Exact.
//
//===----------------------------------------------------------------------===//
#include "GroupOutlining.h"
#include "RewriteUtils.h"
#include "kiln/passes/PassRegistry.h"

namespace kiln::passes {
namespace {

Expected<bool> defuse(ir::Graph& g) {
  bool changed = false;
  for (ir::Node* n : g.nodes()) {
    if (isGroupNode(*n)) {
      KILN_TRY(inlineGroup(n));
      changed = true;
      continue;
    }
    for (ir::Graph* sub : n->subgraphs()) {
      KILN_ASSIGN(bool c, defuse(*sub));
      changed |= c;
    }
  }
  // A body may itself hold groups (a composite inside a fused group): repeat.
  if (changed && anyNode(g, isGroupNode)) {
    KILN_ASSIGN(bool again, defuse(g));
    (void)again;
  }
  return changed;
}

}  // namespace

PassInfo defuseOpsPass() {
  PassInfo p;
  p.name = "defuse-ops";
  p.summary = "Inline kiln::Fused and kiln::Composite nodes back into plain ops";
  p.description =
      "Replaces every fused group and composite by the ops of its body (the inverse of fuse-ops and "
      "merge-composite). Exact.";
  p.classes = {"BL"};  // Table 4: DefuseOps is BL
  p.optLevel = 3;
  p.applicable = [](const ir::Graph& g, const PassOptions&) { return anyNode(g, isGroupNode); };
  p.run = [](ir::Graph& g, const PassOptions&, const PassContext&) -> Expected<bool> { return defuse(g); };
  return p;
}

}  // namespace kiln::passes
