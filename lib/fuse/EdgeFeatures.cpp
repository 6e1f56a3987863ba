//===- lib/fuse/EdgeFeatures.cpp - What the advantage model sees of an edge ===//
//
// See kiln/fuse/EdgeFeatures.h. FLOPs are estimated per op family (two per
// multiply-add for convolutions and matmuls, one per element otherwise);
// injective ops are classed as arithmetic, activation or data movement by
// op type.
//
//===----------------------------------------------------------------------===//
#include "kiln/fuse/EdgeFeatures.h"

#include <cmath>
#include <map>
#include <set>

namespace kiln::fuse {

namespace {

constexpr size_t kKinds = 4, kRoles = 9, kClasses = 4;

/// 0 arithmetic, 1 activation or conversion, 2 data movement, 3 other.
size_t opClass(const ir::Node& n) {
  static const std::set<std::string> arithmetic = {"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Mod", "Where",
                                                   "Equal", "Less", "Greater", "And", "Or", "Sum", "Mean"};
  static const std::set<std::string> activation = {
      "Relu", "LeakyRelu", "Sigmoid", "Tanh", "Clip", "Erf", "Exp", "Log", "Sqrt", "Gelu", "HardSigmoid", "HardSwish",
      "Softplus", "Neg", "Abs", "Reciprocal", "Cast", "Identity", "Elu", "Selu", "PRelu", "Mish", "Swish", "Floor", "Ceil",
      "Round", "Sin", "Cos"};
  static const std::set<std::string> movement = {"Reshape", "Transpose", "Flatten", "Squeeze", "Unsqueeze", "Concat",
                                                 "Split", "Slice", "Gather", "Expand", "Pad", "Tile", "DepthToSpace",
                                                 "SpaceToDepth", "LayoutTransform", "Resize"};
  const std::string& op = n.opType();
  if (arithmetic.count(op)) return 0;
  if (activation.count(op)) return 1;
  if (movement.count(op)) return 2;
  return 3;
}

double elements(const ir::Value* v) {
  if (!v || !v->type().isTensor()) return 0;
  return double(v->tensorType().numElements().value_or(0));
}

double bytes(const ir::Value* v) {
  if (!v || !v->type().isTensor()) return 0;
  return elements(v) * double(dtypeSize(v->tensorType().dtype()));
}

double nodeFlops(const ir::Node& n, codegen::KernelRole role) {
  const double out = n.numOutputs() ? elements(n.output(0)) : 0;
  switch (role) {
    case codegen::KernelRole::Conv: {
      const ir::Value* w = n.input(1);
      if (!w || !w->type().isTensor() || w->tensorType().rank() < 1) return out;
      const double perOutput = elements(w) / std::max<int64_t>(1, w->tensorType().dim(0));
      return 2 * out * perOutput;
    }
    case codegen::KernelRole::Matmul: {
      const ir::Value* a = n.input(0);
      if (!a || !a->type().isTensor() || a->tensorType().rank() < 1) return out;
      return 2 * out * double(std::max<int64_t>(1, a->tensorType().dims().back()));
    }
    case codegen::KernelRole::Pool:
    case codegen::KernelRole::Reduce:
    case codegen::KernelRole::Softmax:
    case codegen::KernelRole::LayerNorm:
    case codegen::KernelRole::Attention: return std::max(out, elements(n.input(0)));
    default: return out;
  }
}

float log2p(double x) { return float(std::log2(1 + std::max(0.0, x))); }

/// log2 of `part`'s share of `whole` (0 for all of it): sizes relative to the graph's, which a model
/// trained on small graphs reads alike on large ones.
float log2Share(double part, double whole) { return float(std::log2(std::max(1.0, part) / std::max(1.0, whole))); }

/// The value `producer` hands `consumer` (its first output the consumer reads).
const ir::Value* edgeValue(const codegen::FusionEdge& e) {
  for (const ir::Value* v : e.producer->outputs())
    for (const ir::Use& u : v->uses())
      if (u.user == e.consumer) return v;
  return e.producer->numOutputs() ? e.producer->output(0) : nullptr;
}

void oneHot(std::vector<float>& row, size_t index, size_t width) {
  for (size_t i = 0; i < width; ++i) row.push_back(i == index ? 1.0f : 0.0f);
}

/// Each node's incident edges, for neighbourhoods.
std::map<const ir::Node*, std::vector<size_t>> incidentEdges(const std::vector<codegen::FusionEdge>& edges) {
  std::map<const ir::Node*, std::vector<size_t>> incident;
  for (size_t i = 0; i < edges.size(); ++i) {
    incident[edges[i].producer].push_back(i);
    incident[edges[i].consumer].push_back(i);
  }
  return incident;
}

std::vector<size_t> neighbourhood(const std::vector<codegen::FusionEdge>& edges,
                                  const std::map<const ir::Node*, std::vector<size_t>>& incident, size_t edge,
                                  int radius) {
  std::vector<size_t> out{edge}, frontier{edge};
  std::set<size_t> seen{edge};
  for (int hop = 0; hop < radius && !frontier.empty(); ++hop) {
    std::vector<size_t> next;
    for (size_t e : frontier)
      for (const ir::Node* n : {edges[e].producer, edges[e].consumer})
        for (size_t f : incident.at(n))
          if (seen.insert(f).second) next.push_back(f), out.push_back(f);
    frontier = std::move(next);
  }
  return out;
}

}  // namespace

const std::vector<std::string>& edgeFeatureNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (size_t k = 0; k < kKinds; ++k) n.push_back(std::string("kind_") + codegen::edgeKindName(codegen::EdgeKind(k)));
    for (const char* side : {"producer", "consumer"})
      for (size_t r = 0; r < kRoles; ++r)
        n.push_back(std::string(side) + "_role_" + codegen::kernelRoleName(codegen::KernelRole(r)));
    for (const char* side : {"producer", "consumer"})
      for (const char* c : {"arithmetic", "activation", "movement", "other"})
        n.push_back(std::string(side) + "_class_" + c);
    for (const char* f : {"log2_edge_bytes", "log2_consumer_out_bytes", "log2_producer_flops", "log2_consumer_flops",
                          "log2_edge_bytes_share", "log2_producer_flops_share", "log2_consumer_flops_share",
                          "log2_consumer_broadcast", "producer_fan_out", "consumer_fan_in", "edge_value_is_output",
                          "fuse", "honored", "log2_producer_group_size", "log2_consumer_group_size",
                          "neighbourhood_size", "neighbours_fused", "neighbours_honored", "neighbours_epilogue",
                          "neighbours_prologue"})
      n.push_back(f);
    return n;
  }();
  return names;
}

