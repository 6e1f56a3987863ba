//===- lib/codegen/templates/ReduceTemplate.cpp - Reductions over axes -----===//
//
// Reduce{Sum,Mean,Max,Min,Prod,L1,L2,SumSquare,LogSum,LogSumExp} and
// ArgMax/ArgMin (first or last best index along one axis): the outer loop runs
// over the kept elements, the inner loop over the reduced ones (flattened),
// accumulating into a local scalar; injective producers fused as a prologue
// are inlined into the read, and the epilogue runs at the store.
//
//   knobs: parallel {0,1}; GPU: threads per block, and for value reductions
//   warp {0,1}: one kept element per thread, or per warp (lanes take every
//   32nd reduced element, combined by xor shuffles; lane 0 stores; the
//   default when the innermost dim is reduced and there are >= 32 elements)
//
//===----------------------------------------------------------------------===//
#include <limits>

#include "Templates.h"
#include "kiln/ir/ShapeUtils.h"

namespace kiln::codegen {
namespace {

bool isArg(const ir::Node& n) { return isOp(&n, ir::Op::ArgMax) || isOp(&n, ir::Op::ArgMin); }

struct ReduceShape {
  Dims in;
  std::vector<bool> reduced;  ///< per input dim
  int64_t kept = 1, count = 1;
};

/// The shape with the input's dims from `dimsOf` (static, at the opt values,
/// or with -1 at dynamic dims: kept and count are then wrong, and the CPU
/// schedule takes them as expressions).
Expected<ReduceShape> shapeOf(const ir::Node& node,
                              const std::function<Expected<Dims>(const ir::Value*)>& dimsOf = staticDims) {
  ReduceShape s;
  KILN_ASSIGN(s.in, dimsOf(node.input(0)));
  std::vector<int64_t> axes;
  if (node.hasAttr("axes")) axes = node.getInts("axes");
  if (isArg(node)) axes = {node.getInt("axis")};
  if (node.numInputs() > 1 && node.hasInput(1)) {
    const ir::Node* p = node.input(1)->producer();
    if (!p || p->op() != ir::Op::Constant)
      return makeError(ErrorCode::CodegenUnsupported, "reduction axes must be constant");
    axes = p->getTensor("value").toInt64s();
  }
  bool noop = node.hasAttr("noop_with_empty_axes") && node.getInt("noop_with_empty_axes");
  if (axes.empty() && noop) return makeError(ErrorCode::CodegenUnsupported, "empty-axes no-op reduction (fold it away)");
  s.reduced.assign(s.in.size(), axes.empty());
  KILN_ASSIGN(std::vector<int64_t> norm, ir::normalizeAxes(axes, int64_t(s.in.size())));
  for (int64_t a : norm) s.reduced[size_t(a)] = true;
  for (size_t d = 0; d < s.in.size(); ++d) (s.reduced[d] ? s.count : s.kept) *= s.in[d];
  return s;
}

class ReduceTemplate final : public ScheduleTemplate {
 public:
  const char* name() const override { return "reduce"; }
  bool matches(const KernelGroup& g) const override {
    return g.role == KernelRole::Reduce;
  }

  Expected<KnobSpace> knobSpace(const KernelGroup& g, KernelTarget target) const override {
    KILN_ASSIGN(ReduceShape s, shapeOf(*g.anchor, [&](const ir::Value* v) { return dimsAt(v, g.dimRanges, DimPoint::Opt); }));
    if (target == KernelTarget::Gpu) {
      KnobSpace space = threadPerItemSpace(s.kept);
      if (!isArg(*g.anchor))
        space.knobs.push_back(makeKnob("warp", {0, 1}, s.count >= 32 && !s.reduced.empty() && s.reduced.back() ? 1 : 0,
                                       "GPU: 0 one kept element per thread, 1 one per warp (shuffles combine the lanes)"));
      return space;
    }
    KnobSpace space;
    space.knobs.push_back(parallelKnob(s.kept * s.count, s.kept));
    return space;
  }

