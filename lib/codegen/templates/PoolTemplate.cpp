//===- lib/codegen/templates/PoolTemplate.cpp - 2-D and global pooling -----===//
//
// MaxPool and AveragePool over NCHW windows (strides, dilations, padding,
// ceil_mode, count_include_pad), and GlobalAveragePool/GlobalMaxPool as one
// window covering the image. The outer loop runs over (image, channel)
// planes. On the GPU each output pixel reduces its window into a local
// accumulator, skipping taps outside the image, then the epilogue stores it;
// the CPU kernel first copies the input into a buffer bordered with the
// reduction's identity and reads whole windows unchecked, vectors of output
// pixels at a time (GoogLeNet's max pools 10.3 -> 2.8 ms).
//
//   knobs: parallel {0,1}; GPU: one output pixel per thread, threads per block
//
//===----------------------------------------------------------------------===//
#include <limits>

#include "Templates.h"
#include "kiln/ir/ShapeUtils.h"

namespace kiln::codegen {
namespace {

class PoolTemplate final : public ScheduleTemplate {
 public:
  /// The CPU kernel unrolls a window's taps up to this many (a 8x8 window);
  /// larger windows take the checked loops (alter-op-layout keeps them NCHW).
  static constexpr int64_t kMaxUnrolledTaps = 64;

  const char* name() const override { return "pool"; }
  bool matches(const KernelGroup& g) const override { return g.role == KernelRole::Pool; }

  Expected<KnobSpace> knobSpace(const KernelGroup& g, KernelTarget target) const override {
    KILN_ASSIGN(Dims x, windowDims(g, g.anchor->input(0), target, DimPoint::Opt));
    KILN_TRY(checkRank(*g.anchor, x, target));
    KILN_ASSIGN(Dims y, windowDims(g, g.anchor->output(0), target, DimPoint::Opt));
    if (target == KernelTarget::Gpu) return threadPerItemSpace(product(y));
    // Work: two elementwise operations' worth per window tap (the load and
    // the max or add, besides the bordered copy or the bounds checks).
    // Counting input elements instead kept ShuffleNet's 3x3 stride-2 max pool
    // (75K outputs) serial: 0.41 ms alone, 0.21 ms on two cores.
    int64_t taps = x[2] * x[3];
    if (!isGlobal(*g.anchor) && g.anchor->hasAttr("kernel_shape")) taps = product(g.anchor->getInts("kernel_shape"));
    KnobSpace space;
    space.knobs.push_back(parallelKnob(2 * product(y) * taps, x[0] * x[1]));
    return space;
  }

