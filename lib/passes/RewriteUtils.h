//===- lib/passes/RewriteUtils.h - Small helpers every rewrite needs -*- C++ -*-===//
//
// What passes share: reading a value's constant, making Constant nodes,
// checking "every element equals x", replacing a value while keeping graph
// output names (users and the ONNX Runtime comparison find outputs by name),
// and creating a node whose result types are inferred at once. Private to
// lib/passes.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "kiln/ir/Graph.h"
#include "kiln/ir/OpSchema.h"
#include "kiln/support/Status.h"
#include "kiln/support/Tensor.h"

namespace kiln::passes {

/// The tensor of a default-domain Constant node producing `v`, directly or
/// through Identity nodes (repeated initializers); null otherwise.
const Tensor* constantValue(const ir::Value* v);
/// A Constant node holding `value`, inserted before `before` (or at the end),
/// its result named after `base`.
ir::Value* makeConstant(ir::Graph& graph, Tensor value, const std::string& base, ir::Node* before);
/// True when `v` is a constant every element of which equals `x` (any numeric type).
bool isConstantFilledWith(const ir::Value* v, double x);
/// A constant's value as float32 (for weight arithmetic); nullopt when not a
/// float constant.
std::optional<Tensor> floatConstant(const ir::Value* v);

/// A 2-D tensor's transpose (any element type).
Tensor transposed2d(const Tensor& t);
/// A tensor's dims permuted (ONNX Transpose: result dim i is input dim perm[i]).
Tensor permuted(const Tensor& t, const std::vector<int64_t>& perm);
/// Tensors of one dtype joined along `axis` (their other dims equal).
Tensor concatenated(const std::vector<const Tensor*>& parts, int64_t axis);
/// A matrix part of joinedColumns: [K, N], or [N, K] read transposed.
struct ColumnPart {
  const Tensor* tensor;
  bool transposed;
  int64_t rows() const { return tensor->dim(transposed ? 1 : 0); }  ///< K
  int64_t cols() const { return tensor->dim(transposed ? 0 : 1); }  ///< N
};
/// 2-D tensors of one dtype joined along their columns into [K, N_1 + .. + N_n],
/// a transposed part transposed on the way (one write of the result, no
/// intermediate transpose).
Tensor joinedColumns(const std::vector<ColumnPart>& parts);
/// The 2-D constant W when `v` is Transpose(W, perm=[1,0]) (a dense layer's
/// weights as exporters store them, [N, K]); null otherwise.
const Tensor* transposedConstant(const ir::Value* v);

/// Every dim of a tensor value as an expression (constants and symbolic
/// dims), or nullopt when a dim or the rank is unknown.
std::optional<std::vector<DimExpr>> knownDims(const ir::Value* v);
/// The shape operand of a Reshape from `from` to dims `to`: constants, and
/// each symbolic dim as ONNX's Reshape can name it (0: the input's dim at the
/// same position, when equal; -1: inferred, once); nullopt when `to` has a
/// symbolic dim it cannot name.
std::optional<Tensor> reshapeShape(const ir::TensorType& from, const std::vector<DimExpr>& to);

/// Redirects every use of `from` to `to`. When `from` is a graph output its
/// name moves to `to` (or, if `to` cannot take it because it is a graph input
/// or already an output, an Identity keeps the name). With `takeName` (for a
/// `to` the rewrite just created) the name moves in any case, so rewritten
/// IR keeps the exporter's value names.
void replaceValue(ir::Value* from, ir::Value* to, bool takeName = false);
/// True when `v` is an output of its graph.
bool isGraphOutput(const ir::Value* v);
/// A single-use value's only user, else null.
ir::Node* soleUser(const ir::Value* v);

/// Creates `op` ("Conv", or "kiln::Gelu" for another domain) over `inputs`
/// before `before`, named `name`, with result types inferred; an Internal
/// error when inference fails (a pass bug).
Expected<ir::Node*> createTypedNode(ir::Graph& graph, const std::string& op, const std::vector<ir::Value*>& inputs,
                                    const std::vector<std::pair<std::string, ir::Attribute>>& attrs,
                                    const std::string& name, ir::Node* before, size_t numOutputs = 1);

/// The node of `nodes` (all in one graph) that comes first in graph order.
ir::Node* earliestNode(const std::vector<ir::Node*>& nodes);

/// Erases `node` and then every producer chain that became unused; each
/// erased node is added to `erased` when given (to compare, not to read).
void eraseWithDeadProducers(ir::Node* node, std::vector<const ir::Node*>* erased = nullptr);
/// Replaces a single-result `node` by `result` (which takes its name) and
/// erases it with its dead producers; an Internal error naming `pass` when
/// `result`'s type differs from the node's static one (a pass bug).
Status replaceNode(ir::Node* node, ir::Value* result, const std::string& pass);
/// Replaces a single-result `node` by a new `op` node over `inputs`, created
/// before it and named `name`: its users read the new result (which takes the
/// old one's name) and `node` is erased with its dead producers. The tail of
/// a rewrite that turns a matched pattern into one op.
Expected<ir::Node*> replaceWithNewNode(ir::Node* node, const std::string& op, const std::vector<ir::Value*>& inputs,
                                       const std::vector<std::pair<std::string, ir::Attribute>>& attrs,
                                       const std::string& name);

/// A base for names of values a rewrite of `node` creates: its name, else its
/// first result's name.
std::string nameBase(const ir::Node& node);

/// Creates the nodes of a rewrite of `node`: each before it, named after it
/// plus a suffix, with result types inferred.
class NodeBuilder {
 public:
  explicit NodeBuilder(ir::Node* node) : g_(*node->graph()), n_(node), base_(nameBase(*node)) {}
  ir::Value* constant(Tensor t, const std::string& suffix) { return makeConstant(g_, std::move(t), base_ + suffix, n_); }
  ir::Value* ints(const std::vector<int64_t>& v, const std::string& suffix) {
    return constant(Tensor::fromVector<int64_t>({int64_t(v.size())}, v), suffix);
  }
  /// The first result of a new `op` node.
  Expected<ir::Value*> node(const std::string& op, const std::vector<ir::Value*>& inputs,
                            const std::vector<std::pair<std::string, ir::Attribute>>& attrs, const std::string& suffix) {
    KILN_ASSIGN(ir::Node * m, createTypedNode(g_, op, inputs, attrs, base_ + suffix, n_));
    return m->output(0);
  }
  Expected<ir::Value*> reshape(ir::Value* x, const std::vector<int64_t>& dims, const std::string& suffix) {
    return node("Reshape", {x, ints(dims, suffix + "_shape")}, {}, suffix);
  }

