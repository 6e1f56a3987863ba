//===- lib/passes/CombineParallelDense.cpp - combine-parallel-dense ---------===//
//
// Dense layers that read the same input become one wider matmul:
//   y_i = MatMul(x, W_i) [+ b_i]   for i = 1..n, W_i constant [K, N_i]
//   ->  y = MatMul(x, [W_1 .. W_n]) [+ [b_1 .. b_n]];  y_1..y_n = Split(y, last axis)
// This is how the query, key and value projections of an attention block
// become one matmul (batched over the sequence). A weight may also be
// Transpose(W) of a constant [N_i, K] used by that MatMul alone (how a raw
// export stores dense layers): the combined weights are then written
// transposed in one pass, so the pass can run before fold-constant and the
// transposes are never written on their own (BERT-base: 85 MB of Q/K/V
// weights written once instead of twice). A kiln::Dense(x, W) (what
// simplify-fc-transpose makes of such a layer) is read the same way.
// Branches combine only when they have the same weight dtype and either
// all or none have a constant bias of shape [N_i] (an Add that is the
// matmul's only user). Each output column is the same dot product as
// before, so results are exact. Option min-branches (default 2): the
// fewest branches worth combining.
//
//===----------------------------------------------------------------------===//
#include <map>

#include "RewriteUtils.h"
#include "kiln/passes/PassRegistry.h"