  Expected<Stmt> instantiate(ElementBuilder& el, const Config& c, KernelTarget target) const override {
    const ir::Node& node = *el.group().anchor;
    // Dynamic dims (CPU) are taken at their maxima here; loops run to their run-time values (Image).
    KILN_ASSIGN(Dims x, windowDims(el.group(), node.input(0), target, DimPoint::Max));
    KILN_ASSIGN(Dims y, windowDims(el.group(), node.output(0), target, DimPoint::Max));
    KILN_TRY(checkRank(node, x, target));
    KILN_ASSIGN(const RunCount batch, runDim(el, node.output(0), 0));
    KILN_ASSIGN(const Image im, imageOf(el, node, target));
    const RunCount planes = batch.times(x[1]);
    KILN_ASSIGN(const ScalarType ct, resultComputeType(node));
    const bool isMax = isOp(&node, ir::Op::MaxPool) || isOp(&node, ir::Op::GlobalMaxPool);
    const bool global = isGlobal(node);
    ir::WindowGeometry geo;
    if (global) {
      geo = {{x[2], x[3]}, {1, 1}, {1, 1}, {0, 0}, {0, 0}, {1, 1}};
    } else {
      if (node.numOutputs() > 1 && node.output(1)->hasUses())
        return makeError(ErrorCode::CodegenUnsupported, "MaxPool indices output has no code generation yet");
      bool ceil = node.hasAttr("ceil_mode") && node.getInt("ceil_mode");
      KILN_ASSIGN(geo, ir::computeWindowGeometry(node, Dims(x.begin() + 2, x.end()), node.getInts("kernel_shape"), ceil));
    }
    const bool includePad = !isMax && !global && node.hasAttr("count_include_pad") && node.getInt("count_include_pad");
    const bool unrollable = geo.kernel[0] * geo.kernel[1] <= kMaxUnrolledTaps;
    if (x.size() == 5) {  // channel-blocked [N, C/b, H, W, b]: the window must leave the lanes alone
      if (geo.kernel[2] != 1 || geo.strides[2] != 1 || geo.dilations[2] != 1 || geo.padsBegin[2] || geo.padsEnd[2] ||
          (!isMax && (geo.dilations[0] != 1 || geo.dilations[1] != 1)) || !unrollable)
        return makeError(ErrorCode::CodegenUnsupported, "pool template: a rank-5 (channel-blocked) pool needs a window "
                                                        "of 1 over the last axis, at most ", kMaxUnrolledTaps,
                         " taps, and dilation 1 to average");
      return borderedWindows(el, c, x, im, planes, ct, geo, isMax, includePad);
    }
    if (target == KernelTarget::Cpu && !global && unrollable && (isMax || (geo.dilations[0] == 1 && geo.dilations[1] == 1)))
      return borderedWindows(el, c, x, im, planes, ct, geo, isMax, includePad);

    // A global pool's window is the image, at its run-time size.
    const RunCount kh = global ? im.h : RunCount(geo.kernel[0]), kw = global ? im.w : RunCount(geo.kernel[1]);
    Var p = makeVar("p"), oy = makeVar("oy"), ox = makeVar("ox"), ky = makeVar("ky"), kx = makeVar("kx");
    Expr n = floorDiv(varRef(p), x[1]), ch = floorMod(varRef(p), x[1]);
    Expr iy = varRef(oy) * geo.strides[0] - geo.padsBegin[0] + varRef(ky) * geo.dilations[0];
    Expr ix = varRef(ox) * geo.strides[1] - geo.padsBegin[1] + varRef(kx) * geo.dilations[1];
    Expr inside = binary(BinaryOp::And, inRange(iy, im.h.run), inRange(ix, im.w.run));
    // count_include_pad counts the taps on the padding, not those past it (ceil_mode's last window).
    Expr counted = !includePad ? inside
                               : binary(BinaryOp::And, inRange(iy + geo.padsBegin[0], im.h.plus(geo.padsBegin[0] + geo.padsEnd[0]).run),
                                        inRange(ix + geo.padsBegin[1], im.w.plus(geo.padsBegin[1] + geo.padsEnd[1]).run));
    // A global window lies inside the image: its taps read unchecked, and it has h x w of them.
    KILN_ASSIGN(Expr xv, global ? el.at(node.input(0), {n, ch, varRef(ky), varRef(kx)})
                                : el.at(node.input(0), {n, ch, clampIndex(iy, im.h.run), clampIndex(ix, im.w.run)}));

    Buffer acc = makeBuffer("acc", ct, MemoryScope::Local, 2);  // [value, count]
    double init = isMax ? -std::numeric_limits<double>::infinity() : 0.0;
    Expr a0 = load(acc, intImm(0)), cnt = load(acc, intImm(1));
    Stmt clear = seq({store(acc, intImm(0), constantOf(ct, init)), store(acc, intImm(1), constantOf(ct, 0))});
    Stmt accumulate = store(acc, intImm(0), isMax ? maxOf(a0, xv) : a0 + xv);
    Stmt tap = global ? accumulate
                      : seq({ifThen(inside, accumulate), ifThen(counted, store(acc, intImm(1), cnt + constantOf(ct, 1)))});
    Stmt window = forLoop(ky, kh.run, LoopKind::Serial, forLoop(kx, kw.run, LoopKind::Serial, tap));
    Expr result = a0;
    if (!isMax) result = a0 / (global ? cast(ct, (kh * kw).run) : cnt);
    el.setSource(node.output(0), [result](const Index&) { return result; });
    KILN_ASSIGN(Stmt epilogue, storeEpilogue(el, {n, ch, varRef(oy), varRef(ox)}));
    Stmt pixel = allocate(acc, seq({clear, window, epilogue}));
    Stmt body = forLoop(oy, im.oh.run, LoopKind::Serial, forLoop(ox, im.ow.run, LoopKind::Serial, pixel));
    if (target == KernelTarget::Gpu) {  // one output pixel per thread
      Var o = makeVar("o");
      const RunCount pixels = im.oh * im.ow;
      Stmt perPixel = let(p, binary(BinaryOp::FloorDiv, varRef(o), pixels.run),
                          let(oy, binary(BinaryOp::FloorMod, binary(BinaryOp::FloorDiv, varRef(o), im.ow.run), im.oh.run),
                              let(ox, binary(BinaryOp::FloorMod, varRef(o), im.ow.run), pixel)));
      return threadPerItem(o, planes * pixels, c.at("threads"), perPixel);
    }
    return forLoop(p, planes.run, planes.loopKind(outerKind(c)), body);
  }

