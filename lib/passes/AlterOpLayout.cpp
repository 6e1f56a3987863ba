//===- lib/passes/AlterOpLayout.cpp - alter-op-layout -----------------------===//
//
// Rewrites 2-D convolutions into the channel-blocked layout the CPU conv
// kernels want (TVM's AlterOpLayout to NCHW{c}c), weights prepacked here:
//   Conv(x, W) -> back(kiln::ConvNCHWc(in(x), W' [O/b, C/c, kH, kW, c, b]))
// where `in` reshapes and transposes NCHW to [N, C/c, H, W, c] and `back`
// undoes it. Group-1, depthwise and square-grouped convolutions block; the
// elementwise ops, pools, Splits, Concats, Resizes and BatchNorms between them then
// move onto the blocks so that each `back` meets the next `in` and both
// cancel (simplify-expr): a conv chain stays blocked. The block of a map is
// a function of its channel count alone (16, else 8), so producers and
// consumers agree. Moves run one at a time at the first node where one
// applies (PatternRewriteDriver.h).
// Tolerance: 1e-6 relative, 1e-5 with an absorbed BatchNorm. Why -O3 runs it
// on the cpu target: docs/performance.md, "Channel-blocked convolutions".
//
//===----------------------------------------------------------------------===//
#include <algorithm>
#include <functional>
#include <numeric>
#include <optional>
#include <set>

#include "PatternRewriteDriver.h"
#include "RewriteUtils.h"
#include "WeightFolding.h"
#include "kiln/ir/ResizeTaps.h"
#include "kiln/ir/ShapeUtils.h"
#include "kiln/passes/PassRegistry.h"

