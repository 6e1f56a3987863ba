//===- kiln/ir/Node.h - Values, uses and nodes -------------------*- C++ -*-===//
//
// A Value is one result of a node (or an input of a graph); it knows its type,
// its name and every use of it, including uses as a graph output. A Node is one
// operation: an op schema, operands (null for an omitted optional input),
// results, attributes and, for control flow, owned subgraphs. Nodes and values
// are created and destroyed only through their Graph.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kiln/ir/Attribute.h"
#include "kiln/ir/Op.h"
#include "kiln/ir/Type.h"

namespace kiln::ir {

class Graph;
class Node;
struct OpSchema;

/// One use of a value: operand `index` of `user`, or output `index` of `graph`.
struct Use {
  Node* user = nullptr;
  uint32_t index = 0;
  Graph* outputOf = nullptr;
  bool isGraphOutput() const { return user == nullptr; }
  bool operator==(const Use&) const = default;
};

class Value {
 public:
  const std::string& name() const { return name_; }
  /// Renames the value; the name must be unused in its scope (checked).
  void setName(const std::string& name);
  const Type& type() const { return type_; }
  void setType(Type type);
  /// The tensor type (checked to be a tensor).
  const TensorType& tensorType() const { return type_.tensor(); }

  /// Producing node, or null for a graph input.
  Node* producer() const { return producer_; }
  /// Result index in the producer, or input index in the graph.
  uint32_t index() const { return index_; }
  Graph* graph() const { return graph_; }
  bool isGraphInput() const { return producer_ == nullptr; }

  const std::vector<Use>& uses() const { return uses_; }
  bool hasUses() const { return !uses_.empty(); }
  /// Redirects every use (operands and graph outputs) to `other`.
  void replaceAllUsesWith(Value* other);

 private:
  friend class Graph;
  friend class Node;
  Value(Graph* graph, Node* producer, uint32_t index, std::string name, Type type)
      : graph_(graph), producer_(producer), index_(index), name_(std::move(name)),
        type_(std::move(type)) {}
  void addUse(Use u) { uses_.push_back(u); }
  void removeUse(Use u);

  Graph* graph_;
  Node* producer_;
  uint32_t index_;
  std::string name_;
  Type type_;
  std::vector<Use> uses_;
};

class Node {
 public:
  ~Node();
  const OpSchema& schema() const { return *schema_; }
  /// The op, as an enum value (compare ops with it, not with opType()).
  Op op() const;
  const std::string& opType() const;
  const std::string& domain() const;
  /// Op name qualified by its domain when not the default one ("ai.onnx.ml::Scaler").
  std::string qualifiedOpType() const;
  const std::string& name() const { return name_; }
  void setName(std::string name) { name_ = std::move(name); }
  /// The name, or "<producing v>" (its first result) for an unnamed node, for messages.
  std::string displayName() const;
  Graph* graph() const { return graph_; }

  size_t numInputs() const { return inputs_.size(); }
  /// Operand i, or null when the optional input is omitted.
  Value* input(size_t i) const { return i < inputs_.size() ? inputs_[i] : nullptr; }
  bool hasInput(size_t i) const { return input(i) != nullptr; }
  const std::vector<Value*>& inputs() const { return inputs_; }
  void setInput(size_t i, Value* v);
  void addInput(Value* v);
  /// Drops trailing operands from index `count` on.
  void truncateInputs(size_t count);

  size_t numOutputs() const { return outputs_.size(); }
  Value* output(size_t i) const { return outputs_[i].get(); }
  std::vector<Value*> outputs() const;

  // Attributes, kept sorted by name.
  const std::vector<std::pair<std::string, Attribute>>& attributes() const { return attrs_; }
  const Attribute* findAttr(std::string_view name) const;
  bool hasAttr(std::string_view name) const { return findAttr(name) != nullptr; }
  void setAttr(const std::string& name, Attribute value);
  bool removeAttr(std::string_view name);

  // Typed getters: the node's attribute, else the schema default. The kind must
  // match and a required attribute must be present (both checked; the importer
  // and the verifier guarantee them).
  int64_t getInt(std::string_view name) const;
  float getFloat(std::string_view name) const;
  const std::string& getString(std::string_view name) const;
  const std::vector<int64_t>& getInts(std::string_view name) const;
  const std::vector<float>& getFloats(std::string_view name) const;
  const std::vector<std::string>& getStrings(std::string_view name) const;
  const Tensor& getTensor(std::string_view name) const;
  Graph* getGraph(std::string_view name) const;

  /// Every subgraph owned by this node's attributes.
  std::vector<Graph*> subgraphs() const;

 private:
  friend class Graph;
  Node(Graph* graph, const OpSchema* schema, std::string name)
      : graph_(graph), schema_(schema), name_(std::move(name)) {}
  const Attribute& attrOrDefault(std::string_view name) const;

  Graph* graph_;
  const OpSchema* schema_;
  std::string name_;
  std::vector<Value*> inputs_;
  std::vector<std::unique_ptr<Value>> outputs_;
  std::vector<std::pair<std::string, Attribute>> attrs_;
  std::list<std::unique_ptr<Node>>::iterator position_;
};

/// True for a non-null node of op `op`.
inline bool isOp(const Node* node, Op op) { return node && node->op() == op; }

}  // namespace kiln::ir
