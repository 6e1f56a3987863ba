//===- lib/ir/ops/LinearAlgebraOps.cpp - Gemm, MatMul, Einsum, Det ---------===//
//
// Matrix products (float, integer and quantized), Einsum and determinants.
//
//===----------------------------------------------------------------------===//
#include "InferHelpers.h"
#include "OpFamilies.h"

namespace kiln::ir {
using namespace infer;

namespace {

Status matmulInto(InferenceContext& ctx, size_t a, size_t b, DType out) {
  KILN_ASSIGN(TensorType ta, ctx.inputTensor(a));
  KILN_ASSIGN(TensorType tb, ctx.inputTensor(b));
  if (!ta.hasRank() || !tb.hasRank()) {
    setUnranked(ctx, 0, out);
    return Status::ok();
  }
  KILN_ASSIGN(Dims dims, matmulDims(ta.dims(), tb.dims()));
  setOut(ctx, 0, out, dims);
  return Status::ok();
}

Status inferMatMul(InferenceContext& ctx) {
  KILN_TRY(requireSameDType(ctx, {0, 1}));
  KILN_ASSIGN(TensorType a, ctx.inputTensor(0));
  return matmulInto(ctx, 0, 1, a.dtype());
}
Status inferMatMulInteger(InferenceContext& ctx) { return matmulInto(ctx, 0, 1, DType::I32); }
Status inferQLinearMatMul(InferenceContext& ctx) {
  KILN_ASSIGN(TensorType yZero, ctx.inputTensor(7));
  return matmulInto(ctx, 0, 3, yZero.dtype());
}

Status inferGemm(InferenceContext& ctx) {
  KILN_TRY(requireSameDType(ctx, {0, 1, 2}));
  KILN_ASSIGN(TensorType a, ctx.inputTensor(0));
  KILN_ASSIGN(TensorType b, ctx.inputTensor(1));
  KILN_TRY(requireRank(a, 2, "A"));
  KILN_TRY(requireRank(b, 2, "B"));
  if (!a.hasRank() || !b.hasRank()) {
    setOut(ctx, 0, a.dtype(), {kUnknownDim, kUnknownDim});
    return Status::ok();
  }
  bool ta = ctx.node().getInt("transA") != 0, tb = ctx.node().getInt("transB") != 0;
  int64_t m = ta ? a.dim(1) : a.dim(0), k1 = ta ? a.dim(0) : a.dim(1);
  int64_t k2 = tb ? b.dim(1) : b.dim(0), n = tb ? b.dim(0) : b.dim(1);
  if (k1 >= 0 && k2 >= 0 && k1 != k2)
    return shapeError("inner dims differ: A " + a.str() + (ta ? " (transposed)" : "") + ", B " + b.str() +
                      (tb ? " (transposed)" : ""));
  if (ctx.hasInput(2)) {
    KILN_ASSIGN(TensorType c, ctx.inputTensor(2));
    if (c.hasRank()) {
      KILN_ASSIGN(Dims bc, broadcastDims({m, n}, c.dims()));
      if (bc.size() != 2 || (m >= 0 && bc[0] != m) || (n >= 0 && bc[1] != n))
        return shapeError("C " + c.str() + " does not broadcast to [" + std::to_string(m) + "," + std::to_string(n) + "]");
    }
  }
  setOut(ctx, 0, a.dtype(), {m, n});
  return Status::ok();
}

Status inferEinsum(InferenceContext& ctx) {
  std::vector<int64_t> ranks;
  std::vector<Dims> dims;
  DType dtype = DType::Undefined;
  for (size_t i = 0; i < ctx.numInputs(); ++i) {
    KILN_ASSIGN(TensorType t, ctx.inputTensor(i));
    if (i == 0) dtype = t.dtype();
    else if (t.dtype() != dtype) return shapeError("einsum operands must share one element type");
    if (!t.hasRank()) {
      setUnranked(ctx, 0, dtype);
      return Status::ok();
    }
    ranks.push_back(t.rank());
    dims.push_back(t.dims());
  }
  KILN_ASSIGN(EinsumSpec spec, parseEinsum(ctx.node().getString("equation"), ranks));
  KILN_ASSIGN(Dims out, einsumDims(spec, dims));
  setOut(ctx, 0, dtype, out);
  return Status::ok();
}

Status inferDet(InferenceContext& ctx) {
  KILN_ASSIGN(TensorType x, ctx.inputTensor(0));
  if (!x.hasRank()) {
    setUnranked(ctx, 0, x.dtype());
    return Status::ok();
  }
  if (x.rank() < 2 || (x.dim(x.rank() - 1) >= 0 && x.dim(x.rank() - 2) >= 0 && x.dim(x.rank() - 1) != x.dim(x.rank() - 2)))
    return shapeError("Det needs square matrices [..., M, M], got " + x.str());
  setOut(ctx, 0, x.dtype(), Dims(x.dims().begin(), x.dims().end() - 2));
  return Status::ok();
}

}  // namespace

void registerLinearAlgebraOps(OpRegistry& r) {
  r.add(SchemaBuilder("MatMul").inputs(2, 2, {"A", "B"}).outputs(1, 1, {"Y"})
            .pattern(FusionPattern::OutEWiseFusable).infer(inferMatMul)
            .doc("Matrix product with numpy semantics (batch dims broadcast).").build());
  r.add(SchemaBuilder("Gemm").inputs(2, 3, {"A", "B", "C"}).outputs(1, 1, {"Y"})
            .attr("alpha", 1.0f).attr("beta", 1.0f).attr("transA", 0).attr("transB", 0)
            .pattern(FusionPattern::OutEWiseFusable).infer(inferGemm)
            .doc("alpha * op(A) @ op(B) + beta * C for 2-D A and B.").build());
  r.add(SchemaBuilder("MatMulInteger").inputs(2, 4, {"A", "B", "a_zero_point", "b_zero_point"})
            .outputs(1, 1, {"Y"}).pattern(FusionPattern::OutEWiseFusable).infer(inferMatMulInteger)
            .doc("Integer matrix product with zero points, accumulating in int32.").build());
  r.add(SchemaBuilder("QLinearMatMul")
            .inputs(8, 8, {"a", "a_scale", "a_zero_point", "b", "b_scale", "b_zero_point", "y_scale", "y_zero_point"})
            .outputs(1, 1, {"y"}).pattern(FusionPattern::OutEWiseFusable).infer(inferQLinearMatMul)
            .doc("Quantized matrix product, requantized to the output scale and zero point.").build());
  r.add(SchemaBuilder("Einsum").inputs(1, INT_MAX, {"Inputs"}).outputs(1, 1, {"Output"})
            .requiredAttr("equation", AttrKind::String).pattern(FusionPattern::Opaque).infer(inferEinsum)
            .doc("Einstein summation over the operands as given by the equation.").build());
  r.add(SchemaBuilder("Det").inputs(1, 1, {"X"}).outputs(1, 1, {"Y"}).pattern(FusionPattern::Opaque)
            .infer(inferDet).doc("Determinant of each square matrix in the last two dims.").build());
}

}  // namespace kiln::ir
