//===- kiln/select/OrderingRules.h - Where each pass goes in a pipeline -*- C++ -*-===//
//
// The documented ordering rules of the `arch` strategy: every pass has a rank
// (lower runs earlier) and the reason for it, e.g. layout before fusion, or
// BatchNorm simplification before constant folding (unless the layout pass
// folds the BatchNorms as it packs the weights). A pass without a rule is
// ranked mid-pipeline (kUnruledRank); a unit test keeps every registered pass
// ruled. docs/pass-selection.md lists the table.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <string>
#include <vector>

#include "kiln/ir/Graph.h"
#include "kiln/passes/PassInfo.h"

namespace kiln::select {

struct OrderingRule {
  std::string pass;
  int rank = 0;
  std::string reason;
};

inline constexpr int kUnruledRank = 50;
/// simplify-inference's rank when alter-op-layout is in the pipeline: right
/// after it, which folds the BatchNorms after the convs it packs.
inline constexpr int kSimplifyInferenceAfterLayoutRank = 83;

/// Every rule, by rank.
const std::vector<OrderingRule>& orderingRules();
/// The rank of `pass` (kUnruledRank when it has no rule).
int orderingRank(const std::string& pass);
/// The rank of `pass` in a pipeline of `pipeline`'s passes: orderingRank's,
/// except simplify-inference's next to alter-op-layout, when that pass has
/// convs to block (applicable to `graph`; any graph when null).
int orderingRankAmong(const std::string& pass, const std::vector<const passes::PassInfo*>& pipeline,
                      const ir::Graph* graph = nullptr);
/// True when `pass` has a rule.
bool hasOrderingRule(const std::string& pass);
/// `passes` sorted by rank (orderingRankAmong them, for `graph`); passes of
/// one rank keep their order.
std::vector<const passes::PassInfo*> orderByRules(std::vector<const passes::PassInfo*> passes,
                                                  const ir::Graph* graph = nullptr);

}  // namespace kiln::select
