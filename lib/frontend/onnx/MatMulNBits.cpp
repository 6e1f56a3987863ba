//===- lib/frontend/onnx/MatMulNBits.cpp - com.microsoft MatMulNBits -------===//
//
// MatMulNBits(A, B, scales[, zero_points][, g_idx][, bias]) multiplies A
// [..., K] by a [K, N] weight stored as `bits`-bit integers in blocks of
// block_size along K, each block with its scale and zero point (ONNX
// Runtime's docs/ContribOperators.md):
//   W[k, n] = (q(n, k) - zero_point(n, k / block_size)) * scale(n, k / block_size)
// B is [N, ceil(K / block_size), block_size * bits / 8] bytes, element i of a
// block at bit i * bits (low bits first); packed zero points are laid out the
// same way per row of N (default 2^(bits - 1)). kiln dequantises the constant
// weight at import and writes MatMul(A, W) (+ bias): its kernels compute in
// A's type, as ONNX Runtime does at accuracy_level 0.
//
//===----------------------------------------------------------------------===//
#include "NewerOpsetForms.h"

namespace kiln::onnx {
namespace {

struct Layout {
  int64_t k = 0, n = 0, bits = 4, blockSize = 0;
  int64_t blocks() const { return (k + blockSize - 1) / blockSize; }
  int64_t blobBytes() const { return blockSize * bits / 8; }
};

Expected<Layout> takeLayout(NodeDraft& d) {
  Layout l;
  KILN_ASSIGN(l.k, d.takeInt("K", 0));
  KILN_ASSIGN(l.n, d.takeInt("N", 0));
  KILN_ASSIGN(l.bits, d.takeInt("bits", 4));
  KILN_ASSIGN(l.blockSize, d.takeInt("block_size", 0));
  d.take("accuracy_level");
  if (l.k < 1 || l.n < 1) return Error(ErrorCode::BadAttribute, "MatMulNBits needs positive K and N attributes");
  if (l.bits != 2 && l.bits != 4 && l.bits != 8)
    return refuseForm(d, "bits=" + std::to_string(l.bits));
  if (l.blockSize < 16 || (l.blockSize & (l.blockSize - 1)) != 0)
    return Error(ErrorCode::BadAttribute, "block_size must be a power of 2 and at least 16");
  return l;
}

/// Unsigned field `i` of `bits` bits in bytes (low bits first).
int64_t field(const uint8_t* bytes, int64_t i, int64_t bits) {
  int64_t bit = i * bits;
  return (bytes[bit / 8] >> (bit % 8)) & ((1 << bits) - 1);
}

Expected<const Tensor*> constantInput(const NodeDraft& d, size_t i, const DraftBuilder& b, const char* what) {
  const Tensor* t = b.knownValue(d.inputs[i]);
  if (!t) return Error(ErrorCode::OnnxUnsupportedOp, std::string("MatMulNBits: ") + what + " must be a constant");
  return t;
}

/// The zero point of every (row n, block) of the weight, as doubles.
Expected<std::vector<double>> zeroPoints(const NodeDraft& d, const DraftBuilder& b, const Layout& l) {
  size_t count = size_t(l.n * l.blocks());
  if (!hasInput(d, 3)) return std::vector<double>(count, double(1 << (l.bits - 1)));
  KILN_ASSIGN(const Tensor* zp, constantInput(d, 3, b, "zero_points"));
  if (zp->dtype() != DType::U8) {  // one zero point of the scales' type per block
    if (size_t(zp->numElements()) != count)
      return Error(ErrorCode::ShapeMismatch, "zero_points holds " + std::to_string(zp->numElements()) + " values for " +
                                                 std::to_string(count) + " blocks");
    return zp->toDoubles();
  }
  int64_t rowBytes = (l.blocks() * l.bits + 7) / 8;
  if (zp->numElements() != l.n * rowBytes)
    return Error(ErrorCode::ShapeMismatch, "packed zero_points must hold " + std::to_string(l.n * rowBytes) + " bytes");
  std::vector<double> out(count);
  const uint8_t* bytes = zp->data<uint8_t>();
  for (int64_t n = 0; n < l.n; ++n)
    for (int64_t blk = 0; blk < l.blocks(); ++blk)
      out[size_t(n * l.blocks() + blk)] = double(field(bytes + n * rowBytes, blk, l.bits));
  return out;
}

/// The dequantised [K, N] weight.
Expected<Tensor> dequantisedWeight(const NodeDraft& d, const DraftBuilder& b, const Layout& l, DType dt) {
  KILN_ASSIGN(const Tensor* q, constantInput(d, 1, b, "B"));
  KILN_ASSIGN(const Tensor* scales, constantInput(d, 2, b, "scales"));
  if (q->dtype() != DType::U8 || q->numElements() != l.n * l.blocks() * l.blobBytes())
    return Error(ErrorCode::ShapeMismatch, "B must be uint8 [" + std::to_string(l.n) + ", " + std::to_string(l.blocks()) +
                                               ", " + std::to_string(l.blobBytes()) + "]");
  if (scales->numElements() != l.n * l.blocks())
    return Error(ErrorCode::ShapeMismatch, "scales must hold one value per block: " + std::to_string(l.n * l.blocks()));
  KILN_ASSIGN(std::vector<double> zps, zeroPoints(d, b, l));
  std::vector<double> scale = scales->toDoubles();
  std::vector<double> w(size_t(l.k * l.n));
  const uint8_t* bytes = q->data<uint8_t>();
  for (int64_t n = 0; n < l.n; ++n)
    for (int64_t k = 0; k < l.k; ++k) {
      int64_t blk = k / l.blockSize, slot = n * l.blocks() + blk;
      const uint8_t* blob = bytes + slot * l.blobBytes();
      double v = double(field(blob, k % l.blockSize, l.bits)) - zps[size_t(slot)];
      w[size_t(k * l.n + n)] = v * scale[size_t(slot)];
    }
  return Tensor::fromVector<double>({l.k, l.n}, w).castTo(dt);
}

}  // namespace

Status expandMatMulNBits(NodeDraft& d, DraftBuilder& b) {
  KILN_TRY(requireInputs(d, 3));
  KILN_ASSIGN(Layout l, takeLayout(d));
  if (hasInput(d, 4)) return refuseForm(d, "g_idx");
  KILN_ASSIGN(DType dt, inputDType(d, 0));
  KILN_ASSIGN(Tensor w, dequantisedWeight(d, b, l, dt));
  KILN_ASSIGN(ir::Value* weight, b.constant(w));
  d.attrs.clear();
  if (!hasInput(d, 5)) {
    d.opType = "MatMul";
    d.inputs = {d.inputs[0], weight};
    return Status::ok();
  }
  KILN_ASSIGN(ir::Value* y, b.node("MatMul", {d.inputs[0], weight}, {}));
  d.opType = "Add";
  d.inputs = {y, d.inputs[5]};
  return Status::ok();
}

}  // namespace kiln::onnx