namespace kiln::passes {
namespace {

struct Branch {
  ir::Node* matmul = nullptr;
  ir::Node* biasAdd = nullptr;  ///< Add(matmul, b) with constant b [N], if any
  ColumnPart weights{nullptr, false};  ///< [K, N], or [N, K] behind the MatMul's own Transpose
  const Tensor* bias = nullptr;
};

bool isDense(const ir::Node* n) { return n && n->op() == ir::Op::KilnDense; }

/// The MatMul's constant weights: W, or W of Transpose(W) when the MatMul is the transpose's only user
/// (a kiln::Dense's W [N, K] alike).
std::optional<ColumnPart> weightsOf(const ir::Node* matmul) {
  const ir::Value* v = matmul->input(1);
  if (const Tensor* w = constantValue(v); w && w->rank() == 2) return ColumnPart{w, isDense(matmul)};
  if (const Tensor* w = transposedConstant(v); w && soleUser(v) == matmul) return ColumnPart{w, true};
  return std::nullopt;
}

std::optional<Branch> branchOf(ir::Node* n, const ir::Value* x) {
  if ((!isOp(n, ir::Op::MatMul) && !isDense(n)) || n->input(0) != x || !n->output(0)->type().isTensor()) return std::nullopt;
  std::optional<ColumnPart> w = weightsOf(n);
  if (!w || !n->output(0)->tensorType().hasRank()) return std::nullopt;
  Branch b{n, nullptr, *w, nullptr};
  if (ir::Node* add = soleUser(n->output(0)); isOp(add, ir::Op::Add) && !isGraphOutput(n->output(0))) {
    const ir::Value* other = add->input(0) == n->output(0) ? add->input(1) : add->input(0);
    const Tensor* bias = constantValue(other);
    if (bias && bias->rank() == 1 && bias->dim(0) == b.weights.cols() && bias->dtype() == w->tensor->dtype() &&
        add->output(0)->type() == n->output(0)->type()) {
      b.biasAdd = add;
      b.bias = bias;
    }
  }
  return b;
}

/// Groups of combinable branches reading `x` (key: weight dtype, K, has bias).
std::vector<std::vector<Branch>> groupsFor(const ir::Value* x, int64_t minBranches) {
  std::map<std::tuple<int, int64_t, bool>, std::vector<Branch>> groups;
  for (const ir::Use& u : x->uses()) {
    if (u.isGraphOutput() || u.index != 0) continue;
    if (auto b = branchOf(u.user, x))
      groups[{int(b->weights.tensor->dtype()), b->weights.rows(), b->bias != nullptr}].push_back(*b);
  }
  std::vector<std::vector<Branch>> out;
  for (auto& [key, branches] : groups)
    if (int64_t(branches.size()) >= minBranches) out.push_back(std::move(branches));
  return out;
}

/// Values that have combinable branches (graph inputs and node results).
using GroupFinder = std::function<std::vector<std::vector<Branch>>(const ir::Value*)>;

/// groupsFor with the pass's options, or the error of a bad one.
Expected<GroupFinder> groupFinder(const PassOptions& o) {
  int64_t minBranches = o.getInt("min-branches");
  if (minBranches < 2) return Error(ErrorCode::InvalidArgument, "combine-parallel-dense: min-branches must be >= 2");
  return GroupFinder([minBranches](const ir::Value* x) { return groupsFor(x, minBranches); });
}

Status combine(ir::Graph& g, ir::Value* x, const std::vector<Branch>& group) {
  std::vector<ir::Node*> matmuls;
  for (const Branch& b : group) matmuls.push_back(b.matmul);
  ir::Node* first = earliestNode(matmuls);  // the combined nodes go before every branch
  std::vector<ColumnPart> ws;
  std::vector<const Tensor*> bs;
  std::vector<int64_t> widths;
  for (const Branch& b : group) {
    ws.push_back(b.weights);
    if (b.bias) bs.push_back(b.bias);
    widths.push_back(b.weights.cols());
  }
  std::string base = nameBase(*first) + "_combined";
  ir::Value* w = makeConstant(g, joinedColumns(ws), base + "_weights", first);
  KILN_ASSIGN(ir::Node * mm, createTypedNode(g, "MatMul", {x, w}, {}, base, first));
  ir::Value* y = mm->output(0);
  if (!bs.empty()) {
    ir::Value* b = makeConstant(g, concatenated(bs, 0), base + "_bias", first);
    KILN_ASSIGN(ir::Node * add, createTypedNode(g, "Add", {y, b}, {}, base + "_add", first));
    y = add->output(0);
  }
  ir::Value* sizes = makeConstant(g, Tensor::fromVector<int64_t>({int64_t(widths.size())}, widths), base + "_split", first);
  KILN_ASSIGN(ir::Node * split, createTypedNode(g, "Split", {y, sizes}, {{"axis", int64_t(-1)}}, base + "_split", first,
                                                group.size()));
  for (size_t i = 0; i < group.size(); ++i) {
    ir::Node* last = group[i].biasAdd ? group[i].biasAdd : group[i].matmul;
    replaceValue(last->output(0), split->output(i));
    eraseWithDeadProducers(last);
  }
  return Status::ok();
}

}  // namespace

PassInfo combineParallelDensePass() {
  PassInfo p;
  p.name = "combine-parallel-dense";
  p.summary = "Merge dense layers that share their input into one matmul";
  p.description =
      "Combines MatMuls of one input with constant [K, N_i] weights, or Transpose of constant [N_i, K] weights, "
      "and kiln::Dense layers of constant [N_i, K] weights (and their constant [N_i] bias Adds), into one MatMul "
      "over concatenated weights, an Add and a Split; the "
      "Q/K/V projections of attention become one matmul. Exact.";
  p.classes = {"RN", "BR"};  // Table 4: CombineParallelDense is RN (kiln adds BR: Q/K/V projections)
  p.optLevel = 3;
  p.options = {{"min-branches", PassOptionSpec::Kind::Int, "2", "fewest parallel branches worth combining"}};
  p.applicable = [](const ir::Graph& g, const PassOptions& o) {
    Expected<GroupFinder> finder = groupFinder(o);
    return !finder || anyParallelGroup<std::vector<Branch>>(g, *finder);  // run reports a bad option
  };
  p.run = [](ir::Graph& g, const PassOptions& o, const PassContext&) -> Expected<bool> {
    KILN_ASSIGN(GroupFinder finder, groupFinder(o));
    return combineParallelGroups<std::vector<Branch>>(g, finder, combine);
  };
  return p;
}

}  // namespace kiln::passes
