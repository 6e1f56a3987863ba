//===- lib/codegen/templates/ConvNchwcTemplate.cpp - Channel-blocked conv ---===//
//
// kiln::ConvNCHWc (made by alter-op-layout) on the CPU: data [N, C/c, H, W, c],
// weights prepacked [O/o, C/c, kH, kW, c, o], result [N, O/o, OH, OW, o]. The
// vector runs along the o output channels of a block, so each step of the
// reduction is one contiguous weight vector times one broadcast input pixel,
// at any image size (the NCHW template vectorizes along pixels and wastes
// lanes on 7x7 and 14x14 images). A register block holds tw pixels of one
// output row x tob channel blocks; the reduction runs over (input channel
// block, ky, kx, input channel) as nested loops, so no index is divided in
// the inner loop. Depthwise (group C, weights [C/c, 1, kH, kW, 1, c]): lane
// l of a block reads input lane l of the same block, so the input pixel is
// a vector too and the reduction is the taps alone. A padded input first
// goes to a zero-bordered copy, except for depthwise convs (memory-bound),
// which skip the taps outside the input: rows per tap, columns only in the
// register blocks at the border. Groups within a block (ResNeXt, RegNet;
// weights [C/c, 1, kH, kW, c, c], zero off the groups) reduce like group 1
// over the output block's own input block only.
//
//===----------------------------------------------------------------------===//
#include "Templates.h"

namespace kiln::codegen {
namespace {

struct BlockedShape {
  Dims x, w, y;  ///< [N, C/c, H, W, c], [O/o, C/c, kH, kW, c, o], [N, O/o, OH, OW, o]
  ir::WindowGeometry geo;
  bool padded = false;
  bool depthwise = false;
  bool grouped = false;  ///< groups within a block: weights [C/c, 1, kH, kW, c, c], input block = output block
};

int64_t taps(const BlockedShape& s) { return s.w[2] * s.w[3]; }

/// The shape with the data's and result's dims from `dimsOf` (static, or a
/// dynamic batch at a point of its range: windowDims).
Expected<BlockedShape> shapeOf(const ir::Node& node, const std::function<Expected<Dims>(const ir::Value*)>& dimsOf) {
  BlockedShape s;
  KILN_ASSIGN(s.x, dimsOf(node.input(0)));
  KILN_ASSIGN(s.w, staticDims(node.input(1)));
  KILN_ASSIGN(s.y, dimsOf(node.output(0)));
  if (s.x.size() != 5 || s.w.size() != 6 || s.y.size() != 5)
    return makeError(ErrorCode::CodegenUnsupported, "kiln::ConvNCHWc needs rank-5 data and rank-6 weights");
  KILN_ASSIGN(s.geo, ir::computeWindowGeometry(node, {s.x[2], s.x[3]}, {s.w[2], s.w[3]}, false));
  for (size_t d = 0; d < 2; ++d) s.padded |= s.geo.padsBegin[d] != 0 || s.geo.padsEnd[d] != 0;
  s.depthwise = node.getInt("group") != 1 && s.w[4] == 1;
  s.grouped = node.getInt("group") != 1 && !s.depthwise;
  return s;
}

/// Whether this machine's cores are AMD's (the cpu target compiles for this
/// machine): the default register blocks differ (ConvNchwcTemplate::knobSpace).
bool amdCores() {
#if defined(__x86_64__) || defined(__i386__)
  static const bool amd = __builtin_cpu_is("amd");
  return amd;
#else
  return false;
#endif
}

class ConvNchwcTemplate final : public ScheduleTemplate {
 public:
  const char* name() const override { return "conv2d-nchwc"; }
  bool matches(const KernelGroup& g) const override {
    return g.role == KernelRole::Conv && g.anchor && g.anchor->op() == ir::Op::KilnConvNCHWc;
  }

