//===- lib/codegen/templates/SoftmaxTemplate.cpp - Softmax, LogSoftmax ----===//
//
// Softmax and LogSoftmax along one axis (opset-13 semantics). The outer loop
// runs over the rows (every index except the axis); each row takes three
// passes: the maximum, the sum of exp(x - max), and the store of
// exp(x - max) / sum (or x - max - log(sum)) through the epilogue.
//
//   knobs: parallel {0,1}; GPU: one row per thread, threads per block
//
//===----------------------------------------------------------------------===//
#include <limits>

#include "Templates.h"
#include "kiln/ir/ShapeUtils.h"

namespace kiln::codegen {
namespace {

class SoftmaxTemplate final : public ScheduleTemplate {
 public:
  const char* name() const override { return "softmax"; }
  bool matches(const KernelGroup& g) const override { return g.role == KernelRole::Softmax; }

  Expected<KnobSpace> knobSpace(const KernelGroup& g, KernelTarget target) const override {
    return rowwiseKnobSpace(g, target);
  }

  Expected<Stmt> instantiate(ElementBuilder& el, const Config& c, KernelTarget target) const override {
    const ir::Node& node = *el.group().anchor;
    KILN_ASSIGN(Dims x, staticDims(node.input(0)));
    KILN_ASSIGN(const ScalarType ct, resultComputeType(node));
    if (x.empty()) return makeError(ErrorCode::CodegenUnsupported, "softmax of a scalar");
    KILN_ASSIGN(int64_t axis, ir::normalizeAxis(node.getInt("axis"), int64_t(x.size())));
    Dims rowDims;
    for (size_t d = 0; d < x.size(); ++d)
      if (int64_t(d) != axis) rowDims.push_back(x[d]);
    const int64_t len = x[size_t(axis)], rows = product(rowDims);
    Var o = makeVar("o"), j = makeVar("j");
    Index row = unflatten(varRef(o), rowDims);
    Index idx = row;
    idx.insert(idx.begin() + axis, varRef(j));
    KILN_ASSIGN(Expr xv, el.at(node.input(0), idx));

    Buffer acc = makeBuffer("acc", ct, MemoryScope::Local, 2);  // [max, sum]
    Expr mx = load(acc, intImm(0)), sum = load(acc, intImm(1));
    Stmt findMax = forLoop(j, intImm(len), LoopKind::Serial, store(acc, intImm(0), maxOf(mx, xv)));
    Stmt addExp = forLoop(j, intImm(len), LoopKind::Serial, store(acc, intImm(1), sum + unary(UnaryOp::Exp, xv - mx)));
    Expr result = node.opType() == "LogSoftmax" ? xv - mx - unary(UnaryOp::Log, sum)
                                                : unary(UnaryOp::Exp, xv - mx) / sum;
    el.setSource(node.output(0), [result](const Index&) { return result; });
    KILN_ASSIGN(Stmt epilogue, storeEpilogue(el, idx));
    Stmt write = forLoop(j, intImm(len), LoopKind::Serial, epilogue);
    Stmt body = allocate(acc, seq({store(acc, intImm(0), constantOf(ct, -std::numeric_limits<double>::infinity())),
                                   store(acc, intImm(1), constantOf(ct, 0)), findMax, addExp, write}));
    if (target == KernelTarget::Gpu) return threadPerItem(o, rows, c.at("threads"), body);
    return forLoop(o, intImm(rows), rows > 1 ? outerKind(c) : LoopKind::Serial, body);
  }
};

}  // namespace

const ScheduleTemplate& softmaxTemplate() {
  static const SoftmaxTemplate t;
  return t;
}

}  // namespace kiln::codegen