 private:
  static bool isGlobal(const ir::Node& n) { return isOp(&n, ir::Op::GlobalAveragePool) || isOp(&n, ir::Op::GlobalMaxPool); }

  /// The input's and output's image dims in a run (static, or run-time
  /// extents with their maxima) and the narrowest output row a run may have.
  struct Image {
    RunCount h = 0, w = 0, oh = 0, ow = 0;
    int64_t owMin = 0;
  };
  static Expected<Image> imageOf(ElementBuilder& el, const ir::Node& node, KernelTarget target) {
    Image im;
    KILN_ASSIGN(im.h, runDim(el, node.input(0), 2));
    KILN_ASSIGN(im.w, runDim(el, node.input(0), 3));
    KILN_ASSIGN(im.oh, runDim(el, node.output(0), 2));
    KILN_ASSIGN(im.ow, runDim(el, node.output(0), 3));
    KILN_ASSIGN(const Dims smallest, windowDims(el.group(), node.output(0), target, DimPoint::Min));
    im.owMin = smallest[3];
    return im;
  }

  /// NCHW pools on every target; channel-blocked ones ([N, C/b, H, W, b],
  /// alter-op-layout's) on the CPU only.
  static Status checkRank(const ir::Node& n, const Dims& x, KernelTarget target) {
    const bool blocked = x.size() == 5 && !isGlobal(n);
    if (x.size() == 4 || (blocked && target == KernelTarget::Cpu)) return Status::ok();
    if (blocked)
      return makeError(ErrorCode::CodegenUnsupported, "pool template: channel-blocked pools (alter-op-layout's) run on "
                                                      "the cpu target only");
    return makeError(ErrorCode::CodegenUnsupported, "pool template handles 2-D pooling only");
  }