  // The knobs. CPU: tw {1..28, at most the output width} pixels per register block,
  //          tob {1,2,4} channel blocks per register block (dividing O/o),
  //          unroll {0,1} (the c input channels of a block unrolled; depthwise:
  //          the taps, when at most 27),
  //          order {0,1} (the reduction: 0 input channel blocks outside the
  //          taps, the weights' order; 1 the taps outside, each input pixel's
  //          blocks read one after the other; only where both have extent > 1),
  //          parallel {0,1} (over images x channel-block groups x output rows)
  //   GPU: none (alter-op-layout is a CPU layout; the GPU convolves NCHW).
  Expected<KnobSpace> knobSpace(const KernelGroup& g, KernelTarget target) const override {
    if (target == KernelTarget::Gpu)
      return makeError(ErrorCode::CodegenUnsupported, "kiln::ConvNCHWc has no GPU schedule (alter-op-layout is a CPU "
                                                      "layout; leave it out of GPU pipelines)")
          .atNode(g.anchor->displayName(), g.anchor->opType());
    KILN_ASSIGN(BlockedShape s, shapeOf(*g.anchor, [&](const ir::Value* v) { return windowDims(g, v, target, DimPoint::Opt); }));
    KILN_ASSIGN(const Dims smallest, windowDims(g, g.anchor->output(0), target, DimPoint::Min));
    // Register blocks fit the narrowest output row a run may have (blocks never overhang a row).
    const int64_t ow = s.y[3], owMin = smallest[3], blocks = s.y[1];
    KnobSpace space;
    // Default register block: 7 pixels (a width dividing the row where 7
    // does not: overlapping blocks recompute pixels) x 2 channel blocks (14
    // accumulator vectors) where the channel blocks pair up, else 1, with
    // the block's input channels unrolled. On AMD's cores the unrolled loop
    // spills (LLVM hoists the 7 x 16 broadcast loads of a kx step ahead of
    // their multiply-adds), so there 7 x 2 runs rolled, and strided convs
    // with several taps and depthwise convs take 7 x 1 unrolled. Measured
    // by grid search over ResNet-50's and MobileNetV2's blocked convs:
    // docs/performance.md, "Register blocks".
    int64_t preferred = std::min<int64_t>(owMin, 7);
    for (int64_t v : {7, 8, 6, 4, 14, 12})
      if (v <= owMin && ow % v == 0) {
        preferred = v;
        break;
      }
    space.knobs.push_back(makeKnob("tw", {1, 2, 3, 4, 5, 6, 7, 8, 12, 14, 16, 28}, preferred,
                                   "output pixels of a row per register block", [&](int64_t v) { return v <= owMin; }));
    // The exceptions on AMD's cores (above).
    const bool stridedTaps = (s.geo.strides[0] > 1 || s.geo.strides[1] > 1) && taps(s) > 1;
    const bool amdOneBlock = amdCores() && (s.depthwise || stridedTaps);
    const bool amdRolled = amdCores() && !s.depthwise && !stridedTaps;
    const int64_t preferredBlocks = blocks % 2 == 0 && preferred <= 8 && !amdOneBlock ? 2 : 1;
    space.knobs.push_back(makeKnob("tob", {1, 2, 4}, preferredBlocks, "output channel blocks per register block",
                                   [&](int64_t v) { return blocks % v == 0; }));
    if (s.depthwise)
      space.knobs.push_back(makeKnob("unroll", {0, 1}, 1, "unroll the taps", [&](int64_t v) { return v == 0 || taps(s) <= 27; }));
    else
      space.knobs.push_back(makeKnob("unroll", {0, 1}, s.x[4] <= 16 && !amdRolled ? 1 : 0, "unroll the input channels of a block"));
    const bool reordered = !s.depthwise && !s.grouped && s.x[1] > 1 && taps(s) > 1;
    space.knobs.push_back(makeKnob("order", {0, 1}, 0, "reduction order: 0 channel blocks outside the taps, 1 taps outside",
                                   [&](int64_t v) { return v == 0 || reordered; }));
    space.knobs.push_back(parallelKnob(product(s.y) * product(s.w, 1, 5), s.y[0] * s.y[1] * s.y[2]));
    return space;
  }

