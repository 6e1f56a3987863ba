//===- lib/passes/WeightFolding.cpp - Per-channel affine maps into weights ---===//
//
// See WeightFolding.h.
//
//===----------------------------------------------------------------------===//
#include "WeightFolding.h"

#include <cmath>

#include "RewriteUtils.h"

namespace kiln::passes {
namespace {

bool isF32Constant(const ir::Value* v) {
  const Tensor* t = constantValue(v);
  return t && t->dtype() == DType::F32;
}

/// Index of the weight operand and whether channels are its first axis.
struct WeightLayout {
  size_t weightOperand = 1;
  bool channelsFirst = true;  ///< Conv W[C,...], Gemm transB and kiln::Dense W[N,K]; else W[K,N]
  int biasOperand = -1;       ///< -1: the op has no bias operand
};

std::optional<WeightLayout> layoutOf(const ir::Node& n) {
  if (isOp(&n, ir::Op::Conv)) return WeightLayout{1, true, 2};
  if (isOp(&n, ir::Op::Gemm) && n.getInt("transA") == 0) return WeightLayout{1, n.getInt("transB") != 0, 2};
  if (isOp(&n, ir::Op::MatMul) && n.input(1)->type().isTensor() && n.input(1)->tensorType().rank() == 2)
    return WeightLayout{1, false, -1};
  if (n.op() == ir::Op::KilnDense) return WeightLayout{1, true, -1};
  return std::nullopt;
}

}  // namespace

std::optional<int64_t> foldableOutputChannels(const ir::Node& node, bool needBias) {
  auto layout = layoutOf(node);
  if (!layout || !isF32Constant(node.input(layout->weightOperand))) return std::nullopt;
  if (needBias && layout->biasOperand < 0) return std::nullopt;
  if (isOp(&node, ir::Op::Gemm) && node.hasInput(2) && node.getFloat("beta") == 0) return std::nullopt;
  const Tensor& w = *constantValue(node.input(layout->weightOperand));
  int64_t channels = layout->channelsFirst ? w.dim(0) : w.dim(w.rank() - 1);
  if (layout->biasOperand >= 0 && node.hasInput(size_t(layout->biasOperand))) {
    const ir::Value* b = node.input(size_t(layout->biasOperand));
    if (!isF32Constant(b) || constantValue(b)->numElements() != channels) return std::nullopt;
  }
  return channels;
}

Expected<ir::Value*> foldAffineIntoWeights(ir::Node& node, const std::vector<double>& scale,
                                           const std::vector<double>& shift) {
  WeightLayout layout = *layoutOf(node);
  ir::Graph& g = *node.graph();
  const Tensor& w = *constantValue(node.input(layout.weightOperand));
  int64_t channels = int64_t(scale.size());
  Tensor w2 = Tensor::forWrite(DType::F32, w.dims());
  const float* src = w.data<float>();
  float* dst = w2.mutableData<float>();
  // W[C, inner] (channels first) or W[outer, C] (channels last): no division per element.
  int64_t inner = layout.channelsFirst ? w.numElements() / channels : channels;
  int64_t outer = w.numElements() / inner;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t k = 0; k < inner; ++k) {
      double s = scale[size_t(layout.channelsFirst ? o : k)];
      dst[o * inner + k] = float(double(src[o * inner + k]) * s);
    }
  std::vector<ir::Value*> operands = node.inputs();
  operands[layout.weightOperand] = makeConstant(g, std::move(w2), foldedName(node.input(layout.weightOperand)->name()),
                                                &node);
  if (auto bias = foldedBias(node, scale, shift)) {
    const size_t at = size_t(layout.biasOperand);
    if (operands.size() <= at) operands.resize(at + 1, nullptr);
    operands[at] = makeConstant(g, std::move(bias->first), bias->second, &node);
  }
  std::vector<std::pair<std::string, ir::Attribute>> attrs = node.attributes();
  KILN_ASSIGN(ir::Node * folded, createTypedNode(g, node.qualifiedOpType(), operands, attrs, node.name(), &node));
  return folded->output(0);
}

std::optional<std::pair<Tensor, std::string>> foldedBias(const ir::Node& node, const std::vector<double>& scale,
                                                         const std::vector<double>& shift) {
  const WeightLayout layout = *layoutOf(node);
  bool hasShift = false;
  for (double s : shift) hasShift |= s != 0;
  const bool hasBias = layout.biasOperand >= 0 && node.hasInput(size_t(layout.biasOperand));
  if (!hasBias && !hasShift) return std::nullopt;
  KILN_CHECK(layout.biasOperand >= 0, "foldedBias: shift on an op without bias");
  const double beta = isOp(&node, ir::Op::Gemm) && hasBias ? node.getFloat("beta") : 1.0;
  std::vector<float> bias(scale.size());
  const float* b = hasBias ? constantValue(node.input(size_t(layout.biasOperand)))->data<float>() : nullptr;
  // Gemm adds beta*C: C' = C*scale + shift/beta keeps beta as it is.
  for (size_t c = 0; c < bias.size(); ++c) bias[c] = float((b ? double(b[c]) : 0.0) * scale[c] + shift[c] / beta);
  std::string name = hasBias ? foldedName(node.input(size_t(layout.biasOperand))->name()) : nameBase(node) + "_bias";
  return std::make_pair(Tensor::fromVector<float>({int64_t(bias.size())}, bias), std::move(name));
}

std::optional<std::pair<std::vector<double>, std::vector<double>>> inferenceBatchNormAffine(const ir::Node& n) {
  if (!isOp(&n, ir::Op::BatchNormalization) || n.getInt("training_mode") != 0) return std::nullopt;
  for (size_t i = 1; i < n.numOutputs(); ++i)
    if (n.output(i)->hasUses()) return std::nullopt;
  std::optional<Tensor> gamma = floatConstant(n.input(1)), beta = floatConstant(n.input(2)),
                        mean = floatConstant(n.input(3)), var = floatConstant(n.input(4));
  if (!gamma || !beta || !mean || !var) return std::nullopt;
  const int64_t c = gamma->numElements();
  if (beta->numElements() != c || mean->numElements() != c || var->numElements() != c) return std::nullopt;
  const double eps = n.getFloat("epsilon");
  std::vector<double> s(static_cast<size_t>(c)), t(static_cast<size_t>(c));
  for (int64_t i = 0; i < c; ++i) {
    s[size_t(i)] = double(gamma->data<float>()[i]) / std::sqrt(double(var->data<float>()[i]) + eps);
    t[size_t(i)] = double(beta->data<float>()[i]) - double(mean->data<float>()[i]) * s[size_t(i)];
  }
  return std::make_pair(std::move(s), std::move(t));
}

std::optional<std::vector<double>> perChannelValues(const ir::Value* constant, int64_t axis, int64_t rank,
                                                    int64_t channels) {
  const Tensor* t = constantValue(constant);
  if (!t || t->dtype() != DType::F32 || t->rank() > rank) return std::nullopt;
  if (t->numElements() == 1) return std::vector<double>(size_t(channels), double(t->data<float>()[0]));
  // Aligned to the result's trailing axes: only the channel axis may exceed 1.
  int64_t offset = rank - t->rank();
  for (int64_t i = 0; i < t->rank(); ++i) {
    int64_t want = i + offset == axis ? channels : 1;
    if (t->dim(i) != want) return std::nullopt;
  }
  if (axis < offset) return std::nullopt;
  std::vector<double> out;
  for (int64_t c = 0; c < channels; ++c) out.push_back(double(t->data<float>()[c]));
  return out;
}

}  // namespace kiln::passes
