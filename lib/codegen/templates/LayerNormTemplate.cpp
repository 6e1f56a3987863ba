//===- lib/codegen/templates/LayerNormTemplate.cpp - LayerNormalization ----===//
//
// LayerNormalization over the dims from `axis` on: per row, the mean, then
// the variance about it (two passes, as the interpreter computes it; on the
// CPU each sum 16 lanes at a time, cpuRowReduce), then
// the store of (x - mean) / sqrt(var + epsilon) * scale + bias through the
// epilogue; the Mean and InvStdDev results, when used, once per row.
//
//   knobs: parallel {0,1}; GPU: threads per block, warp {0,1}: one row per
//   thread, or per warp (lanes take every 32nd element; the sum and the
//   squared deviations are combined across the warp by xor shuffles, and
//   lane 0 stores Mean and InvStdDev)
//
//===----------------------------------------------------------------------===//
#include "Templates.h"
#include "kiln/ir/ShapeUtils.h"

namespace kiln::codegen {
namespace {

class LayerNormTemplate final : public ScheduleTemplate {
 public:
  const char* name() const override { return "layernorm"; }
  bool matches(const KernelGroup& g) const override { return g.role == KernelRole::LayerNorm; }

  Expected<KnobSpace> knobSpace(const KernelGroup& g, KernelTarget target) const override {
    KILN_ASSIGN(Dims x, rowwiseDims(g, target, DimPoint::Opt));
    KILN_ASSIGN(int64_t axis, ir::normalizeAxis(g.anchor->getInt("axis"), int64_t(x.size())));
    return rowwiseKnobSpace(g, target, product(x, size_t(axis)));
  }

  Expected<Stmt> instantiate(ElementBuilder& el, const Config& c, KernelTarget target) const override {
    const ir::Node& node = *el.group().anchor;
    KILN_ASSIGN(Dims x, rowwiseDims(el.group(), target, DimPoint::Max));
    KILN_ASSIGN(const ScalarType ct, resultComputeType(node));
    KILN_ASSIGN(int64_t axis, ir::normalizeAxis(node.getInt("axis"), int64_t(x.size())));
    Dims normDims(x.begin() + axis, x.end());
    if (std::count(normDims.begin(), normDims.end(), ir::kUnknownDim))
      return makeError(ErrorCode::CodegenUnsupported, "layer normalization over a dynamic dim");
    KILN_ASSIGN(ExprDims xE, el.dims(node.input(0)));
    const ExprDims rowDims(xE.begin(), xE.begin() + axis);
    const Expr rowsE = productOf(rowDims);
    const int64_t len = product(normDims);
    KILN_ASSIGN(const Dims xMax, dimsAt(node.input(0), el.group().dimRanges, DimPoint::Max));
    const RunCount rows(rowsE, product(xMax, 0, size_t(axis)));
    const bool warp = target == KernelTarget::Gpu && knobIs(c, "warp");
    Var o = makeVar("o"), j = makeVar("j"), lane = makeVar("lane");
    // The row's element at flat `position` within the normalized dims.
    auto indexAt = [&](const Expr& position) {
      Index i = unflatten(varRef(o), rowDims), within = unflatten(position, normDims);
      i.insert(i.end(), within.begin(), within.end());
      return i;
    };
    auto at = [&](const Expr& position) { return el.at(node.input(0), indexAt(position)); };
    const Index idx = indexAt(varRef(j));
    KILN_ASSIGN(Expr xv, at(varRef(j)));
    auto paramAt = [&](size_t input) -> Expected<Expr> {
      KILN_ASSIGN(Dims d, elementDims(node.input(input)));
      Index pi;
      for (size_t k = 0; k < d.size(); ++k) pi.push_back(d[k] == 1 ? intImm(0) : idx[idx.size() - d.size() + k]);
      return el.at(node.input(input), pi);
    };
    KILN_ASSIGN(Expr scale, paramAt(1));

    Buffer acc = makeBuffer("acc", ct, MemoryScope::Local, 2);  // [mean, variance]
    Expr mean = load(acc, intImm(0)), var = load(acc, intImm(1));
    Expr count = constantOf(ct, double(len));
    Stmt sum = rowLoop(j, lane, len, warp, store(acc, intImm(0), mean + xv));
    Stmt sq = rowLoop(j, lane, len, warp, store(acc, intImm(1), var + (xv - mean) * (xv - mean)));
    if (target == KernelTarget::Cpu) {  // the sums 16 lanes at a time
      auto deviation = [&](const Expr& position) -> Expected<Expr> {
        KILN_ASSIGN(Expr v, at(position));
        return (v - mean) * (v - mean);
      };
      KILN_ASSIGN(sum, cpuRowReduce(acc, 0, BinaryOp::Add, at, len, ct, "rowsum"));
      KILN_ASSIGN(sq, cpuRowReduce(acc, 1, BinaryOp::Add, deviation, len, ct, "rowsq"));
    }
    if (warp) {
      sum = seq({sum, warpAllReduce(acc, 0, BinaryOp::Add)});
      sq = seq({sq, warpAllReduce(acc, 1, BinaryOp::Add)});
    }
    Expr invStd = unary(UnaryOp::Rsqrt, var / count + constantOf(ct, node.getFloat("epsilon")));
    Expr result = (xv - mean) * invStd * scale;
    if (node.numInputs() > 2 && node.hasInput(2)) {
      KILN_ASSIGN(Expr bias, paramAt(2));
      result = result + bias;
    }
    el.setSource(node.output(0), [result](const Index&) { return result; });
    // Mean and InvStdDev (when used) are one value per row: stored at the row index.
    std::vector<const ir::Value*> perRow;
    std::vector<Stmt> rowStores;
    for (size_t r = 1; r < node.numOutputs() && r < 3; ++r) {
      const ir::Value* v = node.output(r);
      if (std::find(el.group().outputs.begin(), el.group().outputs.end(), v) == el.group().outputs.end()) continue;
      KILN_ASSIGN(Buffer b, el.bufferFor(v));
      rowStores.push_back(store(b, varRef(o), cast(computeType(b->type), r == 1 ? mean : invStd)));
      perRow.push_back(v);
    }
    KILN_ASSIGN(Stmt epilogue, storeEpilogue(el, idx, Expr(), perRow));
    std::vector<Stmt> steps{store(acc, intImm(0), constantOf(ct, 0)), store(acc, intImm(1), constantOf(ct, 0)),
                            sum, store(acc, intImm(0), mean / count), sq};
    if (!rowStores.empty())
      steps.push_back(warp ? ifThen(binary(BinaryOp::Eq, varRef(lane), intImm(0)), seq(rowStores)) : seq(rowStores));
    // The CPU's store pass as explicit vectors (LLVM left the unrolled row's divisions by the deviation scalar).
    steps.push_back(target == KernelTarget::Cpu && len >= 16 ? forLoop(j, intImm(len), LoopKind::Vectorized, epilogue)
                                                              : rowLoop(j, lane, len, warp, epilogue));
    Stmt body = allocate(acc, seq(std::move(steps)));
    if (warp) return warpPerItem(o, lane, rows, c.at("threads"), body);
    if (target == KernelTarget::Gpu) return threadPerItem(o, rows, c.at("threads"), body);
    return rowsLoop(o, rowsE, c, body);
  }
};

}  // namespace

const ScheduleTemplate& layerNormTemplate() {
  static const LayerNormTemplate t;
  return t;
}

}  // namespace kiln::codegen
