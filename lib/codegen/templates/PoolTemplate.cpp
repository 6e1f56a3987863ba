//===- lib/codegen/templates/PoolTemplate.cpp - 2-D and global pooling -----===//
//
// MaxPool and AveragePool over NCHW windows (strides, dilations, padding,
// ceil_mode, count_include_pad), and GlobalAveragePool/GlobalMaxPool as one
// window covering the image. The outer loop runs over (image, channel)
// planes; each output pixel reduces its window into a local accumulator,
// skipping taps outside the image, then the epilogue stores it.
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
  const char* name() const override { return "pool"; }
  bool matches(const KernelGroup& g) const override { return g.role == KernelRole::Pool; }

  Expected<KnobSpace> knobSpace(const KernelGroup& g, KernelTarget target) const override {
    KILN_ASSIGN(Dims x, staticDims(g.anchor->input(0)));
    if (x.size() != 4) return makeError(ErrorCode::CodegenUnsupported, "pool template handles 2-D pooling only");
    if (target == KernelTarget::Gpu) {
      KILN_ASSIGN(Dims y, staticDims(g.anchor->output(0)));
      return threadPerItemSpace(product(y));
    }
    KnobSpace space;
    space.knobs.push_back(parallelKnob(product(x), x[0] * x[1]));
    return space;
  }

  Expected<Stmt> instantiate(ElementBuilder& el, const Config& c, KernelTarget target) const override {
    const ir::Node& node = *el.group().anchor;
    KILN_ASSIGN(Dims x, staticDims(node.input(0)));
    KILN_ASSIGN(Dims y, staticDims(node.output(0)));
    KILN_ASSIGN(const ScalarType ct, resultComputeType(node));
    const std::string& op = node.opType();
    const bool isMax = op == "MaxPool" || op == "GlobalMaxPool";
    const bool global = op.rfind("Global", 0) == 0;
    ir::WindowGeometry geo;
    if (global) {
      geo = {{x[2], x[3]}, {1, 1}, {1, 1}, {0, 0}, {0, 0}, {1, 1}};
    } else {
      if (node.numOutputs() > 1 && node.output(1)->hasUses())
        return makeError(ErrorCode::CodegenUnsupported, "MaxPool indices output has no code generation yet");
      bool ceil = node.hasAttr("ceil_mode") && node.getInt("ceil_mode");
      KILN_ASSIGN(geo, ir::computeWindowGeometry(node, {x[2], x[3]}, node.getInts("kernel_shape"), ceil));
    }
    const bool includePad = !isMax && !global && node.hasAttr("count_include_pad") && node.getInt("count_include_pad");

    Var p = makeVar("p"), oy = makeVar("oy"), ox = makeVar("ox"), ky = makeVar("ky"), kx = makeVar("kx");
    Expr n = floorDiv(varRef(p), x[1]), ch = floorMod(varRef(p), x[1]);
    Expr iy = varRef(oy) * geo.strides[0] - geo.padsBegin[0] + varRef(ky) * geo.dilations[0];
    Expr ix = varRef(ox) * geo.strides[1] - geo.padsBegin[1] + varRef(kx) * geo.dilations[1];
    Expr inside = binary(BinaryOp::And, inRange(iy, x[2]), inRange(ix, x[3]));
    KILN_ASSIGN(Expr xv, el.at(node.input(0), {n, ch, clampIndex(iy, x[2]), clampIndex(ix, x[3])}));

    Buffer acc = makeBuffer("acc", ct, MemoryScope::Local, 2);  // [value, count]
    double init = isMax ? -std::numeric_limits<double>::infinity() : 0.0;
    Expr a0 = load(acc, intImm(0)), cnt = load(acc, intImm(1));
    Stmt clear = seq({store(acc, intImm(0), constantOf(ct, init)), store(acc, intImm(1), constantOf(ct, 0))});
    Stmt tap = ifThen(inside, seq({store(acc, intImm(0), isMax ? maxOf(a0, xv) : a0 + xv),
                                   store(acc, intImm(1), cnt + constantOf(ct, 1))}));
    Stmt window = forLoop(ky, intImm(geo.kernel[0]), LoopKind::Serial, forLoop(kx, intImm(geo.kernel[1]), LoopKind::Serial, tap));
    Expr result = a0;
    if (!isMax) result = a0 / (includePad ? constantOf(ct, double(geo.kernel[0] * geo.kernel[1])) : cnt);
    el.setSource(node.output(0), [result](const Index&) { return result; });
    KILN_ASSIGN(Stmt epilogue, storeEpilogue(el, {n, ch, varRef(oy), varRef(ox)}));
    Stmt pixel = allocate(acc, seq({clear, window, epilogue}));
    Stmt body = forLoop(oy, intImm(y[2]), LoopKind::Serial, forLoop(ox, intImm(y[3]), LoopKind::Serial, pixel));
    int64_t outer = x[0] * x[1];
    if (target == KernelTarget::Gpu) {  // one output pixel per thread
      Var o = makeVar("o");
      Stmt perPixel = let(p, floorDiv(varRef(o), y[2] * y[3]),
                          let(oy, floorMod(floorDiv(varRef(o), y[3]), y[2]), let(ox, floorMod(varRef(o), y[3]), pixel)));
      return threadPerItem(o, outer * y[2] * y[3], c.at("threads"), perPixel);
    }
    return forLoop(p, intImm(outer), outer > 1 ? outerKind(c) : LoopKind::Serial, body);
  }
};

}  // namespace

const ScheduleTemplate& poolTemplate() {
  static const PoolTemplate t;
  return t;
}

}  // namespace kiln::codegen