  Expected<Stmt> instantiate(ElementBuilder& el, const Config& c, KernelTarget target) const override {
    const ir::Node& node = *el.group().anchor;
    // A dynamic batch is taken at its maximum here; the loops over images run to its run-time value.
    KILN_ASSIGN(BlockedShape s, shapeOf(node, [&](const ir::Value* v) { return windowDims(el.group(), v, target, DimPoint::Max); }));
    KILN_ASSIGN(const RunCount batch, runDim(el, node.output(0), 0));
    KILN_ASSIGN(const ScalarType ct, resultComputeType(node));
    const int64_t tw = c.at("tw"), tob = c.at("tob");
    const int64_t inBlocks = s.x[1], inLanes = s.x[4], kh = s.w[2], kw = s.w[3];
    const int64_t lanes = s.y[4], groupsOfBlocks = s.y[1] / tob;
    // Image dims, static or run-time extents (the dims in `s` are their maxima).
    KILN_ASSIGN(const RunCount h, runDim(el, node.input(0), 2));
    KILN_ASSIGN(const RunCount w, runDim(el, node.input(0), 3));
    KILN_ASSIGN(const RunCount oh, runDim(el, node.output(0), 2));
    KILN_ASSIGN(const RunCount ow, runDim(el, node.output(0), 3));
    std::vector<Stmt> nests;

    // A depthwise conv is memory-bound: a zero-bordered copy would double its
    // traffic (a padded 3x3 depthwise conv took 1.8 to 4x the time of the
    // same conv on an unpadded input). It reads the input itself instead,
    // skips the taps whose row is outside it, and tests columns only in the
    // register blocks that reach over the border.
    const bool guarded = s.padded && s.depthwise;
    const int64_t padTop = s.geo.padsBegin[0], padLeft = s.geo.padsBegin[1];
    PaddedCopy copy;
    if (s.padded && !guarded) {
      auto source = [&](const Expr& plane, const Expr& iy, const Expr& ix, const Expr& lane) {
        return el.at(node.input(0), {floorDiv(plane, inBlocks), floorMod(plane, inBlocks), iy, ix, lane});
      };
      KILN_ASSIGN(copy, borderedCopy(el, ct, batch.times(inBlocks), h, w, inLanes, s.geo, outerKind(c), constantOf(ct, 0), source));
      nests.push_back(copy.fill);
    }

    // t = (n * groupsOfBlocks + block group) * oh + output row.
    Var t = makeVar("t"), xt = makeVar("xt"), i = makeVar("i"), ob = makeVar("ob"), l = makeVar("l");
    Var icb = makeVar("icb"), ky = makeVar("ky"), kx = makeVar("kx"), ic = makeVar("ic");
    Expr n = binary(BinaryOp::FloorDiv, varRef(t), oh.times(groupsOfBlocks).run);
    Expr block = floorMod(binary(BinaryOp::FloorDiv, varRef(t), oh.run), groupsOfBlocks) * tob + varRef(ob);
    Expr row = binary(BinaryOp::FloorMod, varRef(t), oh.run);
    Expr origin = blockOrigin(varRef(xt), tw, ow);
    Expr col = origin + varRef(i);
    Expr iy = row * s.geo.strides[0] + varRef(ky) * s.geo.dilations[0];
    Expr ix = col * s.geo.strides[1] + varRef(kx) * s.geo.dilations[1];
    Expr pixel;
    // Depthwise: the input block is the output block and the input lane the output lane;
    // groups within a block: the input block is the output block (weights block-diagonal).
    Expr inBlock = s.depthwise || s.grouped ? block : varRef(icb), inLane = s.depthwise ? varRef(l) : varRef(ic);
    if (guarded) {
      KILN_ASSIGN(pixel, el.at(node.input(0), {n, inBlock, iy - padTop, ix - padLeft, inLane}));
    } else if (s.padded) {
      pixel = load(copy.buffer, (((n * inBlocks + inBlock) * copy.hp.run + iy) * copy.wp.run + ix) * inLanes + inLane);
    } else {
      KILN_ASSIGN(pixel, el.at(node.input(0), {n, inBlock, iy, ix, inLane}));
    }
    Index weightIndex{block, varRef(icb), varRef(ky), varRef(kx), varRef(ic), varRef(l)};
    if (s.depthwise) weightIndex = {block, intImm(0), varRef(ky), varRef(kx), intImm(0), varRef(l)};
    KILN_ASSIGN(Expr weight, el.at(node.input(1), weightIndex));

    Buffer acc = makeBuffer("acc", ct, MemoryScope::Local, tw * tob * lanes);
    Expr accIndex = (varRef(i) * tob + varRef(ob)) * lanes + varRef(l);
    auto tile = [&](Stmt body) {
      return forLoop(i, intImm(tw), LoopKind::Unrolled,
                     forLoop(ob, intImm(tob), LoopKind::Unrolled, forLoop(l, intImm(lanes), LoopKind::Vectorized, body)));
    };
    Stmt update = tile(store(acc, accIndex, load(acc, accIndex) + pixel * weight));
    const LoopKind unrolled = knobIs(c, "unroll") ? LoopKind::Unrolled : LoopKind::Serial;
    Stmt reduction;
    if (guarded) {
      Stmt checkedUpdate = forLoop(
          i, intImm(tw), LoopKind::Unrolled,
          ifThen(inRange(ix - padLeft, w.run),
                 forLoop(ob, intImm(tob), LoopKind::Unrolled,
                         forLoop(l, intImm(lanes), LoopKind::Vectorized, store(acc, accIndex, load(acc, accIndex) + pixel * weight)))));
      auto taps = [&](Stmt perTap) {
        return forLoop(ky, intImm(kh), unrolled, ifThen(inRange(iy - padTop, h.run), forLoop(kx, intImm(kw), unrolled, perTap)));
      };
      // A block reads no column outside the input when its first and last taps fall inside.
      const int64_t reach = (tw - 1) * s.geo.strides[1] + (kw - 1) * s.geo.dilations[1];
      Expr interior = binary(BinaryOp::And, binary(BinaryOp::Ge, origin * s.geo.strides[1] - padLeft, intImm(0)),
                             binary(BinaryOp::Lt, origin * s.geo.strides[1] + (reach - padLeft), w.run));
      if (!w.dynamic()) {  // blocks [first, last) are interior (block origins grow with xt)
        const int64_t owv = ow.max;
        int64_t first = ceilDiv(owv, tw), last = 0;
        for (int64_t b = 0; b < ceilDiv(owv, tw); ++b) {
          const int64_t o = owv % tw == 0 ? b * tw : std::min(b * tw, owv - tw);
          if (o * s.geo.strides[1] - padLeft >= 0 && o * s.geo.strides[1] + reach - padLeft < w.max)
            first = std::min(first, b), last = b + 1;
        }
        interior = first < last ? binary(BinaryOp::And, binary(BinaryOp::Ge, varRef(xt), intImm(first)),
                                         binary(BinaryOp::Lt, varRef(xt), intImm(last)))
                                : Expr();
      }
      reduction = interior ? ifThen(interior, taps(update), taps(checkedUpdate)) : taps(checkedUpdate);
    } else if (s.depthwise) {
      reduction = forLoop(ky, intImm(kh), unrolled, forLoop(kx, intImm(kw), unrolled, update));
    } else {
      reduction = forLoop(ic, intImm(inLanes), unrolled, update);
      auto blocksLoop = [&](Stmt body) { return forLoop(icb, intImm(s.grouped ? 1 : inBlocks), LoopKind::Serial, body); };
      auto tapsLoops = [&](Stmt body) {
        return forLoop(ky, intImm(kh), LoopKind::Serial, forLoop(kx, intImm(kw), LoopKind::Serial, body));
      };
      reduction = knobIs(c, "order") ? tapsLoops(blocksLoop(reduction)) : blocksLoop(tapsLoops(reduction));
    }

    Expr result = load(acc, accIndex);
    if (node.numInputs() > 2 && node.hasInput(2)) {
      KILN_ASSIGN(Expr bias, el.at(node.input(2), {block * lanes + varRef(l)}));
      result = result + bias;
    }
    el.setSource(node.output(0), [result](const Index&) { return result; });
    KILN_ASSIGN(Stmt epilogue, storeEpilogue(el, {n, block, row, col, varRef(l)}));

    Stmt perTile = allocate(acc, seq({tile(store(acc, accIndex, constantOf(ct, 0))), reduction, tile(epilogue)}));
    const RunCount outer = batch.times(groupsOfBlocks) * oh;
    nests.push_back(forLoop(t, outer.run, outer.loopKind(outerKind(c)),
                            forLoop(xt, blockCount(tw, ow), LoopKind::Serial, perTile)));
    return seq(std::move(nests));
  }
};

}  // namespace

const ScheduleTemplate& convNchwcTemplate() {
  static const ConvNchwcTemplate t;
  return t;
}

}  // namespace kiln::codegen
