//===- lib/codegen/templates/SoftmaxTemplate.cpp - Softmax, LogSoftmax ----===//
//
// Softmax and LogSoftmax along one axis (opset-13 semantics); fast-math's
// kiln::FastSoftmax too (code generation computes Exp and kiln::FastExp
// alike). The outer loop runs over the rows (every index except the axis); each row takes three
// passes: the maximum, the sum of exp(x - max), and the store of
// exp(x - max) / sum (or x - max - log(sum)) through the epilogue. On the
// CPU, rows up to 16384 long keep the second pass's exponentials in a
// local row for the third (one exp per element instead of two; the same
// values, so the same results); rows of at least 2 x 16 elements take
// their maximum 16 lanes at a time (cpuRowReduce; the maximum is exact, so
// the results are the same too), and rows of 16 or more store as vectors.
//
//   knobs: parallel {0,1}; GPU: threads per block, warp {0,1}: one row per
//   thread, or per warp (lanes take every 32nd element; the max and the sum
//   are combined across the warp by xor shuffles)
//
//===----------------------------------------------------------------------===//
#include <limits>

#include "Templates.h"
#include "kiln/ir/ShapeUtils.h"

namespace kiln::codegen {
namespace {

/// The longest row whose exponentials the CPU kernel keeps (on the stack: 64 KiB of f32).
constexpr int64_t kKeptRow = 16384;

class SoftmaxTemplate final : public ScheduleTemplate {
 public:
  const char* name() const override { return "softmax"; }
  bool matches(const KernelGroup& g) const override { return g.role == KernelRole::Softmax; }

  Expected<KnobSpace> knobSpace(const KernelGroup& g, KernelTarget target) const override {
    KILN_ASSIGN(Dims x, rowwiseDims(g, target, DimPoint::Opt));
    if (x.empty()) return makeError(ErrorCode::CodegenUnsupported, "softmax of a scalar");
    KILN_ASSIGN(int64_t axis, ir::normalizeAxis(g.anchor->getInt("axis"), int64_t(x.size())));
    return rowwiseKnobSpace(g, target, x[size_t(axis)]);
  }

  Expected<Stmt> instantiate(ElementBuilder& el, const Config& c, KernelTarget target) const override {
    const ir::Node& node = *el.group().anchor;
    KILN_ASSIGN(Dims x, rowwiseDims(el.group(), target, DimPoint::Max));
    KILN_ASSIGN(const ScalarType ct, resultComputeType(node));
    if (x.empty()) return makeError(ErrorCode::CodegenUnsupported, "softmax of a scalar");
    KILN_ASSIGN(int64_t axis, ir::normalizeAxis(node.getInt("axis"), int64_t(x.size())));
    const bool warp = target == KernelTarget::Gpu && knobIs(c, "warp");
    Var o = makeVar("o"), j = makeVar("j"), lane = makeVar("lane");
    // A row along a dynamic dim runs plain passes over its run-time length (a warp's lanes striding over it on the GPU).
    const bool dynamicRow = x[size_t(axis)] < 0;
    KILN_ASSIGN(Dims xMax, dimsAt(node.input(0), el.group().dimRanges, DimPoint::Max));
    const int64_t len = xMax[size_t(axis)];
    KILN_ASSIGN(ExprDims xE, el.dims(node.input(0)));
    auto rowPass = [&](Stmt body) { return rowLoop(j, lane, RunCount(xE[size_t(axis)], len), warp, std::move(body)); };
    ExprDims rowDims;
    for (size_t d = 0; d < x.size(); ++d)
      if (int64_t(d) != axis) rowDims.push_back(xE[d]);
    const Expr rowsE = productOf(rowDims);
    const RunCount rows(rowsE, product(xMax) / std::max<int64_t>(len, 1));
    Index row = unflatten(varRef(o), rowDims);
    // The row's element at `position` along the axis (the index stores go to, and the value read there).
    auto indexAt = [&](const Expr& position) {
      Index i = row;
      i.insert(i.begin() + axis, position);
      return i;
    };
    auto at = [&](const Expr& position) { return el.at(node.input(0), indexAt(position)); };
    const Index idx = indexAt(varRef(j));
    KILN_ASSIGN(Expr xv, at(varRef(j)));

    Buffer acc = makeBuffer("acc", ct, MemoryScope::Local, 2);  // [max, sum]
    Expr mx = load(acc, intImm(0)), sum = load(acc, intImm(1));
    Stmt findMax = rowPass(store(acc, intImm(0), maxOf(mx, xv)));
    if (target == KernelTarget::Cpu && !dynamicRow) {
      KILN_ASSIGN(findMax, cpuRowReduce(acc, 0, BinaryOp::Max, at, len, ct, "rowmax"));
    }
    // On the CPU a Softmax row's exponentials are kept from the sum's pass for the store's (one exp per element,
    // not two: the exp is most of the kernel's work); the row lives on the stack, so only rows up to kKeptRow.
    const bool keepExp = target == KernelTarget::Cpu && node.op() != ir::Op::LogSoftmax && len <= kKeptRow;
    Buffer exps = makeBuffer("exps", ct, MemoryScope::Local, keepExp ? len : 1);
    Expr e = unary(UnaryOp::Exp, xv - mx);
    Stmt addExp = rowPass(keepExp ? seq({store(exps, varRef(j), e), store(acc, intImm(1), sum + e)})
                                  : store(acc, intImm(1), sum + e));
    if (warp) {
      findMax = seq({findMax, warpAllReduce(acc, 0, BinaryOp::Max)});
      addExp = seq({addExp, warpAllReduce(acc, 1, BinaryOp::Add)});
    }
    Expr result = node.op() == ir::Op::LogSoftmax ? xv - mx - unary(UnaryOp::Log, sum)
                  : keepExp                     ? load(exps, varRef(j)) / sum
                                                : e / sum;
    el.setSource(node.output(0), [result](const Index&) { return result; });
    KILN_ASSIGN(Stmt epilogue, storeEpilogue(el, idx));
    // The CPU's store pass as explicit vectors (LLVM left an unrolled row's divisions scalar).
    Stmt write = target == KernelTarget::Cpu && len >= 16 && !dynamicRow
                     ? forLoop(j, intImm(len), LoopKind::Vectorized, epilogue)
                     : rowPass(epilogue);
    Stmt body = allocate(acc, seq({store(acc, intImm(0), constantOf(ct, -std::numeric_limits<double>::infinity())),
                                   store(acc, intImm(1), constantOf(ct, 0)), findMax, addExp, write}));
    if (keepExp) body = allocate(exps, body);
    if (warp) return warpPerItem(o, lane, rows, c.at("threads"), body);
    if (target == KernelTarget::Gpu) return threadPerItem(o, rows, c.at("threads"), body);
    return rowsLoop(o, rowsE, c, body);
  }
};

}  // namespace

const ScheduleTemplate& softmaxTemplate() {
  static const SoftmaxTemplate t;
  return t;
}

}  // namespace kiln::codegen
