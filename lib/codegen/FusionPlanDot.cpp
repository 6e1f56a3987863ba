//===- lib/codegen/FusionPlanDot.cpp - A fusion plan as a Graphviz picture ===//
//
// Each kernel group becomes a cluster labelled with its kernel name and role;
// a group the lowering ran as a host step is labelled so and drawn filled.
// Nodes outside every group (constants, graph plumbing) stay unclustered.
//
//===----------------------------------------------------------------------===//
#include <algorithm>

#include "kiln/codegen/FusionPlan.h"
#include "kiln/ir/GraphDot.h"

namespace kiln::codegen {

std::string fusionPlanDot(const FusionPlan& plan, const std::vector<std::string>& hostSteps) {
  std::vector<ir::DotCluster> clusters;
  for (const KernelGroup& g : plan.groups()) {
    const std::string host = "h" + g.name().substr(1);  // ModelLowering names a group's host step so
    ir::DotCluster c;
    c.highlighted = std::find(hostSteps.begin(), hostSteps.end(), host) != hostSteps.end();
    c.label = c.highlighted ? "host step " + host : g.name() + " (" + kernelRoleName(g.role) + ")";
    c.nodes.assign(g.nodes.begin(), g.nodes.end());
    clusters.push_back(std::move(c));
  }
  return ir::graphToDot(plan.graph(), clusters);
}

}  // namespace kiln::codegen