namespace kiln::passes {
namespace {

const Dims& dimsOf(const ir::Value* v) { return v->tensorType().dims(); }

/// A map's dims [N, C, H, W] when the layout transforms can carry them:
/// every dim known (constant, or symbolic: a dynamic batch or image size),
/// C constant, and the Reshapes of `in` and `back` able to name the
/// symbolic dims (reshapeShape: N at its own position, then one dynamic
/// image dim, or two equal ones); nullopt otherwise.
std::optional<std::vector<DimExpr>> blockableDims(const ir::Value* v) {
  std::optional<std::vector<DimExpr>> d = knownDims(v);
  if (!d || d->size() != 4 || !(*d)[1].constant()) return std::nullopt;
  const std::vector<DimExpr>& x = *d;
  const std::vector<DimExpr> split{x[0], DimExpr(1), x[1], x[2], x[3]};  // the block sizes are constants either way
  if (!reshapeShape(ir::TensorType::ofExprs(DType::F32, x), split) ||
      !reshapeShape(ir::TensorType::ofExprs(DType::F32, split), x))
    return std::nullopt;
  return d;
}

/// Whether the auto_pad of window op `n` is resolved by its dims: explicit
/// pads, or image dims that are constants.
bool padsKnown(const ir::Node& n, const std::vector<DimExpr>& x) {
  const std::string autoPad = n.hasAttr("auto_pad") ? n.getString("auto_pad") : "NOTSET";
  return autoPad == "NOTSET" || autoPad == "VALID" || (x[2].constant() && x[3].constant());
}

/// A depthwise conv: one input channel per group, as many outputs as inputs.
bool isDepthwise(const ir::Node& n, const Tensor& w) {
  const int64_t group = n.getInt("group");
  return group > 1 && w.dim(1) == 1 && w.dim(0) == group && n.input(0)->tensorType().dim(1) == group;
}

/// A grouped conv whose groups map c channels to c (ResNeXt, RegNet): it
/// runs blocked when a block holds whole groups, each output block reading
/// its own input block through block-diagonal weights.
bool isSquareGrouped(const ir::Node& n, const Tensor& w) {
  const int64_t group = n.getInt("group"), C = n.input(0)->tensorType().dim(1);
  return group > 1 && !isDepthwise(n, w) && w.dim(0) == C && C % group == 0 && w.dim(1) == C / group;
}

/// The block of a map of `channels` channels: `forced` when nonzero (and it
/// divides them), else 16 when 16 divides them, else 8 when 8 does; 0 if none.
/// A block per map, rather than one for every map, is what MobileNetV2's
/// 24-channel layers run fastest with: bench/results/cpu-per-map-blocks-2026-11-24.jsonl.
int64_t blockOf(int64_t channels, int64_t forced) {
  if (forced) return channels % forced == 0 ? forced : 0;
  return channels % 16 == 0 ? 16 : channels % 8 == 0 ? 8 : 0;
}

/// A conv's input and output channels per block (c and b above).
struct ConvBlocks {
  int64_t in = 0, out = 0;
};

/// The channel count whose block conv `n` writes: its output channels, or
/// their common divisor with the parts of a channel Split of its result
/// (combine-parallel-conv2d's merged conv), so that the Split cuts whole blocks.
int64_t outputChannelsToBlock(const ir::Node& n, int64_t channels) {
  for (const ir::Use& use : n.output(0)->uses()) {
    if (!use.user || !isOp(use.user, ir::Op::Split) || use.user->getInt("axis") != 1) continue;
    for (const ir::Value* part : use.user->outputs())
      if (part->type().isTensor() && part->tensorType().rank() > 1 && part->tensorType().dim(1) > 0)
        channels = std::gcd(channels, part->tensorType().dim(1));
  }
  return channels;
}

/// The most input channels without a block of their own that a conv takes as one block.
constexpr int64_t kOneInputBlock = 64;

/// The blocks conv `n` runs with, or nullopt when it stays NCHW.
std::optional<ConvBlocks> blocksOf(const ir::Node& n, int64_t forced) {
  if (!isOp(&n, ir::Op::Conv)) return std::nullopt;
  const ir::Value *x = n.input(0), *y = n.output(0);
  const std::optional<std::vector<DimExpr>> xd = blockableDims(x);
  if (!xd || !blockableDims(y) || !padsKnown(n, *xd)) return std::nullopt;
  if (x->tensorType().dtype() != DType::F32) return std::nullopt;  // the conv2d-nchwc template's type
  const Tensor* w = constantValue(n.input(1));
  if (!w || w->rank() != 4) return std::nullopt;
  const int64_t C = x->tensorType().dim(1);
  if (n.getInt("group") != 1) {
    const int64_t b = blockOf(C, forced);
    if (!b) return std::nullopt;
    if (isDepthwise(n, *w) || (isSquareGrouped(n, *w) && b % w->dim(1) == 0)) return ConvBlocks{b, b};
    return std::nullopt;
  }
  const int64_t out = blockOf(outputChannelsToBlock(n, w->dim(0)), forced);
  // Input channels with no block of their own (an RGB stem's 3, a narrow network's 18 or 42):
  // all in one block, up to kOneInputBlock of them (the template rolls the loop over more than 16).
  const int64_t inputBlock = blockOf(C, forced);
  const int64_t in = inputBlock ? inputBlock : C < (forced ? forced : kOneInputBlock) ? C : 0;
  if (!out || !in) return std::nullopt;
  return ConvBlocks{in, out};
}

/// A square-grouped conv's weights W [C, g, kH, kW] (groups of g channels,
/// g dividing b) packed as [C/b, 1, kH, kW, b, b]: entry (ob, ky, kx, ci, co)
/// is W[ob*b + co, ci - (co's first channel in the group), ky, kx] when input
/// lane ci is in output lane co's group, else 0; times scale[o] when a
/// scale is given (an absorbed BatchNorm's; rounded once).
Tensor blockDiagonal(const Tensor& w, int64_t b, const std::vector<double>& scale) {
  const int64_t C = w.dim(0), g = w.dim(1), kh = w.dim(2), kw = w.dim(3);
  const std::vector<double> src = w.toDoubles();
  std::vector<float> out(size_t(C * kh * kw * b), 0.0f);
  for (int64_t o = 0; o < C; ++o) {
    const int64_t ob = o / b, co = o % b, first = (co / g) * g;  // the group's first lane
    const double s = scale.empty() ? 1.0 : scale[size_t(o)];
    for (int64_t k = 0; k < g; ++k)
      for (int64_t y = 0; y < kh; ++y)
        for (int64_t x = 0; x < kw; ++x)
          out[size_t((((ob * kh + y) * kw + x) * b + first + k) * b + co)] = float(src[size_t(((o * g + k) * kh + y) * kw + x)] * s);
  }
  return Tensor::fromVector<float>({C / b, 1, kh, kw, b, b}, out);
}

/// Multiplies packed weights [O/b, ..., b] (the output channel's block
/// first, its lane last: group-1 and depthwise packs) by scale[channel] in
/// place, each product rounded once from double, as folding the scale into
/// the unpacked weights first would give.
void scaleBlockedChannels(Tensor& packed, int64_t b, const std::vector<double>& scale) {
  float* p = packed.mutableData<float>();
  const int64_t blocks = packed.dim(0), perBlock = packed.numElements() / blocks;
  for (int64_t ob = 0; ob < blocks; ++ob) {
    const double* s = scale.data() + ob * b;
    float* block = p + ob * perBlock;
    for (int64_t i = 0; i < perBlock; i += b)
      for (int64_t co = 0; co < b; ++co) block[i + co] = float(double(block[i + co]) * s[co]);
  }
}

/// The BatchNorms a blocked conv folds into the weights it packs: the one
/// inference BatchNorm that reads its result, or one on each part of a
/// channel Split of it (combine-parallel-conv2d's merged conv), each the
/// part's only reader; their scales and shifts end to end, one per channel.
/// With them simplify-inference's fold and the packing are one write of the
/// weights instead of two (ResNet-50: 100 MB).
struct AbsorbedNorms {
  std::vector<ir::Node*> norms;
  std::vector<double> scale, shift;
};

std::optional<AbsorbedNorms> absorbableNorms(const ir::Node& conv) {
  const ir::Value* y = conv.output(0);
  const std::optional<int64_t> channels = foldableOutputChannels(conv, true);
  ir::Node* user = soleUser(y);
  if (!channels || !user || isGraphOutput(y)) return std::nullopt;
  const bool split = isOp(user, ir::Op::Split) && user->getInt("axis") == 1 && user->input(0) == y;
  const std::vector<ir::Value*> parts = split ? user->outputs() : std::vector<ir::Value*>{conv.output(0)};
  AbsorbedNorms absorbed;
  for (const ir::Value* part : parts) {
    ir::Node* norm = soleUser(part);
    if (!norm || isGraphOutput(part) || !isOp(norm, ir::Op::BatchNormalization) || norm->input(0) != part) return std::nullopt;
    auto affine = inferenceBatchNormAffine(*norm);
    if (!affine || !blockableDims(part) || dimsOf(part)[1] != int64_t(affine->first.size())) return std::nullopt;
    absorbed.norms.push_back(norm);
    absorbed.scale.insert(absorbed.scale.end(), affine->first.begin(), affine->first.end());
    absorbed.shift.insert(absorbed.shift.end(), affine->second.begin(), affine->second.end());
  }
  if (int64_t(absorbed.scale.size()) != *channels) return std::nullopt;
  return absorbed;
}

/// The permutation of `back`: [N, C/b, H, W, b] -> [N, C/b, b, H, W].
const std::vector<int64_t> kFromBlocked{0, 1, 4, 2, 3};

/// back(t) for a blocked value t [N, C/b, H, W, b], made before `before`:
/// Transpose by kFromBlocked, then Reshape to the NCHW dims of `like` (which blockableDims accepts).
Expected<ir::Value*> unblocked(ir::Value* t, const ir::Value* like, const std::string& name, ir::Node* before) {
  ir::Graph& g = *before->graph();
  KILN_ASSIGN(ir::Node * transpose, createTypedNode(g, "Transpose", {t}, {{"perm", kFromBlocked}}, name + "_from_blocked", before));
  const std::optional<std::vector<DimExpr>> y = blockableDims(like);
  std::optional<Tensor> merge = y ? reshapeShape(transpose->output(0)->tensorType(), *y) : std::nullopt;
  if (!merge) return Error(ErrorCode::Internal, "alter-op-layout: no Reshape names the dims of '" + like->name() + "'");
  ir::Value* shape = makeConstant(g, std::move(*merge), name + "_merge_c", before);
  KILN_ASSIGN(ir::Node * reshaped, createTypedNode(g, "Reshape", {transpose->output(0), shape}, {}, name + "_merge_c", before));
  return reshaped->output(0);
}

/// Blocks conv `n`; the BatchNorms it absorbs are left unused in `absorbed`
/// for the caller to erase (they come later in the graph than `n`).
Expected<bool> block(ir::Node* n, int64_t forced, std::vector<ir::Node*>& absorbed) {
  const std::optional<ConvBlocks> blocks = blocksOf(*n, forced);
  if (!blocks) return false;
  ir::Graph& g = *n->graph();
  const std::vector<DimExpr> xd = *blockableDims(n->input(0));
  const Tensor& w = *constantValue(n->input(1));
  const int64_t O = w.dim(0), C = *xd[1].constant(), ci = blocks->in, b = blocks->out;
  std::string base = nameBase(*n);
  ir::Value* splitShape =
      makeConstant(g, *reshapeShape(n->input(0)->tensorType(), {xd[0], DimExpr(C / ci), DimExpr(ci), xd[2], xd[3]}),
                   base + "_split_c", n);
  KILN_ASSIGN(ir::Node * split, createTypedNode(g, "Reshape", {n->input(0), splitShape}, {}, base + "_split_c", n));
  KILN_ASSIGN(ir::Node * in, createTypedNode(g, "Transpose", {split->output(0)}, {{"perm", std::vector<int64_t>{0, 1, 3, 4, 2}}},
                                             base + "_to_blocked", n));
  // [O/b, C/ci, kH, kW, ci, b]; depthwise [C/b, 1, kH, kW, 1, b]; square groups [C/b, 1, kH, kW, b, b].
  const std::optional<AbsorbedNorms> norms = absorbableNorms(*n);
  const std::vector<double> noScale;
  Tensor packed = isDepthwise(*n, w)       ? permuted(w.reshaped({C / b, b, 1, w.dim(2), w.dim(3), 1}), {0, 2, 3, 4, 5, 1})
                  : isSquareGrouped(*n, w) ? blockDiagonal(w, b, norms ? norms->scale : noScale)
                                           : permuted(w.reshaped({O / b, b, C / ci, ci, w.dim(2), w.dim(3)}), {0, 2, 4, 5, 3, 1});
  if (norms && !isSquareGrouped(*n, w)) scaleBlockedChannels(packed, b, norms->scale);
  const std::string weightName = norms ? foldedName(n->input(1)->name()) : n->input(1)->name();
  std::vector<ir::Value*> operands{in->output(0), makeConstant(g, std::move(packed), weightName + "_packed", n)};
  if (auto bias = norms ? foldedBias(*n, norms->scale, norms->shift) : std::nullopt)
    operands.push_back(makeConstant(g, std::move(bias->first), bias->second, n));
  else if (n->hasInput(2))
    operands.push_back(n->input(2));
  KILN_ASSIGN(ir::Node * conv, createTypedNode(g, "kiln::ConvNCHWc", operands, n->attributes(), n->name(), n));
  KILN_ASSIGN(ir::Value * result, unblocked(conv->output(0), n->output(0), base, n));
  replaceValue(n->output(0), result, true);
  if (norms)
    for (ir::Node* norm : norms->norms) {  // reads `result` or a part of its Split now
      replaceValue(norm->output(0), norm->input(0), true);
      absorbed.push_back(norm);
    }
  eraseWithDeadProducers(n);
  return true;
}

bool isMove(const ir::Node* n) { return n && (isOp(n, ir::Op::Reshape) || isOp(n, ir::Op::Transpose)); }

/// Whether two data movements do the same to operands that broadcast
/// against each other: Transposes with one permutation, or Reshapes that
/// reshape the same leading dims and pass the trailing ones through (the
/// `back` of a [N, C/b, H, W, b] map and of a [N, C/b, 1, 1, b] scale).
bool compatibleMoves(const ir::Node& a, const ir::Node& b) {
  if (a.op() != b.op() || !a.input(0)->type().isTensor() || !b.input(0)->type().isTensor()) return false;
  if (a.input(0)->tensorType().dtype() != b.input(0)->tensorType().dtype()) return false;
  const auto ia = knownDims(a.input(0)), ib = knownDims(b.input(0)), oa = knownDims(a.output(0)), ob = knownDims(b.output(0));
  if (!ia || !ib || !oa || !ob || ia->size() != ib->size() || oa->size() != ob->size()) return false;
  if (isOp(&a, ir::Op::Transpose)) return a.getInts("perm") == b.getInts("perm");
  // The Reshapes' shape operands must agree too: a dim named 0 or -1 in one must be named so in the other.
  const Tensor *sa = constantValue(a.input(1)), *sb = constantValue(b.input(1));
  if (!sa || !sb) return false;
  const std::vector<int64_t> na = sa->toInt64s(), nb = sb->toInt64s();
  size_t kept = 0;  // trailing dims each Reshape passes through
  while (kept < std::min(ia->size(), oa->size()) && (*ia)[ia->size() - 1 - kept] == (*oa)[oa->size() - 1 - kept] &&
         (*ib)[ib->size() - 1 - kept] == (*ob)[ob->size() - 1 - kept])
    ++kept;
  auto leading = [&](const std::vector<DimExpr>& x, const std::vector<DimExpr>& y) {
    return std::equal(x.begin(), x.end() - long(kept), y.begin());
  };
  auto symbolicNamedAlike = [&] {  // a symbolic dim's name (0 or -1) in one Reshape is its name in the other
    for (size_t i = 0; i + kept < oa->size(); ++i)
      if (!(*oa)[i].constant() && (i >= na.size() || i >= nb.size() || na[i] != nb[i])) return false;
    return true;
  };
  return leading(*ia, *ib) && leading(*oa, *ob) && symbolicNamedAlike();
}

/// Whether both operands of binary `u` come out of compatible data movements.
bool bothMoved(const ir::Node& u) {
  if (u.numInputs() != 2 || !u.input(0) || !u.input(1)) return false;
  const ir::Node *a = u.input(0)->producer(), *b = u.input(1)->producer();
  return isMove(a) && isMove(b) && compatibleMoves(*a, *b);
}

/// The blocked tensor t [N, C/b, H, W, b] when `v` is back(t), else null.
ir::Value* blockedSource(const ir::Value* v) {
  const ir::Node* merge = v->producer();
  if (!merge || !isOp(merge, ir::Op::Reshape)) return nullptr;
  const ir::Node* out = merge->input(0)->producer();
  if (!out || !isOp(out, ir::Op::Transpose) || out->getInts("perm") != kFromBlocked) return nullptr;
  const auto in = knownDims(merge->input(0));
  const auto y = blockableDims(merge->output(0));
  if (!in || !y || in->size() != 5 || (*y)[0] != (*in)[0] || (*y)[1] != (*in)[1] * (*in)[2] || (*y)[2] != (*in)[3] ||
      (*y)[3] != (*in)[4])
    return nullptr;
  return out->input(0);
}

/// GlobalAveragePool(back(t)) (a squeeze-excite block's pooling): it can run
/// blocked as ReduceMean over t's H and W.
bool isPoolOfBlocked(const ir::Node& n) {
  return isOp(&n, ir::Op::GlobalAveragePool) && blockableDims(n.output(0)) && blockedSource(n.input(0));
}

/// Split(back(t)) along the channels into parts of whole blocks (the Split
/// combine-parallel-conv2d puts after a merged conv): it can split t.
bool isSplitOfBlocked(const ir::Node& n) {
  if (!isOp(&n, ir::Op::Split) || n.getInt("axis") != 1) return false;
  const ir::Value* t = blockedSource(n.input(0));
  if (!t) return false;
  const int64_t b = dimsOf(t)[4];
  const std::vector<ir::Value*> parts = n.outputs();
  return std::all_of(parts.begin(), parts.end(), [&](const ir::Value* v) {
    return blockableDims(v) && dimsOf(v)[1] % b == 0;
  });
}

/// Concat(back(t_1), ..., back(t_n)) along the channels, every t_i in blocks
/// of b and b the block of the result's channels too (so the `in` of a conv
/// reading it cancels): it can concatenate the t_i (an Inception block's
/// branches, a DenseNet block's growing feature map).
bool isConcatOfBlocked(const ir::Node& n, int64_t forced) {
  if (!isOp(&n, ir::Op::Concat) || n.getInt("axis") != 1 || n.numInputs() < 2) return false;
  if (!blockableDims(n.output(0))) return false;
  const int64_t b = blockOf(dimsOf(n.output(0))[1], forced);
  return b && std::all_of(n.inputs().begin(), n.inputs().end(), [&](const ir::Value* v) {
    const ir::Value* t = v ? blockedSource(v) : nullptr;
    return t && dimsOf(t)[4] == b;
  });
}

/// Concat(back(t_1), ..., back(t_n)) -> back(Concat(t_1, ..., t_n)).
Status concatBlocked(ir::Node* concat) {
  ir::Graph& g = *concat->graph();
  std::vector<ir::Value*> parts;
  for (const ir::Value* v : concat->inputs()) parts.push_back(blockedSource(v));
  KILN_ASSIGN(ir::Node * joined, createTypedNode(g, "Concat", parts, {{"axis", int64_t(1)}}, concat->name(), concat));
  KILN_ASSIGN(ir::Value * result, unblocked(joined->output(0), concat->output(0), nameBase(*concat), concat));
  replaceValue(concat->output(0), result, true);
  eraseWithDeadProducers(concat);
  return Status::ok();
}

/// Split(back(t)) -> back_i(Split(t)) for each part.
Status splitBlocked(ir::Node* split) {
  ir::Graph& g = *split->graph();
  ir::Value* t = blockedSource(split->input(0));
  const int64_t b = dimsOf(t)[4];
  std::vector<int64_t> blocks;
  for (const ir::Value* v : split->outputs()) blocks.push_back(dimsOf(v)[1] / b);
  std::string base = nameBase(*split);
  ir::Value* sizes = makeConstant(g, Tensor::fromVector<int64_t>({int64_t(blocks.size())}, blocks), base + "_blocks", split);
  KILN_ASSIGN(ir::Node * parts, createTypedNode(g, "Split", {t, sizes}, {{"axis", int64_t(1)}}, split->name(), split,
                                                blocks.size()));
  for (size_t i = 0; i < blocks.size(); ++i) {
    KILN_ASSIGN(ir::Value * part, unblocked(parts->output(i), split->output(i), base, split));
    replaceValue(split->output(i), part, true);
  }
  eraseWithDeadProducers(split);
  return Status::ok();
}

/// MaxPool / AveragePool (2-D) of back(t): it can run blocked as a pool over
/// t's H, W and lanes with a window of 1 over the lanes (kiln's cpu pool
/// template reads each pixel's block as one vector).
bool isWindowPoolOfBlocked(const ir::Node& n) {
  if (!isOp(&n, ir::Op::MaxPool) && !isOp(&n, ir::Op::AveragePool)) return false;
  if (n.numOutputs() > 1 && n.output(1)->hasUses()) return false;  // MaxPool's indices are NCHW positions
  const std::optional<std::vector<DimExpr>> x = knownDims(n.input(0));
  if (!blockableDims(n.output(0)) || !x || x->size() != 4 || !padsKnown(n, *x) || n.getInts("kernel_shape").size() != 2)
    return false;
  const std::vector<int64_t>& k = n.getInts("kernel_shape");
  if (k[0] * k[1] > 64) return false;  // the cpu pool template unrolls blocked windows of at most 64 taps
  return blockedSource(n.input(0)) != nullptr;
}

/// Pool(back(t)) -> back(Pool(t, window extended by 1 over the lanes)); the
/// pads are made explicit (auto_pad resolved).
Status windowPoolBlocked(ir::Node* pool) {
  ir::Graph& g = *pool->graph();
  ir::Value* t = blockedSource(pool->input(0));
  const Dims& x = dimsOf(pool->input(0));
  const bool ceil = pool->getInt("ceil_mode") != 0;
  KILN_ASSIGN(ir::WindowGeometry geo, ir::computeWindowGeometry(*pool, {x[2], x[3]}, pool->getInts("kernel_shape"), ceil));
  std::vector<std::pair<std::string, ir::Attribute>> attrs{
      {"kernel_shape", std::vector<int64_t>{geo.kernel[0], geo.kernel[1], 1}},
      {"strides", std::vector<int64_t>{geo.strides[0], geo.strides[1], 1}},
      {"pads", std::vector<int64_t>{geo.padsBegin[0], geo.padsBegin[1], 0, geo.padsEnd[0], geo.padsEnd[1], 0}},
      {"ceil_mode", int64_t(ceil)}};
  if (isOp(pool, ir::Op::MaxPool)) attrs.push_back({"dilations", std::vector<int64_t>{geo.dilations[0], geo.dilations[1], 1}});
  else attrs.push_back({"count_include_pad", pool->getInt("count_include_pad")});
  KILN_ASSIGN(ir::Node * blocked, createTypedNode(g, pool->opType(), {t}, attrs, pool->name(), pool));
  KILN_ASSIGN(ir::Value * pooled, unblocked(blocked->output(0), pool->output(0), nameBase(*pool), pool));
  replaceValue(pool->output(0), pooled, true);
  eraseWithDeadProducers(pool);
  return Status::ok();
}

bool resizesBySizes(const ir::Node& n) {
  return ir::resizesBySizes(n, n.numInputs() > 3 && n.hasInput(3) ? constantValue(n.input(3)) : nullptr);
}

/// Resize (nearest or linear) of back(t) over H and W alone: it can resize
/// t's H and W, a pixel's lanes moving together (an FPN neck's upsampling
/// between blocked convs). Scales must be constant and 1 over N and C; with
/// sizes the scale of each dim is its output over its input size, in either layout.
bool isResizeOfBlocked(const ir::Node& n) {
  if (!isOp(&n, ir::Op::Resize) || !n.output(0)->type().isTensor() || !n.output(0)->tensorType().isStatic()) return false;
  const std::string& mode = n.getString("mode");
  if ((mode != "nearest" && mode != "linear") || n.getString("coordinate_transformation_mode") == "tf_crop_and_resize")
    return false;
  if (!blockedSource(n.input(0))) return false;
  const Dims &x = dimsOf(n.input(0)), &y = dimsOf(n.output(0));
  if (y.size() != 4 || y[0] != x[0] || y[1] != x[1]) return false;
  if (resizesBySizes(n)) return true;
  const Tensor* scales = n.numInputs() > 2 && n.hasInput(2) ? constantValue(n.input(2)) : nullptr;
  if (!scales || scales->numElements() != 4) return false;
  const std::vector<double> s = scales->toDoubles();
  return s[0] == 1.0 && s[1] == 1.0;
}

/// Resize(back(t)) -> back(Resize(t)) with scales [1, 1, sh, sw, 1] (or
/// sizes [N, C/b, H', W', b]); the roi only matters to tf_crop_and_resize.
Status resizeBlocked(ir::Node* resize) {
  ir::Graph& g = *resize->graph();
  ir::Value* t = blockedSource(resize->input(0));
  const Dims& y = dimsOf(resize->output(0));
  const int64_t b = dimsOf(t)[4];
  const std::string base = nameBase(*resize);
  std::vector<ir::Value*> operands{t, nullptr, nullptr};
  if (resizesBySizes(*resize)) {
    operands.push_back(makeConstant(g, Tensor::fromVector<int64_t>({5}, {y[0], y[1] / b, y[2], y[3], b}),
                                    base + "_blocked_sizes", resize));
  } else {
    const std::vector<double> s = constantValue(resize->input(2))->toDoubles();
    operands[2] = makeConstant(g, Tensor::fromVector<float>({5}, {1.0f, 1.0f, float(s[2]), float(s[3]), 1.0f}),
                               base + "_blocked_scales", resize);
  }
  KILN_ASSIGN(ir::Node * blocked, createTypedNode(g, "Resize", operands, resize->attributes(), resize->name(), resize));
  KILN_ASSIGN(ir::Value * resized, unblocked(blocked->output(0), resize->output(0), base, resize));
  replaceValue(resize->output(0), resized, true);
  eraseWithDeadProducers(resize);
  return Status::ok();
}

/// GlobalAveragePool(back(t)) -> back(ReduceMean(t, axes [2, 3], keepdims)).
Status poolBlocked(ir::Node* pool) {
  ir::Graph& g = *pool->graph();
  KILN_ASSIGN(ir::Node * mean, createTypedNode(g, "ReduceMean", {blockedSource(pool->input(0))},
                                               {{"axes", std::vector<int64_t>{2, 3}}, {"keepdims", int64_t(1)}},
                                               pool->name(), pool));
  KILN_ASSIGN(ir::Value * pooled, unblocked(mean->output(0), pool->output(0), nameBase(*pool), pool));
  replaceValue(pool->output(0), pooled, true);
  eraseWithDeadProducers(pool);
  return Status::ok();
}

/// The binary elementwise ops that can run on blocked data.
bool isBinaryElementwise(const ir::Node& u) {
  using ir::Op;
  switch (u.op()) {
    case Op::Add: case Op::Sub: case Op::Mul: case Op::Div: case Op::Max: case Op::Min: return true;
    default: return false;
  }
}

/// Whether `v` is a constant that broadcasts against a [N, C, H, W] map per
/// channel ([C, 1, 1] or [1, C, 1, 1]: a BatchNorm simplify-inference
/// spelled out) or as a scalar.
bool isChannelConstant(const ir::Value* v, int64_t channels) {
  const Tensor* k = v ? constantValue(v) : nullptr;
  if (!k) return false;
  if (k->numElements() == 1) return true;
  const Dims& d = k->dims();
  return k->numElements() == channels && ((d.size() == 3 && d[0] == channels) || (d.size() == 4 && d[1] == channels));
}

/// For a binary elementwise op of back(t) and a channel constant (BatchNorm's
/// Mul and Add after a DenseNet concat), the operand that is back(t); else -1.
int blockedWithChannelConstant(const ir::Node& u) {
  if (!isBinaryElementwise(u) || u.numInputs() != 2 || !u.input(0) || !u.input(1)) return -1;
  for (int i = 0; i < 2; ++i) {
    const ir::Value* t = blockedSource(u.input(i));
    if (t && u.output(0)->type() == u.input(i)->type() && isChannelConstant(u.input(1 - i), dimsOf(u.input(i))[1]))
      return i;
  }
  return -1;
}

/// U(back(t), k) -> back(U(t, k')) with k' the channel constant k in t's
/// blocks, [1, C/b, 1, 1, b] (a scalar stays as it is).
Status hoistChannelConstant(ir::Node* u) {
  ir::Graph& g = *u->graph();
  const int i = blockedWithChannelConstant(*u);
  ir::Value* t = blockedSource(u->input(i));
  const Tensor& k = *constantValue(u->input(1 - i));
  std::vector<ir::Value*> operands(2);
  operands[i] = t;
  operands[1 - i] = u->input(1 - i);
  if (k.numElements() > 1) {
    const int64_t b = dimsOf(t)[4], blocks = dimsOf(t)[1];
    operands[1 - i] = makeConstant(g, permuted(k.reshaped({1, blocks, b, 1, 1}), {0, 1, 3, 4, 2}),
                                   u->input(1 - i)->name() + "_blocked", u);
  }
  KILN_ASSIGN(ir::Node * early, createTypedNode(g, u->qualifiedOpType(), operands, u->attributes(), u->name(), u));
  KILN_ASSIGN(ir::Value * result, unblocked(early->output(0), u->output(0), nameBase(*u), u));
  replaceValue(u->output(0), result, true);
  eraseWithDeadProducers(u);
  return Status::ok();
}

/// An elementwise op that can run before the data movement `move` feeding
/// it: a unary one (Relu, Clip, ...; other operands scalar constants) on
/// move's result, or a binary one (Add, Mul, ...) of move's result shape
/// whose operands both come out of compatible movements (a residual Add of
/// two blocked convs' results, a squeeze-excite Mul by a blocked scale).
ir::Node* hoistable(const ir::Node& move) {
  if (!isMove(&move) || isGraphOutput(move.output(0))) return nullptr;
  using ir::Op;
  static const std::set<Op> kUnary = {Op::Relu, Op::Clip, Op::Sigmoid, Op::HardSigmoid, Op::HardSwish, Op::LeakyRelu,
                                      Op::Neg, Op::Abs, Op::Exp, Op::Tanh, Op::Erf, Op::Sqrt, Op::KilnGelu,
                                      // fast-math's forms of Exp, Erf and Tanh (arch runs fast-math
                                      // before this pass: MaxViT's stem GELU has a FastErf)
                                      Op::KilnFastExp, Op::KilnFastErf, Op::KilnFastTanh};
  auto unary = [&](const ir::Node& u) {
    if (!kUnary.count(u.op()) || u.input(0) != move.output(0)) return false;
    for (size_t i = 1; i < u.numInputs(); ++i) {
      const Tensor* c = u.input(i) ? constantValue(u.input(i)) : nullptr;
      if (u.input(i) && (!c || c->numElements() != 1)) return false;
    }
    return true;
  };
  auto elementwise = [&](const ir::Node& u) {
    return isBinaryElementwise(u) && u.numInputs() == 2 && u.output(0)->type() == move.output(0)->type();
  };
  // A unary op moves when it is the only user, or when every user is
  // elementwise (x * HardSigmoid(x): both end up moved; otherwise the
  // transform would stay for the others and the moved op add a second one).
  const auto& uses = move.output(0)->uses();
  const bool allElementwise = std::all_of(uses.begin(), uses.end(), [&](const ir::Use& use) {
    return use.user && (unary(*use.user) || elementwise(*use.user));
  });
  for (const ir::Use& use : uses) {
    ir::Node* u = use.user;
    if (!u) continue;
    if (unary(*u) && (uses.size() == 1 || allElementwise)) return u;
    if (elementwise(*u) && bothMoved(*u)) return u;
  }
  return nullptr;
}

/// U(M(a), ...) -> M(U(a, ...)) for a data movement M (both operands of a
/// binary U pass through M).
Status hoist(ir::Node* u) {
  ir::Graph& g = *u->graph();
  const bool binary = bothMoved(*u);
  // The movement to redo after u: the one of u's result shape (a broadcast operand's is smaller).
  const size_t full = binary && u->input(0)->type() != u->output(0)->type() ? 1 : 0;
  ir::Node* move = u->input(full)->producer();
  std::vector<ir::Value*> operands = u->inputs();
  operands[0] = u->input(0)->producer()->input(0);
  if (binary) operands[1] = u->input(1)->producer()->input(0);
  KILN_ASSIGN(ir::Node * early, createTypedNode(g, u->qualifiedOpType(), operands, u->attributes(), u->name(), u));
  std::vector<ir::Value*> moveOperands = move->inputs();
  moveOperands[0] = early->output(0);
  KILN_ASSIGN(ir::Node * moved, createTypedNode(g, move->opType(), moveOperands, move->attributes(), move->name(), u));
  replaceValue(u->output(0), moved->output(0), true);
  eraseWithDeadProducers(u);
  return Status::ok();
}

/// A rule that moves an op onto blocked data: `applies` at a node, `move` there.
template <bool (*applies)(const ir::Node&), Status (*move)(ir::Node*)>
class MoveOntoBlocked final : public RewritePattern {
 public:
  bool matches(const ir::Node& n) const override { return applies(n); }
  Status rewrite(ir::Node& n) const override { return move(&n); }
};

bool hasChannelConstant(const ir::Node& n) { return blockedWithChannelConstant(n) >= 0; }
bool isHoistable(const ir::Node& n) { return hoistable(n) != nullptr; }
Status hoistUser(ir::Node* move) { return hoist(hoistable(*move)); }

/// Concatenations of blocked maps (the one rule that reads the option).
class ConcatOntoBlocked final : public RewritePattern {
 public:
  explicit ConcatOntoBlocked(int64_t forced) : forced_(forced) {}
  bool matches(const ir::Node& n) const override { return isConcatOfBlocked(n, forced_); }
  Status rewrite(ir::Node& n) const override { return concatBlocked(&n); }