  Expected<Stmt> instantiate(ElementBuilder& el, const Config& c, KernelTarget target) const override {
    const ir::Node& node = *el.group().anchor;
    // Dynamic dims, kept or reduced, are run-time extents.
    KILN_ASSIGN(ReduceShape s, shapeOf(node, elementDims));
    KILN_ASSIGN(const ReduceShape largest, shapeOf(node, [&](const ir::Value* v) {
      return dimsAt(v, el.group().dimRanges, DimPoint::Max);
    }));
    KILN_ASSIGN(ExprDims in, el.dims(node.input(0)));
    KILN_ASSIGN(ExprDims outDims, el.dims(node.output(0)));
    KILN_ASSIGN(const ScalarType ct, resultComputeType(node));
    using ir::Op;
    const Op op = node.op();
    const bool arg = isArg(node);
    ExprDims keptDims, redDims;
    for (size_t d = 0; d < s.in.size(); ++d) (s.reduced[d] ? redDims : keptDims).push_back(in[d]);
    const Expr keptE = productOf(keptDims), countE = productOf(redDims);
    const RunCount keptCount(keptE, largest.kept), reducedCount(countE, largest.count);
    int64_t keptValue = 0;
    const bool oneKept = isIntConstant(keptE, &keptValue) && keptValue <= 1;
    const bool dynamicCount = !isIntConstant(countE);
    Var o = makeVar("o"), r = makeVar("r");
    // Several reduced dims of which some are dynamic each get a loop of their
    // own: one flat index would divide by run-time extents per element.
    const bool warp = target == KernelTarget::Gpu && knobIs(c, "warp");
    const bool nested = dynamicCount && redDims.size() > 1 && !warp;
    const std::vector<Var> redVars = makeVars("r", redDims.size());
    Index kept = unflatten(varRef(o), keptDims), red = nested ? indexOf(redVars) : unflatten(varRef(r), redDims);
    Index inIdx;
    size_t ki = 0, ri = 0;
    for (size_t d = 0; d < s.in.size(); ++d) inIdx.push_back(s.reduced[d] ? red[ri++] : kept[ki++]);
    KILN_ASSIGN(Expr x, el.at(node.input(0), inIdx));
    if (arg) {  // ArgMax/ArgMin: the best value and its position along the axis
      Buffer best = makeBuffer("best", x->type, MemoryScope::Local, 1), at = makeBuffer("at", ScalarType::I64, MemoryScope::Local, 1);
      const bool last = node.getInt("select_last_index") != 0;
      Expr bv = load(best, intImm(0));
      BinaryOp cmp = op == Op::ArgMax ? (last ? BinaryOp::Ge : BinaryOp::Gt) : (last ? BinaryOp::Le : BinaryOp::Lt);
      Expr better = binary(BinaryOp::Or, binary(BinaryOp::Eq, varRef(r), intImm(0)), binary(cmp, x, bv));
      Stmt scan = forLoop(r, countE, LoopKind::Serial,
                          ifThen(better, seq({store(best, intImm(0), x), store(at, intImm(0), varRef(r))})));
      Expr result = cast(ct, load(at, intImm(0)));
      el.setSource(node.output(0), [result](const Index&) { return result; });
      KILN_ASSIGN(Stmt epilogue, storeEpilogue(el, unflatten(varRef(o), outDims)));
      Stmt body = allocate(best, allocate(at, seq({store(best, intImm(0), constantOf(x->type, 0)), scan, epilogue})));
      if (target == KernelTarget::Gpu) return threadPerItem(o, keptCount, c.at("threads"), body);
      return forLoop(o, keptE, oneKept ? LoopKind::Serial : outerKind(c), body);
    }

    Buffer acc = makeBuffer("acc", ct, MemoryScope::Local, 1);
    Expr a = load(acc, intImm(0));
    Expr init = constantOf(ct, 0);
    Expr update;
    BinaryOp combine = BinaryOp::Add;  // how two partial results merge
    if (op == Op::ReduceMax) init = extremeOf(ct, false), update = maxOf(a, x), combine = BinaryOp::Max;
    else if (op == Op::ReduceMin) init = extremeOf(ct, true), update = minOf(a, x), combine = BinaryOp::Min;
    else if (op == Op::ReduceProd) init = constantOf(ct, 1), update = a * x, combine = BinaryOp::Mul;
    else if (op == Op::ReduceL1) update = a + unary(UnaryOp::Abs, x);
    else if (op == Op::ReduceL2 || op == Op::ReduceSumSquare) update = a + x * x;
    else if (op == Op::ReduceLogSumExp) update = a + unary(UnaryOp::Exp, x);
    else if (op == Op::ReduceLogSum || op == Op::ReduceSum || op == Op::ReduceMean) update = a + x;
    else return makeError(ErrorCode::CodegenUnsupported, "no reduction formula for ", node.opType());
    Expr result = a;
    if (op == Op::ReduceMean) result = a / (dynamicCount ? cast(ct, countE) : constantOf(ct, double(s.count)));
    if (op == Op::ReduceL2) result = unary(UnaryOp::Sqrt, a);
    if (op == Op::ReduceLogSumExp || op == Op::ReduceLogSum) result = unary(UnaryOp::Log, a);
    el.setSource(node.output(0), [result](const Index&) { return result; });
    KILN_ASSIGN(Stmt epilogue, storeEpilogue(el, unflatten(varRef(o), outDims)));
    Var lane = makeVar("lane");
    Stmt accumulate = store(acc, intImm(0), update);
    if (nested)
      for (size_t d = redDims.size(); d-- > 0;) accumulate = forLoop(redVars[d], redDims[d], LoopKind::Serial, accumulate);
    else
      accumulate = dynamicCount && !warp ? forLoop(r, countE, LoopKind::Serial, accumulate)
                                         : rowLoop(r, lane, reducedCount, warp, accumulate);
    if (warp) {
      accumulate = seq({accumulate, warpAllReduce(acc, 0, combine)});
      epilogue = ifThen(binary(BinaryOp::Eq, varRef(lane), intImm(0)), epilogue);
    }
    Stmt body = allocate(acc, seq({store(acc, intImm(0), init), accumulate, epilogue}));
    if (warp) return warpPerItem(o, lane, keptCount, c.at("threads"), body);
    if (target == KernelTarget::Gpu) return threadPerItem(o, keptCount, c.at("threads"), body);
    return forLoop(o, keptE, oneKept ? LoopKind::Serial : outerKind(c), body);
  }
};

}  // namespace

const ScheduleTemplate& reduceTemplate() {
  static const ReduceTemplate t;
  return t;
}

}  // namespace kiln::codegen
