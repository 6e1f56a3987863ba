//===- lib/frontend/onnx/WindowOpExpansions.cpp - Window ops as convolutions -===//
//
// Newer window ops that opset 17 spells as convolutions, so that they reach
// the conv templates and lower-conv-transpose like any other:
//   Col2Im(x, image, block)   = ConvTranspose(reshape(x, [N, C*K, L...]), W)
//                               with group C and W[c*K + k, 0, k'] = (k == k'):
//                               each block position adds its column back into
//                               the image, which is what a transposed conv does
//   AveragePool with dilations = Conv(x, 1/K) with group C, times K over the
//                               taps counted where some are not (pads with
//                               count_include_pad=0, ceil_mode's extra end);
//                               auto_pad SAME becomes explicit pads
//
//===----------------------------------------------------------------------===//
#include <algorithm>

#include "NewerOpsetForms.h"

namespace kiln::onnx {
namespace {

/// Bounds window attributes and lengths so that their arithmetic cannot overflow.
constexpr int64_t kMaxWindowValue = int64_t(1) << 31;

/// The window attributes that Col2Im and AveragePool share, checked against
/// `spatial` axes: strides and dilations positive, pads non-negative.
struct Window {
  std::vector<int64_t> kernel, strides, dilations, pads;
  size_t spatial() const { return kernel.size(); }
  /// Positions of the window along axis `a` of length `len`.
  int64_t positions(size_t a, int64_t len) const {
    int64_t span = len + pads[a] + pads[a + spatial()] - dilations[a] * (kernel[a] - 1) - 1;
    return span < 0 ? 0 : span / strides[a] + 1;
  }
};

Expected<Window> windowOf(const NodeDraft& d, std::vector<int64_t> kernel) {
  Window w{std::move(kernel), {}, {}, {}};
  size_t n = w.spatial();
  KILN_ASSIGN(w.strides, intsOr(d, "strides", n, 1));
  KILN_ASSIGN(w.dilations, intsOr(d, "dilations", n, 1));
  KILN_ASSIGN(w.pads, intsOr(d, "pads", 2 * n, 0));
  if (n == 0 || w.strides.size() != n || w.dilations.size() != n || w.pads.size() != 2 * n)
    return Error(ErrorCode::BadAttribute, d.opType + ": strides, dilations and pads must match the window's " +
                                              std::to_string(n) + " axes");
  auto fits = [](int64_t v, int64_t lo) { return v >= lo && v <= kMaxWindowValue; };
  for (size_t a = 0; a < n; ++a)
    if (!fits(w.kernel[a], 1) || !fits(w.strides[a], 1) || !fits(w.dilations[a], 1) || !fits(w.pads[a], 0) ||
        !fits(w.pads[a + n], 0))
      return Error(ErrorCode::BadAttribute, d.opType + ": window sizes, strides and dilations must be positive "
                                                       "and pads non-negative (all below 2^31)");
  return w;
}

/// The attributes of a convolution over window `w` with `group` groups.
std::vector<std::pair<std::string, ir::Attribute>> convAttrs(const Window& w, int64_t group) {
  return {{"kernel_shape", ir::Attribute(w.kernel)}, {"strides", ir::Attribute(w.strides)},
          {"dilations", ir::Attribute(w.dilations)}, {"pads", ir::Attribute(w.pads)},
          {"group", ir::Attribute(group)}};
}

/// window / (taps counted) at each output position of a pool over input dims
/// `x` [N, C, ...]: [1, 1, out...], a product of per-axis factors. A tap along
/// axis a counts when it lies in [-countedPads[a], len + countedPads[a + n]).
Expected<Tensor> paddingRatio(const Window& w, const Dims& x, const std::vector<int64_t>& countedPads) {
  size_t n = w.spatial();
  std::vector<std::vector<float>> factors(n);
  Dims outDims = {1, 1};
  for (size_t a = 0; a < n; ++a) {
    int64_t len = x[a + 2];
    if (len > kMaxWindowValue) return Error(ErrorCode::ShapeMismatch, "AveragePool: a spatial dim above 2^31");
    outDims.push_back(w.positions(a, len));
    KILN_TRY(boundedProduct({outDims.back(), w.kernel[a]}, kMaxBuiltConstantElements,
                            "AveragePool: the output length times the window").status());
    for (int64_t o = 0; o < outDims.back(); ++o) {
      int64_t counted = 0;
      for (int64_t j = 0; j < w.kernel[a]; ++j) {
        int64_t at = o * w.strides[a] - w.pads[a] + j * w.dilations[a];
        counted += at >= -countedPads[a] && at < len + countedPads[a + n];
      }
      factors[a].push_back(float(w.kernel[a]) / float(std::max<int64_t>(counted, 1)));
    }
  }
  KILN_TRY(boundedProduct(Dims(outDims.begin() + 2, outDims.end()), kMaxBuiltConstantElements,
                          "AveragePool: the output size").status());
  std::vector<float> ratio = {1.0f};
  for (const std::vector<float>& f : factors) {
    std::vector<float> next;
    next.reserve(ratio.size() * f.size());
    for (float r : ratio)
      for (float v : f) next.push_back(r * v);
    ratio = std::move(next);
  }
  return Tensor::fromVector<float>(outDims, ratio);
}

/// auto_pad SAME_UPPER / SAME_LOWER as explicit pads, the odd one at the end
/// (UPPER) or the beginning (LOWER). The total pads ceil(len / stride) windows
/// of the undilated kernel: ONNX's reference implementation and ONNX Runtime
/// both leave dilations out of it, so a dilated pool's output is shorter.
void samePads(Window& w, const Dims& x, bool upper) {
  size_t n = w.spatial();
  for (size_t a = 0; a < n; ++a) {
    const int64_t len = x[a + 2], out = (len + w.strides[a] - 1) / w.strides[a];
    const int64_t total = std::max<int64_t>(0, (out - 1) * w.strides[a] + w.kernel[a] - len);
    w.pads[a] = upper ? total / 2 : total - total / 2;
    w.pads[a + n] = total - w.pads[a];
  }
}

/// ceil_mode=1 as extra end padding of the dilated window (not counted in the average).
void ceilAsPadding(Window& w, const Dims& x) {
  size_t n = w.spatial();
  for (size_t a = 0; a < n; ++a)
    w.pads[a + n] += ceilModeExtraPad(x[a + 2], w.pads[a], w.pads[a + n], (w.kernel[a] - 1) * w.dilations[a] + 1,
                                      w.strides[a]);
}

}  // namespace

int64_t ceilModeExtraPad(int64_t len, int64_t padBegin, int64_t padEnd, int64_t extent, int64_t stride) {
  const int64_t span = len + padBegin + padEnd - extent;
  if (span < 0) return 0;
  int64_t out = (span + stride - 1) / stride + 1;
  if ((out - 1) * stride >= len + padBegin) --out;
  return std::max<int64_t>(0, (out - 1) * stride + extent - (len + padBegin + padEnd));
}

Status expandCol2Im(NodeDraft& d, DraftBuilder& b) {
  KILN_TRY(requireInputs(d, 3));
  KILN_ASSIGN(std::vector<int64_t> image, knownInputInts(d, 1, b, "image_shape"));
  KILN_ASSIGN(std::vector<int64_t> block, knownInputInts(d, 2, b, "block_shape"));
  if (image.size() != block.size())
    return Error(ErrorCode::ShapeMismatch, "Col2Im: image_shape and block_shape differ in length");
  KILN_ASSIGN(Window w, windowOf(d, block));
  KILN_ASSIGN(Dims x, staticInputDims(d, 0, "for Col2Im"));
  KILN_ASSIGN(DType dt, inputDType(d, 0));
  size_t n = w.spatial();
  if (x.size() != 3) return Error(ErrorCode::ShapeMismatch, "Col2Im: the input must be [N, C * block size, L]");
  KILN_ASSIGN(int64_t k, boundedProduct(block, std::max<int64_t>(x[1], 1), "Col2Im: the block size"));
  if (x[1] % k != 0)
    return Error(ErrorCode::ShapeMismatch, "Col2Im: the input must be [N, C * " + std::to_string(k) + ", L]");
  KILN_TRY(boundedProduct({x[1], k}, kMaxBuiltConstantElements, "Col2Im: channels times the block size").status());
  std::vector<int64_t> blocks(n), outPad(n);
  for (size_t a = 0; a < n; ++a) {
    if (image[a] < 1 || image[a] > kMaxWindowValue)
      return Error(ErrorCode::ShapeMismatch, "Col2Im: image_shape holds a dim below 1 or above 2^31");
    blocks[a] = w.positions(a, image[a]);
    if (blocks[a] < 1 || blocks[a] > x[2])
      return Error(ErrorCode::ShapeMismatch, "Col2Im: the blocks do not fit the image along axis " + std::to_string(a));
    // What the transposed conv's output lacks of the image (the floor's remainder, below the stride).
    outPad[a] = image[a] - ((blocks[a] - 1) * w.strides[a] + (block[a] - 1) * w.dilations[a] + 1 - w.pads[a] -
                            w.pads[a + n]);
  }
  auto held = boundedProduct(blocks, std::max<int64_t>(x[2], 1), "Col2Im: the image's blocks");
  if (!held || *held != x[2])
    return Error(ErrorCode::ShapeMismatch, "Col2Im: the input has " + std::to_string(x[2]) +
                                               " blocks, which the image does not hold");
  int64_t channels = x[1] / k;
  Dims wDims = {channels * k, 1};
  wDims.insert(wDims.end(), block.begin(), block.end());
  std::vector<float> oneHot(size_t(channels * k * k), 0.0f);
  for (int64_t c = 0; c < channels * k; ++c) oneHot[size_t(c * k + c % k)] = 1.0f;
  KILN_ASSIGN(ir::Value* weights, b.constant(Tensor::fromVector<float>(wDims, oneHot).castTo(dt)));
  std::vector<int64_t> shape = {0, channels * k};
  shape.insert(shape.end(), blocks.begin(), blocks.end());
  KILN_ASSIGN(ir::Value* s, int64Constant(b, shape));
  KILN_ASSIGN(ir::Value* columns, b.node("Reshape", {d.inputs[0], s}, {}));
  auto attrs = convAttrs(w, channels);
  attrs.emplace_back("output_padding", ir::Attribute(outPad));
  becomeNode(d, "ConvTranspose", {columns, weights}, std::move(attrs));
  return Status::ok();
}

Status expandDilatedAveragePool(NodeDraft& d, DraftBuilder& b) {
  KILN_ASSIGN(auto autoPad, d.takeAs("auto_pad", ir::AttrKind::String));
  const std::string mode = autoPad ? autoPad->s() : "NOTSET";
  if (mode != "NOTSET" && mode != "VALID" && mode != "SAME_UPPER" && mode != "SAME_LOWER")
    return Error(ErrorCode::BadAttribute, "AveragePool: auto_pad '" + mode + "' is not NOTSET, VALID, SAME_UPPER or SAME_LOWER");
  KILN_ASSIGN(int64_t ceil, d.takeInt("ceil_mode", 0));
  KILN_ASSIGN(int64_t countPad, d.takeInt("count_include_pad", 0));
  KILN_ASSIGN(const ir::Attribute* kernel, d.attrAs("kernel_shape", ir::AttrKind::Ints));
  if (!kernel) return Error(ErrorCode::BadAttribute, "AveragePool needs kernel_shape");
  KILN_ASSIGN(Window w, windowOf(d, kernel->ints()));
  KILN_ASSIGN(Dims x, staticInputDims(d, 0, "for AveragePool with dilations"));
  KILN_ASSIGN(DType dt, inputDType(d, 0));
  size_t n = w.spatial();
  if (x.size() != n + 2) return Error(ErrorCode::ShapeMismatch, "AveragePool: kernel_shape must have one entry per spatial axis");
  if (mode == "VALID") std::fill(w.pads.begin(), w.pads.end(), 0);
  if (mode == "SAME_UPPER" || mode == "SAME_LOWER") samePads(w, x, mode == "SAME_UPPER");
  // count_include_pad counts the model's pads, never the ones ceil_mode adds.
  const std::vector<int64_t> counted = countPad ? w.pads : std::vector<int64_t>(2 * n, 0);
  if (ceil && (mode == "NOTSET" || mode == "VALID")) ceilAsPadding(w, x);
  KILN_ASSIGN(int64_t k, boundedProduct(w.kernel, kMaxBuiltConstantElements, "AveragePool: the window size"));
  KILN_TRY(boundedProduct({x[1], k}, kMaxBuiltConstantElements, "AveragePool: channels times the window size").status());
  Dims wDims = {x[1], 1};
  wDims.insert(wDims.end(), w.kernel.begin(), w.kernel.end());
  Tensor mean = Tensor::fromVector<float>(wDims, std::vector<float>(size_t(x[1] * k), 1.0f / float(k)));
  KILN_ASSIGN(ir::Value* weights, b.constant(mean.castTo(dt)));
  if (counted == w.pads) {  // every tap of every window counts
    becomeNode(d, "Conv", {d.inputs[0], weights}, convAttrs(w, x[1]));
    return Status::ok();
  }
  KILN_ASSIGN(Tensor ratio, paddingRatio(w, x, counted));
  KILN_ASSIGN(ir::Value* conv, b.node("Conv", {d.inputs[0], weights}, convAttrs(w, x[1])));
  KILN_ASSIGN(ir::Value* scale, b.constant(ratio.castTo(dt)));
  becomeNode(d, "Mul", {conv, scale}, {});
  return Status::ok();
}

}  // namespace kiln::onnx