 private:
  int64_t forced_;
};

/// The moves, in the order they are tried at a node. What they read: the
/// node, its inputs' producer chains, its users and their operands'
/// producers (PatternRewriteDriver.h's contract).
PatternList blockedMoves(int64_t forced) {
  return {std::make_shared<MoveOntoBlocked<isPoolOfBlocked, poolBlocked>>(),
          std::make_shared<MoveOntoBlocked<isWindowPoolOfBlocked, windowPoolBlocked>>(),
          std::make_shared<MoveOntoBlocked<isSplitOfBlocked, splitBlocked>>(),
          std::make_shared<MoveOntoBlocked<isResizeOfBlocked, resizeBlocked>>(),
          std::make_shared<ConcatOntoBlocked>(forced),
          std::make_shared<MoveOntoBlocked<hasChannelConstant, hoistChannelConstant>>(),
          std::make_shared<MoveOntoBlocked<isHoistable, hoistUser>>()};
}

/// Blocks a conv; the BatchNorms it absorbs are erased after every conv is blocked.
class BlockConv final : public RewritePattern {
 public:
  BlockConv(int64_t forced, std::vector<ir::Node*>& absorbed) : forced_(forced), absorbed_(absorbed) {}
  bool matches(const ir::Node& n) const override { return blocksOf(n, forced_).has_value(); }
  Status rewrite(ir::Node& n) const override { return block(&n, forced_, absorbed_).status(); }

