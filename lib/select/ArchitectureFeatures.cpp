//===- lib/select/ArchitectureFeatures.cpp - What a model's graph is made of ===//
//
// See kiln/select/ArchitectureFeatures.h. Patterns are followed through the
// ops that only scale, mask, cast or reshape (kPassThrough), a few nodes
// deep, so that the same block is recognised as exported by different
// frameworks and before or after simplification passes. The kiln ops that
// arch's passes leave (kiln::ConvNCHWc, kiln::Dense, kiln::FastSoftmax)
// count as the ops they replaced, so a model optimised and saved as .kir
// classifies as its import did (unit test on the tiny zoo).
//
//===----------------------------------------------------------------------===//
#include "kiln/select/ArchitectureFeatures.h"

#include <algorithm>
#include <set>

#include "kiln/ir/Node.h"

namespace kiln::select {
namespace {

using ir::isOp;

bool isConstant(const ir::Value* v) { return v && v->producer() && isOp(v->producer(), ir::Op::Constant); }

/// A computed (non-constant, non-input-free) tensor value.
bool isComputed(const ir::Value* v) { return v && !isConstant(v) && v->type().isTensor(); }

/// Ops that only scale, mask, cast or reshape a value on the way between the ops of a pattern.
bool passesThrough(const ir::Node* n) {
  using ir::Op;
  static const std::set<Op> ops{Op::Div,     Op::Mul,       Op::Add,      Op::Sub,     Op::Where,   Op::Cast,
                                Op::Dropout, Op::Reshape,   Op::Transpose, Op::Identity, Op::Squeeze, Op::Unsqueeze};
  return n && ops.count(n->op());
}

/// A product of two operands: MatMul, or a two-operand Einsum (how torch exports
/// `einsum("bhid,bhjd->bhij", q, k)`, e.g. MaxViT's attention).
bool isProduct(const ir::Node* n) {
  return n && (n->op() == ir::Op::MatMul || (n->op() == ir::Op::Einsum && n->numInputs() == 2));
}

/// Whether a product of two computed operands produces `v`, looking back through up to `depth` pass-through ops.
bool fromActivationProduct(const ir::Value* v, int depth) {
  const ir::Node* p = v ? v->producer() : nullptr;
  if (!p) return false;
  if (isProduct(p)) return isComputed(p->input(0)) && isComputed(p->input(1));
  if (depth == 0 || !passesThrough(p)) return false;
  return std::any_of(p->inputs().begin(), p->inputs().end(),
                     [&](const ir::Value* in) { return isComputed(in) && fromActivationProduct(in, depth - 1); });
}

/// Whether `v` reaches a product whose other operand is computed, through up to `depth` pass-through ops.
bool intoActivationProduct(const ir::Value* v, int depth) {
  for (const ir::Use& use : v->uses()) {
    const ir::Node* user = use.user;
    if (!user) continue;
    if (isProduct(user)) {
      const ir::Value* other = user->input(0) == v ? user->input(1) : user->input(0);
      if (isComputed(other)) return true;
    } else if (depth > 0 && passesThrough(user) && user->numOutputs() >= 1 &&
               intoActivationProduct(user->output(0), depth - 1)) {  // output 0: Dropout's value (1 is its mask)
      return true;
    }
  }
  return false;
}

/// Whether `n` is a Concat of three or more per-scale outputs (each reshaped or flattened first).
bool isMultiScaleConcat(const ir::Node* n) {
  if (!isOp(n, ir::Op::Concat) || n->numInputs() < 3) return false;
  return std::all_of(n->inputs().begin(), n->inputs().end(), [](const ir::Value* v) {
    const ir::Node* p = v ? v->producer() : nullptr;
    return p && (isOp(p, ir::Op::Reshape) || isOp(p, ir::Op::Flatten)) && isComputed(p->input(0));
  });
}

/// Whether multi-scale Concat `n` joins per-scale predictions [N, boxes_i, k]
/// along the boxes (YOLO's decoded heads, SSD's box and class heads); RAFT's
/// correlation pyramid joins rank-4 maps along the last axis.
bool joinsBoxPredictions(const ir::Node* n) {
  const ir::Value* y = n->output(0);
  if (!y->type().isTensor() || !y->tensorType().hasRank() || y->tensorType().rank() != 3) return false;
  const int64_t axis = n->getInt("axis");
  return axis == 1 || axis == -2;
}

/// A Conv, or alter-op-layout's kiln::ConvNCHWc over blocked data x [N, C/c, H, W, c] with packed
/// weights [O/b, C/c, kH, kW, c, b] (an optimised graph saved as .kir).
void addConv(const ir::Node* n, ArchitectureFeatures& f) {
  ++f.convs;
  const bool blocked = n->op() == ir::Op::KilnConvNCHWc;
  const int64_t group = n->hasAttr("group") ? n->getInt("group") : 1;
  const ir::Value* x = n->input(0);
  const ir::Value* w = n->input(1);
  int64_t channels = -1;
  if (x && x->type().isTensor() && x->tensorType().rank() >= 2) {
    const Dims& dims = x->tensorType().dims();
    channels = blocked && dims.size() == 5 ? dims[1] * dims[4] : dims[1];
  }
  if (group > 1 && group == channels) ++f.depthwiseConvs;
  else if (group > 1) ++f.groupedConvs;
  if (group == 1 && w && w->type().isTensor() && w->tensorType().rank() >= 3) {
    const auto& dims = w->tensorType().dims();
    const auto kernelEnd = blocked && dims.size() == 6 ? dims.begin() + 4 : dims.end();
    if (std::all_of(dims.begin() + 2, kernelEnd, [](int64_t d) { return d == 1; })) ++f.pointwiseConvs;
  }
}

void collect(const ir::Graph& g, ArchitectureFeatures& f) {
  for (const ir::Node* n : g.nodes()) {
    if (isOp(n, ir::Op::Constant)) {
      ++f.constants;
      if (n->hasAttr("value")) {
        const Tensor& t = n->getTensor("value");
        f.parameters += t.numElements();
        f.parameterBytes += int64_t(t.byteSize());
      }
      continue;
    }
    ++f.nodes;
    ++f.opHistogram[n->qualifiedOpType()];
    for (ir::Graph* sub : n->subgraphs()) collect(*sub, f);
    using ir::Op;
    const Op op = n->op();
    if (op == Op::Conv || op == Op::KilnConvNCHWc) addConv(n, f);
    const bool dense = op == Op::KilnDense;  // simplify-fc-transpose's, in a saved .kir
    if ((dense || op == Op::MatMul || op == Op::Gemm) && (isConstant(n->input(0)) || isConstant(n->input(1)))) {
      ++f.denseMatmuls;
      const ir::Value* x = isConstant(n->input(0)) ? n->input(1) : n->input(0);
      if (isComputed(x) && x->tensorType().rank() == 4) ++f.channelsLastPointwise;
    }
    if (op == Op::Add && isComputed(n->input(0)) && isComputed(n->input(1)) &&
        n->input(0)->type() == n->input(1)->type() && n->input(0)->tensorType().rank() >= 2) {
      ++f.residualAdds;
      f.featureMapResidualAdds += n->input(0)->tensorType().rank() >= 4;  // images and video volumes
    }
    // fast-math's kiln::FastSoftmax counts as the Softmax it replaced (an optimised graph saved as .kir).
    const bool softmax = op == Op::Softmax || op == Op::KilnFastSoftmax;
    if (softmax && fromActivationProduct(n->input(0), 4) && intoActivationProduct(n->output(0), 2)) ++f.attentionBlocks;
    if (op == Op::KilnAttention) ++f.attentionBlocks;
    if (op == Op::LayerNormalization) ++f.layerNorms;
    if (op == Op::Clip || op == Op::HardSwish || op == Op::HardSigmoid) ++f.mobileActivations;
    if (op == Op::NonMaxSuppression) ++f.nmsOps;
    if (isMultiScaleConcat(n)) {
      ++f.multiScaleHeads;
      f.boxHeads += joinsBoxPredictions(n);
    }
  }
}

}  // namespace

ArchitectureFeatures computeFeatures(const ir::Graph& graph) {
  ArchitectureFeatures f;
  collect(graph, f);
  // An unfused layer norm: ReduceMean of x, then ReduceMean of the squared deviation.
  if (!f.layerNorms) f.layerNorms = f.opHistogram.count("ReduceMean") ? f.opHistogram["ReduceMean"] / 2 : 0;
  return f;
}

}  // namespace kiln::select
