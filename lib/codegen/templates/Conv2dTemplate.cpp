//===- lib/codegen/templates/Conv2dTemplate.cpp - 2-D convolution ----------===//
//
// Conv over NCHW data with OIHW weights: any groups (depthwise included),
// strides, dilations, padding. Two algorithms, chosen by the `algo` knob:
//
//   direct (0): each output row is cut into tiles of tw pixels; a toc x tw
//     register block accumulates weight(oc, ic, ky, kx) * input pixels over
//     k = (ic, ky, kx). A padded input first goes to a zero-bordered
//     workspace copy, so the inner loop reads without bounds checks
//     (contiguous vectors at stride 1).
//   im2col (1): the input patches are copied into a workspace matrix
//     col[(ic, ky, kx), pixel] (skipped for 1x1 stride-1 unpadded convs, whose
//     input already is that matrix), then a register-blocked GEMM computes
//     weights[oc, k] x col[k, pixel] over the flattened output pixels.
//
// Both run bias and the group's elementwise epilogue at the store. A last
// block that would overhang is moved back to end at the edge; only an image
// narrower than one block reads clamped indices and masks its stores.
//
//===----------------------------------------------------------------------===//
#include <array>

#include "Templates.h"
#include "kiln/ir/ShapeUtils.h"

namespace kiln::codegen {
namespace {

/// Direct convolutions with at most this many taps per output unroll them.
constexpr int64_t kUnrolledTaps = 27;

struct ConvShape {
  Dims x, w, y;
  int64_t groups, icg, ocg, kh, kw;
  ir::WindowGeometry geo;
  bool padded = false;
  bool pointwise = false;  ///< 1x1, stride 1, no padding
};

/// The shape with the data's and result's dims from `dimsOf` (static, or a
/// dynamic batch at a point of its range: windowDims).
Expected<ConvShape> shapeOf(const ir::Node& node, const std::function<Expected<Dims>(const ir::Value*)>& dimsOf) {
  ConvShape s;
  KILN_ASSIGN(s.x, dimsOf(node.input(0)));
  KILN_ASSIGN(s.w, staticDims(node.input(1)));
  KILN_ASSIGN(s.y, dimsOf(node.output(0)));
  if (s.x.size() != 4) return makeError(ErrorCode::CodegenUnsupported, "conv template handles 2-D convolution only");
  s.groups = node.getInt("group");
  s.icg = s.w[1], s.ocg = s.w[0] / s.groups, s.kh = s.w[2], s.kw = s.w[3];
  KILN_ASSIGN(s.geo, ir::computeWindowGeometry(node, {s.x[2], s.x[3]}, {s.w[2], s.w[3]}, false));
  for (size_t d = 0; d < 2; ++d) s.padded |= s.geo.padsBegin[d] != 0 || s.geo.padsEnd[d] != 0;
  s.pointwise = s.kh == 1 && s.kw == 1 && !s.padded && s.geo.strides[0] == 1 && s.geo.strides[1] == 1;
  return s;
}

/// Whether the conv's data has a dynamic image dim.
bool hasDynamicImage(const ir::Node& node) {
  const ir::TensorType& x = node.input(0)->tensorType();
  return x.rank() == 4 && (x.dim(2) < 0 || x.dim(3) < 0);
}

class Conv2dTemplate final : public ScheduleTemplate {
 public:
  const char* name() const override { return "conv2d"; }
  bool matches(const KernelGroup& g) const override {
    return g.role == KernelRole::Conv && g.anchor && g.anchor->domain().empty();
  }

