//===- kiln/codegen/FusionPlan.h - Which ops share a kernel -------*- C++ -*-===//
//
// The fusion plan partitions an optimized graph into kernels. Every place two
// ops could share a kernel is a fusion edge with a stable id (e0, e1, ... in
// graph order) and a key naming its producer and consumer; each edge carries a
// decision, fuse or split. A default heuristic sets the decisions, a search
// may flip them, and partition() turns decisions into kernel groups, honouring
// an edge only when the merged group stays lowerable (one anchor; epilogues
// elementwise on the anchor's shape; prologues used only inside; no cycles
// through other kernels). The plan prints as text that parseFusionDecisions
// reads back, so a saved plan re-lowers the same way.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "kiln/ir/Graph.h"
#include "kiln/ir/Module.h"
#include "kiln/support/Status.h"

namespace kiln::codegen {

/// How a kernel computes: the anchor op's schedule family.
enum class KernelRole : uint8_t {
  Injective,  ///< elementwise / broadcast / index remapping (no anchor)
  Matmul,     ///< MatMul, Gemm
  Conv,       ///< Conv (direct or implicit GEMM; depthwise)
  Pool,       ///< MaxPool, AveragePool, GlobalAveragePool, GlobalMaxPool
  Reduce,     ///< Reduce*, ArgMax/ArgMin
  Softmax,    ///< Softmax, LogSoftmax
  LayerNorm,  ///< LayerNormalization
  Attention,  ///< kiln::Attention (softmax(q kT) v in one kernel)
  Extern,     ///< no template or no static shape: runs on the host (reference kernels)
};
const char* kernelRoleName(KernelRole r);
/// The role an op plays alone.
KernelRole roleOf(const ir::Node& n);

enum class EdgeKind : uint8_t {
  Chain,     ///< injective op into injective op (inlined)
  Epilogue,  ///< anchor into an elementwise consumer
  Prologue,  ///< injective op into an anchor's operand
  Host,      ///< extern op into extern op (one host step runs both)
};
const char* edgeKindName(EdgeKind k);

struct FusionEdge {
  int id = 0;
  ir::Node* producer = nullptr;
  ir::Node* consumer = nullptr;
  EdgeKind kind = EdgeKind::Chain;
  bool fuse = false;      ///< the decision
  bool honored = false;   ///< set by partition(): the producer and consumer share a kernel
  std::string key() const;  ///< "producer->consumer" (node names)
};

struct KernelGroup {
  int id = 0;
  KernelRole role = KernelRole::Injective;
  ir::Node* anchor = nullptr;         ///< null for injective groups
  std::vector<ir::Node*> nodes;       ///< in graph order
  std::vector<ir::Value*> inputs;     ///< values read from outside the group (weights included)
  std::vector<ir::Value*> outputs;    ///< values used after the group or graph outputs
  std::string scope;                  ///< "" in the model's graph; a branch's plan's scope ("4t_": If group 4's then branch)
  /// The ranges of the dynamic dims its values' types refer to (FusionPlan::setDimRanges); null when none are given.
  const ir::DimRanges* dimRanges = nullptr;
  std::string name() const;           ///< k<scope><id>_<anchor or first op>
};

class FusionPlan {
 public:
  /// The edges of `graph` with the default heuristic's decisions, partitioned.
  /// The graph must be free of kiln::Fused/Composite groups (inline them first).
  /// `scope` prefixes the group names of a plan of an If's branch (KernelGroup::scope), so that they
  /// differ from the model graph's.
  static Expected<FusionPlan> build(ir::Graph& graph, std::string scope = "");

  std::vector<FusionEdge>& edges() { return edges_; }
  const std::vector<FusionEdge>& edges() const { return edges_; }
  const std::vector<KernelGroup>& groups() const { return groups_; }
  const KernelGroup& groupOf(const ir::Node* n) const;
  /// A group of `nodes` (graph order) as partition() makes one: its role and
  /// anchor, the values it reads from outside and those used after it.
  KernelGroup makeGroup(int id, std::vector<ir::Node*> nodes) const;
  ir::Graph& graph() const { return *graph_; }

  /// The dynamic dims' ranges every group (now and after partition) refers
  /// to; `ranges` outlives the plan's use.
  void setDimRanges(const ir::DimRanges* ranges);

  /// Sets every decision to the default heuristic's.
  void setDefaultDecisions();
  /// Recomputes the kernel groups from the decisions.
  void partition();

  /// Text form: one `edge` line per edge (id, key, kind, decision, and
  /// "(not honored)" when partitioning refused it), then one `kernel` line per group.
  std::string print() const;
  /// Reads decisions from print()'s text (edge lines; kernel lines and # comments
  /// are ignored) and re-partitions. Every edge named must exist in this graph.
  Status applyDecisions(const std::string& text);

 private:
  struct PartitionState;
  /// Whether `members` (graph order) can run as one kernel or host step: one anchor with
  /// its epilogue, host steps apart from kernels, and no path back into the group.
  bool mergeable(const std::vector<ir::Node*>& members, PartitionState& groups) const;
  /// Whether a path leaves `members` and comes back, through the groups as they are.
  bool reentered(const std::vector<ir::Node*>& members, PartitionState& groups) const;

  ir::Graph* graph_ = nullptr;
  std::string scope_;
  const ir::DimRanges* dimRanges_ = nullptr;
  std::vector<ir::Node*> order_;  ///< nodes that belong to kernels, in graph order
  std::unordered_map<const ir::Node*, size_t> position_;  ///< index in order_
  std::vector<FusionEdge> edges_;
  std::vector<KernelGroup> groups_;
  std::vector<int> groupIndex_;   ///< per entry of order_
};

/// The plan's graph as Graphviz DOT with one cluster per kernel group (its
/// name and role); groups named in `hostSteps` (the host steps' names,
/// "h<scope><id>_<op>", CompileStats::hostSteps) are drawn filled.
std::string fusionPlanDot(const FusionPlan& plan, const std::vector<std::string>& hostSteps);

}  // namespace kiln::codegen
