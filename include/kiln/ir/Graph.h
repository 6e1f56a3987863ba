//===- kiln/ir/Graph.h - Graphs: ordered nodes, inputs, outputs -*- C++ -*-===//
//
// A Graph owns its nodes in a topological order, its input values and the list
// of its output values. Subgraphs (If/Loop/Scan bodies) know their parent graph
// and node, and may use values of enclosing graphs (ONNX's implicit capture).
// Value names are unique across a root graph and all its subgraphs. A
// GraphListener set on a root graph hears every change to its tree.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <list>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "kiln/ir/Node.h"

namespace kiln::ir {

/// Told of each change to a graph tree while set on its root (a rewrite
/// driver's worklist, as mlir's RewriterBase::Listener). Calls come after
/// the change except nodeErasing, which comes while the node is intact.
class GraphListener {
 public:
  virtual ~GraphListener() = default;
  virtual void nodeInserted(Node& node) {}
  virtual void nodeErasing(Node& node) {}
  /// Moved to another place in its graph's order.
  virtual void nodeMoved(Node& node) {}
  /// An attribute set or removed.
  virtual void nodeModified(Node& node) {}
  /// An operand of `user` changed from `before` to `after` (either may be null).
  virtual void inputChanged(Node& user, Value* before, Value* after) {}
  /// `value` became or stopped being one of `graph`'s outputs.
  virtual void outputChanged(Graph& graph, Value& value) {}
  virtual void typeChanged(Value& value) {}
};

class Graph {
 public:
  explicit Graph(std::string name = "main");
  ~Graph();
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  const std::string& name() const { return name_; }
  void setName(std::string name) { name_ = std::move(name); }
  /// Enclosing graph and node for a subgraph; null for a root graph.
  Graph* parent() const { return parent_; }
  Node* parentNode() const { return parentNode_; }
  /// A new, empty subgraph in this graph's scope (its values share the root's
  /// name table); it becomes a node's body when set as a graph attribute.
  std::unique_ptr<Graph> createSubgraph(std::string name);
  /// Makes this graph a subgraph of `node` (called when the node takes ownership).
  void attachTo(Node* node);

  // Inputs and outputs.
  Value* addInput(const std::string& name, Type type);
  const std::vector<Value*>& inputs() const { return inputView_; }
  /// Removes input i, which must be unused (checked).
  void eraseInput(size_t i);
  void addOutput(Value* v);
  void setOutput(size_t i, Value* v);
  void eraseOutput(size_t i);
  const std::vector<Value*>& outputs() const { return outputs_; }

  // Nodes.
  /// Creates a node with `numOutputs` results (named after `name` or the op) and
  /// inserts it before `before`, or at the end when `before` is null.
  Node* createNode(const OpSchema& schema, std::span<Value* const> inputs, size_t numOutputs,
                   const std::string& name = "", Node* before = nullptr);
  /// As above, with result names (each must be free in this scope; "" = generated).
  Node* createNode(const OpSchema& schema, std::span<Value* const> inputs,
                   const std::vector<std::string>& outputNames, const std::string& name = "",
                   Node* before = nullptr);
  /// Destroys a node; its results must have no uses (checked).
  void eraseNode(Node* node);
  void moveBefore(Node* node, Node* before);
  size_t numNodes() const { return nodes_.size(); }
  /// Snapshot of the nodes in order (safe to erase while iterating it).
  std::vector<Node*> nodes() const;
  Node* firstNode() const { return nodes_.empty() ? nullptr : nodes_.front().get(); }
  /// The node after / before `node` (one of this graph's) in order; null at the ends.
  Node* nextNode(const Node* node) const;
  Node* prevNode(const Node* node) const;

  /// The listener of this graph's tree (set on its root); null when none.
  GraphListener* listener() const { return root()->listener_; }
  /// Sets the listener of the tree rooted here (this must be a root graph); null clears it.
  void setListener(GraphListener* listener);

  // Names.
  /// A value name not used in this graph's root scope, derived from `base`.
  std::string uniqueValueName(std::string_view base);
  bool isValueNameTaken(const std::string& name) const;
  /// Root graph of this graph's tree.
  Graph* root();
  const Graph* root() const;

 private:
  friend class Value;
  void claimName(const std::string& name);
  void releaseName(const std::string& name);
  void claimNamesRecursively();
  /// Removes every use held by this graph's nodes and outputs (recursively).
  void dropAllReferences();

  std::string name_;
  Graph* parent_ = nullptr;
  Node* parentNode_ = nullptr;
  std::vector<std::unique_ptr<Value>> inputs_;
  std::vector<Value*> inputView_;
  std::vector<Value*> outputs_;
  std::list<std::unique_ptr<Node>> nodes_;
  // Only meaningful on a root graph: names in use, and a counter per base name.
  std::unordered_set<std::string> names_;
  std::unordered_map<std::string, uint64_t> nameCounters_;
  GraphListener* listener_ = nullptr;
};

/// Deep copy of a graph (nodes, subgraphs, types) created in the same scope as
/// `graph` (names made unique there), or as a subgraph of `scope` when given
/// (to become the body of a node in `scope`). Uses of values from enclosing
/// graphs keep pointing at them.
std::unique_ptr<Graph> cloneGraph(const Graph& graph, Graph* scope = nullptr);

/// Copies `body`'s nodes (subgraphs deep-copied) into `before`'s graph, in
/// order, ahead of `before`, reading `inputs` where body reads its inputs
/// (one each); returns what the copies compute for body's outputs (a value
/// of an enclosing graph stays itself). Used to inline an If's branch.
std::vector<Value*> inlineGraph(const Graph& body, const std::vector<Value*>& inputs, Node* before);

/// Values that `node`'s subgraphs (at any depth) use but do not define: the
/// values of enclosing graphs the node reads implicitly, in first-use order.
std::vector<Value*> capturedValues(const Node& node);

/// The node of `graph` that is `node` or holds it in a subgraph (at any
/// depth); null when `node` lies outside `graph`.
Node* ancestorIn(const Graph& graph, Node* node);

/// A new root graph computing `outputs` with copies of `nodes` (in order;
/// subgraphs deep-copied), reading `inputs` as its inputs (same names and
/// types). Every value the copies read must be an input or a result of an
/// earlier node, including values the nodes' subgraphs capture.
std::unique_ptr<Graph> extractGraph(const std::vector<const Node*>& nodes, const std::vector<Value*>& inputs,
                                    const std::vector<Value*>& outputs, const std::string& name);

}  // namespace kiln::ir