 private:
  int64_t forced_;
  std::vector<ir::Node*>& absorbed_;
};

Expected<bool> alter(ir::Graph& g, int64_t forced, const PassContext& ctx) {
  std::vector<ir::Node*> absorbed;
  KILN_ASSIGN(int64_t blocked, applyPatterns(g, {std::make_shared<BlockConv>(forced, absorbed)}, "alter-op-layout"));
  for (ir::Node* norm : absorbed) eraseWithDeadProducers(norm);
  bool changed = blocked > 0;
  // One at a time, in graph order: a rewrite erases later nodes. Also when no conv was left
  // to block: a second run moves what passes after the first put between
  // the transforms (simplify-inference's Mul and Add for a BatchNorm that
  // follows no conv, as arch orders it).
  KILN_ASSIGN(int64_t moved, applyPatterns(g, blockedMoves(forced), "alter-op-layout"));
  changed |= moved > 0;
  if (!changed) return false;
  // Identical `in` transforms of one value merge; then back∘in cancels.
  KILN_TRY(findPass("eliminate-common-subexpr")->run(g, PassOptions(), ctx).status());
  KILN_TRY(findPass("simplify-expr")->run(g, PassOptions(), ctx).status());
  return true;
}

}  // namespace

PassInfo alterOpLayoutPass() {
  PassInfo p;
  p.name = "alter-op-layout";
  p.summary = "Run convolutions in a channel-blocked layout (NCHW{b}c) with prepacked weights";
  p.description =
      "Rewrites 2-D Convs (group 1 whose output channels have a block and input channels one too or fewer than "
      "64; depthwise; grouped with groups that fit in a block, block-diagonal weights) into kiln::ConvNCHWc "
      "over blocked data [N, C/b, H, W, b] with prepacked weights, moves elementwise ops (unary, binary with both "
      "operands blocked alike: residual adds, or with a per-channel constant: a BatchNorm's Mul and Add) ahead of "
      "the layout transforms and cancels the transforms between consecutive convolutions (anchor: TVM's "
      "AlterOpLayout, oneDNN's nChw16c); squeeze-excite pooling runs blocked as ReduceMean, MaxPool and "
      "AveragePool over the blocks, channel concatenations of blocked maps concatenate their blocks, nearest and "
      "linear Resizes over H and W resize the blocked maps (an FPN neck's upsampling). A map's "
      "block follows from its channel count: 16 where 16 divides it, else 8 (option block: one block for every "
      "map); a conv's input channels without one are a single block. An inference BatchNormalization reading a conv's result (or each part of its channel Split) is "
      "folded into the weights as they are packed, as simplify-inference would fold it, in one write of the "
      "weights instead of two. Within 1e-5 relative (summation order; folded statistics rounded once). On the "
      "CPU ResNet-50 runs 1.6x faster, MobileNetV2 1.4x, SSDLite 1.05x.";
  // Table 4 puts AlterOpLayout in every class (BR has no convs). It is a
  // target's layout: -O3 runs it for the cpu target only (OptLevels.cpp);
  // the interpreter runs kiln::ConvNCHWc on slow reference loops, and the
  // GPU has no template for it.
  p.classes = {"RN", "MN", "SSD", "BR"};
  p.tolerance = 1e-5;  // simplify-inference's, for an absorbed BatchNorm
  p.optLevel = 3;
  p.options = {{"block", PassOptionSpec::Kind::Int, "0",
                "channels per block for every map (a multiple of the target's f32 vector width); 0: per map, 16 "
                "where 16 divides its channels, else 8"}};
  // Applicable when some conv has a block under the options (the default's:
  // 16 or 8 dividing its channels), or an op on blocked data can move onto
  // the blocks; a block out of range is left to run() to report.
  p.applicable = [](const ir::Graph& g, const PassOptions& o) {
    const int64_t b = o.getInt("block");
    if (b < 0 || b > 256) return true;
    return anyNode(g, [b](const ir::Node& n) { return blocksOf(n, b).has_value(); }) ||
           anyPatternMatches(g, blockedMoves(b));
  };
  p.run = [](ir::Graph& g, const PassOptions& o, const PassContext& ctx) -> Expected<bool> {
    int64_t b = o.getInt("block");
    if (b < 0 || b > 256) return Error(ErrorCode::InvalidArgument, "alter-op-layout: block must be 1..256 (0: automatic)");
    return alter(g, b, ctx);
  };
  return p;
}

}  // namespace kiln::passes