  // The knobs. CPU: algo {0 direct, 1 im2col} (default im2col unless grouped),
  //          toc {1,2,4,8} output channels per block (dividing the group's),
  //          tw {4,8,16,32,64 and the output width when <= 64} pixels per block,
  //          order {0 channel blocks outer, 1 pixel blocks outer} (im2col),
  //          pack {0,1} (im2col: col in panels of tw pixels, contiguous per k;
  //          1x1 convs copy too), parallel {0,1}
  //   GPU: one output element per thread (its taps serial, unrolled up to 27),
  //          knob threads per block; ungrouped convs run as an implicit GEMM
  //          (GpuGemm.cpp: rows output channels, columns an image's pixels, k
  //          the taps) with gemm {0,1} (1, the default: shared-memory tiles,
  //          register tiles) and block {32,64}; f16 / bf16 ones also get
  //          mma {0,1} (1: tensor cores), warps {1,4} and frags {1,2} (f32: TF32, mma default 0, opt-in)
  Expected<KnobSpace> knobSpace(const KernelGroup& g, KernelTarget target) const override {
    KILN_ASSIGN(ConvShape s, shapeOf(*g.anchor, [&](const ir::Value* v) { return windowDims(g, v, target, DimPoint::Opt); }));
    if (target == KernelTarget::Gpu) {
      KnobSpace space = threadPerItemSpace(product(s.y));
      if (s.groups == 1) addSimtGemmKnobs(space, s.y[0], s.y[1], s.y[2] * s.y[3]);
      KILN_ASSIGN(std::optional<MmaKind> mma, mmaKindOf(*g.anchor, s));
      if (mma) addTensorCoreKnobs(space, s.y[0], s.y[1], s.y[2] * s.y[3], *mma);
      return space;
    }
    const int64_t ow = s.y[3], pixels = s.y[2] * s.y[3];
    KILN_ASSIGN(const Dims smallest, windowDims(g, g.anchor->output(0), target, DimPoint::Min));
    // Over a dynamic image size only the direct algorithm runs, its blocks no wider than the narrowest row.
    const bool dynamicImage = hasDynamicImage(*g.anchor);
    const int64_t owMin = smallest[3];
    KnobSpace space;
    space.knobs.push_back(makeKnob("algo", {0, 1}, s.groups == 1 && !dynamicImage ? 1 : 0, "0 direct, 1 im2col + GEMM",
                                   [&](int64_t v) { return v == 0 || !dynamicImage; }));
    space.knobs.push_back(makeKnob("toc", {1, 2, 4, 8, 16}, 4, "output channels per register block",
                                   [&](int64_t v) { return s.ocg % v == 0; }));
    std::vector<int64_t> widths{4, 8, 16, 32, 64};
    if (ow <= 64 && std::find(widths.begin(), widths.end(), ow) == widths.end()) widths.push_back(ow);
    if (dynamicImage && owMin < 4) widths.push_back(owMin);
    // Default block width: one dividing what is tiled (all pixels for im2col, a row for direct).
    const bool im2colDefault = s.groups == 1 && !dynamicImage;
    const int64_t tiled = im2colDefault ? pixels : ow;
    int64_t preferred = 32;
    for (int64_t v : {32, 16, 8})
      if (tiled % v == 0) {
        preferred = v;
        break;
      }
    if (!im2colDefault && ow < 32 && ow % preferred) preferred = ow;
    if (dynamicImage) preferred = std::min(preferred, owMin);
    space.knobs.push_back(makeKnob("tw", widths, preferred, "output pixels per register block (vectorized)", [&](int64_t v) {
      return dynamicImage ? v <= owMin : v <= std::max<int64_t>(4, pixels + 3);
    }));
    // Loop order (im2col): stream the larger GEMM operand fewer times.
    double weightsPasses = double(pixels) / double(preferred) * double(s.w[0]), colPasses = double(s.ocg) / 4.0 * double(pixels);
    space.knobs.push_back(makeKnob("order", {0, 1}, weightsPasses < colPasses ? 1 : 0,
                                   "im2col: 0 channel blocks outer, 1 pixel blocks outer"));
    // A 1x1 conv reads its input directly unless the copy into panels pays off (long k loops).
    const int64_t packDefault = !s.pointwise || s.icg >= 256 ? 1 : 0;
    space.knobs.push_back(makeKnob("pack", {0, 1}, packDefault, "im2col: lay col out in panels of tw pixels"));
    space.knobs.push_back(parallelKnob(product(s.y) * product(s.w, 1), s.y[0] * s.w[0]));
    return space;
  }

