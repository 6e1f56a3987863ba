//===- lib/ir/Node.cpp - Values, uses and node operands/attributes ---------===//
//
// Use-list maintenance for operands, attribute storage (sorted by name) and
// typed attribute access with schema defaults.
//
//===----------------------------------------------------------------------===//
#include "kiln/ir/Node.h"

#include <algorithm>

#include "kiln/ir/Graph.h"
#include "kiln/ir/OpSchema.h"

namespace kiln::ir {

void Value::setType(Type type) {
  type_ = std::move(type);
  if (GraphListener* l = graph_->listener()) l->typeChanged(*this);
}

void Value::setName(const std::string& name) {
  if (name == name_) return;
  Graph* root = graph_->root();
  KILN_CHECK(!root->isValueNameTaken(name), "value name '", name, "' is already in use");
  root->releaseName(name_);
  root->claimName(name);
  name_ = name;
}

void Value::removeUse(Use u) {
  auto it = std::find(uses_.begin(), uses_.end(), u);
  KILN_CHECK(it != uses_.end(), "use of '", name_, "' not found");
  uses_.erase(it);
}

void Value::replaceAllUsesWith(Value* other) {
  KILN_CHECK(other != this, "replaceAllUsesWith self");
  std::vector<Use> uses = uses_;
  for (const Use& u : uses) {
    if (u.isGraphOutput())
      u.outputOf->setOutput(u.index, other);
    else
      u.user->setInput(u.index, other);
  }
}

Node::~Node() {
  // Subgraphs first: their nodes may use values that this node's inputs also use.
  attrs_.clear();
  for (size_t i = 0; i < inputs_.size(); ++i)
    if (inputs_[i]) inputs_[i]->removeUse({this, uint32_t(i), nullptr});
}

std::string Node::displayName() const {
  if (!name_.empty()) return name_;
  return outputs_.empty() ? "<unnamed " + opType() + ">" : "<producing " + outputs_[0]->name() + ">";
}

const std::string& Node::opType() const { return schema_->name; }
Op Node::op() const { return schema_->op; }
const std::string& Node::domain() const { return schema_->domain; }
std::string Node::qualifiedOpType() const { return schema_->qualifiedName(); }

void Node::setInput(size_t i, Value* v) {
  KILN_CHECK(i < inputs_.size(), "setInput ", i, " of ", inputs_.size());
  if (inputs_[i] == v) return;
  Value* before = inputs_[i];
  if (before) before->removeUse({this, uint32_t(i), nullptr});
  inputs_[i] = v;
  if (v) v->addUse({this, uint32_t(i), nullptr});
  if (GraphListener* l = graph_->listener()) l->inputChanged(*this, before, v);
}

void Node::addInput(Value* v) {
  inputs_.push_back(nullptr);
  setInput(inputs_.size() - 1, v);
}

void Node::truncateInputs(size_t count) {
  while (inputs_.size() > count) {
    setInput(inputs_.size() - 1, nullptr);
    inputs_.pop_back();
  }
}

std::vector<Value*> Node::outputs() const {
  std::vector<Value*> out;
  for (const auto& v : outputs_) out.push_back(v.get());
  return out;
}

const Attribute* Node::findAttr(std::string_view name) const {
  auto it = std::lower_bound(attrs_.begin(), attrs_.end(), name,
                             [](const auto& a, std::string_view n) { return a.first < n; });
  return (it != attrs_.end() && it->first == name) ? &it->second : nullptr;
}

void Node::setAttr(const std::string& name, Attribute value) {
  for (Graph* g : value.subgraphs()) g->attachTo(this);
  auto it = std::lower_bound(attrs_.begin(), attrs_.end(), name,
                             [](const auto& a, const std::string& n) { return a.first < n; });
  if (it != attrs_.end() && it->first == name)
    it->second = std::move(value);
  else
    attrs_.emplace(it, name, std::move(value));
  if (GraphListener* l = graph_->listener()) l->nodeModified(*this);
}

bool Node::removeAttr(std::string_view name) {
  auto it = std::find_if(attrs_.begin(), attrs_.end(), [&](const auto& a) { return a.first == name; });
  if (it == attrs_.end()) return false;
  attrs_.erase(it);
  if (GraphListener* l = graph_->listener()) l->nodeModified(*this);
  return true;
}

const Attribute& Node::attrOrDefault(std::string_view name) const {
  if (const Attribute* a = findAttr(name)) return *a;
  const AttrSpec* spec = schema_->findAttr(name);
  KILN_CHECK(spec && spec->defaultValue, "node '", name_, "' (", opType(), ") has no attribute '",
             name, "' and the schema gives no default");
  return *spec->defaultValue;
}

#define KILN_TYPED_GETTER(RET, NAME, KIND, ACCESS)                                          \
  RET Node::NAME(std::string_view name) const {                                             \
    const Attribute& a = attrOrDefault(name);                                               \
    KILN_CHECK(a.kind() == AttrKind::KIND, "attribute '", name, "' of '", name_, "' is ",    \
               attrKindName(a.kind()), ", expected ", attrKindName(AttrKind::KIND));        \
    return a.ACCESS();                                                                      \
  }
KILN_TYPED_GETTER(int64_t, getInt, Int, i)
KILN_TYPED_GETTER(float, getFloat, Float, f)
KILN_TYPED_GETTER(const std::string&, getString, String, s)
KILN_TYPED_GETTER(const std::vector<int64_t>&, getInts, Ints, ints)
KILN_TYPED_GETTER(const std::vector<float>&, getFloats, Floats, floats)
KILN_TYPED_GETTER(const std::vector<std::string>&, getStrings, Strings, strings)
KILN_TYPED_GETTER(const Tensor&, getTensor, Tensor, t)
KILN_TYPED_GETTER(Graph*, getGraph, Graph, g)
#undef KILN_TYPED_GETTER

std::vector<Graph*> Node::subgraphs() const {
  std::vector<Graph*> out;
  for (const auto& [name, attr] : attrs_)
    for (Graph* g : attr.subgraphs()) out.push_back(g);
  return out;
}

}  // namespace kiln::ir
