//===- tests/unit/SymbolicShapesTest.cpp - Inference over symbolic dims ----===//
//
// Symbolic dims in TensorType and their propagation by shape inference:
// the shape arithmetic exporters write (Shape, Gather, Concat, Reshape),
// broadcasts, matmuls, convolutions, slices decided by the dims' ranges, and
// what stays unknown.
//
//===----------------------------------------------------------------------===//
#include <catch2/catch.hpp>

#include "kiln/ir/Module.h"
#include "kiln/ir/Parser.h"
#include "kiln/ir/ShapeInference.h"

using namespace kiln;
using namespace kiln::ir;

namespace {

const DimExpr kB = DimExpr::symbol("b"), kS = DimExpr::symbol("s");

/// Parses `text`, gives input i the dims `inputs[i]` (an empty list keeps
/// the parsed type), and re-infers.
std::unique_ptr<Module> inferWith(const std::string& text, const std::vector<std::vector<DimExpr>>& inputs,
                                  const std::map<std::string, DimRange>& ranges = {}) {
  auto m = parseModule(text, "test.kir");
  INFO((m.isOk() ? std::string() : m.error().str()));
  REQUIRE(m.isOk());
  Graph& g = (*m)->graph();
  for (size_t i = 0; i < inputs.size(); ++i)
    if (!inputs[i].empty()) g.inputs()[i]->setType(TensorType::ofExprs(g.inputs()[i]->tensorType().dtype(), inputs[i]));
  Status s = inferTypes(g, ranges);
  INFO((s.isOk() ? std::string() : s.error().str()));
  REQUIRE(s.isOk());
  return std::move(m).value();
}

std::string outputType(const Module& m, size_t i = 0) { return m.graph().outputs()[i]->type().str(); }

}  // namespace

TEST_CASE("a TensorType dim is a constant, a symbolic expression or unknown", "[ir][symbolic]") {
  TensorType t = TensorType::ofExprs(DType::F32, {kB, DimExpr(3), kS * DimExpr(2) + DimExpr(1)});
  CHECK(t.str() == "f32[b,3,(2*s + 1)]");
  CHECK(t.hasSymbolicDims());
  CHECK_FALSE(t.isStatic());
  CHECK(t.dims() == Dims{kUnknownDim, 3, kUnknownDim});
  CHECK(t.dimExpr(2) == kS * DimExpr(2) + DimExpr(1));
  t.setDimExpr(0, DimExpr(4));  // a constant makes the dim static
  t.setDimExpr(2, DimExpr(-1));  // a negative value is no dim
  CHECK(t.str() == "f32[4,3,?]");
  CHECK_FALSE(t.hasSymbolicDims());
  CHECK_FALSE(t.dimExprs());
  CHECK(t == TensorType(DType::F32, {4, 3, kUnknownDim}));
}

TEST_CASE("shape arithmetic over symbolic dims types an attention block", "[ir][symbolic]") {
  // As transformer exports split heads: Reshape(x, Concat(b, s, 12, 64)),
  // then Transpose, MatMul and a flattening Reshape(-1, 768).
  auto m = inferWith(R"(module @m {
  graph @main(%x: f32[?,?,768], %bias: f32[768]) {
    %xb = Add(%x, %bias) : f32[?,?,768]
    %shape = Shape(%xb) : i64[3]
    %i0 = Constant() {value = tensor<i64[1]: [0]>} : i64[1]
    %i1 = Constant() {value = tensor<i64[1]: [1]>} : i64[1]
    %bdim = Gather(%shape, %i0) : i64[1]
    %sdim = Gather(%shape, %i1) : i64[1]
    %heads = Constant() {value = tensor<i64[2]: [12, 64]>} : i64[2]
    %target = Concat(%bdim, %sdim, %heads) {axis = 0} : i64[4]
    %q = Reshape(%xb, %target) : f32[?,?,?,?]
    %qt = Transpose(%q) {perm = [0, 2, 1, 3]} : f32[?,?,?,?]
    %kt = Transpose(%q) {perm = [0, 2, 3, 1]} : f32[?,?,?,?]
    %scores = MatMul(%qt, %kt) : f32[?,?,?,?]
    %probs = Softmax(%scores) {axis = -1} : f32[?,?,?,?]
    %flat = Constant() {value = tensor<i64[2]: [-1, 768]>} : i64[2]
    %rows = Reshape(%q, %flat) : f32[?,768]
    %n = Size(%xb) : i64[]
    return %probs, %rows, %n
  }
}
)",
                     {{kB, kS, DimExpr(768)}});
  CHECK(outputType(*m, 0) == "f32[b,12,s,s]");
  CHECK(outputType(*m, 1) == "f32[(b*s),768]");
  CHECK(outputType(*m, 2) == "i64[]");
}

