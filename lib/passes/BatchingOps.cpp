//===- lib/passes/BatchingOps.cpp - batching-ops ----------------------------===//
//
// TVM's BatchingOps: parallel ops that read the same input are batched into
// one op when there are at least three of them (the point where one larger
// kernel beats several launches):
//   Convs                        -> combine-parallel-conv2d{min-branches=3}
//   dense layers (const weights) -> combine-parallel-dense{min-branches=3}
//   MatMul(x, y_i), y_i computed, same shapes but the last dim
//                                -> MatMul(x, Concat(y_1..y_n, last axis)) + Split
// Each output element is the same dot product as before: exact.
//
//===----------------------------------------------------------------------===//
#include <algorithm>
#include <map>

#include "RewriteUtils.h"
#include "kiln/passes/PassRegistry.h"
#include "kiln/passes/Pipeline.h"

namespace kiln::passes {
namespace {

constexpr int64_t kMinBranches = 3;

/// Key of a batchable MatMul(x, y): y's dtype and dims except the last.
std::optional<std::string> keyOf(const ir::Node* n, const ir::Value* x) {
  if (!isOp(n, ir::Op::MatMul) || n->input(0) != x || n->input(1) == x || constantValue(n->input(1))) return std::nullopt;
  const ir::Value* y = n->input(1);
  if (!y->type().isTensor() || !y->tensorType().isStatic() || y->tensorType().rank() < 2) return std::nullopt;
  if (!n->output(0)->type().isTensor() || !n->output(0)->tensorType().isStatic()) return std::nullopt;
  std::string key = dtypeName(y->tensorType().dtype());
  const Dims& d = y->tensorType().dims();
  for (size_t i = 0; i + 1 < d.size(); ++i) key += "," + std::to_string(d[i]);
  return key;
}

std::vector<std::vector<ir::Node*>> groupsFor(const ir::Value* x) {
  std::map<std::string, std::vector<ir::Node*>> groups;
  for (const ir::Use& u : x->uses())
    if (!u.isGraphOutput())
      if (auto key = keyOf(u.user, x)) groups[*key].push_back(u.user);
  std::vector<std::vector<ir::Node*>> out;
  for (auto& [k, nodes] : groups)
    if (int64_t(nodes.size()) >= kMinBranches) out.push_back(std::move(nodes));
  return out;
}

std::vector<std::pair<ir::Value*, std::vector<ir::Node*>>> allGroups(const ir::Graph& g) {
  std::vector<std::pair<ir::Value*, std::vector<ir::Node*>>> out;
  for (ir::Value* x : definedValues(g))
    for (auto& group : groupsFor(x)) out.emplace_back(x, std::move(group));
  return out;
}

/// The batched MatMul goes where the last branch was (every y_i exists by
/// then); the caller checks that no branch result is used before that point.
Status batchMatMuls(ir::Graph& g, ir::Value* x, const std::vector<ir::Node*>& branches) {
  ir::Node* last = branches.front();
  for (ir::Node* n : g.nodes())
    if (std::find(branches.begin(), branches.end(), n) != branches.end()) last = n;
  std::vector<ir::Value*> ys;
  std::vector<int64_t> widths;
  for (ir::Node* b : branches) {
    ys.push_back(b->input(1));
    widths.push_back(b->input(1)->tensorType().dims().back());
  }
  std::string base = nameBase(*branches.front()) + "_batched";
  KILN_ASSIGN(ir::Node * concat, createTypedNode(g, "Concat", ys, {{"axis", int64_t(-1)}}, base + "_concat", last));
  KILN_ASSIGN(ir::Node * mm, createTypedNode(g, "MatMul", {x, concat->output(0)}, {}, base, last));
  ir::Value* sizes = makeConstant(g, Tensor::fromVector<int64_t>({int64_t(widths.size())}, widths), base + "_split", last);
  KILN_ASSIGN(ir::Node * split, createTypedNode(g, "Split", {mm->output(0), sizes}, {{"axis", int64_t(-1)}},
                                                base + "_split", last, branches.size()));
  for (size_t i = 0; i < branches.size(); ++i) {
    replaceValue(branches[i]->output(0), split->output(i), true);
    g.eraseNode(branches[i]);
  }
  return Status::ok();
}

/// True when no branch result is used before the last branch (so the batched
/// result, computed at the last branch, is early enough).
bool usesAfterLast(const ir::Graph& g, const std::vector<ir::Node*>& branches) {
  std::vector<ir::Node*> order = g.nodes();
  auto pos = [&](const ir::Node* n) { return std::find(order.begin(), order.end(), n) - order.begin(); };
  auto lastPos = pos(branches.front());
  for (ir::Node* b : branches) lastPos = std::max(lastPos, pos(b));
  for (ir::Node* b : branches)
    for (const ir::Use& u : b->output(0)->uses())
      if (!u.isGraphOutput() && u.user->graph() == &g && pos(u.user) < lastPos) return false;
  return true;
}

/// A combine pass's default options with min-branches 3.
PassOptions combineOptions(const std::string& pass) {
  std::map<std::string, std::string> values = withDefaultOptions(*findPass(pass)).options.values();
  values["min-branches"] = std::to_string(kMinBranches);
  return PassOptions(std::move(values));
}

bool combinePassApplies(const std::string& pass, const ir::Graph& g) {
  return findPass(pass)->applicable(g, combineOptions(pass));
}

bool hasBatchable(const ir::Graph& g) {
  for (const auto& [x, group] : allGroups(g))
    if (usesAfterLast(g, group)) return true;
  return false;
}

Expected<bool> batch(ir::Graph& g, const PassContext& ctx) {
  bool changed = false;
  for (const char* name : {"combine-parallel-conv2d", "combine-parallel-dense"}) {
    KILN_ASSIGN(bool c, findPass(name)->run(g, combineOptions(name), ctx));
    changed |= c;
  }
  for (const auto& [x, group] : allGroups(g)) {
    if (!usesAfterLast(g, group)) continue;
    KILN_TRY(batchMatMuls(g, x, group));
    changed = true;
  }
  return changed;
}

}  // namespace

PassInfo batchingOpsPass() {
  PassInfo p;
  p.name = "batching-ops";
  p.summary = "Batch three or more parallel convs, dense layers or matmuls into one";
  p.description =
      "Runs combine-parallel-conv2d and combine-parallel-dense with min-branches=3 and batches three or more "
      "MatMuls of one input whose computed right operands differ only in the last dim into one MatMul over "
      "their concatenation and a Split (anchor: TVM's BatchingOps). Exact.";
  p.classes = {"BR"};  // Table 4: BatchingOps is BR
  p.optLevel = 3;
  p.applicable = [](const ir::Graph& g, const PassOptions&) {
    return hasBatchable(g) || combinePassApplies("combine-parallel-conv2d", g) ||
           combinePassApplies("combine-parallel-dense", g);
  };
  p.run = [](ir::Graph& g, const PassOptions&, const PassContext& ctx) -> Expected<bool> { return batch(g, ctx); };
  return p;
}

}  // namespace kiln::passes
