//===- lib/ir/GraphDot.cpp - Graphviz pictures of a graph -----------------===//
//
// Nodes are numbered in graph order (n0, n1, ...), graph inputs and outputs
// get their own ellipses (in0, out0, ...); a node in a cluster is declared
// inside its cluster's subgraph, every other node at the top level.
//
//===----------------------------------------------------------------------===//
#include "kiln/ir/GraphDot.h"

#include <map>
#include <sstream>

#include "kiln/ir/Node.h"
#include "kiln/support/Strings.h"

namespace kiln::ir {
namespace {

/// `text` inside a DOT string: control characters written out, quotes and backslashes escaped.
std::string dotText(const std::string& text) {
  std::string out;
  for (char c : printable(text)) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

bool isConstant(const Node* n) { return n && n->op() == Op::Constant; }

class DotWriter {
 public:
  explicit DotWriter(const Graph& g) : g_(g) {
    for (Node* n : g.nodes()) ids_[n] = "n" + std::to_string(ids_.size());
    for (size_t i = 0; i < g.inputs().size(); ++i) inputIds_[g.inputs()[i]] = "in" + std::to_string(i);
  }

  std::string write(const std::vector<DotCluster>& clusters) {
    os_ << "digraph \"" << dotText(g_.name()) << "\" {\n  rankdir=TB;\n"
        << "  node [shape=box, style=rounded, fontname=\"Helvetica\", fontsize=10];\n"
        << "  edge [fontname=\"Helvetica\", fontsize=8, color=\"#555555\"];\n";
    for (const Value* v : g_.inputs())
      os_ << "  " << inputIds_.at(v) << " [shape=ellipse, label=\"" << dotText(v->name()) << "\\n" << dotText(v->type().str())
          << "\"];\n";
    std::map<const Node*, bool> clustered;
    for (size_t c = 0; c < clusters.size(); ++c) {
      const DotCluster& cl = clusters[c];
      os_ << "  subgraph cluster_" << c << " {\n    label=\"" << dotText(cl.label) << "\";\n    fontname=\"Helvetica\";\n"
          << (cl.highlighted ? "    style=filled; fillcolor=\"#f8d7d7\"; color=\"#b03030\";\n"
                             : "    style=rounded; color=\"#3070b0\";\n");
      for (const Node* n : cl.nodes) {
        if (isConstant(n) || !ids_.count(n)) continue;
        declareNode(*n, "    ");
        clustered[n] = true;
      }
      os_ << "  }\n";
    }
    for (Node* n : g_.nodes())
      if (!isConstant(n) && !clustered.count(n)) declareNode(*n, "  ");
    for (Node* n : g_.nodes())
      if (!isConstant(n))
        for (Value* v : n->inputs()) edge(v, ids_.at(n));
    for (size_t i = 0; i < g_.outputs().size(); ++i) {
      Value* v = g_.outputs()[i];
      os_ << "  out" << i << " [shape=ellipse, label=\"" << dotText(v->name()) << "\"];\n";
      edge(v, "out" + std::to_string(i));
    }
    os_ << "}\n";
    return os_.str();
  }

 private:
  void declareNode(const Node& n, const char* indent) {
    os_ << indent << ids_.at(&n) << " [label=\"" << dotText(n.qualifiedOpType());
    if (!n.name().empty()) os_ << "\\n" << dotText(n.name());
    os_ << "\"];\n";
  }

  /// An edge carrying `v` into `to`, from its producer or graph input (none from constants).
  void edge(const Value* v, const std::string& to) {
    if (!v) return;
    std::string from;
    if (Node* p = v->producer()) {
      if (isConstant(p) || !ids_.count(p)) return;
      from = ids_.at(p);
    } else if (inputIds_.count(v)) {
      from = inputIds_.at(v);
    } else {
      return;  // an outer-scope value or an initializer
    }
    os_ << "  " << from << " -> " << to << " [label=\"" << dotText(v->type().str()) << "\"];\n";
  }

  const Graph& g_;
  std::map<const Node*, std::string> ids_;
  std::map<const Value*, std::string> inputIds_;
  std::ostringstream os_;
};

}  // namespace

std::string graphToDot(const Graph& graph, const std::vector<DotCluster>& clusters) {
  return DotWriter(graph).write(clusters);
}

}  // namespace kiln::ir
