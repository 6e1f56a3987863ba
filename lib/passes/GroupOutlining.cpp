//===- lib/passes/GroupOutlining.cpp - Nodes into group nodes and back ------===//
//
// See GroupOutlining.h.
//
//===----------------------------------------------------------------------===//
#include "GroupOutlining.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "RewriteUtils.h"
#include "kiln/ir/OpSchema.h"

namespace kiln::passes {
namespace {

/// A copy of `n` (schema, name, attributes, result types) in `to`, operands mapped.
ir::Node* copyNode(const ir::Node& n, ir::Graph& to, const std::unordered_map<const ir::Value*, ir::Value*>& map,
                   ir::Node* before) {
  std::vector<ir::Value*> operands;
  for (ir::Value* in : n.inputs()) {
    auto it = in ? map.find(in) : map.end();
    operands.push_back(it != map.end() ? it->second : in);  // unmapped: a value of an enclosing graph
  }
  std::vector<std::string> names;  // the original names where free (inlining), else made unique
  for (const ir::Value* r : n.outputs()) names.push_back(to.uniqueValueName(r->name()));
  ir::Node* copy = to.createNode(n.schema(), operands, names, n.name(), before);
  for (const auto& [name, attr] : n.attributes()) {
    if (attr.kind() == ir::AttrKind::Graph) {
      copy->setAttr(name, ir::Attribute(ir::cloneGraph(*attr.g(), &to)));  // fresh value names
    } else if (attr.kind() == ir::AttrKind::Graphs) {
      std::vector<std::unique_ptr<ir::Graph>> graphs;
      for (const auto& sub : attr.graphs()) graphs.push_back(ir::cloneGraph(*sub, &to));
      copy->setAttr(name, ir::Attribute(std::move(graphs)));
    } else {
      copy->setAttr(name, attr);
    }
  }
  for (size_t i = 0; i < n.numOutputs(); ++i) copy->output(i)->setType(n.output(i)->type());
  return copy;
}

}  // namespace

bool isGroupNode(const ir::Node& node) {
  return (node.op() == ir::Op::KilnFused || node.op() == ir::Op::KilnComposite);
}

bool isGroupBody(const ir::Graph& graph) {
  return graph.parentNode() && isGroupNode(*graph.parentNode());
}

Expected<ir::Node*> outlineGroup(const std::vector<ir::Node*>& members, const std::string& op,
                                 std::vector<std::pair<std::string, ir::Attribute>> attrs) {
  KILN_CHECK(!members.empty(), "outlineGroup of nothing");
  ir::Graph& g = *members.front()->graph();
  std::unordered_set<const ir::Node*> inGroup(members.begin(), members.end());
  std::vector<ir::Value*> operands, results;
  std::unordered_set<const ir::Value*> seen;
  for (ir::Node* n : members) {
    for (ir::Value* in : n->inputs())
      if (in && !(in->producer() && inGroup.count(in->producer())) && seen.insert(in).second) operands.push_back(in);
    for (ir::Value* r : n->outputs())
      for (const ir::Use& u : r->uses())
        if ((u.isGraphOutput() || !inGroup.count(u.user)) && std::find(results.begin(), results.end(), r) == results.end())
          results.push_back(r);
  }
  if (results.empty()) return Error(ErrorCode::Internal, "outlined group has no used result");
  // Constants the members read may sit between them (exporters put them just
  // before their user); they have no operands, so they can move up.
  std::vector<ir::Node*> order = g.nodes();
  auto positionOf = [&](const ir::Node* n) { return std::find(order.begin(), order.end(), n) - order.begin(); };
  auto firstPosition = positionOf(members.front());
  for (ir::Value* v : operands) {
    ir::Node* p = v->producer();
    if (p && p->graph() == &g && p->numInputs() == 0 && positionOf(p) > firstPosition) g.moveBefore(p, members.front());
  }

  auto body = g.createSubgraph(nameBase(*members.back()) + "_body");
  std::unordered_map<const ir::Value*, ir::Value*> map;
  for (ir::Value* v : operands) map[v] = body->addInput(g.uniqueValueName(v->name() + "_in"), v->type());
  for (ir::Node* n : members) {
    ir::Node* copy = copyNode(*n, *body, map, nullptr);
    for (size_t i = 0; i < n->numOutputs(); ++i) map[n->output(i)] = copy->output(i);
  }
  for (ir::Value* r : results) body->addOutput(map.at(r));

  std::string name = nameBase(*members.back());
  size_t sep = op.find("::");
  const ir::OpSchema& schema = ir::opSchema(op.substr(sep + 2), op.substr(0, sep));
  ir::Node* group = g.createNode(schema, operands, results.size(), name + "_" + schema.name, members.front());
  for (auto& [k, v] : attrs) group->setAttr(k, std::move(v));
  group->setAttr("body", ir::Attribute(std::move(body)));
  for (size_t i = 0; i < results.size(); ++i) {
    group->output(i)->setType(results[i]->type());
    replaceValue(results[i], group->output(i), true);
  }
  for (auto it = members.rbegin(); it != members.rend(); ++it) g.eraseNode(*it);
  return group;
}

Status inlineGroup(ir::Node* group) {
  ir::Graph& g = *group->graph();
  const ir::Graph& body = *group->getGraph("body");
  std::unordered_map<const ir::Value*, ir::Value*> map;
  for (size_t i = 0; i < body.inputs().size(); ++i) map[body.inputs()[i]] = group->input(i);
  for (const ir::Node* n : body.nodes()) {
    ir::Node* copy = copyNode(*n, g, map, group);
    for (size_t i = 0; i < n->numOutputs(); ++i) map[n->output(i)] = copy->output(i);
  }
  for (size_t i = 0; i < group->numOutputs(); ++i) {
    const ir::Value* out = body.outputs()[i];
    auto it = map.find(out);
    replaceValue(group->output(i), it != map.end() ? it->second : const_cast<ir::Value*>(out), true);
  }
  g.eraseNode(group);
  return Status::ok();
}

}  // namespace kiln::passes