  Expected<Stmt> instantiate(ElementBuilder& el, const Config& c, KernelTarget target) const override {
    const ir::Node& node = *el.group().anchor;
    // A dynamic batch (CPU) is taken at its maximum here; the loops over images run to its run-time value.
    KILN_ASSIGN(ConvShape s, shapeOf(node, [&](const ir::Value* v) { return windowDims(el.group(), v, target, DimPoint::Max); }));
    KILN_ASSIGN(const ScalarType ct, resultComputeType(node));
    if (target == KernelTarget::Gpu) {
      KILN_ASSIGN(const Image im, imageOf(el, node));
      return usesGpuGemm(c) ? instantiateGemm(el, c, s, im, ct) : instantiateGpu(el, c, s, im, ct);
    }
    KILN_ASSIGN(const RunCount batch, runDim(el, node.output(0), 0));
    const int64_t toc = c.at("toc"), tw = c.at("tw"), ocTiles = s.ocg / toc;
    const bool im2col = c.at("algo") == 1;
    const int64_t oh = s.y[2], ow = s.y[3], kTotal = s.icg * s.kh * s.kw;
    // Image dims, static or run-time extents (oh and ow above are their maxima).
    KILN_ASSIGN(const RunCount inH, runDim(el, node.input(0), 2));
    KILN_ASSIGN(const RunCount inW, runDim(el, node.input(0), 3));
    KILN_ASSIGN(const RunCount outH, runDim(el, node.output(0), 2));
    KILN_ASSIGN(const RunCount outW, runDim(el, node.output(0), 3));
    const bool dynamicImage = inH.dynamic() || inW.dynamic();
    if (dynamicImage && im2col)
      return makeError(ErrorCode::CodegenUnsupported, "conv template: im2col (algo 1) needs a static image size")
          .atNode(node.displayName(), node.opType());

    // Outer loop t = ((n * groups + g) * ocTiles + tile).
    Var t = makeVar("t"), i = makeVar("i"), j = makeVar("j"), k = makeVar("k");
    Expr n = floorDiv(varRef(t), s.groups * ocTiles);
    Expr g = floorMod(floorDiv(varRef(t), ocTiles), s.groups);
    Expr oc0 = g * s.ocg + floorMod(varRef(t), ocTiles) * toc;
    Expr ic = floorDiv(varRef(k), s.kh * s.kw), ky = floorMod(floorDiv(varRef(k), s.kw), s.kh), kx = floorMod(varRef(k), s.kw);
    KILN_ASSIGN(Expr weight, el.at(node.input(1), {oc0 + varRef(i), ic, ky, kx}));
    std::vector<Stmt> nests;
    Var y = makeVar("y"), xt = makeVar("xt");
    Expr row, col;  // output pixel of block lane (i, j)
    std::function<Expected<Expr>(bool)> pixelValue;
    Expr tilesPerRow, rows;
    const bool panelsLayout = im2col && knobIs(c, "pack");
    if (im2col) {
      // col[((n * groups + g) * K + k) * P + p], or with pack=1 in panels of tw
      // pixels: col[(((n * groups + g) * panels + p / tw) * K + k) * tw + p % tw],
      // so the GEMM reads each k step as one contiguous vector.
      const int64_t pixels = oh * ow, panels = ceilDiv(pixels, tw);
      Expr p = (panelsLayout ? varRef(xt) * tw : blockOrigin(varRef(xt), tw, pixels)) + varRef(j);
      row = floorDiv(p, ow), col = floorMod(p, ow);
      tilesPerRow = intImm(ceilDiv(pixels, tw)), rows = intImm(1);
      Expr image = n * s.groups + g;
      if (s.pointwise && !panelsLayout) {
        pixelValue = [&, p, image, pixels](bool clamped) -> Expected<Expr> {
          Expr q = clamped ? clampIndex(p, pixels) : p;
          return el.atFlat(node.input(0), (image * s.icg + varRef(k)) * pixels + q);
        };
      } else {
        const RunCount images = batch.times(s.groups);
        Buffer colBuf = el.workspace("col", ct, images.max * kTotal * (panelsLayout ? panels * tw : pixels));
        // r = (n, g, k) row of col; q = pixel (with panels: panel pn, lane jv, vectorized;
        // the padded tail of the last panel reads outside the image and stores zeros).
        Var r = makeVar("r"), q = makeVar("q"), pn = makeVar("pn"), jv = makeVar("jv");
        Expr pixel = panelsLayout ? varRef(pn) * tw + varRef(jv) : varRef(q);
        Expr rn = floorDiv(varRef(r), s.groups * kTotal), rg = floorMod(floorDiv(varRef(r), kTotal), s.groups);
        Expr rk = floorMod(varRef(r), kTotal);
        Expr ric = floorDiv(rk, s.kh * s.kw), rky = floorMod(floorDiv(rk, s.kw), s.kh), rkx = floorMod(rk, s.kw);
        Expr qy = floorDiv(pixel, ow), qx = floorMod(pixel, ow);
        Expr iy = qy * s.geo.strides[0] - s.geo.padsBegin[0] + rky * s.geo.dilations[0];
        Expr ix = qx * s.geo.strides[1] - s.geo.padsBegin[1] + rkx * s.geo.dilations[1];
        Expr inside = binary(BinaryOp::And, inRange(iy, s.x[2]), inRange(ix, s.x[3]));
        KILN_ASSIGN(Expr v, el.at(node.input(0), {rn, rg * s.icg + ric, clampIndex(iy, s.x[2]), clampIndex(ix, s.x[3])}));
        if (s.padded || (panelsLayout && pixels % tw)) v = select(inside, v, constantOf(ct, 0));
        const RunCount colRows = images.times(kTotal);
        Stmt fill = panelsLayout
                        ? forLoop(pn, intImm(panels), LoopKind::Serial,
                                  forLoop(jv, intImm(tw), LoopKind::Vectorized,
                                          store(colBuf, ((floorDiv(varRef(r), kTotal) * panels + varRef(pn)) * kTotal + rk) * tw + varRef(jv), v)))
                        : forLoop(q, intImm(pixels), LoopKind::Serial, store(colBuf, varRef(r) * pixels + varRef(q), v));
        nests.push_back(forLoop(r, colRows.run, colRows.loopKind(outerKind(c)), fill));
        pixelValue = [&, p, image, pixels, colBuf, panels](bool clamped) -> Expected<Expr> {
          if (panelsLayout) return load(colBuf, ((image * panels + varRef(xt)) * kTotal + varRef(k)) * tw + varRef(j));
          Expr q2 = clamped ? clampIndex(p, pixels) : p;
          return load(colBuf, (image * kTotal + varRef(k)) * pixels + q2);
        };
      }
    } else {
      // Direct: from a zero-bordered copy of the input when padded.
      row = varRef(y), col = blockOrigin(varRef(xt), tw, outW) + varRef(j);
      tilesPerRow = blockCount(tw, outW), rows = outH.run;
      Buffer padBuf;
      RunCount hp = inH, wp = inW;
      if (s.padded) {
        auto source = [&](const Expr& plane, const Expr& iy, const Expr& ix, const Expr&) {
          return el.at(node.input(0), {floorDiv(plane, s.x[1]), floorMod(plane, s.x[1]), iy, ix});
        };
        KILN_ASSIGN(PaddedCopy copy, borderedCopy(el, ct, batch.times(s.x[1]), inH, inW, 1, s.geo, outerKind(c), constantOf(ct, 0), source));
        padBuf = copy.buffer, hp = copy.hp, wp = copy.wp;
        nests.push_back(copy.fill);
      }
      pixelValue = [&, padBuf, hp, wp](bool clamped) -> Expected<Expr> {
        Expr cx = clamped ? clampIndex(col, ow) : col;
        Expr iy = row * s.geo.strides[0] + ky * s.geo.dilations[0];
        Expr ix = cx * s.geo.strides[1] + kx * s.geo.dilations[1];
        Expr channel = g * s.icg + ic;
        if (padBuf) return load(padBuf, ((n * s.x[1] + channel) * hp.run + iy) * wp.run + ix);
        return el.at(node.input(0), {n, channel, iy, ix});
      };
    }

    GemmBlock block{i, j, k, toc, tw, kTotal, makeBuffer("acc", ct, MemoryScope::Local, toc * tw)};
    // A direct conv with few taps per output (depthwise 3x3: 9) unrolls them:
    // the tap offsets become constants.
    if (!im2col && kTotal <= kUnrolledTaps) block.kLoop = LoopKind::Unrolled;
    Expr accIndex = varRef(i) * tw + varRef(j);
    Expr oc = oc0 + varRef(i);
    Expr result = load(block.acc, accIndex);
    if (node.numInputs() > 2 && node.hasInput(2)) {
      KILN_ASSIGN(Expr bias, el.at(node.input(2), {oc}));
      result = result + bias;
    }
    el.setSource(node.output(0), [result](const Index&) { return result; });
    const int64_t extent = im2col ? oh * ow : ow;
    Expr lane = (panelsLayout ? varRef(xt) * tw : blockOrigin(varRef(xt), tw, extent)) + varRef(j);
    const bool overhang = panelsLayout ? extent % tw != 0 : blocksOverhang(tw, extent);
    Expr guard = overhang ? binary(BinaryOp::Lt, lane, intImm(extent)) : Expr();
    KILN_ASSIGN(Stmt epilogue, storeEpilogue(el, {n, oc, row, col}, guard));
    Expr fullTile = blocksOverhang(tw, extent) && !panelsLayout ? boolImm(false) : Expr();
    auto product = [&](bool clamped) -> Expected<Expr> {
      KILN_ASSIGN(Expr px, pixelValue(clamped));
      return weight * px;
    };
    KILN_ASSIGN(Stmt perTile, gemmBlock(block, fullTile, product, gemmTileLoops(block, epilogue)));
    const RunCount outer = batch.times(s.groups * ocTiles);
    if (im2col && c.at("order") == 1) {  // pixel tiles outer: a col strip stays in cache for every channel block
      Stmt body = forLoop(t, outer.run, LoopKind::Serial, perTile);
      nests.push_back(forLoop(xt, tilesPerRow, ceilDiv(oh * ow, tw) > 1 ? outerKind(c) : LoopKind::Serial, body));
      return seq(std::move(nests));
    }
    Stmt body = forLoop(xt, tilesPerRow, LoopKind::Serial, perTile);
    if (!im2col) body = forLoop(y, rows, LoopKind::Serial, body);
    nests.push_back(forLoop(t, outer.run, outer.loopKind(outerKind(c)), body));
    return seq(std::move(nests));
  }

