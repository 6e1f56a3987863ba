//===- lib/passes/LowerNarrowConv.cpp - lower-narrow-conv -------------------===//
//
// Rewrites a Conv with a long window and few output positions (an STFT
// written as a strided 1-D convolution: 512 taps, 5 frames) as an im2col
// Gather and a MatMul:
//   Conv(x [N, C, L..], W [K, C, k..], B)
//     -> Gather(Concat(Reshape(x, [N, C * prod(L)]), 0), I, axis 1)   [N, P, C * prod(k)]
//        MatMul(., W^T [C * prod(k), K]) (+ B)                       [N, P, K]
//        Transpose [0, 2, 1], Reshape                                 [N, K, O..]
// with I [P, C * prod(k)] the constant input position each output
// position's window reads (padding reads the appended zero). The conv
// templates tile output positions, which such a conv has too few of to
// fill; the matmul template tiles K and the reduction instead. Only
// ungrouped f32 convs with constant weights, static shapes, at most 8
// output positions per image and windows of at least 64 taps (CNN kernels,
// 7x7 at most, keep the conv templates). Exact up to the summation order.
//
//===----------------------------------------------------------------------===//
#include <optional>

#include "PatternRewriteDriver.h"
#include "RewriteUtils.h"
#include "kiln/ir/ShapeUtils.h"
#include "kiln/passes/PassRegistry.h"