std::vector<size_t> edgeNeighbourhood(const codegen::FusionPlan& plan, size_t edge, int radius) {
  return neighbourhood(plan.edges(), incidentEdges(plan.edges()), edge, radius);
}

namespace {

/// An op's type and the types it reads and writes.
std::string opSignature(const ir::Node& n) {
  std::string s = n.opType();
  for (const ir::Value* v : n.inputs()) s += ' ' + (v ? v->type().str() : std::string("-"));
  s += " ->";
  for (const ir::Value* v : n.outputs()) s += ' ' + v->type().str();
  return s;
}

}  // namespace

std::vector<size_t> edgeClasses(const codegen::FusionPlan& plan) {
  std::map<std::string, size_t> numbers;
  std::vector<size_t> classes;
  for (const codegen::FusionEdge& e : plan.edges()) {
    const std::string key =
        std::string(codegen::edgeKindName(e.kind)) + " | " + opSignature(*e.producer) + " | " + opSignature(*e.consumer);
    classes.push_back(numbers.emplace(key, numbers.size()).first->second);
  }
  return classes;
}

namespace {

/// The graph's totals the share features divide by: the FLOPs of every op an edge joins and the bytes of
/// every value an edge carries, each counted once.
struct GraphTotals {
  double flops = 0, bytes = 0;
};

GraphTotals graphTotals(const codegen::FusionPlan& plan) {
  GraphTotals t;
  std::set<const ir::Node*> nodes;
  std::set<const ir::Value*> values;
  for (const codegen::FusionEdge& e : plan.edges()) {
    for (const ir::Node* n : {e.producer, e.consumer})
      if (nodes.insert(n).second) t.flops += nodeFlops(*n, codegen::roleOf(*n));
    if (const ir::Value* v = edgeValue(e); values.insert(v).second) t.bytes += bytes(v);
  }
  return t;
}

/// The features of edge `i` of `plan` (see edgeFeatureNames).
std::vector<float> featureRow(const codegen::FusionPlan& plan, const GraphTotals& totals,
                              const std::map<const ir::Node*, std::vector<size_t>>& incident, size_t i, int radius) {
  const std::vector<codegen::FusionEdge>& edges = plan.edges();
  const codegen::FusionEdge& e = edges[i];
  const codegen::KernelRole pr = codegen::roleOf(*e.producer), cr = codegen::roleOf(*e.consumer);
  const ir::Value* v = edgeValue(e);
  std::vector<float> row;
  oneHot(row, size_t(e.kind), kKinds);
  oneHot(row, size_t(pr), kRoles);
  oneHot(row, size_t(cr), kRoles);
  oneHot(row, opClass(*e.producer), kClasses);
  oneHot(row, opClass(*e.consumer), kClasses);
  const ir::Value* out = e.consumer->numOutputs() ? e.consumer->output(0) : nullptr;
  row.push_back(log2p(bytes(v)));
  row.push_back(log2p(bytes(out)));
  row.push_back(log2p(nodeFlops(*e.producer, pr)));
  row.push_back(log2p(nodeFlops(*e.consumer, cr)));
  row.push_back(log2Share(bytes(v), totals.bytes));
  row.push_back(log2Share(nodeFlops(*e.producer, pr), totals.flops));
  row.push_back(log2Share(nodeFlops(*e.consumer, cr), totals.flops));
  row.push_back(log2p(elements(out) / std::max(1.0, elements(v))));
  bool isOutput = false;
  for (const ir::Use& u : v ? v->uses() : std::vector<ir::Use>{}) isOutput |= u.isGraphOutput();
  row.push_back(float(v ? v->uses().size() : 0));
  row.push_back(float(e.consumer->numInputs()));
  row.push_back(isOutput);
  row.push_back(e.fuse);
  row.push_back(e.honored);
  row.push_back(log2p(double(plan.groupOf(e.producer).nodes.size())));
  row.push_back(log2p(double(plan.groupOf(e.consumer).nodes.size())));
  const std::vector<size_t> near = neighbourhood(edges, incident, i, radius);
  float fused = 0, honored = 0, epilogue = 0, prologue = 0;
  for (size_t j = 1; j < near.size(); ++j) {
    const codegen::FusionEdge& n = edges[near[j]];
    fused += n.fuse, honored += n.honored;
    epilogue += n.kind == codegen::EdgeKind::Epilogue, prologue += n.kind == codegen::EdgeKind::Prologue;
  }
  const float others = float(std::max<size_t>(1, near.size() - 1));
  row.push_back(float(near.size() - 1));
  for (float f : {fused, honored, epilogue, prologue}) row.push_back(f / others);
  return row;
}

}  // namespace

std::vector<std::vector<float>> edgeFeatures(const codegen::FusionPlan& plan, int radius) {
  const auto incident = incidentEdges(plan.edges());
  const GraphTotals totals = graphTotals(plan);
  std::vector<std::vector<float>> rows;
  for (size_t i = 0; i < plan.edges().size(); ++i) rows.push_back(featureRow(plan, totals, incident, i, radius));
  return rows;
}

std::vector<float> edgeFeatures(const codegen::FusionPlan& plan, size_t edge, int radius) {
  return featureRow(plan, graphTotals(plan), incidentEdges(plan.edges()), edge, radius);
}

}  // namespace kiln::fuse