 private:
  /// The tensor-core instruction for an ungrouped conv's operand types, if any.
  static Expected<std::optional<MmaKind>> mmaKindOf(const ir::Node& node, const ConvShape& s) {
    if (s.groups != 1) return std::optional<MmaKind>();
    KILN_ASSIGN(ScalarType x, valueScalarType(node.input(0)));
    KILN_ASSIGN(ScalarType w, valueScalarType(node.input(1)));
    return mmaKindFor(w, x);
  }

  /// The batch and the data's and result's image dims in a run (static, or run-time extents with their maxima).
  struct Image {
    RunCount n = 0, h = 0, w = 0, oh = 0, ow = 0;
  };
  static Expected<Image> imageOf(ElementBuilder& el, const ir::Node& node) {
    Image im;
    KILN_ASSIGN(im.n, runDim(el, node.output(0), 0));
    KILN_ASSIGN(im.h, runDim(el, node.input(0), 2));
    KILN_ASSIGN(im.w, runDim(el, node.input(0), 3));
    KILN_ASSIGN(im.oh, runDim(el, node.output(0), 2));
    KILN_ASSIGN(im.ow, runDim(el, node.output(0), 3));
    return im;
  }

  /// GPU as an implicit GEMM (tensor cores with mma = 1, else SIMT tiles):
  /// per image, out[oc, pixel] = sum over taps k of weight[oc, k] *
  /// patch[k, pixel] (taps outside the image read zero).
  static Expected<Stmt> instantiateGemm(ElementBuilder& el, const Config& c, const ConvShape& s, const Image& im, ScalarType ct) {
    const ir::Node& node = *el.group().anchor;
    if (s.groups != 1) return makeError(ErrorCode::CodegenUnsupported, "the GPU implicit GEMM needs an ungrouped conv");
    KILN_ASSIGN(std::optional<MmaKind> kind, mmaKindOf(node, s));
    const int64_t window = s.kh * s.kw;
    const Expr ow = im.ow.run;
    auto tap = [&](const Expr& k) {
      return std::array<Expr, 3>{floorDiv(k, window), floorMod(floorDiv(k, s.kw), s.kh), floorMod(k, s.kw)};
    };
    GpuGemm gemm;
    gemm.batch = im.n, gemm.m = s.y[1], gemm.n = im.oh * im.ow, gemm.k = s.icg * window;
    gemm.a = [&](const Expr&, const Expr& oc, const Expr& k) {
      auto [ic, ky, kx] = tap(k);
      return el.at(node.input(1), {oc, ic, ky, kx});
    };
    gemm.b = [&](const Expr& n, const Expr& k, const Expr& pixel) -> Expected<Expr> {
      auto [ic, ky, kx] = tap(k);
      Expr iy = binary(BinaryOp::FloorDiv, pixel, ow) * s.geo.strides[0] - s.geo.padsBegin[0] + ky * s.geo.dilations[0];
      Expr ix = binary(BinaryOp::FloorMod, pixel, ow) * s.geo.strides[1] - s.geo.padsBegin[1] + kx * s.geo.dilations[1];
      KILN_ASSIGN(Expr xv, el.at(node.input(0), {n, ic, clampIndex(iy, im.h.run), clampIndex(ix, im.w.run)}));
      if (!s.padded) return xv;
      return select(binary(BinaryOp::And, inRange(iy, im.h.run), inRange(ix, im.w.run)), xv, constantOf(computeType(xv->type), 0));
    };
    gemm.write = [&](const Expr& n, const Expr& oc, const Expr& pixel, const Expr& value) -> Expected<Stmt> {
      Expr result = cast(ct, value);
      if (node.numInputs() > 2 && node.hasInput(2)) {
        KILN_ASSIGN(Expr bias, el.at(node.input(2), {oc}));
        result = result + bias;
      }
      el.setSource(node.output(0), [result](const Index&) { return result; });
      return storeEpilogue(el, {n, oc, binary(BinaryOp::FloorDiv, pixel, ow), binary(BinaryOp::FloorMod, pixel, ow)});
    };
    return gpuGemm(std::move(gemm), kind, c);
  }