namespace kiln::passes {
namespace {

constexpr int64_t kMaxOutputPositions = 8;
constexpr int64_t kMinWindowTaps = 64;

struct NarrowConv {
  ir::WindowGeometry window;
  Dims in;  ///< input spatial dims
  int64_t batch = 0, channels = 0, outChannels = 0;
  const Tensor* weight = nullptr;
};

std::optional<NarrowConv> narrowConvOf(const ir::Node& n) {
  if (!isOp(&n, ir::Op::Conv) || n.numInputs() < 2) return std::nullopt;
  const ir::Value* x = n.input(0);
  if (!x->type().isTensor() || !x->tensorType().isStatic() || x->tensorType().rank() < 3 ||
      x->tensorType().dtype() != DType::F32)
    return std::nullopt;
  NarrowConv c;
  c.weight = constantValue(n.input(1));
  if (!c.weight || c.weight->dtype() != DType::F32 || c.weight->rank() != x->tensorType().rank()) return std::nullopt;
  if (n.getInt("group") != 1 || (n.numInputs() > 2 && n.input(2) && !constantValue(n.input(2)))) return std::nullopt;
  const Dims& xd = x->tensorType().dims();
  c.batch = xd[0];
  c.channels = xd[1];
  c.outChannels = c.weight->dim(0);
  c.in.assign(xd.begin() + 2, xd.end());
  Dims kernel(c.weight->dims().begin() + 2, c.weight->dims().end());
  Expected<ir::WindowGeometry> window = ir::computeWindowGeometry(n, c.in, kernel, false);
  if (!window) return std::nullopt;
  c.window = *window;
  const int64_t positions = numElements(c.window.output);
  if (positions < 1 || positions > kMaxOutputPositions || numElements(kernel) < kMinWindowTaps) return std::nullopt;
  return c;
}

/// I [P, C * prod(k)]: for each output position and (channel, tap), the flat input element its window reads,
/// or C * prod(L) (the appended zero) where it reads padding.
Tensor windowIndices(const NarrowConv& c) {
  const ir::WindowGeometry& w = c.window;
  const size_t r = c.in.size();
  const int64_t positions = numElements(w.output), taps = numElements(w.kernel), plane = numElements(c.in);
  Tensor out = Tensor::forWrite(DType::I64, {positions, c.channels * taps});
  int64_t* at = out.mutableData<int64_t>();
  for (int64_t p = 0; p < positions; ++p)
    for (int64_t ch = 0; ch < c.channels; ++ch)
      for (int64_t t = 0; t < taps; ++t) {
        int64_t flat = 0, pRest = p, tRest = t;
        bool inside = true;
        Dims outPos(r), tap(r);
        for (size_t i = r; i-- > 0;) {
          outPos[i] = pRest % w.output[i], pRest /= w.output[i];
          tap[i] = tRest % w.kernel[i], tRest /= w.kernel[i];
        }
        for (size_t i = 0; i < r; ++i) {
          int64_t pos = outPos[i] * w.strides[i] - w.padsBegin[i] + tap[i] * w.dilations[i];
          inside &= pos >= 0 && pos < c.in[i];
          flat = flat * c.in[i] + pos;
        }
        *at++ = inside ? ch * plane + flat : c.channels * plane;
      }
  return out;
}

/// W [K, C, k..] as [C * prod(k), K].
Tensor transposedWeight(const Tensor& w) {
  const int64_t k = w.dim(0), rows = w.numElements() / k;
  Tensor out = Tensor::forWrite(DType::F32, {rows, k});
  for (int64_t o = 0; o < k; ++o)
    for (int64_t i = 0; i < rows; ++i) out.mutableData<float>()[i * k + o] = w.data<float>()[o * rows + i];
  return out;
}

Status lower(ir::Node* n, const NarrowConv& c) {
  NodeBuilder b(n);
  const int64_t plane = c.channels * numElements(c.in);
  KILN_ASSIGN(ir::Value * flat, b.reshape(n->input(0), {c.batch, plane}, "_flat"));
  ir::Value* zero = b.constant(Tensor::zeros(DType::F32, {c.batch, 1}), "_zero");
  KILN_ASSIGN(ir::Value * padded, b.node("Concat", {flat, zero}, {{"axis", int64_t(1)}}, "_with_zero"));
  KILN_ASSIGN(ir::Value * cols,
              b.node("Gather", {padded, b.constant(windowIndices(c), "_window_indices")}, {{"axis", int64_t(1)}}, "_im2col"));
  KILN_ASSIGN(ir::Value * y, b.node("MatMul", {cols, b.constant(transposedWeight(*c.weight), "_weight_t")}, {}, "_matmul"));
  if (n->numInputs() > 2 && n->input(2)) {
    KILN_ASSIGN(y, b.node("Add", {y, n->input(2)}, {}, "_bias"));
  }
  KILN_ASSIGN(ir::Value * channelsFirst, b.node("Transpose", {y}, {{"perm", std::vector<int64_t>{0, 2, 1}}}, "_nkp"));
  std::vector<int64_t> dims = {c.batch, c.outChannels};
  dims.insert(dims.end(), c.window.output.begin(), c.window.output.end());
  KILN_ASSIGN(ir::Value * result, b.reshape(channelsFirst, dims, "_as_conv"));
  return replaceNode(n, result, "lower-narrow-conv");
}

class LowerNarrowConv final : public MatchingPattern<NarrowConv> {
 public:
  std::optional<NarrowConv> match(ir::Node& n) const override { return narrowConvOf(n); }
  Status apply(ir::Node& n, const NarrowConv& c) const override { return lower(&n, c); }
};

}  // namespace

PassInfo lowerNarrowConvPass() {
  PassInfo p;
  p.name = "lower-narrow-conv";
  p.summary = "Rewrite convolutions with few output positions as an im2col Gather and a MatMul";
  p.description =
      "Turns an ungrouped f32 Conv with constant weights, static shapes, at most 8 output positions per image "
      "and a window of at least 64 taps (an STFT as a strided 1-D convolution) into a Gather of "
      "each position's window and a MatMul with the transposed weights, whose template tiles the output channels "
      "and the reduction rather than the few positions. Exact up to the summation order (1e-5).";
  // Audio front ends and the last stages of detectors of any class; a model
  // without such a convolution prunes the pass as not applicable.
  p.classes = {"BL", "RN", "MN", "SSD", "BR"};
  p.tolerance = 1e-5;
  p.optLevel = 2;
  setPatterns(p, {std::make_shared<LowerNarrowConv>()});
  return p;
}

}  // namespace kiln::passes
