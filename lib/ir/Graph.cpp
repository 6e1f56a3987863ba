//===- lib/ir/Graph.cpp - Node lists, graph inputs/outputs, names, cloning -===//
//
// Node creation and erasure with use-list upkeep, scoped unique value names
// (one table per root graph), subgraph attachment and deep cloning.
//
//===----------------------------------------------------------------------===//
#include "kiln/ir/Graph.h"

#include <algorithm>
#include <cctype>
#include <unordered_map>
#include <unordered_set>

#include "kiln/ir/OpSchema.h"

namespace kiln::ir {

Graph::Graph(std::string name) : name_(std::move(name)) {}

Graph::~Graph() {
  // Drop every use first, so nodes can be freed in any order (a graph being
  // destroyed need not be topologically sorted, e.g. after a failed rewrite).
  dropAllReferences();
  nodes_.clear();
}

void Graph::dropAllReferences() {
  for (size_t i = 0; i < outputs_.size(); ++i)
    if (outputs_[i]) outputs_[i]->removeUse({nullptr, uint32_t(i), this});
  outputs_.clear();
  for (const auto& n : nodes_) {
    for (Graph* sub : n->subgraphs()) sub->dropAllReferences();
    n->truncateInputs(0);
  }
}

Graph* Graph::root() {
  Graph* g = this;
  while (g->parent_) g = g->parent_;
  return g;
}
const Graph* Graph::root() const { return const_cast<Graph*>(this)->root(); }

void Graph::setListener(GraphListener* listener) {
  KILN_CHECK(!parent_, "setListener on subgraph '", name_, "'");
  listener_ = listener;
}

bool Graph::isValueNameTaken(const std::string& name) const {
  return root()->names_.count(name) != 0;
}
void Graph::claimName(const std::string& name) {
  bool inserted = root()->names_.insert(name).second;
  KILN_CHECK(inserted, "value name '", name, "' is already in use");
}
void Graph::releaseName(const std::string& name) { root()->names_.erase(name); }

std::string Graph::uniqueValueName(std::string_view base) {
  std::string b = base.empty() ? std::string("v") : std::string(base);
  Graph* r = root();
  if (!r->names_.count(b)) return b;
  uint64_t& counter = r->nameCounters_[b];
  std::string candidate;
  do {
    candidate = b + "_" + std::to_string(++counter);
  } while (r->names_.count(candidate));
  return candidate;
}

std::unique_ptr<Graph> Graph::createSubgraph(std::string name) {
  auto g = std::make_unique<Graph>(std::move(name));
  g->parent_ = this;
  return g;
}

void Graph::claimNamesRecursively() {
  for (Value* v : inputView_) claimName(v->name());
  for (const auto& n : nodes_) {
    for (const auto& v : n->outputs_) claimName(v->name());
    for (Graph* g : n->subgraphs()) g->claimNamesRecursively();
  }
}

void Graph::attachTo(Node* node) {
  Graph* newParent = node->graph();
  if (parent_ != newParent) {
    bool wasRoot = parent_ == nullptr;
    parent_ = newParent;
    claimNamesRecursively();
    if (wasRoot) {
      names_.clear();
      nameCounters_.clear();
    }
  }
  parentNode_ = node;
}

Value* Graph::addInput(const std::string& name, Type type) {
  claimName(name);
  inputs_.push_back(std::unique_ptr<Value>(
      new Value(this, nullptr, uint32_t(inputs_.size()), name, std::move(type))));
  inputView_.push_back(inputs_.back().get());
  return inputView_.back();
}

void Graph::eraseInput(size_t i) {
  KILN_CHECK(i < inputs_.size() && !inputs_[i]->hasUses(), "eraseInput of a used input");
  releaseName(inputs_[i]->name());
  inputs_.erase(inputs_.begin() + long(i));
  inputView_.erase(inputView_.begin() + long(i));
  for (size_t j = i; j < inputs_.size(); ++j) inputs_[j]->index_ = uint32_t(j);
}

void Graph::addOutput(Value* v) {
  outputs_.push_back(v);
  v->addUse({nullptr, uint32_t(outputs_.size() - 1), this});
  if (GraphListener* l = listener()) l->outputChanged(*this, *v);
}

void Graph::setOutput(size_t i, Value* v) {
  KILN_CHECK(i < outputs_.size(), "setOutput ", i, " of ", outputs_.size());
  Value* before = outputs_[i];
  before->removeUse({nullptr, uint32_t(i), this});
  outputs_[i] = v;
  v->addUse({nullptr, uint32_t(i), this});
  if (GraphListener* l = listener()) {
    l->outputChanged(*this, *before);
    l->outputChanged(*this, *v);
  }
}

void Graph::eraseOutput(size_t i) {
  KILN_CHECK(i < outputs_.size(), "eraseOutput ", i, " of ", outputs_.size());
  if (GraphListener* l = listener()) l->outputChanged(*this, *outputs_[i]);
  for (size_t j = i; j < outputs_.size(); ++j) outputs_[j]->removeUse({nullptr, uint32_t(j), this});
  outputs_.erase(outputs_.begin() + long(i));
  for (size_t j = i; j < outputs_.size(); ++j) outputs_[j]->addUse({nullptr, uint32_t(j), this});
}

Node* Graph::createNode(const OpSchema& schema, std::span<Value* const> inputs,
                        size_t numOutputs, const std::string& name, Node* before) {
  return createNode(schema, inputs, std::vector<std::string>(numOutputs), name, before);
}

Node* Graph::createNode(const OpSchema& schema, std::span<Value* const> inputs,
                        const std::vector<std::string>& outputNames, const std::string& name,
                        Node* before) {
  KILN_CHECK(!before || before->graph() == this, "insertion point in another graph");
  auto owned = std::unique_ptr<Node>(new Node(this, &schema, name));
  Node* node = owned.get();
  for (Value* v : inputs) node->addInput(v);
  std::string base = name;
  if (base.empty()) {
    base = schema.name;
    std::transform(base.begin(), base.end(), base.begin(), [](unsigned char c) { return std::tolower(c); });
  }
  for (size_t i = 0; i < outputNames.size(); ++i) {
    std::string vname = outputNames[i].empty() ? uniqueValueName(base) : outputNames[i];
    claimName(vname);
    node->outputs_.push_back(std::unique_ptr<Value>(new Value(this, node, uint32_t(i), vname, Type())));
  }
  auto pos = before ? before->position_ : nodes_.end();
  node->position_ = nodes_.insert(pos, std::move(owned));
  if (GraphListener* l = listener()) l->nodeInserted(*node);
  return node;
}

void Graph::eraseNode(Node* node) {
  KILN_CHECK(node->graph() == this, "eraseNode of a node in another graph");
  for (const auto& v : node->outputs_) {
    KILN_CHECK(!v->hasUses(), "erasing node '", node->name(), "' whose result '", v->name(),
               "' is still used");
    releaseName(v->name());
  }
  if (GraphListener* l = listener()) l->nodeErasing(*node);
  nodes_.erase(node->position_);
}

void Graph::moveBefore(Node* node, Node* before) {
  KILN_CHECK(node->graph() == this && (!before || before->graph() == this), "moveBefore across graphs");
  nodes_.splice(before ? before->position_ : nodes_.end(), nodes_, node->position_);
  if (GraphListener* l = listener()) l->nodeMoved(*node);
}

Node* Graph::nextNode(const Node* node) const {
  KILN_CHECK(node->graph() == this, "nextNode of a node in another graph");
  auto next = std::next(node->position_);
  return next == nodes_.end() ? nullptr : next->get();
}

Node* Graph::prevNode(const Node* node) const {
  KILN_CHECK(node->graph() == this, "prevNode of a node in another graph");
  return node->position_ == nodes_.begin() ? nullptr : std::prev(node->position_)->get();
}

std::vector<Node*> Graph::nodes() const {
  std::vector<Node*> out;
  out.reserve(nodes_.size());
  for (const auto& n : nodes_) out.push_back(n.get());
  return out;
}

namespace {
using ValueMap = std::unordered_map<const Value*, Value*>;

void cloneBody(const Graph& from, Graph& to, ValueMap& map);

Value* mappedValue(const ValueMap& map, Value* v) {
  if (!v) return nullptr;
  auto it = map.find(v);
  return it == map.end() ? v : it->second;  // values of enclosing graphs stay shared
}

/// A copy of `n` at the end of `to`, operands and captured values mapped
/// through `map`, which learns the copy's results.
Node* cloneNode(const Node& n, Graph& to, ValueMap& map) {
  std::vector<Value*> ins;
  for (Value* v : n.inputs()) ins.push_back(mappedValue(map, v));
  std::vector<std::string> names;
  for (Value* v : n.outputs()) names.push_back(to.uniqueValueName(v->name()));
  Node* copy = to.createNode(n.schema(), ins, names, n.name());
  for (size_t i = 0; i < n.numOutputs(); ++i) {
    copy->output(i)->setType(n.output(i)->type());
    map[n.output(i)] = copy->output(i);
  }
  for (const auto& [name, attr] : n.attributes()) {
    if (attr.kind() == AttrKind::Graph) {
      auto sub = to.createSubgraph(attr.g()->name());
      cloneBody(*attr.g(), *sub, map);
      copy->setAttr(name, Attribute(std::move(sub)));
    } else if (attr.kind() == AttrKind::Graphs) {
      std::vector<std::unique_ptr<Graph>> subs;
      for (const auto& g : attr.graphs()) {
        auto sub = to.createSubgraph(g->name());
        cloneBody(*g, *sub, map);
        subs.push_back(std::move(sub));
      }
      copy->setAttr(name, Attribute(std::move(subs)));
    } else {
      copy->setAttr(name, attr);
    }
  }
  return copy;
}

void cloneBody(const Graph& from, Graph& to, ValueMap& map) {
  for (Value* in : from.inputs()) map[in] = to.addInput(to.uniqueValueName(in->name()), in->type());
  for (Node* n : from.nodes()) cloneNode(*n, to, map);
  for (Value* out : from.outputs()) to.addOutput(mappedValue(map, out));
}

/// Adds to `out` the values `g` (recursively) uses but does not define.
void collectCaptured(const Graph& g, std::unordered_set<const Value*>& defined, std::vector<Value*>& out) {
  for (Value* in : g.inputs()) defined.insert(in);
  auto use = [&](Value* v) {
    if (v && !defined.count(v) && std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
  };
  for (Node* n : g.nodes()) {
    for (Value* v : n->inputs()) use(v);
    for (Graph* sub : n->subgraphs()) collectCaptured(*sub, defined, out);
    for (Value* v : n->outputs()) defined.insert(v);
  }
  for (Value* v : g.outputs()) use(v);
}
}  // namespace

std::unique_ptr<Graph> cloneGraph(const Graph& graph, Graph* scope) {
  Graph* parent = scope ? scope : graph.parent();
  auto out = parent ? parent->createSubgraph(graph.name()) : std::make_unique<Graph>(graph.name());
  ValueMap map;
  cloneBody(graph, *out, map);
  return out;
}

std::vector<Value*> inlineGraph(const Graph& body, const std::vector<Value*>& inputs, Node* before) {
  KILN_CHECK(inputs.size() == body.inputs().size(), "inlineGraph: ", body.name(), " takes ", body.inputs().size(),
             " inputs, given ", inputs.size());
  Graph& to = *before->graph();
  ValueMap map;
  for (size_t i = 0; i < inputs.size(); ++i) map[body.inputs()[i]] = inputs[i];
  for (Node* n : body.nodes()) {
    to.moveBefore(cloneNode(*n, to, map), before);
  }
  std::vector<Value*> outputs;
  for (Value* out : body.outputs()) outputs.push_back(mappedValue(map, out));
  return outputs;
}

std::vector<Value*> capturedValues(const Node& node) {
  std::vector<Value*> out;
  std::unordered_set<const Value*> defined;
  for (Graph* sub : node.subgraphs()) collectCaptured(*sub, defined, out);
  return out;
}

Node* ancestorIn(const Graph& graph, Node* node) {
  while (node && node->graph() != &graph) node = node->graph()->parentNode();
  return node;
}

std::unique_ptr<Graph> extractGraph(const std::vector<const Node*>& nodes, const std::vector<Value*>& inputs,
                                    const std::vector<Value*>& outputs, const std::string& name) {
  auto out = std::make_unique<Graph>(name);
  ValueMap map;
  for (Value* in : inputs) map[in] = out->addInput(out->uniqueValueName(in->name()), in->type());
  for (const Node* n : nodes) {
    std::vector<Value*> reads = n->inputs();
    for (Value* v : capturedValues(*n)) reads.push_back(v);
    for (Value* v : reads)
      KILN_CHECK(!v || map.count(v), "extractGraph: node ", n->displayName(), " reads '", v ? v->name() : "",
                 "', which is neither an input nor computed by an earlier node");
    cloneNode(*n, *out, map);
  }
  for (Value* v : outputs) {
    Value* mapped = mappedValue(map, v);
    KILN_CHECK(mapped != v || std::find(inputs.begin(), inputs.end(), v) != inputs.end(), "extractGraph: output '",
               v->name(), "' is computed by none of the nodes");
    out->addOutput(mapped);
  }
  return out;
}

}  // namespace kiln::ir