  /// GPU: one output element per thread, its taps (input channels of its
  /// group x window) in a serial loop; taps outside the image read zero.
  static Expected<Stmt> instantiateGpu(ElementBuilder& el, const Config& c, const ConvShape& s, const Image& im, ScalarType ct) {
    const ir::Node& node = *el.group().anchor;
    const int64_t oc = s.y[1], taps = s.icg * s.kh * s.kw;
    const Expr oh = im.oh.run, ow = im.ow.run;
    Var o = makeVar("o"), n = makeVar("n"), ch = makeVar("oc"), oy = makeVar("oy"), ox = makeVar("ox"), k = makeVar("k");
    Expr ic = floorDiv(varRef(k), s.kh * s.kw), ky = floorMod(floorDiv(varRef(k), s.kw), s.kh), kx = floorMod(varRef(k), s.kw);
    Expr iy = varRef(oy) * s.geo.strides[0] - s.geo.padsBegin[0] + ky * s.geo.dilations[0];
    Expr ix = varRef(ox) * s.geo.strides[1] - s.geo.padsBegin[1] + kx * s.geo.dilations[1];
    Expr channel = floorDiv(varRef(ch), s.ocg) * s.icg + ic;
    KILN_ASSIGN(Expr xv, el.at(node.input(0), {varRef(n), channel, clampIndex(iy, im.h.run), clampIndex(ix, im.w.run)}));
    if (s.padded) xv = select(binary(BinaryOp::And, inRange(iy, im.h.run), inRange(ix, im.w.run)), xv, constantOf(ct, 0));
    KILN_ASSIGN(Expr wv, el.at(node.input(1), {varRef(ch), ic, ky, kx}));
    Buffer acc = makeBuffer("acc", ct, MemoryScope::Local, 1);
    Expr result = load(acc, intImm(0));
    if (node.numInputs() > 2 && node.hasInput(2)) {
      KILN_ASSIGN(Expr bias, el.at(node.input(2), {varRef(ch)}));
      result = result + bias;
    }
    el.setSource(node.output(0), [result](const Index&) { return result; });
    KILN_ASSIGN(Stmt epilogue, storeEpilogue(el, {varRef(n), varRef(ch), varRef(oy), varRef(ox)}));
    Stmt body = allocate(acc, seq({store(acc, intImm(0), constantOf(ct, 0)),
                                   forLoop(k, intImm(taps), taps <= kUnrolledTaps ? LoopKind::Unrolled : LoopKind::Serial,
                                           store(acc, intImm(0), load(acc, intImm(0)) + wv * xv)),
                                   epilogue}));
    Expr flat = varRef(o);
    const RunCount pixels = im.oh * im.ow;
    body = let(n, binary(BinaryOp::FloorDiv, flat, pixels.times(oc).run),
               let(ch, floorMod(binary(BinaryOp::FloorDiv, flat, pixels.run), oc),
                   let(oy, binary(BinaryOp::FloorMod, binary(BinaryOp::FloorDiv, flat, ow), oh),
                       let(ox, binary(BinaryOp::FloorMod, flat, ow), body))));
    return threadPerItem(o, im.n * pixels.times(oc), c.at("threads"), body);
  }
};

}  // namespace

const ScheduleTemplate& conv2dTemplate() {
  static const Conv2dTemplate t;
  return t;
}

}  // namespace kiln::codegen