  /// The CPU kernel of a windowed pool: the input copied once into a buffer
  /// bordered with the reduction's identity (-inf for max, 0 for average),
  /// deep enough for ceil_mode's last window, then every window read
  /// without bounds checks, its taps unrolled, output pixels a vector of
  /// consecutive columns (the last vector of a row moved back to end at the
  /// row's end), or for a channel-blocked input a vector of a pixel's b
  /// channels. An average divides by the taps on the image, from the
  /// clamped window bounds (dilation 1), or with count_include_pad by
  /// those on the image or its padding.
  static Expected<Stmt> borderedWindows(ElementBuilder& el, const Config& c, const Dims& x, const Image& im,
                                        const RunCount& planes, ScalarType ct, ir::WindowGeometry geo, bool isMax,
                                        bool includePad) {
    const ir::Node& node = *el.group().anchor;
    const bool blocked = x.size() == 5;
    const int64_t inner = blocked ? x[4] : 1;
    const Dims padsEnd = geo.padsEnd;
    const bool ceil = node.hasAttr("ceil_mode") && node.getInt("ceil_mode");
    for (int d = 0; d < 2 && ceil; ++d) {  // ceil_mode's last window may reach past the end padding
      const RunCount& in = d ? im.w : im.h;
      const RunCount& out = d ? im.ow : im.oh;
      const int64_t reach = (out.max - 1) * geo.strides[d] + (geo.kernel[d] - 1) * geo.dilations[d] + 1;
      // By at most stride - 1 (a dynamic dim's reach is known per run only: border it for the most).
      const int64_t extra = in.dynamic() ? geo.strides[d] - 1 : reach - in.max - geo.padsBegin[d];
      geo.padsEnd[d] = std::max(geo.padsEnd[d], in.dynamic() ? geo.padsEnd[d] + extra : extra);
    }
    const double identity = isMax ? -std::numeric_limits<double>::infinity() : 0.0;
    const LoopKind planeLoop = planes.loopKind(outerKind(c));
    KILN_ASSIGN(PaddedCopy copy,
                borderedCopy(el, ct, planes, im.h, im.w, inner, geo, planeLoop, constantOf(ct, identity),
                             [&](const Expr& plane, const Expr& iy, const Expr& ix, const Expr& lane) {
                               Index at{floorDiv(plane, x[1]), floorMod(plane, x[1]), iy, ix};
                               if (blocked) at.push_back(lane);
                               return el.at(node.input(0), at);
                             }));
    // Output columns per vector: no more than the narrowest output row has.
    const int64_t lanes = blocked ? 1 : im.owMin >= 8 ? 8 : im.owMin >= 4 ? 4 : 1;
    Var p = makeVar("p"), oy = makeVar("oy"), oxo = makeVar("oxo"), v = makeVar("v"), l = makeVar("l");
    Expr ox = lanes > 1 ? blockOrigin(varRef(oxo), lanes, im.ow) + varRef(v) : varRef(oxo);
    Expr result;
    for (int64_t ky = 0; ky < geo.kernel[0]; ++ky)
      for (int64_t kx = 0; kx < geo.kernel[1]; ++kx) {
        Expr row = varRef(p) * copy.hp.run + varRef(oy) * geo.strides[0] + ky * geo.dilations[0];
        Expr pixel = row * copy.wp.run + ox * geo.strides[1] + kx * geo.dilations[1];
        Expr tap = load(copy.buffer, blocked ? pixel * inner + varRef(l) : pixel);
        result = !result ? tap : isMax ? maxOf(result, tap) : result + tap;
      }
    if (!isMax) {  // taps counted: the window clamped, per axis, to the image or (count_include_pad) its padding
      auto counted = [&](const Expr& o, int d) {
        Expr first = o * geo.strides[d] - geo.padsBegin[d];  // >= -padsBegin
        const RunCount& in = d ? im.w : im.h;
        if (includePad) return minOf(first + geo.kernel[d], in.plus(padsEnd[d]).run) - first;
        return minOf(first + geo.kernel[d], in.run) - maxOf(first, intImm(0));
      };
      result = result / cast(ct, counted(varRef(oy), 0) * counted(ox, 1));
    }
    el.setSource(node.output(0), [result](const Index&) { return result; });
    Index at{floorDiv(varRef(p), x[1]), floorMod(varRef(p), x[1]), varRef(oy), ox};
    if (blocked) at.push_back(varRef(l));
    KILN_ASSIGN(Stmt store, storeEpilogue(el, at));
    if (blocked) store = forLoop(l, intImm(inner), LoopKind::Vectorized, store);
    Stmt row = lanes > 1 ? forLoop(oxo, blockCount(lanes, im.ow), LoopKind::Serial,
                                   forLoop(v, intImm(lanes), LoopKind::Vectorized, store))
                         : forLoop(oxo, im.ow.run, LoopKind::Serial, store);
    Stmt windows = forLoop(p, planes.run, planeLoop, forLoop(oy, im.oh.run, LoopKind::Serial, row));
    return seq({copy.fill, windows});
  }
};

}  // namespace

const ScheduleTemplate& poolTemplate() {
  static const PoolTemplate t;
  return t;
}

}  // namespace kiln::codegen