TEST_CASE("dim values that are constant become known values", "[ir][symbolic]") {
  // The static dim read through Shape -> Gather fixes ConstantOfShape's result.
  auto m = inferWith(R"(module @m {
  graph @main(%x: f32[?,3]) {
    %shape = Shape(%x) : i64[2]
    %i1 = Constant() {value = tensor<i64[1]: [1]>} : i64[1]
    %c = Gather(%shape, %i1) : i64[1]
    %two = Constant() {value = tensor<i64[1]: [2]>} : i64[1]
    %dims = Concat(%two, %c) {axis = 0} : i64[2]
    %z = ConstantOfShape(%dims) : f32[?,?]
    %sdims = Concat(%shape, %two) {axis = 0} : i64[3]
    %zs = ConstantOfShape(%sdims) : f32[?,?,?]
    return %z, %zs
  }
}
)",
                     {{kS, DimExpr(3)}});
  CHECK(outputType(*m, 0) == "f32[2,3]");
  CHECK(outputType(*m, 1) == "f32[s,3,2]");
}

TEST_CASE("broadcasts, concats and convolutions of symbolic dims", "[ir][symbolic]") {
  auto m = inferWith(R"(module @m {
  graph @main(%x: f32[?,3,?,?], %w: f32[16,3,3,3], %y: f32[?,?], %z: f32[?,?]) {
    %c = Conv(%x, %w) {pads = [1, 1, 1, 1], strides = [2, 2]} : f32[?,16,?,?]
    %p = MaxPool(%x) {kernel_shape = [2, 2], strides = [2, 2]} : f32[?,3,?,?]
    %g = GlobalAveragePool(%c) : f32[?,16,1,1]
    %cat = Concat(%y, %y) {axis = 1} : f32[?,?]
    %bad = Add(%y, %z) : f32[?,?]
    return %c, %p, %g, %cat, %bad
  }
}
)",
                     {{kB, DimExpr(3), kS, kS * DimExpr(2)}, {}, {kB, kS}, {kS, kB}});
  CHECK(outputType(*m, 0) == "f32[b,16,(floordiv(s + 1, 2)),s]");
  CHECK(outputType(*m, 1) == "f32[b,3,(floordiv(s, 2)),s]");
  CHECK(outputType(*m, 2) == "f32[b,16,1,1]");
  CHECK(outputType(*m, 3) == "f32[b,(2*s)]");
  // b against s: nothing proves they agree, so the dims stay unknown.
  CHECK(outputType(*m, 4) == "f32[?,?]");
}

TEST_CASE("slices of symbolic dims are decided by the dims' ranges", "[ir][symbolic]") {
  // BERT's position table sliced to the sequence length: [:, :s].
  const std::string text = R"(module @m {
  graph @main(%x: f32[?,?,8], %pos: f32[1,512,8]) {
    %shape = Shape(%x) : i64[3]
    %i1 = Constant() {value = tensor<i64[1]: [1]>} : i64[1]
    %len = Gather(%shape, %i1) : i64[1]
    %zero = Constant() {value = tensor<i64[1]: [0]>} : i64[1]
    %p = Slice(%pos, %zero, %len, %i1) : f32[1,?,8]
    %e = Add(%x, %p) : f32[?,?,8]
    %tail = Constant() {value = tensor<i64[1]: [2]>} : i64[1]
    %end = Constant() {value = tensor<i64[1]: [9223372036854775807]>} : i64[1]
    %t = Slice(%x, %tail, %end, %i1) : f32[?,?,8]
    return %p, %e, %t
  }
}
)";
  auto ranged = inferWith(text, {{kB, kS, DimExpr(8)}}, {{"b", {1, 4, 8}}, {"s", {4, 128, 512}}});
  CHECK(outputType(*ranged, 0) == "f32[1,s,8]");
  CHECK(outputType(*ranged, 1) == "f32[b,s,8]");
  CHECK(outputType(*ranged, 2) == "f32[b,(s - 2),8]");
  // Without ranges s may exceed 512 or fall below 2: the clamps stay.
  auto open = inferWith(text, {{kB, kS, DimExpr(8)}});
  CHECK(outputType(*open, 0) == "f32[1,(max(0, min(512, s))),8]");
  CHECK(outputType(*open, 2) == "f32[b,(max(0, s - min(2, s))),8]");
}