 private:
  ir::Graph& g_;
  ir::Node* n_;
  std::string base_;
};

/// Equal kind and value (tensors: type and bytes); graph attributes never compare equal.
bool attributesEqual(const ir::Attribute& a, const ir::Attribute& b);


/// `name` + "_folded", without stacking the suffix when folded again.
std::string foldedName(const std::string& name);

/// True when `pred` holds for a node of `graph` or of a graph nested in it
/// (the usual `applicable` of a pass).
bool anyNode(const ir::Graph& graph, const std::function<bool(const ir::Node&)>& pred);
/// Runs `rewrite` on every graph nested in `graph` (innermost first), then on
/// `graph` itself; true when any call changed something.
Expected<bool> rewriteGraphs(ir::Graph& graph, const std::function<Expected<bool>(ir::Graph&)>& rewrite);
/// For combine-style passes: `groupsFor(x)` lists groups of parallel users of
/// value x. True when some graph has one.
template <class Group>
bool anyParallelGroup(const ir::Graph& graph, const std::function<std::vector<Group>(const ir::Value*)>& groupsFor);
/// Collects every graph's groups first (combining erases results that are
/// candidates too), then calls `combine(graph, x, group)` on each.
template <class Group>
Expected<bool> combineParallelGroups(ir::Graph& graph,
                                     const std::function<std::vector<Group>(const ir::Value*)>& groupsFor,
                                     const std::function<Status(ir::Graph&, ir::Value*, const Group&)>& combine);
/// Every value a node of `graph` may read: its inputs and all node results.
std::vector<ir::Value*> definedValues(const ir::Graph& graph);

using ir::isOp;

template <class Group>
bool anyParallelGroup(const ir::Graph& graph, const std::function<std::vector<Group>(const ir::Value*)>& groupsFor) {
  auto inGraph = [&](const ir::Graph& g) {
    for (ir::Value* v : definedValues(g))
      if (!groupsFor(v).empty()) return true;
    return false;
  };
  return inGraph(graph) || anyNode(graph, [&](const ir::Node& n) {
           for (const ir::Graph* sub : n.subgraphs())
             if (inGraph(*sub)) return true;
           return false;
         });
}

template <class Group>
Expected<bool> combineParallelGroups(ir::Graph& graph,
                                     const std::function<std::vector<Group>(const ir::Value*)>& groupsFor,
                                     const std::function<Status(ir::Graph&, ir::Value*, const Group&)>& combine) {
  return rewriteGraphs(graph, [&](ir::Graph& g) -> Expected<bool> {
    std::vector<std::pair<ir::Value*, Group>> work;
    for (ir::Value* x : definedValues(g))
      for (auto& group : groupsFor(x)) work.emplace_back(x, std::move(group));
    for (const auto& [x, group] : work) KILN_TRY(combine(g, x, group));
    return !work.empty();
  });
}

}  // namespace kiln::passes
